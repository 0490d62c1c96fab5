"""In-memory state of one classic consumer group (Kafka's GroupMetadata / MemberMetadata), and
the committed offsets every group keeps whatever its protocol (:class:`CommittedOffsets`).

Pure data and bookkeeping: no timers, no I/O. The state machine that drives it lives in
``coordinator.group.membership``, its offsets are managed by ``coordinator.group.offset_manager``.
"""
from __future__ import annotations

import struct
import uuid
from collections import Counter
from dataclasses import dataclass

from ..runtime import errors
from .results import JoinResult, SyncResult

# Group states, spelled as Kafka's DescribeGroups/ListGroups report them.
EMPTY = "Empty"
PREPARING_REBALANCE = "PreparingRebalance"
COMPLETING_REBALANCE = "CompletingRebalance"
STABLE = "Stable"
DEAD = "Dead"

ALL_STATES = (EMPTY, PREPARING_REBALANCE, COMPLETING_REBALANCE, STABLE, DEAD)

_VALID_PREVIOUS = {
    PREPARING_REBALANCE: {STABLE, COMPLETING_REBALANCE, EMPTY},
    COMPLETING_REBALANCE: {PREPARING_REBALANCE},
    STABLE: {COMPLETING_REBALANCE},
    DEAD: {STABLE, PREPARING_REBALANCE, COMPLETING_REBALANCE, EMPTY, DEAD},
    EMPTY: {PREPARING_REBALANCE},
}

CONSUMER_PROTOCOL_TYPE = "consumer"
NO_LEADER_EPOCH = -1
UNKNOWN_MEMBER_ID = ""


class IllegalStateError(RuntimeError):
    """A transition Kafka's state machine forbids (a coordinator bug, never a client error)."""


@dataclass(frozen=True, slots=True)
class OffsetAndMetadata:
    """One committed offset. ``leader_epoch`` -1 means none; ``expire_timestamp`` is only set by
    OffsetCommit v1-v4 requests with an explicit retention time (stored as value version 1)."""
    offset: int
    leader_epoch: int = NO_LEADER_EPOCH
    metadata: str = ""
    commit_timestamp: int = -1
    expire_timestamp: int | None = None


@dataclass(slots=True)
class CommitRecord:
    """A materialised commit and the log offset of the batch that carried it (None = not yet
    appended), so the newest write wins even when compaction reorders nothing."""
    appended_batch_offset: int | None
    offset_and_metadata: OffsetAndMetadata

    def older_than(self, other: "CommitRecord") -> bool:
        return self.appended_batch_offset < other.appended_batch_offset


class MemberMetadata:
    __slots__ = ("member_id", "group_instance_id", "client_id", "client_host",
                 "rebalance_timeout_ms", "session_timeout_ms", "protocol_type",
                 "supported_protocols", "assignment", "awaiting_join", "awaiting_sync",
                 "is_new", "heartbeat_satisfied", "heartbeat_timer", "session_deadline")

    def __init__(self, member_id, group_instance_id, client_id, client_host,
                 rebalance_timeout_ms, session_timeout_ms, protocol_type, supported_protocols,
                 assignment=b""):
        self.member_id = member_id
        self.group_instance_id = group_instance_id
        self.client_id = client_id
        self.client_host = client_host
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.session_timeout_ms = session_timeout_ms
        self.protocol_type = protocol_type
        self.supported_protocols = normalize_protocols(supported_protocols)
        self.assignment = bytes(assignment or b"")
        self.awaiting_join = None   # callable(JoinResult) while a JoinGroup is parked
        self.awaiting_sync = None   # callable(SyncResult) while a SyncGroup is parked
        self.is_new = False
        self.heartbeat_satisfied = False
        self.heartbeat_timer = None
        self.session_deadline = 0  # clock ms at which the session expires (heartbeat_timer)

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    @property
    def is_awaiting_join(self) -> bool:
        return self.awaiting_join is not None

    @property
    def is_awaiting_sync(self) -> bool:
        return self.awaiting_sync is not None

    def protocol_names(self) -> set[str]:
        return {name for name, _ in self.supported_protocols}

    def metadata(self, protocol: str) -> bytes:
        for name, meta in self.supported_protocols:
            if name == protocol:
                return meta
        raise IllegalStateError(f"member {self.member_id} does not support protocol {protocol}")

    def matches(self, protocols) -> bool:
        return normalize_protocols(protocols) == self.supported_protocols

    def vote(self, candidates: set[str]) -> str:
        for name, _ in self.supported_protocols:
            if name in candidates:
                return name
        raise IllegalStateError(f"member {self.member_id} supports none of {candidates}")

    def has_satisfied_heartbeat(self) -> bool:
        if self.is_new:
            # new members can expire while awaiting join
            return self.heartbeat_satisfied
        if self.is_awaiting_join or self.is_awaiting_sync:
            # members parked in a rebalance satisfy heartbeats automatically
            return True
        return self.heartbeat_satisfied

    def __repr__(self):
        return (f"MemberMetadata({self.member_id!r}, instance={self.group_instance_id!r}, "
                f"client={self.client_id!r})")


def normalize_protocols(protocols) -> list[tuple[str, bytes]]:
    return [(name, bytes(meta or b"")) for name, meta in protocols]


def parse_subscription_topics(metadata: bytes) -> set[str]:
    """Topics of a ``consumer`` protocol Subscription, read with the v0 layout every version
    starts with: version INT16, topics [STRING]. Raises ValueError when it does not parse."""
    buf = memoryview(metadata)
    try:
        (version,) = struct.unpack_from(">h", buf, 0)
        if version < 0:
            raise ValueError(f"unsupported subscription version {version}")
        (n,) = struct.unpack_from(">i", buf, 2)
        if n < 0:
            raise ValueError("null topic array")
        pos = 6
        topics = set()
        for _ in range(n):
            (ln,) = struct.unpack_from(">h", buf, pos)
            pos += 2
            if ln < 0 or pos + ln > len(buf):
                raise ValueError("bad topic string")
            topics.add(str(buf[pos:pos + ln], "utf-8"))
            pos += ln
        return topics
    except struct.error as e:
        raise ValueError(str(e)) from None


class CommittedOffsets:
    """The committed offsets of a group, whichever its protocol: materialised commits, commits
    whose append is in flight, and transactional commits waiting for their marker. Kafka keeps
    them apart from the groups (its OffsetMetadataManager), so they survive a group changing
    protocol (:meth:`take_offsets`)."""

    def __init__(self):
        self.offsets: dict[tuple[str, int], CommitRecord] = {}
        self.pending_offset_commits: dict[tuple[str, int], OffsetAndMetadata] = {}
        # TxnOffsetCommit: producer id -> {(topic, partition): CommitRecord} until its marker
        self.pending_txn_offsets: dict[int, dict[tuple[str, int], CommitRecord]] = {}

    def has_offsets(self) -> bool:
        return bool(self.offsets or self.pending_offset_commits or self.pending_txn_offsets)

    def take_offsets(self, other: "CommittedOffsets") -> None:
        """Adopt the offsets of ``other``, the group this one replaces under the same id."""
        self.offsets = other.offsets
        self.pending_offset_commits = other.pending_offset_commits
        self.pending_txn_offsets = other.pending_txn_offsets

    def prepare_offset_commit(self, offsets: dict) -> None:
        self.pending_offset_commits.update(offsets)

    def on_offset_commit_append(self, tp, record: CommitRecord) -> None:
        if tp in self.pending_offset_commits:
            cur = self.offsets.get(tp)
            if cur is None or cur.appended_batch_offset is None or cur.older_than(record):
                self.offsets[tp] = record
        staged = self.pending_offset_commits.get(tp)
        om = record.offset_and_metadata
        if staged is not None and (staged is om or staged == om):  # is: no field comparisons
            del self.pending_offset_commits[tp]

    def fail_pending_offset_write(self, tp, offset: OffsetAndMetadata) -> None:
        if self.pending_offset_commits.get(tp) == offset:
            del self.pending_offset_commits[tp]

    def has_pending_offset_commits_for(self, tp) -> bool:
        return tp in self.pending_offset_commits or any(
            tp in txn for txn in self.pending_txn_offsets.values())

    def add_txn_offsets(self, producer_id: int, records: dict) -> None:
        self.pending_txn_offsets.setdefault(producer_id, {}).update(records)

    def complete_txn_offsets(self, producer_id: int, commit: bool) -> None:
        """The producer's transaction ended: its offsets become committed, or are dropped."""
        txn = self.pending_txn_offsets.pop(producer_id, {})
        if commit:
            for tp, rec in txn.items():
                cur = self.offsets.get(tp)
                if cur is None or cur.appended_batch_offset is None or cur.older_than(rec):
                    self.offsets[tp] = rec

    def remove_offsets(self, tps) -> dict:
        removed = {}
        for tp in tps:
            self.pending_offset_commits.pop(tp, None)
            rec = self.offsets.pop(tp, None)
            if rec is not None:
                removed[tp] = rec.offset_and_metadata
        return removed

    def remove_all_offsets(self) -> dict:
        return self.remove_offsets(list(self.offsets))

    def _expire(self, now_ms, retention_ms, base_of, subscribed=frozenset()) -> dict:
        """Drop and return the offsets older than ``retention_ms`` (measured from
        ``base_of(offset)``, or their explicit expire timestamp) of topics not in
        ``subscribed``; commits still in flight stay."""
        out = {}
        for tp, rec in self.offsets.items():
            if tp[0] in subscribed or tp in self.pending_offset_commits:
                continue
            om = rec.offset_and_metadata
            if om.expire_timestamp is not None:
                if now_ms >= om.expire_timestamp:
                    out[tp] = om
            elif now_ms - base_of(om) >= retention_ms:
                out[tp] = om
        for tp in out:
            del self.offsets[tp]
        return out


class GroupMetadata(CommittedOffsets):
    """Membership, generation and protocol of one classic group, and its committed offsets."""

    group_type = "classic"

    def __init__(self, group_id: str, initial_state: str, now_ms: int):
        super().__init__()
        self.group_id = group_id
        self.state = initial_state
        self.current_state_timestamp: int | None = now_ms
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None
        self.generation_id = 0
        self.leader_id: str | None = None
        self.members: dict[str, MemberMetadata] = {}
        self.static_members: dict[str, str] = {}   # group.instance.id -> member id
        self.pending_members: set[str] = set()     # ids handed out with MEMBER_ID_REQUIRED
        self.pending_sync_members: set[str] = set()
        self.num_members_awaiting_join = 0
        self.supported_protocols: Counter[str] = Counter()
        self.subscribed_topics: set[str] | None = None
        self.new_member_added = False
        # timers owned by the coordinator
        self.join_timer = None
        self.join_op = None
        self.sync_timer = None
        self.sync_generation = None
        self.pending_member_timers: dict[str, object] = {}

    # -- queries -------------------------------------------------------------------------
    def is_state(self, state: str) -> bool:
        return self.state == state

    def has(self, member_id: str) -> bool:
        return member_id in self.members

    def get(self, member_id: str) -> MemberMetadata:
        return self.members[member_id]

    @property
    def size(self) -> int:
        return len(self.members)

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id is not None and self.leader_id == member_id

    @property
    def is_consumer_group(self) -> bool:
        return self.protocol_type == CONSUMER_PROTOCOL_TYPE

    @property
    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def can_rebalance(self) -> bool:
        return self.state in _VALID_PREVIOUS[PREPARING_REBALANCE]

    def has_all_members_joined(self) -> bool:
        return len(self.members) == self.num_members_awaiting_join and not self.pending_members

    def not_yet_rejoined_members(self) -> list[MemberMetadata]:
        return [m for m in self.members.values() if not m.is_awaiting_join]

    def current_static_member_id(self, instance_id: str) -> str | None:
        return self.static_members.get(instance_id)

    def is_pending_member(self, member_id: str) -> bool:
        return member_id in self.pending_members

    def has_received_sync_from_all_members(self) -> bool:
        return not self.pending_sync_members

    def validate_member(self, member_id: str, group_instance_id: str | None) -> int | None:
        """The error a request naming this member gets (unknown, or a static member fenced by
        a newer instance), or None when the member is current."""
        if group_instance_id is not None:
            current = self.current_static_member_id(group_instance_id)
            if current is None:
                return errors.UNKNOWN_MEMBER_ID
            if current != member_id:
                return errors.FENCED_INSTANCE_ID
        if not self.has(member_id):
            return errors.UNKNOWN_MEMBER_ID
        return None

    def generate_member_id(self, client_id: str, group_instance_id: str | None) -> str:
        prefix = group_instance_id if group_instance_id is not None else client_id
        return f"{prefix}-{uuid.uuid4()}"

    # -- transitions ---------------------------------------------------------------------
    def transition_to(self, state: str, now_ms: int) -> None:
        if self.state not in _VALID_PREVIOUS[state]:
            raise IllegalStateError(f"group {self.group_id} should be in one of "
                                    f"{sorted(_VALID_PREVIOUS[state])} before moving to {state}; "
                                    f"it is {self.state}")
        self.state = state
        self.current_state_timestamp = now_ms

    # -- membership ----------------------------------------------------------------------
    def add(self, member: MemberMetadata, callback=None) -> None:
        if member.group_instance_id is not None:
            if member.group_instance_id in self.static_members:
                raise IllegalStateError(f"static member {member.group_instance_id} is already "
                                        f"in group {self.group_id}")
            self.static_members[member.group_instance_id] = member.member_id
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        self.supported_protocols.update(member.protocol_names())
        member.awaiting_join = callback
        if member.is_awaiting_join:
            self.num_members_awaiting_join += 1
        self.pending_members.discard(member.member_id)

    def remove(self, member_id: str) -> None:
        member = self.members.pop(member_id, None)
        if member is not None:
            self.supported_protocols.subtract(member.protocol_names())
            if member.is_awaiting_join:
                self.num_members_awaiting_join -= 1
            if member.group_instance_id is not None:
                self.static_members.pop(member.group_instance_id, None)
        if self.is_leader(member_id):
            self.leader_id = next(iter(self.members), None)
        self.pending_members.discard(member_id)
        self.pending_sync_members.discard(member_id)

    def maybe_elect_new_joined_leader(self) -> bool:
        """Keep the leader if it rejoined, else pick any member that did. False when the group
        has no leader or nobody rejoined."""
        if self.leader_id is None:
            return False
        leader = self.members[self.leader_id]
        if leader.is_awaiting_join:
            return True
        for mid, m in self.members.items():
            if m.is_awaiting_join:
                self.leader_id = mid
                return True
        return False

    def replace_static_member(self, instance_id: str, old_member_id: str,
                              new_member_id: str) -> MemberMetadata:
        member = self.members.pop(old_member_id, None)
        if member is None:
            raise IllegalStateError(f"cannot replace non-existing member {old_member_id}")
        # fence a duplicate instance parked in join or sync right away
        self.maybe_invoke_join_callback(member, JoinResult.error_result(
            old_member_id, errors.FENCED_INSTANCE_ID))
        self.maybe_invoke_sync_callback(member, SyncResult.error_result(errors.FENCED_INSTANCE_ID))
        member.member_id = new_member_id
        self.members[new_member_id] = member
        if self.is_leader(old_member_id):
            self.leader_id = new_member_id
        self.static_members[instance_id] = new_member_id
        return member

    def add_pending_member(self, member_id: str) -> None:
        if self.has(member_id):
            raise IllegalStateError(f"pending member {member_id} is already a member")
        self.pending_members.add(member_id)

    def update_member(self, member: MemberMetadata, protocols, callback) -> None:
        self.supported_protocols.subtract(member.protocol_names())
        member.supported_protocols = normalize_protocols(protocols)
        self.supported_protocols.update(member.protocol_names())
        if callback is not None and not member.is_awaiting_join:
            self.num_members_awaiting_join += 1
        elif callback is None and member.is_awaiting_join:
            self.num_members_awaiting_join -= 1
        member.awaiting_join = callback

    def maybe_invoke_join_callback(self, member: MemberMetadata, result) -> None:
        if member.is_awaiting_join:
            cb = member.awaiting_join
            member.awaiting_join = None
            self.num_members_awaiting_join -= 1
            cb(result)

    def maybe_invoke_sync_callback(self, member: MemberMetadata, result) -> bool:
        if member.is_awaiting_sync:
            cb = member.awaiting_sync
            member.awaiting_sync = None
            cb(result)
            return True
        return False

    # -- protocol selection --------------------------------------------------------------
    def _candidate_protocols(self) -> set[str]:
        n = len(self.members)
        return {p for p, c in self.supported_protocols.items() if c == n}

    def supports_protocols(self, protocol_type: str, protocols: set[str]) -> bool:
        if self.is_state(EMPTY):
            return bool(protocol_type) and bool(protocols)
        n = len(self.members)
        return (self.protocol_type == protocol_type
                and any(self.supported_protocols.get(p, 0) == n for p in protocols))

    def select_protocol(self) -> str:
        if not self.members:
            raise IllegalStateError("cannot select protocol for an empty group")
        candidates = self._candidate_protocols()
        votes = Counter(m.vote(candidates) for m in self.members.values())
        # most votes wins; ties go to the protocol voted for first (Kafka leaves it unspecified)
        return max(votes, key=lambda p: votes[p])

    def compute_subscribed_topics(self) -> set[str] | None:
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE:
            return None
        if not self.members:
            return set()
        if self.protocol_name is None:
            return None
        topics: set[str] = set()
        try:
            for m in self.members.values():
                topics |= parse_subscription_topics(m.metadata(self.protocol_name))
        except (ValueError, IllegalStateError):
            return None
        return topics

    def is_subscribed_to_topic(self, topic: str) -> bool:
        """True when a member consumes ``topic``, or when the group cannot tell (unparsable
        or non-consumer protocol), to be safe."""
        if self.subscribed_topics is None:
            return True
        return topic in self.subscribed_topics

    def init_next_generation(self, now_ms: int) -> None:
        self.generation_id += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.subscribed_topics = self.compute_subscribed_topics()
            self.transition_to(COMPLETING_REBALANCE, now_ms)
        else:
            self.protocol_name = None
            self.subscribed_topics = self.compute_subscribed_topics()
            self.transition_to(EMPTY, now_ms)
        self.pending_sync_members.clear()

    def current_member_metadata(self) -> list[tuple[str, str | None, bytes]]:
        if self.state in (DEAD, PREPARING_REBALANCE):
            raise IllegalStateError(f"cannot obtain member metadata for group in state {self.state}")
        return [(mid, m.group_instance_id, m.metadata(self.protocol_name))
                for mid, m in self.members.items()]

    def remove_expired_offsets(self, now_ms: int, retention_ms: int) -> dict:
        """Kafka's expiry rule: an Empty group's offsets expire ``retention_ms`` after the group
        became Empty; a Stable consumer group's offsets of topics nobody subscribes to expire
        ``retention_ms`` after their commit; a standalone group's (no protocol type) likewise;
        an explicit v1 expire timestamp overrides."""
        if self.protocol_type is not None and self.is_state(EMPTY):
            ts = self.current_state_timestamp
            return self._expire(now_ms, retention_ms,
                                lambda om: ts if ts is not None else om.commit_timestamp)
        if (self.protocol_type == CONSUMER_PROTOCOL_TYPE and self.subscribed_topics is not None
                and self.is_state(STABLE)):
            return self._expire(now_ms, retention_ms, lambda om: om.commit_timestamp,
                                self.subscribed_topics)
        if self.protocol_type is None:
            return self._expire(now_ms, retention_ms, lambda om: om.commit_timestamp)
        return {}

    def __repr__(self):
        return (f"GroupMetadata({self.group_id!r}, state={self.state}, "
                f"generation={self.generation_id}, members={list(self.members)})")
