"""In-memory state of one consumer group of the KIP-848 protocol (Kafka's ConsumerGroup and
ConsumerGroupMember), and how its records change it.

A consumer group is exactly what its records on ``__consumer_offsets`` say: the group epoch,
the topics its members subscribe to (subscription metadata), each member's subscription and its
current assignment, the target assignment of each member with its epoch, and the topics each
subscribed regular expression resolved to. :meth:`ConsumerGroup.apply` replays one
:class:`Record`; the coordinator applies the records it wrote, and loading a partition applies
the records it reads, so both paths build the same state. Everything else here (subscribed topic
counts, partition owners' epochs, the group state) is derived from the records.

Pure data: no timers, no I/O, no record layout (``coordinator.group.consumer_records`` maps records to
Kafka's bytes); ``coordinator.group.consumer_groups`` runs the protocol.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from typing import NamedTuple

from ..runtime import errors
from .group import CONSUMER_PROTOCOL_TYPE, CommittedOffsets

# Group states, as ConsumerGroupDescribe and ListGroups spell them
EMPTY = "Empty"
ASSIGNING = "Assigning"
RECONCILING = "Reconciling"
STABLE = "Stable"
DEAD = "Dead"

# Member states (the State of ConsumerGroupCurrentMemberAssignmentValue)
STABLE_MEMBER = 0
UNREVOKED_PARTITIONS = 1
UNRELEASED_PARTITIONS = 2
UNKNOWN_MEMBER_STATE = 127

JOIN_EPOCH = 0
LEAVE_EPOCH = -1
STATIC_LEAVE_EPOCH = -2

# Record types: Kafka's numbers of the ConsumerGroup* record pairs
GROUP_EPOCH = 3
SUBSCRIPTION_METADATA = 4
MEMBER_METADATA = 5
TARGET_EPOCH = 6
TARGET_MEMBER = 7
CURRENT_ASSIGNMENT = 8
REGULAR_EXPRESSION = 16


class ApiError(Exception):
    """A request answered with a Kafka error code (and message) instead of a result."""

    def __init__(self, code: int, message: str | None = None):
        super().__init__(message or errors.name(code))
        self.code = code
        self.message = message


class Record(NamedTuple):
    """One change of a consumer group: a record type, the group, the member id or regular
    expression it is about (None for the group-level records) and the new value (None: a
    tombstone). Values: GROUP_EPOCH and TARGET_EPOCH an int, SUBSCRIPTION_METADATA
    {topic name: TopicMetadata}, MEMBER_METADATA a MemberMetadata, TARGET_MEMBER
    {topic id: partitions}, CURRENT_ASSIGNMENT a MemberAssignment, REGULAR_EXPRESSION a
    ResolvedRegex."""
    type: int
    group_id: str
    key: str | None
    value: object


class TopicMetadata(NamedTuple):
    topic_id: object
    name: str
    num_partitions: int


class ResolvedRegex(NamedTuple):
    """The topics a subscribed regular expression matched, at which version of the topic list,
    and when."""
    topics: frozenset
    version: int
    timestamp: int


@dataclass(frozen=True, slots=True)
class ClassicMetadata:
    """A member that joined with JoinGroup: its session timeout and protocols (name, metadata)."""
    session_timeout_ms: int
    protocols: tuple


@dataclass(frozen=True, slots=True)
class MemberMetadata:
    """A member's subscription (ConsumerGroupMemberMetadataValue)."""
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    topic_names: tuple = ()           # sorted
    topic_regex: str | None = None
    rebalance_timeout_ms: int = -1
    server_assignor: str | None = None
    classic: ClassicMetadata | None = None


@dataclass(frozen=True, slots=True, eq=True)
class MemberAssignment:
    """A member's epochs and partitions (ConsumerGroupCurrentMemberAssignmentValue):
    ``assigned`` and ``revoking`` are {topic id: frozenset(partitions)}."""
    epoch: int = 0
    previous_epoch: int = 0
    state: int = STABLE_MEMBER
    assigned: dict = field(default_factory=dict)
    revoking: dict = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ConsumerGroupMember:
    member_id: str
    meta: MemberMetadata = MemberMetadata()
    current: MemberAssignment = MemberAssignment()

    @property
    def epoch(self) -> int:
        return self.current.epoch

    @property
    def instance_id(self) -> str | None:
        return self.meta.instance_id

    @property
    def uses_classic_protocol(self) -> bool:
        return self.meta.classic is not None

    def is_reconciled_to(self, target_epoch: int) -> bool:
        return self.current.state == STABLE_MEMBER and self.current.epoch == target_epoch


class ConsumerGroup(CommittedOffsets):
    """One consumer group and its committed offsets."""

    protocol_type = CONSUMER_PROTOCOL_TYPE
    group_type = "consumer"
    is_consumer_group = True

    def __init__(self, group_id: str, now_ms: int):
        super().__init__()
        self.group_id = group_id
        self.group_epoch = 0
        self.assignment_epoch = 0
        self.members: dict[str, ConsumerGroupMember] = {}
        self.static_members: dict[str, str] = {}          # instance id -> member id
        self.targets: dict[str, dict] = {}                 # member id -> {topic id: partitions}
        self.subscription_metadata: dict[str, TopicMetadata] = {}
        self.regexes: dict[str, ResolvedRegex] = {}
        # derived from the records
        self.partition_epochs: dict[tuple, int] = {}       # (topic id, partition) -> owner's epoch
        self.topic_counts: Counter = Counter()             # topic name -> members subscribed
        self.regex_counts: Counter = Counter()             # regular expression -> members
        self.assignor_counts: Counter = Counter()          # server assignor -> members naming it
        self.classic_protocols: Counter = Counter()        # protocol -> classic members with it
        self.classic_members = 0
        self.state = EMPTY
        self.current_state_timestamp = now_ms
        # the coordinator's bookkeeping (not records)
        self.timers: dict[tuple, object] = {}              # (kind, member id) -> timer handle
        self.regex_refresh_ms = -1     # when the regexes were last resolved (-1: at next need)
        self.regex_version = -1        # the version of the topic list they were resolved at

    # ------------------------------------------------------------------ queries
    def is_state(self, state: str) -> bool:
        return self.state == state

    @property
    def generation_id(self) -> int:
        return self.group_epoch

    @property
    def size(self) -> int:
        return len(self.members)

    def has(self, member_id: str) -> bool:
        return member_id in self.members

    def static_member(self, instance_id: str | None) -> ConsumerGroupMember | None:
        mid = self.static_members.get(instance_id) if instance_id is not None else None
        return self.members.get(mid) if mid is not None else None

    def partition_epoch(self, topic_id, partition: int) -> int:
        return self.partition_epochs.get((topic_id, partition), -1)

    def is_subscribed_to_topic(self, topic: str) -> bool:
        return self.topic_counts.get(topic, 0) > 0

    @property
    def subscribed_topics(self) -> set[str]:
        return {t for t, n in self.topic_counts.items() if n > 0}

    def preferred_assignor(self, changes: dict | None = None) -> str | None:
        """The server assignor most members name (counting ``changes`` {member id: member or
        None}), None when none does."""
        counts = self.assignor_counts
        if changes:
            counts = counts.copy()
            for mid, new in changes.items():
                _count(counts, self._assignor(self.members.get(mid)), -1)
                _count(counts, self._assignor(new), 1)
        best = max(counts.items(), key=lambda kv: kv[1], default=None)
        return best[0] if best is not None and best[1] > 0 else None

    def member_topics(self, member: ConsumerGroupMember | None) -> set[str]:
        """The topics ``member`` subscribes to: by name, and those its regex resolved to."""
        if member is None:
            return set()
        topics = set(member.meta.topic_names)
        resolved = self.regexes.get(member.meta.topic_regex)
        if resolved is not None:
            topics |= resolved.topics
        return topics

    def supports_classic_protocols(self, protocol_type: str, names) -> bool:
        """Whether a member joining with JoinGroup fits: the ``consumer`` protocol type and a
        protocol every classic member of the group supports."""
        if protocol_type != CONSUMER_PROTOCOL_TYPE:
            return False
        if not self.members or not self.classic_members:
            return bool(names)
        return any(self.classic_protocols.get(n, 0) == self.classic_members for n in names)

    def all_classic_except(self, member_id: str) -> bool:
        """Whether ``member_id`` is the only member using the consumer protocol."""
        member = self.members.get(member_id)
        return (member is not None and not member.uses_classic_protocol
                and self.classic_members == len(self.members) - 1)

    def waiting_on_unreleased(self, member: ConsumerGroupMember) -> bool:
        """Whether a member in UNRELEASED_PARTITIONS still waits for a partition of its target
        that another member holds."""
        if member.current.state != UNRELEASED_PARTITIONS:
            return False
        for t, ps in self.targets.get(member.member_id, {}).items():
            mine = member.current.assigned.get(t, frozenset())
            if any(p not in mine and self.partition_epoch(t, p) != -1 for p in ps):
                return True
        return False

    # ------------------------------------------------------------------ offsets
    def validate_offset_commit(self, member_id, instance_id, epoch, api_version=None,
                               transactional=False) -> int | None:
        """The error an OffsetCommit (or TxnOffsetCommit) of this group gets, None if it may
        commit: with epoch < 0 only while the group has no members; a consumer-protocol member
        must use OffsetCommit v9+ and its current epoch (STALE_MEMBER_EPOCH), a classic member
        its generation, the member epoch (ILLEGAL_GENERATION)."""
        if self.state == DEAD:
            return errors.COORDINATOR_NOT_AVAILABLE
        if epoch < 0 and not self.members:
            return None
        member = self.members.get(member_id)
        if member is None:
            return errors.UNKNOWN_MEMBER_ID
        if instance_id is not None and member.instance_id != instance_id:
            return errors.FENCED_INSTANCE_ID
        if (not transactional and not member.uses_classic_protocol and api_version is not None
                and api_version < 9):
            return errors.UNSUPPORTED_VERSION
        return self._epoch_error(member, epoch)

    def validate_offset_fetch(self, member_id, epoch) -> int | None:
        """OffsetFetch v9+ names the member (admin clients name none and may always fetch)."""
        if member_id is None and epoch < 0:
            return None
        member = self.members.get(member_id)
        if member is None:
            return errors.UNKNOWN_MEMBER_ID
        return self._epoch_error(member, epoch)

    @staticmethod
    def _epoch_error(member, epoch) -> int | None:
        if epoch == member.epoch:
            return None
        return errors.ILLEGAL_GENERATION if member.uses_classic_protocol else \
            errors.STALE_MEMBER_EPOCH

    def remove_expired_offsets(self, now_ms: int, retention_ms: int) -> dict:
        """Kafka's rule for consumer groups: offsets of topics no member subscribes to expire
        ``retention_ms`` after their commit."""
        return self._expire(now_ms, retention_ms, lambda om: om.commit_timestamp,
                            self.subscribed_topics)

    def transition_to(self, state: str, now_ms: int) -> None:
        """Only DEAD: the group is going away (deleted, or expired without offsets)."""
        assert state == DEAD, state
        self.state = DEAD
        self.current_state_timestamp = now_ms

    # ------------------------------------------------------------------ replay
    def apply(self, record: Record, now_ms: int) -> None:
        """Make one record part of the group's state."""
        kind, key, value = record.type, record.key, record.value
        if kind == GROUP_EPOCH:
            self.group_epoch = 0 if value is None else value
        elif kind == SUBSCRIPTION_METADATA:
            self.subscription_metadata = value or {}
        elif kind == MEMBER_METADATA:
            old = self.members.get(key)
            if value is None:
                if old is not None:
                    self._update_member(old, None)
            else:
                base = old if old is not None else ConsumerGroupMember(key)
                self._update_member(old, replace(base, meta=value))
        elif kind == TARGET_MEMBER:
            if value is None:
                self.targets.pop(key, None)
            else:
                self.targets[key] = value
        elif kind == TARGET_EPOCH:
            self.assignment_epoch = 0 if value is None else value
        elif kind == CURRENT_ASSIGNMENT:
            old = self.members.get(key)
            if value is not None:
                base = old if old is not None else ConsumerGroupMember(key)
                self._update_member(old, replace(base, current=value))
            elif old is not None:  # the member is being removed: it owns nothing any more
                self._update_member(old, replace(old, current=MemberAssignment(
                    LEAVE_EPOCH, LEAVE_EPOCH)))
        elif kind == REGULAR_EXPRESSION:
            self._update_regex(key, value)
        else:
            raise ValueError(f"not a consumer group record type: {kind}")
        self.refresh_state(now_ms)

    def refresh_state(self, now_ms: int) -> None:
        if self.state == DEAD:
            return
        if not self.members:
            state = EMPTY
        elif self.group_epoch > self.assignment_epoch:
            state = ASSIGNING
        elif all(m.is_reconciled_to(self.assignment_epoch) for m in self.members.values()):
            state = STABLE
        else:
            state = RECONCILING
        if state != self.state:
            self.state = state
            self.current_state_timestamp = now_ms

    def _update_member(self, old: ConsumerGroupMember | None,
                       new: ConsumerGroupMember | None) -> None:
        for t in self.member_topics(old):
            _count(self.topic_counts, t, -1)
        for t in self.member_topics(new):
            _count(self.topic_counts, t, 1)
        for m, d in ((old, -1), (new, 1)):
            if m is None:
                continue
            _count(self.regex_counts, m.meta.topic_regex, d)
            _count(self.assignor_counts, self._assignor(m), d)
            if m.meta.classic is not None:
                self.classic_members += d
                for name, _ in m.meta.classic.protocols:
                    _count(self.classic_protocols, name, d)
        if old is not None:
            for part, epoch in _owned(old):
                if self.partition_epochs.get(part) == epoch:
                    del self.partition_epochs[part]
            if old.instance_id is not None and self.static_members.get(old.instance_id) == \
                    old.member_id:
                del self.static_members[old.instance_id]
        if new is None:
            self.members.pop(old.member_id, None)
            return
        self.members[new.member_id] = new
        for part, epoch in _owned(new):
            self.partition_epochs[part] = epoch
        if new.instance_id is not None:
            self.static_members[new.instance_id] = new.member_id

    def _update_regex(self, regex: str, resolved: ResolvedRegex | None) -> None:
        old = self.regexes.get(regex)
        n = self.regex_counts.get(regex, 0)
        for t in (old.topics if old is not None else ()):
            _count(self.topic_counts, t, -n)
        if resolved is None:
            self.regexes.pop(regex, None)
        else:
            self.regexes[regex] = resolved
            for t in resolved.topics:
                _count(self.topic_counts, t, n)

    @staticmethod
    def _assignor(member: ConsumerGroupMember | None) -> str | None:
        return member.meta.server_assignor if member is not None else None

    def __repr__(self):
        return (f"ConsumerGroup({self.group_id!r}, state={self.state}, epoch={self.group_epoch}, "
                f"assignment_epoch={self.assignment_epoch}, members={list(self.members)})")


def _count(counter: Counter, key, delta: int) -> None:
    if key is None or delta == 0:
        return
    n = counter.get(key, 0) + delta
    if n > 0:
        counter[key] = n
    else:
        counter.pop(key, None)


def _owned(member: ConsumerGroupMember):
    """((topic id, partition), owner epoch) of every partition the member holds or revokes."""
    c = member.current
    for parts in (c.assigned, c.revoking):
        for t, ps in parts.items():
            for p in ps:
                yield (t, p), c.epoch
