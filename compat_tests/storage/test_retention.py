"""Retention and compaction as clients observe them (own brokers with short check intervals)."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import OFFSET_BEGINNING, TopicPartition
from confluent_kafka.admin import OffsetSpec

from compat_tests import rawkafka as rk
from compat_tests.helpers import (
    DeliveryLog,
    admin_client,
    consume_n,
    consumer,
    create_topic,
    flush_all,
    producer,
    read_partition,
    unique_topic,
)

pytestmark = [pytest.mark.timeout(90), pytest.mark.slow]

FAST = {
    "log.retention.check.interval.ms": 300,
    "log.cleaner.backoff.ms": 200,
}


def _earliest(bootstrap, topic, partition=0) -> int:
    tp = TopicPartition(topic, partition)
    admin = admin_client(bootstrap)
    return admin.list_offsets({tp: OffsetSpec.earliest()}, request_timeout=15)[tp].result(15).offset


def _wait_earliest_above(bootstrap, topic, floor, timeout=20.0) -> int:
    deadline = time.monotonic() + timeout
    e = _earliest(bootstrap, topic)
    while e <= floor and time.monotonic() < deadline:
        time.sleep(0.3)
        e = _earliest(bootstrap, topic)
    return e


# Small producer batches: a segment rolls only between batches, and librdkafka would
# otherwise put up to 1 MB in one batch (so one segment).
SMALL_BATCHES = {"linger.ms": 5, "batch.size": 16384}


def _produce(bootstrap, topic, values, timestamps=None, key=None):
    p = producer(bootstrap, acks="all", **SMALL_BATCHES)
    log = DeliveryLog()
    for i, v in enumerate(values):
        kw = {"timestamp": timestamps[i]} if timestamps else {}
        p.produce(topic, key=key, value=v, partition=0, on_delivery=log, **kw)
        p.poll(0)
    flush_all(p, 30)
    assert log.errors == []
    return [off for _, off, _, _ in log.ok]


def test_retention_bytes_advances_log_start(broker_factory):
    b = broker_factory(FAST)
    topic = create_topic(b.bootstrap, unique_topic("ret-bytes"), 1,
                         {"segment.bytes": "65536", "retention.bytes": "150000"})
    values = [f"{i:06d}".encode() + b"." * 994 for i in range(600)]
    assert _produce(b.bootstrap, topic, values) == list(range(600))

    start = _wait_earliest_above(b.bootstrap, topic, 0)
    assert start > 0, "log start offset never moved: retention.bytes not applied"
    assert start < 600 - 100, f"retention deleted too much: log start {start}"

    # Reading from the beginning starts exactly at the new log start.
    msgs = read_partition(b.bootstrap, topic, 0, 600 - start)
    assert [(m.offset(), m.value()) for m in msgs] == [(i, values[i]) for i in range(start, 600)]

    # Offset 0 is now out of range: raw fetch says so, a client with
    # auto.offset.reset=earliest lands on the log start.
    with rk.RawConnection(b.bootstrap) as conn:
        v = rk.pick_version(rk.api_versions(conn), rk.FETCH, rk.FETCH_VERSIONS)
        if v is not None:
            part = rk.fetch(conn, v, topic, 0, 0)["partitions"][(topic, 0)]
            assert part["error_code"] == rk.OFFSET_OUT_OF_RANGE, part
    c = consumer(b.bootstrap, **{"auto.offset.reset": "earliest"})
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        (m,) = consume_n(c, 1)
        assert m.offset() == start
    finally:
        c.close()

    # The log start survives a restart, and the log end too.
    b.stop()
    b.start()
    deadline = time.monotonic() + 15
    while True:
        try:
            after = _earliest(b.bootstrap, topic)
            break
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.3)
    assert after >= start
    assert _produce(b.bootstrap, topic, [b"after-restart"]) == [600]


def test_retention_ms_deletes_old_segments(broker_factory):
    b = broker_factory(FAST)
    topic = create_topic(b.bootstrap, unique_topic("ret-ms"), 1,
                         {"segment.bytes": "65536", "retention.ms": "600000"})
    old_ts = int(time.time() * 1000) - 3_600_000  # an hour old: past retention
    old = [f"old{i:05d}".encode() + b"." * 992 for i in range(400)]
    assert _produce(b.bootstrap, topic, old, [old_ts + i for i in range(400)]) == list(range(400))
    new = [f"new{i}".encode() for i in range(10)]
    assert _produce(b.bootstrap, topic, new) == list(range(400, 410))

    start = _wait_earliest_above(b.bootstrap, topic, 0)
    assert start > 0, "no segment deleted although every old record is past retention.ms"
    msgs = read_partition(b.bootstrap, topic, 0, 410 - start)
    assert [m.offset() for m in msgs] == list(range(start, 410))
    assert [m.value() for m in msgs[-10:]] == new


def test_compaction_keeps_latest_value_per_key(broker_factory):
    b = broker_factory(FAST)
    topic = create_topic(b.bootstrap, unique_topic("compact"), 1,
                         {"cleanup.policy": "compact", "segment.bytes": "65536",
                          "min.cleanable.dirty.ratio": "0.01", "delete.retention.ms": "3600000"})
    p = producer(b.bootstrap, acks="all", **SMALL_BATCHES)
    log = DeliveryLog()
    n_keys, rounds = 10, 150
    for r in range(rounds):
        for k in range(n_keys):
            value = None if (k == 0 and r == rounds - 1) else f"k{k}-r{r}|".encode() + b"." * 200
            p.produce(topic, key=f"k{k}".encode(), value=value, partition=0, on_delivery=log)
        p.poll(0)
    flush_all(p, 30)
    assert log.errors == []
    total = n_keys * rounds
    last = {}
    for _, off, key, value in log.ok:
        last[key] = (off, value)

    def read_all():
        c = consumer(b.bootstrap)
        try:
            c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
            msgs, deadline = [], time.monotonic() + 20
            while time.monotonic() < deadline:
                m = c.poll(0.3)
                if m is None:
                    if msgs and msgs[-1].offset() == total - 1:
                        break
                    continue
                assert not m.error(), m.error()
                msgs.append(m)
                if m.offset() == total - 1:
                    break
            return msgs
        finally:
            c.close()

    deadline = time.monotonic() + 30
    msgs = read_all()
    while len(msgs) >= total and time.monotonic() < deadline:
        time.sleep(1)
        msgs = read_all()
    assert len(msgs) < total, "nothing was compacted within 30s"
    offsets = [m.offset() for m in msgs]
    assert offsets == sorted(set(offsets)), "offsets not strictly increasing"
    assert offsets[-1] == total - 1
    # Every key's latest record survives with its original offset (tombstone included).
    by_offset = {m.offset(): (m.key(), m.value()) for m in msgs}
    for key, (off, value) in last.items():
        assert by_offset.get(off) == (key, value), f"latest record of {key!r} at {off} lost"
    # Folding what is left gives the same final state as what was written.
    state = {}
    for m in msgs:
        state[m.key()] = m.value()
    assert state == {k: v for k, (_, v) in last.items()}
    # The high watermark is unchanged and new writes go after it (with a key: a compacted
    # topic refuses records without one, INVALID_RECORD, as Kafka does).
    assert _produce(b.bootstrap, topic, [b"x"], key=b"k1") == [total]
