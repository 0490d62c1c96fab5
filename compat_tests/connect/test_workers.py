"""Issue 28's checks on groups of distributed ``josefk connect`` workers: Kafka's own
connector configs (its documentation's REST example) created with plain httpx and with a
REST client library of PyPI (kafka-connect-py), data flowing file -> topic -> file exactly on
one broker and on the ``spread`` cluster; validation bodies as Connect's; a worker killed with
SIGKILL while an exactly-once source and a sink run (every record arrives, none twice,
checked with the fault harness's checker); a transform chain applied in order; a poison
record in the dead letter queue with Connect's error headers under ``errors.tolerance=all``,
and failing the task under ``none``."""
from __future__ import annotations

import json
import time

import httpx
import pytest
from confluent_kafka import TopicPartition
from kafka_connect import KafkaConnect

from compat_tests.connect.workers import Workers, call
from compat_tests.helpers import consumer, create_topic, produce_plain
from compat_tests.http_services import wait_until
from josefk.faults.checker import positions


def running(url: str, name: str, tasks: int = 1):
    """The workers running ``name``'s tasks, once the connector and ``tasks`` tasks run."""
    status = call("GET", f"{url}/connectors/{name}/status").json()
    states = [t["state"] for t in status.get("tasks", [])]
    ok = status.get("connector", {}).get("state") == "RUNNING" and \
        states == ["RUNNING"] * tasks
    return ok and [t["worker_id"] for t in status["tasks"]]


def read_topic(bootstrap: str, topic: str, count: int, timeout: float = 60, **conf) -> list:
    """The first ``count`` records of partition 0 of ``topic`` (offset, key, value)."""
    c = consumer(bootstrap, **conf)
    c.assign([TopicPartition(topic, 0, 0)])
    got, deadline = [], time.monotonic() + timeout
    try:
        while len(got) < count and time.monotonic() < deadline:
            for m in c.consume(1000, 0.5):
                if not m.error():
                    got.append((m.offset(), m.key(), m.value()))
    finally:
        c.close()
    assert len(got) >= count, f"{len(got)} of {count} records in {topic}"
    return got


@pytest.mark.parametrize("target", ["single", "spread"], indirect=True)
def test_two_workers_carry_a_file_through_a_topic_into_a_file(target, tmp_path, topic_name):
    rf = 1 if target.name == "single" else 3
    topic = target.create_topic(topic_name)
    workers = Workers(target.bootstrap, tmp_path, 2, replication_factor=rf)
    try:
        src, out = tmp_path / "test.txt", tmp_path / "test.sink.txt"
        lines = [f"line {i}" for i in range(200)]
        src.write_text("".join(f"{line}\n" for line in lines))
        # The REST example of Kafka's documentation (connect.html), paths and topic changed.
        created = call("POST", f"{workers.urls[0]}/connectors", json={
            "name": "local-file-source", "config": {
                "connector.class": "FileStreamSource", "tasks.max": "1", "file": str(src),
                "topic": topic}})
        assert created.status_code == 201, created.text
        assert created.json()["name"] == "local-file-source"
        # the library does not ask again on 409: the group is let settle after the create
        wait_until(lambda: running(workers.urls[1], "local-file-source"), timeout=60)
        client = KafkaConnect(url=workers.urls[1])
        sink = client.create_connector({"name": "local-file-sink", "config": {
            "connector.class": "FileStreamSink", "tasks.max": "1", "file": str(out),
            "topics": topic}})
        assert sink["name"] == "local-file-sink"
        wait_until(lambda: out.exists() and out.read_text().splitlines() == lines, timeout=60)
        listed = KafkaConnect(url=workers.urls[0]).list_connectors(expand="status")
        assert {name: c["status"]["connector"]["state"] for name, c in listed.items()} == {
            "local-file-source": "RUNNING", "local-file-sink": "RUNNING"}
        assert client.get_connector_config("local-file-sink")["file"] == str(out)
        # the topic holds JsonConverter's envelope, as a JVM worker writes it
        first = read_topic(target.bootstrap, topic, 1)[0]
        assert first[2] == b'{"schema":{"type":"string","optional":false},"payload":"line 0"}'
    finally:
        workers.stop()


def test_validate_answers_with_connects_body(broker, tmp_path):
    workers = Workers(broker.bootstrap, tmp_path, 1)
    try:
        url = workers.urls[0]
        r = call("PUT", f"{url}/connector-plugins/FileStreamSourceConnector/config/validate",
                 json={"connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
                       "name": "checked", "tasks.max": "1", "batch.size": "many"})
        assert r.status_code == 200, r.text
        body = r.json()
        assert list(body) == ["name", "error_count", "groups", "configs"]
        assert body["name"] == "org.apache.kafka.connect.file.FileStreamSourceConnector"
        assert body["error_count"] == 2
        configs = {c["value"]["name"]: c for c in body["configs"]}
        assert configs["topic"]["value"] == {
            "name": "topic", "value": None, "recommended_values": [],
            "errors": ['Missing required configuration "topic" which has no default value.'],
            "visible": True}
        assert configs["batch.size"]["value"]["errors"] == [
            "Invalid value many for configuration batch.size: Not a number of type INT"]
        assert configs["batch.size"]["value"]["value"] is None
        assert sorted(configs["topic"]["definition"]) == sorted([
            "name", "type", "required", "default_value", "importance", "documentation",
            "group", "width", "display_name", "dependents", "order"])
        assert configs["topic"]["definition"]["required"] is True
        assert all(not c["value"]["errors"] for n, c in configs.items()
                   if n not in ("topic", "batch.size"))
        # the same through the PyPI client; a connector created with the error is refused
        again = KafkaConnect(url=url).validate_connector_config(
            "FileStreamSourceConnector", {"connector.class": "FileStreamSource",
                                          "name": "checked", "batch.size": "many"})
        assert again["error_count"] == 2
        refused = call("POST", f"{url}/connectors", json={"name": "checked", "config": {
            "connector.class": "FileStreamSource", "batch.size": "many"}})
        assert refused.status_code == 400
        assert refused.json()["message"].startswith(
            "Connector configuration is invalid and contains the following 2 error(s):")
    finally:
        workers.stop()


def test_a_killed_worker_s_exactly_once_source_and_sink_move_and_nothing_is_lost_or_doubled(
        broker, tmp_path, topic_name):
    total = 12000
    topic = create_topic(broker.bootstrap, topic_name)
    string = "org.apache.kafka.connect.storage.StringConverter"
    workers = Workers(broker.bootstrap, tmp_path, 2, **{
        "exactly.once.source.support": "enabled", "key.converter": string,
        "value.converter": string})
    out = tmp_path / "sink.txt"
    try:
        url = workers.urls[0]
        assert call("POST", f"{url}/connectors", json={"name": "generator", "config": {
            "connector.class": "josefk.connect.connectors.generator.GeneratorSourceConnector",
            "topic": topic, "max.messages": str(total), "throughput": "1500", "key": "string",
            "message.size": "20", "tasks.max": "1", "exactly.once.support": "required"}}
        ).status_code == 201
        assert call("POST", f"{url}/connectors", json={"name": "sink", "config": {
            "connector.class": "FileStreamSink", "topics": topic, "file": str(out),
            "consumer.override.isolation.level": "read_committed"}}).status_code == 201
        (owner,) = wait_until(lambda: running(url, "generator"), timeout=60)
        wait_until(lambda: out.exists() and len(out.read_text().splitlines()) > 1000,
                   timeout=60)
        victim = workers.by_id(owner)
        victim.kill()
        survivor = next(w for w in workers.processes if w is not victim).url
        moved = wait_until(lambda: (w := running(survivor, "generator")) and w != [owner]
                           and running(survivor, "sink") and w, timeout=60)
        assert moved != [owner]
        records = read_topic(broker.bootstrap, topic, total, timeout=90,
                             isolation_level="read_committed")
        places = positions({(topic, 0): [(off, key.decode()) for off, key, _v in records]})
        doubled = {k: p for k, p in places.items() if len(p) > 1}
        assert not doubled, f"records written twice: {list(doubled.items())[:5]}"
        assert set(places) == {str(i) for i in range(total)}
        # the sink (at least once) has every record, whichever worker it ran on
        values = {(str(i) + "x" * 20)[:20] for i in range(total)}
        wait_until(lambda: values <= set(out.read_text().splitlines()), timeout=60)
    finally:
        workers.stop()


def test_a_transform_chain_is_applied_in_order(broker, tmp_path, topic_name):
    routed = topic_name + "-routed"
    create_topic(broker.bootstrap, routed)
    workers = Workers(broker.bootstrap, tmp_path, 1,
                      **{"value.converter.schemas.enable": "false"})
    try:
        src = tmp_path / "in.txt"
        src.write_text("alpha\nbeta\n")
        # HoistField makes a struct that InsertField can add to, and RegexRouter renames the
        # topic: in another order InsertField would fail on a string.
        assert call("POST", f"{workers.urls[0]}/connectors", json={"name": "chain", "config": {
            "connector.class": "FileStreamSource", "file": str(src), "topic": topic_name,
            "transforms": "hoist,insert,route",
            "transforms.hoist.type": "org.apache.kafka.connect.transforms.HoistField$Value",
            "transforms.hoist.field": "line",
            "transforms.insert.type": "org.apache.kafka.connect.transforms.InsertField$Value",
            "transforms.insert.static.field": "origin",
            "transforms.insert.static.value": "file",
            "transforms.route.type": "org.apache.kafka.connect.transforms.RegexRouter",
            "transforms.route.regex": "(.*)", "transforms.route.replacement": "$1-routed"}}
        ).status_code == 201
        got = read_topic(broker.bootstrap, routed, 2)
        assert [json.loads(v) for _o, _k, v in got] == [
            {"line": "alpha", "origin": "file"}, {"line": "beta", "origin": "file"}]
    finally:
        workers.stop()


def test_a_poison_record_goes_to_the_dead_letter_queue_or_fails_the_task(
        broker, tmp_path, topic_name):
    topic = create_topic(broker.bootstrap, topic_name)
    dlq = topic_name + "-dlq"
    produce_plain(broker.bootstrap, topic, [b'"good 1"', b"{not json", b'"good 2"'])
    workers = Workers(broker.bootstrap, tmp_path, 1,
                      **{"value.converter.schemas.enable": "false"})
    try:
        url = workers.urls[0]
        tolerant, strict = tmp_path / "tolerant.txt", tmp_path / "strict.txt"
        sink = {"connector.class": "FileStreamSink", "topics": topic,
                "errors.tolerance": "all", "errors.deadletterqueue.topic.name": dlq,
                "errors.deadletterqueue.topic.replication.factor": "1",
                "errors.deadletterqueue.context.headers.enable": "true",
                "errors.log.enable": "true", "file": str(tolerant)}
        assert call("POST", f"{url}/connectors", json={"name": "tolerant", "config": sink}
                    ).status_code == 201
        wait_until(lambda: tolerant.exists()
                   and tolerant.read_text().splitlines() == ["good 1", "good 2"], timeout=60)
        ((offset, _key, value),) = [r[:3] for r in read_topic(broker.bootstrap, dlq, 1)]
        assert value == b"{not json"
        c = consumer(broker.bootstrap)
        c.assign([TopicPartition(dlq, 0, 0)])
        msg = c.poll(10)
        c.close()
        headers = dict(msg.headers())
        assert headers["__connect.errors.topic"] == topic.encode()
        assert headers["__connect.errors.partition"] == b"0"
        assert headers["__connect.errors.offset"] == b"1"
        assert headers["__connect.errors.connector.name"] == b"tolerant"
        assert headers["__connect.errors.task.id"] == b"0"
        assert headers["__connect.errors.stage"] == b"VALUE_CONVERTER"
        assert b"DataException" in headers["__connect.errors.exception.class.name"]
        assert headers["__connect.errors.exception.message"]
        assert running(url, "tolerant")  # the task keeps running

        strict_config = {**sink, "errors.tolerance": "none", "file": str(strict)}
        del strict_config["errors.deadletterqueue.topic.name"]
        assert call("POST", f"{url}/connectors", json={"name": "strict",
                                                        "config": strict_config}
                    ).status_code == 201

        def failed():
            task = call("GET", f"{url}/connectors/strict/tasks/0/status").json()
            return task.get("state") == "FAILED" and task
        task = wait_until(failed, timeout=60)
        assert "DataException" in task["trace"]
        # the batch is converted whole before put, as Kafka's WorkerSinkTask: nothing written
        assert not strict.exists() or strict.read_text() == ""
        r = call("POST", f"{url}/connectors/strict/restart?includeTasks=true&onlyFailed=true")
        assert r.status_code == 202, r.text
        assert [t["state"] for t in r.json()["tasks"]] == ["RESTARTING"]
    finally:
        workers.stop()


def test_a_request_to_a_follower_is_answered_by_the_leader(broker, tmp_path):
    workers = Workers(broker.bootstrap, tmp_path, 2)
    try:
        for url in workers.urls:  # whichever is the leader, both answer the same
            r = call("PUT", f"{url}/connectors/fwd-{url[-5:]}/config", json={
                "connector.class": "FileStreamSource", "topic": "t",
                "file": str(tmp_path / "none.txt")})
            assert r.status_code == 201, r.text
        assert sorted(call("GET", f"{workers.urls[0]}/connectors").json()) == sorted(
            f"fwd-{u[-5:]}" for u in workers.urls)
        info = httpx.get(f"{workers.urls[1]}/").json()
        assert set(info) == {"version", "commit", "kafka_cluster_id"}
    finally:
        workers.stop()


def test_a_cluster_scoped_log_level_reaches_every_worker_but_not_a_later_one(broker, tmp_path):
    """KIP-976: ``PUT /admin/loggers/{ns}?scope=cluster`` on one worker sets the level on all
    (through the config topic); a worker that joins afterwards keeps its own levels."""
    namespace = "org.example.kip976"
    workers = Workers(broker.bootstrap, tmp_path, 2)
    try:
        r = call("PUT", f"{workers.urls[1]}/admin/loggers/{namespace}",
                 params={"scope": "cluster"}, json={"level": "DEBUG"})
        assert (r.status_code, r.content) == (204, b"")
        for url in workers.urls:
            wait_until(lambda url=url: httpx.get(f"{url}/admin/loggers/{namespace}").json()
                       .get("level") == "DEBUG", timeout=30)
        later = workers.add()
        assert httpx.get(f"{later.url}/admin/loggers/{namespace}").status_code == 404
    finally:
        workers.stop()
