"""Coordinators: the group coordinator (classic groups, KIP-848 consumer groups, share groups'
membership) and its offsets, the share coordinator, and the transaction coordinator with
producer ids, each deciding on plain state with a clock. They must not know sockets, the
broker's objects, storage's files or ZooKeeper (imports ``josefk.wire`` only).

Rooms, one per coordinator over the runtime they share::

    group/    the group coordinator and its offset store   (__consumer_offsets)
    share/    the share coordinator                         (__share_group_state)
    txn/      the transaction coordinator, producer ids     (__transaction_state)
    runtime/  the coordinator runtime (Kafka 4's CoordinatorRuntime): loads a partition of an
              internal topic into its coordinator (a CoordinatorShard: replay, loaded,
              unloaded) as leadership moves, writes a CoordinatorResult's records then applies
              them, runs timers on the injected clock; plus errors, clock, per-key locks

The broker keeps one runtime per internal topic (``coordinator.runtime``) and hands it the
partitions it leads. Records are declared in ``josefk.wire.internal_topics``.

Public entry points::

    from josefk.coordinator import GroupCoordinator, OffsetStore, AsyncioClock, errors
"""
from .group.group_coordinator import DEFAULTS, GroupCoordinator
from .group.offset_store import OffsetStore
from .group.results import (GroupDescription, GroupOverview, JoinResult, LeaveMemberResult,
                            MemberDescription, OffsetFetchPartition, SyncResult)
from .runtime import (AsyncioClock, CoordinatorResult, CoordinatorRuntime, CoordinatorShard,
                      FakeClock, InMemoryOffsetsLog, errors, java_string_hash, partition_for)

__all__ = [
    "errors", "AsyncioClock", "FakeClock", "DEFAULTS", "GroupCoordinator", "java_string_hash",
    "partition_for", "InMemoryOffsetsLog", "OffsetStore", "GroupDescription", "GroupOverview",
    "JoinResult", "LeaveMemberResult", "MemberDescription", "OffsetFetchPartition", "SyncResult",
    "CoordinatorResult", "CoordinatorRuntime", "CoordinatorShard",
]
