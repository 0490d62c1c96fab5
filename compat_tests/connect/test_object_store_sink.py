"""The object-storage sink run as users run it: ``josefk connect --standalone`` with a
Confluent S3 sink connector config, a josefk broker (and the spread cluster), real confluent-kafka producers and a real
SeaweedFS. The worker is killed with SIGKILL while records stream in and started again: the
bucket then holds every record exactly once, in files named by their first offset."""
from __future__ import annotations

import io
import json
import threading
import time

import httpx
import pyarrow.parquet as pq
import pytest
from confluent_kafka import Producer

from compat_tests.helpers import unique_topic
from compat_tests.http_services import ServiceProcess, wait_until
from josefk.tiered.store import S3Store
from testkit.seaweedfs import seaweedfs

pytestmark = pytest.mark.timeout(240)

PARTITIONS, PER_PARTITION, FLUSH = 3, 600, 50
WORKER = """\
bootstrap.servers={bootstrap}
key.converter=org.apache.kafka.connect.storage.StringConverter
value.converter=org.apache.kafka.connect.json.JsonConverter
offset.storage.file.filename={dir}/connect.offsets
offset.flush.interval.ms=500
"""
SINK = """\
name=lake
connector.class=io.confluent.connect.s3.S3SinkConnector
tasks.max=1
topics={topic}
s3.bucket.name=lake
s3.region=us-east-1
store.url={endpoint}
aws.access.key.id={access_key}
aws.secret.access.key={secret_key}
format.class=io.confluent.connect.s3.format.parquet.ParquetFormat
flush.size={flush}
"""
SCHEMA = {"type": "struct", "name": "shop.Order", "optional": False, "fields": [
    {"field": "partition", "type": "int32", "optional": False},
    {"field": "n", "type": "int64", "optional": False}]}


def produce(bootstrap, topic, stop_after_seconds=60.0):
    """Every partition's records, a few at a time, so the worker is killed mid-stream."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    deadline = time.monotonic() + stop_after_seconds
    for n in range(PER_PARTITION):
        for p in range(PARTITIONS):
            value = {"schema": SCHEMA, "payload": {"partition": p, "n": n}}
            producer.produce(topic, json.dumps(value).encode(), key=f"{p}-{n}", partition=p)
        if n % 20 == 19:
            producer.flush(10)
            time.sleep(0.05)
        if time.monotonic() > deadline:
            break
    assert producer.flush(15) == 0


@pytest.mark.parametrize("target", ["single", "spread"], indirect=True)
def test_kill_9_mid_stream_then_restart_every_record_once(target, tmp_path):
    topic = target.create_topic(unique_topic("lake"), PARTITIONS)
    bootstrap = target.bootstrap
    with seaweedfs(tmp_path / "s3") as s3:
        store = S3Store("lake", endpoint=s3.endpoint, access_key=s3.access_key,
                        secret_key=s3.secret_key)
        store.ensure_bucket()
        values = {"dir": tmp_path, "bootstrap": bootstrap, "topic": topic,
                  "endpoint": s3.endpoint, "access_key": s3.access_key,
                  "secret_key": s3.secret_key, "flush": FLUSH}
        (tmp_path / "worker.properties").write_text(WORKER.format(**values))
        (tmp_path / "sink.properties").write_text(SINK.format(**values))
        args = ["--standalone", str(tmp_path / "worker.properties"),
                str(tmp_path / "sink.properties")]

        worker = ServiceProcess("connect", {}, tmp_path / "connect.log", args=args).start()
        producing = threading.Thread(target=produce, args=(bootstrap, topic))
        producing.start()
        try:
            wait_until(lambda: len(store.list("topics/")) >= 6, timeout=60)
        finally:
            worker.kill()  # SIGKILL: no close, no last commit
            producing.join(90)
        assert not producing.is_alive()

        worker = ServiceProcess("connect", {}, tmp_path / "connect.log", args=args).start()
        try:
            expected = PARTITIONS * PER_PARTITION // FLUSH
            wait_until(lambda: len(store.list("topics/")) >= expected, timeout=90)
            state = httpx.get(f"{worker.url}/connectors/lake/status").json()
            assert state["tasks"][0]["state"] == "RUNNING", state
        finally:
            worker.stop()

        keys = store.list("topics/")
        assert keys == sorted(
            f"topics/{topic}/partition={p}/{topic}+{p}+{start:010d}.snappy.parquet"
            for p in range(PARTITIONS) for start in range(0, PER_PARTITION, FLUSH))
        for p in range(PARTITIONS):
            rows = [row for key in keys if f"partition={p}/" in key
                    for row in pq.read_table(io.BytesIO(store.get(key))).to_pylist()]
            assert rows == [{"partition": p, "n": n} for n in range(PER_PARTITION)]
