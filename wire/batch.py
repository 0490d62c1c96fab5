"""Record batch (magic v2) headers: validation, CRC32C and in-place offset patching.

Layout (big-endian)::

    0  baseOffset int64          27 baseTimestamp int64
    8  batchLength int32         35 maxTimestamp int64
    12 partitionLeaderEpoch int32 43 producerId int64
    16 magic int8                51 producerEpoch int16
    17 crc uint32                53 baseSequence int32
    21 attributes int16          57 recordsCount int32
    23 lastOffsetDelta int32     61 records...

The CRC covers attributes..end, so baseOffset, batchLength, partitionLeaderEpoch and magic can be
patched without recomputing it. This module works on whole batches only; ``wire.records``
handles the records inside them.
"""
from __future__ import annotations

import struct

from crc32c import crc32c

from josefk.wire.errors import INVALID_RECORD, INVALID_TIMESTAMP

HEADER_SIZE = 61
LOG_OVERHEAD = 12  # baseOffset + batchLength: the bytes not counted by batchLength
MAGIC_OFFSET = 16
CRC_OFFSET = 17
ATTRIBUTES_OFFSET = 21

COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_FLAG = 0x08
TRANSACTIONAL_FLAG = 0x10
CONTROL_FLAG = 0x20

NO_PRODUCER_ID = -1
NO_SEQUENCE = -1

_prefix = struct.Struct(">qiib")
# The whole header, for code that unpacks many headers without building BatchHeaders.
HEADER = struct.Struct(">qiibIhiqqqhii")
_offset = struct.Struct(">q")
_length = struct.Struct(">i")
_attributes = struct.Struct(">h")
_timestamp = struct.Struct(">q")
_crc = struct.Struct(">I")
MAX_TIMESTAMP_OFFSET = 35
_LENGTH_OFFSET = 8
RECORDS_COUNT_OFFSET = 57


class CorruptRecord(ValueError):
    """Invalid batch framing or a CRC mismatch (Kafka's CORRUPT_MESSAGE)."""


class InvalidRecord(ValueError):
    """A well-formed batch the broker must refuse, e.g. an old magic (Kafka's INVALID_RECORD,
    or ``error_code``). ``record_errors`` lists ``(index of the record in its batch, message)``
    where known."""

    error_code = INVALID_RECORD

    def __init__(self, message: str, record_errors=()):
        super().__init__(message)
        self.record_errors = list(record_errors)


class InvalidTimestamp(InvalidRecord):
    """A record timestamp outside what the topic accepts (Kafka's INVALID_TIMESTAMP)."""

    error_code = INVALID_TIMESTAMP


class BatchHeader:
    """The fields of one batch header plus its position and total size in the buffer."""

    __slots__ = ("pos", "size", "base_offset", "leader_epoch", "magic", "crc", "attributes",
                 "last_offset_delta", "base_timestamp", "max_timestamp", "producer_id",
                 "producer_epoch", "base_sequence", "count")

    def __init__(self, pos, size, fields):
        self.pos = pos
        self.size = size
        (self.base_offset, _len, self.leader_epoch, self.magic, self.crc, self.attributes,
         self.last_offset_delta, self.base_timestamp, self.max_timestamp, self.producer_id,
         self.producer_epoch, self.base_sequence, self.count) = fields

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_FLAG)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_FLAG)

    @property
    def last_sequence(self) -> int:
        if self.base_sequence < 0:
            return NO_SEQUENCE
        return (self.base_sequence + self.last_offset_delta) & 0x7FFFFFFF

    def __repr__(self):
        return (f"BatchHeader(pos={self.pos}, size={self.size}, base_offset={self.base_offset}, "
                f"count={self.count}, pid={self.producer_id}, seq={self.base_sequence})")


def read_header(buf, pos: int = 0) -> BatchHeader:
    """Parse the header at ``pos`` without validating it (for data the broker wrote itself)."""
    fields = HEADER.unpack_from(buf, pos)
    return BatchHeader(pos, fields[1] + LOG_OVERHEAD, fields)


def validate_batches(buf) -> list[BatchHeader]:
    """Check a client's record set (one or more batches) and return their headers.

    Raises CorruptRecord for bad framing or CRC, InvalidRecord for a magic other than 2.
    """
    headers = []
    pos = 0
    end = len(buf)
    if end == 0:
        raise CorruptRecord("empty record set")
    while pos < end:
        if end - pos < HEADER_SIZE:
            if end - pos >= 17 and buf[pos + MAGIC_OFFSET] != 2:
                raise InvalidRecord(f"record batch magic {buf[pos + MAGIC_OFFSET]} is not 2")
            raise CorruptRecord("record batch truncated")
        fields = HEADER.unpack_from(buf, pos)
        size = fields[1] + LOG_OVERHEAD
        magic = fields[3]
        if magic != 2:
            raise InvalidRecord(f"record batch magic {magic} is not 2")
        if size < HEADER_SIZE or pos + size > end:
            raise CorruptRecord(f"record batch length {fields[1]} out of range")
        if crc32c(memoryview(buf)[pos + ATTRIBUTES_OFFSET:pos + size]) != fields[4]:
            raise CorruptRecord("record batch CRC mismatch")
        h = BatchHeader(pos, size, fields)
        if h.count <= 0 or h.last_offset_delta != h.count - 1:
            raise CorruptRecord(f"record count {h.count} disagrees with lastOffsetDelta "
                                f"{h.last_offset_delta}")
        headers.append(h)
        pos += size
    return headers


def iter_headers(buf, pos: int = 0, end: int | None = None):
    """Yield headers of complete batches in ``buf[pos:end]`` (stops at a partial batch)."""
    end = len(buf) if end is None else end
    while end - pos >= HEADER_SIZE:
        h = read_header(buf, pos)
        if h.size < HEADER_SIZE or pos + h.size > end:
            return
        yield h
        pos += h.size


def record_count(buf) -> int:
    """Records in a record set, from its batch headers: two ints for the usual single batch."""
    n = len(buf)
    if n >= HEADER_SIZE and _length.unpack_from(buf, _LENGTH_OFFSET)[0] + LOG_OVERHEAD == n:
        return _length.unpack_from(buf, RECORDS_COUNT_OFFSET)[0]
    return sum(h.count for h in iter_headers(buf))


def crc_ok(buf, h: BatchHeader) -> bool:
    return crc32c(memoryview(buf)[h.pos + ATTRIBUTES_OFFSET:h.pos + h.size]) == h.crc


def set_base_offset(buf, pos: int, offset: int) -> None:
    _offset.pack_into(buf, pos, offset)


def compute_crc(buf, pos: int, size: int) -> int:
    return crc32c(memoryview(buf)[pos + ATTRIBUTES_OFFSET:pos + size])


def set_max_timestamp(buf, h: BatchHeader, timestamp: int, log_append_time: bool) -> None:
    """Rewrite the batch's maxTimestamp (and its timestamp type) in place and recompute the CRC,
    as Kafka's LogValidator does; ``h`` follows."""
    attrs = (h.attributes | TIMESTAMP_TYPE_FLAG if log_append_time
             else h.attributes & ~TIMESTAMP_TYPE_FLAG)
    _attributes.pack_into(buf, h.pos + ATTRIBUTES_OFFSET, attrs)
    _timestamp.pack_into(buf, h.pos + MAX_TIMESTAMP_OFFSET, timestamp)
    crc = compute_crc(buf, h.pos, h.size)
    _crc.pack_into(buf, h.pos + CRC_OFFSET, crc)
    h.attributes = attrs
    h.max_timestamp = timestamp
    h.crc = crc
