"""Tiered storage past Kafka, with a real object store (SeaweedFS): topic recovery (a new
broker or cluster, its disks empty, recreates a topic from the bucket alone, offsets and data
intact), read-replica topics (another broker serves a topic read-only straight from the
bucket, following the origin's uploads) and compacted topics tiered (the bucket holds the
cleaner's output)."""
from __future__ import annotations

import shutil
import time

import pytest
from confluent_kafka import OFFSET_BEGINNING, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic

from josefk.faults.processes import BrokerProcess, LocalCluster
from josefk.tiered.store import S3Store
from josefk.wire.batch import HEADER_SIZE, read_header
from compat_tests.helpers import (DeliveryLog, admin_client, consume_n, consumer, create_topic,
                                  flush_all,
                                  josefk_cli, producer, read_exactly, unique_topic,
                                  wait_for_topic, wait_for_topic_gone)
from compat_tests.storage.test_tiered import (RECORDS, TOPIC_CONFIG, VALUE, kill_leader,
                                              produce_small_batches, tiered_overrides, values,
                                              wait_tiered)
from testkit.seaweedfs import seaweedfs

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    with seaweedfs(tmp_path_factory.mktemp("seaweedfs")) as server:
        yield server


def bucket_store(s3, bucket: str) -> S3Store:
    return S3Store(bucket, endpoint=s3.endpoint, access_key=s3.access_key,
                   secret_key=s3.secret_key)


def copied_end(store: S3Store, topic: str) -> int:
    """The offset past the bucket's last segment of partition 0 (its last batch's last offset
    + 1), read from the object."""
    last = sorted(k for k in store.list(f"{topic}-0-") if k.endswith(".log"))[-1]
    data, pos, end = store.get(last), 0, -1
    while pos + HEADER_SIZE <= len(data):
        h = read_header(data, pos)
        end, pos = h.last_offset, pos + h.size
    return end + 1


def watermarks(bootstrap: str, topic: str) -> tuple[int, int]:
    c = consumer(bootstrap)
    try:
        return c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
    finally:
        c.close()


def wait_watermarks(bootstrap: str, topic: str, high_at_least: int, timeout: float = 60):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = watermarks(bootstrap, topic)
            if last[1] >= high_at_least:
                return last
        except KafkaException as e:  # REPLICA_NOT_AVAILABLE while the log is rebuilt
            last = e
        time.sleep(0.3)
    raise AssertionError(f"high watermark of {topic} not at {high_at_least}: {last}")


def produce(bootstrap: str, topic: str, first: int, n: int) -> DeliveryLog:
    p = producer(bootstrap, acks="all", batch_size=1024, linger_ms=0)  # many a segment
    delivered = DeliveryLog()
    for i in range(first, first + n):
        p.produce(topic, value=VALUE.format(i), partition=0, on_delivery=delivered)
    flush_all(p)
    return delivered


def check_history(bootstrap: str, topic: str, end: int, more_may_follow=False) -> None:
    """Every record [0, end) at its offset, as the origin wrote it (and then nothing, unless
    ``more_may_follow``: a read replica following uploads)."""
    assignment = [TopicPartition(topic, 0, OFFSET_BEGINNING)]
    if more_may_follow:
        c = consumer(bootstrap)
        try:
            c.assign(assignment)
            msgs = consume_n(c, end, 90)
        finally:
            c.close()
    else:
        msgs = read_exactly(bootstrap, assignment, end, timeout=90)
    assert [m.offset() for m in msgs] == list(range(end))
    assert [m.value().decode() for m in msgs] == values(end)


def create_from_bucket(bootstrap: str, topic: str, config: dict, replication_factor=1):
    """CreateTopics without a partition count (-1): the bucket's."""
    admin = admin_client(bootstrap)
    admin.create_topics([NewTopic(topic, num_partitions=-1,
                                  replication_factor=replication_factor, config=config)],
                        request_timeout=30)[topic].result(30)
    wait_for_topic(admin, topic, 1, timeout=30)


def tiered_origin(s3, bucket, root, topic) -> tuple[BrokerProcess, int]:
    """A broker whose topic's first segments are in the bucket: (it, the records sent)."""
    origin = BrokerProcess(data_dir=root / "origin-data", log_dir=root,
                           overrides=tiered_overrides(s3, bucket))
    origin.start()
    create_topic(origin.bootstrap, topic, config=TOPIC_CONFIG)
    produce_small_batches(origin.bootstrap, topic)
    wait_tiered(bucket_store(s3, bucket), topic, [origin.data_dir])
    return origin, RECORDS


def test_a_new_broker_recovers_a_topic_from_the_bucket(s3, tmp_path):
    bucket = "recovery-one"
    store = bucket_store(s3, bucket)
    topic = unique_topic("recovered")
    origin, _sent = tiered_origin(s3, bucket, tmp_path, topic)
    origin.kill()  # and its disks are lost
    shutil.rmtree(origin.data_dir)
    end = copied_end(store, topic)
    assert end > RECORDS // 2

    broker = BrokerProcess(data_dir=tmp_path / "new-data", log_dir=tmp_path,
                           overrides=tiered_overrides(s3, bucket))
    broker.start()
    try:
        # not without remote storage on, nor for a topic the bucket does not hold
        refused = josefk_cli(broker, "topics", "--create", "--topic", topic, "--config",
                             "josefk.remote.recovery=true", check=False)
        assert refused.returncode != 0 and "remote.storage.enable=true" in refused.stderr
        refused = josefk_cli(broker, "topics", "--create", "--topic", unique_topic("none"),
                             "--config", "josefk.remote.recovery=true", "--config",
                             "remote.storage.enable=true", check=False)
        assert refused.returncode != 0 and "holds no remote log" in refused.stderr

        josefk_cli(broker, "topics", "--create", "--topic", topic, "--config",
                   "josefk.remote.recovery=true", *(
                       a for k, v in TOPIC_CONFIG.items() for a in ("--config", f"{k}={v}")))
        wait_for_topic(admin_client(broker.bootstrap), topic, 1, timeout=30)
        assert wait_watermarks(broker.bootstrap, topic, end) == (0, end)
        check_history(broker.bootstrap, topic, end)

        # it goes on from there: new records after the recovered ones, copied in turn
        assert produce(broker.bootstrap, topic, end, RECORDS).errors == []
        check_history(broker.bootstrap, topic, end + RECORDS)
        deadline = time.monotonic() + 60
        while copied_end(store, topic) <= end and time.monotonic() < deadline:
            time.sleep(0.3)
        assert copied_end(store, topic) > end
        starts = [k for k in store.list(f"{topic}-0-") if k.endswith(".log")]
        assert len({k.rsplit("/", 1)[1][:20] for k in starts}) == len(starts)

        # a restart rebuilds nothing twice: the metadata names every segment now (the log
        # start is the bucket's once the remote log manager read them back)
        objects = store.list(f"{topic}-0-")
        broker.restart()
        wait_for_topic(admin_client(broker.bootstrap), topic, 1, timeout=30)
        deadline = time.monotonic() + 60
        while wait_watermarks(broker.bootstrap, topic, end + RECORDS)[0] != 0:
            assert time.monotonic() < deadline, "the log start is not the bucket's"
            time.sleep(0.3)
        check_history(broker.bootstrap, topic, end + RECORDS)
        assert store.list(f"{topic}-0-")[:len(objects)] == objects
    finally:
        broker.stop()


def test_a_topic_deleted_with_its_remote_log_kept_is_recovered_on_the_same_broker(s3, tmp_path):
    bucket = "recovery-same"
    store = bucket_store(s3, bucket)
    topic = unique_topic("recovered")
    broker = BrokerProcess(data_dir=tmp_path / "data", log_dir=tmp_path,
                           overrides=tiered_overrides(s3, bucket))
    broker.start()
    try:
        config = {**TOPIC_CONFIG, "josefk.remote.delete": "false"}
        create_topic(broker.bootstrap, topic, config=config)
        produce_small_batches(broker.bootstrap, topic)
        wait_tiered(store, topic, [broker.data_dir])
        admin = admin_client(broker.bootstrap)
        admin.delete_topics([topic])[topic].result(30)
        wait_for_topic_gone(admin, topic)
        end = copied_end(store, topic)  # the remote log outlives the topic

        create_from_bucket(broker.bootstrap, topic, {**config, "josefk.remote.recovery": "true"})
        assert wait_watermarks(broker.bootstrap, topic, end) == (0, end)
        check_history(broker.bootstrap, topic, end)
        assert produce(broker.bootstrap, topic, end, 100).errors == []
        check_history(broker.bootstrap, topic, end + 100)
    finally:
        broker.stop()


def test_a_new_cluster_recovers_a_topic_from_the_bucket(s3, tmp_path):
    bucket = "recovery-cluster"
    store = bucket_store(s3, bucket)
    topic = unique_topic("recovered")
    origin, _sent = tiered_origin(s3, bucket, tmp_path, topic)
    origin.kill()
    end = copied_end(store, topic)

    cluster = LocalCluster(tmp_path / "cluster", 3, overrides=tiered_overrides(
        s3, bucket, **{"remote.log.metadata.topic.replication.factor": 3,
                       "offsets.topic.replication.factor": 3}))
    cluster.start()
    try:
        create_from_bucket(cluster.bootstrap, topic, {
            **TOPIC_CONFIG, "josefk.remote.recovery": "true", "min.insync.replicas": "2"}, 3)
        assert wait_watermarks(cluster.bootstrap, topic, end) == (0, end)
        check_history(cluster.bootstrap, topic, end)
        assert produce(cluster.bootstrap, topic, end, 300).errors == []  # acks=all: the
        # followers rebuilt their logs from the bucket and follow the leader past it

        kill_leader(cluster, topic)
        wait_for_topic(admin_client(cluster.bootstrap), topic, 1, timeout=30)
        check_history(cluster.bootstrap, topic, end + 300)
    finally:
        cluster.stop()


def test_a_read_replica_serves_the_origins_topic_read_only(s3, tmp_path):
    """The replica's cluster has a bucket of its own: the topic names the origin's, on the
    same endpoint with the same credentials."""
    bucket = "read-replica"
    store = bucket_store(s3, bucket)
    topic = unique_topic("replicated")
    origin, _sent = tiered_origin(s3, bucket, tmp_path, topic)
    replica = BrokerProcess(data_dir=tmp_path / "replica-data", log_dir=tmp_path,
                            overrides=tiered_overrides(s3, "read-replica-own"))
    replica.start()
    try:
        end = copied_end(store, topic)
        create_from_bucket(replica.bootstrap, topic, {"josefk.remote.readreplica": bucket})
        low, high = wait_watermarks(replica.bootstrap, topic, end)
        assert low == 0 and high >= end
        check_history(replica.bootstrap, topic, high, more_may_follow=True)

        # read-only: a produce is refused with a clear error
        p = producer(replica.bootstrap, acks="all", retries=0)
        delivered = DeliveryLog()
        p.produce(topic, value=b"no", partition=0, on_delivery=delivered)
        flush_all(p)
        (err, _key, _value), = delivered.errors
        assert err.code() == KafkaError.POLICY_VIOLATION, err

        # a topic is a read replica from its creation on, or never
        res = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=[
            ConfigEntry("josefk.remote.readreplica", None,
                        incremental_operation=AlterConfigOpType.DELETE)])
        admin = admin_client(replica.bootstrap)
        with pytest.raises(KafkaException) as e:
            admin.incremental_alter_configs([res])[res].result(30)
        assert e.value.args[0].code() == KafkaError.INVALID_CONFIG
        assert "can only be set when the topic is created" in e.value.args[0].str()

        # the origin writes on: the replica follows what it uploads
        assert produce(origin.bootstrap, topic, RECORDS, RECORDS).errors == []
        later = wait_watermarks(replica.bootstrap, topic, RECORDS + 1, timeout=90)[1]
        check_history(replica.bootstrap, topic, later, more_may_follow=True)

        # nothing of it in the replica's own bucket; deleting it leaves the origin's alone
        assert bucket_store(s3, "read-replica-own").list(topic) == []
        admin.delete_topics([topic])[topic].result(30)
        wait_for_topic_gone(admin, topic)
        assert copied_end(store, topic) >= later
        check_history(origin.bootstrap, topic, 2 * RECORDS)
    finally:
        replica.stop()
        origin.stop()


def test_a_compacted_topic_reads_from_the_bucket_as_its_compaction_says(s3, tmp_path):
    bucket = "compacted"
    store = bucket_store(s3, bucket)
    broker = BrokerProcess(data_dir=tmp_path / "data", log_dir=tmp_path,
                           overrides=tiered_overrides(s3, bucket, **{
                               "log.cleaner.backoff.ms": 200}))
    broker.start()
    try:
        # kept locally until the cleaner has been through: then local retention drops it
        topic = create_topic(broker.bootstrap, unique_topic("compacted"), config={
            **TOPIC_CONFIG, "cleanup.policy": "compact", "local.retention.bytes": "10000000",
            "min.cleanable.dirty.ratio": "0.01", "delete.retention.ms": "86400000"})
        keys = 40
        p = producer(broker.bootstrap, acks="all", batch_size=1024, linger_ms=0)
        delivered = DeliveryLog()
        for i in range(RECORDS):
            p.produce(topic, key=f"k{i % keys}", value=VALUE.format(i), partition=0,
                      on_delivery=delivered)
        flush_all(p)
        assert delivered.errors == []
        produced = sum(len(VALUE.format(i)) for i in range(RECORDS))

        # the bucket ends up with the cleaner's output: far less than what was produced
        def remote_bytes():
            return sum(size for k, size in store.list_sizes(f"{topic}-0-").items()
                       if k.endswith(".log"))
        deadline = time.monotonic() + 120
        while remote_bytes() > produced // 3 and time.monotonic() < deadline:
            time.sleep(0.5)
        assert remote_bytes() <= produced // 3

        admin = admin_client(broker.bootstrap)
        res = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=[
            ConfigEntry("local.retention.bytes", "1",
                        incremental_operation=AlterConfigOpType.SET)])
        admin.incremental_alter_configs([res])[res].result(30)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            local = [base for d in [broker.data_dir] for base in sorted(
                int(f.name[:20]) for f in (d / f"{topic}-0").glob("*.log"))]
            if local and local[0] > 0:
                break
            time.sleep(0.3)
        assert local[0] > 0  # the first segments are only in the bucket now

        c = consumer(broker.bootstrap, **{"enable.partition.eof": True})
        got = []
        try:
            c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
            deadline = time.monotonic() + 90
            while time.monotonic() < deadline:
                m = c.poll(1)
                if m is None:
                    continue
                if m.error():
                    assert m.error().code() == KafkaError._PARTITION_EOF, m.error()
                    break
                got.append((m.offset(), m.key().decode(), m.value().decode()))
        finally:
            c.close()
        offsets = [o for o, _k, _v in got]
        assert offsets == sorted(set(offsets)) and len(got) < RECORDS // 2
        assert all(v == VALUE.format(o) and k == f"k{o % keys}" for o, k, v in got)
        latest = {f"k{i % keys}": i for i in range(RECORDS)}
        seen = {}
        for o, k, _v in got:
            seen[k] = o
        assert seen == latest  # every key's last value, and nothing after it
    finally:
        broker.stop()
