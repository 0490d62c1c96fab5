"""The consumer group protocol (KIP-848): Kafka's GroupMetadataManager for consumer groups.

Owns: ConsumerGroupHeartbeat (join, heartbeat, leave, static members' temporary leave) and
ConsumerGroupDescribe; the group epoch, the target assignment computed by the server-side
assignor (``coordinator.group.assignors``) and each member's reconciliation towards it
(``coordinator.group.reconciliation``); subscriptions by topic name and by regular expression (RE2
syntax, resolved here); static membership; the session timeout
(``group.consumer.session.timeout.ms``) and the rebalance timeout of members that do not revoke
in time; members that joined with JoinGroup (the classic protocol) inside a consumer group; and
converting a group between the two protocols (``group.consumer.migration.policy``).

Every change is a list of records (``coordinator.group.consumer_group.Record``) computed from the
group as it is, appended to ``__consumer_offsets`` and only then applied to the group, under
one lock per group: what a member is told is always what a new coordinator would read back.
Timers go through the catalog's clock; while the coordinator may not serve (its ZooKeeper
session in doubt) it fences nobody on timers either.

Must not know: the wire (requests and responses are plain values), the broker, or the record
layout (``coordinator.group.consumer_records``).
"""
from __future__ import annotations

import base64
import logging
import uuid
from dataclasses import dataclass, replace

import re2

from josefk.wire.apis.consumer_protocol import ASSIGNMENT, SUBSCRIPTION

from ..runtime import errors
from ..runtime.keyed_locks import KeyedLocks
from ..runtime.runtime import CoordinatorResult
from . import consumer_records
from .assignors import ASSIGNORS, MemberSpec, assignor_names
from .consumer_group import (CURRENT_ASSIGNMENT, DEAD, GROUP_EPOCH,
                             JOIN_EPOCH, LEAVE_EPOCH, MEMBER_METADATA, REGULAR_EXPRESSION,
                             STATIC_LEAVE_EPOCH, SUBSCRIPTION_METADATA, TARGET_EPOCH,
                             TARGET_MEMBER, UNRELEASED_PARTITIONS, UNREVOKED_PARTITIONS, ApiError,
                             ClassicMetadata, ConsumerGroup, ConsumerGroupMember,
                             MemberAssignment, MemberMetadata, Record, ResolvedRegex,
                             TopicMetadata)
from .group import CONSUMER_PROTOCOL_TYPE, EMPTY as CLASSIC_EMPTY, STABLE as CLASSIC_STABLE
from .group import GroupMetadata, MemberMetadata as ClassicMember
from .group_catalog import GroupCatalog
from .group_store import group_record
from .offset_store import group_metadata_key, group_metadata_value
from .reconciliation import reconcile
from .results import (ConsumerGroupDescription, ConsumerHeartbeatResult,
                      ConsumerMemberDescription, JoinResult, LeaveMemberResult, SyncResult)

log = logging.getLogger("josefk.coordinator")

# Kafka's REGEX_BATCH_REFRESH_MIN_INTERVAL_MS: a group's regular expressions are resolved again
# for new topics at most this often
REGEX_MIN_REFRESH_MS = 10_000
MIGRATION_POLICIES = ("disabled", "upgrade", "downgrade", "bidirectional")


@dataclass(frozen=True)
class ConsumerGroupConfig:
    """The broker's group.consumer.* settings (Kafka's names and defaults)."""
    session_timeout_ms: int = 45000
    heartbeat_interval_ms: int = 5000
    max_size: int = 2**31 - 1
    assignors: tuple = ("uniform", "range")
    migration_policy: str = "bidirectional"
    regex_refresh_interval_ms: int = 600000
    classic_max_size: int = 2**31 - 1      # group.max.size, for a downgrade

    @classmethod
    def from_config(cls, get) -> "ConsumerGroupConfig":
        """From ``get(name) -> str | None`` (a broker config); ValueError naming the setting
        that is out of Kafka's bounds."""
        def num(name, default):
            v = get(name)
            try:
                return default if v in (None, "") else int(v)
            except ValueError:
                raise ValueError(f"{name} must be an integer, got {v!r}") from None

        session = num("group.consumer.session.timeout.ms", 45000)
        heartbeat = num("group.consumer.heartbeat.interval.ms", 5000)
        for name, value, lo_name, lo, hi_name, hi in (
                ("group.consumer.session.timeout.ms", session,
                 "group.consumer.min.session.timeout.ms",
                 num("group.consumer.min.session.timeout.ms", 45000),
                 "group.consumer.max.session.timeout.ms",
                 num("group.consumer.max.session.timeout.ms", 60000)),
                ("group.consumer.heartbeat.interval.ms", heartbeat,
                 "group.consumer.min.heartbeat.interval.ms",
                 num("group.consumer.min.heartbeat.interval.ms", 5000),
                 "group.consumer.max.heartbeat.interval.ms",
                 num("group.consumer.max.heartbeat.interval.ms", 15000))):
            if not lo <= value <= hi:
                raise ValueError(f"{name}={value} must be between {lo_name} ({lo}) and "
                                 f"{hi_name} ({hi})")
        if heartbeat >= session:
            raise ValueError(f"group.consumer.heartbeat.interval.ms ({heartbeat}) must be less "
                             f"than group.consumer.session.timeout.ms ({session})")
        policy = (get("group.consumer.migration.policy") or "bidirectional").strip().lower()
        if policy not in MIGRATION_POLICIES:
            raise ValueError(f"group.consumer.migration.policy must be one of "
                             f"{', '.join(MIGRATION_POLICIES)}, got {policy!r}")
        return cls(session, heartbeat, num("group.consumer.max.size", 2**31 - 1),
                   tuple(assignor_names(get("group.consumer.assignors") or "uniform,range")),
                   policy, num("group.consumer.regex.refresh.interval.ms", 600000),
                   num("group.max.size", 2**31 - 1))

    @property
    def upgrade_enabled(self) -> bool:
        return self.migration_policy in ("upgrade", "bidirectional")

    @property
    def downgrade_enabled(self) -> bool:
        return self.migration_policy in ("downgrade", "bidirectional")


@dataclass(frozen=True)
class Heartbeat:
    """A ConsumerGroupHeartbeat: None (-1 for the rebalance timeout) means unchanged since the
    member's previous heartbeat. ``owned``: {topic id: partitions} or None."""
    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    topic_names: list | None = None
    topic_regex: str | None = None
    server_assignor: str | None = None
    owned: dict | None = None
    client_id: str = ""
    client_host: str = ""
    version: int = 1


def new_member_id() -> str:
    """A member id as Kafka's Uuid.randomUuid().toString() spells it."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()


class _Plan:
    """The group as it will be once ``changes`` {member id: member or None} and ``resolved``
    {regex: ResolvedRegex or None} apply: what subscriptions and assignments are computed on."""

    def __init__(self, group: ConsumerGroup, changes: dict, resolved: dict | None = None):
        self.members = dict(group.members)
        for mid, m in changes.items():
            if m is None:
                self.members.pop(mid, None)
            else:
                self.members[mid] = m
        self.regexes = dict(group.regexes)
        for r, v in (resolved or {}).items():
            if v is None:
                self.regexes.pop(r, None)
            else:
                self.regexes[r] = v

    def topics_of(self, member) -> set[str]:
        topics = set(member.meta.topic_names)
        resolved = self.regexes.get(member.meta.topic_regex)
        if resolved is not None:
            topics |= resolved.topics
        return topics

    def subscribed(self) -> set[str]:
        return set().union(*(self.topics_of(m) for m in self.members.values()))

    def regexes_in_use(self) -> set[str]:
        return {m.meta.topic_regex for m in self.members.values() if m.meta.topic_regex}

    def preferred_assignor(self) -> str | None:
        counts: dict = {}
        for m in self.members.values():
            if m.meta.server_assignor:
                counts[m.meta.server_assignor] = counts.get(m.meta.server_assignor, 0) + 1
        return max(counts, key=lambda a: (counts[a], a)) if counts else None


class ConsumerGroups:
    """The consumer groups of ``catalog``: their protocol, records and timers."""

    def __init__(self, catalog: GroupCatalog, store, topics, config: ConsumerGroupConfig,
                 classic):
        self.catalog = catalog
        self.clock = catalog.clock
        self.store = store
        self.topics = topics        # coordinator.group.seams.TopicsView
        self.config = config
        self.classic = classic      # the classic protocol's Membership, for conversions
        self._locks = KeyedLocks()

    # ================================================================== ConsumerGroupHeartbeat
    async def heartbeat(self, hb: Heartbeat, may_describe=None) -> ConsumerHeartbeatResult:
        """ConsumerGroupHeartbeat. ``may_describe(topic)`` says which topics a regular
        expression of this member may resolve to (the principal's Describe permission)."""
        try:
            self._check_request(hb)
        except ApiError as e:
            return ConsumerHeartbeatResult(e.code, e.message)
        err = self.catalog.validate(hb.group_id, "ConsumerGroupHeartbeat")
        if err is not None:
            return ConsumerHeartbeatResult(err)
        async with self._locks.hold(hb.group_id):
            err = self.catalog.validate(hb.group_id, "ConsumerGroupHeartbeat")
            if err is not None:
                return ConsumerHeartbeatResult(err)
            now = self.catalog.now()
            try:
                if hb.member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
                    change = self._plan_leave(hb, now)
                else:
                    change = self._plan_heartbeat(hb, now, may_describe)
            except ApiError as e:
                return ConsumerHeartbeatResult(e.code, e.message)
            err = await change.commit(self, now)
            if err:
                return ConsumerHeartbeatResult(err)
            return change.response

    def _check_request(self, hb: Heartbeat) -> None:
        """Kafka's checks of a ConsumerGroupHeartbeat before it reaches a group."""
        def empty(v):
            return v is not None and not v.strip()

        if hb.version >= 1 or hb.member_epoch > 0 or hb.member_epoch == LEAVE_EPOCH:
            if not hb.member_id.strip():
                raise ApiError(errors.INVALID_REQUEST, "MemberId can't be empty.")
        if not hb.group_id.strip():
            raise ApiError(errors.INVALID_REQUEST, "GroupId can't be empty.")
        if empty(hb.instance_id):
            raise ApiError(errors.INVALID_REQUEST, "InstanceId can't be empty.")
        if empty(hb.rack_id):
            raise ApiError(errors.INVALID_REQUEST, "RackId can't be empty.")
        if hb.member_epoch == JOIN_EPOCH:
            if hb.rebalance_timeout_ms == -1:
                raise ApiError(errors.INVALID_REQUEST,
                               "RebalanceTimeoutMs must be provided in first request.")
            if hb.owned is None or any(hb.owned.values()):
                raise ApiError(errors.INVALID_REQUEST,
                               "TopicPartitions must be empty when (re-)joining.")
            if hb.topic_names is None and hb.topic_regex is None:
                raise ApiError(errors.INVALID_REQUEST, "Either SubscribedTopicNames or "
                               "SubscribedTopicRegex must be non-null when (re-)joining.")
        elif hb.member_epoch == STATIC_LEAVE_EPOCH:
            if hb.instance_id is None:
                raise ApiError(errors.INVALID_REQUEST, "InstanceId can't be null.")
        elif hb.member_epoch < STATIC_LEAVE_EPOCH:
            raise ApiError(errors.INVALID_REQUEST, "MemberEpoch is invalid.")
        if hb.server_assignor is not None and hb.server_assignor not in self.config.assignors:
            raise ApiError(errors.UNSUPPORTED_ASSIGNOR,
                           f"ServerAssignor {hb.server_assignor} is not supported. Supported "
                           f"assignors: {', '.join(self.config.assignors)}.")

    def _plan_heartbeat(self, hb: Heartbeat, now: int, may_describe) -> "_Change":
        joining = hb.member_epoch == JOIN_EPOCH
        group, change = self._group_for_heartbeat(hb.group_id, joining, now)
        member_id = hb.member_id or new_member_id()
        self._check_size(group, member_id)
        if hb.instance_id is None:
            member = group.members.get(member_id)
            if member is None:
                if not joining:
                    raise ApiError(errors.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a "
                                   f"member of group {group.group_id}.")
                member = ConsumerGroupMember(member_id)
                log.info("member %s joins consumer group %s", member_id, group.group_id)
            _check_epoch(member, hb.member_epoch, hb.owned)
            replaced = None
        else:
            member, replaced = self._static_member(group, member_id, hb.instance_id, joining,
                                                   change, classic=False)
            if not joining:
                _check_epoch(member, hb.member_epoch, hb.owned)
        meta = member.meta
        new_meta = replace(
            meta,
            instance_id=_given(hb.instance_id, meta.instance_id),
            rack_id=_given(hb.rack_id, meta.rack_id),
            rebalance_timeout_ms=(hb.rebalance_timeout_ms if hb.rebalance_timeout_ms != -1
                                  else meta.rebalance_timeout_ms),
            server_assignor=_given(hb.server_assignor, meta.server_assignor),
            topic_names=(tuple(sorted(set(hb.topic_names))) if hb.topic_names is not None
                         else meta.topic_names),
            topic_regex=_given(hb.topic_regex, meta.topic_regex),
            client_id=hb.client_id, client_host=hb.client_host, classic=None)
        updated = self._update_member(group, member, new_meta, replaced, hb.owned, change, now,
                                      may_describe)
        change.after(lambda g: self._schedule_session(g, member_id,
                                                      self.config.session_timeout_ms))
        # the assignment goes back on a full request (joining, or after an error) and when
        # it changed
        full = joining or (hb.rebalance_timeout_ms != -1 and hb.owned is not None and
                           (hb.topic_names is not None or hb.topic_regex is not None))
        assigned = updated.current.assigned
        change.response = ConsumerHeartbeatResult(
            errors.NONE, member_id=member_id, member_epoch=updated.epoch,
            heartbeat_interval_ms=self.config.heartbeat_interval_ms,
            assignment=assigned if full or assigned != member.current.assigned else None)
        return change

    def _update_member(self, group, member, new_meta, replaced, owned, change, now,
                       may_describe=None) -> ConsumerGroupMember:
        """Kafka's three steps for a member that joined or heartbeated (either protocol):
        its subscription (a new one bumps the group epoch), the target assignment when the
        group epoch moved past it, and the member's reconciliation towards its target. Adds
        the records to ``change``; returns the member as it will be."""
        gid, member_id = group.group_id, member.member_id
        updated = replace(member, meta=new_meta)
        changes = {member_id: updated}
        if replaced is not None:
            changes[replaced] = None
        bump = False
        if new_meta != member.meta:
            change.add(Record(MEMBER_METADATA, gid, member_id, new_meta))
            bump = (new_meta.topic_names != member.meta.topic_names
                    or (new_meta.topic_regex or None) != (member.meta.topic_regex or None))
        resolved = self._resolve_regexes(group, changes, now, may_describe, change)
        bump = bump or any(v is not None for v in resolved.values())
        plan = _Plan(group, changes, resolved)
        metadata = self._subscription_metadata(plan)
        if metadata != group.subscription_metadata:
            change.add(Record(SUBSCRIPTION_METADATA, gid, None, metadata))
            bump = True
        epoch = group.group_epoch + 1 if bump else group.group_epoch
        if bump:
            change.add(Record(GROUP_EPOCH, gid, None, epoch))
            log.info("consumer group %s: group epoch %d", gid, epoch)
        own_target = group.targets.get(replaced or member_id, {})
        if epoch > group.assignment_epoch:
            targets = self._assign(group, plan, epoch, metadata, change,
                                   {member_id: own_target})
            target_epoch, target = epoch, targets.get(member_id, {})
        else:
            target_epoch, target = group.assignment_epoch, own_target
        current = updated.current
        if not updated.is_reconciled_to(target_epoch):
            current = reconcile(current, target_epoch, target, group.partition_epoch, owned)
        if current != updated.current:
            change.add(Record(CURRENT_ASSIGNMENT, gid, member_id, current))
            if not new_meta.classic:
                if current.state == UNREVOKED_PARTITIONS:
                    timeout = new_meta.rebalance_timeout_ms
                    change.after(lambda g: self._schedule_rebalance(g, member_id, current.epoch,
                                                                    timeout))
                else:
                    change.after(lambda g: self._cancel(g, "rebalance", member_id))
        return replace(updated, current=current)

    def _group_for_heartbeat(self, group_id: str, create: bool, now: int):
        """The consumer group a heartbeat (or a join) is for, and the change that starts with
        whatever making it takes: a new group, an empty classic group replaced (always
        allowed), or a classic group converted (``group.consumer.migration.policy``)."""
        existing = self.catalog.groups.get(group_id)
        if isinstance(existing, ConsumerGroup) and existing.state != DEAD:
            return existing, _Change(group_id)
        if existing is None or existing.is_state(DEAD):
            if not create:
                raise ApiError(errors.GROUP_ID_NOT_FOUND, f"Consumer group {group_id} not found.")
            return ConsumerGroup(group_id, now), _Change(group_id, fresh=True)
        if create and existing.is_state(CLASSIC_EMPTY):
            log.info("the empty classic group %s becomes a consumer group", group_id)
            change = _Change(group_id, fresh=True, replaces=existing)
            change.raw.append((group_metadata_key(group_id), None))
            return ConsumerGroup(group_id, now), change
        if create:
            return self._upgrade(existing, now)
        raise ApiError(errors.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")

    def _check_size(self, group, member_id):
        if group.size >= self.config.max_size and member_id not in group.members:
            raise ApiError(errors.GROUP_MAX_SIZE_REACHED, f"The consumer group has reached its "
                           f"maximum capacity of {self.config.max_size} members.")

    def _static_member(self, group, member_id, instance_id, joining, change, classic):
        """(member, id of the static member it replaces or None) for ``instance_id``. A new
        instance takes over the previous one's partitions and target; a consumer-protocol
        member may only replace one that left with epoch -2 (UNRELEASED_INSTANCE_ID)."""
        existing = group.static_member(instance_id)
        if not joining:
            if existing is None:
                raise ApiError(errors.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
            if existing.member_id != member_id:
                raise ApiError(errors.FENCED_INSTANCE_ID, f"Static member {member_id} with "
                               f"instance id {instance_id} was fenced by member "
                               f"{existing.member_id}.")
            return existing, None
        if existing is None:
            log.info("static member %s (instance %s) joins consumer group %s", member_id,
                     instance_id, group.group_id)
            return group.members.get(member_id) or ConsumerGroupMember(member_id), None
        if not classic and not existing.uses_classic_protocol and \
                existing.epoch != STATIC_LEAVE_EPOCH:
            raise ApiError(errors.UNRELEASED_INSTANCE_ID, f"Static member {member_id} with "
                           f"instance id {instance_id} cannot join the group because the "
                           f"instance id is owned by {existing.member_id} member.")
        back = replace(existing.current, epoch=0, previous_epoch=0)
        if existing.member_id == member_id:   # the same member, back after leaving with -2
            return replace(existing, current=back), None
        copy = ConsumerGroupMember(member_id, existing.meta, back)
        gid = group.group_id
        for r in consumer_records.member_tombstones(gid, existing.member_id):
            change.add(r)
        change.add(Record(MEMBER_METADATA, gid, member_id, copy.meta))
        change.add(Record(TARGET_MEMBER, gid, member_id,
                          group.targets.get(existing.member_id, {})))
        change.add(Record(CURRENT_ASSIGNMENT, gid, member_id, copy.current))
        old_id = existing.member_id
        change.after(lambda g: self._cancel_member_timers(g, old_id))
        log.info("static member %s replaces %s (instance %s) in consumer group %s", member_id,
                 old_id, instance_id, gid)
        return copy, old_id

    # ------------------------------------------------------------------ leaving and fencing
    def _plan_leave(self, hb: Heartbeat, now: int) -> "_Change":
        group = self._existing(hb.group_id)
        change = _Change(hb.group_id)
        change.response = ConsumerHeartbeatResult(errors.NONE, member_id=hb.member_id,
                                                  member_epoch=hb.member_epoch)
        if hb.instance_id is None:
            member = group.members.get(hb.member_id)
            if member is None:
                raise ApiError(errors.UNKNOWN_MEMBER_ID, f"Member {hb.member_id} is not a "
                               f"member of group {group.group_id}.")
            log.info("member %s left consumer group %s", member.member_id, group.group_id)
            return self._fence(group, member, change, now)
        member = group.static_member(hb.instance_id)
        if member is None:
            raise ApiError(errors.UNKNOWN_MEMBER_ID, f"Instance id {hb.instance_id} is unknown.")
        if member.member_id != hb.member_id:
            raise ApiError(errors.FENCED_INSTANCE_ID, f"Static member {hb.member_id} with "
                           f"instance id {hb.instance_id} was fenced by member "
                           f"{member.member_id}.")
        if hb.member_epoch == STATIC_LEAVE_EPOCH:
            # it will be back: it keeps its partitions (nobody else gets them) until its
            # session expires
            log.info("static member %s (instance %s) left consumer group %s for a while",
                     member.member_id, hb.instance_id, group.group_id)
            change.add(Record(CURRENT_ASSIGNMENT, group.group_id, member.member_id,
                              replace(member.current, epoch=STATIC_LEAVE_EPOCH, revoking={})))
            return change
        log.info("static member %s (instance %s) left consumer group %s", member.member_id,
                 hb.instance_id, group.group_id)
        return self._fence(group, member, change, now)

    def _existing(self, group_id: str) -> ConsumerGroup:
        group = self.catalog.groups.get(group_id)
        if group is None or group.is_state(DEAD):
            raise ApiError(errors.GROUP_ID_NOT_FOUND, f"Consumer group {group_id} not found.")
        if not isinstance(group, ConsumerGroup):
            raise ApiError(errors.GROUP_ID_NOT_FOUND,
                           f"Group {group_id} is not a consumer group.")
        return group

    def _fence(self, group, member, change, now) -> "_Change":
        """Remove ``member`` (it left, its session or rebalance timeout expired): its records
        go, the subscription is recomputed and the group epoch bumped, so the next heartbeat
        of any member reassigns its partitions. When it was the last member using the consumer
        protocol among classic ones, the group goes back to the classic protocol instead
        (``group.consumer.migration.policy``)."""
        if self._may_downgrade(group, member.member_id):
            return self._downgrade(group, member.member_id, change, now)
        gid = group.group_id
        for r in consumer_records.member_tombstones(gid, member.member_id):
            change.add(r)
        changes = {member.member_id: None}
        plan = _Plan(group, changes)
        regex = member.meta.topic_regex
        resolved = {}
        if regex and regex in group.regexes and regex not in plan.regexes_in_use():
            resolved[regex] = None
            change.add(Record(REGULAR_EXPRESSION, gid, regex, None))
            plan = _Plan(group, changes, resolved)
        metadata = self._subscription_metadata(plan)
        if metadata != group.subscription_metadata:
            change.add(Record(SUBSCRIPTION_METADATA, gid, None, metadata))
        change.add(Record(GROUP_EPOCH, gid, None, group.group_epoch + 1))
        mid = member.member_id
        change.after(lambda g: self._cancel_member_timers(g, mid))
        return change

    async def _fence_later(self, timed: ConsumerGroup, key: tuple, reason: str, epoch=None):
        """The timer ``key`` (kind, member id) of group ``timed`` expired: fence the member
        unless it changed meanwhile (``epoch``: the member epoch the timer was armed for) or a
        request that ran first armed that timer anew (its session goes on)."""
        group_id, member_id = timed.group_id, key[1]
        async with self._locks.hold(group_id):
            group = self.catalog.groups.get(group_id)
            if group is not timed or key in group.timers or group.is_state(DEAD):
                return
            member = group.members.get(member_id)
            if member is None or (epoch is not None and member.epoch != epoch):
                return
            if self.catalog.validate(group_id, "ConsumerGroupHeartbeat") is not None:
                return   # no longer (or not surely) this coordinator's group
            log.info("member %s fenced from consumer group %s because %s", member_id, group_id,
                     reason)
            now = self.catalog.now()
            err = await self._fence(group, member, _Change(group_id), now).commit(self, now)
            if err:
                log.warning("fencing member %s of consumer group %s failed: %s", member_id,
                            group_id, errors.name(err))

    # ------------------------------------------------------------------ subscriptions
    def _subscription_metadata(self, plan: _Plan) -> dict:
        out = {}
        for name in plan.subscribed():
            found = self.topics.get(name)
            if found is not None:
                out[name] = TopicMetadata(found[0], name, found[1])
        return out

    def _resolve_regexes(self, group, changes, now, may_describe, change) -> dict:
        """The regular expressions whose resolution changes with this heartbeat: a new one is
        checked (INVALID_REGULAR_EXPRESSION) and resolved at once; all of the group's are
        resolved again when topics were created or deleted (at most every 10 s) or
        ``group.consumer.regex.refresh.interval.ms`` passed; one nobody uses any more goes.
        Returns {regex: ResolvedRegex or None} and adds the records to ``change``."""
        plan = _Plan(group, changes)
        in_use = plan.regexes_in_use()
        out: dict = {r: None for r in group.regexes if r not in in_use}
        if in_use:
            since = now - group.regex_refresh_ms
            due = (group.regex_refresh_ms < 0
                   or since >= self.config.regex_refresh_interval_ms
                   or (since >= REGEX_MIN_REFRESH_MS and self.topics.version != group.regex_version))
            todo = in_use if due else {r for r in in_use if r not in group.regexes}
            version = self.topics.version
            for regex in sorted(todo):
                topics = self._match(regex, may_describe)
                old = group.regexes.get(regex)
                if old is None or old.topics != topics:
                    out[regex] = ResolvedRegex(topics, version, now)
            if due:
                change.after(lambda g: _refreshed(g, now, version))
        for regex, resolved in out.items():
            change.add(Record(REGULAR_EXPRESSION, group.group_id, regex, resolved))
        return out

    def _match(self, regex: str, may_describe) -> frozenset:
        try:
            pattern = re2.compile(regex)
        except re2.error as e:
            raise ApiError(errors.INVALID_REGULAR_EXPRESSION, f"SubscribedTopicRegex `{regex}` "
                           f"is not a valid regular expression: {e}.") from None
        return frozenset(t for t in self.topics.names() if pattern.fullmatch(t)
                         and (may_describe is None or may_describe(t)))

    # ------------------------------------------------------------------ target assignment
    def _assign(self, group, plan: _Plan, epoch, metadata, change, prior) -> dict:
        """Kafka's TargetAssignmentBuilder: the assignor's target for every member at
        ``epoch``, written for the members whose target changed (``prior``: {member id:
        target} for members whose current target is not under their own id)."""
        name = plan.preferred_assignor() or self.config.assignors[0]
        ids = {n: m.topic_id for n, m in metadata.items()}
        partitions = {m.topic_id: m.num_partitions for m in metadata.values()}
        specs = {mid: MemberSpec(m.instance_id,
                                 frozenset(ids[t] for t in plan.topics_of(m) if t in ids),
                                 prior.get(mid, group.targets.get(mid, {})))
                 for mid, m in plan.members.items()}
        targets = ASSIGNORS[name](specs, partitions)
        gid = group.group_id
        for mid, target in targets.items():
            if target != group.targets.get(mid):
                change.add(Record(TARGET_MEMBER, gid, mid, target))
        change.add(Record(TARGET_EPOCH, gid, None, epoch))
        log.info("consumer group %s: target assignment for epoch %d with the %s assignor",
                 gid, epoch, name)
        return targets

    # ================================================================== classic members
    async def classic_join(self, group_id, member_id, instance_id, client_id, client_host,
                           session_timeout_ms, rebalance_timeout_ms, protocol_type, protocols,
                           require_known_member_id) -> JoinResult:
        """JoinGroup to a consumer group with members: the member joins it with the classic
        protocol (its subscription and owned partitions from its ``consumer`` protocol
        metadata); its assignment reaches it in SyncGroup."""
        async with self._locks.hold(group_id):
            err = self.catalog.validate(group_id, "JoinGroup")
            if err is not None:
                return JoinResult.error_result(member_id, err)
            group = self.catalog.groups.get(group_id)
            if not isinstance(group, ConsumerGroup) or not group.members:
                # converted meanwhile: the member joins again and finds the group as it is
                return JoinResult.error_result(member_id, errors.REBALANCE_IN_PROGRESS)
            now = self.catalog.now()
            unknown = not member_id
            member_id = member_id or new_member_id()
            protocols = [(n, bytes(m or b"")) for n, m in protocols]
            try:
                self._check_size(group, member_id)
                if not group.supports_classic_protocols(protocol_type, {n for n, _ in protocols}):
                    raise ApiError(errors.INCONSISTENT_GROUP_PROTOCOL)
                if unknown and require_known_member_id and instance_id is None:
                    # KIP-394: the member comes back with this id
                    return JoinResult.error_result(member_id, errors.MEMBER_ID_REQUIRED)
                change = _Change(group_id)
                if instance_id is None:
                    member = group.members.get(member_id) or ConsumerGroupMember(member_id)
                    replaced = None
                else:
                    member, replaced = self._static_member(group, member_id, instance_id,
                                                           unknown, change, classic=True)
                sub = _subscription(protocols)
                owned = self._ids({tp.topic: tp.partitions for tp in sub.owned_partitions})
                meta = member.meta
                new_meta = replace(
                    meta, instance_id=_given(instance_id, meta.instance_id),
                    rack_id=_given(sub.rack_id, meta.rack_id),
                    rebalance_timeout_ms=(rebalance_timeout_ms if rebalance_timeout_ms != -1
                                          else meta.rebalance_timeout_ms),
                    topic_names=tuple(sorted(set(sub.topics))), client_id=client_id,
                    client_host=client_host,
                    classic=ClassicMetadata(session_timeout_ms, tuple(protocols)))
                updated = self._update_member(group, member, new_meta, replaced, owned, change,
                                              now)
                if replaced is not None and self._may_downgrade(group, replaced,
                                                                replacing=True):
                    change = self._downgrade(group, replaced, change, now, joining=updated)
            except ApiError as e:
                return JoinResult.error_result(member_id, e.code)
            if not change.downgrade:
                change.after(lambda g: (
                    self._cancel(g, "join", member_id),
                    self._schedule_session(g, member_id, session_timeout_ms),
                    self._schedule_timer(g, "sync", member_id, rebalance_timeout_ms,
                                         "the member failed to sync within timeout")))
            err = await change.commit(self, now)
            if err:
                return JoinResult.error_result(member_id, err)
            return JoinResult(errors.NONE, updated.epoch, CONSUMER_PROTOCOL_TYPE,
                              protocols[0][0], "", member_id, [])

    def classic_sync(self, group, member_id, instance_id, generation_id, protocol_type,
                     protocol_name) -> SyncResult:
        """SyncGroup of a classic member of a consumer group: its current assignment."""
        try:
            member = self._classic_member(group, member_id, instance_id, generation_id)
            name = member.meta.classic.protocols[0][0]
            if protocol_type is not None and protocol_type != CONSUMER_PROTOCOL_TYPE or \
                    protocol_name is not None and protocol_name != name:
                raise ApiError(errors.INCONSISTENT_GROUP_PROTOCOL)
            self._rebalance_needed(group, member, unreleased_too=False)
        except ApiError as e:
            return SyncResult.error_result(e.code)
        self._cancel(group, "sync", member.member_id)
        self._schedule_session(group, member.member_id, member.meta.classic.session_timeout_ms)
        return SyncResult(errors.NONE, CONSUMER_PROTOCOL_TYPE, name,
                          self._assignment_bytes(member, member.current.assigned))

    def classic_heartbeat(self, group, member_id, instance_id, generation_id) -> int:
        """Heartbeat of a classic member of a consumer group: REBALANCE_IN_PROGRESS when it
        must JoinGroup again (the group epoch moved, it must revoke partitions, or partitions
        it waited for were released)."""
        try:
            member = self._classic_member(group, member_id, instance_id, generation_id)
            self._schedule_session(group, member.member_id,
                                   member.meta.classic.session_timeout_ms)
            self._rebalance_needed(group, member, unreleased_too=True)
        except ApiError as e:
            return e.code
        return errors.NONE

    def _classic_member(self, group, member_id, instance_id, generation_id):
        if instance_id is None:
            member = group.members.get(member_id)
            if member is None:
                raise ApiError(errors.UNKNOWN_MEMBER_ID)
        else:
            member = group.static_member(instance_id)
            if member is None:
                raise ApiError(errors.UNKNOWN_MEMBER_ID)
            if member.member_id != member_id:
                raise ApiError(errors.FENCED_INSTANCE_ID)
        if not member.uses_classic_protocol:
            raise ApiError(errors.UNKNOWN_MEMBER_ID)
        if generation_id != member.epoch:
            raise ApiError(errors.ILLEGAL_GENERATION)
        return member

    def _rebalance_needed(self, group, member, unreleased_too: bool) -> None:
        """REBALANCE_IN_PROGRESS (and a join timer) when a classic member must JoinGroup again:
        the group epoch moved past it (unless it is still revoking partitions, which its next
        JoinGroup tells); for a Heartbeat also when it must revoke partitions, or when the
        partitions it waited for were released."""
        state = member.current.state
        if unreleased_too:
            rejoin = (member.epoch < group.group_epoch or state == UNREVOKED_PARTITIONS
                      or (state == UNRELEASED_PARTITIONS
                          and not group.waiting_on_unreleased(member)))
        else:
            rejoin = member.epoch < group.group_epoch and state != UNREVOKED_PARTITIONS
        if rejoin:
            self._schedule_timer(group, "join", member.member_id,
                                 member.meta.rebalance_timeout_ms,
                                 "the classic member failed to join within the rebalance "
                                 "timeout", only_if_absent=True)
            raise ApiError(errors.REBALANCE_IN_PROGRESS)

    async def classic_leave(self, group_id, members) -> tuple[int, list]:
        """LeaveGroup of classic members of a consumer group."""
        async with self._locks.hold(group_id):
            err = self.catalog.validate(group_id, "LeaveGroup")
            if err is not None:
                return err, []
            group = self.catalog.groups.get(group_id)
            if not isinstance(group, ConsumerGroup):
                return errors.COORDINATOR_NOT_AVAILABLE, []
            now = self.catalog.now()
            change = _Change(group_id)
            results, leaving = [], {}
            for member_id, instance_id, reason in members:
                member = (group.members.get(member_id) if instance_id is None
                          else group.static_member(instance_id))
                if member is None or (instance_id is not None and member_id
                                      and member.member_id != member_id):
                    code = errors.UNKNOWN_MEMBER_ID if member is None else \
                        errors.FENCED_INSTANCE_ID
                elif not member.uses_classic_protocol:
                    code = errors.UNKNOWN_MEMBER_ID
                else:
                    code = errors.NONE
                    leaving[member.member_id] = None
                    member_id = member.member_id
                    log.info("member %s left consumer group %s through LeaveGroup; reason: %s",
                             member_id, group_id, reason or "not provided")
                    for r in consumer_records.member_tombstones(group_id, member_id):
                        change.add(r)
                    change.after(lambda g, m=member_id: self._cancel_member_timers(g, m))
                results.append(LeaveMemberResult(member_id, instance_id, code))
            if leaving:
                metadata = self._subscription_metadata(_Plan(group, leaving))
                if metadata != group.subscription_metadata:
                    change.add(Record(SUBSCRIPTION_METADATA, group_id, None, metadata))
                change.add(Record(GROUP_EPOCH, group_id, None, group.group_epoch + 1))
                err = await change.commit(self, now)
                if err:
                    return err, []
            return errors.NONE, results

    def _assignment_bytes(self, member, partitions: dict) -> bytes:
        """A ConsumerProtocolAssignment of ``partitions``, in the version of the member's
        subscription metadata (as Kafka serializes it for classic members)."""
        metadata = member.meta.classic.protocols[0][1]
        version = min(max(int.from_bytes(metadata[:2], "big", signed=True), 0),
                      ASSIGNMENT.versions.hi)
        by_name = []
        for t, ps in sorted(partitions.items(), key=lambda kv: str(kv[0])):
            name = self.topics.name_of(t)
            if name is not None:
                by_name.append(ASSIGNMENT.Struct.TopicPartition(topic=name,
                                                                partitions=sorted(ps)))
        return ASSIGNMENT.to_bytes(version, assigned_partitions=by_name)

    def _ids(self, by_name: dict) -> dict:
        """{topic id: partitions} of {topic name: partitions} (unknown topics left out)."""
        out = {}
        for name, ps in by_name.items():
            found = self.topics.get(name)
            if found is not None and ps:
                out[found[0]] = frozenset(ps)
        return out

    # ================================================================== migration
    def _upgrade(self, classic: GroupMetadata, now: int):
        """A classic group with members becomes a consumer group when a member joins with
        the consumer protocol: its members stay, as classic members, each with the
        partitions of its last assignment (Kafka's online upgrade)."""
        gid = classic.group_id
        if not self.config.upgrade_enabled:
            log.info("cannot upgrade classic group %s: group.consumer.migration.policy is %s",
                     gid, self.config.migration_policy)
            raise ApiError(errors.GROUP_ID_NOT_FOUND, f"Group {gid} is not a consumer group.")
        if not classic.is_consumer_group or classic.size > self.config.max_size:
            raise ApiError(errors.GROUP_ID_NOT_FOUND, f"Group {gid} is not a consumer group.")
        group = ConsumerGroup(gid, now)
        epoch = classic.generation_id
        try:
            for m in classic.members.values():
                # a group still forming has no protocol yet: every protocol carries the same
                sub = SUBSCRIPTION.from_bytes(m.metadata(classic.protocol_name)
                                              if classic.protocol_name
                                              else m.supported_protocols[0][1])
                got = ASSIGNMENT.from_bytes(m.assignment) if m.assignment else None
                assigned = self._ids({tp.topic: tp.partitions
                                      for tp in (got.assigned_partitions if got else [])})
                meta = MemberMetadata(m.group_instance_id, sub.rack_id, m.client_id,
                                      m.client_host, tuple(sorted(set(sub.topics))), None,
                                      m.rebalance_timeout_ms, None,
                                      ClassicMetadata(m.session_timeout_ms,
                                                      tuple(m.supported_protocols)))
                group.apply(Record(MEMBER_METADATA, gid, m.member_id, meta), now)
                group.apply(Record(TARGET_MEMBER, gid, m.member_id, assigned), now)
                group.apply(Record(CURRENT_ASSIGNMENT, gid, m.member_id,
                                   MemberAssignment(epoch, epoch, 0, assigned, {})), now)
        except (ValueError, AttributeError) as e:
            log.warning("cannot upgrade classic group %s: its consumer protocol metadata does "
                        "not parse: %s", gid, e)
            raise ApiError(errors.GROUP_ID_NOT_FOUND, f"Cannot upgrade the classic group {gid} "
                           "to consumer group because the embedded consumer protocol is "
                           "malformed.") from None
        group.apply(Record(GROUP_EPOCH, gid, None, epoch), now)
        group.apply(Record(TARGET_EPOCH, gid, None, epoch), now)
        log.info("classic group %s (generation %d, %d members) becomes a consumer group", gid,
                 epoch, group.size)
        change = _Change(gid, fresh=True, replaces=classic)
        change.raw.append((group_metadata_key(gid), None))
        for r in consumer_records.group_records(group):
            change.add(r)
        sessions = {m.member_id: m.session_timeout_ms for m in classic.members.values()}
        change.after(lambda g: [self._schedule_session(g, mid, ms)
                                for mid, ms in sessions.items()])
        return group, change

    def _may_downgrade(self, group, member_id, replacing=False) -> bool:
        """Kafka's online downgrade: the last member using the consumer protocol goes (or a
        classic member replaces it) and the others use the classic protocol."""
        if not group.all_classic_except(member_id):
            return False
        remaining = group.size if replacing else group.size - 1
        if remaining < 1:
            return False  # the group empties: it simply stays a consumer group
        if not self.config.downgrade_enabled:
            log.info("cannot downgrade consumer group %s: group.consumer.migration.policy is %s",
                     group.group_id, self.config.migration_policy)
            return False
        return remaining <= self.config.classic_max_size

    def _downgrade(self, group, leaving_id, change, now, joining=None) -> "_Change":
        """The consumer group becomes a classic group of its classic members, each with its
        target assignment; when a member left, the classic group rebalances at once."""
        gid = group.group_id
        classic = GroupMetadata(gid, CLASSIC_STABLE, now)
        classic.generation_id = group.group_epoch
        classic.protocol_type = CONSUMER_PROTOCOL_TYPE
        assignments = {}
        members = [m for mid, m in group.members.items() if mid != leaving_id]
        if joining is not None:
            members.append(joining)
        for m in members:
            target = group.targets.get(leaving_id if m is joining else m.member_id, {})
            c = m.meta.classic
            classic.add(ClassicMember(m.member_id, m.instance_id, m.meta.client_id,
                                      m.meta.client_host, m.meta.rebalance_timeout_ms,
                                      c.session_timeout_ms, CONSUMER_PROTOCOL_TYPE,
                                      list(c.protocols)))
            assignments[m.member_id] = self._assignment_bytes(m, target)
        classic.protocol_name = classic.select_protocol()
        classic.subscribed_topics = classic.compute_subscribed_topics()
        for mid, a in assignments.items():
            classic.members[mid].assignment = a
        down = _Change(gid, downgrade=classic, rebalance=joining is None)
        down.response = change.response
        tombstones = consumer_records.group_tombstones(group)
        if joining is not None:   # the joining member's records are removed under its new id
            tombstones = [r._replace(key=joining.member_id) if r.key == leaving_id else r
                          for r in tombstones]
        for r in tombstones:
            down.add(r)
        down.raw.append((group_metadata_key(gid), group_metadata_value(
            group_record(classic, assignments))))
        log.info("consumer group %s goes back to the classic protocol (%d classic members)",
                 gid, classic.size)
        return down

    async def replace_with_classic(self, group_id: str) -> int:
        """JoinGroup to an empty consumer group: it is removed, so that a classic group of the
        same id can be made (always allowed, as in Kafka). The offsets stay."""
        async with self._locks.hold(group_id):
            group = self.catalog.groups.get(group_id)
            if not isinstance(group, ConsumerGroup) or group.members:
                return errors.NONE
            log.info("the empty consumer group %s becomes a classic group", group_id)
            now = self.catalog.now()
            classic = GroupMetadata(group_id, CLASSIC_EMPTY, now)
            change = _Change(group_id, downgrade=classic, rebalance=False)
            for r in consumer_records.group_tombstones(group):
                change.add(r)
            return await change.commit(self, now)

    # ================================================================== admin
    def describe(self, group_ids) -> list[ConsumerGroupDescription]:
        out = []
        for gid in group_ids:
            err = self.catalog.validate(gid, "ConsumerGroupDescribe")
            if err is not None:
                out.append(ConsumerGroupDescription(gid, err))
                continue
            group = self.catalog.groups.get(gid)
            if group is None or group.is_state(DEAD):
                out.append(ConsumerGroupDescription(gid, errors.GROUP_ID_NOT_FOUND,
                                                    f"Group {gid} not found."))
            elif not isinstance(group, ConsumerGroup):
                out.append(ConsumerGroupDescription(gid, errors.GROUP_ID_NOT_FOUND,
                                                    f"Group {gid} is not a consumer group."))
            else:
                out.append(self.description(group))
        return out

    def description(self, group: ConsumerGroup) -> ConsumerGroupDescription:
        members = [ConsumerMemberDescription(
            m.member_id, m.instance_id, m.meta.rack_id, m.epoch, m.meta.client_id,
            m.meta.client_host, list(m.meta.topic_names), m.meta.topic_regex,
            self._named(m.current.assigned), self._named(group.targets.get(m.member_id, {})),
            m.uses_classic_protocol) for m in group.members.values()]
        return ConsumerGroupDescription(
            group.group_id, errors.NONE, None, group.state, group.group_epoch,
            group.assignment_epoch, group.preferred_assignor() or self.config.assignors[0],
            members)

    def _named(self, partitions: dict) -> list:
        """[(topic id, topic name, sorted partitions)] of {topic id: partitions}."""
        return [(t, self.topics.name_of(t) or "", sorted(ps))
                for t, ps in sorted(partitions.items(), key=lambda kv: str(kv[0]))]

    def as_classic(self, group: ConsumerGroup) -> tuple[str, list]:
        """(protocol, [(member, subscription bytes, assignment bytes)]) of a consumer group
        seen through DescribeGroups: ConsumerProtocolSubscription and ...Assignment of each
        member (its topics, its current assignment)."""
        out = []
        for m in group.members.values():
            assigned = m.current.assigned
            owned = [SUBSCRIPTION.Struct.TopicPartition(topic=name, partitions=ps)
                     for _, name, ps in self._named(assigned) if name]
            sub = SUBSCRIPTION.to_bytes(3, topics=sorted(group.member_topics(m)),
                                        owned_partitions=owned, generation_id=m.epoch,
                                        rack_id=m.meta.rack_id)
            out.append((m, sub, ASSIGNMENT.to_bytes(0, assigned_partitions=[
                ASSIGNMENT.Struct.TopicPartition(topic=name, partitions=ps)
                for _, name, ps in self._named(assigned) if name])))
        return group.preferred_assignor() or self.config.assignors[0], out

    # ================================================================== life cycle
    def resume(self, group: ConsumerGroup) -> None:
        """A group just loaded from the log: every member gets a fresh session (those still
        alive heartbeat to this coordinator), members revoking partitions a fresh rebalance
        timeout, and regular expressions are resolved again at the next heartbeat."""
        for mid, m in group.members.items():
            if m.uses_classic_protocol:
                self._schedule_session(group, mid, m.meta.classic.session_timeout_ms)
            else:
                self._schedule_session(group, mid, self.config.session_timeout_ms)
                if m.current.state == UNREVOKED_PARTITIONS:
                    self._schedule_rebalance(group, mid, m.epoch, m.meta.rebalance_timeout_ms)

    def cancel_timers(self, group: ConsumerGroup) -> None:
        for t in group.timers.values():
            t.cancel()
        group.timers.clear()

    def _cancel_member_timers(self, group, member_id):
        for kind in ("session", "rebalance", "join", "sync"):
            self._cancel(group, kind, member_id)

    @staticmethod
    def _cancel(group, kind, member_id):
        t = group.timers.pop((kind, member_id), None)
        if t is not None:
            t.cancel()

    def _schedule_session(self, group, member_id, timeout_ms):
        self._schedule_timer(group, "session", member_id, timeout_ms,
                             "the member session expired")

    def _schedule_rebalance(self, group, member_id, epoch, timeout_ms):
        self._schedule_timer(group, "rebalance", member_id, timeout_ms,
                             f"it failed to transition from epoch {epoch} within "
                             f"{timeout_ms}ms", epoch=epoch)

    def _schedule_timer(self, group, kind, member_id, timeout_ms, reason, epoch=None,
                        only_if_absent=False):
        key = (kind, member_id)
        if only_if_absent and key in group.timers:
            return
        self._cancel(group, kind, member_id)

        def expired():
            if group.timers.get(key) is not handle:
                return
            del group.timers[key]
            if not self.catalog.may_serve(self.catalog.partition_for(group.group_id)):
                # the coordinator cannot tell whether the member could reach it: try again
                self._schedule_timer(group, kind, member_id, timeout_ms, reason, epoch)
                return
            self.catalog.spawn(self._fence_later(group, key, reason, epoch))

        handle = group.timers[key] = self.clock.call_later(timeout_ms, expired)


class _Change:
    """The records one request or timer writes to a group, what it answers, and what follows
    once they are written (timers). ``fresh``: the records make the group anew (its offsets
    kept from ``replaces``, the group it takes the place of); ``downgrade``: the classic group
    that replaces this consumer group once the records are written."""

    def __init__(self, group_id: str, fresh=False, replaces=None, downgrade=None,
                 rebalance=True):
        self.group_id = group_id
        self.records: list[Record] = []
        self.raw: list[tuple] = []          # (key, value) of classic group metadata
        self.fresh = fresh
        self.replaces = replaces
        self.downgrade = downgrade
        self.rebalance = rebalance
        self.response = None
        self._after: list = []

    def add(self, record: Record) -> None:
        self.records.append(record)

    def after(self, fn) -> None:
        self._after.append(fn)

    async def commit(self, owner: ConsumerGroups, now: int) -> int:
        """Write the records, then apply them (through the runtime); a Kafka error code when
        the write failed (and nothing changed)."""
        catalog = owner.catalog
        gid = self.group_id
        partition = catalog.partition_for(gid)
        records = self.records + self.raw
        if records and partition not in catalog.owned_partitions:
            return errors.NOT_COORDINATOR
        try:
            result = CoordinatorResult(records, errors.NONE, lambda _o: self._apply(owner, now))
            return await owner.store.runtime.write(partition, result, now,
                                                   owner.store.store_records)
        except Exception as e:  # noqa: BLE001 - every append failure becomes an error code
            code = getattr(e, "error_code", None)
            if code is None:
                log.error("consumer group %s: append failed", gid, exc_info=e)
                return errors.UNKNOWN_SERVER_ERROR
            return errors.append_error_for_write(code)

    def _apply(self, owner: ConsumerGroups, now: int) -> None:
        catalog = owner.catalog
        gid = self.group_id
        if self.downgrade is not None:
            self._swap_to_classic(owner, now)
            return
        group = catalog.groups.get(gid)
        if self.fresh or not isinstance(group, ConsumerGroup):
            old = group
            group = ConsumerGroup(gid, now)
            if old is not None:
                group.take_offsets(old)
                if isinstance(old, GroupMetadata):
                    owner.classic.hand_over(old)
            catalog.groups[gid] = group
        for r in self.records:
            group.apply(r, now)
        for fn in self._after:
            fn(group)

    def _swap_to_classic(self, owner: ConsumerGroups, now: int) -> None:
        catalog = owner.catalog
        old = catalog.groups.get(self.group_id)
        classic = self.downgrade
        if old is not None:
            classic.take_offsets(old)
            if isinstance(old, ConsumerGroup):
                owner.cancel_timers(old)
                old.transition_to(DEAD, now)
        catalog.groups[self.group_id] = classic
        if classic.members:
            owner.classic.take_over(classic, "the group went back to the classic protocol"
                                    if self.rebalance else None)


def _refreshed(group: ConsumerGroup, now: int, version: int) -> None:
    group.regex_refresh_ms = now
    group.regex_version = version


def _given(value, default):
    return default if value is None else value


def _check_epoch(member: ConsumerGroupMember, received: int, owned) -> None:
    """FENCED_MEMBER_EPOCH unless the member heartbeats with its epoch, or with the previous
    one and only partitions it still has (the answer that bumped it was lost)."""
    if received > member.epoch or (received < member.epoch and (
            received != member.current.previous_epoch
            or not _subset(owned, member.current.assigned))):
        raise ApiError(errors.FENCED_MEMBER_EPOCH,
                       f"The consumer group member has a {'greater' if received > member.epoch else 'smaller'} "
                       f"member epoch ({received}) than the one known by the group coordinator "
                       f"({member.epoch}). The member must abandon all its partitions and rejoin.")


def _subset(owned, assigned: dict) -> bool:
    if owned is None:
        return False
    return all(set(ps) <= assigned.get(t, frozenset()) for t, ps in owned.items() if ps)


def _subscription(protocols):
    """The ConsumerProtocolSubscription of a classic member (every protocol carries the same)."""
    try:
        return SUBSCRIPTION.from_bytes(protocols[0][1])
    except ValueError:
        raise ApiError(errors.INCONSISTENT_GROUP_PROTOCOL) from None
