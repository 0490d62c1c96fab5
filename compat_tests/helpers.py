"""Small helpers around the real clients (no mocking: these only drive them)."""

from __future__ import annotations

import re
import time
import uuid

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic


def unique_topic(prefix: str = "t") -> str:
    prefix = re.sub(r"[^A-Za-z0-9._-]+", "-", prefix).strip("-.")[:80] or "t"
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def admin_client(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": 10000})


def wait_for_topic(admin: AdminClient, name: str, partitions: int | None = None,
                   timeout: float = 15.0):
    """Wait until metadata shows `name` with every partition led; return its TopicMetadata."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            md = admin.list_topics(timeout=5)
        except KafkaException as e:
            last = e
            time.sleep(0.2)
            continue
        t = md.topics.get(name)
        last = t
        if t is not None and t.error is None and t.partitions:
            if (partitions is None or len(t.partitions) == partitions) and all(
                p.leader >= 0 for p in t.partitions.values()
            ):
                return t
        time.sleep(0.2)
    raise AssertionError(f"topic {name!r} not ready within {timeout}s: last metadata {last!r}")


def wait_for_topic_gone(admin: AdminClient, name: str, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if name not in admin.list_topics(timeout=5).topics:
            return
        time.sleep(0.2)
    raise AssertionError(f"topic {name!r} still listed {timeout}s after deletion")


def create_topic(bootstrap: str, name: str, partitions: int = 1,
                 config: dict | None = None, timeout: float = 15.0) -> str:
    admin = admin_client(bootstrap)
    futures = admin.create_topics(
        [NewTopic(name, num_partitions=partitions, replication_factor=1, config=config or {})],
        operation_timeout=10, request_timeout=15,
    )
    futures[name].result(timeout)
    wait_for_topic(admin, name, partitions, timeout)
    return name


def producer(bootstrap: str, **conf) -> Producer:
    base = {"bootstrap.servers": bootstrap, "message.timeout.ms": 15000,
            "socket.timeout.ms": 10000}
    base.update({k.replace("_", "."): v for k, v in conf.items()})
    return Producer(base)


def consumer(bootstrap: str, **conf) -> Consumer:
    """A consumer meant for assign(): confluent-kafka insists on a group.id,
    but nothing is committed and offsets are always given explicitly."""
    base = {
        "bootstrap.servers": bootstrap,
        "group.id": "compat-" + uuid.uuid4().hex[:8],
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "enable.partition.eof": False,
        "auto.offset.reset": "error",
        "socket.timeout.ms": 10000,
        "fetch.wait.max.ms": 100,
    }
    base.update({k.replace("_", "."): v for k, v in conf.items()})
    return Consumer(base)


class DeliveryLog:
    """on_delivery callback that records results in produce order."""

    def __init__(self):
        self.ok = []      # (partition, offset, key, value)
        self.errors = []  # (KafkaError, key, value)

    def __call__(self, err, msg):
        if err is not None:
            self.errors.append((err, msg.key(), msg.value()))
        else:
            self.ok.append((msg.partition(), msg.offset(), msg.key(), msg.value()))


def flush_all(p: Producer, timeout: float = 20.0) -> None:
    remaining = p.flush(timeout)
    assert remaining == 0, f"{remaining} message(s) still undelivered after {timeout}s"


def consume_n(c: Consumer, n: int, timeout: float = 20.0) -> list:
    """Poll until `n` messages arrived; fail (listing what came) on timeout or on an error."""
    msgs = []
    deadline = time.monotonic() + timeout
    while len(msgs) < n and time.monotonic() < deadline:
        m = c.poll(0.2)
        if m is None:
            continue
        if m.error():
            if m.error().code() == KafkaError._PARTITION_EOF:
                continue
            raise AssertionError(f"consumer error after {len(msgs)} message(s): {m.error()!r}")
        msgs.append(m)
    if len(msgs) < n:
        got = [(m.partition(), m.offset()) for m in msgs][:20]
        raise AssertionError(f"consumed {len(msgs)}/{n} messages within {timeout}s; first: {got}")
    return msgs


def assert_no_more(c: Consumer, seconds: float = 1.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        m = c.poll(0.1)
        if m is None:
            continue
        if m.error():
            if m.error().code() == KafkaError._PARTITION_EOF:
                continue
            raise AssertionError(f"unexpected consumer error: {m.error()!r}")
        raise AssertionError(
            f"unexpected extra message p{m.partition()}@{m.offset()} key={m.key()!r} value={m.value()!r}"
        )


def read_partition(bootstrap: str, topic: str, partition: int, n: int,
                   start=None, timeout: float = 20.0) -> list:
    """Assign one partition from `start` (default: beginning), read exactly n messages,
    check nothing more follows, return them."""
    from confluent_kafka import OFFSET_BEGINNING

    c = consumer(bootstrap)
    try:
        c.assign([TopicPartition(topic, partition, OFFSET_BEGINNING if start is None else start)])
        msgs = consume_n(c, n, timeout)
        assert_no_more(c, 0.5)
        return msgs
    finally:
        c.close()


def roundtrip_check(bootstrap: str, topic: str, timeout: float = 20.0) -> None:
    """A fresh producer and consumer (new connections) can still produce and consume."""
    marker = uuid.uuid4().hex.encode()
    p = producer(bootstrap, acks="all")
    log = DeliveryLog()
    p.produce(topic, key=b"health", value=marker, partition=0, on_delivery=log)
    flush_all(p, timeout)
    assert not log.errors, f"health produce failed: {log.errors}"
    (part, offset, _, _), = log.ok
    c = consumer(bootstrap)
    try:
        c.assign([TopicPartition(topic, 0, offset)])
        (m,) = consume_n(c, 1, timeout)
        assert (m.offset(), m.key(), m.value()) == (offset, b"health", marker)
    finally:
        c.close()
