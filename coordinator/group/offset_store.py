"""Group metadata and committed offsets on the compacted ``__consumer_offsets`` topic.

Records are written exactly as Apache Kafka writes them, so Kafka's own tools
(``kafka-console-consumer --formatter ...OffsetsMessageFormatter``, ``kafka-dump-log
--offsets-decoder``) can read our log, and we can read theirs. Their layouts are declared in
``wire.internal_topics.consumer_offsets`` (Kafka's OffsetCommitKey/Value and
GroupMetadataKey/Value); this module maps them to the coordinator's plain records. We write key
type 1 with value v3 (v1 for offsets with an explicit expire timestamp) and group metadata
value v3, like Kafka 2.3+; we read value versions 0-4. A null value (tombstone) deletes the key.
The records of KIP-848 consumer groups are mapped by ``coordinator.group.consumer_records``; a
replay hands them over per group.

Writing and loading go through the topic's
:class:`coordinator.runtime.CoordinatorRuntime` (which also describes the log interface);
:class:`OffsetsReplay` is what a replay of one partition builds.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field

from josefk.wire.internal_topics.consumer_offsets import (CONSUMER_OFFSETS, GROUP_METADATA,
                                                         OFFSET_COMMIT)
from josefk.wire.types import DecodeError

from ..runtime.runtime import CoordinatorRuntime
from . import consumer_records
from .group import CommitRecord, OffsetAndMetadata

log = logging.getLogger("josefk.coordinator")

OFFSET_VALUE_VERSION = 3
OFFSET_VALUE_VERSION_WITH_EXPIRE = 1
GROUP_VALUE_VERSION = 3
_Member = GROUP_METADATA.Value.MemberMetadata


# ---------------------------------------------------------------------------------------------
# Decoded values

@dataclass(slots=True)
class GroupMemberRecord:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout: int
    session_timeout: int
    subscription: bytes
    assignment: bytes


@dataclass(slots=True)
class GroupRecord:
    """A GroupMetadataValue."""
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int = -1
    members: list = field(default_factory=list)   # list[GroupMemberRecord]


@dataclass(slots=True)
class OffsetKey:
    group: str
    topic: str
    partition: int


@dataclass(slots=True)
class GroupKey:
    group: str


@dataclass(slots=True)
class LoadedPartition:
    """What one __consumer_offsets partition holds once replayed (last write wins)."""
    groups: dict = field(default_factory=dict)    # group id -> GroupRecord
    offsets: dict = field(default_factory=dict)   # group id -> {(topic, partition): CommitRecord}
    removed_groups: set = field(default_factory=set)
    # producer id -> {(group, topic, partition): CommitRecord} of transactions not yet ended
    pending_txn: dict = field(default_factory=dict)
    # group id -> the latest consumer group Record of each of its keys (tombstones included)
    consumer_groups: dict = field(default_factory=dict)
    # the records of other declared types (share groups...): [(CoordinatorRecord, key, value
    # bytes or None for a tombstone)], each key's last write, in log order
    records: list = field(default_factory=list)


# ---------------------------------------------------------------------------------------------
# Keys and values, through the declared records

def offset_commit_key(group: str, topic: str, partition: int) -> bytes:
    return OFFSET_COMMIT.key(group=group, topic=topic, partition=partition)


def group_metadata_key(group: str) -> bytes:
    return GROUP_METADATA.key(group=group)


def offset_commit_value(om: OffsetAndMetadata) -> bytes:
    """Value v3, or v1 when the commit carries an explicit expire timestamp (as Kafka does)."""
    if om.expire_timestamp is not None:
        return OFFSET_COMMIT.value(OFFSET_VALUE_VERSION_WITH_EXPIRE, offset=om.offset,
                                   metadata=om.metadata or "",
                                   commit_timestamp=om.commit_timestamp,
                                   expire_timestamp=om.expire_timestamp)
    return OFFSET_COMMIT.value(OFFSET_VALUE_VERSION, offset=om.offset,
                               leader_epoch=om.leader_epoch, metadata=om.metadata or "",
                               commit_timestamp=om.commit_timestamp)


def group_metadata_value(rec: GroupRecord) -> bytes:
    members = [_Member(member_id=m.member_id, group_instance_id=m.group_instance_id,
                       client_id=m.client_id, client_host=m.client_host,
                       rebalance_timeout=m.rebalance_timeout, session_timeout=m.session_timeout,
                       subscription=m.subscription, assignment=m.assignment)
               for m in rec.members]
    return GROUP_METADATA.value(GROUP_VALUE_VERSION, protocol_type=rec.protocol_type or "",
                                generation=rec.generation, protocol=rec.protocol,
                                leader=rec.leader,
                                current_state_timestamp=rec.current_state_timestamp,
                                members=members)


def read_key(key) -> OffsetKey | GroupKey:
    """A key as a plain record (for tools and tests; the replay reads the declared struct).
    Raises DecodeError for a key that is not one of ``__consumer_offsets``."""
    record, k = CONSUMER_OFFSETS.read_key(key)
    if record is OFFSET_COMMIT:
        return OffsetKey(k.group, k.topic, k.partition)
    if record is GROUP_METADATA:
        return GroupKey(k.group)
    return GroupKey(k.group_id)  # a consumer group's record


def read_offset_value(value) -> OffsetAndMetadata | None:
    if value is None:
        return None
    _version, v = OFFSET_COMMIT.read_value(value)
    return OffsetAndMetadata(v.offset, v.leader_epoch, v.metadata, v.commit_timestamp,
                             None if v.expire_timestamp == -1 else v.expire_timestamp)


def read_group_value(value) -> GroupRecord | None:
    if value is None:
        return None
    version, v = GROUP_METADATA.read_value(value)
    members = [GroupMemberRecord(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                                 # v0 has no rebalance timeout: Kafka takes the session's
                                 m.rebalance_timeout if version >= 1 else m.session_timeout,
                                 m.session_timeout, m.subscription, m.assignment)
               for m in v.members]
    return GroupRecord(v.protocol_type, v.generation, v.protocol, v.leader,
                       v.current_state_timestamp, members)


# ---------------------------------------------------------------------------------------------
# The store

class OffsetStore:
    """Writes and replays ``__consumer_offsets`` through ``log`` (see
    :mod:`coordinator.runtime.runtime` for the interface), by its runtime."""

    def __init__(self, log, compression: int = 0, topic: str = "__consumer_offsets"):
        self.runtime = CoordinatorRuntime(topic, log, compression)
        self._append = self.runtime.append

    @property
    def log(self):
        return self.runtime.log

    @log.setter
    def log(self, log) -> None:
        self.runtime.log = log

    def store_offsets(self, partition: int, group_id: str, offsets: dict,
                      now_ms: int, producer_id: int = -1, producer_epoch: int = -1):
        """Append one batch with an OffsetCommit record per {(topic, partition):
        OffsetAndMetadata}; await it for the batch's base offset. With a producer id the batch
        is transactional (TxnOffsetCommit): it counts once the producer's COMMIT marker follows.
        (A plain function returning the append's awaitable: one coroutine less per commit.)"""
        records = [(offset_commit_key(group_id, t, p), offset_commit_value(om), None, now_ms)
                   for (t, p), om in offsets.items()]
        return self._append(partition, records, now_ms, producer_id, producer_epoch)

    async def store_group(self, partition: int, group_id: str, record: GroupRecord,
                          now_ms: int) -> int:
        return await self._append(
            partition, [(group_metadata_key(group_id), group_metadata_value(record), None, now_ms)],
            now_ms)

    async def store_records(self, partition: int, records, now_ms: int) -> int:
        """Append consumer group Records (``coordinator.group.consumer_group.Record``) and raw
        (key, value) pairs, in that order, as one batch: all of them or none."""
        pairs = [consumer_records.encode(r) if not isinstance(r, tuple) or len(r) != 2 else r
                 for r in records]
        return await self._append(partition, [(k, v, None, now_ms) for k, v in pairs], now_ms)

    async def store_tombstones(self, partition: int, group_id: str, partitions,
                               delete_group, now_ms: int) -> int | None:
        """Tombstones for the given (topic, partition) offsets, and for the group itself:
        ``delete_group`` True deletes its classic group metadata, a list of consumer group
        Records its KIP-848 state. Returns the base offset, or None when there was nothing to
        write."""
        records = [(offset_commit_key(group_id, t, p), None, None, now_ms) for t, p in partitions]
        if delete_group is True:
            records.append((group_metadata_key(group_id), None, None, now_ms))
        elif delete_group:
            records += [(*consumer_records.encode(r), None, now_ms) for r in delete_group]
        if not records:
            return None
        return await self._append(partition, records, now_ms)

    def load(self, partition: int) -> LoadedPartition:
        """Replay the partition: last write wins, tombstones delete. Transactional offset
        commits (TxnOffsetCommit) count only once their producer's COMMIT marker is read. The
        runtime hands over each key's last write of the plain batches; a transaction marker
        comes after what was written before it, so the order of events is the log's."""
        r = OffsetsReplay(partition)
        self.runtime.replay(partition, r)
        return r.result()


class OffsetsReplay:
    """The state a replay of one __consumer_offsets partition builds, record by record (the
    replay side of the group coordinator's shard, see ``GroupCoordinator.replay``)."""

    compacted = True

    __slots__ = ("partition", "offsets", "pending", "groups", "removed", "consumer",
                 "others")

    def __init__(self, partition: int):
        self.partition = partition
        self.offsets: dict[tuple, CommitRecord] = {}          # (group, topic, partition) -> rec
        self.pending: dict[int, dict[tuple, CommitRecord]] = {}   # producer id -> uncommitted
        self.groups: dict[str, GroupRecord] = {}
        self.removed: set[str] = set()
        self.consumer: dict[str, dict] = {}   # group id -> {(record type, key): Record}
        self.others: dict = {}  # raw key -> (record, key, raw value) of other record types

    def replay(self, _partition, offset: int, producer_id: int, _epoch, key, value) -> None:
        self.apply(key, value, offset, producer_id)

    def replay_end_txn(self, _partition, producer_id: int, _epoch, commit: bool) -> None:
        self.end_txn(producer_id, commit)

    def end_txn(self, producer_id: int, commit: bool) -> None:
        txn = self.pending.pop(producer_id, {})
        if commit:
            offsets = self.offsets
            for k, cr in txn.items():
                if k not in offsets or offsets[k].older_than(cr):
                    offsets[k] = cr

    def apply(self, raw_key, raw_value, base_offset: int, producer_id: int) -> None:
        """One record (``producer_id`` >= 0: of a transactional batch)."""
        try:
            record, key = CONSUMER_OFFSETS.read_key(raw_key)
            if consumer_records.is_consumer_group_record(record):
                r = consumer_records.decode(record, key, raw_value)
                self.consumer.setdefault(r.group_id, {})[r.type, r.key] = r
                return
            if record is not OFFSET_COMMIT and record is not GROUP_METADATA:
                if raw_value is not None:
                    record.read_value(raw_value)  # undecodable: skipped below
                self.others.pop(bytes(raw_key), None)
                self.others[bytes(raw_key)] = (record, key,
                                               None if raw_value is None else bytes(raw_value))
                return
            is_offset = record is OFFSET_COMMIT
            if is_offset:
                om = read_offset_value(raw_value)
            else:
                g = read_group_value(raw_value)
        except DecodeError as e:
            # Kafka would abort the whole load; skipping one bad record is kinder
            log.warning("skipping an undecodable record of a batch at offset %d of "
                        "__consumer_offsets-%d: %s", base_offset, self.partition, e)
            return
        if is_offset:
            k = (key.group, key.topic, key.partition)
            cr = None if om is None else CommitRecord(base_offset, om)
            if producer_id >= 0:
                txn = self.pending.setdefault(producer_id, {})
                if cr is None:
                    txn.pop(k, None)
                else:
                    txn[k] = cr
            elif cr is None:
                self.offsets.pop(k, None)
            else:
                self.offsets[k] = cr
        elif g is None:
            self.groups.pop(key.group, None)
            self.removed.add(key.group)
        else:
            self.removed.discard(key.group)
            self.groups[key.group] = g

    def result(self) -> LoadedPartition:
        loaded = LoadedPartition(groups=self.groups, removed_groups=self.removed,
                                 pending_txn={pid: t for pid, t in self.pending.items() if t},
                                 consumer_groups={g: list(rs.values())
                                                  for g, rs in self.consumer.items()},
                                 records=list(self.others.values()))
        for (g, t, p), cr in self.offsets.items():
            loaded.offsets.setdefault(g, {})[(t, p)] = cr
        return loaded
