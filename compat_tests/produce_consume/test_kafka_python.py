"""kafka-python (pure Python client) against josefk over real sockets."""

from __future__ import annotations

import pytest
from kafka import KafkaProducer, TopicPartition
from kafka import codec as kcodec
from kafka.admin import NewTopic

from compat_tests.clients import kafka_python_admin, kafka_python_read
from compat_tests.helpers import unique_topic

pytestmark = pytest.mark.timeout(90)

BASE_TS = 1_710_000_000_000

# kafka-python compresses with optional modules; skip a codec only if the
# library itself cannot use it here.
CODEC_AVAILABLE = {
    None: True,
    "gzip": kcodec.has_gzip(),
    "snappy": kcodec.has_snappy(),
    "lz4": kcodec.has_lz4(),
    "zstd": kcodec.has_zstd(),
}


def _create(target, name, partitions=1, configs=None):
    admin = kafka_python_admin(target.bootstrap)
    try:
        admin.create_topics([NewTopic(name, num_partitions=partitions,
                                      replication_factor=target.replication_factor(),
                                      topic_configs=configs or {})], timeout_ms=10000)
        target.wait_for_topic(name, partitions)
    finally:
        admin.close()


@pytest.mark.parametrize("codec", [None, "gzip", "snappy", "lz4", "zstd"])
def test_producer_codecs_round_trip(target, codec):
    if not CODEC_AVAILABLE[codec]:
        pytest.skip(f"kafka-python cannot use {codec} here (compression module not importable)")
    topic = unique_topic(f"kp-{codec}")
    _create(target, topic, partitions=1)
    p = KafkaProducer(bootstrap_servers=target.bootstrap, compression_type=codec, acks="all",
                      linger_ms=20, request_timeout_ms=15000, max_block_ms=15000,
                      client_id="compat-kafka-python-producer")
    expected = []
    futures = []
    try:
        for i in range(120):
            key = None if i % 4 == 1 else f"key-{i}".encode()
            value = None if i % 4 == 2 else f"value-{i}|".encode() + b"xyz" * (i % 30)
            headers = [("h", f"{i}".encode()), ("h", b"second"), ("e", b"")] if i % 4 == 3 else []
            ts = BASE_TS + i
            futures.append(p.send(topic, key=key, value=value, headers=headers, partition=0,
                                  timestamp_ms=ts))
            expected.append((i, key, value, headers, ts))
        p.flush(timeout=20)
        metas = [f.get(timeout=10) for f in futures]
    finally:
        p.close(timeout=5)
    assert [(m.topic, m.partition, m.offset) for m in metas] == [(topic, 0, i) for i in range(120)]

    records = kafka_python_read(target.bootstrap, [TopicPartition(topic, 0)], 120)
    got = [(r.offset, r.key, r.value, list(r.headers), r.timestamp) for r in records]
    assert got == expected


def test_keys_across_partitions(target):
    topic = unique_topic("kp-keys")
    _create(target, topic, partitions=3)
    p = KafkaProducer(bootstrap_servers=target.bootstrap, acks=1, request_timeout_ms=15000,
                      max_block_ms=15000)
    try:
        futures = [(i, p.send(topic, key=f"user-{i % 7}".encode(), value=f"{i}".encode()))
                   for i in range(210)]
        p.flush(timeout=20)
        placed = [(i, f.get(timeout=10)) for i, f in futures]
    finally:
        p.close(timeout=5)
    # The same key always lands on the same partition.
    part_of_key = {}
    for i, md in placed:
        part_of_key.setdefault(i % 7, set()).add(md.partition)
    assert all(len(s) == 1 for s in part_of_key.values())

    tps = [TopicPartition(topic, pt) for pt in range(3)]
    records = kafka_python_read(target.bootstrap, tps, 210)
    for pt in range(3):
        expect = [(md.offset, f"user-{i % 7}".encode(), f"{i}".encode())
                  for i, md in placed if md.partition == pt]
        got = [(r.offset, r.key, r.value) for r in records if r.partition == pt]
        assert got == expect, f"partition {pt}"
        assert [o for o, _, _ in got] == list(range(len(got)))
