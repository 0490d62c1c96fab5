"""Operator APIs in the shared 3-broker cluster: DeleteRecords answers only once every live
replica's log starts at the new offset, as Kafka's delayed DeleteRecords does."""
from __future__ import annotations

from confluent_kafka import KafkaException, Producer, TopicPartition

from compat_tests import rawkafka as rk
from compat_tests.helpers import unique_topic
from compat_tests.clusters.test_replication import create

EARLIEST = -2
DEBUGGING_REPLICA_ID = -2  # ListOffsets any replica answers, not only the leader
REQUEST_TIMED_OUT = 7


def produce(c, topic, n):
    p = Producer({"bootstrap.servers": c.bootstrap, "acks": "all", "linger.ms": 0})
    for i in range(n):
        p.produce(topic, str(i).encode(), partition=0)
    assert p.flush(30) == 0


def log_start(c, broker_id, topic):
    """Where ``broker_id``'s own replica of ``topic``-0 starts."""
    with rk.RawConnection(c.brokers[broker_id].bootstrap) as conn:
        err, offset = rk.list_offsets_v1(conn, topic, 0, EARLIEST, DEBUGGING_REPLICA_ID)
    assert err == 0, err
    return offset


def test_delete_records_answers_when_every_replica_moved(cluster):
    topic = create(cluster, unique_topic("delrec"))
    produce(cluster, topic, 20)
    assert {log_start(cluster, b, topic) for b in cluster.brokers} == {0}
    tp = TopicPartition(topic, 0, 12)
    admin = cluster.admin()  # kept alive until the future is answered
    deleted = admin.delete_records([tp], operation_timeout=30)[tp].result(40)
    assert deleted.low_watermark == 12
    # Asked right after the answer, with no waiting: each replica already starts at 12.
    assert {b: log_start(cluster, b, topic) for b in cluster.brokers} == {1: 12, 2: 12, 3: 12}


def test_delete_records_times_out_while_a_live_follower_lags(cluster):
    topic = create(cluster, unique_topic("delrec-stalled"))
    produce(cluster, topic, 10)
    part = cluster.partition(topic, 0)
    follower = next(r for r in part.replicas if r != part.leader)
    cluster.brokers[follower].pause()  # alive in ZooKeeper, but not fetching
    try:
        tp = TopicPartition(topic, 0, 6)
        admin = cluster.admin(part.leader)
        fut = admin.delete_records([tp], operation_timeout=1.5)[tp]
        try:
            fut.result(20)
            raise AssertionError("DeleteRecords answered before the stalled follower moved")
        except KafkaException as e:
            assert e.args[0].code() == REQUEST_TIMED_OUT, e
        assert log_start(cluster, part.leader, topic) == 6  # the leader deleted at once
    finally:
        cluster.brokers[follower].resume()
    # The follower catches up from the leader's log start offset in its next fetch.
    cluster.wait_for(lambda: log_start(cluster, follower, topic) == 6, 30,
                     "the resumed follower's log start")
    cluster.wait_for(lambda: len(cluster.partition(topic, 0).isrs) == 3, 30, "a full ISR")
