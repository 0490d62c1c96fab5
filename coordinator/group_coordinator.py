"""The classic group coordinator: the API the broker calls, answered by the part that owns it.

The coordinator is four parts on one asyncio loop, sharing one
:class:`~coordinator.group_catalog.GroupCatalog` (groups, owned partitions, clock, tasks)::

    membership.Membership        JoinGroup, SyncGroup, Heartbeat, LeaveGroup and their timers
    offset_manager.OffsetManager OffsetCommit, TxnOffsetCommit, OffsetFetch, OffsetDelete, expiry
    group_store.GroupStore       group metadata records; loading a __consumer_offsets partition
    this module                  life cycle, leadership changes, DescribeGroups, ListGroups,
                                 DeleteGroups

They call each other only through the protocols in ``coordinator.seams``. Everything takes plain
Python arguments and returns plain result objects (``coordinator.results``) with Kafka error
codes (``coordinator.errors``); handlers translate to and from the wire. Timers go through the
injected clock (``coordinator.clock``); records reach ``__consumer_offsets`` through an
:class:`coordinator.offset_store.OffsetStore`.

Must not know: the wire, the broker, or the record layout of ``__consumer_offsets``.
"""
from __future__ import annotations

import logging

from . import errors
from .clock import AsyncioClock
from .group import DEAD, EMPTY, STABLE
from .group_catalog import GroupCatalog
from .group_store import GroupStore
from .membership import Membership
from .offset_manager import OffsetManager
from .results import GroupDescription, GroupOverview, MemberDescription

log = logging.getLogger("josefk.coordinator")

INT32_MAX = 2**31 - 1

DEFAULTS = {
    "group.initial.rebalance.delay.ms": 3000,
    "group.min.session.timeout.ms": 6000,
    "group.max.session.timeout.ms": 1800000,
    "group.max.size": INT32_MAX,
    "offsets.retention.minutes": 10080,
    "offsets.retention.check.interval.ms": 600000,
    "offset.metadata.max.bytes": 4096,
    "offsets.topic.num.partitions": 50,
}


class GroupCoordinator:
    """Kafka's classic group coordinator for the ``__consumer_offsets`` partitions it owns.

    Life cycle: construct, then :meth:`startup` (loads the owned partitions from the log and
    starts the offset-expiry timer); :meth:`load_partition` / :meth:`unload_partition` follow
    leadership changes of ``__consumer_offsets`` partitions; :meth:`shutdown` stops timers.
    """

    def __init__(self, config, offset_store, clock=None, may_serve=None):
        cfg = dict(DEFAULTS)
        if config is not None:
            for k in DEFAULTS:
                v = config.get(k, None) if hasattr(config, "get") else None
                if v is not None:
                    cfg[k] = int(v)
        self.config = cfg
        self.catalog = GroupCatalog(cfg["offsets.topic.num.partitions"],
                                    clock if clock is not None else AsyncioClock(), may_serve)
        self.group_store = GroupStore(self.catalog, offset_store)
        self.membership = Membership(
            self.catalog, self.group_store,
            initial_rebalance_delay_ms=cfg["group.initial.rebalance.delay.ms"],
            min_session_timeout_ms=cfg["group.min.session.timeout.ms"],
            max_session_timeout_ms=cfg["group.max.session.timeout.ms"],
            max_group_size=cfg["group.max.size"])
        self.offsets = OffsetManager(
            self.catalog, offset_store, self.membership,
            retention_ms=cfg["offsets.retention.minutes"] * 60 * 1000,
            retention_check_interval_ms=cfg["offsets.retention.check.interval.ms"],
            max_metadata_size=cfg["offset.metadata.max.bytes"])
        # the group APIs, answered by the part that owns them
        self.join_group = self.membership.join_group
        self.sync_group = self.membership.sync_group
        self.heartbeat = self.membership.heartbeat
        self.leave_group = self.membership.leave_group
        self.commit_offsets = self.offsets.commit_offsets
        self.commit_txn_offsets = self.offsets.commit_txn_offsets
        self.complete_txn = self.offsets.complete_txn
        self.fetch_offsets = self.offsets.fetch_offsets
        self.delete_offsets = self.offsets.delete_offsets
        self.expire_offsets = self.offsets.expire_offsets
        self.drain = self.catalog.drain
        self.partition_for = self.catalog.partition_for

    @property
    def groups(self):
        return self.catalog.groups

    @property
    def loading_partitions(self) -> set[int]:
        return self.catalog.loading_partitions

    # ------------------------------------------------------------------ life cycle
    def startup(self, partitions=None, enable_expiration: bool = True) -> None:
        """Become active and load ``partitions`` (default: every ``__consumer_offsets``
        partition, the single-broker case) from the log. With the real clock, call it from
        the running event loop (timers are scheduled on it)."""
        self.catalog.active = True
        for p in (range(self.catalog.num_partitions) if partitions is None else partitions):
            self.load_partition(p)
        if enable_expiration:
            self.offsets.start_expiry()

    def shutdown(self) -> None:
        self.catalog.active = False
        self.offsets.stop_expiry()
        for p in list(self.catalog.owned_partitions):
            self.unload_partition(p)
        self.catalog.cancel_tasks()

    def load_partition(self, partition: int) -> None:
        """Replay ``__consumer_offsets-<partition>`` into groups and offsets and start answering
        for the groups that map to it. Groups with members come back Stable (like Kafka) with
        their session timers restarted: members that are still alive keep heartbeating, the
        others expire and the group rebalances; groups without members come back Empty."""
        for group in self.group_store.load_partition(partition):
            self.membership.resume(group)

    def unload_partition(self, partition: int) -> None:
        """Stop answering for the groups of ``partition`` (leadership moved away)."""
        self.catalog.owned_partitions.discard(partition)
        self.catalog.loading_partitions.discard(partition)
        for listener in self.catalog.partition_listeners:
            listener.unloaded(partition)
        for group in self.catalog.groups_of(partition):
            self.membership.unload(group)
            del self.catalog.groups[group.group_id]

    # ------------------------------------------------------------------ admin APIs
    def describe_groups(self, group_ids) -> list[GroupDescription]:
        out = []
        for gid in group_ids:
            err = self.catalog.validate(gid, "DescribeGroups")
            if err is not None:
                out.append(GroupDescription(gid, err, "", "", "", []))
                continue
            group = self.catalog.groups.get(gid)
            if group is None:
                out.append(GroupDescription(gid, errors.NONE, DEAD, "", "", []))
                continue
            stable = group.is_state(STABLE)
            members = [MemberDescription(
                m.member_id, m.group_instance_id, m.client_id, m.client_host,
                m.metadata(group.protocol_name) if stable else b"",
                m.assignment if stable else b"") for m in group.members.values()]
            out.append(GroupDescription(gid, errors.NONE, group.state, group.protocol_type or "",
                                        (group.protocol_name or "") if stable else "", members))
        return out

    def list_groups(self, states_filter=None) -> tuple[int, list[GroupOverview]]:
        """ListGroups. ``states_filter``: iterable of state names (ListGroups v4+); empty or None
        means all. Error COORDINATOR_LOAD_IN_PROGRESS (with the groups known so far) while a
        partition is loading."""
        if not self.catalog.active:
            return errors.COORDINATOR_NOT_AVAILABLE, []
        loading = self.catalog.loading_partitions
        error = errors.COORDINATOR_LOAD_IN_PROGRESS if loading else errors.NONE
        states = set(states_filter or ())
        groups = [GroupOverview(g.group_id, g.protocol_type or "", g.state)
                  for g in self.catalog.groups.values() if not states or g.state in states]
        return error, groups

    async def delete_groups(self, group_ids) -> dict[str, int]:
        """DeleteGroups: only Empty groups can go (NON_EMPTY_GROUP otherwise); unknown groups
        get GROUP_ID_NOT_FOUND. Writes offset and group tombstones."""
        result: dict[str, int] = {}
        eligible = []
        for gid in group_ids:
            err = self.catalog.validate(gid, "DeleteGroups")
            if err is not None:
                result[gid] = err
                continue
            group = self.catalog.groups.get(gid)
            if group is None or group.is_state(DEAD):
                result[gid] = errors.GROUP_ID_NOT_FOUND
            elif group.is_state(EMPTY):
                group.transition_to(DEAD, self.catalog.now())
                eligible.append(group)
            else:
                result[gid] = errors.NON_EMPTY_GROUP
        if eligible:
            removed = await self.offsets.cleanup_group_metadata(
                eligible, lambda g: g.remove_all_offsets())
            for g in eligible:
                result[g.group_id] = errors.NONE
            log.info("deleted groups %s (%d offsets)", [g.group_id for g in eligible], removed)
        return result

