"""Topic administration through each client's AdminClient on every target: create, describe,
grow and delete, and each refusal with Kafka's error (a name taken or illegal, a replication
factor above the brokers, a bad config, shrinking), validate_only creating nothing."""
from __future__ import annotations

import time

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import ConfigResource, ConfigSource, NewPartitions, NewTopic, ResourceType
from kafka.admin import ConfigResource as KpResource
from kafka.admin import ConfigResourceType
from kafka.admin import NewPartitions as KpNewPartitions
from kafka.admin import NewTopic as KpNewTopic
from kafka.errors import TopicAlreadyExistsError

from compat_tests.clients import kafka_python_admin
from compat_tests.helpers import (admin_client, produce_plain, read_partition, unique_topic,
                                  wait_for_topic, wait_for_topic_gone)

pytestmark = pytest.mark.timeout(90)


def _source(entry):
    s = entry.source
    return s if isinstance(s, ConfigSource) else ConfigSource(s)


def test_confluent_create_describe_grow_delete(target):
    admin = admin_client(target.bootstrap)
    name = unique_topic("admin")
    rf = target.replication_factor()
    new = NewTopic(name, num_partitions=4, replication_factor=rf,
                   config={"retention.ms": "123456789", "segment.bytes": "1048576"})
    admin.create_topics([new], operation_timeout=10)[name].result(15)

    # Creating it again is TOPIC_ALREADY_EXISTS.
    with pytest.raises(KafkaException) as exc:
        admin.create_topics([NewTopic(name, num_partitions=1, replication_factor=1)],
                            operation_timeout=10)[name].result(15)
    assert exc.value.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS

    t = target.wait_for_topic(name, 4)
    assert sorted(t.partitions) == [0, 1, 2, 3]
    for pid, pm in t.partitions.items():
        assert len(set(pm.replicas)) == rf and set(pm.replicas) <= set(target.brokers), pid
        assert pm.leader in pm.replicas, pid
        assert sorted(pm.isrs) == sorted(pm.replicas), pid

    res = ConfigResource(ResourceType.TOPIC, name)
    configs = admin.describe_configs([res])[res].result(15)
    assert configs["retention.ms"].value == "123456789"
    assert _source(configs["retention.ms"]) == ConfigSource.DYNAMIC_TOPIC_CONFIG
    assert configs["segment.bytes"].value == "1048576"
    # Unset configs are described too, with the broker default.
    assert configs["cleanup.policy"].value == "delete"
    assert _source(configs["cleanup.policy"]) != ConfigSource.DYNAMIC_TOPIC_CONFIG

    admin.create_partitions([NewPartitions(name, 6)], operation_timeout=10)[name].result(15)
    t = target.wait_for_topic(name, 6)
    assert sorted(t.partitions) == list(range(6))
    # The new partition takes writes and serves them.
    produce_plain(target.bootstrap, name, [b"in-p5"], partition=5)
    (m,) = read_partition(target.bootstrap, name, 5, 1)
    assert (m.partition(), m.offset(), m.value()) == (5, 0, b"in-p5")

    admin.delete_topics([name], operation_timeout=10)[name].result(15)
    wait_for_topic_gone(admin, name)


def test_confluent_delete_unknown_topic_fails(target):
    admin = admin_client(target.bootstrap)
    name = unique_topic("never-created")
    with pytest.raises(KafkaException) as exc:
        admin.delete_topics([name], operation_timeout=10)[name].result(15)
    assert exc.value.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART


def _create_error(admin, topic: NewTopic, **kw):
    fut = admin.create_topics([topic], operation_timeout=10, **kw)[topic.topic]
    try:
        fut.result(15)
    except KafkaException as e:
        return e.args[0].code()
    return None


def test_confluent_create_topic_errors(target):
    admin = admin_client(target.bootstrap)
    n = unique_topic("adm-err")
    cases = [
        (NewTopic("bad name!", num_partitions=1, replication_factor=1),
         KafkaError.TOPIC_EXCEPTION),
        (NewTopic("x" * 250, num_partitions=1, replication_factor=1),
         KafkaError.TOPIC_EXCEPTION),
        (NewTopic(n + "-rf", num_partitions=1, replication_factor=len(target.brokers) + 1),
         KafkaError.INVALID_REPLICATION_FACTOR),
        (NewTopic(n + "-cfg", num_partitions=1, replication_factor=1,
                  config={"retention.ms": "not-a-number"}),
         KafkaError.INVALID_CONFIG),
        (NewTopic(n + "-key", num_partitions=1, replication_factor=1,
                  config={"no.such.topic.config": "1"}),
         KafkaError.INVALID_CONFIG),
    ]
    got = [(t.topic[:40], _create_error(admin, t)) for t, _ in cases]
    assert got == [(t.topic[:40], code) for t, code in cases]
    listed = admin.list_topics(timeout=10).topics
    for t, _ in cases:
        assert t.topic not in listed

    # validate_only checks without creating.
    v = NewTopic(n + "-validate", num_partitions=2, replication_factor=1)
    assert _create_error(admin, v, validate_only=True) is None
    time.sleep(0.5)
    assert v.topic not in admin.list_topics(timeout=10).topics

    # Shrinking a topic is refused.
    t = NewTopic(n + "-shrink", num_partitions=3, replication_factor=target.replication_factor())
    admin.create_topics([t], operation_timeout=10)[t.topic].result(15)
    target.wait_for_topic(t.topic, 3)
    with pytest.raises(KafkaException) as exc:
        admin.create_partitions([NewPartitions(t.topic, 2)],
                                operation_timeout=10)[t.topic].result(15)
    assert exc.value.args[0].code() == KafkaError.INVALID_PARTITIONS
    assert len(wait_for_topic(admin, t.topic).partitions) == 3


def _wait_listed(admin, name, present, timeout=15.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if (name in admin.list_topics()) == present:
            return
        time.sleep(0.2)
    raise AssertionError(f"topic {name!r} {'not listed' if present else 'still listed'} "
                         f"after {timeout}s")


def test_kafka_python_create_describe_grow_delete(target):
    name = unique_topic("kp-admin")
    rf = target.replication_factor()
    admin = kafka_python_admin(target.bootstrap)
    try:
        admin.create_topics([KpNewTopic(name, num_partitions=3, replication_factor=rf,
                                      topic_configs={"retention.ms": "7200000"})],
                            timeout_ms=10000)
        target.wait_for_topic(name, 3)

        with pytest.raises(TopicAlreadyExistsError):
            admin.create_topics([KpNewTopic(name, num_partitions=1, replication_factor=1)],
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
        res = admin.describe_configs([KpResource(ConfigResourceType.TOPIC, name)])
        modified = res["topic"][name]
        assert modified["retention.ms"]["value"] == "7200000", res
        assert "cleanup.policy" not in modified, res

        admin.create_partitions({name: KpNewPartitions(total_count=5)}, timeout_ms=10000)
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
