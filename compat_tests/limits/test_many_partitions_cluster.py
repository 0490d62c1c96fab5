"""Thousands of partitions on a 3-broker cluster (issue 35 item 3; ``python -m bench.partitions``
measures the 10,000-partition figures): 2,000 partitions at RF 3 created, the controller killed,
a broker restarted. What is asserted is correctness, not timing: every partition led by a live
broker with every replica back in its ISR, on every broker's Metadata, and records written before
each fault readable after it, with a producer and a consumer busy on the topic throughout.
"""
from __future__ import annotations

import threading
import time

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from compat_tests.helpers import DeliveryLog, flush_all, producer, unique_topic

pytestmark = pytest.mark.timeout(600)

PARTITIONS = 2000
PROBES = range(0, PARTITIONS, 97)  # partitions written to and read back after each step


def _state(c, broker_id: int, topic: str, dead=()) -> str | None:
    """None when ``broker_id`` answers a live leader and a full ISR for every partition, else
    what is missing."""
    md = c.metadata_from(broker_id, topics=[topic], timeout=30)
    t = md.topics[0]
    if t.error_code or len(t.partitions) != PARTITIONS:
        return f"error {t.error_code}, {len(t.partitions)} partitions"
    leaderless = [p.partition_index for p in t.partitions
                  if p.leader_id < 0 or p.leader_id in dead]
    short = [p.partition_index for p in t.partitions if sorted(p.isr_nodes) != [1, 2, 3]]
    if leaderless or short:
        example = (leaderless + short)[:5]
        return f"{len(leaderless)} leaderless, {len(short)} short ISR (e.g. {example})"
    return None


def _all_good(c, topic: str, timeout: float, dead=()) -> None:
    last = None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            last = [_state(c, b, topic, dead) for b in c.live()]
            if not any(last):
                return
        except (OSError, ConnectionError, IndexError) as e:  # a broker still starting
            last = e
        time.sleep(0.5)
    raise AssertionError(f"partitions of {topic} not all led with full ISRs: {last}")


def _write(bootstrap: str, topic: str, tag: bytes) -> None:
    p = producer(bootstrap, acks="all")
    log = DeliveryLog()
    for part in PROBES:
        p.produce(topic, value=tag + b"-%d" % part, partition=part, on_delivery=log)
    flush_all(p, timeout=60)
    assert not log.errors, log.errors[:3]


class _Traffic(threading.Thread):
    """A producer (acks=all) on the probed partitions while the cluster changes: it must keep
    being answered, and every record it saw acknowledged is readable at the end."""

    def __init__(self, bootstrap: str, topic: str):
        super().__init__(daemon=True)
        self.bootstrap, self.topic = bootstrap, topic
        self.stop = threading.Event()
        self.acked: dict[int, list[bytes]] = {}
        self.failed = 0

    def run(self):
        p = producer(self.bootstrap, acks="all", **{"message.timeout.ms": 60000,
                                                    "enable.idempotence": True})

        def on_delivery(err, msg):
            if err is None:
                self.acked.setdefault(msg.partition(), []).append(msg.value())
            else:
                self.failed += 1
        n = 0
        while not self.stop.is_set() and n < 100_000:
            part = PROBES[n % len(PROBES)]
            p.produce(self.topic, value=b"bg-%d" % n, partition=part, on_delivery=on_delivery)
            p.poll(0.005)
            n += 1
        p.flush(60)


def test_two_thousand_partitions_rf3_created_failed_over_restarted(cluster_factory):
    c = cluster_factory(3, {"auto.leader.rebalance.enable": "false"})
    topic = unique_topic("many")
    admin = AdminClient({"bootstrap.servers": c.bootstrap, "socket.timeout.ms": 300_000})
    admin.create_topics([NewTopic(topic, PARTITIONS, 3)], operation_timeout=240,
                        request_timeout=240)[topic].result(240)
    _all_good(c, topic, 120)
    _write(c.bootstrap, topic, b"a")

    traffic = _Traffic(c.bootstrap, topic)
    traffic.start()
    ctl = c.controller()
    c.kill(ctl)
    _all_good_but = [b for b in (1, 2, 3) if b != ctl]
    # the killed broker's replicas leave the ISRs; every partition gets a live leader
    deadline = time.monotonic() + 120
    while True:
        md = c.metadata_from(_all_good_but[0], topics=[topic], timeout=30).topics[0]
        if all(p.leader_id >= 0 and p.leader_id != ctl for p in md.partitions):
            break
        assert time.monotonic() < deadline, "leaders not re-elected after the controller died"
        time.sleep(0.5)
    assert c.controller() in _all_good_but
    _write(c.bootstrap, topic, b"b")

    c.restart(ctl)
    _all_good(c, topic, 180)
    other = _all_good_but[0]
    c.shutdown(other)  # a controlled shutdown moves its leaderships, then it comes back
    c.restart(other)
    _all_good(c, topic, 180)
    traffic.stop.set()
    traffic.join(120)
    _write(c.bootstrap, topic, b"c")

    assert traffic.acked, "the producer got no acknowledgement while the cluster changed"
    _read_with_traffic(c.bootstrap, topic, traffic.acked)
    for b in c.brokers.values():
        assert "Traceback" not in b.log_tail(200_000)


def _read_with_traffic(bootstrap: str, topic: str, acked: dict[int, list[bytes]]) -> None:
    """The probed partitions hold a, b, c in that order, and every acknowledged background
    record, in its order."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": unique_topic("g"),
                  "enable.auto.commit": False})
    c.assign([TopicPartition(topic, part, 0) for part in PROBES])
    got: dict[int, list] = {part: [] for part in PROBES}
    expected = {part: 3 + len(acked.get(part, ())) for part in PROBES}
    deadline = time.monotonic() + 90
    try:
        while time.monotonic() < deadline and any(len(got[p]) < expected[p] for p in PROBES):
            for m in c.consume(1000, 0.5):
                if m.error() is None:
                    got[m.partition()].append(m.value())
    finally:
        c.close()
    for part in PROBES:
        mine = [v for v in got[part] if not v.startswith(b"bg-")]
        assert mine == [b"a-%d" % part, b"b-%d" % part, b"c-%d" % part], (part, got[part][:5])
        background = [v for v in got[part] if v.startswith(b"bg-")]
        assert set(acked.get(part, ())) <= set(background), part
        order = [int(v[3:]) for v in background]
        assert order == sorted(order), part
