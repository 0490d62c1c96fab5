"""MirrorMaker 2's connectors between two josefk clusters (two single brokers), driven as the
Connect worker drives source tasks: the connector started, its task configs taken, each task
started with a context whose offsets the test keeps, its records produced to the target with
confluent-kafka and acknowledged through ``commit_record`` (``commit_rows`` for a poll that
is a SourceRecordBatch, as MirrorSourceTask's), then ``commit``."""
import json
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import (AclBinding, AclBindingFilter, AclOperation, AclPermissionType,
                                   AdminClient, ConfigResource, NewPartitions,
                                   ResourcePatternType, ResourceType)

from josefk.connect.api.records import RecordMetadata, SourceRecordBatch
from josefk.mirror.checkpoint import MirrorCheckpointConnector
from josefk.mirror.client import translate_offsets
from josefk.mirror.heartbeat import MirrorHeartbeatConnector
from josefk.mirror.records import Checkpoint, Heartbeat, OffsetSync
from josefk.mirror.source import MirrorSourceConnector
from josefk.testing import broker

from compat_tests.mirror.mirroring import flow, read_all, until

LAG = 5


class Offsets:
    """The worker's offset store seen by tasks (the OffsetStorageReader protocol)."""

    def __init__(self):
        self.stored = {}

    def offset(self, partition):
        return self.stored.get(json.dumps(partition, sort_keys=True))

    def offsets(self, partitions):
        return [self.offset(p) for p in partitions]


class TaskContext:
    def __init__(self, props, offsets):
        self.props, self.offsets = props, offsets

    def configs(self):
        return self.props

    def offset_storage_reader(self):
        return self.offsets

    def transaction_context(self):
        return None


class ConnectorContext:
    def __init__(self):
        self.reconfigurations = 0

    def request_task_reconfiguration(self):
        self.reconfigurations += 1

    def raise_error(self, error):
        raise error


class MiniWorker:
    """Runs source tasks' poll -> produce -> commit_record / commit_rows -> commit on the
    test's thread."""

    def __init__(self, target):
        self.producer = Producer({"bootstrap.servers": target, "linger.ms": 0})
        self.offsets = Offsets()
        self.tasks = []

    def start(self, connector, max_tasks):
        for props in connector.task_configs(max_tasks):
            task = connector.task_class()()
            task.initialize(TaskContext(props, self.offsets))
            task.start(props)
            self.tasks.append(task)

    def run_once(self):
        written = 0
        for task in self.tasks:
            polled = task.poll()
            if not polled:
                continue
            batch = polled if isinstance(polled, SourceRecordBatch) else None
            records = polled if batch is None else [batch.record(i) for i in range(len(batch))]
            offsets = [-1] * len(records)  # where each row of a batch was written
            for i, record in enumerate(records):
                def delivered(error, msg, i=i, record=record, task=task, batch=batch):
                    assert error is None, error
                    offsets[i] = msg.offset()
                    if batch is None:
                        task.commit_record(record, RecordMetadata(
                            msg.topic(), msg.partition(), msg.offset(), msg.timestamp()[1]))
                        self.offsets.stored[json.dumps(record.source_partition,
                                                       sort_keys=True)] = record.source_offset
                self.producer.produce(record.topic, record.value, record.key,
                                      partition=record.kafka_partition,
                                      timestamp=record.timestamp or 0,
                                      headers=[(h.key, h.value) for h in record.headers],
                                      on_delivery=delivered)
                written += 1
            assert self.producer.flush(15) == 0
            if batch is not None:
                task.commit_rows(batch, offsets)
                for partition, offset in batch.offsets:
                    self.offsets.stored[json.dumps(partition, sort_keys=True)] = offset
        for task in self.tasks:
            task.commit()
        return written

    def stop(self):
        for task in self.tasks:
            task.stop()
        self.tasks.clear()


@pytest.fixture
def clusters():
    with broker() as primary, broker() as backup:
        yield primary, backup


def produce_orders(bootstrap, topic, count, start=0):
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(start, start + count):
        producer.produce(topic, f"value-{i}".encode(), f"key-{i}".encode(), partition=i % 2,
                         timestamp=1_700_000_000_000 + i, headers=[("h", f"{i}".encode()),
                                                                   ("h", None)])
    assert producer.flush(15) == 0


def mirror_until(worker, bootstrap, topic, partitions, count):
    def mirrored():
        worker.run_once()
        return len(read_all(bootstrap, topic, partitions, timeout=5)) >= count
    until(mirrored)


def test_records_topics_and_offset_syncs(clusters):
    primary, backup = clusters
    primary.create_topic("orders", 2, {"retention.ms": 123456789})
    primary.create_topic("__hidden", 1)
    produce_orders(primary.bootstrap_servers, "orders", 20)

    connector, context = MirrorSourceConnector(), ConnectorContext()
    connector.initialize(context)
    connector.start(flow(primary, backup, **{"refresh.topics.interval.seconds": "1",
                                             "offset.lag.max": str(LAG)}))
    worker = MiniWorker(backup.bootstrap_servers)
    try:
        configs = connector.task_configs(4)
        assert sorted(c["task.assigned.partitions"] for c in configs) == ["orders-0", "orders-1"]
        admin = AdminClient({"bootstrap.servers": backup.bootstrap_servers})
        topics = admin.list_topics(timeout=10).topics
        assert len(topics["primary.orders"].partitions) == 2 and "primary.__hidden" not in topics
        described = admin.describe_configs(
            [ConfigResource(ConfigResource.Type.TOPIC, "primary.orders")])
        entries = next(iter(described.values())).result(10)
        assert entries["retention.ms"].value == "123456789"

        worker.start(connector, 4)
        mirror_until(worker, backup.bootstrap_servers, "primary.orders", 2, 20)
        source = {(m.partition(), m.offset()): m for m in
                  read_all(primary.bootstrap_servers, "orders", 2)}
        target = {(m.partition(), m.offset()): m for m in
                  read_all(backup.bootstrap_servers, "primary.orders", 2)}
        assert len(target) == 20 and source.keys() == target.keys()
        for where, msg in source.items():
            copy = target[where]
            assert (copy.key(), copy.value(), copy.headers(), copy.timestamp()) == \
                (msg.key(), msg.value(), msg.headers(), msg.timestamp())

        def synced():
            syncs = [OffsetSync.from_record(m.key(), m.value()) for m in read_all(
                primary.bootstrap_servers, "mm2-offset-syncs.backup.internal", 1, 5)]
            by_partition = [[s for s in syncs if (s.topic, s.partition) == ("orders", p)]
                            for p in (0, 1)]
            # the last record's sync is sent by the commit, after the task's poll
            return all(mine and mine[-1].upstream_offset == 9 for mine in by_partition) and \
                by_partition
        for partition, mine in enumerate(until(synced)):
            assert mine[0] == OffsetSync("orders", partition, 0, 0)
            assert mine[-1] == OffsetSync("orders", partition, 9, 9)
            assert all(b.downstream_offset - a.downstream_offset <= LAG + 1
                       for a, b in zip(mine, mine[1:]))

        # a new topic and a partition more are found by the refresh
        primary.create_topic("payments", 1)
        source_admin = AdminClient({"bootstrap.servers": primary.bootstrap_servers})
        source_admin.create_partitions([NewPartitions("orders", 3)])["orders"].result(10)
        until(lambda: sorted(c["task.assigned.partitions"] for c in connector.task_configs(4))
              == ["orders-0", "orders-1", "orders-2", "payments-0"])
        assert context.reconfigurations >= 1
        topics = until(lambda: (t := admin.list_topics(timeout=10).topics).get(
            "primary.payments") and len(t["primary.orders"].partitions) == 3 and t)
        assert len(topics["primary.payments"].partitions) == 1

        # tasks restarted on the new layout resume where the stored offsets say
        worker.stop()
        produce_orders(primary.bootstrap_servers, "orders", 4, start=20)
        worker.start(connector, 4)
        mirror_until(worker, backup.bootstrap_servers, "primary.orders", 3, 24)
        assert len(read_all(backup.bootstrap_servers, "primary.orders", 3)) == 24
    finally:
        worker.stop()
        connector.stop()


def test_checkpoints_translate_a_groups_offsets_and_sync_them(clusters):
    primary, backup = clusters
    primary.create_topic("orders", 2)
    produce_orders(primary.bootstrap_servers, "orders", 40)
    props = flow(primary, backup, **{"offset.lag.max": str(LAG),
                                     "emit.checkpoints.interval.seconds": "0",
                                     "sync.group.offsets.enabled": "true",
                                     "sync.group.offsets.interval.seconds": "0"})
    app = Consumer({"bootstrap.servers": primary.bootstrap_servers, "group.id": "app",
                    "enable.auto.commit": False})
    app.commit(offsets=[TopicPartition("orders", 0, 0), TopicPartition("orders", 1, 0)],
               asynchronous=False)
    source = MirrorSourceConnector()
    source.initialize(ConnectorContext())
    source.start({**props, "refresh.topics.enabled": "false"})
    worker, checkpointer = MiniWorker(backup.bootstrap_servers), MiniWorker(
        backup.bootstrap_servers)
    checkpoints = MirrorCheckpointConnector()
    try:
        # the checkpoint task reads the offset-syncs topic to its end before any translation,
        # and keeps only the latest sync of what that first read finds (as Kafka's store)
        checkpoints.initialize(ConnectorContext())
        checkpoints.start({**props, "groups.exclude": "check-.*"})
        configs = checkpoints.task_configs(3)
        assert [c["task.assigned.groups"] for c in configs] == ["app"]
        checkpointer.start(checkpoints, 3)
        until(lambda: checkpointer.tasks[0].store.read_to_end or checkpointer.run_once())

        worker.start(source, 2)
        mirror_until(worker, backup.bootstrap_servers, "primary.orders", 2, 40)
        app.commit(offsets=[TopicPartition("orders", 0, 13), TopicPartition("orders", 1, 20)],
                   asynchronous=False)
        app.close()

        def checkpointed():
            checkpointer.run_once()
            latest = {}
            for m in read_all(backup.bootstrap_servers, "primary.checkpoints.internal", 1, 5):
                c = Checkpoint.from_record(m.key(), m.value())
                latest[c.topic, c.partition] = c
            return {c.upstream_offset for c in latest.values()} == {13, 20} and latest
        got = until(checkpointed)
        assert set(got) == {("primary.orders", 0), ("primary.orders", 1)}
        assert got["primary.orders", 1] == Checkpoint("app", "primary.orders", 1, 20, 20, "")
        first = got["primary.orders", 0]
        assert first.upstream_offset == 13 and 13 - LAG <= first.downstream_offset <= 13

        # what a client of the target reads, as Java's RemoteClusterUtils.translateOffsets
        translated = translate_offsets({"bootstrap.servers": backup.bootstrap_servers},
                                       "primary", "app")
        assert sorted((tp.topic, tp.partition, tp.offset) for tp in translated) == [
            ("primary.orders", 0, first.downstream_offset), ("primary.orders", 1, 20)]

        # a restarted task has read the checkpoints written: it repeats none of them
        checkpointer.stop()
        checkpointer.start(checkpoints, 3)
        assert checkpointer.tasks[0].checkpoints["app"][("primary.orders", 1)] == \
            got["primary.orders", 1]
        emitted = []

        def translating():
            emitted.append(checkpointer.run_once())
            return checkpointer.tasks[0].store.read_to_end
        until(translating)
        emitted.append(checkpointer.run_once())
        assert sum(emitted) == 0

        moved = Consumer({"bootstrap.servers": backup.bootstrap_servers, "group.id": "app"})
        committed = until(lambda: (c := moved.committed(
            [TopicPartition("primary.orders", 0), TopicPartition("primary.orders", 1)],
            timeout=10)) and all(tp.offset >= 0 for tp in c) and c)
        assert [tp.offset for tp in committed] == [first.downstream_offset, 20]
        # the group moved to the target resumes there: nothing lost, at most offset.lag.max
        # records read again (partition 0 holds the even records: value-0, value-2...)
        moved.subscribe(["primary.orders"])
        values, deadline = [], time.monotonic() + 20
        while len(values) < 20 - first.downstream_offset and time.monotonic() < deadline:
            msg = moved.poll(0.5)
            if msg is not None and msg.error() is None:
                assert msg.partition() == 0  # partition 1 was read to its end at the source
                values.append(int(msg.value().decode().split("-")[1]))
        moved.close()
        assert values == [2 * n for n in range(first.downstream_offset, 20)]
        assert 13 - first.downstream_offset <= LAG
    finally:
        worker.stop()
        checkpointer.stop()
        checkpoints.stop()
        source.stop()


def test_heartbeats(clusters):
    primary, backup = clusters
    connector = MirrorHeartbeatConnector()
    connector.initialize(ConnectorContext())
    connector.start(flow(primary, backup, **{"emit.heartbeats.interval.seconds": "0"}))
    worker = MiniWorker(backup.bootstrap_servers)
    try:
        worker.start(connector, 5)
        assert len(worker.tasks) == 1
        before = int(time.time() * 1000)
        worker.run_once()
        beats = [Heartbeat.from_record(m.key(), m.value())
                 for m in read_all(backup.bootstrap_servers, "heartbeats", 1)]
        assert [(b.source_cluster_alias, b.target_cluster_alias) for b in beats] == [
            ("primary", "backup")]
        assert beats[0].timestamp >= before
    finally:
        worker.stop()
        connector.stop()


def test_literal_topic_acls_are_synced():
    secured = {"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
               "super.users": "User:ANONYMOUS"}
    with broker(secured) as primary, broker(secured) as backup:
        primary.create_topic("orders", 1)
        primary.create_topic("private", 1)
        admin = AdminClient({"bootstrap.servers": primary.bootstrap_servers})

        def acl(topic, operation, pattern=ResourcePatternType.LITERAL, principal="User:alice"):
            return AclBinding(ResourceType.TOPIC, topic, pattern, principal, "*", operation,
                              AclPermissionType.ALLOW)
        wanted = [acl("orders", AclOperation.DESCRIBE),
                  acl("orders", AclOperation.ALL, principal="User:bob"),
                  acl("orders", AclOperation.WRITE),
                  acl("ord", AclOperation.READ, ResourcePatternType.PREFIXED),
                  acl("private", AclOperation.READ)]
        for future in admin.create_acls(wanted).values():
            future.result(10)
        connector = MirrorSourceConnector()
        connector.initialize(ConnectorContext())
        connector.start(flow(primary, backup, topics="orders"))
        try:
            target = AdminClient({"bootstrap.servers": backup.bootstrap_servers})
            everything = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None,
                                          None, AclOperation.ANY, AclPermissionType.ANY)
            synced = target.describe_acls(everything).result(10)
            got = [(b.name, b.resource_pattern_type, b.principal, b.operation) for b in synced]
            assert sorted(got, key=str) == [
                ("primary.orders", ResourcePatternType.LITERAL, "User:alice",
                 AclOperation.DESCRIBE),
                ("primary.orders", ResourcePatternType.LITERAL, "User:bob", AclOperation.READ)]
        finally:
            connector.stop()


def test_identity_policy_with_the_offset_syncs_on_the_target(clusters):
    primary, backup = clusters
    primary.create_topic("orders", 2)
    produce_orders(primary.bootstrap_servers, "orders", 6)
    connector = MirrorSourceConnector()
    connector.initialize(ConnectorContext())
    connector.start(flow(primary, backup, **{
        "replication.policy.class": "org.apache.kafka.connect.mirror.IdentityReplicationPolicy",
        "offset-syncs.topic.location": "target", "refresh.topics.enabled": "false"}))
    worker = MiniWorker(backup.bootstrap_servers)
    try:
        worker.start(connector, 1)
        mirror_until(worker, backup.bootstrap_servers, "orders", 2, 6)
        copies = read_all(backup.bootstrap_servers, "orders", 2)
        assert sorted(m.key() for m in copies) == sorted(f"key-{i}".encode() for i in range(6))
        syncs = until(lambda: read_all(backup.bootstrap_servers,
                                       "mm2-offset-syncs.backup.internal", 1, 5))
        assert {OffsetSync.from_record(m.key(), m.value()).topic for m in syncs} == {"orders"}
    finally:
        worker.stop()
        connector.stop()
