"""A worker process for the exactly-once source test, killed with SIGKILL mid-transaction:
a Worker with exactly-once source support runs a generator source; its offsets are read back
from the offsets topic by a seam double (the distributed offset store is cdist's).

    python -m tests.connect.runtime.eos_worker BOOTSTRAP TOPIC OFFSETS_TOPIC MESSAGES"""
import json
import sys
import threading

from confluent_kafka import Consumer, TopicPartition

from josefk.connect.runtime.abstract_herder import MemoryStatusStore, StatusWriter
from josefk.connect.runtime.offset_store import offset_key, offset_value, parse_offset_key
from josefk.connect.runtime.plugins import Plugins
from josefk.connect.runtime.seams import ConnectorTaskId, TargetState
from josefk.connect.runtime.worker import Worker
from josefk.connect.runtime.worker_config import WorkerConfig
from tests.connect.runtime import doubles


class CommittedOffsets:
    """The OffsetStore seam over the offsets topic's committed records (read_committed)."""

    def __init__(self, bootstrap: str, topic: str):
        self.bootstrap, self.topic = bootstrap, topic

    def _read(self) -> dict[tuple[str, str], dict | None]:
        consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": "eos-reader",
                             "isolation.level": "read_committed",
                             "enable.auto.commit": False})
        consumer.assign([TopicPartition(self.topic, 0, 0)])
        found, empty = {}, 0
        while empty < 3:
            m = consumer.poll(0.5)
            if m is None or m.error() is not None:
                empty += 1
                continue
            empty = 0
            connector, partition = parse_offset_key(m.key())
            found[(connector, repr(sorted(partition.items())))] = (
                None if m.value() is None else json.loads(m.value()))
        consumer.close()
        return found

    def get(self, connector, partitions):
        stored = self._read()
        return [stored.get((connector, repr(sorted(p.items())))) for p in partitions]

    def put(self, connector, offsets):
        raise AssertionError("exactly-once tasks write offsets in their transactions")

    def all(self, connector):
        return []

    def records(self, connector, offsets):
        return [(offset_key(connector, p), offset_value(o)) for p, o in offsets]


def main(bootstrap, topic, offsets_topic, messages):
    config = WorkerConfig({"bootstrap.servers": bootstrap, "group.id": "eos-cluster",
                           "config.storage.topic": "c", "offset.storage.topic": offsets_topic,
                           "status.storage.topic": "s", "exactly.once.source.support": "enabled",
                           "key.converter": "StringConverter",
                           "value.converter": "StringConverter"}, distributed=True)
    config.worker_id = "eos:0"
    listener = StatusWriter(MemoryStatusStore(), lambda: config.worker_id)
    worker = Worker(config, Plugins(doubles.PLUGINS), CommittedOffsets(bootstrap, offsets_topic),
                    listener)
    props = {"name": "gen", "connector.class": "GeneratorSource", "topic": topic,
             "max.messages": messages, "throughput": "400", "key": "string",
             "transaction.boundary": "interval", "transaction.boundary.interval.ms": "700"}
    worker.start_connector("gen", props, TargetState.STARTED, lambda: None)
    [task] = worker.connector_task_configs("gen", props)
    assert worker.start_task(ConnectorTaskId("gen", 0), props, task, TargetState.STARTED)
    print("started", flush=True)
    threading.Event().wait(120)
    worker.stop()


if __name__ == "__main__":
    main(*sys.argv[1:5])
