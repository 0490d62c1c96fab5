"""Consumer groups driven by kafka-python's own coordinator client (KafkaConsumer with a
group_id): join, rebalance when a second member arrives and when one leaves, commits, and
committed offsets read back with KafkaConsumer.committed()."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import TopicPartition as CTopicPartition
from kafka import ConsumerRebalanceListener, KafkaConsumer, TopicPartition
from kafka.structs import OffsetAndMetadata

from compat_tests.helpers import consumer as confluent_consumer
from compat_tests.helpers import produce_values, unique_topic

pytestmark = pytest.mark.timeout(90)

PARTS = 4


class Member(ConsumerRebalanceListener):
    def __init__(self, bootstrap, group, topic, name):
        self.name = name
        self.events = []
        self.records = []
        self.c = KafkaConsumer(
            bootstrap_servers=bootstrap, group_id=group, client_id=name,
            enable_auto_commit=False, auto_offset_reset="earliest",
            session_timeout_ms=10000, heartbeat_interval_ms=300, fetch_max_wait_ms=100,
            request_timeout_ms=15000)
        self.c.subscribe([topic], listener=self)
        self.closed = False

    def on_partitions_revoked(self, revoked):
        self.events.append(("revoke", sorted((tp.topic, tp.partition) for tp in revoked)))

    def on_partitions_assigned(self, assigned):
        self.events.append(("assign", sorted((tp.topic, tp.partition) for tp in assigned)))

    def assignment(self):
        return set() if self.closed else {(tp.topic, tp.partition) for tp in self.c.assignment()}

    def poll(self):
        # Long enough for a whole JoinGroup/SyncGroup round inside one call: kafka-python 3.0
        # loses a rejoin that its own metadata change started (the Java client's KAFKA-9815)
        # when poll() returns while that join is in flight, and then keeps the old assignment.
        got = self.c.poll(timeout_ms=500)
        n = 0
        for _tp, recs in got.items():
            self.records.extend(recs)
            n += len(recs)
        if n:
            self.c.commit()  # synchronous: the positions of everything polled so far
        return n

    def close(self):
        if not self.closed:
            self.closed = True
            self.c.close()


def _poll_until(members, pred, timeout, what):
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not reached in {timeout}s: "
                                 f"{[(m.name, sorted(m.assignment()), m.events) for m in members]}")
        for m in members:
            if not m.closed:
                m.poll()


def _settle(members, seconds=0.8):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for m in members:
            if not m.closed:
                m.poll()


def test_kafka_python_group_rebalance_and_commits(target):
    topic = target.create_topic(unique_topic("kpgrp"), PARTS)
    group = unique_topic("kpgroup")
    everything = {(topic, p) for p in range(PARTS)}
    a = Member(target.bootstrap, group, topic, "kp-a")
    members = [a]
    try:
        _poll_until(members, lambda: a.assignment() == everything, 30, "a owning all")
        sent = produce_values(target.bootstrap, topic, PARTS, 0, 40, "a")
        _poll_until(members, lambda: len(a.records) >= 40, 20, "first batch")

        # a second consumer joins: the partitions are split between the two
        b = Member(target.bootstrap, group, topic, "kp-b")
        members.append(b)
        _poll_until(members, lambda: (len(a.assignment()) == 2 and len(b.assignment()) == 2
                                      and a.assignment() | b.assignment() == everything),
                    30, "a and b splitting the partitions")
        a_share, b_share = a.assignment(), b.assignment()
        assert ("revoke", sorted(everything)) in a.events
        sent.update(produce_values(target.bootstrap, topic, PARTS, 40, 40, "b"))
        _poll_until(members, lambda: len(a.records) + len(b.records) >= 80, 20, "second batch")
        _settle(members)
        assert {(r.topic, r.partition) for r in a.records[40:]} <= a_share
        assert {(r.topic, r.partition) for r in b.records} <= b_share
        assert b.records, "b got none of the second batch"

        # the first consumer leaves: the second gets everything and resumes where a committed
        a.close()
        _poll_until(members, lambda: b.assignment() == everything, 15, "b owning all")
        sent.update(produce_values(target.bootstrap, topic, PARTS, 80, 40, "c"))
        _poll_until(members, lambda: len(a.records) + len(b.records) >= 120, 20, "third batch")
        _settle(members)

        got = [(r.partition, r.offset, r.value) for r in a.records + b.records]
        assert len(got) == 120, f"{len(got)} deliveries of 120 messages"
        assert {(p, o): v for p, o, v in got} == sent

        # committed offsets: the end of every partition, as seen by this member ...
        ends = b.c.end_offsets([TopicPartition(topic, p) for p in range(PARTS)])
        assert sorted(ends.values()) == [30] * PARTS
        for p in range(PARTS):
            assert b.c.committed(TopicPartition(topic, p)) == 30

        # ... and with metadata, committed explicitly
        tp0 = TopicPartition(topic, 0)
        b.c.commit({tp0: OffsetAndMetadata(25, "kp-meta", -1)})
    finally:
        for m in members:
            m.close()

    # a fresh kafka-python consumer of the group (not subscribed) reads them back
    c = KafkaConsumer(bootstrap_servers=target.bootstrap, group_id=group, enable_auto_commit=False,
                      request_timeout_ms=15000)
    try:
        assert c.committed(tp0) == 25
        meta = c.committed(tp0, metadata=True)
        assert (meta.offset, meta.metadata) == (25, "kp-meta")
        assert [c.committed(TopicPartition(topic, p)) for p in range(1, PARTS)] == [30] * 3
        # kafka-python commits "" as metadata when none is given; it comes back as ""
        assert c.committed(TopicPartition(topic, 1), metadata=True).metadata == ""
    finally:
        c.close()
    # and so does another client library
    cc = confluent_consumer(target.bootstrap, **{"group.id": group})
    try:
        res = cc.committed([CTopicPartition(topic, p) for p in range(PARTS)], timeout=10)
        # (librdkafka hands an empty metadata string to Python as None)
        assert [(tp.partition, tp.offset, tp.metadata) for tp in res] == [
            (0, 25, "kp-meta"), (1, 30, None), (2, 30, None), (3, 30, None)]
    finally:
        cc.close()


def test_kafka_python_committed_unknown_is_none(target):
    topic = target.create_topic(unique_topic("kpnone"), 1)
    c = KafkaConsumer(bootstrap_servers=target.bootstrap, group_id=unique_topic("kpempty"),
                      enable_auto_commit=False, request_timeout_ms=15000)
    try:
        assert c.committed(TopicPartition(topic, 0)) is None
    finally:
        c.close()


def test_kafka_python_commit_metadata_limit(target):
    """offset.metadata.max.bytes (4096): exactly 4096 characters are accepted, 4097 refused
    with OFFSET_METADATA_TOO_LARGE and nothing stored."""
    from kafka.errors import OffsetMetadataTooLargeError

    topic = target.create_topic(unique_topic("kpmeta"), 2)
    c = KafkaConsumer(bootstrap_servers=target.bootstrap, group_id=unique_topic("kpmeta"),
                      enable_auto_commit=False, request_timeout_ms=15000)
    try:
        tp0, tp1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
        c.commit({tp0: OffsetAndMetadata(3, "m" * 4096, -1)})
        with pytest.raises(OffsetMetadataTooLargeError):
            c.commit({tp1: OffsetAndMetadata(4, "m" * 4097, -1)})
        got = c.committed(tp0, metadata=True)
        assert (got.offset, got.metadata) == (3, "m" * 4096)
        assert c.committed(tp1) is None
    finally:
        c.close()
