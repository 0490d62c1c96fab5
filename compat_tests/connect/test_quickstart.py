"""Apache Kafka's Connect quickstart, its files unchanged but for paths and the broker's
address: ``connect-standalone.properties`` with ``connect-file-source.properties`` and
``connect-file-sink.properties``, run by ``josefk connect --standalone``. The lines of
test.txt reach test.sink.txt, and the topic holds them as Kafka's JsonConverter writes them
(the quickstart's consumer prints ``{"schema":{"type":"string","optional":false},
"payload":"foo"}``)."""
from __future__ import annotations

import json

import httpx
from confluent_kafka import Consumer

from compat_tests.http_services import ServiceProcess, wait_until

# config/connect-standalone.properties of Kafka's distribution (comments left out)
STANDALONE = """\
bootstrap.servers={bootstrap}
key.converter=org.apache.kafka.connect.json.JsonConverter
value.converter=org.apache.kafka.connect.json.JsonConverter
key.converter.schemas.enable=true
value.converter.schemas.enable=true
offset.storage.file.filename={dir}/connect.offsets
offset.flush.interval.ms=10000
plugin.path=libs/connect-file-4.0.0.jar
"""
FILE_SOURCE = """\
name=local-file-source
connector.class=FileStreamSource
tasks.max=1
file={dir}/test.txt
topic={topic}
"""
FILE_SINK = """\
name=local-file-sink
connector.class=FileStreamSink
tasks.max=1
file={dir}/test.sink.txt
topics={topic}
"""


def test_the_quickstart_runs_unchanged(broker, tmp_path, topic_name):
    values = {"dir": tmp_path, "bootstrap": broker.bootstrap, "topic": topic_name}
    (tmp_path / "test.txt").write_text("foo\nbar\n")
    for name, text in (("worker", STANDALONE), ("source", FILE_SOURCE), ("sink", FILE_SINK)):
        (tmp_path / f"{name}.properties").write_text(text.format(**values))
    worker = ServiceProcess("connect", {}, tmp_path / "connect.log", args=[
        "--standalone", str(tmp_path / "worker.properties"),
        str(tmp_path / "source.properties"), str(tmp_path / "sink.properties")])
    worker.start()
    try:
        sink = tmp_path / "test.sink.txt"
        wait_until(lambda: sink.exists() and sink.read_text() == "foo\nbar\n", timeout=30)
        with (tmp_path / "test.txt").open("a") as f:  # appended lines follow, as the guide shows
            f.write("Another line\n")
        wait_until(lambda: sink.read_text() == "foo\nbar\nAnother line\n", timeout=30)
        status = httpx.get(f"{worker.url}/connectors?expand=status").json()
        assert {name: s["status"]["tasks"][0]["state"] for name, s in status.items()} == {
            "local-file-source": "RUNNING", "local-file-sink": "RUNNING"}
    finally:
        worker.stop()
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": topic_name,
                         "auto.offset.reset": "earliest"})
    consumer.subscribe([topic_name])
    got = []
    try:
        while len(got) < 3:
            msg = consumer.poll(10)
            assert msg is not None, f"only {got} in the topic"
            got.append((msg.key(), msg.value()))
    finally:
        consumer.close()
    envelope = b'{"schema":{"type":"string","optional":false},"payload":"%s"}'
    assert got == [(None, envelope % b"foo"), (None, envelope % b"bar"),
                   (None, envelope % b"Another line")]
    assert json.loads(got[0][1]) == {"schema": {"type": "string", "optional": False},
                                     "payload": "foo"}


def test_a_worker_serves_its_prometheus_metrics(broker, tmp_path, topic_name):
    (tmp_path / "worker.properties").write_text(STANDALONE.format(
        dir=tmp_path, bootstrap=broker.bootstrap, topic=topic_name))
    (tmp_path / "test.txt").write_text("foo\n")
    (tmp_path / "source.properties").write_text(FILE_SOURCE.format(
        dir=tmp_path, bootstrap=broker.bootstrap, topic=topic_name))
    worker = ServiceProcess("connect", {}, tmp_path / "connect.log", args=[
        "--standalone", str(tmp_path / "worker.properties"), str(tmp_path / "source.properties")])
    worker.start()
    try:
        def scraped():
            text = httpx.get(f"{worker.url}/metrics").text
            return "kafka_connect_source_task_source_record_write_total" in text and text
        text = wait_until(scraped, timeout=30)
        assert 'connector="local-file-source"' in text
        assert "kafka_connect_worker_connector_count 1.0" in text
    finally:
        worker.stop()
