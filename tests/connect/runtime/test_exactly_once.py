"""KIP-618 on a real broker: a source task's records and offsets in one transaction, so a
worker killed mid-transaction (SIGKILL) and started again leaves every record exactly once
to a read_committed consumer, as the fault harness's checker reads a history."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from confluent_kafka import Consumer

from josefk.connect.runtime.abstract_herder import MemoryStatusStore, StatusWriter
from josefk.connect.runtime.offset_store import KafkaOffsetStore
from josefk.connect.runtime.plugins import Plugins
from josefk.connect.runtime.seams import ConnectorTaskId, TargetState
from josefk.connect.runtime.worker import Worker
from josefk.connect.runtime.worker_config import WorkerConfig
from tests.connect.runtime import doubles

ROOT = Path(__file__).resolve().parents[3]
MESSAGES = 4000


def committed(bootstrap, topic, expected=None, timeout=60.0,
              isolation="read_committed") -> list[int]:
    """The keys (sequence numbers) a read_committed consumer sees, once ``expected`` of
    them came (or the topic was quiet for a second)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{time.time()}",
                         "auto.offset.reset": "earliest", "isolation.level": isolation,
                         "enable.auto.commit": False})
    consumer.subscribe([topic])
    seqs, deadline, quiet = [], time.monotonic() + timeout, 0
    try:
        while time.monotonic() < deadline:
            m = consumer.poll(0.5)
            if m is None:
                quiet += 1
                if quiet >= 2 and len(seqs) >= (expected or 0):
                    break
                continue
            if m.error() is None:
                quiet = 0
                seqs.append(int(m.key()))
    finally:
        consumer.close()
    return seqs


def start(josefk_broker, topic, offsets_topic):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.connect.runtime.eos_worker",
         josefk_broker.bootstrap_servers, topic, offsets_topic, str(MESSAGES)],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert process.stdout.readline().strip() == "started"
    return process


def test_a_worker_killed_mid_transaction_leaves_each_record_once(josefk_broker, josefk_topic):
    offsets_topic = f"{josefk_topic}-offsets"
    josefk_broker.create_topic(offsets_topic, 1, {"cleanup.policy": "compact"})
    first = start(josefk_broker, josefk_topic, offsets_topic)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(committed(
                josefk_broker.bootstrap_servers, josefk_topic, timeout=5)) < 300:
            time.sleep(0.2)
        time.sleep(0.35)  # inside a 700 ms transaction
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait(10)
    before = committed(josefk_broker.bootstrap_servers, josefk_topic, timeout=10)
    assert 300 <= len(before) < MESSAGES
    second = start(josefk_broker, josefk_topic, offsets_topic)
    try:
        seqs = committed(josefk_broker.bootstrap_servers, josefk_topic, MESSAGES, timeout=60)
    finally:
        second.send_signal(signal.SIGKILL)
        second.wait(10)
    assert seqs == list(range(MESSAGES))
    # the killed transaction's records are in the log, aborted: the kill came mid-transaction
    everything = committed(josefk_broker.bootstrap_servers, josefk_topic, MESSAGES,
                           isolation="read_uncommitted")
    assert len(everything) > MESSAGES


def run_exactly_once(josefk_broker, topic, name, props, expected):
    """A Worker with exactly-once support running one source task until ``expected``
    records are committed: (their keys, the committed offsets reader, the task's status)."""
    offsets_topic = f"{topic}-offsets"
    josefk_broker.create_topic(offsets_topic, 1, {"cleanup.policy": "compact"})
    config = WorkerConfig({
        "bootstrap.servers": josefk_broker.bootstrap_servers, "group.id": "boundaries",
        "config.storage.topic": "c", "offset.storage.topic": offsets_topic,
        "offset.storage.replication.factor": "1",
        "status.storage.topic": "s", "exactly.once.source.support": "enabled",
        "key.converter": "StringConverter", "value.converter": "StringConverter"}, True)
    offsets = KafkaOffsetStore(config)
    offsets.start()
    statuses = MemoryStatusStore()
    worker = Worker(config, Plugins(doubles.PLUGINS), offsets,
                    StatusWriter(statuses, lambda: "w"))
    props = dict(props, name=name, topic=topic)
    worker.start_connector(name, props, TargetState.STARTED, lambda: None)
    [task] = worker.connector_task_configs(name, props)
    assert worker.start_task(ConnectorTaskId(name, 0), props, task, TargetState.STARTED)
    try:
        seqs = committed(josefk_broker.bootstrap_servers, topic, expected, timeout=30)
    finally:
        worker.stop()
        offsets.stop()
    return seqs, offsets, statuses.get(ConnectorTaskId(name, 0))


def test_poll_transaction_boundaries(josefk_broker, josefk_topic):
    seqs, offsets, status = run_exactly_once(
        josefk_broker, josefk_topic, "polled",
        {"connector.class": "GeneratorSource", "max.messages": "50", "key": "string",
         "transaction.boundary": "poll"}, 50)
    assert seqs == list(range(50))
    assert offsets.get("polled", [{"task": 0}]) == [{"seq": 49}]
    assert status.state.value == "UNASSIGNED"


def test_connector_defined_transaction_boundaries(josefk_broker, josefk_topic):
    seqs, offsets, status = run_exactly_once(
        josefk_broker, josefk_topic, "bounded",
        {"connector.class": "tests.BoundarySourceConnector", "max.messages": "20",
         "transaction.boundary": "connector"}, 10)
    assert seqs == [*range(0, 5), *range(10, 15)]   # the odd batches were aborted
    assert offsets.get("bounded", [{"task": 0}]) == [{"seq": 14}]
    assert status.state.value == "UNASSIGNED"
