"""Client quotas with real clients: a confluent-kafka producer and consumer throttled to their
byte-rate quotas (set with AlterClientQuotas through ``josefk quotas``) keep to them, and are
told so through throttle_time_ms."""
from __future__ import annotations

import json
import time

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

from compat_tests.helpers import create_topic, unique_topic
from compat_tests.security_setup import josefk

QUOTA = 1_000_000  # bytes per second
VALUE = b"q" * 1000


def set_quota(bootstrap, *args):
    josefk("quotas", "alter", "--bootstrap-server", bootstrap, *args)


# Short quota windows (Kafka's quota.window.* properties): the burst a fresh client may send
# is one window's worth, so 10 s of measurement show the steady rate.
WINDOWS = {"quota.window.num": 2, "quota.window.size.seconds": 1}


def test_throttled_producer_keeps_to_its_quota(broker_factory):
    b = broker_factory(WINDOWS)
    topic = create_topic(b.bootstrap, unique_topic("quota"), 1)
    set_quota(b.bootstrap, "--client-id", "slow-producer", "--add-config",
              f"producer_byte_rate={QUOTA}")
    out = josefk("quotas", "describe", "--bootstrap-server", b.bootstrap, "--client-id",
                 "slow-producer").stdout
    assert out.strip() == ("Quota configs for client-id 'slow-producer' are "
                           f"producer_byte_rate={QUOTA}")
    throttles = []
    acked = []  # (time, bytes)
    p = Producer({"bootstrap.servers": b.bootstrap, "client.id": "slow-producer",
                  "linger.ms": 5, "batch.size": 16384, "message.max.bytes": 32768,
                  "statistics.interval.ms": 500,
                  "stats_cb": lambda s: throttles.append(
                      max(br["throttle"]["max"] for br in json.loads(s)["brokers"].values()))})

    def delivered(err, msg):
        if err is None:
            acked.append((time.monotonic(), len(msg.value())))
    start = time.monotonic()
    while time.monotonic() - start < 22:
        try:
            p.produce(topic, VALUE, on_delivery=delivered)
        except BufferError:
            p.poll(0.05)
        p.poll(0)
    p.flush(30)
    # Steady state: the last 10 s (the first windows let a burst through, as Kafka's do).
    lo, hi = start + 12, start + 22
    rate = sum(n for t, n in acked if lo <= t < hi) / (hi - lo)
    print(f"measured {rate:.0f} B/s against a quota of {QUOTA} B/s")
    assert abs(rate - QUOTA) <= 0.1 * QUOTA
    assert max(throttles) > 0  # the client was told it was throttled

    # Another client id is not throttled.
    fast = Producer({"bootstrap.servers": b.bootstrap, "client.id": "fast", "linger.ms": 5})
    t0 = time.monotonic()
    for _ in range(3000):
        fast.produce(topic, VALUE)
        fast.poll(0)
    fast.flush(30)
    assert 3000 * len(VALUE) / (time.monotonic() - t0) > 3 * QUOTA


def test_throttled_consumer_keeps_to_its_quota(broker_factory):
    b = broker_factory(WINDOWS)
    topic = create_topic(b.bootstrap, unique_topic("cquota"), 1)
    p = Producer({"bootstrap.servers": b.bootstrap, "linger.ms": 5})
    for _ in range(30000):
        p.produce(topic, VALUE)
        p.poll(0)
    p.flush(30)
    set_quota(b.bootstrap, "--user-default", "--add-config", f"consumer_byte_rate={QUOTA}")
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": unique_topic("g"),
                  "fetch.max.bytes": 1048576, "message.max.bytes": 262144,
                  "max.partition.fetch.bytes": 262144,
                  "fetch.queue.backoff.ms": 10})
    c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    got = []
    start = time.monotonic()
    while time.monotonic() - start < 20 and len(got) < 30000:
        for m in c.consume(1000, 0.5):
            if m.error() is None:
                got.append((time.monotonic(), len(m.value())))
    c.close()
    lo, hi = start + 10, start + 20
    in_window = [n for t, n in got if lo <= t < hi]
    rate = sum(in_window) / (hi - lo)
    print(f"consumed {rate:.0f} B/s against a quota of {QUOTA} B/s")
    assert in_window and rate <= 1.1 * QUOTA
