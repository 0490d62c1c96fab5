"""The targets of the real-client scenarios have the shapes they claim (compat_tests/targets.py):
the replication factors of the topics the scenarios create and of the internal topics, and in
both cluster shapes group and transaction coordinators on other brokers than the leaders of the
partitions they commit for."""
from __future__ import annotations

import uuid

import pytest
from confluent_kafka import Producer

from compat_tests.helpers import unique_topic

# (partitions, replication factor) of the internal topics on each target
INTERNAL = {
    "single": {"__consumer_offsets": (3, 1), "__transaction_state": (50, 1)},
    "rf3": {"__consumer_offsets": (6, 3), "__transaction_state": (4, 3)},
    "spread": {"__consumer_offsets": (6, 2), "__transaction_state": (4, 1)},
}


def _use_internal_topics(target, topic):
    """A group commit and a transaction: both internal topics exist afterwards."""
    p = Producer({"bootstrap.servers": target.bootstrap,
                  "transactional.id": "shape-" + uuid.uuid4().hex[:8]})
    p.init_transactions(30)
    p.begin_transaction()
    p.produce(topic, b"x", partition=0)
    p.commit_transaction(30)
    target.group_coordinator(unique_topic("shape"))  # FindCoordinator creates the offsets topic
    for name in INTERNAL[target.name]:
        target.wait_for_topic(name)


def test_topics_and_internal_topics_have_the_target_shape(target):
    topics = [target.create_topic(unique_topic("shape"), 3) for _ in range(2)]
    rfs = [target.created[t] for t in topics]
    assert set(rfs) == {"single": {1}, "rf3": {3}, "spread": {1, 2}}[target.name]
    for topic, rf in zip(topics, rfs):
        parts = target.partitions(topic)
        assert all(len(p.replicas) == rf and sorted(p.isrs) == sorted(p.replicas)
                   for p in parts.values()), parts
        # on a cluster, each broker leads one of the three partitions
        leaders = sorted(p.leader for p in parts.values())
        assert leaders == (sorted(target.brokers) if target.cluster else [1, 1, 1]), parts
    _use_internal_topics(target, topics[0])
    for name, (count, rf) in INTERNAL[target.name].items():
        parts = target.partitions(name)
        assert (len(parts), {len(p.replicas) for p in parts.values()}) == (count, {rf}), name
        if target.cluster is not None:
            assert {p.leader for p in parts.values()} == set(target.brokers), name


@pytest.mark.parametrize("target", ["rf3", "spread"], indirect=True)
def test_coordinators_sit_apart_from_partition_leaders(target):
    """Groups and transactional ids land on coordinators by hash; whichever they land on, some
    partition of a topic spread over the brokers is led elsewhere, and in the spread shape some
    replica-1 partition is not even hosted by the coordinator (issue 19, defect 1)."""
    topics = [target.create_topic(unique_topic("apart"), 3) for _ in range(2)]
    _use_internal_topics(target, topics[0])
    for _ in range(5):
        group, tid = unique_topic("apart"), "apart-" + uuid.uuid4().hex[:8]
        for coordinator in (target.group_coordinator(group),
                            target.transaction_coordinator(tid)):
            for topic in topics:
                parts = target.partitions(topic).values()
                assert any(p.leader != coordinator for p in parts), (topic, coordinator)
                if target.created[topic] == 1:
                    assert any(coordinator not in p.replicas for p in parts)
