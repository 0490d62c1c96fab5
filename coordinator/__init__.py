"""Coordinators: the classic consumer group coordinator and its offset store, producer ids and
the transaction coordinator, each deciding on plain state with a clock and a log interface
(append, read batches) that the broker implements over its partitions. They must not know
sockets, the broker's objects, storage's files or ZooKeeper (imports ``josefk.wire`` only).

The group coordinator is a facade (group_coordinator.py) over its rooms: membership.py (the
classic rebalance state machine), offset_manager.py, group_store.py (group metadata records),
group_catalog.py (the groups and the partitions this broker owns); seams.py holds the written
interfaces between them. Their records are declared in ``josefk.wire.internal_topics``.

Public entry points::

    from josefk.coordinator import GroupCoordinator, OffsetStore, AsyncioClock, errors
"""
from . import errors
from .clock import AsyncioClock, FakeClock
from .group_catalog import java_string_hash, partition_for
from .group_coordinator import DEFAULTS, GroupCoordinator
from .offset_store import InMemoryOffsetsLog, OffsetStore
from .results import (GroupDescription, GroupOverview, JoinResult, LeaveMemberResult,
                      MemberDescription, OffsetFetchPartition, SyncResult)

__all__ = [
    "errors", "AsyncioClock", "FakeClock", "DEFAULTS", "GroupCoordinator", "java_string_hash",
    "partition_for", "InMemoryOffsetsLog", "OffsetStore", "GroupDescription", "GroupOverview",
    "JoinResult", "LeaveMemberResult", "MemberDescription", "OffsetFetchPartition", "SyncResult",
]
