"""Share groups (KIP-932) on the group coordinator: membership by heartbeat and the broker's
assignment, in the same ``__consumer_offsets`` partitions (and the same group id space) as the
classic groups of ``GroupCatalog``.

A member joins with ShareGroupHeartbeat at epoch 0 and its subscribed topics, heartbeats every
``share.heartbeat.interval.ms`` and leaves at epoch -1, or is removed once it has been silent for
``share.session.timeout.ms``. Each change of the members, their subscriptions or the subscribed
topics' partitions bumps the group epoch and makes a new assignment (Kafka's ``simple``
assignor): every partition of a subscribed topic to at least one of its subscribers, several
members per partition when they outnumber the partitions. A partition the group never read is
assigned once its share state is initialized at its share coordinator (in the background, as
Kafka does; the members get it at their next heartbeat). Share groups have no revocation: a
member's new assignment applies at once, under the group's new epoch.

Persisted on ``__consumer_offsets`` in Kafka's records: the group's epoch (ShareGroupMetadata),
each member's subscription (ShareGroupMemberMetadata), the target assignment
(ShareGroupTargetAssignmentMetadata and -Member), each member's epoch and assignment once it
heartbeats at the new epoch (ShareGroupCurrentMemberAssignment), and the share-partitions whose
state the group initialized (ShareGroupStatePartitionMetadata), which DescribeShareGroupOffsets,
AlterShareGroupOffsets and deleting the group work on. A coordinator that takes a group over
knows its members at their epochs and starts their session timeouts anew.

Must not know: the wire or the broker (topic metadata, group configs and deleting share state
come in as callables).
"""
from __future__ import annotations

import asyncio
import hashlib
import logging

from josefk.wire.internal_topics.share_groups import (SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT,
                                                      SHARE_GROUP_MEMBER_METADATA,
                                                      SHARE_GROUP_METADATA,
                                                      SHARE_GROUP_STATE_PARTITION_METADATA,
                                                      SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER,
                                                      SHARE_GROUP_TARGET_ASSIGNMENT_METADATA)

from ..runtime import errors
from ..runtime.keyed_locks import KeyedLocks
from ..runtime.runtime import CoordinatorResult
from .consumer_group import STABLE_MEMBER
from .group import DEAD as CLASSIC_DEAD
from .results import GroupOverview

log = logging.getLogger("josefk.coordinator")

EMPTY, STABLE, DEAD = "Empty", "Stable", "Dead"
PROTOCOL_TYPE = "share"
ASSIGNOR = "simple"
_TopicInfo = SHARE_GROUP_STATE_PARTITION_METADATA.Value.TopicPartitionsInfo
_Target = SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER.Value.TopicPartition
_Current = SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT.Value.TopicPartitions
_MEMBER_RECORDS = (SHARE_GROUP_MEMBER_METADATA, SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER,
                   SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT)
INIT_ATTEMPTS = 5
INIT_BACKOFF_S = 0.5


class ShareMember:
    __slots__ = ("member_id", "epoch", "rack_id", "client_id", "client_host", "subscribed",
                 "assignment", "timer")

    def __init__(self, member_id, client_id, client_host):
        self.member_id = member_id
        self.epoch = 0
        self.rack_id = None
        self.client_id = client_id
        self.client_host = client_host
        self.subscribed: list[str] = []
        self.assignment: dict = {}  # topic id -> sorted partitions
        self.timer = None


class ShareGroup:
    __slots__ = ("group_id", "epoch", "assignment_epoch", "metadata_hash", "members",
                 "initialized", "initializing")

    def __init__(self, group_id):
        self.group_id = group_id
        self.epoch = 0
        self.assignment_epoch = 0
        self.metadata_hash = 0
        self.members: dict[str, ShareMember] = {}
        self.initialized: dict = {}  # topic id -> (topic name, set of partitions)
        self.initializing: dict = {}  # the same, of those being initialized

    @property
    def state(self) -> str:
        return STABLE if self.members else EMPTY

    def subscribed_topics(self) -> set[str]:
        return {t for m in self.members.values() for t in m.subscribed}


class HeartbeatResult:
    __slots__ = ("error", "message", "member_id", "epoch", "interval_ms", "assignment")

    def __init__(self, error, message=None, member_id=None, epoch=0, interval_ms=0,
                 assignment=None):
        self.error, self.message, self.member_id = error, message, member_id
        self.epoch, self.interval_ms, self.assignment = epoch, interval_ms, assignment


def assign(members: dict, topics: dict) -> dict:
    """Kafka's ``simple`` share-group assignor: ``members`` {member id: subscribed topic names},
    ``topics`` {name: (topic id, assignable partitions)}. The members of one subscription share
    the partitions of its topics: in turn, one member each, while the partitions are at least as
    many as the members; else each member gets one partition and each partition several
    members. Returns {member id: {topic id: [partitions]}}."""
    out = {m: {} for m in members}
    by_subscription: dict = {}
    for m, names in members.items():
        by_subscription.setdefault(tuple(sorted(set(names) & set(topics))), []).append(m)
    for names, subs in by_subscription.items():
        subs.sort()
        partitions = [(topics[n][0], p) for n in names for p in topics[n][1]]
        if not partitions:
            continue
        if len(subs) <= len(partitions):
            for i, (topic_id, p) in enumerate(partitions):
                out[subs[i % len(subs)]].setdefault(topic_id, []).append(p)
        else:
            for i, m in enumerate(subs):
                topic_id, p = partitions[i % len(partitions)]
                out[m].setdefault(topic_id, []).append(p)
    return out


def metadata_hash(topics: dict) -> int:
    """A hash of the subscribed topics' ids and partition counts: a change means a new
    assignment (Kafka's MetadataHash)."""
    h = hashlib.sha256()
    for name in sorted(topics):
        topic_id, count = topics[name]
        h.update(f"{name}:{topic_id}:{count};".encode())
    return int.from_bytes(h.digest()[:8], "big", signed=True)


def _partitions(struct, assignment: dict) -> list:
    return [struct(topic_id=t, partitions=sorted(ps))
            for t, ps in sorted(assignment.items(), key=lambda kv: str(kv[0]))]


def member_record(group_id, m: ShareMember) -> tuple:
    """The member's subscription (ShareGroupMemberMetadata)."""
    return (SHARE_GROUP_MEMBER_METADATA.key(group_id=group_id, member_id=m.member_id),
            SHARE_GROUP_MEMBER_METADATA.value(0, rack_id=m.rack_id, client_id=m.client_id,
                                              client_host=m.client_host,
                                              subscribed_topic_names=m.subscribed))


def current_assignment_record(group_id, m: ShareMember, previous_epoch: int) -> tuple:
    """The member's epoch and assignment (ShareGroupCurrentMemberAssignment)."""
    return (SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT.key(group_id=group_id, member_id=m.member_id),
            SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT.value(
                0, member_epoch=m.epoch, previous_member_epoch=previous_epoch,
                state=STABLE_MEMBER, assigned_partitions=_partitions(_Current, m.assignment)))


def member_tombstones(group_id, member_id) -> list:
    return [(r.key(group_id=group_id, member_id=member_id), None) for r in _MEMBER_RECORDS]


class ShareGroups:
    """The share groups of one group coordinator. ``topics(names)`` gives {name: (topic id,
    partitions)} of the existing topics among ``names``; ``settings(group id)`` its
    (session timeout ms, heartbeat interval ms); ``initialize_state`` and ``delete_state``
    (group id, topic id, partition) initialize and delete a share-partition's state
    (awaitables resolving to an error code)."""

    def __init__(self, catalog, store, topics, settings, initialize_state, delete_state,
                 max_size: int = 200):
        self.catalog = catalog
        self.store = store
        self.topics = topics
        self.settings = settings
        self.initialize_state = initialize_state
        self.delete_state = delete_state
        self.max_size = max_size
        self.groups: dict[str, ShareGroup] = {}
        # a group's changes run one at a time, from reading it to applying what was written
        self._locks = KeyedLocks()
        catalog.partition_listeners.append(self)

    def has(self, group_id: str) -> bool:
        return group_id in self.groups

    # ------------------------------------------------------------------ loading
    def loaded(self, partition: int, records) -> None:
        """Replay the share-group records of a partition this coordinator now owns; its members
        get their session timeouts anew."""
        for record, key, value in records:
            gid = key.group_id
            if value is None:
                if record is SHARE_GROUP_METADATA:
                    self.groups.pop(gid, None)
                elif record is SHARE_GROUP_MEMBER_METADATA and gid in self.groups:
                    self.groups[gid].members.pop(key.member_id, None)
                continue
            _v, v = record.read_value(value)
            group = self.groups.get(gid)
            if group is None:
                group = self.groups[gid] = ShareGroup(gid)
            if record in _MEMBER_RECORDS:
                self._replay_member(group, record, key.member_id, v)
            elif record is SHARE_GROUP_METADATA:
                group.epoch = v.epoch
                group.metadata_hash = v.metadata_hash
            elif record is SHARE_GROUP_TARGET_ASSIGNMENT_METADATA:
                group.assignment_epoch = v.assignment_epoch
            else:
                group.initialized = {t.topic_id: (t.topic_name, set(t.partitions))
                                     for t in v.initialized_topics}
        for gid, group in self.groups.items():
            if self.catalog.partition_for(gid) == partition:
                session_ms, _interval = self.settings(gid)
                for m in group.members.values():
                    self._touch(group, m, session_ms)

    @staticmethod
    def _replay_member(group: ShareGroup, record, member_id, v) -> None:
        m = group.members.get(member_id)
        if m is None:
            m = group.members[member_id] = ShareMember(member_id, "", "")
        if record is SHARE_GROUP_MEMBER_METADATA:
            m.rack_id, m.client_id, m.client_host = v.rack_id, v.client_id, v.client_host
            m.subscribed = list(v.subscribed_topic_names)
        elif record is SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER:
            m.assignment = {t.topic_id: sorted(t.partitions) for t in v.topic_partitions}
        else:
            m.epoch = v.member_epoch

    def unloaded(self, partition: int) -> None:
        for gid in [g for g in self.groups if self.catalog.partition_for(g) == partition]:
            for m in self.groups.pop(gid).members.values():
                if m.timer is not None:
                    m.timer.cancel()

    # ------------------------------------------------------------------ heartbeat
    async def heartbeat(self, group_id, member_id, member_epoch, rack_id, subscribed,
                        client_id, client_host) -> HeartbeatResult:
        err = self.catalog.validate(group_id, "ShareGroupHeartbeat")
        if err is not None:
            return HeartbeatResult(err)
        if not member_id:
            return HeartbeatResult(errors.INVALID_REQUEST, "MemberId can't be empty.")
        if member_epoch < -1:
            return HeartbeatResult(errors.INVALID_REQUEST, "MemberEpoch is invalid.")
        if member_epoch == 0 and not subscribed:
            return HeartbeatResult(errors.INVALID_REQUEST,
                                   "SubscribedTopicNames must be set in first request.")
        async with self._locks.hold(group_id):
            return await self._heartbeat(group_id, member_id, member_epoch, rack_id, subscribed,
                                         client_id, client_host)

    async def _heartbeat(self, group_id, member_id, member_epoch, rack_id, subscribed,
                         client_id, client_host) -> HeartbeatResult:
        refused = self._not_share_group(group_id)
        if refused is not None:
            return HeartbeatResult(errors.GROUP_ID_NOT_FOUND, refused)
        group = self.groups.get(group_id)
        session_ms, interval_ms = self.settings(group_id)
        if member_epoch == -1:
            return await self._leave(group, member_id, interval_ms)
        member = group.members.get(member_id) if group is not None else None
        if member_epoch > 0:
            if member is None:
                return HeartbeatResult(errors.UNKNOWN_MEMBER_ID,
                                       f"Member {member_id} is not a member of group "
                                       f"{group_id}.")
            if member_epoch != member.epoch:
                return HeartbeatResult(errors.FENCED_MEMBER_EPOCH,
                                       f"The share group member has a smaller or larger member "
                                       f"epoch ({member_epoch}) than the one known by the group "
                                       f"coordinator ({member.epoch}).")
        elif member is None and group is not None and len(group.members) >= self.max_size:
            return HeartbeatResult(errors.GROUP_MAX_SIZE_REACHED,
                                   f"The share group has reached its maximum capacity of "
                                   f"{self.max_size} members.")
        created = group is None
        if created:
            group = ShareGroup(group_id)
        changed = created
        if member is None:
            member = ShareMember(member_id, client_id, client_host)
            group.members[member_id] = member
            changed = True
        described = changed
        if subscribed is not None and sorted(subscribed) != sorted(member.subscribed):
            member.subscribed = sorted(set(subscribed))
            changed = described = True
        if rack_id is not None and rack_id != member.rack_id:
            member.rack_id = rack_id
            described = True
        code = await self._reconcile(
            group, changed, [member_record(group_id, member)] if described else [])
        if code:
            if created or member.epoch == 0:
                group.members.pop(member_id, None)
            return HeartbeatResult(code)
        self.groups[group_id] = group
        self._touch(group, member, session_ms)
        if member.epoch != group.epoch:
            previous, member.epoch = member.epoch, group.epoch
            code = await self._persist(group_id,
                                       [current_assignment_record(group_id, member, previous)])
            if code:
                member.epoch = previous
                return HeartbeatResult(code)
        send = member_epoch == 0 or subscribed is not None or member_epoch != group.epoch
        return HeartbeatResult(errors.NONE, None, member_id, member.epoch, interval_ms,
                               member.assignment if send else None)

    def _not_share_group(self, group_id) -> str | None:
        """Why ``group_id`` cannot be a share group (answered GROUP_ID_NOT_FOUND): a live
        classic group has it; else None."""
        classic = self.catalog.groups.get(group_id)
        if classic is not None and not classic.is_state(CLASSIC_DEAD):
            return f"Group {group_id} is not a share group."
        return None

    async def _leave(self, group, member_id, interval_ms) -> HeartbeatResult:
        member = group.members.pop(member_id, None) if group is not None else None
        if member is None:
            return HeartbeatResult(errors.UNKNOWN_MEMBER_ID,
                                   f"Member {member_id} is not a member of the group.")
        if member.timer is not None:
            member.timer.cancel()
        code = await self._reconcile(group, True, member_tombstones(group.group_id, member_id))
        if code:
            log.warning("share group %s: member %s left, the new epoch is not persisted: %s",
                        group.group_id, member_id, errors.name(code))
        return HeartbeatResult(errors.NONE, None, member_id, -1, interval_ms)

    def _touch(self, group, member, session_ms) -> None:
        if member.timer is not None:
            member.timer.cancel()
        timer = member.timer = self.catalog.clock.call_later(
            session_ms, lambda: self.catalog.spawn(self._expire(group.group_id, member, timer,
                                                                session_ms)))

    async def _expire(self, group_id, member: ShareMember, timer, session_ms) -> None:
        """``timer``, armed for ``member``, fired: the member leaves, unless it is no longer
        the group's member of that id (one that replaced it has a session of its own) or a
        heartbeat that ran first armed its timer anew."""
        async with self._locks.hold(group_id):
            group = self.groups.get(group_id)
            if group is None or group.members.get(member.member_id) is not member \
                    or member.timer is not timer:
                return
            if not self.catalog.may_serve(self.catalog.partition_for(group_id)):
                # the coordinator cannot tell whether the member could reach it: wait again
                self._touch(group, member, session_ms)
                return
            del group.members[member.member_id]
            log.info("share group %s: member %s expired", group_id, member.member_id)
            await self._reconcile(group, True, member_tombstones(group_id, member.member_id))

    async def _reconcile(self, group: ShareGroup, changed: bool, records=()) -> int:
        """Bump the epoch and assign again if the members or their topics changed, with the
        share-partitions whose state is initialized; the others are initialized first (as Kafka
        does: InitializeShareGroupState at their share coordinators), in the background, and
        assigned by the next epoch. Persists ``records`` (a member's), the epoch, the new target
        assignment and the share-partitions' progress, in one write."""
        topics = self.topics(group.subscribed_topics())
        h = metadata_hash(topics)
        if not changed and h == group.metadata_hash:
            return await self._persist(group.group_id, list(records)) if records else errors.NONE
        epoch = group.epoch + 1
        ready, fresh = {}, {}
        for name, (topic_id, count) in topics.items():
            have = group.initialized.get(topic_id, (None, set()))[1]
            ready[name] = (topic_id, sorted(p for p in range(count) if p in have))
            new = {p for p in range(count) if p not in have}
            if new:
                fresh[topic_id] = (name, new)
        gid = group.group_id
        target = assign({m.member_id: m.subscribed for m in group.members.values()}, ready)
        target = {m: {t: sorted(ps) for t, ps in a.items()} for m, a in target.items()}
        records = [*records, (SHARE_GROUP_METADATA.key(group_id=gid),
                              SHARE_GROUP_METADATA.value(0, epoch=epoch, metadata_hash=h))]
        records += [(SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER.key(group_id=gid, member_id=m),
                     SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER.value(
                         0, topic_partitions=_partitions(_Target, a)))
                    for m, a in target.items() if a != group.members[m].assignment]
        records.append((SHARE_GROUP_TARGET_ASSIGNMENT_METADATA.key(group_id=gid),
                        SHARE_GROUP_TARGET_ASSIGNMENT_METADATA.value(0, assignment_epoch=epoch)))
        if fresh != group.initializing:
            records.append(self._state_partitions_record(gid, group.initialized, fresh))
        code = await self._persist(gid, records)
        if code:
            return code
        group.epoch = group.assignment_epoch = epoch
        group.metadata_hash = h
        if fresh and fresh != group.initializing:
            self.catalog.spawn(self._initialize(group, fresh))
        group.initializing = fresh
        for m in group.members.values():
            m.assignment = target.get(m.member_id, {})
        return errors.NONE

    async def _initialize(self, group: ShareGroup, fresh: dict) -> None:
        """Initialize the state of ``fresh`` {topic id: (name, partitions)} (a start offset the
        partition's leader picks by share.auto.offset.reset), then assign them."""
        done = {}
        for topic_id, (name, parts) in fresh.items():
            for p in sorted(parts):
                for attempt in range(INIT_ATTEMPTS):
                    code = await self.initialize_state(group.group_id, topic_id, p)
                    if code in (errors.NONE, errors.FENCED_STATE_EPOCH):  # has a state already
                        done.setdefault(topic_id, (name, set()))[1].add(p)
                        break
                    await asyncio.sleep(INIT_BACKOFF_S * (attempt + 1))
                else:
                    log.warning("share group %s: cannot initialize %s-%d: %s",
                                group.group_id, name, p, errors.name(code))
        async with self._locks.hold(group.group_id):
            if self.groups.get(group.group_id) is not group or not done:
                return
            initialized = {t: (n, set(ps)) for t, (n, ps) in group.initialized.items()}
            for t, (n, ps) in done.items():
                initialized.setdefault(t, (n, set()))[1].update(ps)
            initializing = {t: (n, ps - done.get(t, (n, set()))[1])
                            for t, (n, ps) in group.initializing.items()}
            initializing = {t: v for t, v in initializing.items() if v[1]}
            code = await self._persist(group.group_id, [self._state_partitions_record(
                group.group_id, initialized, initializing)])
            if code:
                log.warning("share group %s: initialized partitions not persisted: %s",
                            group.group_id, errors.name(code))
                return
            group.initialized, group.initializing = initialized, initializing
            await self._reconcile(group, True)

    def _state_partitions_record(self, group_id, initialized, initializing=None):
        now = self.catalog.now()

        def infos(topics):
            return [_TopicInfo(topic_id=t, topic_name=name, partitions=sorted(ps),
                               create_timestamp=now) for t, (name, ps) in sorted(topics.items())]

        return (SHARE_GROUP_STATE_PARTITION_METADATA.key(group_id=group_id),
                SHARE_GROUP_STATE_PARTITION_METADATA.value(
                    0, initializing_topics=infos(initializing or {}), deleting_topics=[],
                    initialized_topics=infos(initialized)))

    async def _persist(self, group_id, records) -> int:
        partition = self.catalog.partition_for(group_id)
        if partition not in self.catalog.owned_partitions:
            return errors.NOT_COORDINATOR
        try:
            result = CoordinatorResult(records, errors.NONE)
            return await self.store.runtime.write(partition, result, self.catalog.now(),
                                                  self.store.store_records)
        except Exception as e:  # noqa: BLE001
            code = getattr(e, "error_code", None)
            if code is None:
                log.error("share group records for %s failed", group_id, exc_info=e)
                return errors.UNKNOWN_SERVER_ERROR
            return errors.append_error_for_group(code)

    # ------------------------------------------------------------------ admin
    def describe(self, group_id):
        """(error, message, ShareGroup or None)."""
        err = self.catalog.validate(group_id, "ShareGroupDescribe")
        if err is not None:
            return err, None, None
        group = self.groups.get(group_id)
        if group is None:
            return errors.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.", None
        return errors.NONE, None, group

    def list_groups(self, states=None) -> list[GroupOverview]:
        return [GroupOverview(g.group_id, PROTOCOL_TYPE, g.state) for g in self.groups.values()
                if self.catalog.partition_for(g.group_id) in self.catalog.owned_partitions
                and (not states or g.state in states)]

    async def delete(self, group_id) -> int:
        """DeleteGroups of a share group: only an empty one; its share-partitions' state goes
        first, then its records."""
        err = self.catalog.validate(group_id, "DeleteGroups")
        if err is not None:
            return err
        async with self._locks.hold(group_id):
            group = self.groups.get(group_id)
            if group is None:
                return errors.GROUP_ID_NOT_FOUND
            if group.members:
                return errors.NON_EMPTY_GROUP
            code = await self._forget(group, list(group.initialized))
            if code:
                return code
            code = await self._persist(group_id, [
                (SHARE_GROUP_TARGET_ASSIGNMENT_METADATA.key(group_id=group_id), None),
                (SHARE_GROUP_METADATA.key(group_id=group_id), None),
                (SHARE_GROUP_STATE_PARTITION_METADATA.key(group_id=group_id), None)])
            if code:
                return code
            self.groups.pop(group_id, None)
            return errors.NONE

    async def empty_group(self, group_id, create: bool = False):
        """(error, message, ShareGroup or None) for the admin offset APIs, which work on a group
        without members. ``create``: a group that does not exist yet is made, empty and
        persisted, as Kafka's AlterShareGroupOffsets does (a new group's starting point is set
        before any member joins)."""
        code, message, group = self.describe(group_id)
        if group is None and create and code == errors.GROUP_ID_NOT_FOUND:
            async with self._locks.hold(group_id):
                refused = self._not_share_group(group_id)
                if refused is not None:
                    return errors.GROUP_ID_NOT_FOUND, refused, None
                group = self.groups.get(group_id)
                if group is None:
                    group = ShareGroup(group_id)
                    code = await self._persist(group_id, [(
                        SHARE_GROUP_METADATA.key(group_id=group_id),
                        SHARE_GROUP_METADATA.value(0, epoch=0, metadata_hash=0))])
                    if code:
                        return code, None, None
                    self.groups[group_id] = group
        if group is None:
            return code, message, None
        if group.members:
            return errors.NON_EMPTY_GROUP, "The group has active members.", None
        return errors.NONE, None, group

    async def mark_initialized(self, group: ShareGroup, topic_id, topic_name, partition) -> int:
        """Record that ``group`` has state on ``topic_id``-``partition`` (AlterShareGroupOffsets
        made it)."""
        async with self._locks.hold(group.group_id):
            if partition in group.initialized.get(topic_id, (None, ()))[1]:
                return errors.NONE
            initialized = {t: (n, set(ps)) for t, (n, ps) in group.initialized.items()}
            initialized.setdefault(topic_id, (topic_name, set()))[1].add(partition)
            code = await self._persist(group.group_id, [
                self._state_partitions_record(group.group_id, initialized)])
            if not code:
                group.initialized = initialized
            return code

    async def forget_partitions(self, group: ShareGroup, topic_ids) -> int:
        """Delete the share state of ``group``'s initialized partitions of ``topic_ids`` (they
        start over by share.auto.offset.reset when consumed again)."""
        async with self._locks.hold(group.group_id):
            return await self._forget(group, topic_ids)

    async def _forget(self, group: ShareGroup, topic_ids) -> int:
        for topic_id in topic_ids:
            _name, parts = group.initialized.get(topic_id, (None, ()))
            for p in sorted(parts):
                code = await self.delete_state(group.group_id, topic_id, p)
                if code:
                    return code
        remaining = {t: v for t, v in group.initialized.items() if t not in set(topic_ids)}
        if remaining != group.initialized:
            code = await self._persist(group.group_id, [
                self._state_partitions_record(group.group_id, remaining)])
            if code:
                return code
            group.initialized = remaining
        return errors.NONE

    def shutdown(self) -> None:
        for group in self.groups.values():
            for m in group.members.values():
                if m.timer is not None:
                    m.timer.cancel()
        self.groups.clear()
