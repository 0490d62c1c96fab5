"""Durability across clean restarts and kill -9, with real clients."""

from __future__ import annotations

import pytest

from compat_tests.helpers import (
    DeliveryLog,
    admin_client,
    create_topic,
    flush_all,
    producer,
    read_from_beginning,
    unique_topic,
    wait_for_topic,
)

pytestmark = [pytest.mark.timeout(120), pytest.mark.slow]

PARTITIONS = 3


def _produce(bootstrap, topic, start, n, codec="none"):
    p = producer(bootstrap, acks="all", **{"linger.ms": 5, "batch.size": 16384,
                                           "compression.type": codec})
    log = DeliveryLog()
    for i in range(start, start + n):
        headers = [("seq", str(i).encode())] if i % 2 else None
        kwargs = {"headers": headers} if headers else {}
        p.produce(topic, key=f"k{i}".encode(), value=f"v{i}".encode() * (1 + i % 5),
                  partition=i % PARTITIONS, on_delivery=log, **kwargs)
        p.poll(0)
    flush_all(p, 30)
    assert log.errors == []
    assert len(log.ok) == n
    return {(pt, off): (k, v) for pt, off, k, v in log.ok}


def _read_all(bootstrap, topic, n):
    msgs = read_from_beginning(bootstrap, topic, PARTITIONS, n, timeout=40, quiet=1.0)
    return {(m.partition(), m.offset()): (m.key(), m.value(), m.headers()) for m in msgs}


def _check(stored, acked):
    assert set(stored) == set(acked), (
        f"missing {sorted(set(acked) - set(stored))[:10]} extra {sorted(set(stored) - set(acked))[:10]}"
    )
    for pos, (k, v) in acked.items():
        sk, sv, sh = stored[pos]
        assert (sk, sv) == (k, v), pos
        i = int(k[1:])
        assert sh == ([("seq", str(i).encode())] if i % 2 else None), pos
    for p in range(PARTITIONS):
        offs = sorted(off for pt, off in stored if pt == p)
        assert offs == list(range(len(offs))), f"partition {p} offsets not contiguous from 0"


def _wait_ready(b, topic):
    wait_for_topic(admin_client(b.bootstrap), topic, PARTITIONS, timeout=20)


def test_clean_restart_keeps_everything(broker_factory):
    b = broker_factory()
    topic = create_topic(b.bootstrap, unique_topic("restart"), PARTITIONS,
                         {"segment.bytes": "65536"})  # several segments per partition
    acked = _produce(b.bootstrap, topic, 0, 1500)
    acked.update(_produce(b.bootstrap, topic, 1500, 300, codec="zstd"))
    before = _read_all(b.bootstrap, topic, len(acked))
    _check(before, acked)

    rc = b.stop()
    assert not b.needed_sigkill, "broker did not exit within 15s of SIGTERM"
    assert rc is not None

    b.start()
    _wait_ready(b, topic)
    after = _read_all(b.bootstrap, topic, len(acked))
    assert after == before

    # Writing continues right after the recovered end, and the topic's config survived.
    more = _produce(b.bootstrap, topic, 1800, 30)
    ends = {p: max(off for pt, off in before if pt == p) for p in range(PARTITIONS)}
    for (pt, off) in more:
        assert off > ends[pt]
    acked.update(more)
    _check(_read_all(b.bootstrap, topic, len(acked)), acked)


def test_kill_9_keeps_acknowledged_data(broker_factory):
    b = broker_factory()
    topic = create_topic(b.bootstrap, unique_topic("crash"), PARTITIONS)
    acked = _produce(b.bootstrap, topic, 0, 1000)

    b.kill()
    b.start()
    _wait_ready(b, topic)
    _check(_read_all(b.bootstrap, topic, len(acked)), acked)

    # Twice, with more data in between, and kill again right after the acks.
    acked.update(_produce(b.bootstrap, topic, 1000, 500))
    b.kill()
    b.start()
    _wait_ready(b, topic)
    _check(_read_all(b.bootstrap, topic, len(acked)), acked)


def test_topics_and_deletions_survive_restart(broker_factory):
    b = broker_factory()
    keep = create_topic(b.bootstrap, unique_topic("keep"), PARTITIONS,
                        {"retention.ms": "86400000"})
    gone = create_topic(b.bootstrap, unique_topic("gone"), 1)
    admin = admin_client(b.bootstrap)
    admin.delete_topics([gone], operation_timeout=10)[gone].result(15)

    b.stop()
    b.start()
    admin = admin_client(b.bootstrap)
    _wait_ready(b, keep)
    topics = admin.list_topics(timeout=10).topics
    assert gone not in topics
    from confluent_kafka.admin import ConfigResource, ResourceType

    res = ConfigResource(ResourceType.TOPIC, keep)
    configs = admin.describe_configs([res])[res].result(15)
    assert configs["retention.ms"].value == "86400000"
