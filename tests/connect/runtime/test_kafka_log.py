"""The internal topics' log and the three stores on a real josefk broker, with confluent-kafka:
topic creation and the compaction check, read-to-end, and each store's records read back by
a second worker's store, and raw records written by hand in Kafka's layout read by a store."""
import uuid

import pytest
from confluent_kafka import Producer

from josefk.connect.api.config import ConfigException
from josefk.connect.runtime.config_store import KafkaConfigStore
from josefk.connect.runtime.kafka_log import KafkaBasedLog, TopicSpec
from josefk.connect.runtime.offset_store import KafkaOffsetStore
from josefk.connect.runtime.seams import ConnectorTaskId, State, Status, TargetState
from josefk.connect.runtime.status_store import KafkaStatusStore
from josefk.connect.runtime.worker_config import WorkerConfig


def worker(bootstrap: str, prefix: str) -> WorkerConfig:
    return WorkerConfig({"bootstrap.servers": bootstrap, "group.id": prefix,
                         "config.storage.topic": f"{prefix}-configs",
                         "offset.storage.topic": f"{prefix}-offsets",
                         "status.storage.topic": f"{prefix}-status",
                         "config.storage.replication.factor": "1",
                         "offset.storage.replication.factor": "1",
                         "status.storage.replication.factor": "1",
                         "offset.storage.partitions": "5", "status.storage.partitions": "3"},
                        distributed=True)


@pytest.fixture
def prefix():
    return f"connect-{uuid.uuid4().hex[:8]}"


def raw_log(bootstrap, topic, records):
    spec = TopicSpec(topic, "config.storage.topic", "connector configurations", 1, 1)
    conf = {"bootstrap.servers": bootstrap}
    log = KafkaBasedLog(spec, conf, conf, conf, lambda *r: records.append(r))
    return log


def test_the_topic_is_created_compacted_and_read_to_its_end(josefk_broker, prefix):
    seen = []
    log = raw_log(josefk_broker.bootstrap_servers, prefix, seen)
    log.start()
    try:
        for i in range(20):
            log.send(f"k{i % 5}".encode(), f"v{i}".encode())
        log.send(b"k0", None)
        log.flush()
        log.read_to_end(15)
        assert len(seen) == 21 and seen[-1][:2] == (b"k0", None)
        assert [r[3] for r in seen] == list(range(21))
    finally:
        log.stop()
    again = []
    second = raw_log(josefk_broker.bootstrap_servers, prefix, again)
    second.start()  # an existing compacted topic: read from the start
    second.stop()
    assert len(again) == 21


def test_an_existing_topic_that_is_not_compacted_is_refused(josefk_broker, prefix):
    josefk_broker.create_topic(prefix, partitions=1, config={"cleanup.policy": "delete"})
    log = raw_log(josefk_broker.bootstrap_servers, prefix, [])
    with pytest.raises(ConfigException) as e:
        log.start()
    assert str(e.value).startswith(
        f"Topic '{prefix}' supplied via the 'config.storage.topic' property is required to have "
        "'cleanup.policy=compact' to guarantee consistency and durability of connector "
        "configurations, but found the topic currently has 'cleanup.policy=delete'.")


def test_config_store_round_trip_between_two_workers(josefk_broker, prefix):
    a = KafkaConfigStore(worker(josefk_broker.bootstrap_servers, prefix))
    b = KafkaConfigStore(worker(josefk_broker.bootstrap_servers, prefix))
    a.start()
    b.start()
    try:
        a.put_connector_config("c", {"connector.class": "X", "tasks.max": "2"},
                               TargetState.STARTED)
        a.put_task_configs("c", [{"n": "0"}, {"n": "1"}])
        a.put_target_state("c", TargetState.STOPPED)
        b.refresh(15)
        snap = b.snapshot()
        assert snap.connector_configs == {"c": {"connector.class": "X", "tasks.max": "2"}}
        assert snap.tasks("c") == [ConnectorTaskId("c", 0), ConnectorTaskId("c", 1)]
        assert snap.target_state("c") is TargetState.STOPPED
        a.remove_connector_config("c")
        b.refresh(15)
        assert b.snapshot().connectors() == []
    finally:
        a.stop()
        b.stop()


def test_stores_read_records_written_by_hand_in_kafkas_layout(josefk_broker, prefix):
    config = worker(josefk_broker.bootstrap_servers, prefix)
    offsets, statuses = KafkaOffsetStore(config), KafkaStatusStore(config)
    offsets.start()
    statuses.start()
    try:
        p = Producer({"bootstrap.servers": josefk_broker.bootstrap_servers})
        p.produce(f"{prefix}-offsets", key=b'["file-src",{"filename":"/in.txt"}]',
                  value=b'{"position":42}', partition=3)
        p.produce(f"{prefix}-status", key=b"status-task-file-src-0", partition=1,
                  value=b'{"state":"RUNNING","trace":null,"worker_id":"h:8083","generation":4}')
        assert p.flush(15) == 0
        assert offsets.get("file-src", [{"filename": "/in.txt"}, {"filename": "x"}]) == [
            {"position": 42}, None]
        statuses.refresh(15)
        assert statuses.tasks("file-src") == {0: Status(State.RUNNING, None, "h:8083", 4)}
        # Ours land where Kafka's would: the offsets record's partition is murmur2 of its key.
        offsets.put("file-src", [({"filename": "/in.txt"}, {"position": 50})])
        assert offsets.all("file-src") == [({"filename": "/in.txt"}, {"position": 50})]
    finally:
        offsets.stop()
        statuses.stop()


def test_put_safe_keeps_a_newer_generation_of_another_worker(josefk_broker, prefix):
    config = worker(josefk_broker.bootstrap_servers, prefix)
    store = KafkaStatusStore(config)
    store.start()
    try:
        id = ConnectorTaskId("c", 0)
        store.put(id, Status(State.RUNNING, None, "w2:8083", 5))
        store.put_safe(id, Status(State.UNASSIGNED, None, "w1:8083", 4))
        assert store.get(id).worker_id == "w2:8083"
        store.put_safe(id, Status(State.FAILED, "t", "w2:8083", 3))  # the same worker: written
        assert store.get(id).state is State.FAILED
        store.put_topic("c", "orders", 0, 1)
        store.put_topic("c", "orders", 1, 2)
        store.log.flush()
        reader = KafkaStatusStore(config)
        reader.start()
        assert reader.get(id) == Status(State.FAILED, "t", "w2:8083", 3)
        assert reader.topics("c") == ["orders"]
        reader.stop()
    finally:
        store.stop()
