"""KIP-618's per-connector offsets topics: ConnectorOffsetStore's reads (the connector's own
store first, the worker's as fallback) and writes (primary, then the worker's; removals in the
worker's first), which store a connector gets, and a connector's own topic on a real broker."""
import json
import logging
import time
import uuid

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from josefk.connect.api.config import ConfigException
from josefk.connect.api.errors import ConnectException
from josefk.connect.runtime.abstract_herder import MemoryStatusStore, StatusWriter
from josefk.connect.runtime.offset_store import (ConnectorOffsetStore, KafkaOffsetStore,
                                                 connector_offset_store)
from josefk.connect.runtime.plugins import Plugins
from josefk.connect.runtime.seams import ConnectorTaskId, TargetState
from josefk.connect.runtime.worker import Worker
from josefk.connect.runtime.worker_config import WorkerConfig


class Store:
    """A test double of the OffsetStore seam that logs every write in ``journal``."""

    def __init__(self, name, journal, topic, fail=False):
        self.name, self.journal, self.topic, self.fail = name, journal, topic, fail
        self.data = {}

    def get(self, connector, partitions):
        return [self.data.get((connector, json.dumps(p))) for p in partitions]

    def all(self, connector):
        return [(json.loads(p), o) for (c, p), o in self.data.items() if c == connector]

    def records(self, connector, offsets):
        return [(f"{self.name}:{p}".encode(), None) for p, _ in offsets]

    def put(self, connector, offsets):
        if self.fail:
            raise ConnectException(f"{self.name} is down")
        self.journal.append((self.name, list(offsets)))
        for p, o in offsets:
            if o is None:
                self.data.pop((connector, json.dumps(p)), None)
            else:
                self.data[(connector, json.dumps(p))] = o

    def send(self, connector, offsets, on_delivery):
        try:
            self.put(connector, offsets)
        except ConnectException as e:
            on_delivery(e)


def test_reads_prefer_the_connectors_topic_and_fall_back_to_the_workers():
    journal = []
    worker, own = Store("worker", journal, "w"), Store("own", journal, "c")
    worker.data = {("c", json.dumps({"p": 1})): {"o": 1}, ("c", json.dumps({"p": 2})): {"o": 2}}
    own.data = {("c", json.dumps({"p": 2})): {"o": 20}, ("c", json.dumps({"p": 3})): {"o": 30}}
    store = ConnectorOffsetStore(worker, own)
    assert store.topic == "c"
    assert store.get("c", [{"p": 1}, {"p": 2}, {"p": 3}, {"p": 4}]) == [
        {"o": 1}, {"o": 20}, {"o": 30}, None]
    assert sorted(store.all("c"), key=lambda e: e[0]["p"]) == [
        ({"p": 1}, {"o": 1}), ({"p": 2}, {"o": 20}), ({"p": 3}, {"o": 30})]
    assert store.records("c", [({"p": 1}, None)]) == [(b"own:{'p': 1}", None)]


def test_writes_go_to_the_connectors_topic_then_the_workers_removals_to_the_workers_first():
    journal = []
    worker, own = Store("worker", journal, "w"), Store("own", journal, "c")
    store = ConnectorOffsetStore(worker, own)
    store.put("c", [({"p": 1}, {"o": 1}), ({"p": 2}, None)])
    assert journal == [("worker", [({"p": 2}, None)]),
                       ("own", [({"p": 1}, {"o": 1}), ({"p": 2}, None)]),
                       ("worker", [({"p": 1}, {"o": 1})])]
    journal.clear()
    store.copy_to_secondary("c", [({"p": 5}, {"o": 5}), ({"p": 6}, None)])
    assert journal == [("worker", [({"p": 5}, {"o": 5})])]


def test_a_failing_worker_store_is_only_logged_a_failing_own_store_fails_the_write(caplog):
    journal = []
    store = ConnectorOffsetStore(Store("worker", journal, "w", fail=True),
                                 Store("own", journal, "c"))
    with caplog.at_level(logging.WARNING, "josefk.connect.offset_store"):
        store.put("c", [({"p": 1}, {"o": 1})])
    assert journal == [("own", [({"p": 1}, {"o": 1})])]
    assert "Failed to write offsets of c to secondary backing store: worker is down" \
        in caplog.text
    with pytest.raises(ConnectException, match="worker is down"):  # a removal waits for it
        store.put("c", [({"p": 1}, None)])
    assert store.get("c", [{"p": 1}]) == [{"o": 1}]

    journal.clear()
    store = ConnectorOffsetStore(Store("worker", journal, "w"),
                                 Store("own", journal, "c", fail=True))
    with pytest.raises(ConnectException, match="own is down"):
        store.put("c", [({"p": 1}, {"o": 1})])
    assert journal == []


def test_the_workers_store_alone_starts_and_stops_nothing():
    journal = []
    worker = Store("worker", journal, "w")
    store = ConnectorOffsetStore(worker)
    store.start()
    store.put("c", [({"p": 1}, {"o": 1})])
    store.stop()
    assert store.primary is worker and store.secondary is None
    assert journal == [("worker", [({"p": 1}, {"o": 1})])]


def config(distributed=True, **props):
    base = {"bootstrap.servers": "127.0.0.1:9092", "group.id": "g",
            "offset.storage.topic": "g-offsets", "offset.storage.replication.factor": "1",
            "offset.storage.partitions": "3"}
    if distributed:
        base.update({"config.storage.topic": "g-configs", "status.storage.topic": "g-status"})
    else:
        base["offset.storage.file.filename"] = "/nonexistent/offsets"
    return WorkerConfig({**base, **props}, distributed=distributed)


def clients(bootstrap="127.0.0.1:9092"):
    return {kind: {"bootstrap.servers": bootstrap} for kind in ("producer", "consumer", "admin")}


@pytest.mark.parametrize("worker, props, client, expected", [
    (config(), {}, clients(), None),
    (config(), {"offsets.storage.topic": "own"}, clients(), "own"),
    (config(), {"offsets.storage.topic": " "}, clients(), None),
    (config(), {"offsets.storage.topic": "g-offsets"}, clients(), None),
    (config(), {"offsets.storage.topic": "g-offsets"}, clients("other:9092"), "g-offsets"),
    (config(False), {"offsets.storage.topic": "own"}, clients(), None),  # standalone
    (config(**{"exactly.once.source.support": "enabled"}), {}, clients(), None),
    (config(**{"exactly.once.source.support": "enabled"}), {}, clients("other:9092"),
     "g-offsets"),
    (config(**{"exactly.once.source.support": "enabled"}), {"offsets.storage.topic": "own"},
     clients(), "own"),
])
def test_which_store_a_connector_gets(worker, props, client, expected):
    worker_store = Store("worker", [], "g-offsets")
    store = connector_offset_store(worker, worker_store, props, client, "connector-offsets-x")
    if expected is None:
        assert store.primary is worker_store and store.secondary is None
    else:
        assert isinstance(store.primary, KafkaOffsetStore) and store.secondary is worker_store
        assert store.topic == expected
        assert store.primary.log.spec.partitions == 3
        assert store.primary.log.spec.setting == "offsets.storage.topic"
        assert store.primary.log._consumer_conf["bootstrap.servers"] == \
            client["consumer"]["bootstrap.servers"]


def test_a_connectors_own_topic_on_a_broker(josefk_broker):
    prefix = f"kip618-{uuid.uuid4().hex[:8]}"
    worker = config(**{"bootstrap.servers": josefk_broker.bootstrap_servers,
                       "offset.storage.topic": f"{prefix}-offsets", "group.id": prefix})
    worker_store = KafkaOffsetStore(worker)
    worker_store.start()
    try:
        worker_store.put("src", [({"p": 1}, {"o": 1}), ({"p": 2}, {"o": 2})])
        settings = clients(josefk_broker.bootstrap_servers)
        store = connector_offset_store(worker, worker_store,
                                       {"offsets.storage.topic": f"{prefix}-own"}, settings,
                                       "connector-offsets-src")
        store.start()
        try:
            meta = store.primary.log.admin.list_topics(timeout=10).topics[f"{prefix}-own"]
            assert len(meta.partitions) == 3  # the worker's offset.storage.partitions
            assert store.get("src", [{"p": 1}]) == [{"o": 1}]  # from the worker's topic
            store.put("src", [({"p": 1}, {"o": 10}), ({"p": 2}, None)])
            assert store.get("src", [{"p": 1}, {"p": 2}]) == [{"o": 10}, None]
        finally:
            store.stop()
        again = connector_offset_store(worker, worker_store,
                                       {"offsets.storage.topic": f"{prefix}-own"}, settings,
                                       "connector-offsets-src")
        again.start()
        try:
            assert again.connector_store.all("src") == [({"p": 1}, {"o": 10})]
            assert again.all("src") == [({"p": 1}, {"o": 10})]
        finally:
            again.stop()
        # the worker's topic got the copy (not waited for) and the removal
        deadline = time.monotonic() + 15
        while worker_store.all("src") != [({"p": 1}, {"o": 10})]:
            assert time.monotonic() < deadline, worker_store.all("src")
            time.sleep(0.1)
    finally:
        worker_store.stop()


def test_a_connectors_own_topic_that_is_not_compacted_is_refused(josefk_broker):
    topic = f"kip618-{uuid.uuid4().hex[:8]}-own"
    admin = AdminClient({"bootstrap.servers": josefk_broker.bootstrap_servers})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(15)
    worker = config(**{"bootstrap.servers": josefk_broker.bootstrap_servers})
    store = connector_offset_store(worker, Store("worker", [], "g-offsets"),
                                   {"offsets.storage.topic": topic},
                                   clients(josefk_broker.bootstrap_servers), "connector-offsets-x")
    try:
        with pytest.raises(ConfigException, match=f"Topic '{topic}' supplied via the "
                                                  f"'offsets.storage.topic' property is required "
                                                  f"to have 'cleanup.policy=compact'"):
            store.start()
    finally:
        store.stop()


def run_generator(worker_config, worker_store, props):
    """A Worker running the generator ``props`` describe (its one task started)."""
    listener = StatusWriter(MemoryStatusStore(), lambda: "w:1")
    w = Worker(worker_config, Plugins(), worker_store, listener)
    w.start_connector("gen", props, TargetState.STARTED, lambda: None)
    [task] = w.connector_task_configs("gen", props)
    assert w.start_task(ConnectorTaskId("gen", 0), props, task, TargetState.STARTED)
    return w


def test_a_task_resumes_from_its_own_topic_then_from_the_workers(josefk_broker):
    prefix = f"kip618-{uuid.uuid4().hex[:8]}"
    bootstrap = josefk_broker.bootstrap_servers
    worker = config(**{"bootstrap.servers": bootstrap, "group.id": prefix,
                       "offset.storage.topic": f"{prefix}-offsets",
                       "offset.flush.interval.ms": "200",
                       "key.converter": "StringConverter", "value.converter": "StringConverter"})
    worker.worker_id = "w:1"
    topic = f"{prefix}-data"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(15)
    worker_store = KafkaOffsetStore(worker)
    worker_store.start()
    props = {"name": "gen", "connector.class": "GeneratorSource", "topic": topic,
             "key": "string", "message.size": "4", "offsets.storage.topic": f"{prefix}-own"}

    def ran_to(last):
        w = run_generator(worker, worker_store, props)
        own = connector_offset_store(worker, worker_store, props, clients(bootstrap), "check")
        try:
            own.start()
            deadline = time.monotonic() + 30
            while own.connector_store.get("gen", [{"task": 0}]) != [{"seq": last}]:
                assert time.monotonic() < deadline, own.connector_store.get("gen", [{"task": 0}])
                time.sleep(0.1)
        finally:
            own.stop()
            w.stop()
    try:
        # an offset in the worker's topic only (the connector ran before it had its own)
        worker_store.put("gen", [({"task": 0}, {"seq": 49})])
        props["max.messages"] = "120"
        ran_to(119)
        # the worker's topic now behind its own: its own topic wins
        worker_store.put("gen", [({"task": 0}, {"seq": 10})])
        props["max.messages"] = "130"
        ran_to(129)
    finally:
        worker_store.stop()
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": prefix,
                         "auto.offset.reset": "earliest", "enable.partition.eof": True})
    consumer.assign([TopicPartition(topic, 0, 0)])
    keys, deadline = [], time.monotonic() + 30
    try:
        while time.monotonic() < deadline:
            m = consumer.poll(0.5)
            if m is None:
                continue
            if m.error():
                break  # the end
            keys.append(int(m.key()))
    finally:
        consumer.close()
    assert keys == list(range(50, 130))
