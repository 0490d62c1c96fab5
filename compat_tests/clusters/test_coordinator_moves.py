"""A coordinator moved to another broker keeps its state: the broker coordinating a classic
group with committed offsets, a KIP-848 consumer group with its member and offsets, a
share-partition's state and an ongoing transaction is stopped, and the brokers that take over its
partitions of ``__consumer_offsets``, ``__share_group_state`` and ``__transaction_state`` load
them (the coordinator runtime replaying their records) and answer as it did. On the ``spread``
cluster, whose coordinators sit apart from the leaders of the partitions they coordinate; its
``__transaction_state`` gets a second replica here, so that a stop can move it."""
from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Consumer, TopicCollection, TopicPartition

from compat_tests.helpers import unique_topic
from compat_tests.transactions.test_confluent import open_txn, read_values, txn_producer
from josefk.tools.client import Client
from josefk.wire import errors
from josefk.wire.apis import (CONSUMER_GROUP_DESCRIBE, CONSUMER_GROUP_HEARTBEAT,
                              DESCRIBE_TRANSACTIONS, FIND_COORDINATOR, OFFSET_COMMIT,
                              READ_SHARE_GROUP_STATE, WRITE_SHARE_GROUP_STATE)
from josefk.wire.types import uuid_from_base64, uuid_to_base64

GROUP_KEY, TXN_KEY, SHARE_KEY = 0, 1, 2
MOVABLE = {"transaction.state.log.replication.factor": 2,
           "share.coordinator.state.topic.num.partitions": 3}
ACKNOWLEDGED = 2


def _find(t, keys, key_type, timeout=30.0) -> dict:
    """{key: node id of its coordinator} (FindCoordinator, retried while the internal topic is
    created or its partitions move)."""
    deadline = time.monotonic() + timeout
    while True:
        with Client(t.bootstrap) as c:
            found = c.request(FIND_COORDINATOR, coordinator_keys=list(keys),
                              key_type=key_type).coordinators
        if all(f.error_code == 0 for f in found):
            return {f.key: f.node_id for f in found}
        assert time.monotonic() < deadline, found
        time.sleep(0.3)


def _on(t, node, key_type, make, tries=40) -> str:
    """A key ``make(i)`` coordinated by broker ``node``."""
    keys = [make(i) for i in range(tries)]
    at = _find(t, keys, key_type)
    chosen = [k for k in keys if at[k] == node]
    assert chosen, f"none of {tries} keys of type {key_type} on broker {node}: {at}"
    return chosen[0]


def _moved(t, key, key_type, old) -> int:
    """The new coordinator of ``key``, once it is another broker than ``old``."""
    deadline = time.monotonic() + 30
    while (node := _find(t, [key], key_type)[key]) == old:
        assert time.monotonic() < deadline, f"{key} still coordinated by {old}"
        time.sleep(0.3)
    return node


def _join_consumer_group(client, group, member, topic) -> tuple[int, list]:
    """ConsumerGroupHeartbeats until the member owns its assignment: (epoch, assignment)."""
    epoch, owned = 0, []
    deadline = time.monotonic() + 30
    while True:
        hb = client.request(CONSUMER_GROUP_HEARTBEAT, group_id=group, member_id=member,
                            member_epoch=epoch, rebalance_timeout_ms=30000,
                            subscribed_topic_names=[topic] if epoch == 0 else None,
                            topic_partitions=owned)
        assert hb.error_code == 0, hb
        if hb.assignment is not None:
            owned = [CONSUMER_GROUP_HEARTBEAT.Request.TopicPartitions(
                topic_id=tp.topic_id, partitions=sorted(tp.partitions))
                for tp in hb.assignment.topic_partitions]
        if hb.member_epoch == epoch and owned:
            return epoch, sorted((tp.topic_id, tuple(tp.partitions)) for tp in owned)
        epoch = hb.member_epoch
        assert time.monotonic() < deadline, hb
        time.sleep(0.2)


def _describe_consumer_group(t, node, group):
    with Client(t.brokers[node].bootstrap) as c:
        (g,) = c.request(CONSUMER_GROUP_DESCRIBE, group_ids=[group],
                         include_authorized_operations=False).groups
    assert g.error_code == 0, g
    return g.group_epoch, [(m.member_id, m.member_epoch, sorted(
        (tp.topic_name, tuple(sorted(tp.partitions))) for tp in m.assignment.topic_partitions))
        for m in g.members]


def _committed(t, group, topic) -> dict:
    c = Consumer({"bootstrap.servers": t.bootstrap, "group.id": group})
    try:
        got = c.committed([TopicPartition(topic, p) for p in range(2)], timeout=15)
        return {tp.partition: tp.offset for tp in got}
    finally:
        c.close()


def _share_state(t, node, group, topic_id):
    with Client(t.brokers[node].bootstrap) as c:
        R = READ_SHARE_GROUP_STATE.Request
        (result,) = c.request(READ_SHARE_GROUP_STATE, group_id=group, topics=[R.ReadStateData(
            topic_id=topic_id, partitions=[R.PartitionData(partition=0, leader_epoch=1)])]
        ).results
    (p,) = result.partitions
    return p.error_code, p.state_epoch, p.start_offset, [
        (b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
        for b in p.state_batches]


def _describe_txn(t, node, tid):
    with Client(t.brokers[node].bootstrap) as c:
        (s,) = c.request(DESCRIBE_TRANSACTIONS, transactional_ids=[tid]).transaction_states
    assert s.error_code == 0, s
    return (s.transaction_state, s.producer_id, s.producer_epoch,
            sorted((tp.topic, tuple(sorted(tp.partitions))) for tp in s.topics))


@pytest.mark.parametrize("target_factory", ["spread"], indirect=True)
def test_coordinators_moved_to_another_broker_keep_their_state(target_factory):
    t = target_factory(MOVABLE)
    topic = t.create_topic(unique_topic("cmove"), 2)
    admin = t.admin()
    desc = admin.describe_topics(TopicCollection([topic]))[topic].result(15)
    topic_id = uuid_from_base64(str(desc.topic_id).replace("+", "-").replace("/", "_")
                                .rstrip("="))
    prefix = uuid.uuid4().hex[:6]
    classic = f"classic-{prefix}"
    victim = _find(t, [classic], GROUP_KEY)[classic]
    consumer_group = _on(t, victim, GROUP_KEY, lambda i: f"consumer-{prefix}-{i}")
    tid = _on(t, victim, TXN_KEY, lambda i: f"tx-{prefix}-{i}")
    share_key = _on(t, victim, SHARE_KEY,
                    lambda i: f"share-{prefix}-{i}:{uuid_to_base64(topic_id)}:0")
    share_group = share_key.split(":")[0]

    # a classic group's committed offsets
    c = Consumer({"bootstrap.servers": t.bootstrap, "group.id": classic,
                  "enable.auto.commit": False})
    try:
        c.commit(offsets=[TopicPartition(topic, 0, 5), TopicPartition(topic, 1, 7)],
                 asynchronous=False)
    finally:
        c.close()
    # a consumer group's member at its epoch, and its offsets committed at that epoch
    member = uuid.uuid4().hex
    with Client(t.brokers[victim].bootstrap) as client:
        epoch, assignment = _join_consumer_group(client, consumer_group, member, topic)
        P = OFFSET_COMMIT.Request
        (committed,) = client.request(
            OFFSET_COMMIT, group_id=consumer_group, generation_id_or_member_epoch=epoch,
            member_id=member, topics=[P.OffsetCommitRequestTopic(
                name=topic, topic_id=topic_id, partitions=[P.OffsetCommitRequestPartition(
                    partition_index=p, committed_offset=10 + p, committed_metadata="")
                    for p in range(2)])]).topics
        assert [p.error_code for p in committed.partitions] == [0, 0], committed
    consumer_group_before = _describe_consumer_group(t, victim, consumer_group)
    # a share-partition's state
    with Client(t.brokers[victim].bootstrap) as client:
        W = WRITE_SHARE_GROUP_STATE.Request
        (written,) = client.request(WRITE_SHARE_GROUP_STATE, group_id=share_group, topics=[
            W.WriteStateData(topic_id=topic_id, partitions=[W.PartitionData(
                partition=0, state_epoch=1, leader_epoch=1, start_offset=3,
                state_batches=[W.StateBatch(first_offset=3, last_offset=9,
                                            delivery_state=ACKNOWLEDGED, delivery_count=1)])])]
        ).results
        assert written.partitions[0].error_code == 0, written
    share_before = _share_state(t, victim, share_group, topic_id)
    assert share_before == (0, 1, 3, [(3, 9, ACKNOWLEDGED, 1)])
    # an ongoing transaction
    producer = txn_producer(t.bootstrap, tid)
    open_txn(producer, topic, b"in-flight")
    txn_before = _describe_txn(t, victim, tid)
    assert txn_before[0] == "Ongoing" and txn_before[3] == [(topic, (0,))]

    t.brokers[victim].stop()   # its coordinators' partitions move to the other replicas

    _moved(t, classic, GROUP_KEY, victim)
    group_node = _moved(t, consumer_group, GROUP_KEY, victim)
    assert _committed(t, classic, topic) == {0: 5, 1: 7}
    assert _committed(t, consumer_group, topic) == {0: 10, 1: 11}
    assert _describe_consumer_group(t, group_node, consumer_group) == consumer_group_before
    with Client(t.brokers[group_node].bootstrap) as client:
        hb = client.request(CONSUMER_GROUP_HEARTBEAT, group_id=consumer_group, member_id=member,
                            member_epoch=epoch)
        assert (hb.error_code, hb.member_epoch) == (errors.NONE, epoch), hb
    assert assignment  # the member kept what it owned: no new epoch, no rejoin
    share_node = _moved(t, share_key, SHARE_KEY, victim)
    assert _share_state(t, share_node, share_group, topic_id) == share_before
    txn_node = _moved(t, tid, TXN_KEY, victim)
    assert _describe_txn(t, txn_node, tid) == txn_before
    producer.commit_transaction(30)
    assert read_values(t.bootstrap, topic, 1, "read_committed") == [b"in-flight"]
