"""Message formats v0 and v1 (magic 0 and 1), Kafka's "legacy" records, and their conversion.

Layout of one message (big-endian)::

    offset int64, messageSize int32,
    crc uint32 (CRC-32 over magic..end), magic int8, attributes int8 (bits 0-2 codec,
    bit 3 LogAppendTime in v1), timestamp int64 (v1 only), key bytes, value bytes

A compressed message is a wrapper whose value is the compressed message set of its inner
messages. Inner offsets are absolute in v0; in v1 they are relative (0..n-1) and the wrapper
carries the absolute offset of the last inner message.

Only old protocol versions come here: Produce v0-2 data is read as records (`to_records`)
that storage's log validator stores as one v2 batch, and Fetch v0-3 answers are converted down
from the stored v2 batches (`down_convert`). Current clients never touch this module.
"""
from __future__ import annotations

import struct
import zlib

import xxhash

from .batch import (COMPRESSION_MASK, TIMESTAMP_TYPE_FLAG, CorruptRecord, InvalidRecord,
                    iter_headers)
from .records import LZ4, NONE, ZSTD, compress, decompress, iter_records

NO_TIMESTAMP = -1
_prefix = struct.Struct(">qiIbb")     # offset, size, crc, magic, attributes
_v1_timestamp = struct.Struct(">q")
_i32 = struct.Struct(">i")
_crc = struct.Struct(">I")
_PREFIX_SIZE = _prefix.size            # 18
_MIN_SIZE = {0: 14, 1: 22}             # messageSize of an empty v0 / v1 message


class UnsupportedDownConversion(ValueError):
    """Stored data that an old fetch version cannot carry (zstd before Fetch v10)."""


class LegacyMessage:
    __slots__ = ("offset", "magic", "attributes", "timestamp", "key", "value")

    def __init__(self, offset, magic, attributes, timestamp, key, value):
        self.offset, self.magic, self.attributes = offset, magic, attributes
        self.timestamp, self.key, self.value = timestamp, key, value

    @property
    def codec(self) -> int:
        return self.attributes & COMPRESSION_MASK


# -- reading ------------------------------------------------------------------------------------

def _read_bytes(buf, p, end):
    (n,) = _i32.unpack_from(buf, p)
    p += 4
    if n < 0:
        return None, p
    if p + n > end:
        raise CorruptRecord("message key or value overruns the message")
    return bytes(buf[p:p + n]), p + n


def iter_messages(buf):
    """Yield the `LegacyMessage`s of a v0/v1 message set, checking framing and CRC."""
    mv = memoryview(buf)
    pos, end = 0, len(mv)
    if end == 0:
        raise CorruptRecord("empty message set")
    while pos < end:
        if end - pos < _PREFIX_SIZE:
            raise CorruptRecord("message set truncated")
        offset, size, crc, magic, attributes = _prefix.unpack_from(mv, pos)
        if magic not in (0, 1):
            raise InvalidRecord(f"message magic {magic} among messages of format v0/v1")
        if size < _MIN_SIZE[magic] or pos + 12 + size > end:
            raise CorruptRecord(f"message size {size} out of range")
        msg_end = pos + 12 + size
        if zlib.crc32(mv[pos + 16:msg_end]) != crc:
            raise CorruptRecord("message CRC mismatch")
        p = pos + _PREFIX_SIZE
        timestamp = NO_TIMESTAMP
        if magic == 1:
            (timestamp,) = _v1_timestamp.unpack_from(mv, p)
            p += 8
        key, p = _read_bytes(mv, p, msg_end)
        value, p = _read_bytes(mv, p, msg_end)
        if p != msg_end:
            raise CorruptRecord("message fields disagree with its size")
        yield LegacyMessage(offset, magic, attributes, timestamp, key, value)
        pos = msg_end


def _inflate(wrapper: LegacyMessage) -> bytes:
    if wrapper.codec == ZSTD:
        raise InvalidRecord("zstd compression needs message format v2")
    if wrapper.value is None:
        raise InvalidRecord("compressed message without a value")
    data = wrapper.value
    if wrapper.codec == LZ4 and wrapper.magic == 0:
        data = fix_lz4_header_checksum(data)
    return decompress(wrapper.codec, data)


def to_records(buf) -> tuple[list, int]:
    """The records of a Produce v0-2 message set, as ``build_batch`` takes them (``(key,
    value, None, timestamp)``, offsets 0..n-1), and the codec to store them with: the first
    compressed wrapper's, as Kafka does with ``compression.type=producer``.

    Records keep their keys, values and v1 timestamps; v0 messages have none (-1). Raises
    CorruptRecord / InvalidRecord.
    """
    records = []
    codec = NONE
    for m in iter_messages(buf):
        if not m.codec:
            records.append((m.key, m.value, None, m.timestamp))
            continue
        codec = codec or m.codec
        log_append = m.magic == 1 and m.attributes & TIMESTAMP_TYPE_FLAG
        for i, inner in enumerate(iter_messages(_inflate(m))):
            if inner.codec:
                raise InvalidRecord("a compressed message holds another compressed message")
            if inner.magic != m.magic:
                raise InvalidRecord("inner message magic differs from its wrapper's")
            if m.magic == 1 and inner.offset != i:
                raise InvalidRecord(f"inner message offset {inner.offset}, expected {i}")
            ts = m.timestamp if log_append else inner.timestamp
            records.append((inner.key, inner.value, None, ts))
    if not records:
        raise CorruptRecord("compressed message set holds no messages")
    return records, codec


# -- writing ------------------------------------------------------------------------------------

def _put_bytes(out: bytearray, b) -> None:
    if b is None:
        out += b"\xff\xff\xff\xff"
    else:
        out += _i32.pack(len(b))
        out += b


def write_message(out: bytearray, offset, magic, attributes, timestamp, key, value) -> None:
    """Append one v0/v1 message (with its CRC) to ``out``."""
    start = len(out)
    out += _prefix.pack(offset, 0, 0, magic, attributes)
    if magic == 1:
        out += _v1_timestamp.pack(timestamp)
    _put_bytes(out, key)
    _put_bytes(out, value)
    _i32.pack_into(out, start + 8, len(out) - start - 12)
    _crc.pack_into(out, start + 12, zlib.crc32(memoryview(out)[start + 16:]))


def down_convert(data, magic: int, first_offset: int) -> bytes:
    """Rewrite stored v2 batches as a v0/v1 message set for Fetch v0-3.

    Control batches are dropped (old consumers know no transaction markers), so are records
    before ``first_offset`` and a trailing partial batch; headers cannot be carried. A
    compressed batch becomes one wrapper compressed with the same codec. Raises
    UnsupportedDownConversion for zstd batches.
    """
    out = bytearray()
    for h in iter_headers(data):
        if h.is_control:
            continue
        codec = h.compression
        if codec == ZSTD:
            raise UnsupportedDownConversion("zstd data cannot be read with fetch versions 0-3")
        records = [r for r in iter_records(data, h) if r.offset >= first_offset]
        if not records:
            continue
        ts_flag = h.attributes & TIMESTAMP_TYPE_FLAG if magic == 1 else 0
        if codec == NONE:
            for r in records:
                write_message(out, r.offset, magic, ts_flag, r.timestamp, r.key, r.value)
            continue
        inner = bytearray()
        base = records[0].offset
        for r in records:
            write_message(inner, r.offset - base if magic == 1 else r.offset, magic, ts_flag,
                          r.timestamp, r.key, r.value)
        write_message(out, records[-1].offset, magic, codec | ts_flag,
                      max(r.timestamp for r in records), None, compress(codec, inner))
    return bytes(out)


# -- Kafka's magic-0 LZ4 framing ----------------------------------------------------------------
# Kafka before message format v1 computed the LZ4 frame's header checksum over the frame magic
# too (KAFKA-3160); clients of that era did the same. The checksum is recomputed before
# decompressing such data.

def fix_lz4_header_checksum(frame) -> bytes:
    """The LZ4 frame with its header checksum byte recomputed over the frame descriptor."""
    frame = bytes(frame)
    if len(frame) < 7:
        raise CorruptRecord("lz4 frame truncated")
    flg = frame[4]
    end = 6 + (8 if flg & 0x08 else 0) + (4 if flg & 0x01 else 0)  # FLG, BD, size, dict id
    if len(frame) <= end:
        raise CorruptRecord("lz4 frame truncated")
    hc = (xxhash.xxh32_intdigest(frame[4:end]) >> 8) & 0xFF
    return frame[:end] + bytes([hc]) + frame[end + 1:]
