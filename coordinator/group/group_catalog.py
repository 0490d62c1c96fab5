"""The groups one coordinator answers for, and the ``__consumer_offsets`` partitions it owns.

Owns: the table of groups, which partitions are owned or still loading, the mapping of a group
id to its partition, the check every group API starts with (valid id, coordinator active,
partition loaded and ours), the clock, and the coordinator's background tasks.

Must not know: rebalancing, offsets, or how anything is written to the log. The other parts of
the coordinator (``membership``, ``offset_manager``, ``group_store``) share this one catalog.
"""
from __future__ import annotations

import asyncio
import logging

from ..runtime import errors
from ..runtime.partitions import partition_for
from .group import GroupMetadata

log = logging.getLogger("josefk.coordinator")

# APIs whose group id may be the empty string (Kafka keeps that for backwards compatibility).
_EMPTY_ID_OK = frozenset({"OffsetCommit", "OffsetFetch", "DescribeGroups", "DeleteGroups"})


class GroupCatalog:
    """Groups by id, partition ownership, the clock and background tasks of one coordinator."""

    def __init__(self, num_partitions: int, clock, may_serve=None):
        self.num_partitions = num_partitions
        self.clock = clock
        # may_serve(partition): False while this broker must not act on its leadership of
        # the partition (a cluster member whose ZooKeeper session is in doubt): it then
        # answers NOT_COORDINATOR
        self.may_serve = may_serve or (lambda _partition: True)
        self.groups: dict[str, GroupMetadata] = {}
        self.owned_partitions: set[int] = set()
        self.loading_partitions: set[int] = set()
        self.active = False
        # the other kinds of groups kept on the same partitions (share groups): objects with
        # ``loaded(partition, records)`` and ``unloaded(partition)``, told as partitions move
        self.partition_listeners: list = []
        self._tasks: set[asyncio.Future] = set()

    def now(self) -> int:
        return self.clock.now_ms()

    def partition_for(self, group_id: str) -> int:
        return partition_for(group_id, self.num_partitions)

    def validate(self, group_id, api: str) -> int | None:
        """The error a group API answers before looking at the group, or None."""
        if group_id is None or (group_id == "" and api not in _EMPTY_ID_OK):
            return errors.INVALID_GROUP_ID
        if not self.active:
            return errors.COORDINATOR_NOT_AVAILABLE
        p = self.partition_for(group_id)
        if p in self.loading_partitions:
            return errors.COORDINATOR_LOAD_IN_PROGRESS
        if p not in self.owned_partitions or not self.may_serve(p):
            return errors.NOT_COORDINATOR
        return None

    def add(self, group: GroupMetadata) -> GroupMetadata:
        """Cache ``group`` unless one of its id is cached already; returns the cached one."""
        return self.groups.setdefault(group.group_id, group)

    def groups_of(self, partition: int) -> list[GroupMetadata]:
        return [g for gid, g in self.groups.items() if self.partition_for(gid) == partition]

    # ------------------------------------------------------------------ background tasks
    def spawn(self, coro) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)

    def _task_done(self, task) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("coordinator background task failed", exc_info=task.exception())

    async def drain(self) -> None:
        """Wait for background appends (empty-group metadata, tombstones) to finish."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    def cancel_tasks(self) -> None:
        for t in list(self._tasks):
            t.cancel()
