"""Group metadata and committed offsets on the compacted ``__consumer_offsets`` topic.

Records are written exactly as Apache Kafka writes them, so Kafka's own tools
(``kafka-console-consumer --formatter ...OffsetsMessageFormatter``, ``kafka-dump-log
--offsets-decoder``) can read our log, and we can read theirs. Their layouts are declared in
``wire.internal_topics.consumer_offsets`` (Kafka's OffsetCommitKey/Value and
GroupMetadataKey/Value); this module maps them to the coordinator's plain records. We write key
type 1 with value v3 (v1 for offsets with an explicit expire timestamp) and group metadata
value v3, like Kafka 2.3+; we read value versions 0-4. A null value (tombstone) deletes the key.
The records of KIP-848 consumer groups are mapped by ``coordinator.consumer_records``; a replay
hands them over per group.

The log interface the broker provides (duck-typed, see :class:`InMemoryOffsetsLog`)::

    log.append(partition: int, batch: bytearray) -> int | Awaitable[int]
        Append one magic-v2 record batch (built with base offset 0) to
        __consumer_offsets-<partition> as its leader; the log assigns the offsets and returns
        the batch's base offset. May return an awaitable (e.g. to wait for acks=all). On failure
        raise an exception carrying ``error_code`` (a Kafka error: NOT_LEADER_OR_FOLLOWER,
        NOT_ENOUGH_REPLICAS, MESSAGE_TOO_LARGE, ...), e.g. ``errors.CoordinatorLogError``.
    log.read_batches(partition: int) -> Iterable[(BatchHeader, buffer)]
        Every batch from the log start to the log end in offset order; ``BatchHeader`` is
        ``wire.batch.BatchHeader`` and ``header.pos`` locates the batch inside ``buffer``.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field

from josefk.wire import recscan
from josefk.wire import batch as wire_batch
from josefk.wire import records as wire_records
from josefk.wire.internal_topics.consumer_offsets import (CONSUMER_OFFSETS, GROUP_METADATA,
                                                         OFFSET_COMMIT)
from josefk.wire.types import DecodeError

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
    """Writes and replays ``__consumer_offsets`` through ``log`` (see the module docstring)."""

    def __init__(self, log, compression: int = 0):
        self.log = log
        self.compression = compression

    async def _append(self, partition: int, records, now_ms: int, producer_id=-1,
                      producer_epoch=-1) -> int:
        if len(records) == 1 and not self.compression and producer_id < 0:
            key, value, _headers, timestamp = records[0]  # an OffsetCommit's one record
            batch = wire_records.one_record_batch(key, value, timestamp)
        else:
            batch = wire_records.build_batch(
                records, compression=self.compression, now_ms=now_ms, producer_id=producer_id,
                producer_epoch=producer_epoch, transactional=producer_id >= 0)
        result = self.log.append(partition, batch)
        if type(result) is not int:  # the log waits for the acks (replication)
            result = await result
        return result

    def store_offsets(self, partition: int, group_id: str, offsets: dict,
                      now_ms: int, producer_id: int = -1, producer_epoch: int = -1):
        """Append one batch with an OffsetCommit record per {(topic, partition):
        OffsetAndMetadata}; await it for the batch's base offset. With a producer id the batch
        is transactional (TxnOffsetCommit): it counts once the producer's COMMIT marker follows.
        (A plain function returning `_append`'s coroutine: one coroutine less per commit.)"""
        records = [(offset_commit_key(group_id, t, p), offset_commit_value(om), None, now_ms)
                   for (t, p), om in offsets.items()]
        return self._append(partition, records, now_ms, producer_id, producer_epoch)

    async def store_group(self, partition: int, group_id: str, record: GroupRecord,
                          now_ms: int) -> int:
        return await self._append(
            partition, [(group_metadata_key(group_id), group_metadata_value(record), None, now_ms)],
            now_ms)

    async def store_records(self, partition: int, records, now_ms: int) -> int:
        """Append consumer group Records (``coordinator.consumer_group.Record``) and raw
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
        commits (TxnOffsetCommit) count only once their producer's COMMIT marker is read.

        Plain batches are reduced in bulk, natively (``recscan.latest``), to each key's last
        write, and only those are decoded: replaying a million commits of a few thousand keys
        decodes a few thousand records. A transaction marker first applies what was reduced so
        far, so the order of events is the log's."""
        r = _Replay(partition)
        latest: dict = {}   # raw key -> (raw value | None, batch base offset), last writes
        for header, buf in self.log.read_batches(partition):
            if header.is_control:
                r.apply_latest(latest)
                for rec in wire_records.iter_records(buf, header):
                    kind, _epoch = wire_records.parse_control_record(rec)
                    r.end_txn(header.producer_id, kind == wire_records.CONTROL_COMMIT)
                    break
                continue
            if header.is_transactional:
                for rec in wire_records.iter_records(buf, header):
                    r.apply(rec.key, rec.value, header.base_offset, header.producer_id)
                continue
            try:
                recscan.latest(wire_records.records_section(buf, header), header.count, latest,
                                header.base_offset)
            except ValueError as e:
                log.warning("skipping a malformed batch at offset %d of __consumer_offsets-%d: "
                            "%s", header.base_offset, partition, e)
        r.apply_latest(latest)
        return r.result()


class _Replay:
    """The state a replay of one __consumer_offsets partition builds, record by record."""

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

    def apply_latest(self, latest: dict) -> None:
        for key, (value, base_offset) in latest.items():
            self.apply(key, value, base_offset, -1)
        latest.clear()

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


class InMemoryOffsetsLog:
    """A list-of-batches implementation of the log interface, for tests and embedding.

    ``fail_next(error_code)`` makes the next append raise ``CoordinatorLogError``.
    """

    def __init__(self):
        self.batches: dict[int, list[bytearray]] = {}
        self.next_offset: dict[int, int] = {}
        self._fail: list[int] = []

    def fail_next(self, error_code: int) -> None:
        self._fail.append(error_code)

    def append(self, partition: int, batch: bytearray) -> int:
        if self._fail:
            from .errors import CoordinatorLogError
            raise CoordinatorLogError(self._fail.pop(0))
        batch = bytearray(batch)
        base = self.next_offset.get(partition, 0)
        h = wire_batch.read_header(batch, 0)
        wire_batch.set_base_offset(batch, 0, base)
        self.batches.setdefault(partition, []).append(batch)
        self.next_offset[partition] = base + h.last_offset_delta + 1
        return base

    def read_batches(self, partition: int):
        for b in self.batches.get(partition, []):
            yield wire_batch.read_header(b, 0), b

    def records(self, partition: int):
        """Every (offset, key, value) in the partition (test helper)."""
        out = []
        for h, b in self.read_batches(partition):
            for r in wire_records.iter_records(b, h):
                out.append((r.offset, None if r.key is None else bytes(r.key),
                            None if r.value is None else bytes(r.value)))
        return out
