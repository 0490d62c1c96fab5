"""The group coordinator: the API the broker calls, answered by the part that owns it.

The coordinator is five parts on one asyncio loop, sharing one
:class:`~coordinator.group.group_catalog.GroupCatalog` (groups, owned partitions, clock, tasks)::

    membership.Membership        JoinGroup, SyncGroup, Heartbeat, LeaveGroup and their timers
    consumer_groups.ConsumerGroups  ConsumerGroupHeartbeat/Describe (KIP-848), classic members
                                 inside consumer groups, converting groups between protocols
    offset_manager.OffsetManager OffsetCommit, TxnOffsetCommit, OffsetFetch, OffsetDelete, expiry
    group_store.GroupStore       group metadata records; loading a __consumer_offsets partition
    this module                  life cycle, leadership changes, DescribeGroups, ListGroups,
                                 DeleteGroups, and sending each classic group API to the part
                                 that owns the group (a classic group, or a consumer group)

They call each other only through the protocols in ``coordinator.group.seams``. Everything takes plain
Python arguments and returns plain result objects (``coordinator.group.results``) with Kafka
error codes (``coordinator.runtime.errors``); handlers translate to and from the wire. Timers go
through the injected clock (``coordinator.runtime.clock``); records reach
``__consumer_offsets`` through an :class:`coordinator.group.offset_store.OffsetStore` and the
topic's :class:`coordinator.runtime.CoordinatorRuntime`, which loads and unloads its partitions
into this coordinator, its shard (``loading``, ``replay``, ``loaded``, ``unloaded``).

Must not know: the wire, the broker, or the record layout of ``__consumer_offsets``.
"""
from __future__ import annotations

import logging

from ..runtime import errors
from ..runtime.clock import AsyncioClock
from .consumer_group import ConsumerGroup
from .consumer_groups import ConsumerGroupConfig, ConsumerGroups
from .group import DEAD, EMPTY, STABLE
from .group_catalog import GroupCatalog
from .group_store import GroupStore
from .membership import Membership
from .offset_manager import OffsetManager
from .results import GroupDescription, GroupOverview, JoinResult, MemberDescription

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

    def __init__(self, config, offset_store, clock=None, may_serve=None, topics=None):
        cfg = dict(DEFAULTS)
        if config is not None:
            for k in DEFAULTS:
                v = config.get(k, None) if hasattr(config, "get") else None
                if v is not None:
                    cfg[k] = int(v)
        self.config = cfg
        get = config.get if config is not None else (lambda k, d=None: None)
        self.catalog = GroupCatalog(cfg["offsets.topic.num.partitions"],
                                    clock if clock is not None else AsyncioClock(), may_serve)
        self.group_store = GroupStore(self.catalog, offset_store)
        self.runtime = offset_store.runtime   # loads and writes __consumer_offsets for us
        self.runtime.register(self, self.catalog.clock)
        self.membership = Membership(
            self.catalog, self.group_store,
            initial_rebalance_delay_ms=cfg["group.initial.rebalance.delay.ms"],
            min_session_timeout_ms=cfg["group.min.session.timeout.ms"],
            max_session_timeout_ms=cfg["group.max.session.timeout.ms"],
            max_group_size=cfg["group.max.size"])
        self.consumer_groups = ConsumerGroups(
            self.catalog, offset_store, topics if topics is not None else NoTopics(),
            ConsumerGroupConfig.from_config(lambda k: get(k, None)), self.membership)
        self.offsets = OffsetManager(
            self.catalog, offset_store, _Sessions(self.membership, self.consumer_groups),
            retention_ms=cfg["offsets.retention.minutes"] * 60 * 1000,
            retention_check_interval_ms=cfg["offsets.retention.check.interval.ms"],
            max_metadata_size=cfg["offset.metadata.max.bytes"])
        # the group APIs, answered by the part that owns them
        self.consumer_group_heartbeat = self.consumer_groups.heartbeat
        self.consumer_group_describe = self.consumer_groups.describe
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
        for the groups that map to it (through the runtime, which calls the shard methods
        below). Classic groups with members come back Stable (like Kafka) with their session
        timers restarted: members that are still alive keep heartbeating, the others expire and
        the group rebalances; groups without members come back Empty. Consumer groups come back
        as their records left them, every member with a fresh session."""
        self.runtime.load(partition)

    def unload_partition(self, partition: int) -> None:
        """Stop answering for the groups of ``partition`` (leadership moved away)."""
        self.runtime.unload(partition)

    # ------------------------------------------------------------------ the runtime's shard
    compacted = True   # offsets, group metadata and consumer group records: last write wins

    def loading(self, partition: int) -> bool:
        return self.group_store.loading(partition)

    def replay(self, _partition, offset, producer_id, _producer_epoch, key, value) -> None:
        self.group_store.replaying.apply(key, value, offset, producer_id)

    def replay_end_txn(self, _partition, producer_id, _producer_epoch, commit) -> None:
        self.group_store.replaying.end_txn(producer_id, commit)

    def loaded(self, partition: int, _epoch: int) -> None:
        for group in self.group_store.loaded(partition):
            if isinstance(group, ConsumerGroup):
                self.consumer_groups.resume(group)
            else:
                self.membership.resume(group)

    def unloaded(self, partition: int) -> None:
        self.catalog.owned_partitions.discard(partition)
        self.catalog.loading_partitions.discard(partition)
        for listener in self.catalog.partition_listeners:
            listener.unloaded(partition)
        for group in self.catalog.groups_of(partition):
            if isinstance(group, ConsumerGroup):
                self.consumer_groups.cancel_timers(group)
                group.transition_to(DEAD, self.catalog.now())
            else:
                self.membership.unload(group)
            del self.catalog.groups[group.group_id]

    # ------------------------------------------------------------------ classic group APIs
    # A consumer group with members answers classic members itself (they are part of it); an
    # empty one makes way for a classic group.
    async def join_group(self, group_id, member_id, group_instance_id, client_id, client_host,
                         session_timeout_ms, rebalance_timeout_ms, protocol_type, protocols,
                         require_known_member_id=True, reason=None,
                         supports_skip_assignment=False):
        group = self.catalog.groups.get(group_id)
        if isinstance(group, ConsumerGroup) and self.catalog.validate(group_id, "JoinGroup") \
                is None:
            if group.members:
                return await self.consumer_groups.classic_join(
                    group_id, member_id, group_instance_id, client_id, client_host,
                    session_timeout_ms, rebalance_timeout_ms, protocol_type, protocols,
                    require_known_member_id)
            err = await self.consumer_groups.replace_with_classic(group_id)
            if err:
                return JoinResult.error_result(member_id, err)
        return await self.membership.join_group(
            group_id, member_id, group_instance_id, client_id, client_host, session_timeout_ms,
            rebalance_timeout_ms, protocol_type, protocols, require_known_member_id, reason,
            supports_skip_assignment)

    async def sync_group(self, group_id, generation_id, member_id, group_instance_id,
                         protocol_type, protocol_name, assignments):
        group = self._consumer_group(group_id, "SyncGroup")
        if group is not None:
            return self.consumer_groups.classic_sync(group, member_id, group_instance_id,
                                                     generation_id, protocol_type, protocol_name)
        return await self.membership.sync_group(group_id, generation_id, member_id,
                                                group_instance_id, protocol_type,
                                                protocol_name, assignments)

    def heartbeat(self, group_id, generation_id, member_id, group_instance_id=None) -> int:
        group = self._consumer_group(group_id, "Heartbeat")
        if group is not None:
            return self.consumer_groups.classic_heartbeat(group, member_id, group_instance_id,
                                                          generation_id)
        return self.membership.heartbeat(group_id, generation_id, member_id, group_instance_id)

    async def leave_group(self, group_id, members):
        """LeaveGroup; see :meth:`Membership.leave_group`."""
        if self._consumer_group(group_id, "LeaveGroup") is not None:
            leaving = [(m[0] or "", m[1] if len(m) > 1 else None, m[2] if len(m) > 2 else None)
                       for m in members]
            return await self.consumer_groups.classic_leave(group_id, leaving)
        return self.membership.leave_group(group_id, members)

    def _consumer_group(self, group_id, api) -> ConsumerGroup | None:
        """The consumer group ``group_id`` names, when this coordinator answers for it."""
        group = self.catalog.groups.get(group_id)
        if isinstance(group, ConsumerGroup) and self.catalog.validate(group_id, api) is None:
            return group
        return None

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
            if isinstance(group, ConsumerGroup):
                # not in Kafka (it answers Dead): classic tools see the group as classic
                # members see it, its members' subscriptions and current assignments
                assignor, members = self.consumer_groups.as_classic(group)
                out.append(GroupDescription(gid, errors.NONE, group.state, group.protocol_type,
                                            assignor, [MemberDescription(
                                                m.member_id, m.instance_id, m.meta.client_id,
                                                m.meta.client_host, sub, assignment)
                                                for m, sub, assignment in members]))
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
        """ListGroups. ``states_filter``: iterable of state names (ListGroups v4+; compared
        without case, as Kafka 4 does); empty or None means all. Error
        COORDINATOR_LOAD_IN_PROGRESS (with the groups known so far) while a partition is
        loading."""
        if not self.catalog.active:
            return errors.COORDINATOR_NOT_AVAILABLE, []
        loading = self.catalog.loading_partitions
        error = errors.COORDINATOR_LOAD_IN_PROGRESS if loading else errors.NONE
        states = {s.strip().lower() for s in states_filter or ()}
        groups = [GroupOverview(g.group_id, g.protocol_type or "", g.state, g.group_type)
                  for g in self.catalog.groups.values()
                  if not states or g.state.lower() in states]
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



class _Sessions:
    """The member timers the offset manager touches (``coordinator.group.seams.MemberSessions``),
    for groups of either protocol."""

    def __init__(self, membership: Membership, consumer_groups: ConsumerGroups):
        self.membership = membership
        self.consumer_groups = consumer_groups

    def extend_session(self, group, member) -> None:
        self.membership.extend_session(group, member)

    def cancel_timers(self, group) -> None:
        if isinstance(group, ConsumerGroup):
            self.consumer_groups.cancel_timers(group)
        else:
            self.membership.cancel_timers(group)


class NoTopics:
    """The topics of a coordinator that was given none (tests of the classic protocol)."""

    version = 0

    def get(self, name):
        return None

    def name_of(self, topic_id):
        return None

    def names(self):
        return ()
