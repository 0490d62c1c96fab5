"""Old client generations against josefk, as Kafka 3.9 serves them.

kafka-python with ``api_version`` pinned speaks the protocol versions of that broker release
without asking ApiVersions: Produce v0-2 with message formats v0/v1, Fetch v0-3 (down-converted
answers), ListOffsets v0, OffsetCommit v2, JoinGroup v0... Each client produces with every codec
it has, consumes in a group, commits, and picks up where it left off after a broker restart.

librdkafka with ``api.version.request=false`` speaks old versions only for a fallback below 0.10.
The test reads the versions it sent from the broker's per-version request counter; librdkafka
2.16 sends, with fallback 0.9.0: Metadata v0, Produce v1, Fetch v1, ListOffsets v0,
FindCoordinator v0, JoinGroup/SyncGroup/Heartbeat/LeaveGroup v0, OffsetCommit v2, OffsetFetch
v1 and no ApiVersions. With 0.10.0, 0.10.2 and 0.11.0 it sends ApiVersions (v3) regardless and
then the current versions (Metadata v12, Produce v10, Fetch v16, ListOffsets v7, FindCoordinator
v2, JoinGroup v5, SyncGroup v3, Heartbeat v3, LeaveGroup v1, OffsetCommit/OffsetFetch v9,
GetTelemetrySubscriptions v0): those cases are kept as the configurations users run, not as
old-version coverage.
"""
from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, Producer
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from compat_tests.helpers import (flush_all, read_partition, requests_by_version, unique_topic,
                                  versions_sent)

pytestmark = [pytest.mark.timeout(180), pytest.mark.slow]

BASE_TS = 1_700_000_000_000
KP_CODECS = [None, "gzip", "snappy", "lz4"]
RDK_CODECS = ["none", "gzip", "snappy", "lz4"]
PER_CODEC = 5


def _rows(tag):
    return [(f"{tag}-k{i}".encode(), f"{tag}-v{i}".encode(), BASE_TS + i)
            for i in range(PER_CODEC)]


# -- kafka-python, api_version pinned -----------------------------------------------------------

def _kp_produce(bootstrap, topic, api_version, codec, rows):
    p = KafkaProducer(bootstrap_servers=bootstrap, api_version=api_version,
                      compression_type=codec, linger_ms=5, request_timeout_ms=15000)
    try:
        with_ts = api_version >= (0, 10)  # message format v1 carries timestamps
        futures = [p.send(topic, key=k, value=v, partition=0, timestamp_ms=ts if with_ts else None)
                   for k, v, ts in rows]
        p.flush(20)
        return [f.get(timeout=1).offset for f in futures]
    finally:
        p.close(timeout=5)


def _kp_group_read(bootstrap, topic, api_version, group, n, timeout=30.0):
    """Join ``group``, read ``n`` records from the committed position, commit, leave."""
    c = KafkaConsumer(topic, bootstrap_servers=bootstrap, api_version=api_version,
                      group_id=group, auto_offset_reset="earliest", enable_auto_commit=False,
                      fetch_max_wait_ms=100, request_timeout_ms=20000, session_timeout_ms=10000,
                      heartbeat_interval_ms=1000)
    try:
        got = []
        deadline = time.monotonic() + timeout
        while len(got) < n and time.monotonic() < deadline:
            for recs in c.poll(timeout_ms=200).values():
                got.extend(recs)
        assert len(got) == n, f"read {len(got)}/{n} records"
        c.commit()
        assert c.committed(TopicPartition(topic, 0)) == got[-1].offset + 1
        return [(m.offset, m.key, m.value, m.timestamp) for m in got]
    finally:
        c.close()


KP_VERSIONS = [(0, 9), (0, 10), (0, 10, 1), (0, 11), (1, 0), (2, 0)]


@pytest.mark.parametrize("api_version", KP_VERSIONS, ids=lambda v: ".".join(map(str, v)))
def test_kafka_python_pinned_round_trip_across_restart(target_factory, api_version):
    t = target_factory()
    topic = t.create_topic(unique_topic("kp-old"), partitions=1)
    group = unique_topic("kp-old-g")
    rows, offsets = [], []
    for codec in KP_CODECS:
        batch = _rows(codec or "none")
        offsets += _kp_produce(t.bootstrap, topic, api_version, codec, batch)
        rows += batch
    assert offsets == list(range(len(rows)))
    old_format = api_version < (0, 10)  # v0 messages: no timestamps
    want = [(i, k, v, None if old_format else ts) for i, (k, v, ts) in enumerate(rows)]
    assert _kp_group_read(t.bootstrap, topic, api_version, group, len(rows)) == want

    more = _rows("after-restart")
    _kp_produce(t.bootstrap, topic, api_version, "gzip", more)
    t.restart(t.group_coordinator(group))
    # The group resumes at its committed offset, after the restart, with the same client.
    got = _kp_group_read(t.bootstrap, topic, api_version, group, len(more))
    assert [(o, k, v) for o, k, v, _ts in got] == [
        (len(rows) + i, k, v) for i, (k, v, _ts) in enumerate(more)]


# -- librdkafka, ApiVersions off, fallback broker version ---------------------------------------

def _rdk_conf(bootstrap, fallback):
    return {"bootstrap.servers": bootstrap, "api.version.request": False,
            "broker.version.fallback": fallback, "socket.timeout.ms": 10000, "log_level": 3}


def _rdk_group_read(conf, topic, group, n, timeout=30.0):
    c = Consumer({**conf, "group.id": group, "auto.offset.reset": "earliest",
                  "enable.auto.commit": False, "fetch.wait.max.ms": 100,
                  "session.timeout.ms": 10000})
    try:
        c.subscribe([topic])
        got = []
        deadline = time.monotonic() + timeout
        while len(got) < n and time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is None:
                continue
            assert m.error() is None, m.error()
            got.append(m)
        assert len(got) == n, f"read {len(got)}/{n} records"
        c.commit(asynchronous=False)
        return [(m.offset(), m.key(), m.value(), m.timestamp()) for m in got]
    finally:
        c.close()


RDK_0_9_VERSIONS = {"Metadata": [0], "Produce": [1], "Fetch": [1], "ListOffsets": [0],
                    "FindCoordinator": [0], "JoinGroup": [0], "SyncGroup": [0], "Heartbeat": [0],
                    "LeaveGroup": [0], "OffsetCommit": [2], "OffsetFetch": [1]}


@pytest.mark.parametrize("fallback", ["0.9.0", "0.10.0", "0.10.2", "0.11.0"])
def test_librdkafka_fallback_round_trip_across_restart(target_factory, fallback):
    t = target_factory(metrics=True)
    conf = _rdk_conf(t.bootstrap, fallback)
    topic = t.create_topic(unique_topic("rdk-old"), partitions=1)
    group = unique_topic("rdk-old-g")
    before = requests_by_version(*t.metrics_ports)
    rows = []
    for codec in RDK_CODECS:
        p = Producer({**conf, "compression.codec": codec, "linger.ms": 5})
        batch = _rows(codec)
        for k, v, ts in batch:
            p.produce(topic, key=k, value=v, partition=0, timestamp=ts)
        flush_all(p)
        rows += batch
    # 0.9.0 speaks message format v0: no timestamps (TIMESTAMP_NOT_AVAILABLE, 0).
    ts_of = (lambda ts: (0, 0)) if fallback == "0.9.0" else (lambda ts: (1, ts))
    want = [(i, k, v, ts_of(ts)) for i, (k, v, ts) in enumerate(rows)]
    assert _rdk_group_read(conf, topic, group, len(rows)) == want
    sent = versions_sent(before, *t.metrics_ports)
    if fallback == "0.9.0" and t.cluster is None:
        assert sent == RDK_0_9_VERSIONS
    elif fallback == "0.9.0":
        # the brokers of a cluster also serve each other (replica Fetch, UpdateMetadata...) at
        # current versions, counted with the clients' requests
        assert all(set(v) <= set(sent.get(api, [])) for api, v in RDK_0_9_VERSIONS.items()), sent
    else:  # librdkafka asks ApiVersions anyway and speaks current versions (record format v2)
        assert "ApiVersions" in sent and min(sent["Produce"]) >= 3 and min(sent["Fetch"]) >= 4

    t.restart(t.group_coordinator(group))
    conf = _rdk_conf(t.bootstrap, fallback)
    p = Producer({**conf, "compression.codec": "snappy"})
    more = _rows("after-restart")
    for k, v, ts in more:
        p.produce(topic, key=k, value=v, partition=0, timestamp=ts)
    flush_all(p)
    got = _rdk_group_read(conf, topic, group, len(more))
    assert [(o, k, v) for o, k, v, _ts in got] == [
        (len(rows) + i, k, v) for i, (k, v, _ts) in enumerate(more)]


# -- mixed generations on the same data ---------------------------------------------------------

def test_old_producer_current_consumer(target):
    """Message format v1 written by kafka-python 0.10 is read back as v2 batches by a current
    librdkafka consumer (Fetch v4+ returns the stored batches as they are)."""
    topic = target.create_topic(unique_topic("mixed-old-new"), partitions=1)
    rows = _rows("v1") + _rows("v1-gz")
    _kp_produce(target.bootstrap, topic, (0, 10, 0), None, rows[:PER_CODEC])
    _kp_produce(target.bootstrap, topic, (0, 10, 0), "gzip", rows[PER_CODEC:])
    got = read_partition(target.bootstrap, topic, 0, len(rows))
    assert [(m.offset(), m.key(), m.value(), m.timestamp()) for m in got] == [
        (i, k, v, (1, ts)) for i, (k, v, ts) in enumerate(rows)]
    # a v0 producer's records carry no timestamp: -1 in the stored batch
    v0 = _rows("v0")
    _kp_produce(target.bootstrap, topic, (0, 9), "snappy", v0)
    got = read_partition(target.bootstrap, topic, 0, len(rows) + len(v0))[len(rows):]
    assert [(m.key(), m.value(), m.timestamp()) for m in got] == [(k, v, (1, -1))
                                                                 for k, v, _ts in v0]


@pytest.mark.parametrize("api_version", [(0, 9), (0, 10, 0)], ids=["magic0", "magic1"])
def test_current_producer_old_consumer(target, api_version):
    """v2 batches from a current producer (with headers, lz4, zstd-free) are down-converted
    for kafka-python pinned at 0.9 (Fetch v1, magic 0) and 0.10 (Fetch v2, magic 1)."""
    topic = target.create_topic(unique_topic("mixed-new-old"), partitions=1)
    rows = _rows("cur")
    p = Producer({"bootstrap.servers": target.bootstrap, "compression.codec": "lz4",
                  "linger.ms": 5})
    for k, v, ts in rows:
        p.produce(topic, key=k, value=v, partition=0, timestamp=ts, headers=[("h", b"x")])
    flush_all(p)
    got = _kp_group_read(target.bootstrap, topic, api_version, unique_topic("g"), len(rows))
    assert got == [(i, k, v, None if api_version < (0, 10) else ts)
                   for i, (k, v, ts) in enumerate(rows)]
