"""MirrorMaker 2's source and heartbeat connectors on josefk's Connect worker (a
StandaloneHerder working against the target cluster, with ByteArrayConverter for keys, values
and headers as MirrorMaker runs), found by their Java class names: records arrive unchanged,
heartbeats are written, and both connectors report RUNNING."""
import asyncio
import time

from confluent_kafka import Producer

from josefk.connect.runtime.plugins import Plugins
from josefk.connect.runtime.standalone import StandaloneHerder
from josefk.connect.runtime.worker_config import WorkerConfig
from josefk.mirror.records import Heartbeat
from josefk.testing import broker

from compat_tests.mirror.mirroring import flow, read_all

BYTES = "org.apache.kafka.connect.converters.ByteArrayConverter"


def test_mirror_connectors_on_a_standalone_worker(tmp_path):
    with broker() as primary, broker() as backup:
        primary.create_topic("events", 1)
        producer = Producer({"bootstrap.servers": primary.bootstrap_servers})
        for i in range(10):
            producer.produce("events", f"v{i}".encode(), f"k{i}".encode(),
                             timestamp=1_600_000_000_000 + i, headers=[("trace", bytes([i]))])
        assert producer.flush(15) == 0
        worker = {"bootstrap.servers": backup.bootstrap_servers,
                  "offset.storage.file.filename": str(tmp_path / "offsets"),
                  "offset.flush.interval.ms": "500", "key.converter": BYTES,
                  "value.converter": BYTES, "header.converter": BYTES}
        mirror = flow(primary, backup)
        connectors = [
            {"name": "mm2-source", "tasks.max": "2",
             "connector.class": "org.apache.kafka.connect.mirror.MirrorSourceConnector",
             **mirror},
            {"name": "mm2-heartbeats",
             "connector.class": "org.apache.kafka.connect.mirror.MirrorHeartbeatConnector",
             **mirror}]

        async def run():
            herder = StandaloneHerder(WorkerConfig(worker, distributed=False), None, Plugins())
            await herder.start(connectors)
            try:
                deadline = time.monotonic() + 30
                while time.monotonic() < deadline:
                    copies = await asyncio.to_thread(read_all, backup.bootstrap_servers,
                                                     "primary.events", 1, 5)
                    if len(copies) >= 10:
                        break
                    await asyncio.sleep(0.5)
                for name in ("mm2-source", "mm2-heartbeats"):
                    status = await herder.connector_status(name)
                    assert status["connector"]["state"] == "RUNNING", status
                    assert [t["state"] for t in status["tasks"]] == ["RUNNING"], status
                return copies
            finally:
                await herder.stop()

        copies = asyncio.run(run())
        assert [(m.key(), m.value(), m.headers(), m.timestamp()) for m in copies] == [
            (f"k{i}".encode(), f"v{i}".encode(), [("trace", bytes([i]))],
             (1, 1_600_000_000_000 + i)) for i in range(10)]
        beats = [Heartbeat.from_record(m.key(), m.value())
                 for m in read_all(backup.bootstrap_servers, "heartbeats", 1)]
        assert beats and {(b.source_cluster_alias, b.target_cluster_alias) for b in beats} == {
            ("primary", "backup")}
