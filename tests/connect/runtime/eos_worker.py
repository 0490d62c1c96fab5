"""A worker process for the exactly-once source test, killed with SIGKILL mid-transaction:
a Worker with exactly-once source support runs a generator source, its offsets in the
offsets topic (KafkaOffsetStore, which reads what transactions committed).

    python -m tests.connect.runtime.eos_worker BOOTSTRAP TOPIC OFFSETS_TOPIC MESSAGES"""
import sys
import threading

from josefk.connect.runtime.abstract_herder import MemoryStatusStore, StatusWriter
from josefk.connect.runtime.offset_store import KafkaOffsetStore
from josefk.connect.runtime.plugins import Plugins
from josefk.connect.runtime.seams import ConnectorTaskId, TargetState
from josefk.connect.runtime.worker import Worker
from josefk.connect.runtime.worker_config import WorkerConfig
from tests.connect.runtime import doubles


def main(bootstrap, topic, offsets_topic, messages):
    config = WorkerConfig({"bootstrap.servers": bootstrap, "group.id": "eos-cluster",
                           "config.storage.topic": "c", "offset.storage.topic": offsets_topic,
                           "offset.storage.replication.factor": "1",
                           "status.storage.topic": "s", "exactly.once.source.support": "enabled",
                           "key.converter": "StringConverter",
                           "value.converter": "StringConverter"}, distributed=True)
    config.worker_id = "eos:0"
    listener = StatusWriter(MemoryStatusStore(), lambda: config.worker_id)
    offsets = KafkaOffsetStore(config)
    offsets.start()
    worker = Worker(config, Plugins(doubles.PLUGINS), offsets, listener)
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
