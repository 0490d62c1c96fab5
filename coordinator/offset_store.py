"""Group metadata and committed offsets on the compacted ``__consumer_offsets`` topic.

Records are written exactly as Apache Kafka writes them, so Kafka's own tools
(``kafka-console-consumer --formatter ...OffsetsMessageFormatter``, ``kafka-dump-log
--offsets-decoder``) can read our log, and we can read theirs. Classic (non-flexible) encoding,
big-endian, STRING = int16 length + UTF-8 (-1 = null), BYTES = int32 length + bytes::

    key   version 0/1  OffsetCommitKey    group STRING, topic STRING, partition INT32
    key   version 2    GroupMetadataKey   group STRING
    value OffsetCommitValue   v3: offset INT64, leader_epoch INT32, metadata STRING,
                                  commit_timestamp INT64
                              v1: offset INT64, metadata STRING, commit_timestamp INT64,
                                  expire_timestamp INT64   (written for explicit retention)
    value GroupMetadataValue  v3: protocol_type STRING, generation INT32,
                                  protocol STRING?, leader STRING?, current_state_timestamp INT64,
                                  members [member_id STRING, group_instance_id STRING?,
                                           client_id STRING, client_host STRING,
                                           rebalance_timeout INT32, session_timeout INT32,
                                           subscription BYTES, assignment BYTES]
    a null value (tombstone) deletes the key.

Every value is prefixed by its int16 version. We write key v1 / value v3 (v1 for offsets with an
explicit expire timestamp) like Kafka 2.3+; we read value versions 0-3 and the flexible v4.

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
import struct
from dataclasses import dataclass, field

from josefk.wire import recscan
from josefk.wire import batch as wire_batch
from josefk.wire import records as wire_records

from .group import CommitRecord, OffsetAndMetadata

log = logging.getLogger("josefk.coordinator")

OFFSET_KEY_VERSION = 1
GROUP_KEY_VERSION = 2
OFFSET_VALUE_VERSION = 3
OFFSET_VALUE_VERSION_WITH_EXPIRE = 1
GROUP_VALUE_VERSION = 3

_i16 = struct.Struct(">h")
_i32 = struct.Struct(">i")
_i64 = struct.Struct(">q")
_offset_epoch = struct.Struct(">qi")


class RecordFormatError(ValueError):
    """A key or value of __consumer_offsets that does not decode."""


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


# ---------------------------------------------------------------------------------------------
# Encoding

def _put_string(out: bytearray, s: str | None) -> None:
    if s is None:
        out += _i16.pack(-1)
        return
    b = s.encode("utf-8")
    if len(b) > 0x7FFF:
        raise RecordFormatError("string longer than 32767 bytes")
    out += _i16.pack(len(b))
    out += b


def _put_bytes(out: bytearray, b: bytes | None) -> None:
    if b is None:
        out += _i32.pack(-1)
        return
    out += _i32.pack(len(b))
    out += b


def offset_commit_key(group: str, topic: str, partition: int) -> bytes:
    out = bytearray(_i16.pack(OFFSET_KEY_VERSION))
    _put_string(out, group)
    _put_string(out, topic)
    out += _i32.pack(partition)
    return bytes(out)


def group_metadata_key(group: str) -> bytes:
    out = bytearray(_i16.pack(GROUP_KEY_VERSION))
    _put_string(out, group)
    return bytes(out)


def offset_commit_value(om: OffsetAndMetadata) -> bytes:
    """Value v3, or v1 when the commit carries an explicit expire timestamp (as Kafka does)."""
    if om.expire_timestamp is not None:
        out = bytearray(_i16.pack(OFFSET_VALUE_VERSION_WITH_EXPIRE))
        out += _i64.pack(om.offset)
        _put_string(out, om.metadata or "")
        out += _i64.pack(om.commit_timestamp)
        out += _i64.pack(om.expire_timestamp)
        return bytes(out)
    out = bytearray(_i16.pack(OFFSET_VALUE_VERSION))
    out += _i64.pack(om.offset)
    out += _i32.pack(om.leader_epoch)
    _put_string(out, om.metadata or "")
    out += _i64.pack(om.commit_timestamp)
    return bytes(out)


def group_metadata_value(rec: GroupRecord) -> bytes:
    out = bytearray(_i16.pack(GROUP_VALUE_VERSION))
    _put_string(out, rec.protocol_type or "")
    out += _i32.pack(rec.generation)
    _put_string(out, rec.protocol)
    _put_string(out, rec.leader)
    out += _i64.pack(rec.current_state_timestamp)
    out += _i32.pack(len(rec.members))
    for m in rec.members:
        _put_string(out, m.member_id)
        _put_string(out, m.group_instance_id)
        _put_string(out, m.client_id)
        _put_string(out, m.client_host)
        out += _i32.pack(m.rebalance_timeout)
        out += _i32.pack(m.session_timeout)
        _put_bytes(out, m.subscription)
        _put_bytes(out, m.assignment)
    return bytes(out)


# ---------------------------------------------------------------------------------------------
# Decoding

class _Reader:
    """Reads classic or flexible (compact, tagged) fields from a buffer."""

    __slots__ = ("buf", "pos", "flexible")

    def __init__(self, buf, pos=0, flexible=False):
        self.buf = memoryview(buf)
        self.pos = pos
        self.flexible = flexible

    def _take(self, n):
        if n < 0 or self.pos + n > len(self.buf):
            raise RecordFormatError("truncated record")
        b = self.buf[self.pos:self.pos + n]
        self.pos += n
        return b

    def int8(self):
        return int.from_bytes(self._take(1), "big", signed=True)

    def int16(self):
        return _i16.unpack(self._take(2))[0]

    def int32(self):
        return _i32.unpack(self._take(4))[0]

    def int64(self):
        return _i64.unpack(self._take(8))[0]

    def uvarint(self):
        shift = result = 0
        while True:
            b = self._take(1)[0]
            result |= (b & 0x7F) << shift
            if b < 0x80:
                return result
            shift += 7
            if shift > 63:
                raise RecordFormatError("varint too long")

    def string(self, nullable=False):
        n = self.uvarint() - 1 if self.flexible else self.int16()
        if n < 0:
            if not nullable:
                raise RecordFormatError("null in a non-nullable string")
            return None
        try:
            return str(self._take(n), "utf-8")
        except UnicodeDecodeError as e:
            raise RecordFormatError(str(e)) from None

    def bytes_(self):
        n = self.uvarint() - 1 if self.flexible else self.int32()
        if n < 0:
            return b""
        return bytes(self._take(n))

    def array_len(self):
        n = self.uvarint() - 1 if self.flexible else self.int32()
        return max(n, 0)

    def tagged_fields(self):
        if not self.flexible:
            return
        for _ in range(self.uvarint()):
            self.uvarint()                 # tag
            self._take(self.uvarint())     # size + data (unknown tags are skipped)


def _strings_at(buf, pos: int, n: int):
    """``n`` non-null classic strings from ``pos``: (list, position after), or None when they
    are not all well-formed (the caller then takes the reader's path, which says why)."""
    out = []
    try:
        for _ in range(n):
            (size,) = _i16.unpack_from(buf, pos)
            pos += 2
            if size < 0 or pos + size > len(buf):
                return None
            out.append(str(buf[pos:pos + size], "utf-8"))
            pos += size
    except (struct.error, UnicodeDecodeError):
        return None
    return out, pos


def read_key(key) -> OffsetKey | GroupKey:
    if key is None:
        raise RecordFormatError("__consumer_offsets record without a key")
    if key[:2] in (b"\x00\x00", b"\x00\x01") and len(key) >= 8:  # offset keys: the most
        got = _strings_at(key, 2, 2)
        if got is not None and got[1] + 4 <= len(key):
            (group, topic), pos = got
            return OffsetKey(group, topic, _i32.unpack_from(key, pos)[0])
    r = _Reader(key)
    version = r.int16()
    if version in (0, 1):
        return OffsetKey(r.string(), r.string(), r.int32())
    if version == 2:
        return GroupKey(r.string())
    raise RecordFormatError(f"unknown __consumer_offsets key version {version}")


def read_offset_value(value) -> OffsetAndMetadata | None:
    if value is None:
        return None
    if value[:2] == b"\x00\x03" and len(value) >= 24:  # what Kafka 2.3+ and we write
        offset, leader_epoch = _offset_epoch.unpack_from(value, 2)
        got = _strings_at(value, 14, 1)
        if got is not None and got[1] + 8 <= len(value):
            (metadata,), pos = got
            return OffsetAndMetadata(offset, leader_epoch, metadata,
                                     _i64.unpack_from(value, pos)[0], None)
    r = _Reader(value)
    version = r.int16()
    if not 0 <= version <= 4:
        raise RecordFormatError(f"unknown offset commit value version {version}")
    r.flexible = version >= 4
    offset = r.int64()
    leader_epoch = r.int32() if version >= 3 else -1
    metadata = r.string()
    commit_ts = r.int64()
    expire = r.int64() if version == 1 else -1
    r.tagged_fields()
    return OffsetAndMetadata(offset, leader_epoch, metadata, commit_ts,
                             None if expire == -1 else expire)


def read_group_value(value) -> GroupRecord | None:
    if value is None:
        return None
    r = _Reader(value)
    version = r.int16()
    if not 0 <= version <= 4:
        raise RecordFormatError(f"unknown group metadata value version {version}")
    r.flexible = version >= 4
    protocol_type = r.string()
    generation = r.int32()
    protocol = r.string(nullable=True)
    leader = r.string(nullable=True)
    state_ts = r.int64() if version >= 2 else -1
    members = []
    for _ in range(r.array_len()):
        member_id = r.string()
        instance_id = r.string(nullable=True) if version >= 3 else None
        client_id = r.string()
        client_host = r.string()
        rebalance_timeout = r.int32() if version >= 1 else None
        session_timeout = r.int32()
        if rebalance_timeout is None:
            rebalance_timeout = session_timeout
        subscription = r.bytes_()
        assignment = r.bytes_()
        r.tagged_fields()
        members.append(GroupMemberRecord(member_id, instance_id, client_id, client_host,
                                         rebalance_timeout, session_timeout, subscription,
                                         assignment))
    r.tagged_fields()
    return GroupRecord(protocol_type, generation, protocol, leader, state_ts, members)


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

    async def store_tombstones(self, partition: int, group_id: str, partitions,
                               delete_group: bool, now_ms: int) -> int | None:
        """Tombstones for the given (topic, partition) offsets, and for the group metadata when
        ``delete_group``. Returns the base offset, or None when there was nothing to write."""
        records = [(offset_commit_key(group_id, t, p), None, None, now_ms) for t, p in partitions]
        if delete_group:
            records.append((group_metadata_key(group_id), None, None, now_ms))
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

    __slots__ = ("partition", "offsets", "pending", "groups", "removed")

    def __init__(self, partition: int):
        self.partition = partition
        self.offsets: dict[tuple, CommitRecord] = {}          # (group, topic, partition) -> rec
        self.pending: dict[int, dict[tuple, CommitRecord]] = {}   # producer id -> uncommitted
        self.groups: dict[str, GroupRecord] = {}
        self.removed: set[str] = set()

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
            key = read_key(raw_key)
            if isinstance(key, OffsetKey):
                om = read_offset_value(raw_value)
            else:
                g = read_group_value(raw_value)
        except RecordFormatError as e:
            # Kafka would abort the whole load; skipping one bad record is kinder
            log.warning("skipping an undecodable record of a batch at offset %d of "
                        "__consumer_offsets-%d: %s", base_offset, self.partition, e)
            return
        if isinstance(key, OffsetKey):
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
                                 pending_txn={pid: t for pid, t in self.pending.items() if t})
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
