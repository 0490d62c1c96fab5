"""The one pass of a leader's records before the log (storage/log_validator.py, Kafka's
LogValidator; native walk in wire/_recscan.c): whatever a batch's header claims, its records
must agree with it (issue 11, defect 3); message formats v0/v1 are converted with the same
checks; timestamps and CRCs come out final, and the log only writes offsets and epochs."""
from __future__ import annotations

import struct

import pytest

from josefk.storage import Log, RecordTooLarge
from josefk.storage.config import LONG_MAX, LogConfig
from josefk.storage.log_validator import own_records, validate_records
from josefk.wire import legacy
from josefk.wire import records as R
from josefk.wire.batch import (CorruptRecord, InvalidRecord, InvalidTimestamp, compute_crc,
                               read_header, validate_batches)
from josefk.wire.records import build_batch, iter_records
from josefk.wire.types import write_varint

pytestmark = pytest.mark.usefixtures("record_walk")

TS = 1_700_000_000_000
COMPACTED = LogConfig.from_props({"cleanup.policy": "compact"})
LOG_APPEND_TIME = LogConfig.from_props({"message.timestamp.type": "LogAppendTime"})


def window(before, after):
    return LogConfig.from_props({"message.timestamp.before.max.ms": str(before),
                                 "message.timestamp.after.max.ms": str(after)})


def check(buf, config=None, **kw):
    return validate_records(buf, config or LogConfig(), **kw)


def batch(n=3, *, key=b"k", codec=0, headers=None):
    return build_batch([(key, b"v%d" % i, headers, TS + i) for i in range(n)], compression=codec)


def refit(b: bytearray, *, count=None, last_delta=None, attributes=None, body=None):
    """Rewrite header fields and/or the records section, then fix length and CRC."""
    if body is not None:
        del b[61:]
        b += body
        struct.pack_into(">i", b, 8, len(b) - 12)
    if attributes is not None:
        struct.pack_into(">h", b, 21, attributes)
    if last_delta is not None:
        struct.pack_into(">i", b, 23, last_delta)
    if count is not None:
        struct.pack_into(">i", b, 57, count)
    struct.pack_into(">I", b, 17, compute_crc(b, 0, len(b)))
    return b


def record(offset_delta, key=b"k", value=b"v", headers=(), length_fix=0):
    body = bytearray(b"\x00")
    write_varint(body, 0)
    write_varint(body, offset_delta)
    for f in (key, value):
        if f is None:
            write_varint(body, -1)
        else:
            write_varint(body, len(f))
            body += f
    write_varint(body, len(headers))
    for hk, hv in headers:
        write_varint(body, len(hk))
        body += hk
        write_varint(body, len(hv))
        body += hv
    out = bytearray()
    write_varint(out, len(body) + length_fix)
    return out + body


def record_error(buf, config=None):
    with pytest.raises(InvalidRecord) as e:
        check(buf, config)
    ((index, message),) = e.value.record_errors
    return index, message


@pytest.mark.parametrize("codec", [R.NONE, R.GZIP, R.SNAPPY, R.LZ4, R.ZSTD])
def test_good_batches_pass(codec):
    buf = batch(5, codec=codec, headers=[("h", b"x"), ("n", None)]) + batch(1, key=None)
    validated = check(buf)
    assert [h.count for h in validated.batches] == [5, 1] and validated.count == 6


def test_count_larger_than_the_records_held():
    """The issue's case: a valid CRC, claims 1,000 records (or 2^31-1), holds 2."""
    assert record_error(refit(batch(2), count=1000, last_delta=999))[0] == 2
    assert record_error(refit(batch(2), count=0x7FFFFFFF, last_delta=0x7FFFFFFE))[0] == 2


def test_count_smaller_than_the_records_held():
    index, message = record_error(refit(batch(3), count=2, last_delta=1))
    assert index == 2 and "records still remaining" in message


def test_offset_deltas_must_run_0_to_count_minus_1():
    body = record(0) + record(5)
    assert record_error(refit(batch(2), body=body)) == (
        1, "Invalid offset delta 5 of record 1 (expected 1)")


def test_record_lengths_must_match_their_fields():
    assert record_error(refit(batch(1), body=record(0, length_fix=1)))[0] == 0
    too_short = record(0, length_fix=-1)
    assert record_error(refit(batch(1), body=too_short + b"\x00"))[0] == 0


def test_negative_lengths_and_header_keys():
    bad_key = bytearray(b"\x00\x00\x00") + b"\x05"  # key length -3
    body = bytearray()
    write_varint(body, len(bad_key) + 2)
    body += bad_key + b"\x01\x00"
    assert record_error(refit(batch(1), body=body))[0] == 0
    null_header_key = record(0, headers=[(b"h", b"x")])
    # the header key length varint sits right after the header count (1): make it -1
    i = null_header_key.index(b"\x02h")
    null_header_key[i] = 0x01
    assert record_error(refit(batch(1), body=null_header_key))[0] == 0


def test_overlong_varint_is_refused():
    body = b"\x06\x00" + b"\xff" * 5
    assert record_error(refit(batch(1), body=body))[0] == 0


def test_compacted_topics_need_keys():
    buf = batch(1, key=None)
    check(buf)
    assert record_error(buf, COMPACTED) == (
        0, "Compacted topic cannot accept message without key")


def test_every_bad_record_of_a_batch_is_listed():
    """KIP-467: the produce answer lists each refused record (librdkafka fails exactly those
    with INVALID_RECORD and the rest of the batch with _INVALID_DIFFERENT_RECORD)."""
    buf = build_batch([(None if i % 10 == 0 else b"k", b"v", None, TS) for i in range(100)])
    with pytest.raises(InvalidRecord) as e:
        check(buf, COMPACTED)
    assert [i for i, _m in e.value.record_errors] == list(range(0, 100, 10))
    assert str(e.value).startswith("One or more records have been rejected due to 10 record "
                                   "errors in total, and only showing the first three errors at "
                                   "most: [RecordError(batchIndex=0, message='Compacted topic")


def test_a_wrong_max_timestamp_is_rewritten():
    """Sarama 1.22 sends maxTimestamp -1: Kafka rewrites it from the records (CreateTime)."""
    buf = build_batch([(b"k", b"v", None, TS + d) for d in (5, 30, 10)])
    struct.pack_into(">q", buf, 35, -1)
    buf = refit(buf)
    (h,) = check(buf).batches
    assert h.max_timestamp == TS + 30
    assert struct.unpack_from(">q", buf, 35)[0] == TS + 30
    assert struct.unpack_from(">I", buf, 17)[0] == compute_crc(buf, 0, len(buf))
    untouched = bytes(buf)
    check(buf)
    assert bytes(buf) == untouched


def test_compressed_payload_must_decompress():
    """The issue's case: zstd attribute, garbage payload (it would stop consumers for good)."""
    buf = refit(batch(2), attributes=R.ZSTD, body=b"\x28\xb5\x2f\xfd garbage garbage")
    with pytest.raises(CorruptRecord, match="cannot decompress zstd"):
        check(buf)


def test_compressed_records_are_walked_too():
    inner = record(0) + record(1)
    buf = refit(batch(3), attributes=R.GZIP, body=R.compress(R.GZIP, inner))
    assert record_error(buf)[0] == 2


@pytest.mark.parametrize("codec", [5, 6, 7])
def test_unknown_codec(codec):
    with pytest.raises(CorruptRecord, match=f"unknown compression codec {codec}"):
        check(refit(batch(1), attributes=codec))


def test_timestamps_outside_the_window():
    now = TS + 10_000
    buf = build_batch([(b"k", b"a", None, now - 5_000), (b"k", b"b", None, now + 100)])
    check(buf, window(5_000, 100), now_ms=now)
    with pytest.raises(InvalidTimestamp) as e:
        check(buf, window(4_999, 100), now_ms=now)
    assert e.value.record_errors[0][0] == 0 and e.value.error_code == 32
    with pytest.raises(InvalidTimestamp) as e:
        check(buf, window(5_000, 99), now_ms=now)
    assert e.value.record_errors[0][0] == 1


def test_timestamp_window_from_the_topic_config():
    assert LogConfig.from_props({}).timestamp_window() is None
    assert LogConfig.from_props({"message.timestamp.before.max.ms": "10"}).timestamp_window() \
        == (10, LONG_MAX)
    assert LogConfig.from_props(
        {"message.timestamp.difference.max.ms": "7"}).timestamp_window() == (7, 7)
    assert LogConfig.from_props({"message.timestamp.after.max.ms": "3",
                                 "message.timestamp.type": "LogAppendTime"}
                                ).timestamp_window() is None


def test_an_oversized_batch_is_refused_before_its_records():
    """Kafka answers MESSAGE_TOO_LARGE for a batch over max.message.bytes without walking it."""
    buf = refit(batch(2), count=1000, last_delta=999)
    config = LogConfig.from_props({"max.message.bytes": str(len(buf) - 1)})
    with pytest.raises(RecordTooLarge, match=f"batch of {len(buf)} bytes exceeds"):
        check(buf, config)
    with pytest.raises(RecordTooLarge):
        own_records(build_batch([(b"k", b"v" * 200, None, TS)]), config)


@pytest.mark.parametrize("codec", [R.NONE, R.LZ4])
def test_log_append_time_is_stamped_in_the_same_pass(codec):
    """LogAppendTime: maxTimestamp = now and the timestamp-type bit, one CRC; a wrong
    CreateTime maxTimestamp (Sarama's -1) needs no rewrite of its own first."""
    buf = batch(3, codec=codec)
    struct.pack_into(">q", buf, 35, -1)
    buf = refit(buf)
    validated = check(buf, LOG_APPEND_TIME, now_ms=TS + 777)
    (h,) = validated.batches
    assert validated.log_append_time_ms == h.max_timestamp == TS + 777
    assert read_header(buf).attributes & 0x08 and read_header(buf).max_timestamp == TS + 777
    validate_batches(buf)  # the CRC is right
    assert check(batch(1)).log_append_time_ms == -1
    marker = build_batch([R.control_record(R.CONTROL_COMMIT)], control=True, transactional=True,
                         producer_id=1, producer_epoch=0)
    assert own_records(marker, LOG_APPEND_TIME, now_ms=5).batches[0].max_timestamp == 5
    validate_batches(marker)


def test_the_log_writes_offsets_and_epochs_at_the_positions_found(tmp_path):
    """After validation only baseOffset and partitionLeaderEpoch change, outside the CRC."""
    buf = batch(2) + batch(3, codec=R.GZIP) + batch(1)
    validated = check(buf, now_ms=TS)
    before = bytes(buf)
    lg = Log(tmp_path / "t-0")
    assert lg.append(validated, leader_epoch=4) == (0, 5)
    assert lg.append(check(batch(2)), leader_epoch=4) == (6, 7)
    changed = {i for i, (a, b) in enumerate(zip(before, buf)) if a != b}
    owned = {h.pos + i for h in validated.batches for i in list(range(8)) + list(range(12, 16))}
    assert changed <= owned
    assert [(h.base_offset, h.leader_epoch) for h in validate_batches(buf)] == \
        [(0, 4), (2, 4), (5, 4)]
    lg.close()


def _legacy_set(magic, rows, codec=R.NONE):
    out = bytearray()
    for i, (key, ts) in enumerate(rows):
        legacy.write_message(out, i, magic, 0, ts, key, b"v")
    if codec == R.NONE:
        return out
    wrapper = bytearray()
    legacy.write_message(wrapper, len(rows) - 1, magic, codec, rows[0][1], None,
                         R.compress(codec, bytes(out)))
    return wrapper


@pytest.mark.parametrize("codec", [R.NONE, R.GZIP])
@pytest.mark.parametrize("config", [COMPACTED, window(50, 50)], ids=["compacted", "window"])
def test_old_formats_are_checked_as_their_v2_batch_would_be(config, codec):
    """Produce v0-2: the records are checked as they are converted, with the errors the walk
    gives for the same records in a v2 batch."""
    rows = [(b"k", TS), (None, TS + 100), (b"k", TS + 10), (None, TS - 100)]
    v1 = _legacy_set(1, rows, codec)
    with pytest.raises(InvalidRecord) as converted:
        check(v1, config, now_ms=TS, old_formats=True)
    with pytest.raises(InvalidRecord) as walked:
        check(build_batch([(k, b"v", None, ts) for k, ts in rows]), config, now_ms=TS)
    assert type(converted.value) is type(walked.value)
    assert converted.value.record_errors == walked.value.record_errors
    assert str(converted.value) == str(walked.value)
    good = check(_legacy_set(1, [(b"k", TS)], codec), config, now_ms=TS, old_formats=True)
    assert [(r.key, r.timestamp) for r in iter_records(good.buf, good.batches[0])] == \
        [(b"k", TS)]


def test_old_formats_get_log_append_time_and_the_size_limit():
    v0 = _legacy_set(0, [(b"k", -1), (b"k", -1)])
    validated = check(v0, LOG_APPEND_TIME, now_ms=TS, old_formats=True)
    (h,) = validate_batches(validated.buf)
    assert h.attributes & 0x08 and h.max_timestamp == TS == validated.log_append_time_ms
    small = LogConfig.from_props({"max.message.bytes": "70"})
    with pytest.raises(RecordTooLarge):
        check(v0, small, old_formats=True)
    v2 = batch(1)  # a v2 batch sent with Produce v0-2 is taken as it is
    assert check(v2, old_formats=True).buf is v2


def test_v0_messages_have_no_timestamp_to_check_against_the_window():
    """Kafka checks a record's timestamp against message.timestamp.before/after.max.ms only
    where it has one: v0 messages (-1) pass on a topic with a window, v1 ones out of it not."""
    v0 = _legacy_set(0, [(b"k", -1), (b"k", -1)])
    validated = check(v0, window(50, 50), now_ms=TS, old_formats=True)
    assert [r.timestamp for r in iter_records(validated.buf, validated.batches[0])] == [-1, -1]
    with pytest.raises(InvalidRecord):
        check(_legacy_set(1, [(b"k", TS - 100)]), window(50, 50), now_ms=TS, old_formats=True)
