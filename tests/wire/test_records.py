import gzip
import struct
import types

import cramjam
import pytest
from crc32c import crc32c

from josefk.wire.batch import CorruptRecord, read_header, record_count, validate_batches
from josefk.wire import records as R
from josefk.wire.records import (CONTROL_ABORT, CONTROL_COMMIT, Record, build_batch, compress,
                                 control_record, decompress, iter_records, parse_control_record)

CODECS = [R.NONE, R.GZIP, R.SNAPPY, R.LZ4, R.ZSTD]

SAMPLE = [
    (b"key-1", b"value-1" * 50, [("h1", b"v1"), ("h2", None)], 1_700_000_000_000),
    (None, b"no key", None, 1_700_000_000_005),
    (b"tombstone", None, [], 1_699_999_999_990),  # timestamps may go backwards
    (b"", b"", [("", b"")], 1_700_000_000_001),
    ("str-key", "str-value", [("uni\u00e9", "x")], None),
]


def decoded(buf):
    hs = validate_batches(buf)
    assert len(hs) == 1
    return hs[0], list(iter_records(buf, hs[0]))


@pytest.mark.parametrize("codec", CODECS)
def test_round_trip_every_codec(codec):
    buf = build_batch(SAMPLE, base_offset=100, compression=codec, now_ms=1_700_000_000_100,
                      producer_id=7, producer_epoch=3, base_sequence=42)
    h, recs = decoded(buf)
    assert h.compression == codec
    assert h.base_offset == 100 and h.count == 5 and h.last_offset_delta == 4
    assert h.base_timestamp == 1_700_000_000_000
    assert h.max_timestamp == 1_700_000_000_100
    assert (h.producer_id, h.producer_epoch, h.base_sequence) == (7, 3, 42)
    assert [r.offset for r in recs] == [100, 101, 102, 103, 104]
    assert recs[0] == Record(100, 1_700_000_000_000, b"key-1", b"value-1" * 50,
                             [("h1", b"v1"), ("h2", None)])
    assert recs[1].key is None and recs[1].value == b"no key" and recs[1].headers == []
    assert recs[2].value is None and recs[2].timestamp == 1_699_999_999_990
    assert recs[3].key == b"" and recs[3].value == b"" and recs[3].headers == [("", b"")]
    assert recs[4].key == b"str-key" and recs[4].headers == [("uni\u00e9", b"x")]
    assert recs[4].timestamp == 1_700_000_000_100


@pytest.mark.parametrize("codec", CODECS)
def test_codec_round_trip_large(codec):
    data = bytes(range(256)) * 2000 + b"tail"
    assert decompress(codec, compress(codec, data)) == data
    assert decompress(codec, compress(codec, b"")) == b""


def test_snappy_xerial_and_raw():
    data = b"abc" * 40000  # > one 32 KiB xerial block
    framed = compress(R.SNAPPY, data)
    assert framed[:8] == b"\x82SNAPPY\x00"
    assert struct.unpack(">ii", framed[8:16]) == (1, 1)
    # first block: int32 length then a raw snappy chunk of the first 32 KiB
    (n,) = struct.unpack(">i", framed[16:20])
    assert bytes(cramjam.snappy.decompress_raw(framed[20:20 + n])) == data[:32768]
    assert decompress(R.SNAPPY, framed) == data
    raw = bytes(cramjam.snappy.compress_raw(data))
    assert decompress(R.SNAPPY, raw) == data
    with pytest.raises(CorruptRecord):
        decompress(R.SNAPPY, framed[:-3])


def test_snappy_matches_kafka_python_xerial(monkeypatch):
    # kafka-python's xerial framing code, with cramjam standing in for python-snappy
    from kafka import codec
    shim = types.SimpleNamespace(compress=lambda b: bytes(cramjam.snappy.compress_raw(b)),
                                 decompress=lambda b: bytes(cramjam.snappy.decompress_raw(b)))
    monkeypatch.setattr(codec, "snappy", shim)
    data = b"kafka " * 30000
    theirs = codec.snappy_encode(data, xerial_compatible=True)
    assert decompress(R.SNAPPY, theirs) == data
    assert codec.snappy_decode(compress(R.SNAPPY, data)) == data
    assert compress(R.SNAPPY, data) == theirs  # same framing byte for byte


def test_zstd_without_content_size_and_gzip_members():
    import zstandard
    data = b"z" * 100000
    stream = zstandard.ZstdCompressor(write_content_size=False).compress(data)
    assert decompress(R.ZSTD, stream) == data
    assert decompress(R.GZIP, gzip.compress(b"a") + gzip.compress(b"b")) == b"ab"


def test_unknown_codec_and_garbage():
    with pytest.raises(CorruptRecord):
        decompress(5, b"x")
    with pytest.raises(CorruptRecord):
        decompress(R.LZ4, b"not lz4 at all")
    with pytest.raises(CorruptRecord):
        decompress(R.GZIP, b"not gzip")


def test_byte_layout_by_hand():
    buf = build_batch([(b"k", b"vv", [("h", b"x")], 1000)], base_offset=5, now_ms=0,
                      partition_leader_epoch=9)
    (base, length, epoch, magic, crc, attrs, lod, base_ts, max_ts, pid, pepoch, seq,
     count) = struct.unpack_from(">qiibIhiqqqhii", buf)
    assert (base, epoch, magic, attrs, lod, base_ts, max_ts, pid, pepoch, seq, count) == \
        (5, 9, 2, 0, 0, 1000, 1000, -1, -1, -1, 1)
    assert length == len(buf) - 12
    assert crc == crc32c(bytes(buf[21:]))
    body = bytes(buf[61:])
    # length=13 (zigzag 26), attrs 0, tsDelta 0, offDelta 0, keyLen 1 (2) 'k', valLen 2 (4) 'vv',
    # 1 header (2): keyLen 1 (2) 'h', valLen 1 (2) 'x'
    assert body == bytes([26, 0, 0, 0, 2]) + b"k" + bytes([4]) + b"vv" + bytes([2, 2]) + b"h" \
        + bytes([2]) + b"x"
    assert body[0] // 2 == len(body) - 1


def test_null_key_and_value_encoding():
    buf = build_batch([(None, None, None, 5)], now_ms=0)
    assert bytes(buf[61:]) == bytes([12, 0, 0, 0, 1, 1, 0])  # length 6, key -1, value -1, 0 hdrs
    _h, recs = decoded(buf)
    assert recs == [Record(0, 5, None, None, [])]


def test_flags_and_offset_deltas():
    buf = build_batch([(b"a", b"1", None, 10), (b"b", b"2", None, 20)], base_offset=50,
                      offset_deltas=[0, 7], transactional=True, producer_id=3, producer_epoch=1,
                      base_sequence=0)
    h = read_header(buf)
    assert h.is_transactional and not h.is_control
    assert h.last_offset_delta == 7 and h.count == 2
    assert [r.offset for r in iter_records(buf, h)] == [50, 57]


def test_log_append_time():
    buf = build_batch([(b"a", b"1", None, 10), (b"b", b"2", None, 20)], log_append_time=True,
                      now_ms=999)
    h, recs = decoded(buf)
    assert h.max_timestamp == 999 and h.attributes & 0x08
    assert [r.timestamp for r in recs] == [999, 999]


def test_control_records():
    for kind in (CONTROL_ABORT, CONTROL_COMMIT):
        buf = build_batch([control_record(kind, coordinator_epoch=4, timestamp=1)], control=True,
                          transactional=True, producer_id=11, producer_epoch=2)
        h, recs = decoded(buf)
        assert h.is_control and h.is_transactional
        assert parse_control_record(recs[0]) == (kind, 4)


def test_corrupt_records_raise():
    buf = build_batch([(b"k", b"v" * 10, None, 1)])
    h = read_header(buf)
    bad = bytearray(buf)
    bad[61] = 0x7E  # record length far too big
    with pytest.raises(CorruptRecord):
        list(iter_records(bad, h))
    short = bytearray(buf[:-3])
    struct.pack_into(">i", short, 8, len(short) - 12)
    with pytest.raises(CorruptRecord):
        list(iter_records(short, read_header(short)))


def test_multiple_batches_in_one_buffer_and_positions():
    a = build_batch([(b"a", b"1", None, 1)], base_offset=0)
    b = build_batch([(b"b", b"2", None, 2), (b"c", b"3", None, 3)], base_offset=1,
                    compression=R.LZ4)
    buf = a + b
    hs = validate_batches(buf)
    out = [r for h in hs for r in iter_records(buf, h)]
    assert [(r.offset, r.key) for r in out] == [(0, b"a"), (1, b"b"), (2, b"c")]


@pytest.mark.parametrize("codec", [R.NONE, R.GZIP, R.LZ4, R.ZSTD])
def test_decode_batch_built_by_kafka_python(codec):
    from kafka.record.default_records import DefaultRecordBatchBuilder
    kp_codec = {R.NONE: 0, R.GZIP: 1, R.LZ4: 3, R.ZSTD: 4}[codec]
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=kp_codec, is_transactional=False,
                                        producer_id=123, producer_epoch=4, base_sequence=10,
                                        batch_size=1 << 20)
    builder.append(0, timestamp=1_600_000_000_000, key=b"k0", value=b"v0" * 100,
                   headers=[("hk", b"hv")])
    builder.append(1, timestamp=1_600_000_000_003, key=None, value=b"v1", headers=[])
    builder.append(2, timestamp=1_600_000_000_001, key=b"k2", value=None, headers=[("n", None)])
    buf = bytearray(builder.build())
    h, recs = decoded(buf)
    assert h.compression == codec and h.producer_id == 123 and h.base_sequence == 10
    assert h.max_timestamp == 1_600_000_000_003
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in recs] == [
        (0, 1_600_000_000_000, b"k0", b"v0" * 100, [("hk", b"hv")]),
        (1, 1_600_000_000_003, None, b"v1", []),
        (2, 1_600_000_000_001, b"k2", None, [("n", None)]),
    ]


@pytest.mark.parametrize("codec", [R.NONE, R.GZIP, R.LZ4, R.ZSTD])
def test_kafka_python_reads_our_batches(codec):
    from kafka.record.default_records import DefaultRecordBatch
    buf = build_batch(SAMPLE[:4], base_offset=7, compression=codec, now_ms=1)
    kb = DefaultRecordBatch(bytes(buf))
    assert kb.validate_crc()
    got = [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in kb]
    assert got == [(7 + i, ts, k, v, list(hs or [])) for i, (k, v, hs, ts) in
                   enumerate(SAMPLE[:4])]


@pytest.mark.parametrize("codec", [R.GZIP, R.SNAPPY, R.LZ4, R.ZSTD])
def test_decompression_stops_at_the_limit(codec):
    """A decompression bomb is refused once its output passes the limit."""
    data = b"\0" * 300_000
    packed = compress(codec, data)
    assert decompress(codec, packed, limit=300_000) == data
    with pytest.raises(CorruptRecord, match="more than 299999 bytes"):
        decompress(codec, packed, limit=299_999)


@pytest.mark.parametrize("key,value", [(b"k" * 40, b"v" * 30), (b"\x00\x01", None),
                                       (b"k", b""), (b"k" * 300, b"v" * 70000)])
def test_one_record_batch_is_the_batch_build_batch_makes(key, value):
    ts = 1_700_000_000_123
    batch = R.one_record_batch(key, value, ts)
    assert batch == build_batch([(key, value, None, ts)])
    (h,) = validate_batches(batch)
    (rec,) = R.iter_records(batch, h)
    assert (rec.key, rec.value, rec.timestamp) == (key, value, ts)


def testrecord_count_of_one_and_several_batches():
    one = build_batch([(None, b"a", None, None)] * 5)
    two = one + build_batch([(None, b"b", None, None)] * 3, base_offset=5)
    assert record_count(one) == 5 and record_count(two) == 8
