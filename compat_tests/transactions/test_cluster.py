"""Transactions in a 3-broker ZooKeeper cluster: a confluent-kafka transactional producer keeps
committing and aborting while the broker coordinating its transactional id (the leader of its
``__transaction_state`` partition) is killed with SIGKILL and restarted."""
from __future__ import annotations

import threading
import time

import pytest
from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import NewTopic

from josefk.coordinator.runtime.partitions import partition_for
from compat_tests.helpers import unique_topic
from compat_tests.transactions.test_confluent import read_values

TXN_PARTITIONS = 3
OVERRIDES = {
    "zookeeper.session.timeout.ms": 3000, "replica.lag.time.max.ms": 2000,
    "transaction.state.log.num.partitions": TXN_PARTITIONS,
    "transaction.state.log.replication.factor": 3, "transaction.state.log.min.isr": 2,
    "min.insync.replicas": 2,
}


class TxnLoad:
    """Transactions of 4 records over 2 partitions, every third one aborted; remembers what
    was committed (acknowledged), aborted, or left uncertain by a failed commit."""

    def __init__(self, bootstrap, topic, tid):
        self.p = Producer({"bootstrap.servers": bootstrap, "transactional.id": tid,
                           "transaction.timeout.ms": 20000, "message.timeout.ms": 20000,
                           "socket.timeout.ms": 10000})
        self.topic = topic
        self.committed, self.aborted, self.uncertain = [], [], []
        self.fatal = None
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _end(self, values, commit):
        for _ in range(20):
            try:
                if commit:
                    self.p.commit_transaction(20)
                    self.committed.append(values)
                else:
                    # Abort once the records are out, so that their partitions are in the
                    # transaction: librdkafka sends EndTxn(abort) even for partitions whose
                    # AddPartitionsToTxn failed (CONCURRENT_TRANSACTIONS while the previous
                    # commit completes), which Kafka, like josefk, answers INVALID_TXN_STATE,
                    # fatal to the producer (librdkafka issue #4849).
                    self.p.flush(20)
                    self.p.abort_transaction(20)
                    self.aborted.append(values)
                return
            except KafkaException as e:
                err = e.args[0]
                if err.fatal():
                    raise
                if err.txn_requires_abort():
                    self.p.abort_transaction(20)
                    self.aborted.append(values)
                    return
                time.sleep(0.2)  # retriable: the coordinator is moving
        self.uncertain.append(values)
        raise AssertionError(f"transaction {values[0]!r} never ended")

    def _run(self):
        try:
            self.p.init_transactions(30)
            i = 0
            while not self.stop.is_set() and i < 5000:
                values = [b"%d-%d" % (i, k) for k in range(4)]
                self.p.begin_transaction()
                for k, v in enumerate(values):
                    self.p.produce(self.topic, value=v, partition=k % 2)
                self._end(values, commit=i % 3 != 2)
                i += 1
        except Exception as e:  # noqa: BLE001 - reported by the test
            self.fatal = e

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(90)


@pytest.mark.slow
def test_transactions_across_a_coordinator_failover(cluster_factory):
    c = cluster_factory(overrides=OVERRIDES)
    topic = unique_topic("txc")
    admin = c.admin()  # alive until its future is answered
    admin.create_topics([NewTopic(topic, 2, 3)], operation_timeout=30)[topic].result(30)
    c.wait_for_topic(topic, 2)
    tid = "cluster-" + topic
    txn_partition = partition_for(tid, TXN_PARTITIONS)
    with TxnLoad(c.bootstrap, topic, tid) as load:
        c.wait_for(lambda: len(load.committed) >= 10, 60, "first commits")
        coordinator = c.partition("__transaction_state", txn_partition).leader
        before = len(load.committed)
        c.brokers[coordinator].kill()
        survivor = next(i for i in c.brokers if i != coordinator)
        c.wait_for(lambda: c.partition("__transaction_state", txn_partition, survivor).leader
                   not in (-1, coordinator), 30, "a new transaction coordinator")
        c.wait_for(lambda: len(load.committed) >= before + 10 or load.fatal, 90,
                   "commits through the new coordinator")
        c.brokers[coordinator].start()
        c.wait_for(lambda: len(c.partition(topic, 0, survivor).isrs) == 3 and
                   len(c.partition(topic, 1, survivor).isrs) == 3, 60, "full ISRs again")
        more = len(load.committed)
        c.wait_for(lambda: len(load.committed) >= more + 5 or load.fatal, 60, "more commits")
    assert load.fatal is None, load.fatal
    seen = read_values(c.bootstrap, topic, 2, "read_committed", settle=3.0, timeout=60)
    committed = {v for t in load.committed for v in t}
    aborted = {v for t in load.aborted for v in t}
    assert committed <= set(seen), f"{len(committed - set(seen))} committed records lost"
    assert not aborted & set(seen)
    assert len(seen) == len(set(seen))
    for t in load.uncertain:  # all or nothing
        assert len(set(t) & set(seen)) in (0, len(t))
    print(f"committed={len(load.committed)} aborted={len(load.aborted)} read={len(seen)}")


def test_coordinators_on_different_brokers_hand_out_distinct_producer_ids(cluster):
    """Producer ids come from blocks claimed in ZooKeeper: two transactional ids coordinated by
    different brokers, writing to one partition, never share an id (which would make the
    partition drop one's records as the other's duplicates)."""
    from kafka import KafkaAdminClient
    from kafka.structs import TopicPartition as KTP

    topic = unique_topic("pids")
    admin = cluster.admin()
    admin.create_topics([NewTopic(topic, 1, 3)], operation_timeout=30)[topic].result(30)
    cluster.wait_for_topic(topic, 1)
    first = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": "pids-probe"})
    first.init_transactions(60)  # creates __transaction_state
    leaders = {i: p.leader for i, p in cluster.metadata(1).topics["__transaction_state"]
               .partitions.items()}
    by_broker = {}
    for n in range(10_000):
        tid = f"pids-{topic}-{n}"
        by_broker.setdefault(leaders[partition_for(tid, len(leaders))], tid)
        if len(by_broker) >= 2:
            break
    producers = []
    for tid in list(by_broker.values())[:2]:
        p = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": tid})
        p.init_transactions(60)
        p.begin_transaction()
        p.produce(topic, value=tid.encode(), partition=0)
        p.commit_transaction(30)
        producers.append(p)
    ka = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    try:
        state = ka.describe_producers([KTP(topic, 0)])[KTP(topic, 0)].active_producers
    finally:
        ka.close()
    assert len({s.producer_id for s in state}) == 2
    assert sorted(read_values(cluster.bootstrap, topic, 1, "read_committed")) == \
        sorted(t.encode() for t in list(by_broker.values())[:2])
