"""The classic group coordinator: Kafka's GroupCoordinator state machine on one asyncio loop.

It takes plain Python arguments and returns plain result objects (``coordinator.results``) with
Kafka error codes (``coordinator.errors``); handlers translate to and from the wire.

Timers (session, rebalance, initial rebalance delay, pending member, pending sync, offset
expiry) all go through the injected clock (``coordinator.clock``), and JoinGroup / SyncGroup
requests that have to wait are parked on asyncio futures. Group metadata and offsets are
persisted through an :class:`coordinator.offset_store.OffsetStore` on ``__consumer_offsets``.

States and transitions are Kafka's::

    Empty --join--> PreparingRebalance --all joined / timeout--> CompletingRebalance
    CompletingRebalance --leader SyncGroup stored--> Stable
    Stable / CompletingRebalance --join, leave, session expiry--> PreparingRebalance
    PreparingRebalance --everybody gone--> Empty;  Empty (no offsets) / deleted --> Dead
"""
from __future__ import annotations

import asyncio
import functools
import logging

from . import errors
from .clock import AsyncioClock
from .group import (COMPLETING_REBALANCE, CONSUMER_PROTOCOL_TYPE, DEAD, EMPTY,
                    PREPARING_REBALANCE, STABLE, CommitRecord, GroupMetadata, IllegalStateError,
                    MemberMetadata, OffsetAndMetadata)
from .offset_store import GroupMemberRecord, GroupRecord
from .results import (GroupDescription, GroupOverview, JoinResult, LeaveMemberResult,
                      MemberDescription, OffsetFetchPartition, SyncResult)

INT64_MAX = 0x7FFFFFFFFFFFFFFF

log = logging.getLogger("josefk.coordinator")

UNKNOWN_MEMBER_ID = ""
NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000
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

# APIs whose group id may be the empty string (Kafka keeps that for backwards compatibility).
_EMPTY_ID_OK = frozenset({"OffsetCommit", "OffsetFetch", "DescribeGroups", "DeleteGroups"})


def java_string_hash(s: str) -> int:
    """Java's String.hashCode (over UTF-16 code units), as a signed 32-bit int."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


@functools.lru_cache(maxsize=4096)
def partition_for(group_id: str, num_partitions: int) -> int:
    """Kafka's ``Utils.abs(groupId.hashCode) % offsets.topic.num.partitions``."""
    return (java_string_hash(group_id) & 0x7FFFFFFF) % num_partitions


def _utf16_len(s: str) -> int:
    return len(s.encode("utf-16-le")) // 2


class _JoinOp:
    """A parked rebalance: Kafka's DelayedJoin, or InitialDelayedJoin when ``initial``."""
    __slots__ = ("delay_ms", "initial", "configured_ms", "remaining_ms")

    def __init__(self, delay_ms, initial=False, configured_ms=0, remaining_ms=0):
        self.delay_ms = delay_ms
        self.initial = initial
        self.configured_ms = configured_ms
        self.remaining_ms = remaining_ms


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
        self.initial_rebalance_delay_ms = cfg["group.initial.rebalance.delay.ms"]
        self.min_session_timeout_ms = cfg["group.min.session.timeout.ms"]
        self.max_session_timeout_ms = cfg["group.max.session.timeout.ms"]
        self.max_group_size = cfg["group.max.size"]
        self.offsets_retention_ms = cfg["offsets.retention.minutes"] * 60 * 1000
        self.retention_check_interval_ms = cfg["offsets.retention.check.interval.ms"]
        self.max_metadata_size = cfg["offset.metadata.max.bytes"]
        self.num_partitions = cfg["offsets.topic.num.partitions"]
        self.store = offset_store
        self.clock = clock if clock is not None else AsyncioClock()
        # False while this broker cannot be sure it still leads its partitions (a cluster
        # member whose ZooKeeper session is in doubt): it then answers NOT_COORDINATOR
        self.may_serve = may_serve or (lambda: True)
        self.groups: dict[str, GroupMetadata] = {}
        self.owned_partitions: set[int] = set()
        self.loading_partitions: set[int] = set()
        self.active = False
        self._tasks: set[asyncio.Future] = set()
        self._expiry_timer = None

    # ------------------------------------------------------------------ life cycle
    def startup(self, partitions=None, enable_expiration: bool = True) -> None:
        """Become active and load ``partitions`` (default: every ``__consumer_offsets``
        partition, the single-broker case) from the log. With the real clock, call it from
        the running event loop (timers are scheduled on it)."""
        self.active = True
        for p in (range(self.num_partitions) if partitions is None else partitions):
            self.load_partition(p)
        if enable_expiration:
            self._schedule_expiration()

    def shutdown(self) -> None:
        self.active = False
        if self._expiry_timer is not None:
            self._expiry_timer.cancel()
            self._expiry_timer = None
        for p in list(self.owned_partitions):
            self.unload_partition(p)
        for t in list(self._tasks):
            t.cancel()

    async def drain(self) -> None:
        """Wait for background appends (empty-group metadata, tombstones) to finish."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    def partition_for(self, group_id: str) -> int:
        return partition_for(group_id, self.num_partitions)

    def is_coordinator_for(self, group_id: str) -> bool:
        return self.partition_for(group_id) in self.owned_partitions

    # ------------------------------------------------------------------ helpers
    def _now(self) -> int:
        return self.clock.now_ms()

    def _spawn(self, coro) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)

    def _task_done(self, task) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("coordinator background task failed", exc_info=task.exception())

    def _validate_group_status(self, group_id, api: str) -> int | None:
        if group_id is None or (group_id == "" and api not in _EMPTY_ID_OK):
            return errors.INVALID_GROUP_ID
        if not self.active:
            return errors.COORDINATOR_NOT_AVAILABLE
        p = self.partition_for(group_id)
        if p in self.loading_partitions:
            return errors.COORDINATOR_LOAD_IN_PROGRESS
        if p not in self.owned_partitions or not self.may_serve():
            return errors.NOT_COORDINATOR
        return None

    def _add_group(self, group: GroupMetadata) -> GroupMetadata:
        return self.groups.setdefault(group.group_id, group)

    @staticmethod
    def _validate_current_member(group, member_id, group_instance_id) -> int | None:
        if group_instance_id is not None:
            current = group.current_static_member_id(group_instance_id)
            if current is None:
                return errors.UNKNOWN_MEMBER_ID
            if current != member_id:
                return errors.FENCED_INSTANCE_ID
        if not group.has(member_id):
            return errors.UNKNOWN_MEMBER_ID
        return None

    # ------------------------------------------------------------------ JoinGroup
    async def join_group(self, group_id, member_id, group_instance_id, client_id, client_host,
                         session_timeout_ms, rebalance_timeout_ms, protocol_type, protocols,
                         require_known_member_id=True, reason=None,
                         supports_skip_assignment=False) -> JoinResult:
        """JoinGroup. Returns when the rebalance completes (or at once on errors and
        MEMBER_ID_REQUIRED). ``rebalance_timeout_ms`` is the session timeout for v0 clients;
        ``require_known_member_id`` is True for v4+; ``supports_skip_assignment`` for v9+."""
        fut = asyncio.get_running_loop().create_future()

        def respond(result):
            if not fut.done():
                fut.set_result(result)

        followup = self._handle_join_group(
            group_id, member_id or UNKNOWN_MEMBER_ID, group_instance_id, client_id, client_host,
            session_timeout_ms, rebalance_timeout_ms, protocol_type, protocols,
            require_known_member_id, reason, supports_skip_assignment, respond)
        if followup is not None:
            await followup
        return await fut

    def _accept_joining_member(self, group, member_id) -> bool:
        if group.state in (EMPTY, DEAD):
            return True
        if group.state == PREPARING_REBALANCE:
            return ((group.has(member_id) and group.get(member_id).is_awaiting_join)
                    or group.num_members_awaiting_join < self.max_group_size)
        return group.has(member_id) or group.size < self.max_group_size

    def _handle_join_group(self, group_id, member_id, instance_id, client_id, client_host,
                           session_timeout_ms, rebalance_timeout_ms, protocol_type, protocols,
                           require_known, reason, supports_skip, respond):
        err = self._validate_group_status(group_id, "JoinGroup")
        if err is not None:
            respond(JoinResult.error_result(member_id, err))
            return None
        if not (self.min_session_timeout_ms <= session_timeout_ms <= self.max_session_timeout_ms):
            respond(JoinResult.error_result(member_id, errors.INVALID_SESSION_TIMEOUT))
            return None
        is_unknown = member_id == UNKNOWN_MEMBER_ID
        group = self.groups.get(group_id)
        if group is None:
            if not is_unknown:
                respond(JoinResult.error_result(member_id, errors.UNKNOWN_MEMBER_ID))
                return None
            group = self._add_group(GroupMetadata(group_id, EMPTY, self._now()))
        protocols = [(n, bytes(m or b"")) for n, m in protocols]
        followup = None
        if not self._accept_joining_member(group, member_id):
            member = group.members.get(member_id)
            if member is not None and member.heartbeat_timer is not None:
                member.heartbeat_timer.cancel()
            self._cancel_pending_member_timer(group, member_id)
            group.remove(member_id)
            respond(JoinResult.error_result(UNKNOWN_MEMBER_ID, errors.GROUP_MAX_SIZE_REACHED))
        elif is_unknown:
            followup = self._do_new_member_join(
                group, instance_id, require_known, supports_skip, client_id, client_host,
                rebalance_timeout_ms, session_timeout_ms, protocol_type, protocols, respond, reason)
        else:
            self._do_current_member_join(
                group, member_id, instance_id, client_id, client_host, rebalance_timeout_ms,
                session_timeout_ms, protocol_type, protocols, respond, reason)
        if group.is_state(PREPARING_REBALANCE):
            self._check_and_complete_join(group)
        return followup

    def _do_new_member_join(self, group, instance_id, require_known, supports_skip, client_id,
                            client_host, rebalance_timeout_ms, session_timeout_ms, protocol_type,
                            protocols, respond, reason):
        if group.is_state(DEAD):
            respond(JoinResult.error_result(UNKNOWN_MEMBER_ID, errors.COORDINATOR_NOT_AVAILABLE))
            return None
        if not group.supports_protocols(protocol_type, {n for n, _ in protocols}):
            respond(JoinResult.error_result(UNKNOWN_MEMBER_ID, errors.INCONSISTENT_GROUP_PROTOCOL))
            return None
        new_member_id = group.generate_member_id(client_id, instance_id)
        if instance_id is not None:
            old_member_id = group.current_static_member_id(instance_id)
            if old_member_id is not None:
                log.info("static member %s of group %s rejoins with a new member id %s, "
                         "replacing %s", instance_id, group.group_id, new_member_id, old_member_id)
                return self._update_static_member_and_rebalance(
                    group, old_member_id, new_member_id, instance_id, protocols, respond,
                    reason, supports_skip)
            self._add_member_and_rebalance(
                group, rebalance_timeout_ms, session_timeout_ms, new_member_id, instance_id,
                client_id, client_host, protocol_type, protocols, respond, reason)
        elif require_known:
            # KIP-394: hand out the id; the member must come back with it within its session
            group.add_pending_member(new_member_id)
            self._add_pending_member_expiration(group, new_member_id, session_timeout_ms)
            respond(JoinResult.error_result(new_member_id, errors.MEMBER_ID_REQUIRED))
        else:
            self._add_member_and_rebalance(
                group, rebalance_timeout_ms, session_timeout_ms, new_member_id, None,
                client_id, client_host, protocol_type, protocols, respond, reason)
        return None

    def _do_current_member_join(self, group, member_id, instance_id, client_id, client_host,
                                rebalance_timeout_ms, session_timeout_ms, protocol_type,
                                protocols, respond, reason):
        if group.is_state(DEAD):
            respond(JoinResult.error_result(member_id, errors.COORDINATOR_NOT_AVAILABLE))
            return
        if not group.supports_protocols(protocol_type, {n for n, _ in protocols}):
            respond(JoinResult.error_result(member_id, errors.INCONSISTENT_GROUP_PROTOCOL))
            return
        if group.is_pending_member(member_id):
            if instance_id is not None:
                # Kafka raises IllegalStateException here: pending members are never static
                respond(JoinResult.error_result(member_id, errors.UNKNOWN_SERVER_ERROR))
                return
            self._add_member_and_rebalance(
                group, rebalance_timeout_ms, session_timeout_ms, member_id, None, client_id,
                client_host, protocol_type, protocols, respond, reason)
            return
        err = self._validate_current_member(group, member_id, instance_id)
        if err is not None:
            respond(JoinResult.error_result(member_id, err))
            return
        member = group.get(member_id)
        state = group.state
        if state == PREPARING_REBALANCE:
            self._update_member_and_rebalance(group, member, protocols, respond)
        elif state == COMPLETING_REBALANCE:
            if member.matches(protocols):
                # lost JoinGroup response: answer again with the current generation
                respond(self._join_result_for(group, member_id))
            else:
                self._update_member_and_rebalance(group, member, protocols, respond)
        elif state == STABLE:
            if group.is_leader(member_id) or not member.matches(protocols):
                # the leader rejoining forces a rebalance (e.g. topic metadata changed)
                self._update_member_and_rebalance(group, member, protocols, respond)
            else:
                respond(JoinResult(errors.NONE, group.generation_id, group.protocol_type,
                                   group.protocol_name, group.leader_id or "", member_id, []))
        else:  # Empty or Dead: let the member reset its generation and rejoin
            respond(JoinResult.error_result(member_id, errors.UNKNOWN_MEMBER_ID))

    def _join_result_for(self, group, member_id) -> JoinResult:
        members = group.current_member_metadata() if group.is_leader(member_id) else []
        return JoinResult(errors.NONE, group.generation_id, group.protocol_type,
                          group.protocol_name, group.leader_id or "", member_id, members)

    def _add_member_and_rebalance(self, group, rebalance_timeout_ms, session_timeout_ms,
                                  member_id, instance_id, client_id, client_host, protocol_type,
                                  protocols, respond, reason):
        member = MemberMetadata(member_id, instance_id, client_id, client_host,
                                rebalance_timeout_ms, session_timeout_ms, protocol_type, protocols)
        member.is_new = True
        # lets the initial delayed join wait a bit longer for more members
        if group.is_state(PREPARING_REBALANCE) and group.generation_id == 0:
            group.new_member_added = True
        group.add(member, respond)
        # new members cannot heartbeat while parked; expire the join if it lasts too long
        self._complete_and_schedule_next_expiration(group, member, NEW_MEMBER_JOIN_TIMEOUT_MS)
        self._maybe_prepare_rebalance(group, f"adding new member {member_id} "
                                             f"(instance {instance_id}); reason: {reason}")

    def _update_member_and_rebalance(self, group, member, protocols, respond):
        group.update_member(member, protocols, respond)
        self._maybe_prepare_rebalance(group, f"member {member.member_id} rejoining")

    def _update_static_member_and_rebalance(self, group, old_member_id, new_member_id,
                                            instance_id, protocols, respond, reason,
                                            supports_skip):
        current_leader = group.leader_id
        member = group.replace_static_member(instance_id, old_member_id, new_member_id)
        self._complete_and_schedule_next_heartbeat(group, member)
        old_protocols = list(member.supported_protocols)
        group.update_member(member, protocols, respond)
        state = group.state
        if state == STABLE:
            # no rebalance unless the group's protocol would change
            if group.protocol_name == group.select_protocol():
                assignment = {mid: m.assignment for mid, m in group.members.items()}
                return self._persist_static_replacement(
                    group, member, instance_id, old_member_id, new_member_id, old_protocols,
                    current_leader, respond, supports_skip, assignment)
            self._maybe_prepare_rebalance(group, f"static member {instance_id} changed protocols")
        elif state == COMPLETING_REBALANCE:
            # the leader may already be assigning to the old member id: start over
            self._prepare_rebalance(group, f"static member {instance_id} rejoined while "
                                           f"completing the rebalance")
        elif state in (EMPTY, DEAD):
            raise IllegalStateError(f"group {group.group_id} in {state} with static member")
        return None

    async def _persist_static_replacement(self, group, member, instance_id, old_member_id,
                                          new_member_id, old_protocols, current_leader, respond,
                                          supports_skip, assignment):
        generation = group.generation_id
        error = await self._store_group(group, assignment)
        if error != errors.NONE:
            log.warning("failed to persist static member %s of group %s: %s", instance_id,
                        group.group_id, errors.name(error))
            if group.members.get(new_member_id) is member:
                group.update_member(member, old_protocols, None)
                old_member = group.replace_static_member(instance_id, new_member_id, old_member_id)
                self._complete_and_schedule_next_heartbeat(group, old_member)
            respond(JoinResult(error, group.generation_id, group.protocol_type,
                               group.protocol_name, current_leader or "", UNKNOWN_MEMBER_ID, []))
            return
        if not group.is_state(STABLE) or group.generation_id != generation:
            return  # a rebalance started meanwhile: the member is answered by its completion
        if supports_skip:
            # JoinGroup v9+: a static leader learns it leads but skips running the assignor
            is_leader = group.is_leader(new_member_id)
            group.maybe_invoke_join_callback(member, JoinResult(
                errors.NONE, group.generation_id, group.protocol_type, group.protocol_name,
                group.leader_id or "", new_member_id,
                group.current_member_metadata() if is_leader else [], skip_assignment=is_leader))
        else:
            # return the old leader id so the (new) leader does not run a useless assignment
            group.maybe_invoke_join_callback(member, JoinResult(
                errors.NONE, group.generation_id, group.protocol_type, group.protocol_name,
                current_leader or "", new_member_id, []))

    # ------------------------------------------------------------------ rebalance machinery
    def _maybe_prepare_rebalance(self, group, reason):
        if group.can_rebalance():
            self._prepare_rebalance(group, reason)

    def _prepare_rebalance(self, group, reason):
        if group.is_state(COMPLETING_REBALANCE):
            # members parked in SyncGroup must rejoin
            self._reset_and_propagate_assignment_error(group, errors.REBALANCE_IN_PROGRESS)
        self._remove_sync_expiration(group)
        if group.is_state(EMPTY):
            delay = self.initial_rebalance_delay_ms
            op = _JoinOp(delay, initial=True, configured_ms=delay,
                         remaining_ms=max(group.rebalance_timeout_ms - delay, 0))
        else:
            op = _JoinOp(group.rebalance_timeout_ms)
        group.transition_to(PREPARING_REBALANCE, self._now())
        log.info("preparing to rebalance group %s (old generation %d, __consumer_offsets-%d): %s",
                 group.group_id, group.generation_id, self.partition_for(group.group_id), reason)
        self._schedule_join(group, op)

    def _schedule_join(self, group, op: _JoinOp):
        if group.join_timer is not None:
            group.join_timer.cancel()
        group.join_op = op
        group.join_timer = self.clock.call_later(op.delay_ms, lambda: self._on_join_timer(group, op))
        if not op.initial:
            self._check_and_complete_join(group)

    def _check_and_complete_join(self, group):
        op = group.join_op
        if op is None or op.initial:
            return  # the initial delay never completes early
        if group.has_all_members_joined():
            group.join_timer.cancel()
            group.join_op = group.join_timer = None
            self._on_complete_join(group)

    def _on_join_timer(self, group, op):
        if group.join_op is not op:
            return
        group.join_op = group.join_timer = None
        if op.initial and group.new_member_added and op.remaining_ms != 0:
            group.new_member_added = False
            delay = min(op.configured_ms, op.remaining_ms)
            remaining = max(op.remaining_ms - op.delay_ms, 0)
            self._schedule_join(group, _JoinOp(delay, initial=True,
                                               configured_ms=op.configured_ms,
                                               remaining_ms=remaining))
            return
        self._on_complete_join(group)

    def _on_complete_join(self, group):
        for m in group.not_yet_rejoined_members():
            if not m.is_static:
                log.info("group %s removed dynamic member %s that did not rejoin",
                         group.group_id, m.member_id)
                self._cancel_heartbeat(m)
                group.remove(m.member_id)
        if group.is_state(DEAD):
            return
        if not group.maybe_elect_new_joined_leader() and group.members:
            # nobody rejoined: wait another rebalance timeout for session expiry to clean up
            log.error("group %s could not complete rebalance because no members rejoined",
                      group.group_id)
            self._schedule_join(group, _JoinOp(group.rebalance_timeout_ms))
            return
        group.init_next_generation(self._now())
        if group.is_state(EMPTY):
            log.info("group %s with generation %d is now empty", group.group_id,
                     group.generation_id)
            self._spawn(self._store_group_background(group, {}))
            return
        log.info("stabilized group %s generation %d with %d members", group.group_id,
                 group.generation_id, group.size)
        leader_members = group.current_member_metadata()
        for m in list(group.members.values()):
            result = JoinResult(errors.NONE, group.generation_id, group.protocol_type,
                                group.protocol_name, group.leader_id or "", m.member_id,
                                list(leader_members) if group.is_leader(m.member_id) else [])
            group.maybe_invoke_join_callback(m, result)
            self._complete_and_schedule_next_heartbeat(group, m)
            m.is_new = False
            group.pending_sync_members.add(m.member_id)
        self._schedule_pending_sync(group)

    # pending sync (members that got a JoinGroup answer must SyncGroup within the rebalance timeout)
    def _schedule_pending_sync(self, group):
        if group.sync_timer is not None:
            group.sync_timer.cancel()
        generation = group.generation_id
        group.sync_timer = self.clock.call_later(
            group.rebalance_timeout_ms, lambda: self._on_expire_pending_sync(group, generation))
        group.sync_generation = generation

    def _remove_pending_sync_member(self, group, member_id):
        group.pending_sync_members.discard(member_id)
        self._maybe_complete_sync_expiration(group)

    def _remove_sync_expiration(self, group):
        group.pending_sync_members.clear()
        self._maybe_complete_sync_expiration(group)

    def _maybe_complete_sync_expiration(self, group):
        if group.sync_timer is None:
            return
        if (group.sync_generation != group.generation_id
                or group.state in (DEAD, EMPTY, PREPARING_REBALANCE)
                or group.has_received_sync_from_all_members()):
            group.sync_timer.cancel()
            group.sync_timer = None

    def _on_expire_pending_sync(self, group, generation):
        group.sync_timer = None
        if generation != group.generation_id:
            return
        if group.state in (COMPLETING_REBALANCE, STABLE) and group.pending_sync_members:
            missing = list(group.pending_sync_members)
            for mid in missing:
                m = group.members.get(mid)
                if m is not None:
                    self._cancel_heartbeat(m)
                group.remove(mid)
            log.info("group %s removed members that did not SyncGroup: %s", group.group_id,
                     missing)
            self._prepare_rebalance(group, f"removing {missing} on pending sync expiration")

    # heartbeats / session expiry
    def _complete_and_schedule_next_heartbeat(self, group, member):
        self._complete_and_schedule_next_expiration(group, member, member.session_timeout_ms)

    def _complete_and_schedule_next_expiration(self, group, member, timeout_ms):
        """The member's session now ends ``timeout_ms`` from now. A timer already armed stays
        unless it would fire after that: it fires at or before the end, and re-arms for what
        is left if the session was extended meanwhile (a member heartbeating and committing
        all the time then costs no timer per request)."""
        self._cancel_pending_member_timer(group, member.member_id)
        member.heartbeat_satisfied = False
        deadline = self._now() + timeout_ms
        shorter = deadline < member.session_deadline
        member.session_deadline = deadline
        if member.heartbeat_timer is None or shorter:
            self._arm_heartbeat(group, member, timeout_ms)

    def _arm_heartbeat(self, group, member, delay_ms):
        self._cancel_heartbeat(member)
        member.heartbeat_timer = self.clock.call_later(
            delay_ms, lambda: self._on_expire_heartbeat(group, member))

    @staticmethod
    def _cancel_heartbeat(member):
        if member.heartbeat_timer is not None:
            member.heartbeat_timer.cancel()
            member.heartbeat_timer = None

    def _on_expire_heartbeat(self, group, member):
        member.heartbeat_timer = None
        if group.is_state(DEAD) or group.members.get(member.member_id) is not member:
            return
        left = member.session_deadline - self._now()
        if left > 0:  # the session was extended after the timer was armed
            return self._arm_heartbeat(group, member, left)
        if not member.has_satisfied_heartbeat():
            log.info("member %s in group %s has failed, removing it from the group",
                     member.member_id, group.group_id)
            self._remove_member_and_update_group(group, member)

    def _add_pending_member_expiration(self, group, member_id, timeout_ms):
        self._cancel_pending_member_timer(group, member_id)
        group.pending_member_timers[member_id] = self.clock.call_later(
            timeout_ms, lambda: self._on_expire_pending_member(group, member_id))

    @staticmethod
    def _cancel_pending_member_timer(group, member_id):
        t = group.pending_member_timers.pop(member_id, None)
        if t is not None:
            t.cancel()

    def _on_expire_pending_member(self, group, member_id):
        group.pending_member_timers.pop(member_id, None)
        if group.is_state(DEAD) or not group.is_pending_member(member_id):
            return
        log.info("pending member %s in group %s removed after session timeout", member_id,
                 group.group_id)
        self._remove_pending_member_and_update_group(group, member_id)

    def _remove_member_and_update_group(self, group, member):
        # a new member may still be parked in JoinGroup: answer it so it can retry
        group.maybe_invoke_join_callback(member, JoinResult.error_result(
            UNKNOWN_MEMBER_ID, errors.UNKNOWN_MEMBER_ID))
        group.maybe_invoke_sync_callback(member, SyncResult.error_result(errors.UNKNOWN_MEMBER_ID))
        self._cancel_heartbeat(member)
        group.remove(member.member_id)
        if group.state in (STABLE, COMPLETING_REBALANCE):
            self._maybe_prepare_rebalance(group, f"removing member {member.member_id}")
        elif group.state == PREPARING_REBALANCE:
            self._check_and_complete_join(group)

    def _remove_pending_member_and_update_group(self, group, member_id):
        self._cancel_pending_member_timer(group, member_id)
        group.remove(member_id)
        if group.is_state(PREPARING_REBALANCE):
            self._check_and_complete_join(group)

    # ------------------------------------------------------------------ SyncGroup
    async def sync_group(self, group_id, generation_id, member_id, group_instance_id,
                         protocol_type, protocol_name, assignments) -> SyncResult:
        """SyncGroup. ``assignments`` (member id -> bytes) is only used from the leader;
        followers wait until the leader's assignment is stored. ``protocol_type`` and
        ``protocol_name`` are None for v0-4 (not checked)."""
        fut = asyncio.get_running_loop().create_future()

        def respond(result):
            if not fut.done():
                fut.set_result(result)

        followup = self._handle_sync_group(group_id, generation_id, member_id, group_instance_id,
                                           protocol_type, protocol_name, assignments or {},
                                           respond)
        if followup is not None:
            await followup
        return await fut

    def _handle_sync_group(self, group_id, generation_id, member_id, instance_id, protocol_type,
                           protocol_name, assignments, respond):
        err = self._validate_group_status(group_id, "SyncGroup")
        if err == errors.COORDINATOR_LOAD_IN_PROGRESS:
            # the rebalance state is lost: make the member rejoin without rediscovery
            respond(SyncResult.error_result(errors.REBALANCE_IN_PROGRESS))
            return None
        if err is not None:
            respond(SyncResult.error_result(err))
            return None
        group = self.groups.get(group_id)
        if group is None:
            respond(SyncResult.error_result(errors.UNKNOWN_MEMBER_ID))
            return None
        if group.is_state(DEAD):
            respond(SyncResult.error_result(errors.COORDINATOR_NOT_AVAILABLE))
            return None
        err = self._validate_current_member(group, member_id, instance_id)
        if err is None:
            if generation_id != group.generation_id:
                err = errors.ILLEGAL_GENERATION
            elif protocol_type is not None and group.protocol_type != protocol_type:
                err = errors.INCONSISTENT_GROUP_PROTOCOL
            elif protocol_name is not None and group.protocol_name != protocol_name:
                err = errors.INCONSISTENT_GROUP_PROTOCOL
        if err is not None:
            respond(SyncResult.error_result(err))
            return None
        state = group.state
        if state == EMPTY:
            respond(SyncResult.error_result(errors.UNKNOWN_MEMBER_ID))
        elif state == PREPARING_REBALANCE:
            respond(SyncResult.error_result(errors.REBALANCE_IN_PROGRESS))
        elif state == COMPLETING_REBALANCE:
            member = group.get(member_id)
            if member.is_awaiting_sync:
                # a retried SyncGroup replaces the parked one; answer the old request
                group.maybe_invoke_sync_callback(
                    member, SyncResult.error_result(errors.REBALANCE_IN_PROGRESS))
            member.awaiting_sync = respond
            self._remove_pending_sync_member(group, member_id)
            if group.is_leader(member_id):
                log.info("assignment received from leader %s of group %s generation %d",
                         member_id, group.group_id, group.generation_id)
                assignment = {mid: bytes(assignments.get(mid) or b"") for mid in group.members}
                return self._store_and_propagate_assignment(group, assignment, generation_id)
        elif state == STABLE:
            self._remove_pending_sync_member(group, member_id)
            member = group.get(member_id)
            respond(SyncResult(errors.NONE, group.protocol_type, group.protocol_name,
                               member.assignment))
            self._complete_and_schedule_next_heartbeat(group, member)
        return None

    async def _store_and_propagate_assignment(self, group, assignment, generation_id):
        error = await self._store_group(group, assignment)
        # a member may have joined (or left) while the append was in flight
        if group.is_state(COMPLETING_REBALANCE) and group.generation_id == generation_id:
            if error != errors.NONE:
                self._reset_and_propagate_assignment_error(group, error)
                self._maybe_prepare_rebalance(group, "error storing the group assignment")
            else:
                for mid, m in group.members.items():
                    m.assignment = assignment.get(mid, b"")
                self._propagate_assignment(group, errors.NONE)
                group.transition_to(STABLE, self._now())

    def _reset_and_propagate_assignment_error(self, group, error):
        for m in group.members.values():
            m.assignment = b""
        self._propagate_assignment(group, error)

    def _propagate_assignment(self, group, error):
        ok = error == errors.NONE
        for m in list(group.members.values()):
            result = SyncResult(error, group.protocol_type if ok else None,
                                group.protocol_name if ok else None, m.assignment)
            if group.maybe_invoke_sync_callback(m, result):
                # restart the session after the (possibly long) wait for the leader
                self._complete_and_schedule_next_heartbeat(group, m)

    # ------------------------------------------------------------------ Heartbeat
    def heartbeat(self, group_id, generation_id, member_id, group_instance_id=None) -> int:
        err = self._validate_group_status(group_id, "Heartbeat")
        if err is not None:
            # while loading, answer blindly: the group state is not known yet
            return errors.NONE if err == errors.COORDINATOR_LOAD_IN_PROGRESS else err
        group = self.groups.get(group_id)
        if group is None:
            return errors.UNKNOWN_MEMBER_ID
        if group.is_state(DEAD):
            return errors.COORDINATOR_NOT_AVAILABLE
        err = self._validate_current_member(group, member_id, group_instance_id)
        if err is not None:
            return err
        if generation_id != group.generation_id:
            return errors.ILLEGAL_GENERATION
        state = group.state
        if state == EMPTY:
            return errors.UNKNOWN_MEMBER_ID
        member = group.get(member_id)
        self._complete_and_schedule_next_heartbeat(group, member)
        if state == PREPARING_REBALANCE:
            return errors.REBALANCE_IN_PROGRESS
        return errors.NONE

    # ------------------------------------------------------------------ LeaveGroup
    def leave_group(self, group_id, members) -> tuple[int, list[LeaveMemberResult]]:
        """LeaveGroup. ``members``: (member_id, group_instance_id[, reason]) tuples; v0-2 send
        one (member_id, None). A v3+ admin removal by instance id passes member_id "".
        Returns (top-level error, per-member results); for v0-2 the handler reports the single
        member's error as the top-level one, as Kafka does."""
        leaving = [(m[0] or "", m[1] if len(m) > 1 else None, m[2] if len(m) > 2 else None)
                   for m in members]
        err = self._validate_group_status(group_id, "LeaveGroup")
        if err is not None:
            return err, []
        group = self.groups.get(group_id)
        if group is None:
            return errors.NONE, [LeaveMemberResult(mid, iid, errors.UNKNOWN_MEMBER_ID)
                                 for mid, iid, _ in leaving]
        if group.is_state(DEAD):
            return errors.COORDINATOR_NOT_AVAILABLE, []
        results = []
        for member_id, instance_id, reason in leaving:
            if member_id == UNKNOWN_MEMBER_ID:
                current = (group.current_static_member_id(instance_id)
                           if instance_id is not None else None)
                if current is None:
                    error = errors.UNKNOWN_MEMBER_ID
                else:
                    self._remove_current_member(group, current, reason)
                    error = errors.NONE
            elif group.is_pending_member(member_id):
                self._remove_pending_member_and_update_group(group, member_id)
                error = errors.NONE
            else:
                error = self._validate_current_member(group, member_id, instance_id)
                if error is None:
                    self._remove_current_member(group, member_id, reason)
                    error = errors.NONE
            results.append(LeaveMemberResult(member_id, instance_id, error))
        return errors.NONE, results

    def _remove_current_member(self, group, member_id, reason):
        member = group.get(member_id)
        log.info("member %s has left group %s through LeaveGroup; reason: %s", member_id,
                 group.group_id, reason or "not provided")
        self._remove_member_and_update_group(group, member)

    # ------------------------------------------------------------------ offsets
    def _to_offset_and_metadata(self, value, now, expire) -> OffsetAndMetadata:
        offset, leader_epoch, metadata = value[0], value[1], value[2]
        commit_ts = value[3] if len(value) > 3 and value[3] not in (None, -1) else now
        return OffsetAndMetadata(
            offset=int(offset),
            leader_epoch=-1 if leader_epoch is None else int(leader_epoch),
            metadata="" if metadata is None else metadata,
            commit_timestamp=commit_ts,
            expire_timestamp=expire)

    async def commit_offsets(self, group_id, generation_id, member_id, group_instance_id,
                             retention_time_ms, offsets) -> dict:
        """OffsetCommit. ``offsets``: {(topic, partition): (offset, leader_epoch|-1|None,
        metadata|None[, commit_timestamp])} (the 4th item only for v1 requests).
        ``retention_time_ms`` -1/None is the default (broker retention); other values (v2-4)
        set an explicit expire timestamp like Kafka. Returns {(topic, partition): error}.
        Topic existence/authorization (UNKNOWN_TOPIC_OR_PARTITION) is the handler's check."""
        member_id = member_id or UNKNOWN_MEMBER_ID
        err = self._validate_group_status(group_id, "OffsetCommit")
        if err is not None:
            return {tp: err for tp in offsets}
        group = self.groups.get(group_id)
        if group is None:
            if generation_id < 0:
                # not using Kafka group management: a standalone ("simple") commit
                group = self._add_group(GroupMetadata(group_id, EMPTY, self._now()))
            else:
                return {tp: errors.ILLEGAL_GENERATION for tp in offsets}
        err = self._validate_offset_commit(group, generation_id, member_id, group_instance_id)
        if err is not None:
            return {tp: err for tp in offsets}
        state = group.state
        if state == COMPLETING_REBALANCE:
            # a valid member that has not synced yet: let it finish the rebalance first
            return {tp: errors.REBALANCE_IN_PROGRESS for tp in offsets}
        if state in (STABLE, PREPARING_REBALANCE):
            # commits are allowed while preparing; the heartbeat tells the member to rejoin
            self._complete_and_schedule_next_heartbeat(group, group.get(member_id))
        now = self._now()
        expire = (min(now + retention_time_ms, INT64_MAX)  # a huge retention never overflows
                  if retention_time_ms is not None and retention_time_ms != -1 else None)
        oms = {tp: self._to_offset_and_metadata(v, now, expire) for tp, v in offsets.items()}
        return await self._store_offsets(group, oms, now)

    def _validate_offset_commit(self, group, generation_id, member_id, instance_id):
        if group.is_state(DEAD):
            return errors.COORDINATOR_NOT_AVAILABLE
        if generation_id >= 0 or member_id != UNKNOWN_MEMBER_ID or instance_id is not None:
            err = self._validate_current_member(group, member_id, instance_id)
            if err is not None:
                return err
            if generation_id != group.generation_id:
                return errors.ILLEGAL_GENERATION
            return None
        if not group.is_state(EMPTY):
            # when the group has members only they can commit
            return errors.UNKNOWN_MEMBER_ID
        return None

    def _metadata_ok(self, metadata: str) -> bool:
        # a character is at most two UTF-16 units: short metadata needs no encoding
        return (metadata is None or 2 * len(metadata) <= self.max_metadata_size
                or _utf16_len(metadata) <= self.max_metadata_size)

    async def _store_offsets(self, group, offsets: dict, now: int) -> dict:
        valid = {tp: om for tp, om in offsets.items() if self._metadata_ok(om.metadata)}
        if not valid:
            return {tp: errors.OFFSET_METADATA_TOO_LARGE for tp in offsets}
        partition = self.partition_for(group.group_id)
        if partition not in self.owned_partitions:
            return {tp: errors.NOT_COORDINATOR for tp in offsets}
        group.prepare_offset_commit(valid)
        try:
            base_offset = await self.store.store_offsets(partition, group.group_id, valid, now)
        except Exception as e:  # noqa: BLE001 - every append failure becomes an error code
            code = getattr(e, "error_code", None)
            if code is None:
                log.error("offset commit append for group %s failed", group.group_id, exc_info=e)
                error = errors.UNKNOWN_SERVER_ERROR
            else:
                error = errors.append_error_for_commit(code)
            if not group.is_state(DEAD):
                for tp, om in valid.items():
                    group.fail_pending_offset_write(tp, om)
        else:
            error = errors.NONE
            if not group.is_state(DEAD):
                for tp, om in valid.items():
                    group.on_offset_commit_append(tp, CommitRecord(base_offset, om))
        return {tp: (error if tp in valid else errors.OFFSET_METADATA_TOO_LARGE)
                for tp in offsets}

    async def commit_txn_offsets(self, group_id, producer_id, producer_epoch, generation_id,
                                 member_id, group_instance_id, offsets) -> dict:
        """TxnOffsetCommit: offsets staged in the producer's transaction, written as a
        transactional batch; they count once the COMMIT marker reaches the group's partition
        (:meth:`complete_txn`). Members are validated like OffsetCommit when the request
        names a generation or member (KIP-447). Returns {(topic, partition): error}."""
        err = self._validate_group_status(group_id, "TxnOffsetCommit")
        if err is not None:
            return {tp: err for tp in offsets}
        group = self.groups.get(group_id)
        if group is None:
            group = self._add_group(GroupMetadata(group_id, EMPTY, self._now()))
        if group.is_state(DEAD):
            return {tp: errors.COORDINATOR_NOT_AVAILABLE for tp in offsets}
        if generation_id >= 0 or member_id or group_instance_id is not None:
            err = self._validate_current_member(group, member_id or UNKNOWN_MEMBER_ID,
                                                group_instance_id)
            if err is None and generation_id != group.generation_id:
                err = errors.ILLEGAL_GENERATION
            if err is not None:
                return {tp: err for tp in offsets}
        now = self._now()
        oms = {tp: self._to_offset_and_metadata(v, now, None) for tp, v in offsets.items()}
        valid = {tp: om for tp, om in oms.items() if self._metadata_ok(om.metadata)}
        partition = self.partition_for(group_id)
        if partition not in self.owned_partitions:
            return {tp: errors.NOT_COORDINATOR for tp in offsets}
        error = errors.NONE
        if valid:
            try:
                base = await self.store.store_offsets(partition, group_id, valid, now,
                                                      producer_id, producer_epoch)
            except Exception as e:  # noqa: BLE001 - every append failure becomes an error code
                code = getattr(e, "error_code", None)
                error = (errors.UNKNOWN_SERVER_ERROR if code is None
                         else errors.append_error_for_commit(code))
            else:
                if not group.is_state(DEAD):
                    group.add_txn_offsets(producer_id, {tp: CommitRecord(base, om)
                                                        for tp, om in valid.items()})
        return {tp: (error if tp in valid else errors.OFFSET_METADATA_TOO_LARGE)
                for tp in offsets}

    def complete_txn(self, partition: int, producer_id: int, commit: bool) -> None:
        """A transaction marker was written to ``__consumer_offsets-<partition>``."""
        for gid, group in self.groups.items():
            if producer_id in group.pending_txn_offsets and self.partition_for(gid) == partition:
                group.complete_txn_offsets(producer_id, commit)

    def fetch_offsets(self, group_id, partitions=None, require_stable=False):
        """OffsetFetch. ``partitions``: list of (topic, partition), or None for all committed.
        Returns (error, {(topic, partition): OffsetFetchPartition(offset, leader_epoch,
        metadata, error)}); unknown partitions give offset -1, epoch -1, metadata ""."""
        err = self._validate_group_status(group_id, "OffsetFetch")
        if err is not None:
            return err, {}
        group = self.groups.get(group_id)
        wanted = None if partitions is None else [(t, p) for t, p in partitions]
        if group is None or group.is_state(DEAD):
            return errors.NONE, {tp: OffsetFetchPartition(-1, -1, "", errors.NONE)
                                 for tp in (wanted or [])}
        if wanted is None:
            wanted = list(group.offsets)
        out = {}
        for tp in wanted:
            if require_stable and group.has_pending_offset_commits_for(tp):
                out[tp] = OffsetFetchPartition(-1, -1, "", errors.UNSTABLE_OFFSET_COMMIT)
                continue
            rec = group.offsets.get(tp)
            if rec is None:
                out[tp] = OffsetFetchPartition(-1, -1, "", errors.NONE)
            else:
                om = rec.offset_and_metadata
                out[tp] = OffsetFetchPartition(om.offset, om.leader_epoch, om.metadata,
                                               errors.NONE)
        return errors.NONE, out

    # ------------------------------------------------------------------ admin APIs
    def describe_groups(self, group_ids) -> list[GroupDescription]:
        out = []
        for gid in group_ids:
            err = self._validate_group_status(gid, "DescribeGroups")
            if err is not None:
                out.append(GroupDescription(gid, err, "", "", "", []))
                continue
            group = self.groups.get(gid)
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
        if not self.active:
            return errors.COORDINATOR_NOT_AVAILABLE, []
        error = errors.COORDINATOR_LOAD_IN_PROGRESS if self.loading_partitions else errors.NONE
        states = set(states_filter or ())
        groups = [GroupOverview(g.group_id, g.protocol_type or "", g.state)
                  for g in self.groups.values() if not states or g.state in states]
        return error, groups

    async def delete_groups(self, group_ids) -> dict[str, int]:
        """DeleteGroups: only Empty groups can go (NON_EMPTY_GROUP otherwise); unknown groups
        get GROUP_ID_NOT_FOUND. Writes offset and group tombstones."""
        result: dict[str, int] = {}
        eligible = []
        for gid in group_ids:
            err = self._validate_group_status(gid, "DeleteGroups")
            if err is not None:
                result[gid] = err
                continue
            group = self.groups.get(gid)
            if group is None or group.is_state(DEAD):
                result[gid] = errors.GROUP_ID_NOT_FOUND
            elif group.is_state(EMPTY):
                group.transition_to(DEAD, self._now())
                eligible.append(group)
            else:
                result[gid] = errors.NON_EMPTY_GROUP
        if eligible:
            removed = await self._cleanup_group_metadata(eligible, lambda g: g.remove_all_offsets())
            for g in eligible:
                result[g.group_id] = errors.NONE
            log.info("deleted groups %s (%d offsets)", [g.group_id for g in eligible], removed)
        return result

    async def delete_offsets(self, group_id, partitions) -> tuple[int, dict]:
        """OffsetDelete. Returns (group error, {(topic, partition): error}); partitions of topics
        a ``consumer`` group is subscribed to get GROUP_SUBSCRIBED_TO_TOPIC (the subscription is
        parsed from the members' metadata; when it cannot be parsed every topic counts as
        subscribed, like Kafka). A non-empty group of another protocol type: NON_EMPTY_GROUP."""
        err = self._validate_group_status(group_id, "OffsetDelete")
        if err is not None:
            return err, {}
        group = self.groups.get(group_id)
        if group is None or group.is_state(DEAD):
            return errors.GROUP_ID_NOT_FOUND, {}
        tps = [(t, p) for t, p in partitions]
        partition_errors = {}
        if group.is_state(EMPTY):
            eligible = tps
        elif group.is_consumer_group:
            eligible = []
            for tp in tps:
                if group.is_subscribed_to_topic(tp[0]):
                    partition_errors[tp] = errors.GROUP_SUBSCRIBED_TO_TOPIC
                else:
                    eligible.append(tp)
        else:
            return errors.NON_EMPTY_GROUP, {}
        if eligible:
            await self._cleanup_group_metadata([group], lambda g: g.remove_offsets(eligible))
            for tp in eligible:
                partition_errors[tp] = errors.NONE
        return errors.NONE, partition_errors

    # ------------------------------------------------------------------ expiry / cleanup
    def _schedule_expiration(self):
        self._expiry_timer = self.clock.call_later(self.retention_check_interval_ms,
                                                   self._on_expiry_timer)

    def _on_expiry_timer(self):
        self._expiry_timer = None
        if not self.active:
            return
        self._spawn(self._expire_and_reschedule())

    async def _expire_and_reschedule(self):
        try:
            await self.expire_offsets()
        finally:
            if self.active:
                self._schedule_expiration()

    async def expire_offsets(self) -> int:
        """One pass of Kafka's offset expiry (run every offsets.retention.check.interval.ms):
        drops expired offsets with tombstones and removes Empty groups left without offsets."""
        now = self._now()
        retention = self.offsets_retention_ms
        n = await self._cleanup_group_metadata(
            list(self.groups.values()), lambda g: g.remove_expired_offsets(now, retention))
        if n:
            log.info("removed %d expired offsets", n)
        return n

    async def _cleanup_group_metadata(self, groups, selector) -> int:
        removed_total = 0
        for group in groups:
            removed = selector(group)
            if group.is_state(EMPTY) and not group.has_offsets():
                log.info("group %s transitioned to Dead in generation %d", group.group_id,
                         group.generation_id)
                group.transition_to(DEAD, self._now())
            is_dead = group.is_state(DEAD)
            generation = group.generation_id
            partition = self.partition_for(group.group_id)
            if partition not in self.owned_partitions:
                continue
            delete_group = False
            if is_dead and self.groups.get(group.group_id) is group:
                del self.groups[group.group_id]
                self._cancel_group_timers(group)
                # generation 0 groups only stored offsets: no metadata record to delete
                delete_group = generation > 0
            if removed or delete_group:
                try:
                    await self.store.store_tombstones(partition, group.group_id, list(removed),
                                                      delete_group, self._now())
                    removed_total += len(removed)
                except Exception as e:  # noqa: BLE001 - a lost tombstone is retried next pass
                    log.error("failed to append tombstones for group %s", group.group_id,
                              exc_info=e)
        return removed_total

    def _cancel_group_timers(self, group):
        if group.join_timer is not None:
            group.join_timer.cancel()
        group.join_timer = group.join_op = None
        if group.sync_timer is not None:
            group.sync_timer.cancel()
            group.sync_timer = None
        for t in group.pending_member_timers.values():
            t.cancel()
        group.pending_member_timers.clear()
        for m in group.members.values():
            self._cancel_heartbeat(m)

    # ------------------------------------------------------------------ group metadata persistence
    def _group_record(self, group, assignment) -> GroupRecord:
        members = []
        for mid, m in group.members.items():
            members.append(GroupMemberRecord(
                member_id=mid, group_instance_id=m.group_instance_id, client_id=m.client_id,
                client_host=m.client_host, rebalance_timeout=m.rebalance_timeout_ms,
                session_timeout=m.session_timeout_ms,
                subscription=m.metadata(group.protocol_name),
                assignment=bytes(assignment.get(mid, b""))))
        ts = group.current_state_timestamp
        return GroupRecord(protocol_type=group.protocol_type or "",
                           generation=group.generation_id, protocol=group.protocol_name,
                           leader=group.leader_id, current_state_timestamp=-1 if ts is None else ts,
                           members=members)

    async def _store_group(self, group, assignment) -> int:
        partition = self.partition_for(group.group_id)
        if partition not in self.owned_partitions:
            return errors.NOT_COORDINATOR
        record = self._group_record(group, assignment)
        try:
            await self.store.store_group(partition, group.group_id, record, self._now())
        except Exception as e:  # noqa: BLE001
            code = getattr(e, "error_code", None)
            if code is None:
                log.error("group metadata append for %s failed", group.group_id, exc_info=e)
                return errors.UNKNOWN_SERVER_ERROR
            return errors.append_error_for_group(code)
        return errors.NONE

    async def _store_group_background(self, group, assignment):
        error = await self._store_group(group, assignment)
        if error != errors.NONE:
            # safe: an empty generation has no active members; warn like Kafka
            log.warning("failed to write empty metadata for group %s: %s", group.group_id,
                        errors.name(error))

    # ------------------------------------------------------------------ loading / unloading
    def load_partition(self, partition: int) -> None:
        """Replay ``__consumer_offsets-<partition>`` into groups and offsets and start answering
        for the groups that map to it. Groups with members come back Stable (like Kafka) with
        their session timers restarted: members that are still alive keep heartbeating, the
        others expire and the group rebalances; groups without members come back Empty."""
        if partition in self.owned_partitions:
            return
        self.loading_partitions.add(partition)
        try:
            try:
                loaded = self.store.load(partition)
            except Exception as e:  # noqa: BLE001 - like Kafka: log it, own the partition anyway
                log.error("error loading offsets from __consumer_offsets-%d", partition, exc_info=e)
                return
            now = self._now()
            for gid, rec in loaded.groups.items():
                group = self._group_from_record(gid, rec, now)
                group.offsets.update(loaded.offsets.get(gid, {}))
                self._load_group(group)
            for gid, offsets in loaded.offsets.items():
                if gid in loaded.groups:
                    continue
                group = GroupMetadata(gid, EMPTY, now)
                group.offsets.update(offsets)
                self._load_group(group)
            for pid, txn in loaded.pending_txn.items():
                for (gid, t, p), rec in txn.items():
                    group = self.groups.get(gid)
                    if group is None:
                        group = self._add_group(GroupMetadata(gid, EMPTY, now))
                    group.add_txn_offsets(pid, {(t, p): rec})
        finally:
            self.loading_partitions.discard(partition)
            self.owned_partitions.add(partition)

    def _group_from_record(self, group_id, rec: GroupRecord, now) -> GroupMetadata:
        group = GroupMetadata(group_id, STABLE if rec.members else EMPTY, now)
        group.generation_id = rec.generation
        group.protocol_type = rec.protocol_type or None
        group.protocol_name = rec.protocol
        group.leader_id = rec.leader
        group.current_state_timestamp = (None if rec.current_state_timestamp in (None, -1)
                                         else rec.current_state_timestamp)
        for m in rec.members:
            member = MemberMetadata(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                                    m.rebalance_timeout, m.session_timeout, rec.protocol_type,
                                    [(rec.protocol, m.subscription)], m.assignment)
            group.add(member, None)
        group.subscribed_topics = group.compute_subscribed_topics()
        return group

    def _load_group(self, group):
        current = self._add_group(group)
        if current is not group:
            log.debug("group %s already cached; not replacing it from the log", group.group_id)
            return
        if group.size > self.max_group_size:
            self._prepare_rebalance(group, "freshly-loaded group is over capacity")
        for m in list(group.members.values()):
            self._complete_and_schedule_next_heartbeat(group, m)

    def unload_partition(self, partition: int) -> None:
        """Stop answering for the groups of ``partition`` (leadership moved away)."""
        self.owned_partitions.discard(partition)
        self.loading_partitions.discard(partition)
        for gid, group in list(self.groups.items()):
            if self.partition_for(gid) != partition:
                continue
            previous = group.state
            group.transition_to(DEAD, self._now())
            if previous == PREPARING_REBALANCE:
                for m in list(group.members.values()):
                    group.maybe_invoke_join_callback(
                        m, JoinResult.error_result(m.member_id, errors.NOT_COORDINATOR))
            elif previous in (STABLE, COMPLETING_REBALANCE):
                for m in list(group.members.values()):
                    group.maybe_invoke_sync_callback(
                        m, SyncResult.error_result(errors.NOT_COORDINATOR))
            self._cancel_group_timers(group)
            del self.groups[gid]


__all__ = ["GroupCoordinator", "partition_for", "java_string_hash", "DEFAULTS",
           "NEW_MEMBER_JOIN_TIMEOUT_MS", "CONSUMER_PROTOCOL_TYPE"]
