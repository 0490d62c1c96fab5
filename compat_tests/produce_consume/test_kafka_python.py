"""kafka-python (pure Python client) against josefk over real sockets."""

from __future__ import annotations

import time

import pytest
from kafka import KafkaAdminClient, KafkaProducer, TopicPartition
from kafka import codec as kcodec
from kafka.admin import ConfigResource, ConfigResourceType, NewPartitions, NewTopic
from kafka.errors import TopicAlreadyExistsError

from compat_tests.clients import kafka_python_read
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


def _admin(target) -> KafkaAdminClient:
    return KafkaAdminClient(bootstrap_servers=target.bootstrap, request_timeout_ms=15000,
                            client_id="compat-kafka-python-admin")


def _create(target, name, partitions=1, configs=None):
    admin = _admin(target)
    try:
        admin.create_topics([NewTopic(name, num_partitions=partitions,
                                      replication_factor=target.replication_factor(),
                                      topic_configs=configs or {})], timeout_ms=10000)
        target.wait_for_topic(name, partitions)
    finally:
        admin.close()


def _wait_listed(admin, name, present, timeout=15.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if (name in admin.list_topics()) == present:
            return
        time.sleep(0.2)
    raise AssertionError(f"topic {name!r} {'not listed' if present else 'still listed'} "
                         f"after {timeout}s")


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


def test_admin_create_describe_delete(target):
    name = unique_topic("kp-admin")
    rf = target.replication_factor()
    admin = _admin(target)
    try:
        admin.create_topics([NewTopic(name, num_partitions=3, replication_factor=rf,
                                      topic_configs={"retention.ms": "7200000"})],
                            timeout_ms=10000)
        target.wait_for_topic(name, 3)

        with pytest.raises(TopicAlreadyExistsError):
            admin.create_topics([NewTopic(name, num_partitions=1, replication_factor=1)],
                                timeout_ms=10000)

        described = admin.describe_topics([name])
        (t,) = described
        assert t["name"] == name
        assert t["error_code"] == 0
        assert sorted(p["partition_index"] for p in t["partitions"]) == [0, 1, 2]
        assert all(len(p["replica_nodes"]) == rf and p["leader_id"] in p["replica_nodes"]
                   for p in t["partitions"])
        assert all(p["error_code"] == 0 for p in t["partitions"])

        # The default filter keeps only non-default ("modified") configs.
        res = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, name)])
        modified = res["topic"][name]
        assert modified["retention.ms"]["value"] == "7200000", res
        assert "cleanup.policy" not in modified, res

        admin.create_partitions({name: NewPartitions(total_count=5)}, timeout_ms=10000)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            (t,) = admin.describe_topics([name])
            if len(t["partitions"]) == 5:
                break
            time.sleep(0.2)
        assert sorted(p["partition_index"] for p in t["partitions"]) == [0, 1, 2, 3, 4]

        admin.delete_topics([name], timeout_ms=10000)
        _wait_listed(admin, name, present=False)
    finally:
        admin.close()
