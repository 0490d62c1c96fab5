"""Requests that must not brick the broker or forge state, with real clients (issue 11).

- internal topics take no client Produce (a forged offset commit would survive a restart),
  and cannot be deleted or re-partitioned;
- a topic config the log would refuse is answered INVALID_CONFIG, naming the key, before
  anything is persisted; a broker whose stored metadata holds such a config still starts and
  serves every other topic;
- a partition count the broker cannot open files for is refused with INVALID_PARTITIONS;
- a 249-character topic name works end to end, deletion included.
"""
from __future__ import annotations

import json
import time

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import NewPartitions, NewTopic

from compat_tests.helpers import (DeliveryLog, admin_client, consumer, create_topic, flush_all,
                                  producer, read_partition, roundtrip_check, unique_topic,
                                  wait_for_topic_gone)
from josefk.coordinator import partition_for
from josefk.coordinator.group.group import OffsetAndMetadata
from josefk.coordinator.group.offset_store import offset_commit_key, offset_commit_value

pytestmark = pytest.mark.timeout(120)

OFFSETS_PARTITIONS = 3  # BASE_OVERRIDES' offsets.topic.num.partitions


def _commit(bootstrap, group, topic, offset):
    c = consumer(bootstrap, group_id=group)
    try:
        c.commit(offsets=[TopicPartition(topic, 0, offset)], asynchronous=False)
    finally:
        c.close()


def _committed(bootstrap, group, topic):
    c = consumer(bootstrap, group_id=group)
    try:
        (tp,) = c.committed([TopicPartition(topic, 0)], timeout=15)
        return tp.offset
    finally:
        c.close()


def _future_error(fut):
    try:
        fut.result(15)
    except KafkaException as e:
        return e.args[0].code(), e.args[0].str()
    return None, None


def test_clients_cannot_forge_committed_offsets(broker_factory):
    """A Produce to __consumer_offsets (or __transaction_state) is refused with
    INVALID_TOPIC_EXCEPTION; a forged commit record never reaches the log, so the victim
    group's offset is still its own after a restart."""
    b = broker_factory()
    topic = create_topic(b.bootstrap, unique_topic("victim"), 1)
    group = "victim-group"
    _commit(b.bootstrap, group, topic, 5)
    forged_key = offset_commit_key(group, topic, 0)
    forged_value = offset_commit_value(OffsetAndMetadata(999_999, commit_timestamp=0))
    p = producer(b.bootstrap, acks="all", retries=0)
    log = DeliveryLog()
    p.produce("__consumer_offsets", key=forged_key, value=forged_value,
              partition=partition_for(group, OFFSETS_PARTITIONS), on_delivery=log)
    p.produce("__transaction_state", key=b"k", value=b"v", partition=0, on_delivery=log)
    flush_all(p)
    assert not log.ok
    assert [e.code() for e, _k, _v in log.errors] == [KafkaError.TOPIC_EXCEPTION] * 2
    b.stop()
    b.start()
    assert _committed(b.bootstrap, group, topic) == 5


def test_internal_topics_cannot_be_deleted_or_repartitioned(broker_factory):
    b = broker_factory()
    topic = create_topic(b.bootstrap, unique_topic("g"), 1)
    _commit(b.bootstrap, "some-group", topic, 1)  # creates __consumer_offsets
    admin = admin_client(b.bootstrap)
    code, _msg = _future_error(admin.delete_topics(["__consumer_offsets"],
                                                   operation_timeout=10)["__consumer_offsets"])
    assert code == KafkaError.TOPIC_EXCEPTION
    code, msg = _future_error(admin.create_partitions(
        [NewPartitions("__consumer_offsets", 10)], operation_timeout=10)["__consumer_offsets"])
    assert code == KafkaError.TOPIC_EXCEPTION and "internal topic" in msg
    md = admin.list_topics("__consumer_offsets", timeout=10)
    assert len(md.topics["__consumer_offsets"].partitions) == OFFSETS_PARTITIONS
    assert _committed(b.bootstrap, "some-group", topic) == 1


@pytest.mark.parametrize("key,value,why", [
    ("segment.bytes", "99999999999999", "Not a number of type INT"),
    ("segment.bytes", "10", "Value must be at least 14"),
    ("max.message.bytes", "-1", "Value must be at least 0"),
    ("min.insync.replicas", "0", "Value must be at least 1"),
    ("retention.ms", "-2", "Value must be at least -1"),
])
def test_create_topic_with_a_config_the_log_refuses(broker_factory, key, value, why):
    """INVALID_CONFIG naming the key, nothing left behind, and the broker restarts."""
    b = broker_factory()
    admin = admin_client(b.bootstrap)
    name = unique_topic("badcfg")
    fut = admin.create_topics([NewTopic(name, 1, 1, config={key: value})],
                              operation_timeout=10)[name]
    code, msg = _future_error(fut)
    assert code == KafkaError.INVALID_CONFIG
    assert key in msg and why in msg
    assert name not in admin.list_topics(timeout=10).topics
    assert not list(b.data_dir.glob(f"{name}-*"))
    b.stop()
    b.start()
    ok = create_topic(b.bootstrap, unique_topic("after"), 1)
    roundtrip_check(b.bootstrap, ok)


def test_broker_starts_when_a_stored_topic_cannot_load(broker_factory):
    """A topic whose stored config is invalid (written by an older version, or by hand) is
    reported offline; the broker starts and serves every other topic."""
    b = broker_factory()
    good = create_topic(b.bootstrap, unique_topic("good"), 1)
    bad = create_topic(b.bootstrap, unique_topic("bad"), 2)
    b.stop()
    meta_path = b.data_dir / "josefk-metadata.json"
    meta = json.loads(meta_path.read_text())
    meta["topics"][bad]["configs"] = {"segment.bytes": "99999999999999"}
    meta_path.write_text(json.dumps(meta))
    b.start()
    roundtrip_check(b.bootstrap, good)
    md = admin_client(b.bootstrap).list_topics(bad, timeout=10)
    parts = md.topics[bad].partitions
    assert sorted(parts) == [0, 1]
    for p in parts.values():
        assert p.error.code() == KafkaError.LEADER_NOT_AVAILABLE and p.leader == -1
    assert "segment.bytes" in b.log_tail()


def test_partition_counts_beyond_the_broker_limit_are_refused(broker_factory):
    b = broker_factory({"max.broker.partitions": 20})
    admin = admin_client(b.bootstrap)
    name = unique_topic("big")
    started = time.monotonic()
    code, msg = _future_error(admin.create_topics([NewTopic(name, 20_000, 1)],
                                                  operation_timeout=10)[name])
    assert code == KafkaError.INVALID_PARTITIONS and "20000" in msg
    assert time.monotonic() - started < 5
    assert name not in admin.list_topics(timeout=10).topics
    small = create_topic(b.bootstrap, unique_topic("small"), 4)
    code, _msg = _future_error(admin.create_partitions([NewPartitions(small, 30)],
                                                       operation_timeout=10)[small])
    assert code == KafkaError.INVALID_PARTITIONS
    assert len(admin.list_topics(small, timeout=10).topics[small].partitions) == 4
    b.stop()
    b.start()
    roundtrip_check(b.bootstrap, small)


def test_longest_legal_topic_name_end_to_end(broker):
    """249 characters: create, produce, consume, delete (its directory goes), create again."""
    name = ("long-" + unique_topic("n") + "-").ljust(249, "x")
    assert len(name) == 249
    admin = admin_client(broker.bootstrap)
    for round_ in range(2):
        create_topic(broker.bootstrap, name, 1)
        p = producer(broker.bootstrap, acks="all")
        log = DeliveryLog()
        p.produce(name, value=b"v%d" % round_, partition=0, on_delivery=log)
        flush_all(p)
        assert not log.errors
        (m,) = read_partition(broker.bootstrap, name, 0, 1)
        assert m.value() == b"v%d" % round_
        admin.delete_topics([name], operation_timeout=10)[name].result(15)
        wait_for_topic_gone(admin, name)
        deadline = time.monotonic() + 10
        while list(broker.data_dir.glob(name[:200] + "*")) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not list(broker.data_dir.glob(name[:200] + "*"))
