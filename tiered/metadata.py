"""The remote log's metadata as Kafka keeps it in ``__remote_log_metadata``: the three record
types of its TopicBasedRemoteLogMetadataManager (RemoteLogSegmentMetadataRecord,
RemoteLogSegmentMetadataUpdateRecord, RemotePartitionDeleteMetadataRecord, Kafka's JSON schemas
in storage/src/main/resources/message/), framed as its RemoteLogMetadataSerde writes a record's
value: the api key and the version as unsigned varints, then the flexible-version fields.

`serialize` / `deserialize` are that serde; `metadata_partition` is Kafka's
RemoteLogMetadataTopicPartitioner (which partition of the topic holds a user partition's
events); `PartitionSegments` folds one user partition's events into its remote segments, as
Kafka's RemoteLogMetadataCache does.
"""
from __future__ import annotations

import base64
import logging
import threading
import uuid
from bisect import bisect_left
from dataclasses import dataclass, field

from josefk.wire.compiler import Message
from josefk.wire.hashing import murmur2
from josefk.wire.schema import (BOOL, BYTES, INT8, INT32, INT64, STRING, UUID, Field, Struct,
                                Versions)
from josefk.wire.types import DecodeError, read_uvarint, write_uvarint

log = logging.getLogger("josefk.tiered")

TOPIC = "__remote_log_metadata"

# RemoteLogSegmentState ids
COPY_SEGMENT_STARTED, COPY_SEGMENT_FINISHED = 0, 1
DELETE_SEGMENT_STARTED, DELETE_SEGMENT_FINISHED = 2, 3
# RemotePartitionDeleteState ids
DELETE_PARTITION_MARKED, DELETE_PARTITION_STARTED, DELETE_PARTITION_FINISHED = 0, 1, 2

# A state may only follow the states Kafka's RemoteLogSegmentState.isValidTransition allows.
_NEXT = {COPY_SEGMENT_STARTED: {COPY_SEGMENT_FINISHED, DELETE_SEGMENT_STARTED},
         COPY_SEGMENT_FINISHED: {DELETE_SEGMENT_STARTED},
         DELETE_SEGMENT_STARTED: {DELETE_SEGMENT_FINISHED},
         DELETE_SEGMENT_FINISHED: set()}


def _topic_id_partition():
    return [Field("name", STRING), Field("id", UUID), Field("partition", INT32)]


def _segment_id():
    return Field("remote_log_segment_id", Struct([
        Field("topic_id_partition", Struct(_topic_id_partition()),
              struct="TopicIdPartitionEntry"),
        Field("id", UUID),
    ]), struct="RemoteLogSegmentIdEntry")


class MetadataRecord:
    """One record type of the serde: its api key, versions (every one flexible) and layout."""

    def __init__(self, api_key: int, name: str, versions: str, fields):
        self.api_key = api_key
        self.name = name
        self.versions = Versions(versions)
        self.Struct = Message.build(self, name, fields)

    def is_flexible(self, version: int) -> bool:
        return True


SEGMENT_METADATA = MetadataRecord(0, "RemoteLogSegmentMetadataRecord", "0-1", [
    _segment_id(),
    Field("start_offset", INT64),
    Field("end_offset", INT64),
    Field("broker_id", INT32),
    Field("max_timestamp_ms", INT64),
    Field("event_timestamp_ms", INT64),
    Field("segment_leader_epochs", [Field("leader_epoch", INT32), Field("offset", INT64)],
          struct="SegmentLeaderEpochEntry"),
    Field("segment_size_in_bytes", INT32),
    Field("custom_metadata", BYTES, nullable="0+", default=None),
    Field("remote_log_segment_state", INT8),
    Field("txn_index_empty", BOOL, tag=0),
    Field("broker_leader_epoch", INT32, "1+", tag=1, default=-1),
])

SEGMENT_UPDATE = MetadataRecord(1, "RemoteLogSegmentMetadataUpdateRecord", "0-1", [
    _segment_id(),
    Field("broker_id", INT32),
    Field("event_timestamp_ms", INT64),
    Field("custom_metadata", BYTES, nullable="0+", default=None),
    Field("remote_log_segment_state", INT8),
    Field("broker_leader_epoch", INT32, "1+", tag=0, default=-1),
    Field("end_offset", INT64, "1+", tag=1, default=-1),
])

PARTITION_DELETE = MetadataRecord(2, "RemotePartitionDeleteMetadataRecord", "0-1", [
    Field("topic_id_partition", Struct(_topic_id_partition()), struct="TopicIdPartitionEntry"),
    Field("broker_id", INT32),
    Field("event_timestamp_ms", INT64),
    Field("remote_partition_delete_state", INT8),
    Field("broker_leader_epoch", INT32, "1+", tag=0, default=-1),
    Field("end_offset", INT64, "1+", tag=1, default=-1),
])

RECORDS = {r.api_key: r for r in (SEGMENT_METADATA, SEGMENT_UPDATE, PARTITION_DELETE)}
# Kafka 3.9 writes and reads version 0 (version 1 adds tagged fields only)
VERSION = 0


def serialize(record: MetadataRecord, message, version: int = VERSION) -> bytes:
    out = bytearray()
    write_uvarint(out, record.api_key)
    write_uvarint(out, version)
    message.encode(version, out)
    return bytes(out)


def deserialize(data: bytes):
    """``(record type, version, message)``; DecodeError for an unknown type or version."""
    try:
        api_key, p = read_uvarint(data, 0)
        version, p = read_uvarint(data, p)
    except IndexError:
        raise DecodeError("remote log metadata record truncated") from None
    record = RECORDS.get(api_key)
    if record is None or version not in record.versions:
        raise DecodeError(f"unknown remote log metadata record {api_key} v{version}")
    return record, version, record.Struct.decode(data, version, p)[0]


def uuid_text(u: uuid.UUID) -> str:
    """A UUID as Kafka prints it (Uuid.toString: URL-safe base64 without padding)."""
    return base64.urlsafe_b64encode(u.bytes).decode().rstrip("=")


def partition_of(record: MetadataRecord, msg) -> tuple[uuid.UUID, int]:
    """(topic id, partition) of the user partition an event is about."""
    tip = msg.topic_id_partition if record is PARTITION_DELETE \
        else msg.remote_log_segment_id.topic_id_partition
    return tip.id, tip.partition


def _segment_id_of(record: MetadataRecord, leader, seg):
    s = record.Struct
    return s.RemoteLogSegmentIdEntry(
        topic_id_partition=s.TopicIdPartitionEntry(name=leader.topic, id=leader.topic_id,
                                                   partition=leader.partition),
        id=seg.segment_id)


def segment_metadata(leader, broker_id: int, seg: RemoteSegment, now_ms: int):
    """The RemoteLogSegmentMetadataRecord that starts a copy (COPY_SEGMENT_STARTED)."""
    s = SEGMENT_METADATA.Struct
    return SEGMENT_METADATA, s(
        remote_log_segment_id=_segment_id_of(SEGMENT_METADATA, leader, seg),
        start_offset=seg.start_offset, end_offset=seg.end_offset, broker_id=broker_id,
        max_timestamp_ms=seg.max_timestamp_ms, event_timestamp_ms=now_ms,
        segment_leader_epochs=[s.SegmentLeaderEpochEntry(leader_epoch=e, offset=o)
                               for e, o in seg.leader_epochs],
        segment_size_in_bytes=seg.size, custom_metadata=None,
        remote_log_segment_state=COPY_SEGMENT_STARTED, txn_index_empty=seg.txn_index_empty,
        broker_leader_epoch=leader.leader_epoch)


def segment_update(leader, broker_id: int, seg: RemoteSegment, state: int, now_ms: int):
    """The RemoteLogSegmentMetadataUpdateRecord that moves a segment to ``state``."""
    return SEGMENT_UPDATE, SEGMENT_UPDATE.Struct(
        remote_log_segment_id=_segment_id_of(SEGMENT_UPDATE, leader, seg), broker_id=broker_id,
        event_timestamp_ms=now_ms, custom_metadata=None, remote_log_segment_state=state,
        broker_leader_epoch=leader.leader_epoch, end_offset=seg.end_offset)


def partition_delete(leader, broker_id: int, state: int, now_ms: int):
    """The RemotePartitionDeleteMetadataRecord that moves a deleted partition to ``state``."""
    s = PARTITION_DELETE.Struct
    return PARTITION_DELETE, s(
        topic_id_partition=s.TopicIdPartitionEntry(name=leader.topic, id=leader.topic_id,
                                                   partition=leader.partition),
        broker_id=broker_id, event_timestamp_ms=now_ms, remote_partition_delete_state=state,
        broker_leader_epoch=leader.leader_epoch)


# -- Kafka's RemoteLogMetadataTopicPartitioner ---------------------------------------------------

def _java_int(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >= 1 << 31 else v


def _long_hash(v: int) -> int:
    v &= 0xFFFFFFFFFFFFFFFF
    return _java_int(v ^ (v >> 32))


def metadata_partition(topic_id: uuid.UUID, partition: int, partitions: int) -> int:
    """The partition of ``__remote_log_metadata`` (of ``partitions``) that holds the events
    of a user partition: murmur2 of Objects.hash(least, most significant bits, partition)."""
    most, least = topic_id.int >> 64, topic_id.int & 0xFFFFFFFFFFFFFFFF
    h = 1
    for part in (_long_hash(least), _long_hash(most), partition):
        h = _java_int(31 * h + part)
    return (murmur2((h & 0xFFFFFFFF).to_bytes(4, "big")) & 0x7FFFFFFF) % partitions


# -- one user partition's remote segments ----------------------------------------------------------

@dataclass
class RemoteSegment:
    """A remote segment's metadata, as its RemoteLogSegmentMetadataRecord and updates say."""
    segment_id: uuid.UUID
    start_offset: int
    end_offset: int
    max_timestamp_ms: int
    size: int
    leader_epochs: list[tuple[int, int]] = field(default_factory=list)
    state: int = COPY_SEGMENT_STARTED
    txn_index_empty: bool = True


class PartitionSegments:
    """The remote segments of one user partition, folded from its metadata events: the copied
    ones (COPY_SEGMENT_FINISHED) sorted by start offset serve reads and retention; the others
    are uploads or deletions a crash interrupted, cleaned up by the next leader."""

    def __init__(self):
        self.segments: dict[uuid.UUID, RemoteSegment] = {}
        self._copied: tuple[list[RemoteSegment], list[int]] | None = None
        self.deleted = False  # a RemotePartitionDeleteMetadataRecord was seen
        # the manager's thread applies events while reads (the event loop, fetch threads) ask
        self._lock = threading.Lock()

    def apply(self, record: MetadataRecord, msg) -> None:
        with self._lock:
            self._copied = None
            self._apply(record, msg)

    def _apply(self, record: MetadataRecord, msg) -> None:
        if record is SEGMENT_METADATA:
            sid = msg.remote_log_segment_id.id
            self.segments[sid] = RemoteSegment(
                sid, msg.start_offset, msg.end_offset, msg.max_timestamp_ms,
                msg.segment_size_in_bytes,
                [(e.leader_epoch, e.offset) for e in msg.segment_leader_epochs],
                msg.remote_log_segment_state, msg.txn_index_empty)
        elif record is SEGMENT_UPDATE:
            seg = self.segments.get(msg.remote_log_segment_id.id)
            if seg is None or msg.remote_log_segment_state not in _NEXT[seg.state]:
                return  # an event out of order: Kafka's cache refuses it too
            seg.state = msg.remote_log_segment_state
            if seg.state == DELETE_SEGMENT_FINISHED:
                del self.segments[seg.segment_id]
        elif record is PARTITION_DELETE:
            self.deleted = msg.remote_partition_delete_state == DELETE_PARTITION_FINISHED

    def copied(self) -> list[RemoteSegment]:
        """The segments whose copy finished, by start offset (a list never changed after)."""
        return self._sorted()[0]

    def _sorted(self) -> tuple[list[RemoteSegment], list[int]]:
        """(the copied segments by start offset, their end offsets), computed once per
        change."""
        copied = self._copied
        if copied is None:
            with self._lock:
                if self._copied is None:
                    segs = sorted((s for s in self.segments.values()
                                   if s.state == COPY_SEGMENT_FINISHED),
                                  key=lambda s: s.start_offset)
                    self._copied = (segs, [s.end_offset for s in segs])
                copied = self._copied
        return copied

    def unfinished(self) -> list[RemoteSegment]:
        """Segments left half copied or half deleted."""
        with self._lock:
            return [s for s in self.segments.values()
                    if s.state in (COPY_SEGMENT_STARTED, DELETE_SEGMENT_STARTED)]

    def segment_for(self, offset: int) -> RemoteSegment | None:
        """The first copied segment ending at or past ``offset``: the one holding it, or the
        next one when ``offset`` falls in a hole of the log (compaction, a transaction
        marker's offset); None past the last."""
        segs, ends = self._sorted()
        i = bisect_left(ends, offset)
        return segs[i] if i < len(segs) else None

    @property
    def start_offset(self) -> int | None:
        segs = self.copied()
        return segs[0].start_offset if segs else None

    @property
    def end_offset(self) -> int:
        """The last offset copied, -1 when nothing is."""
        segs = self.copied()
        return segs[-1].end_offset if segs else -1

    @property
    def size(self) -> int:
        return sum(s.size for s in self.copied())


def fold(values, topic_id: uuid.UUID, partition: int) -> PartitionSegments:
    """One user partition's remote segments out of its metadata partition's events."""
    segs = PartitionSegments()
    for value in values:
        try:
            record, _v, msg = deserialize(value)
        except DecodeError as e:  # a record of a later Kafka, or foreign: skipped
            log.warning("%s: skipping a record it cannot read: %s", TOPIC, e)
            continue
        if partition_of(record, msg) == (topic_id, partition):
            segs.apply(record, msg)
    return segs
