"""The classic rebalance protocol: Kafka's GroupCoordinator state machine for group membership.

Owns: JoinGroup, SyncGroup, Heartbeat and LeaveGroup; members, generations, the leader and
protocol selection; static membership (KIP-345) and member ids handed out before joining
(KIP-394); every membership timer (session, rebalance, initial rebalance delay, pending member,
pending sync), all on the injected clock; JoinGroup / SyncGroup requests that have to wait are
parked on asyncio futures.

Must not know: offsets, or how group metadata is written (it hands a generation to a
:class:`coordinator.group.seams.GroupMetadataWriter`). It answers with plain results
(``coordinator.group.results``) and Kafka error codes, never wire classes.

States and transitions are Kafka's::

    Empty --join--> PreparingRebalance --all joined / timeout--> CompletingRebalance
    CompletingRebalance --leader SyncGroup stored--> Stable
    Stable / CompletingRebalance --join, leave, session expiry--> PreparingRebalance
    PreparingRebalance --everybody gone--> Empty;  Empty (no offsets) / deleted --> Dead
"""
from __future__ import annotations

import asyncio
import logging

from ..runtime import errors
from .group import (COMPLETING_REBALANCE, DEAD, EMPTY, PREPARING_REBALANCE, STABLE,
                    UNKNOWN_MEMBER_ID, GroupMetadata, IllegalStateError, MemberMetadata)
from .group_catalog import GroupCatalog
from .results import JoinResult, LeaveMemberResult, SyncResult
from .seams import GroupMetadataWriter

log = logging.getLogger("josefk.coordinator")

NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000


class _JoinOp:
    """A parked rebalance: Kafka's DelayedJoin, or InitialDelayedJoin when ``initial``."""
    __slots__ = ("delay_ms", "initial", "configured_ms", "remaining_ms")

    def __init__(self, delay_ms, initial=False, configured_ms=0, remaining_ms=0):
        self.delay_ms = delay_ms
        self.initial = initial
        self.configured_ms = configured_ms
        self.remaining_ms = remaining_ms


class Membership:
    """Membership and rebalancing of the classic groups in ``catalog``; implements
    :class:`coordinator.group.seams.MemberSessions` for the offset manager."""

    def __init__(self, catalog: GroupCatalog, writer: GroupMetadataWriter, *,
                 initial_rebalance_delay_ms: int, min_session_timeout_ms: int,
                 max_session_timeout_ms: int, max_group_size: int):
        self.catalog = catalog
        self.clock = catalog.clock
        self.writer = writer
        self.initial_rebalance_delay_ms = initial_rebalance_delay_ms
        self.min_session_timeout_ms = min_session_timeout_ms
        self.max_session_timeout_ms = max_session_timeout_ms
        self.max_group_size = max_group_size

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
        err = self.catalog.validate(group_id, "JoinGroup")
        if err is not None:
            respond(JoinResult.error_result(member_id, err))
            return None
        if not (self.min_session_timeout_ms <= session_timeout_ms <= self.max_session_timeout_ms):
            respond(JoinResult.error_result(member_id, errors.INVALID_SESSION_TIMEOUT))
            return None
        is_unknown = member_id == UNKNOWN_MEMBER_ID
        group = self.catalog.groups.get(group_id)
        if group is None:
            if not is_unknown:
                respond(JoinResult.error_result(member_id, errors.UNKNOWN_MEMBER_ID))
                return None
            group = self.catalog.add(GroupMetadata(group_id, EMPTY, self.catalog.now()))
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
        err = group.validate_member(member_id, instance_id)
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
        self.extend_session(group, member)
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
        error = await self.writer.store_group(group, assignment)
        if error != errors.NONE:
            log.warning("failed to persist static member %s of group %s: %s", instance_id,
                        group.group_id, errors.name(error))
            if group.members.get(new_member_id) is member:
                group.update_member(member, old_protocols, None)
                old_member = group.replace_static_member(instance_id, new_member_id, old_member_id)
                self.extend_session(group, old_member)
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
        group.transition_to(PREPARING_REBALANCE, self.catalog.now())
        log.info("preparing to rebalance group %s (old generation %d, __consumer_offsets-%d): %s",
                 group.group_id, group.generation_id,
                 self.catalog.partition_for(group.group_id), reason)
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
        group.init_next_generation(self.catalog.now())
        if group.is_state(EMPTY):
            log.info("group %s with generation %d is now empty", group.group_id,
                     group.generation_id)
            self.catalog.spawn(self._store_empty_group(group))
            return
        log.info("stabilized group %s generation %d with %d members", group.group_id,
                 group.generation_id, group.size)
        leader_members = group.current_member_metadata()
        for m in list(group.members.values()):
            result = JoinResult(errors.NONE, group.generation_id, group.protocol_type,
                                group.protocol_name, group.leader_id or "", m.member_id,
                                list(leader_members) if group.is_leader(m.member_id) else [])
            group.maybe_invoke_join_callback(m, result)
            self.extend_session(group, m)
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
    def extend_session(self, group, member):
        """The member is alive: its session restarts (Kafka's completeAndScheduleNextHeartbeat-
        Expiration; heartbeats, SyncGroup and offset commits all count)."""
        self._complete_and_schedule_next_expiration(group, member, member.session_timeout_ms)

    def _complete_and_schedule_next_expiration(self, group, member, timeout_ms):
        """The member's session now ends ``timeout_ms`` from now. A timer already armed stays
        unless it would fire after that: it fires at or before the end, and re-arms for what
        is left if the session was extended meanwhile (a member heartbeating and committing
        all the time then costs no timer per request)."""
        self._cancel_pending_member_timer(group, member.member_id)
        member.heartbeat_satisfied = False
        deadline = self.catalog.now() + timeout_ms
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
        left = member.session_deadline - self.catalog.now()
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
        err = self.catalog.validate(group_id, "SyncGroup")
        if err == errors.COORDINATOR_LOAD_IN_PROGRESS:
            # the rebalance state is lost: make the member rejoin without rediscovery
            respond(SyncResult.error_result(errors.REBALANCE_IN_PROGRESS))
            return None
        if err is not None:
            respond(SyncResult.error_result(err))
            return None
        group = self.catalog.groups.get(group_id)
        if group is None:
            respond(SyncResult.error_result(errors.UNKNOWN_MEMBER_ID))
            return None
        if group.is_state(DEAD):
            respond(SyncResult.error_result(errors.COORDINATOR_NOT_AVAILABLE))
            return None
        err = group.validate_member(member_id, instance_id)
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
            self.extend_session(group, member)
        return None

    async def _store_and_propagate_assignment(self, group, assignment, generation_id):
        error = await self.writer.store_group(group, assignment)
        # a member may have joined (or left) while the append was in flight
        if group.is_state(COMPLETING_REBALANCE) and group.generation_id == generation_id:
            if error != errors.NONE:
                self._reset_and_propagate_assignment_error(group, error)
                self._maybe_prepare_rebalance(group, "error storing the group assignment")
            else:
                for mid, m in group.members.items():
                    m.assignment = assignment.get(mid, b"")
                self._propagate_assignment(group, errors.NONE)
                group.transition_to(STABLE, self.catalog.now())

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
                self.extend_session(group, m)

    # ------------------------------------------------------------------ Heartbeat
    def heartbeat(self, group_id, generation_id, member_id, group_instance_id=None) -> int:
        err = self.catalog.validate(group_id, "Heartbeat")
        if err is not None:
            # while loading, answer blindly: the group state is not known yet
            return errors.NONE if err == errors.COORDINATOR_LOAD_IN_PROGRESS else err
        group = self.catalog.groups.get(group_id)
        if group is None:
            return errors.UNKNOWN_MEMBER_ID
        if group.is_state(DEAD):
            return errors.COORDINATOR_NOT_AVAILABLE
        err = group.validate_member(member_id, group_instance_id)
        if err is not None:
            return err
        if generation_id != group.generation_id:
            return errors.ILLEGAL_GENERATION
        state = group.state
        if state == EMPTY:
            return errors.UNKNOWN_MEMBER_ID
        member = group.get(member_id)
        self.extend_session(group, member)
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
        err = self.catalog.validate(group_id, "LeaveGroup")
        if err is not None:
            return err, []
        group = self.catalog.groups.get(group_id)
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
                error = group.validate_member(member_id, instance_id)
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

    async def _store_empty_group(self, group):
        error = await self.writer.store_group(group, {})
        if error != errors.NONE:
            # safe: an empty generation has no active members; warn like Kafka
            log.warning("failed to write empty metadata for group %s: %s", group.group_id,
                        errors.name(error))

    # ------------------------------------------------------------------ groups coming and going
    def resume(self, group: GroupMetadata) -> None:
        """A group just loaded from the log: its members' sessions restart (those still alive
        keep heartbeating, the others expire and the group rebalances)."""
        if group.size > self.max_group_size:
            self._prepare_rebalance(group, "freshly-loaded group is over capacity")
        for m in list(group.members.values()):
            self.extend_session(group, m)

    def hand_over(self, group: GroupMetadata) -> None:
        """``group`` became a consumer group (``coordinator.group.consumer_groups``): requests parked
        in JoinGroup or SyncGroup are answered REBALANCE_IN_PROGRESS (their members join the
        consumer group) and its timers stop."""
        for m in list(group.members.values()):
            group.maybe_invoke_join_callback(m, JoinResult.error_result(
                m.member_id, errors.REBALANCE_IN_PROGRESS))
            group.maybe_invoke_sync_callback(m, SyncResult.error_result(
                errors.REBALANCE_IN_PROGRESS))
        self.cancel_timers(group)

    def take_over(self, group: GroupMetadata, reason: str | None) -> None:
        """``group`` was a consumer group and is a classic group again: its members' sessions
        start, and with a ``reason`` (a member left) it rebalances."""
        self.resume(group)
        if reason is not None:
            self._maybe_prepare_rebalance(group, reason)

    def unload(self, group: GroupMetadata) -> None:
        """The group's partition moved away: it goes Dead, parked requests are answered
        NOT_COORDINATOR and its timers stop."""
        previous = group.state
        group.transition_to(DEAD, self.catalog.now())
        if previous == PREPARING_REBALANCE:
            for m in list(group.members.values()):
                group.maybe_invoke_join_callback(
                    m, JoinResult.error_result(m.member_id, errors.NOT_COORDINATOR))
        elif previous in (STABLE, COMPLETING_REBALANCE):
            for m in list(group.members.values()):
                group.maybe_invoke_sync_callback(
                    m, SyncResult.error_result(errors.NOT_COORDINATOR))
        self.cancel_timers(group)

    def cancel_timers(self, group):
        """Stop every timer of ``group`` (it is going away)."""
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

