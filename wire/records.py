"""Records inside magic-v2 batches (Kafka's DefaultRecord format) and compression codecs.

Record layout (inside the batch's records section, possibly compressed)::

    length varint            (size of the rest of the record)
    attributes int8          (unused, 0)
    timestampDelta varlong   (relative to the batch's baseTimestamp)
    offsetDelta varint       (relative to the batch's baseOffset)
    keyLength varint, key    (-1 = null)
    valueLength varint, value (-1 = null)
    headerCount varint, then per header: keyLength varint + utf-8 key, valueLength varint + value

This module is off the broker's hot path: it is used by the compactor, by the coordinators to
read and write internal topics, for transaction markers, and by tests to craft payloads.
"""
from __future__ import annotations

import gzip
import struct
import threading
import time
import zlib

import cramjam
import lz4.frame
import zstandard
from crc32c import crc32c

from .batch import (ATTRIBUTES_OFFSET, COMPRESSION_MASK, CONTROL_FLAG, HEADER, HEADER_SIZE,
                    LOG_OVERHEAD, TIMESTAMP_TYPE_FLAG, TRANSACTIONAL_FLAG, BatchHeader,
                    CorruptRecord)
from .types import read_uvarint
from .types import write_varint as _put_varint

__all__ = [
    "Record", "NONE", "GZIP", "SNAPPY", "LZ4", "ZSTD", "CODEC_NAMES", "compress", "decompress",
    "iter_records", "build_batch", "CONTROL_ABORT", "CONTROL_COMMIT", "control_record",
    "parse_control_record", "UnsupportedCodec",
]

NONE, GZIP, SNAPPY, LZ4, ZSTD = 0, 1, 2, 3, 4
CODEC_NAMES = {NONE: "none", GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}

# Control record types (key: version int16 + type int16; value: version int16 + coordinatorEpoch int32)
CONTROL_ABORT = 0
CONTROL_COMMIT = 1


class UnsupportedCodec(CorruptRecord):
    """A batch names a compression codec id we do not know (Kafka answers CORRUPT_MESSAGE)."""


class Record:
    """One decoded record. ``headers`` is a list of ``(str, bytes | None)``."""

    __slots__ = ("offset", "timestamp", "key", "value", "headers")

    def __init__(self, offset, timestamp, key, value, headers=None):
        self.offset = offset
        self.timestamp = timestamp
        self.key = key
        self.value = value
        self.headers = headers if headers is not None else []

    def __eq__(self, other):
        if not isinstance(other, Record):
            return NotImplemented
        return (self.offset == other.offset and self.timestamp == other.timestamp
                and self.key == other.key and self.value == other.value
                and list(self.headers) == list(other.headers))

    def __repr__(self):
        return (f"Record(offset={self.offset}, timestamp={self.timestamp}, key={self.key!r}, "
                f"value={self.value!r}, headers={self.headers!r})")


# ---------------------------------------------------------------------------------------------
# Compression codecs

_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = _XERIAL_MAGIC + struct.pack(">ii", 1, 1)  # version 1, min compatible version 1
_XERIAL_BLOCK = 32 * 1024  # xerial's default block size (what the Java client uses)
_i32 = struct.Struct(">i")
_local = threading.local()  # zstandard (de)compressor objects are not thread-safe


def _zstd_c():
    c = getattr(_local, "zc", None)
    if c is None:
        c = _local.zc = zstandard.ZstdCompressor(level=3)
    return c


def _zstd_d():
    d = getattr(_local, "zd", None)
    if d is None:
        d = _local.zd = zstandard.ZstdDecompressor()
    return d


class TooLarge(CorruptRecord):
    """Decompressed data beyond the caller's limit (a decompression bomb)."""


def _check_size(n: int, limit) -> None:
    if limit is not None and n > limit:
        raise TooLarge(f"records decompress to more than {limit} bytes")


def _snappy_raw(mv, used: int, limit):
    """One raw snappy block, to follow ``used`` bytes of output."""
    n, _p = read_uvarint(mv, 0)  # a raw snappy block starts with its uncompressed length
    _check_size(used + n, limit)
    return bytes(cramjam.snappy.decompress_raw(mv))


def _snappy_decompress(data, limit=None) -> bytes:
    mv = memoryview(data)
    if bytes(mv[:8]) != _XERIAL_MAGIC:
        return _snappy_raw(mv, 0, limit)
    # xerial framing: 8-byte magic, int32 version, int32 min compatible version, then
    # blocks of int32 compressed length + raw snappy data.
    pos = 16
    end = len(mv)
    out = []
    used = 0
    while pos < end:
        if end - pos < 4:
            raise CorruptRecord("truncated xerial snappy block length")
        (n,) = _i32.unpack_from(mv, pos)
        pos += 4
        if n < 0 or pos + n > end:
            raise CorruptRecord("xerial snappy block overruns the data")
        out.append(_snappy_raw(mv[pos:pos + n], used, limit))
        used += len(out[-1])
        pos += n
    return b"".join(out)


def _gzip_decompress(data, limit) -> bytes:
    """gzip members one after the other (as gzip.decompress), stopping past ``limit``."""
    mv = memoryview(data)
    out = []
    total = 0
    while True:
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        chunk = d.decompress(mv, 0 if limit is None else limit - total + 1)
        total += len(chunk)
        _check_size(total, limit)
        if not d.eof:
            raise CorruptRecord("gzip data is truncated")
        out.append(chunk)
        mv = memoryview(d.unused_data)
        if not bytes(mv).strip(b"\0"):
            return b"".join(out)


def _lz4_decompress(data, limit) -> bytes:
    d = lz4.frame.LZ4FrameDecompressor()
    out = d.decompress(data, -1 if limit is None else limit + 1)
    _check_size(len(out), limit)
    if not d.eof:
        raise CorruptRecord("lz4 data is truncated")
    return out


def _zstd_decompress(data, limit) -> bytes:
    # Java's zstd-jni streams frames without a content size: use a streaming decoder.
    if limit is None:
        return _zstd_d().decompressobj(read_across_frames=True).decompress(data)
    out = _zstd_d().stream_reader(data, read_across_frames=True).read(limit + 1)
    _check_size(len(out), limit)
    return out


def _snappy_compress(data) -> bytes:
    mv = memoryview(data)
    out = [_XERIAL_HEADER]
    for pos in range(0, len(mv), _XERIAL_BLOCK):
        chunk = bytes(cramjam.snappy.compress_raw(mv[pos:pos + _XERIAL_BLOCK]))
        out.append(_i32.pack(len(chunk)))
        out.append(chunk)
    return b"".join(out)


def decompress(codec: int, data, limit: int | None = None) -> bytes:
    """Decompress a batch's records section compressed with ``codec`` (attribute bits 0-2);
    more than ``limit`` bytes of output raises TooLarge (a CorruptRecord)."""
    try:
        if codec == NONE:
            return bytes(data)
        if codec == GZIP:
            return _gzip_decompress(data, limit)
        if codec == SNAPPY:
            return _snappy_decompress(data, limit)
        if codec == LZ4:
            return _lz4_decompress(data, limit)
        if codec == ZSTD:
            return _zstd_decompress(data, limit)
    except CorruptRecord:
        raise
    except Exception as e:  # every codec library has its own error type
        raise CorruptRecord(f"cannot decompress {CODEC_NAMES.get(codec)} data: {e}") from e
    raise UnsupportedCodec(f"unknown compression codec {codec}")


def compress(codec: int, data) -> bytes:
    """Compress ``data`` the way the Java client does for ``codec``."""
    if codec == NONE:
        return bytes(data)
    if codec == GZIP:
        return gzip.compress(data, compresslevel=6, mtime=0)
    if codec == SNAPPY:
        return _snappy_compress(data)
    if codec == LZ4:
        # Kafka's LZ4 stream uses independent blocks and no content size.
        return lz4.frame.compress(data, block_linked=False, store_size=False)
    if codec == ZSTD:
        return _zstd_c().compress(data)
    raise UnsupportedCodec(f"unknown compression codec {codec}")


# ---------------------------------------------------------------------------------------------
# Decoding

def records_section(buf, header: BatchHeader):
    """The records of the batch described by ``header`` (at ``header.pos`` in ``buf``),
    decompressed if need be (a memoryview when not compressed)."""
    start = header.pos + HEADER_SIZE
    end = header.pos + header.size
    if end > len(buf):
        raise CorruptRecord("batch overruns the buffer")
    section = memoryview(buf)[start:end]
    codec = header.attributes & COMPRESSION_MASK
    return section if codec == NONE else decompress(codec, section)


def iter_records(buf, header: BatchHeader):
    """Yield the ``Record``s of the batch described by ``header`` (at ``header.pos`` in ``buf``).

    Decompresses the records section if needed. With the LogAppendTime timestamp type every
    record carries the batch's maxTimestamp, as in Kafka.
    """
    data = bytes(records_section(buf, header))
    base_offset = header.base_offset
    base_ts = header.base_timestamp
    log_append_time = header.max_timestamp if header.attributes & TIMESTAMP_TYPE_FLAG else None
    n = len(data)
    p = 0
    try:
        for _ in range(header.count):
            # length (zigzag varint)
            b = data[p]
            p += 1
            if b < 0x80:
                length = b
            else:
                length, p = _uvarint_tail(data, p, b)
            length = (length >> 1) ^ -(length & 1)
            rec_end = p + length
            if length < 0 or rec_end > n:
                raise CorruptRecord("record length out of range")
            p += 1  # attributes
            ts_delta, p = _varint(data, p)
            off_delta, p = _varint(data, p)
            klen, p = _varint(data, p)
            if klen < 0:
                key = None
            else:
                key = data[p:p + klen]
                p += klen
            vlen, p = _varint(data, p)
            if vlen < 0:
                value = None
            else:
                value = data[p:p + vlen]
                p += vlen
            hcount, p = _varint(data, p)
            headers = []
            for _h in range(hcount):
                hklen, p = _varint(data, p)
                if hklen < 0:
                    raise CorruptRecord("null header key")
                hkey = str(data[p:p + hklen], "utf-8")
                p += hklen
                hvlen, p = _varint(data, p)
                if hvlen < 0:
                    hval = None
                else:
                    hval = data[p:p + hvlen]
                    p += hvlen
                headers.append((hkey, hval))
            if p != rec_end:
                raise CorruptRecord("record fields disagree with the record length")
            yield Record(base_offset + off_delta,
                         log_append_time if log_append_time is not None else base_ts + ts_delta,
                         key, value, headers)
    except (IndexError, UnicodeDecodeError) as e:
        raise CorruptRecord(f"malformed record: {e}") from e


def _uvarint_tail(data, p, b):
    result = b & 0x7F
    shift = 7
    while True:
        b = data[p]
        p += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, p
        shift += 7
        if shift > 63:
            raise CorruptRecord("varint too long")


def _varint(data, p):
    b = data[p]
    p += 1
    if b >= 0x80:
        b, p = _uvarint_tail(data, p, b)
    return (b >> 1) ^ -(b & 1), p


# ---------------------------------------------------------------------------------------------
# Encoding

def _put_nullable(out: bytearray, b) -> None:
    """A varint-length-prefixed byte string; length -1 for null (record keys, values, headers)."""
    b = _as_bytes(b)
    if b is None:
        out.append(1)  # zigzag(-1)
    else:
        _put_varint(out, len(b))
        out += b


def _as_bytes(b):
    if b is None or isinstance(b, bytes):
        return b
    if isinstance(b, str):
        return b.encode()
    return bytes(b)


def build_batch(records, *, base_offset=0, compression=0, producer_id=-1, producer_epoch=-1,
                base_sequence=-1, transactional=False, control=False, partition_leader_epoch=-1,
                now_ms=None, offset_deltas=None, log_append_time=False) -> bytearray:
    """Encode ``records`` (``(key, value, headers, timestamp | None)`` tuples) as one v2 batch.

    A ``None`` timestamp means ``now_ms`` (default: the current time). ``headers`` may be None.
    ``offset_deltas`` (one per record, increasing) keeps gaps, e.g. when the compactor rewrites
    a batch; by default records get deltas 0..n-1. ``log_append_time`` sets the LogAppendTime
    timestamp type with maxTimestamp = ``now_ms``. Returns a bytearray with a correct CRC.
    """
    if not records:
        raise ValueError("a batch needs at least one record")
    if now_ms is None:
        now_ms = int(time.time() * 1000)
    if offset_deltas is not None and len(offset_deltas) != len(records):
        raise ValueError("offset_deltas must have one entry per record")
    timestamps = [now_ms if r[3] is None else r[3] for r in records]
    base_ts = timestamps[0]
    max_ts = max(timestamps)
    body = bytearray()
    rec = bytearray()
    for i, (key, value, headers, _ts) in enumerate(records):
        rec.clear()
        rec.append(0)  # attributes
        _put_varint(rec, timestamps[i] - base_ts)
        _put_varint(rec, i if offset_deltas is None else offset_deltas[i])
        _put_nullable(rec, key)
        _put_nullable(rec, value)
        headers = headers or ()
        _put_varint(rec, len(headers))
        for hk, hv in headers:
            hk = hk.encode() if isinstance(hk, str) else bytes(hk)
            _put_varint(rec, len(hk))
            rec += hk
            _put_nullable(rec, hv)
        _put_varint(body, len(rec))
        body += rec
    if compression:
        body = compress(compression, body)
    last_delta = len(records) - 1 if offset_deltas is None else offset_deltas[-1]
    attributes = compression & COMPRESSION_MASK
    if transactional:
        attributes |= TRANSACTIONAL_FLAG
    if control:
        attributes |= CONTROL_FLAG
    if log_append_time:
        attributes |= TIMESTAMP_TYPE_FLAG
        max_ts = now_ms
    out = bytearray(HEADER_SIZE)
    out += body
    HEADER.pack_into(out, 0, base_offset, len(out) - LOG_OVERHEAD, partition_leader_epoch,
                            2, 0, attributes, last_delta, base_ts, max_ts, producer_id,
                            producer_epoch, base_sequence, len(records))
    struct.pack_into(">I", out, 17, crc32c(memoryview(out)[ATTRIBUTES_OFFSET:]))
    return out


def one_record_batch(key, value, timestamp: int) -> bytearray:
    """What ``build_batch([(key, value, None, timestamp)])`` returns, laid out directly (one
    record, no headers, uncompressed, no producer): the batch a coordinator writes per commit."""
    out = bytearray(HEADER_SIZE)
    rec = bytearray(3)  # attributes, timestamp delta 0, offset delta 0
    _put_nullable(rec, key)
    _put_nullable(rec, value)
    rec.append(0)  # no headers
    _put_varint(out, len(rec))
    out += rec
    HEADER.pack_into(out, 0, 0, len(out) - LOG_OVERHEAD, -1, 2, 0, 0, 0, timestamp,
                            timestamp, -1, -1, -1, 1)
    struct.pack_into(">I", out, 17, crc32c(memoryview(out)[ATTRIBUTES_OFFSET:]))
    return out


# ---------------------------------------------------------------------------------------------
# Control records (transaction markers)

_control_key = struct.Struct(">hh")
_end_txn_value = struct.Struct(">hi")


def control_record(kind: int, coordinator_epoch: int = 0, timestamp=None):
    """A ``(key, value, headers, timestamp)`` tuple for an end-transaction marker.

    Pass it to ``build_batch(..., control=True, transactional=True, producer_id=...,
    producer_epoch=...)``. ``kind`` is CONTROL_ABORT or CONTROL_COMMIT.
    """
    return (_control_key.pack(0, kind), _end_txn_value.pack(0, coordinator_epoch), [], timestamp)


def parse_control_record(record: Record):
    """``(kind, coordinator_epoch)`` of a control record; coordinator_epoch is None if absent."""
    if record.key is None or len(record.key) < 4:
        raise CorruptRecord("control record key too short")
    _version, kind = _control_key.unpack_from(record.key, 0)
    epoch = None
    if record.value is not None and len(record.value) >= 6:
        epoch = _end_txn_value.unpack_from(record.value, 0)[1]
    return kind, epoch
