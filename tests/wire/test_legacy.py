"""Message formats v0/v1 (wire.legacy): up-conversion of Produce v0-2 data to v2 batches (by
storage's log validator) and down-conversion for Fetch v0-3, checked against kafka-python's
own implementation of the old formats (an independent writer and reader)."""
from __future__ import annotations

import gzip

import lz4.frame
import pytest
from kafka.record.memory_records import MemoryRecords, MemoryRecordsBuilder

from josefk.storage import LogConfig
from josefk.storage.log_validator import validate_records
from josefk.wire import legacy
from josefk.wire.batch import CorruptRecord, InvalidRecord, read_header, validate_batches
from josefk.wire.records import (GZIP, LZ4, NONE, SNAPPY, ZSTD, build_batch, control_record,
                                 iter_records)

CODECS = [NONE, GZIP, SNAPPY, LZ4]
ROWS = [(b"k0", b"v0", 1_700_000_000_000), (None, b"v1", 1_700_000_000_005),
        (b"k2", None, 1_700_000_000_003)]


def kp_message_set(magic, codec, rows=ROWS, offset=0):
    """A message set written by kafka-python's legacy builder (what its producer sends)."""
    b = MemoryRecordsBuilder(magic=magic, compression_type=codec, batch_size=1 << 20,
                             offset=offset)
    for key, value, ts in rows:
        b.append(timestamp=ts, key=key, value=value)
    b.close()
    return bytes(b.buffer())


def to_batch(message_set):
    """A Produce v0-2 message set as the log validator stores it: one v2 batch."""
    return validate_records(message_set, LogConfig(), old_formats=True).buf


def kp_read(buf):
    """(offset, timestamp, key, value) per record, as kafka-python's consumer reads them."""
    out = []
    recs = MemoryRecords(buf)
    while recs.has_next():
        batch = recs.next_batch()
        for r in batch:
            assert r.validate_crc()
            out.append((r.offset, r.timestamp, r.key, r.value))
    return out


def _records(batch):
    return [(r.offset, r.timestamp, r.key, r.value)
            for r in iter_records(batch, read_header(batch))]


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: f"codec{c}")
@pytest.mark.parametrize("magic", [0, 1])
def test_message_set_becomes_one_v2_batch(magic, codec):
    batch = to_batch(kp_message_set(magic, codec))
    (h,) = validate_batches(batch)
    assert h.compression == codec and h.count == 3 and h.base_offset == 0
    want_ts = [ts if magic == 1 else -1 for _k, _v, ts in ROWS]
    assert _records(batch) == [(i, want_ts[i], k, v) for i, (k, v, _ts) in enumerate(ROWS)]


def test_several_wrappers_and_plain_messages_keep_their_order():
    buf = (kp_message_set(1, GZIP, ROWS[:2]) + kp_message_set(1, NONE, ROWS[2:], offset=2)
           + kp_message_set(1, SNAPPY, ROWS[:1]))
    batch = to_batch(buf)
    assert [r[2:] for r in _records(batch)] == [(k, v) for k, v, _ in ROWS + ROWS[:1]]
    assert read_header(batch).compression == GZIP


def test_corrupt_and_invalid_message_sets_are_refused():
    good = bytearray(kp_message_set(1, NONE))
    bad_crc = bytearray(good)
    bad_crc[-1] ^= 0xFF
    with pytest.raises(CorruptRecord):
        legacy.to_records(bad_crc)
    with pytest.raises(CorruptRecord):
        legacy.to_records(good[:-3])
    with pytest.raises(CorruptRecord):
        legacy.to_records(b"")
    with pytest.raises(InvalidRecord):  # v2 magic: the validator never hands it to to_records
        legacy.to_records(build_batch([(b"k", b"v", None, 1)]))
    nested = bytearray()
    legacy.write_message(nested, 0, 1, GZIP, 5, None,
                         gzip.compress(kp_message_set(1, GZIP)))
    with pytest.raises(InvalidRecord):
        legacy.to_records(nested)
    zstd = bytearray()
    legacy.write_message(zstd, 0, 1, ZSTD, 5, None, b"\x28\xb5\x2f\xfd")
    with pytest.raises(InvalidRecord):
        legacy.to_records(zstd)
    gap = bytearray()  # v1 inner offsets must be 0..n-1
    inner = bytearray()
    legacy.write_message(inner, 0, 1, 0, 5, b"k", b"v")
    legacy.write_message(inner, 2, 1, 0, 5, b"k", b"v")
    legacy.write_message(gap, 1, 1, GZIP, 5, None, gzip.compress(bytes(inner)))
    with pytest.raises(InvalidRecord):
        legacy.to_records(gap)
    mixed = bytearray()
    inner = bytearray()
    legacy.write_message(inner, 0, 0, 0, -1, b"k", b"v")
    legacy.write_message(mixed, 0, 1, GZIP, 5, None, gzip.compress(bytes(inner)))
    with pytest.raises(InvalidRecord):
        legacy.to_records(mixed)


def _stored(codec, base_offset=10):
    batch = build_batch([(k, v, [("h", b"x")], ts) for k, v, ts in ROWS], compression=codec,
                        base_offset=base_offset)
    return bytes(batch)


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: f"codec{c}")
@pytest.mark.parametrize("magic", [0, 1])
def test_down_conversion_reads_back_with_kafka_python(magic, codec):
    marker = build_batch([control_record(1, timestamp=5)], base_offset=13, control=True,
                         transactional=True, producer_id=7, producer_epoch=0)
    data = _stored(codec) + bytes(marker) + _stored(codec, base_offset=14)
    out = legacy.down_convert(data, magic, first_offset=11)
    ts = [t if magic == 1 else None for _k, _v, t in ROWS]
    want = [(o, ts[i], k, v) for (o, i) in ((11, 1), (12, 2), (14, 0), (15, 1), (16, 2))
            for k, v in [ROWS[i][:2]]]
    assert kp_read(out) == want


def test_down_conversion_drops_a_partial_batch_and_refuses_zstd():
    data = _stored(NONE)
    assert legacy.down_convert(data + data[:30], 1, 0) == legacy.down_convert(data, 1, 0)
    assert legacy.down_convert(b"", 1, 0) == b""
    with pytest.raises(legacy.UnsupportedDownConversion):
        legacy.down_convert(_stored(ZSTD), 1, 0)


def test_round_trip_old_format_to_v2_and_back():
    for magic in (0, 1):
        for codec in CODECS:
            stored = to_batch(kp_message_set(magic, codec))
            back = kp_read(legacy.down_convert(bytes(stored), magic, 0))
            assert [(k, v) for _o, _t, k, v in back] == [(k, v) for k, v, _ in ROWS]


def test_lz4_header_checksum_fix():
    for kwargs in ({}, {"store_size": True}, {"block_linked": False, "store_size": False}):
        frame = lz4.frame.compress(b"x" * 1000, **kwargs)
        assert legacy.fix_lz4_header_checksum(frame) == frame
    # Kafka's magic-0 framing checksums the frame magic too: the fix restores the real one.
    frame = bytearray(lz4.frame.compress(b"hello", store_size=False))
    frame[6] ^= 0x5A
    assert lz4.frame.decompress(legacy.fix_lz4_header_checksum(frame)) == b"hello"


def test_negative_magic_is_refused_not_a_crash():
    import struct

    from josefk.wire import legacy
    from josefk.wire.batch import InvalidRecord

    msg = struct.pack(">qiIbb", 0, 14, 0, -119, 0) + struct.pack(">ii", -1, -1)
    with pytest.raises(InvalidRecord):
        list(legacy.iter_messages(msg))
