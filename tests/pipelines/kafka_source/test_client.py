"""The Python Kafka source's writer on a real broker (``josefk_broker``), without Spark: Arrow
batches in, records read back with a plain consumer."""
from __future__ import annotations

import time
import uuid

import pyarrow as pa
import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from josefk.pipelines.kafka_source.client import HEADERS_TYPE, Writer

pytestmark = pytest.mark.josefk_topic(partitions=2)


def read_all(bootstrap, topic, count, partitions=2, timeout=30.0):
    """The first ``count`` records of ``topic``: (partition, key, value, headers) in offset
    order per partition."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{uuid.uuid4().hex[:8]}",
                  "enable.auto.commit": False})
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got, deadline = [], time.monotonic() + timeout
    try:
        while len(got) < count and time.monotonic() < deadline:
            for m in c.consume(count - len(got), timeout=1.0):
                assert m.error() is None, m.error()
                got.append((m.partition(), m.key(), m.value(), m.headers()))
    finally:
        c.close()
    assert len(got) == count, f"{len(got)} of {count} records read"
    return got


def batch(**columns) -> pa.RecordBatch:
    return pa.RecordBatch.from_pydict(columns)


def test_every_column_as_spark_sends_it(josefk_broker, josefk_topic):
    headers = [[{"key": "h", "value": b"1"}, {"key": "g", "value": None}], None, []]
    rows = batch(key=pa.array([b"k0", None, b"k2"], pa.binary()),
                 value=pa.array([b"v0", b"", None], pa.binary()),
                 partition=pa.array([1, 0, 1], pa.int32()),
                 headers=pa.array(headers, HEADERS_TYPE))
    assert Writer({"bootstrap.servers": josefk_broker.bootstrap_servers},
                  josefk_topic).write([rows]) == 3
    assert sorted(read_all(josefk_broker.bootstrap_servers, josefk_topic, 3)) == [
        (0, None, b"", None),  # an empty value stays empty; no headers
        (1, b"k0", b"v0", [("h", b"1"), ("g", None)]),
        (1, b"k2", None, None),  # a null value is a tombstone
    ]


def test_strings_go_as_utf8_and_rows_without_a_partition_go_by_key(josefk_broker, josefk_topic):
    keys = [f"clé-{i % 3}" for i in range(30)]
    rows = batch(key=pa.array(keys, pa.string()),
                 value=pa.array([f"v{i} ✓" for i in range(30)], pa.string()),
                 partition=pa.array([None] * 30, pa.int32()))
    Writer({"bootstrap.servers": josefk_broker.bootstrap_servers}, josefk_topic).write([rows])
    got = read_all(josefk_broker.bootstrap_servers, josefk_topic, 30)
    assert sorted(v.decode() for _, _, v, _ in got) == sorted(f"v{i} ✓" for i in range(30))
    by_key = {}
    for p, k, _, _ in got:
        by_key.setdefault(k.decode(), set()).add(p)
    assert set(by_key) == set(keys) and all(len(ps) == 1 for ps in by_key.values())


def test_topic_column_and_a_null_topic(josefk_broker, josefk_topic):
    other = josefk_broker.create_topic(f"other-{uuid.uuid4().hex[:8]}", 2)
    writer = Writer({"bootstrap.servers": josefk_broker.bootstrap_servers}, None)
    rows = batch(topic=[josefk_topic, other, other], value=[b"a", b"b", b"c"],
                 partition=pa.array([0, 0, 1], pa.int32()))
    writer.write([rows])
    assert read_all(josefk_broker.bootstrap_servers, josefk_topic, 1) == [(0, None, b"a", None)]
    assert sorted(read_all(josefk_broker.bootstrap_servers, other, 2)) == \
        [(0, None, b"b", None), (1, None, b"c", None)]
    with pytest.raises(ValueError, match="null topic present in the data"):
        writer.write([batch(topic=[other, None], value=[b"x", b"y"])])


def test_a_full_local_queue_loses_and_repeats_no_row(josefk_broker, josefk_topic):
    """A queue of 7 records: produce() refuses most rows at first; every row goes once, in
    order, across batches and slices of batches."""
    n = 500
    rows = batch(value=[f"{i}".encode() for i in range(n)],
                 partition=pa.array([i % 2 for i in range(n)], pa.int32()))
    writer = Writer({"bootstrap.servers": josefk_broker.bootstrap_servers,
                     "queue.buffering.max.messages": 7}, josefk_topic)
    assert writer.write([rows.slice(0, 123), rows.slice(123)]) == n
    got = read_all(josefk_broker.bootstrap_servers, josefk_topic, n)
    for p in (0, 1):
        assert [int(v) for q, _, v, _ in got if q == p] == list(range(p, n, 2))


def test_a_failed_delivery_fails_the_write(josefk_broker, josefk_topic):
    writer = Writer({"bootstrap.servers": josefk_broker.bootstrap_servers,
                     "message.timeout.ms": 3000}, josefk_topic)
    with pytest.raises(KafkaException) as failed:
        writer.write([batch(value=[b"x"], partition=pa.array([7], pa.int32()))])
    assert failed.value.args[0].code() == KafkaError._UNKNOWN_PARTITION
