"""Coordinators: the classic consumer group coordinator and its offset store, the transaction
coordinator and producer ids.

Public entry points::

    from coordinator import GroupCoordinator, OffsetStore, AsyncioClock, errors
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
