"""Produce validates the inside of every batch (issue 11, defect 3).

Batches are built by hand over a raw socket (compat_tests/rawkafka.py, not the broker's wire/
package), each with a valid CRC, so only record-level validation can catch them. After every
refusal the log end offset has not moved and a stock confluent-kafka consumer still reads the
partition from the beginning.
"""
from __future__ import annotations

import time
import zlib

import pytest
from confluent_kafka import TopicPartition

from compat_tests import rawkafka as rk
from compat_tests.helpers import consumer, create_topic, read_partition, unique_topic
from compat_tests.targets import Target

pytestmark = pytest.mark.timeout(60)

TS = 1_700_000_000_000


def batch(records: bytes, count: int, attributes: int = 0, max_timestamp: int = TS) -> bytes:
    """A magic-2 batch of already encoded ``records`` whose header claims ``count`` records."""
    after_crc = (rk.int16(attributes) + rk.int32(count - 1) + rk.int64(TS)
                 + rk.int64(max_timestamp)
                 + rk.int64(-1) + rk.int16(-1) + rk.int32(-1) + rk.int32(count) + records)
    after_length = rk.int32(0) + rk.int8(2) + rk.uint32(rk.crc32c(after_crc)) + after_crc
    return rk.int64(0) + rk.int32(len(after_length)) + after_length


def records(n: int, key: bytes | None = b"k") -> bytes:
    return b"".join(rk.record(i, key, b"value-%d" % i) for i in range(n))


def produce(target, topic, data):
    """A raw Produce v9 to the partition's leader; its answer for partition 0."""
    with rk.RawConnection(target.leader_bootstrap(topic, 0)) as conn:
        return rk.produce_v9(conn, topic, 0, data)[(topic, 0)]


def end_offset(target, topic):
    c = consumer(target.bootstrap)
    try:
        return c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1]
    finally:
        c.close()


@pytest.fixture
def topic(new_topic):
    return new_topic(partitions=1)


def _refused(target, topic, data, code):
    before = end_offset(target, topic)
    r = produce(target, topic, data)
    assert r["error_code"] == code, r
    assert r["base_offset"] == -1
    assert end_offset(target, topic) == before
    return r


def test_count_claiming_more_records_than_held(target, topic):
    assert produce(target, topic, batch(records(2), 2))["error_code"] == rk.NONE
    for claimed in (1000, 0x7FFFFFFF):
        r = _refused(target, topic, batch(records(2), claimed), rk.INVALID_RECORD)
        assert [i for i, _m in r["record_errors"]] == [2]
        assert "record 2" in r["error_message"]
    assert [m.value() for m in read_partition(target.bootstrap, topic, 0, 2)] == [
        b"value-0", b"value-1"]
    assert end_offset(target, topic) == 2


def test_count_claiming_fewer_records_than_held(target, topic):
    r = _refused(target, topic, batch(records(3), 2), rk.INVALID_RECORD)
    assert "records still remaining" in r["record_errors"][0][1]


def test_garbage_compressed_payloads_are_corrupt(target, topic):
    """zstd (4), gzip (1) and lz4 (3) attributes over bytes that do not decompress: refused,
    so no stock consumer ever meets them."""
    for codec, junk in ((4, b"\x28\xb5\x2f\xfd" + b"junk" * 8), (1, b"\x1f\x8b" + b"junk" * 8),
                        (3, b"\x04\x22\x4d\x18" + b"junk" * 8)):
        _refused(target, topic, batch(junk, 2, attributes=codec), rk.CORRUPT_MESSAGE)
    good = zlib.compress(records(2))  # zlib, not gzip framing: still not a gzip stream
    _refused(target, topic, batch(good, 2, attributes=1), rk.CORRUPT_MESSAGE)
    assert produce(target, topic, batch(records(1), 1))["error_code"] == rk.NONE
    (m,) = read_partition(target.bootstrap, topic, 0, 1)
    assert m.value() == b"value-0"


def test_unknown_compression_codec_is_corrupt(target, topic):
    for codec in (5, 6, 7):
        _refused(target, topic, batch(records(1), 1, attributes=codec), rk.CORRUPT_MESSAGE)


def test_offset_deltas_must_follow_the_records(target, topic):
    data = rk.record(0, b"k", b"a") + rk.record(7, b"k", b"b")
    r = _refused(target, topic, batch(data, 2), rk.INVALID_RECORD)
    assert r["record_errors"][0][0] == 1


def test_compacted_topic_refuses_records_without_key(target, new_topic):
    compacted = new_topic(partitions=1, config={"cleanup.policy": "compact"})
    data = rk.record(0, b"k", b"a") + rk.record(1, None, b"b")
    r = _refused(target, compacted, batch(data, 2), rk.INVALID_RECORD)
    assert r["record_errors"] == [(1, "Compacted topic cannot accept message without key")]
    assert produce(target, compacted, batch(records(2), 2))["error_code"] == rk.NONE


def test_timestamps_outside_the_topic_window(target, new_topic):
    """message.timestamp.before.max.ms = 1 h: a record stamped a day ago is INVALID_TIMESTAMP
    (32) with its index; a current one is accepted."""
    t = new_topic(partitions=1, config={"message.timestamp.before.max.ms": "3600000"})
    now = int(time.time() * 1000)
    data = rk.record(0, b"k", b"now") + rk.record(1, b"k", b"old", timestamp_delta=-86_400_000)
    after_crc = (rk.int16(0) + rk.int32(1) + rk.int64(now) + rk.int64(now) + rk.int64(-1)
                 + rk.int16(-1) + rk.int32(-1) + rk.int32(2) + data)
    old = (rk.int64(0) + rk.int32(9 + len(after_crc)) + rk.int32(0) + rk.int8(2)
           + rk.uint32(rk.crc32c(after_crc)) + after_crc)
    r = _refused(target, t, old, 32)
    assert [i for i, _m in r["record_errors"]] == [1]
    assert produce(target, t, rk.record_batch([(b"k", b"v")], now))["error_code"] == rk.NONE


def test_decompression_bomb_is_refused(target, topic):
    """A 4 kB zstd batch that would inflate to 140 MB is refused (CORRUPT_MESSAGE) instead of
    making the broker allocate it; the broker goes on serving."""
    import zstandard

    bomb = zstandard.ZstdCompressor().compress(rk.record(0, b"k", bytes(140_000_000)))
    assert len(bomb) < 100_000
    r = _refused(target, topic, batch(bomb, 1, attributes=4), rk.CORRUPT_MESSAGE)
    assert "more than" in r["error_message"]
    assert produce(target, topic, batch(records(1), 1))["error_code"] == rk.NONE


def test_a_batch_without_max_timestamp_is_found_by_time(target, topic):
    """Sarama 1.22 sends maxTimestamp -1: the broker sets it from the records (as Kafka's log
    validator does), so ListOffsets by timestamp finds them."""
    data = b"".join(rk.record(i, b"k", b"s%d" % i, timestamp_delta=10 * i) for i in range(3))
    assert produce(target, topic, batch(data, 3, max_timestamp=-1))["error_code"] == rk.NONE
    c = consumer(target.bootstrap)
    try:
        found = [c.offsets_for_times([TopicPartition(topic, 0, ts)], timeout=10)[0].offset
                 for ts in (TS, TS + 11, TS + 20, TS + 21)]
    finally:
        c.close()
    assert found == [0, 2, 2, -1]


def test_a_broker_without_the_c_helper_validates_and_loads_the_same(broker_factory, monkeypatch):
    """JOSEFK_PURE_PYTHON=1: the broker walks records in plain Python (as installed where no C
    compiler was at hand) and answers exactly as with the native walk: per-record errors, a
    rewritten max timestamp, and committed offsets loaded back after a restart."""
    monkeypatch.setenv("JOSEFK_PURE_PYTHON", "1")
    b = broker_factory()
    t = Target("single", {1: b})  # what the raw produce helpers speak to
    assert "records are walked in plain Python" in b.log_path.read_text()
    compacted = create_topic(b.bootstrap, unique_topic("pure"), 1,
                             config={"cleanup.policy": "compact"})
    data = rk.record(0, b"k", b"a") + rk.record(1, None, b"b") + rk.record(2, None, b"c")
    r = _refused(t, compacted, batch(data, 3), rk.INVALID_RECORD)
    assert [i for i, _m in r["record_errors"]] == [1, 2]
    plain = create_topic(b.bootstrap, unique_topic("pure-ts"), 1)
    stamped = b"".join(rk.record(i, b"k", b"s%d" % i, timestamp_delta=10 * i) for i in range(3))
    assert produce(t, plain, batch(stamped, 3, max_timestamp=-1))["error_code"] == rk.NONE
    group = unique_topic("pure-g")
    c = consumer(b.bootstrap, **{"group.id": group})
    try:
        assert c.offsets_for_times([TopicPartition(plain, 0, TS + 11)], timeout=10)[0].offset == 2
        c.commit(offsets=[TopicPartition(plain, 0, 3)], asynchronous=False)
    finally:
        c.close()
    b.restart()
    c = consumer(b.bootstrap, **{"group.id": group})
    try:
        assert c.committed([TopicPartition(plain, 0)], timeout=20)[0].offset == 3
    finally:
        c.close()
