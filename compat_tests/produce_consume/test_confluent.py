"""confluent-kafka (librdkafka) against josefk over real sockets."""

from __future__ import annotations

import os
import time

import pytest
from confluent_kafka import (
    OFFSET_BEGINNING,
    OFFSET_END,
    TIMESTAMP_CREATE_TIME,
    TIMESTAMP_LOG_APPEND_TIME,
    KafkaError,
    KafkaException,
    TopicPartition,
)
from confluent_kafka.admin import OffsetSpec

from compat_tests import rawkafka
from compat_tests.helpers import (
    DeliveryLog,
    admin_client,
    assert_no_more,
    consume_n,
    consumer,
    flush_all,
    produce_plain,
    producer,
    read_from_beginning,
    read_partition,
    unique_topic,
)

pytestmark = pytest.mark.timeout(90)

BASE_TS = 1_700_000_000_000
CODEC_IDS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


def _message(i: int):
    """A varied but deterministic message i: keyed / null key / null value / headers."""
    kind = i % 5
    key = None if kind == 1 else f"key-{i}".encode()
    value = None if kind == 2 else f"value-{i}|".encode() + b"abcdefgh" * (i % 40)
    if kind == 3:
        headers = [("h1", f"v{i}".encode()), ("empty", b""), ("h1", b"dup"), ("nullhdr", None)]
    elif kind == 4:
        headers = [("utf8-\u00e9", "\u2603".encode())]
    else:
        headers = None
    if i == 7:
        value = os.urandom(20000)  # one bigger, incompressible record in the batch
    return key, value, headers


def _check_messages(msgs, expected, first_offset=0):
    assert len(msgs) == len(expected)
    for n, (m, (key, value, headers, ts)) in enumerate(zip(msgs, expected)):
        where = f"message #{n} (offset {m.offset()})"
        assert m.offset() == first_offset + n, where
        assert m.key() == key, where
        assert m.value() == value, where
        assert m.headers() == headers, where
        assert m.timestamp() == (TIMESTAMP_CREATE_TIME, ts), where


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_compression_round_trip(target, new_topic, codec):
    topic = new_topic(partitions=1)
    p = producer(target.bootstrap, **{"compression.type": codec, "linger.ms": 50,
                                      "acks": "all"})
    log = DeliveryLog()
    expected = []
    n = 150
    for i in range(n):
        key, value, headers = _message(i)
        ts = BASE_TS + i
        kwargs = {"headers": headers} if headers is not None else {}
        p.produce(topic, key=key, value=value, partition=0, timestamp=ts, on_delivery=log, **kwargs)
        expected.append((key, value, headers, ts))
    flush_all(p)
    assert log.errors == []
    assert [(pt, off) for pt, off, _, _ in log.ok] == [(0, i) for i in range(n)]

    msgs = read_partition(target.bootstrap, topic, 0, n)
    _check_messages(msgs, expected)

    # Independent look at the stored batches (raw Fetch): the producer's codec is
    # kept (compression.type=producer is Kafka's default) and the batches really
    # carry the records, magic 2, contiguous offsets.
    with rawkafka.RawConnection(target.leader_bootstrap(topic, 0)) as conn:
        version = rawkafka.pick_version(rawkafka.api_versions(conn), rawkafka.FETCH,
                                        rawkafka.FETCH_VERSIONS)
        if version is None:
            pytest.skip("broker offers no Fetch version between 4 and 12 for the raw check")
        seen = []
        offset = 0
        while offset < n:
            resp = rawkafka.fetch(conn, version, topic, 0, offset)
            part = resp["partitions"][(topic, 0)]
            assert part["error_code"] == 0
            assert part["high_watermark"] == n
            batches = list(rawkafka.parse_batches(part["records"]))
            assert batches, f"no complete batch at offset {offset}"
            for b in batches:
                if b["base_offset"] + b["last_offset_delta"] < offset:
                    continue
                seen.append(b)
                offset = b["base_offset"] + b["last_offset_delta"] + 1
        assert all(b["magic"] == 2 for b in seen)
        codecs = {b["attributes"] & 0x7 for b in seen}
        hint = ""
        if codec == "lz4" and 10 not in rawkafka.api_versions(conn):
            hint = (" (librdkafka only uses lz4 when the broker advertises FindCoordinator, "
                    "api key 10, in ApiVersions; otherwise it silently sends uncompressed)")
        # librdkafka sends a batch uncompressed when compressing would not shrink it (small
        # batches under load): the codec must be kept, and nothing else stored instead.
        assert CODEC_IDS[codec] in codecs and codecs <= {CODEC_IDS[codec], 0}, \
            f"stored codecs {codecs}{hint}"
        assert sum(b["count"] for b in seen) == n
        assert seen[0]["base_offset"] == 0
        for a, b in zip(seen, seen[1:]):
            assert b["base_offset"] == a["base_offset"] + a["last_offset_delta"] + 1


def test_consumer_from_earliest(target, new_topic):
    topic = new_topic(partitions=2)
    values = [f"m{i}".encode() for i in range(10)]
    produce_plain(target.bootstrap, topic, values, partition=1)
    msgs = read_partition(target.bootstrap, topic, 1, 10)
    assert [(m.partition(), m.offset(), m.value()) for m in msgs] == [
        (1, i, v) for i, v in enumerate(values)
    ]
    # Partition 0 stayed empty.
    c = consumer(target.bootstrap)
    try:
        c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        assert_no_more(c, 1.0)
    finally:
        c.close()


def test_consumer_from_latest_sees_only_new_messages(target, new_topic):
    topic = new_topic(partitions=1)
    produce_plain(target.bootstrap, topic, [f"old{i}".encode() for i in range(10)])
    c = consumer(target.bootstrap)
    try:
        c.assign([TopicPartition(topic, 0, OFFSET_END)])
        # Give the consumer time to resolve "latest" (offset 10) before producing more.
        assert_no_more(c, 2.0)
        new = [f"new{i}".encode() for i in range(5)]
        produce_plain(target.bootstrap, topic, new)
        msgs = consume_n(c, 5)
        assert_no_more(c, 0.5)
    finally:
        c.close()
    assert [(m.offset(), m.value()) for m in msgs] == [(10 + i, v) for i, v in enumerate(new)]


def test_consumer_from_given_offset(target, new_topic):
    topic = new_topic(partitions=1)
    values = [f"m{i}".encode() for i in range(10)]
    produce_plain(target.bootstrap, topic, values)
    msgs = read_partition(target.bootstrap, topic, 0, 5, start=5)
    assert [(m.offset(), m.value()) for m in msgs] == [(i, values[i]) for i in range(5, 10)]


@pytest.mark.parametrize("acks", ["0", "1", "all"])
def test_produce_acks(target, new_topic, acks):
    topic = new_topic(partitions=1)
    values = [f"acks{acks}-{i}".encode() for i in range(50)]
    log = produce_plain(target.bootstrap, topic, values, acks=acks)
    assert len(log.ok) == 50
    if acks != "0":
        assert [off for _, off, _, _ in log.ok] == list(range(50))
    msgs = read_partition(target.bootstrap, topic, 0, 50)
    assert [(m.offset(), m.value()) for m in msgs] == list(enumerate(values))


def _produce_timestamped(bootstrap, topic, n, step=1000):
    p = producer(bootstrap, acks="all")
    log = DeliveryLog()
    for i in range(n):
        p.produce(topic, value=f"ts{i}".encode(), partition=0, timestamp=BASE_TS + i * step,
                  on_delivery=log)
        p.flush(10)  # one batch per message: timestamp lookups cross batch boundaries
    assert log.errors == []
    assert [off for _, off, _, _ in log.ok] == list(range(n))


def test_list_offsets_earliest_latest_and_by_time(target, new_topic):
    topic = new_topic(partitions=1)
    _produce_timestamped(target.bootstrap, topic, 10)
    tp = TopicPartition(topic, 0)

    admin = admin_client(target.bootstrap)
    earliest = admin.list_offsets({tp: OffsetSpec.earliest()}, request_timeout=15)[tp].result(15)
    latest = admin.list_offsets({tp: OffsetSpec.latest()}, request_timeout=15)[tp].result(15)
    assert earliest.offset == 0
    assert latest.offset == 10

    c = consumer(target.bootstrap)
    try:
        assert c.get_watermark_offsets(tp, timeout=10) == (0, 10)
        queries = {
            BASE_TS - 5000: 0,          # before everything: first offset
            BASE_TS: 0,                 # exact
            BASE_TS + 2500: 3,          # first record with timestamp >= query
            BASE_TS + 9000: 9,          # the last record
            BASE_TS + 100_000: -1,      # after everything: no offset (-1)
        }
        for ts, want in queries.items():
            (res,) = c.offsets_for_times([TopicPartition(topic, 0, ts)], timeout=10)
            assert res.error is None, (ts, res.error)
            assert res.offset == want, f"offsets_for_times({ts - BASE_TS:+d}ms) -> {res.offset}"
    finally:
        c.close()


def test_list_offsets_max_timestamp(target, new_topic):
    topic = new_topic(partitions=1)
    p = producer(target.bootstrap, acks="all")
    # The newest timestamp sits in the middle of the log.
    for i, ts in enumerate([BASE_TS, BASE_TS + 50_000, BASE_TS + 10_000]):
        p.produce(topic, value=f"v{i}".encode(), partition=0, timestamp=ts)
        flush_all(p)
    tp = TopicPartition(topic, 0)
    admin = admin_client(target.bootstrap)
    res = admin.list_offsets({tp: OffsetSpec.max_timestamp()}, request_timeout=15)[tp].result(15)
    assert (res.offset, res.timestamp) == (1, BASE_TS + 50_000)


def _log_append_time_records(target, new_topic):
    """Three records, one batch each, a few milliseconds apart, into a topic with
    message.timestamp.type=LogAppendTime. Returns the topic, the timestamps of the delivery
    reports, and the wall clock before and after producing."""
    topic = new_topic(partitions=1, config={"message.timestamp.type": "LogAppendTime"})
    p = producer(target.bootstrap, acks="all")
    reports = []
    before = int(time.time() * 1000)
    for i in range(3):
        p.produce(topic, value=b"v%d" % i, partition=0, timestamp=BASE_TS + i,
                  on_delivery=lambda err, msg: reports.append((err, msg.offset(),
                                                               msg.timestamp())))
        flush_all(p)
        time.sleep(0.02)
    after = int(time.time() * 1000)
    assert [(err, offset) for err, offset, _ in reports] == [(None, 0), (None, 1), (None, 2)]
    return topic, [ts for _, _, ts in reports], before, after


def test_log_append_time_replaces_the_producers_timestamps(target, new_topic):
    """The partition leader stamps every batch with its clock as it appends it: consumers read
    that log-append time, and ListOffsets by timestamp finds records by it."""
    topic, _reported, before, after = _log_append_time_records(target, new_topic)
    stamps = [m.timestamp() for m in read_partition(target.bootstrap, topic, 0, 3)]
    assert all(kind == TIMESTAMP_LOG_APPEND_TIME and before <= ts <= after
               for kind, ts in stamps), stamps
    assert [ts for _, ts in stamps] == sorted({ts for _, ts in stamps})  # increasing
    c = consumer(target.bootstrap)
    try:
        for query, want in ((stamps[1][1], 1), (stamps[2][1], 2), (after + 60_000, -1)):
            (res,) = c.offsets_for_times([TopicPartition(topic, 0, query)], timeout=10)
            assert (res.error, res.offset) == (None, want), query
    finally:
        c.close()


def test_log_append_time_reaches_the_producer(target, new_topic):
    """The produce response carries the time the leader stamped (log_append_time_ms): the
    delivery report shows the same log-append timestamp as the consumers read."""
    topic, reported, _before, _after = _log_append_time_records(target, new_topic)
    stamps = [m.timestamp() for m in read_partition(target.bootstrap, topic, 0, 3)]
    assert reported == stamps


def test_metadata_unknown_topic_auto_created(target):
    admin = admin_client(target.bootstrap)
    name = unique_topic("auto")
    assert name not in admin.list_topics(timeout=10).topics
    p = producer(target.bootstrap, acks="all")
    log = DeliveryLog()
    p.produce(name, key=b"k", value=b"first", on_delivery=log)
    flush_all(p, 20)
    assert log.errors == []
    ((part, offset, _, _),) = log.ok
    assert offset == 0
    # Every target runs with num.partitions=2.
    t = target.wait_for_topic(name, 2)
    assert sorted(t.partitions) == [0, 1]
    assert part in (0, 1)
    (m,) = read_partition(target.bootstrap, name, part, 1)
    assert (m.key(), m.value(), m.offset()) == (b"k", b"first", 0)


def test_large_message(target, new_topic):
    topic = new_topic(partitions=1)
    big = [os.urandom(900 * 1024), os.urandom(900 * 1024)]
    p = producer(target.bootstrap, acks="all")
    log = DeliveryLog()
    for v in big:
        p.produce(topic, key=b"big", value=v, partition=0, on_delivery=log)
    p.produce(topic, key=b"small", value=b"after", partition=0, on_delivery=log)
    flush_all(p, 30)
    assert log.errors == []
    assert [off for _, off, _, _ in log.ok] == [0, 1, 2]
    msgs = read_partition(target.bootstrap, topic, 0, 3, timeout=30)
    assert [(m.offset(), m.key()) for m in msgs] == [(0, b"big"), (1, b"big"), (2, b"small")]
    assert msgs[0].value() == big[0]
    assert msgs[1].value() == big[1]
    assert msgs[2].value() == b"after"


def test_produce_to_unknown_partition_fails(target, new_topic):
    topic = new_topic(partitions=1)
    p = producer(target.bootstrap, acks="all", **{"message.timeout.ms": 5000})
    log = DeliveryLog()
    # Learn the partition count first, as any real producer would.
    assert len(p.list_topics(topic, timeout=10).topics[topic].partitions) == 1
    try:
        p.produce(topic, value=b"x", partition=7, on_delivery=log)
    except KafkaException as e:  # rejected up front from metadata
        assert e.args[0].code() == KafkaError._UNKNOWN_PARTITION
    else:  # or failed asynchronously
        p.flush(15)
        assert log.ok == []
        assert [e.code() for e, _, _ in log.errors] == [KafkaError._UNKNOWN_PARTITION]


def test_many_producers_interleaved_partition_order(target, new_topic):
    """Three producers writing to the same partitions concurrently: each partition
    holds every message once, and each producer's messages keep their order."""
    topic = new_topic(partitions=2)
    producers = [producer(target.bootstrap, acks="all", **{"linger.ms": 2}) for _ in range(3)]
    logs = [DeliveryLog() for _ in producers]
    per = 300
    for i in range(per):
        for pi, (p, log) in enumerate(zip(producers, logs)):
            p.produce(topic, key=f"p{pi}".encode(), value=f"{pi}:{i}".encode(),
                      partition=i % 2, on_delivery=log)
            p.poll(0)
    for p in producers:
        flush_all(p)
    assert all(log.errors == [] for log in logs)
    msgs = read_from_beginning(target.bootstrap, topic, 2, 3 * per, timeout=30)
    for part in range(2):
        pm = [m for m in msgs if m.partition() == part]
        assert [m.offset() for m in pm] == list(range(len(pm)))
        for pi in range(3):
            seq = [int(m.value().split(b":")[1]) for m in pm if m.key() == f"p{pi}".encode()]
            assert seq == list(range(part, per, 2)), f"producer {pi} partition {part}"
    # Delivery reports agree with what was read back.
    stored = {(m.partition(), m.offset()): m.value() for m in msgs}
    for log in logs:
        for pt, off, _, value in log.ok:
            assert stored[(pt, off)] == value


def test_message_larger_than_broker_limit_is_refused(target, new_topic):
    """Above message.max.bytes (Kafka default 1048588) the broker answers
    MESSAGE_TOO_LARGE (10); the topic-level max.message.bytes applies too."""
    topic = new_topic(partitions=1)
    small_limit = new_topic(partitions=1, config={"max.message.bytes": "10000"})
    p = producer(target.bootstrap, acks="all", **{"message.max.bytes": 4_000_000,
                                                  "message.timeout.ms": 10000})
    log = DeliveryLog()
    # One batch each (the limit applies to a whole batch).
    p.produce(topic, value=os.urandom(2_000_000), partition=0, on_delivery=log)
    p.flush(20)
    p.produce(small_limit, value=os.urandom(20_000), partition=0, on_delivery=log)
    p.flush(20)
    p.produce(small_limit, value=b"fits", partition=0, on_delivery=log)
    p.flush(20)
    codes = sorted((e.code(), len(v)) for e, _, v in log.errors)
    assert codes == [(KafkaError.MSG_SIZE_TOO_LARGE, 20_000),
                     (KafkaError.MSG_SIZE_TOO_LARGE, 2_000_000)]
    assert [(off, v) for _, off, _, v in log.ok] == [(0, b"fits")]
    (m,) = read_partition(target.bootstrap, small_limit, 0, 1)
    assert (m.offset(), m.value()) == (0, b"fits")


@pytest.mark.parametrize("codec", ["gzip", "zstd"])
def test_consume_from_inside_a_compressed_batch(target, new_topic, codec):
    """Fetching from the middle of a compressed batch returns that batch; the
    client drops the records before the requested offset."""
    topic = new_topic(partitions=1)
    p = producer(target.bootstrap, acks="all", **{"compression.type": codec, "linger.ms": 100})
    values = [f"rec-{i}".encode() * 3 for i in range(100)]
    log = DeliveryLog()
    for v in values:
        p.produce(topic, value=v, partition=0, on_delivery=log)
    flush_all(p)
    assert [off for _, off, _, _ in log.ok] == list(range(100))
    msgs = read_partition(target.bootstrap, topic, 0, 50, start=50)
    assert [(m.offset(), m.value()) for m in msgs] == [(i, values[i]) for i in range(50, 100)]
