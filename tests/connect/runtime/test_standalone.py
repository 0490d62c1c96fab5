"""The standalone herder and the worker on a real josefk broker with real confluent-kafka
clients: file -> topic -> file, offsets resumed after a restart, the error handling (dead
letter queue, tolerance none, retries)."""
import asyncio
import base64
import time

import pytest
from confluent_kafka import Consumer, Producer

from josefk.connect.api.connector import TopicPartition
from josefk.connect.runtime.herder import BadRequest, HerderError

from josefk.connect.runtime.plugins import Plugins
from josefk.connect.runtime.seams import ConnectorTaskId
from josefk.connect.runtime.standalone import StandaloneHerder
from josefk.connect.runtime.worker_config import WorkerConfig
from testkit.waiting import until
from tests.connect.runtime import doubles


def worker_config(josefk_broker, tmp_path, **extra) -> WorkerConfig:
    props = {"bootstrap.servers": josefk_broker.bootstrap_servers,
             "offset.storage.file.filename": str(tmp_path / "offsets.json"),
             "key.converter": "org.apache.kafka.connect.storage.StringConverter",
             "value.converter": "org.apache.kafka.connect.storage.StringConverter",
             "offset.flush.interval.ms": "200", **extra}
    config = WorkerConfig(props, distributed=False)
    config.worker_id = "127.0.0.1:8083"
    return config


def herder(josefk_broker, tmp_path, **extra) -> StandaloneHerder:
    return StandaloneHerder(worker_config(josefk_broker, tmp_path, **extra), None,
                            Plugins(doubles.PLUGINS))


def lines(path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def source(name, file, topic):
    return {"name": name, "connector.class": "FileStreamSource", "file": str(file),
            "topic": topic}


def sink(name, file, topic, **extra):
    return {"name": name, "connector.class": "FileStreamSinkConnector", "file": str(file),
            "topics": topic, **extra}


def produce(josefk_broker, topic, values, headers=None):
    producer = Producer({"bootstrap.servers": josefk_broker.bootstrap_servers})
    for value in values:
        producer.produce(topic, value=value, headers=headers)
    assert producer.flush(15) == 0


def consume_all(josefk_broker, topic, count, timeout=20.0):
    consumer = Consumer({"bootstrap.servers": josefk_broker.bootstrap_servers,
                         "group.id": f"check-{topic}-{time.monotonic()}",
                         "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    found, deadline = [], time.monotonic() + timeout
    try:
        while len(found) < count and time.monotonic() < deadline:
            m = consumer.poll(0.5)
            if m is not None and m.error() is None:
                found.append(m)
    finally:
        consumer.close()
    return found


def test_file_to_topic_to_file_resumes_after_a_restart_without_loss_or_duplicates(
        josefk_broker, josefk_topic, tmp_path):
    src, out = tmp_path / "in.txt", tmp_path / "out.txt"
    src.write_text("".join(f"line {i}\n" for i in range(5)))

    async def run(expected):
        h = herder(josefk_broker, tmp_path)
        await h.start([source("file-source", src, josefk_topic),
                       sink("file-sink", out, josefk_topic)])
        try:
            await until(lambda: len(lines(out)) >= expected, what=f"{expected} lines")
            status = await h.connector_status("file-source")
            assert status["connector"]["state"] == "RUNNING"
            assert [t["state"] for t in status["tasks"]] == ["RUNNING"]
            assert status["type"] == "source"
            assert await h.connector_topics("file-sink") == [josefk_topic]
            offsets = await h.connector_offsets("file-source")
            await until(lambda: h.offset_store.all("file-source"), what="source offsets")
        finally:
            await h.stop()
        return offsets

    asyncio.run(run(5))
    with src.open("a") as f:
        f.write("".join(f"line {i}\n" for i in range(5, 8)))
    asyncio.run(run(8))
    time.sleep(0.5)  # anything duplicated would have arrived by now
    assert lines(out) == [f"line {i}" for i in range(8)]
    stored = dict((p["filename"], o["position"])
                  for p, o in herder(josefk_broker, tmp_path).offset_store.all("file-source"))
    assert stored == {str(src): src.stat().st_size}


def test_a_sink_record_carries_the_converted_headers_and_none_when_the_message_has_none(
        josefk_broker, josefk_topic, tmp_path):
    out = tmp_path / "out.txt"
    produce(josefk_broker, josefk_topic, [b"a"], headers=[("h", b"1"), ("g", b"two")])
    produce(josefk_broker, josefk_topic, [b"b"])

    async def run():
        h = herder(josefk_broker, tmp_path)
        await h.start([sink("header-sink", out, josefk_topic,
                            **{"connector.class": "tests.HeaderSinkConnector"})])
        try:
            await until(lambda: len(lines(out)) >= 2, what="both records")
        finally:
            await h.stop()

    asyncio.run(run())
    assert lines(out) == ["a h=1,g=two", "b "]


def test_a_poison_record_goes_to_the_dead_letter_queue_with_the_error_headers(
        josefk_broker, josefk_topic, tmp_path):
    out, dlq = tmp_path / "out.txt", f"{josefk_topic}-dlq"
    produce(josefk_broker, josefk_topic, [b'"a"', b"poison", b'"b"'],
            headers=[("origin", b"t")])

    async def run():
        h = herder(josefk_broker, tmp_path)
        await h.start([sink("dlq-sink", out, josefk_topic,
                            **{"value.converter": "org.apache.kafka.connect.json.JsonConverter",
                               "value.converter.schemas.enable": "false",
                               "errors.tolerance": "all", "errors.log.enable": "true",
                               "errors.deadletterqueue.topic.name": dlq,
                               "errors.deadletterqueue.topic.replication.factor": "1",
                               "errors.deadletterqueue.context.headers.enable": "true"})])
        try:
            await until(lambda: len(lines(out)) >= 2, what="the good records")
            assert (await h.task_status("dlq-sink", 0))["state"] == "RUNNING"
        finally:
            await h.stop()
        return h.metrics.render().decode()

    metrics = asyncio.run(run())
    assert lines(out) == ["a", "b"]
    [dead] = consume_all(josefk_broker, dlq, 1)
    assert dead.value() == b"poison"
    headers = dict(dead.headers())
    assert headers["origin"] == b"t"
    assert headers["__connect.errors.topic"] == josefk_topic.encode()
    assert headers["__connect.errors.partition"] == b"0"
    assert headers["__connect.errors.offset"] == b"1"
    assert headers["__connect.errors.connector.name"] == b"dlq-sink"
    assert headers["__connect.errors.task.id"] == b"0"
    assert headers["__connect.errors.stage"] == b"VALUE_CONVERTER"
    assert headers["__connect.errors.class.name"] == \
        b"josefk.connect.converters.json.JsonConverter"
    assert headers["__connect.errors.exception.class.name"] == \
        b"josefk.connect.api.errors.DataException"
    assert headers["__connect.errors.exception.message"].startswith(
        b"Converting byte[] to Kafka Connect data failed due to serialization error")
    assert b"Traceback" in headers["__connect.errors.exception.stacktrace"]
    assert ('kafka_connect_task_error_deadletterqueue_produce_requests_total'
            '{connector="dlq-sink",task="0"} 1.0') in metrics


def task_failed(h, connector):
    """Task 0's status once it is FAILED, else None."""
    status = h.status_store.tasks(connector).get(0)
    return status if status and status.state.value == "FAILED" else None


def test_tolerance_none_fails_the_task_with_its_trace(josefk_broker, josefk_topic, tmp_path):
    out = tmp_path / "out.txt"
    produce(josefk_broker, josefk_topic, [b"poison", b'"after"'])

    async def run():
        h = herder(josefk_broker, tmp_path)
        config = sink("strict-sink", out, josefk_topic, **{
            "value.converter": "JsonConverter", "value.converter.schemas.enable": "false"})
        await h.start([config])
        try:
            failed = await until(lambda: task_failed(h, "strict-sink"), what="FAILED")
            status = await h.connector_status("strict-sink")
            plan = await h.restart_connector("strict-sink", True, True)
            await until(lambda: task_failed(h, "strict-sink"),
                        what="FAILED again after the restart")
            assert lines(out) == []
            created, _ = await h.put_connector_config(
                "strict-sink", dict(config, **{"errors.tolerance": "all"}), True)
            assert not created
            await until(lambda: lines(out) == ["after"], what="the record after the poison")
            assert (await h.task_status("strict-sink", 0))["state"] == "RUNNING"
        finally:
            await h.stop()
        return failed, status, plan

    failed, status, plan = asyncio.run(run())
    assert "Tolerance exceeded in error handler" in failed.trace
    assert "DataException: Converting byte[] to Kafka Connect data failed" in failed.trace
    assert "connect/converters/json.py" in failed.trace
    assert status["connector"]["state"] == "RUNNING"
    assert status["tasks"][0]["trace"] == failed.trace
    assert plan["connector"]["state"] == "RUNNING"   # only the failed task restarts
    assert plan["tasks"] == [{"id": 0, "state": "RESTARTING", "worker_id": "127.0.0.1:8083"}]


def test_retriable_failures_are_retried(josefk_broker, josefk_topic, tmp_path):
    out = tmp_path / "out.txt"
    produce(josefk_broker, josefk_topic, [b"x", b"y"])
    doubles.FlakySinkTask.failures, doubles.FlakySinkTask.attempts = 2, 0
    doubles.FlakyConverter.failures = 2

    async def run():
        h = herder(josefk_broker, tmp_path)
        await h.start([sink("flaky-sink", out, josefk_topic,
                            **{"connector.class": "tests.FlakySinkConnector",
                               "value.converter": "tests.FlakyConverter",
                               "errors.retry.timeout": "10000",
                               "errors.retry.delay.max.ms": "100"})])
        try:
            await until(lambda: len(lines(out)) >= 2, what="the records")
            assert (await h.task_status("flaky-sink", 0))["state"] == "RUNNING"
        finally:
            await h.stop()

    asyncio.run(run())
    assert lines(out) == ["x", "y"]
    assert doubles.FlakySinkTask.attempts >= 3
    assert doubles.FlakyConverter.failures == 0


def test_pause_resume_stop_and_the_offsets_endpoints(josefk_broker, josefk_topic, tmp_path):
    src, out = tmp_path / "in.txt", tmp_path / "out.txt"
    src.write_text("a\nb\n")

    async def state(h, name):
        status = await h.connector_status(name)
        return [status["connector"]["state"]] + [t["state"] for t in status["tasks"]]

    async def run():
        h = herder(josefk_broker, tmp_path)
        await h.start([source("src", src, josefk_topic), sink("snk", out, josefk_topic)])
        try:
            await until(lambda: len(lines(out)) == 2, what="two lines")
            await h.pause_connector("src")
            assert await until(lambda: _is(state(h, "src"), ["PAUSED", "PAUSED"]))
            with src.open("a") as f:
                f.write("c\n")
            await asyncio.sleep(1.5)
            assert len(lines(out)) == 2  # paused: nothing read
            await h.resume_connector("src")
            await until(lambda: len(lines(out)) == 3, what="the third line")
            await until(lambda: h.offset_store.all("src") and
                        h.offset_store.all("src")[0][1]["position"] == 6, what="offsets")
            await h.stop_connector("src")
            assert await until(lambda: _is(state(h, "src"), ["STOPPED", "UNASSIGNED"]))
            assert (await h.connector_info("src"))["tasks"] == []
            assert await h.connector_offsets("src") == {
                "offsets": [{"partition": {"filename": str(src)}, "offset": {"position": 6}}]}
            with pytest.raises(HerderError, match="The value for the 'position' key in the "
                               "offset should be a non-negative value") as refused:
                await h.alter_connector_offsets("src", [
                    {"partition": {"filename": str(src)}, "offset": {"position": -1}}])
            assert refused.value.status == 500
            with pytest.raises(BadRequest, match="must be a JSON object"):
                await h.alter_connector_offsets("src", [{"partition": "nope"}])
            message = await h.alter_connector_offsets("src", [
                {"partition": {"filename": str(src)}, "offset": {"position": 2}}])
            assert message == "The offsets for this connector have been altered successfully"
            await h.resume_connector("src")
            await until(lambda: len(lines(out)) == 5, what="b and c again")
            sink_offsets = await until(lambda: _sink_done(h, josefk_topic),
                                       what="the sink's committed offsets")
            assert sink_offsets == {"offsets": [{
                "partition": {"kafka_topic": josefk_topic, "kafka_partition": 0},
                "offset": {"kafka_offset": 5}}]}
        finally:
            await h.stop()

    asyncio.run(run())
    assert lines(out) == ["a", "b", "c", "b", "c"]


async def _is(states, expected):
    return await states == expected or None


async def _sink_done(h, topic):
    found = await h.connector_offsets("snk")
    offsets = found["offsets"]
    return found if offsets and offsets[0]["offset"]["kafka_offset"] == 5 else None


def test_a_transform_chain_applies_in_order(josefk_broker, josefk_topic, tmp_path):
    src = tmp_path / "in.txt"
    src.write_text("keep\ndrop\n")

    async def run():
        h = herder(josefk_broker, tmp_path)
        await h.start([dict(source("chained", src, f"raw-{josefk_topic}"), **{
            "transforms": "route,mark,skip",
            "transforms.route.type": "org.apache.kafka.connect.transforms.RegexRouter",
            "transforms.route.regex": "raw-(.*)", "transforms.route.replacement": "$1",
            "transforms.mark.type": "InsertHeader", "transforms.mark.header": "via",
            "transforms.mark.value.literal": "connect",
            "transforms.skip.type": "Filter", "transforms.skip.predicate": "isDrop",
            "predicates": "isDrop",
            "predicates.isDrop.type": "org.apache.kafka.connect.transforms.predicates."
                                      "TopicNameMatches",
            # the raw topic's name: route renamed it before skip tests it, so nothing drops
            "predicates.isDrop.pattern": "raw-.*"})])
        try:
            return await asyncio.to_thread(consume_all, josefk_broker, josefk_topic, 2)
        finally:
            await h.stop()

    found = asyncio.run(run())
    assert [(m.value(), m.headers()) for m in found] == [
        (b"keep", [("via", b"connect")]), (b"drop", [("via", b"connect")])]


def test_topics_are_created_as_topic_creation_says_and_a_sink_reads_a_regex(
        josefk_broker, tmp_path):
    from confluent_kafka.admin import AdminClient, ConfigResource
    src, out = tmp_path / "in.txt", tmp_path / "out.txt"
    src.write_text("one\ntwo\n")
    topic = f"created-{int(time.time() * 1000)}"
    josefk_broker.create_topic(f"{topic}-not-matched")  # the regex matches whole names
    produce(josefk_broker, f"{topic}-not-matched", [b"other"])

    async def run():
        # the sink may subscribe before the source made the topic: it finds it at the next
        # metadata refresh
        h = herder(josefk_broker, tmp_path, **{"consumer.metadata.max.age.ms": "500"})
        await h.start([dict(source("creator", src, topic), **{
            "topic.creation.default.replication.factor": "1",
            "topic.creation.default.partitions": "3",
            "topic.creation.default.retention.ms": "3600000"}),
            {"name": "by-regex", "connector.class": "FileStreamSink", "file": str(out),
             "topics.regex": "created-[0-9]+|never"}])
        try:
            await until(lambda: len(lines(out)) == 2, what="the lines through a regex")
        finally:
            await h.stop()

    asyncio.run(run())
    assert sorted(lines(out)) == ["one", "two"]
    admin = AdminClient({"bootstrap.servers": josefk_broker.bootstrap_servers})
    assert len(admin.list_topics(topic, timeout=10).topics[topic].partitions) == 3
    [described] = admin.describe_configs([ConfigResource("topic", topic)]).values()
    assert described.result(10)["retention.ms"].value == "3600000"


def test_a_connector_that_raises_an_error_is_failed_and_one_asking_for_reconfiguration_gets_new_tasks(
        josefk_broker, josefk_topic, tmp_path):
    from josefk.connect.connectors.generator import GeneratorSourceConnector

    class Growing(GeneratorSourceConnector):
        instances = []

        def start(self, props):
            super().start(props)
            Growing.instances.append(self)
            self.tasks = 1

        def task_configs(self, max_tasks):
            return super().task_configs(self.tasks)

    plugins = Plugins(dict(doubles.PLUGINS, connector={"tests.Growing": Growing}))

    async def run():
        h = StandaloneHerder(worker_config(josefk_broker, tmp_path), None, plugins)
        await h.start([{"name": "grow", "connector.class": "tests.Growing",
                        "topic": josefk_topic, "max.messages": "10", "tasks.max": "3"}])
        try:
            assert len(await h.task_configs("grow")) == 1
            connector = Growing.instances[-1]
            connector.tasks = 2
            connector.context.request_task_reconfiguration()
            await until(lambda: _task_count(h, "grow", 2), what="two tasks")
            await until(lambda: _is(_states(h, "grow"), ["RUNNING", "RUNNING", "RUNNING"]),
                        what="both tasks running")
            connector.context.raise_error(RuntimeError("the source went away"))
            status = await h.connector_status("grow")
        finally:
            await h.stop()
        return status

    status = asyncio.run(run())
    assert status["connector"]["state"] == "FAILED"
    assert "RuntimeError: the source went away" in status["connector"]["trace"]


async def _task_count(h, name, count):
    return len(await h.task_configs(name)) == count or None


async def _states(h, name):
    status = await h.connector_status(name)
    return [status["connector"]["state"]] + [t["state"] for t in status["tasks"]]


def test_errant_records_reported_by_the_task_and_a_sinks_offsets_altered_and_reset(
        josefk_broker, josefk_topic, tmp_path):
    out, dlq = tmp_path / "out.txt", f"{josefk_topic}-errant"
    produce(josefk_broker, josefk_topic, [b"a", b"bad", b"b"])
    config = sink("reporting", out, josefk_topic, **{
        "connector.class": "tests.ReportingSinkConnector", "errors.tolerance": "all",
        "errors.deadletterqueue.topic.name": dlq,
        "errors.deadletterqueue.topic.replication.factor": "1"})

    async def committed_at(h, offset):
        offsets = (await h.connector_offsets("reporting"))["offsets"]
        return bool(offsets) and offsets[0]["offset"]["kafka_offset"] == offset or None

    async def run():
        h = herder(josefk_broker, tmp_path)
        await h.start([config])
        try:
            await until(lambda: len(lines(out)) == 2, what="the good records")
            await until(lambda: committed_at(h, 3), what="the offsets committed")
            await h.stop_connector("reporting")
            altered = await h.alter_connector_offsets("reporting", [{
                "partition": {"kafka_topic": josefk_topic, "kafka_partition": 0},
                "offset": {"kafka_offset": 2}}])
            assert altered == "The offsets for this connector have been altered successfully"
            assert await committed_at(h, 2)
            await h.resume_connector("reporting")
            await until(lambda: len(lines(out)) == 3, what="b again")
            await until(lambda: committed_at(h, 3), what="the offsets committed again")
            await h.stop_connector("reporting")
            reset = await h.reset_connector_offsets("reporting")
            assert reset == "The offsets for this connector have been reset successfully"
            assert (await h.connector_offsets("reporting")) == {"offsets": []}
            await h.resume_connector("reporting")
            await until(lambda: len(lines(out)) == 5, what="everything again")
        finally:
            await h.stop()

    asyncio.run(run())
    assert lines(out) == ["a", "b", "b", "a", "b"]
    dead = consume_all(josefk_broker, dlq, 2)
    assert [m.value() for m in dead] == [b"bad", b"bad"]


def test_a_source_blocked_in_poll_is_woken_by_stop(josefk_broker, josefk_topic, tmp_path):
    async def run():
        h = herder(josefk_broker, tmp_path)
        await h.start([{"name": "blocked", "connector.class": "tests.BlockingSourceConnector",
                        "topic": josefk_topic}])
        await until(lambda: _is(_states(h, "blocked"), ["RUNNING", "RUNNING"]),
                    what="the task running")
        started = time.monotonic()
        await h.stop()
        return time.monotonic() - started, h.status_store.get(ConnectorTaskId("blocked", 0))

    took, status = asyncio.run(run())
    assert took < 3
    assert status.state.value == "UNASSIGNED" and status.trace is None


def test_a_sink_task_rewinds_its_partitions_and_batches_are_bounded(
        josefk_broker, josefk_topic, tmp_path):
    out = tmp_path / "out.txt"
    produce(josefk_broker, josefk_topic, [b"1", b"2", b"3"])
    doubles.RewindingSinkTask.rewound = False

    async def run():
        h = herder(josefk_broker, tmp_path)
        await h.start([sink("rewinding", out, josefk_topic, **{
            "connector.class": "tests.RewindingSinkConnector",
            "consumer.override.max.poll.records": "2"})])
        try:
            await until(lambda: len(lines(out)) == 5, what="the first batch twice")
            await asyncio.sleep(1)
        finally:
            await h.stop()

    asyncio.run(run())
    assert lines(out) == ["1", "2", "1", "2", "3"]   # the first batch (2 records), then all


@pytest.mark.josefk_topic(partitions=2)
def test_a_sink_opens_its_partitions_and_closes_them_once(josefk_broker, josefk_topic, tmp_path):
    doubles.ClosingSinkTask.calls = []

    async def run():
        h = herder(josefk_broker, tmp_path)
        await h.start([sink("closing", tmp_path / "out.txt", josefk_topic,
                            **{"connector.class": "tests.ClosingSinkConnector"})])
        try:
            await until(lambda: doubles.ClosingSinkTask.calls, what="the partitions opened")
        finally:
            await h.stop()

    asyncio.run(run())
    both = [TopicPartition(josefk_topic, 0), TopicPartition(josefk_topic, 1)]
    assert doubles.ClosingSinkTask.calls == [("open", both), ("close", both)]


def test_a_connector_config_that_cannot_be_created_at_start_is_a_config_error(
        josefk_broker, tmp_path):
    from josefk.connect.api.config import ConfigException

    async def run():
        h = herder(josefk_broker, tmp_path)
        try:
            await h.start([{"name": "nope", "connector.class": "NoSuchConnector"}])
        finally:
            await h.stop()

    with pytest.raises(ConfigException, match="Failed to create connector nope: Failed to find "
                       "any class that implements Connector and which name matches "
                       "NoSuchConnector"):
        asyncio.run(run())


def test_a_source_record_its_converter_fails_is_skipped_and_committed_without_metadata(
        josefk_broker, josefk_topic, tmp_path):
    doubles.CommitRecordingSourceTask.committed = []

    async def run():
        h = herder(josefk_broker, tmp_path)
        await h.start([{"name": "picky", "connector.class": "tests.CommitRecordingSourceConnector",
                        "topic": josefk_topic, "max.messages": "3", "message.size": "0",
                        "value.converter": "tests.PickyConverter", "errors.tolerance": "all"}])
        try:
            await until(lambda: len(doubles.CommitRecordingSourceTask.committed) == 3,
                        what="three records committed")
            assert (await h.task_status("picky", 0))["state"] == "RUNNING"
        finally:
            await h.stop()

    asyncio.run(run())
    assert sorted(doubles.CommitRecordingSourceTask.committed, key=lambda c: c[0]) == [
        ("0", 0), ("1", None), ("2", 1)]
    assert [m.value() for m in consume_all(josefk_broker, josefk_topic, 2)] == [b"0", b"2"]


def test_ready_after_start_and_kip_980_initial_states(josefk_broker, josefk_topic, tmp_path):
    async def scenario():
        h = herder(josefk_broker, tmp_path)
        assert not h.ready()
        await h.start([])
        assert h.ready()
        try:
            await h.put_connector_config("paused", source("paused", tmp_path / "a.txt",
                                                          josefk_topic), False, "PAUSED")
            await h.put_connector_config("stopped", source("stopped", tmp_path / "b.txt",
                                                           josefk_topic), False, "STOPPED")
            for name, state in (("paused", "PAUSED"), ("stopped", "STOPPED")):
                assert await until(lambda: h.status_store.get(name) is not None
                                   and h.status_store.get(name).state.value == state)
            assert await h.task_configs("stopped") == []
            with pytest.raises(HerderError, match="standalone mode does not support externally"):
                await h.put_task_configs("paused", [], None)
        finally:
            await h.stop()

    asyncio.run(scenario())


@pytest.mark.parametrize("tolerance", ["all", "none"])
@pytest.mark.parametrize("connector", ["GeneratorSource", "tests.CommitRecordingSourceConnector"])
def test_records_kafka_refuses_are_let_go_under_tolerance_all_and_fail_the_task_under_none(
        josefk_broker, tmp_path, tolerance, connector):
    """The topic's max.message.bytes is below the records' size: each delivery report is an
    error. Under ``all`` each refused record counts as done (its offset committed; a task
    with its own commit_record is given it without metadata) and the task runs on; under
    ``none`` the task fails. Both delivery callbacks: the batch's, and the per-record one of a
    task with commit_record."""
    topic = f"refusing-{tolerance}-{time.monotonic_ns()}"
    josefk_broker.create_topic(topic, config={"max.message.bytes": "1000"})
    doubles.CommitRecordingSourceTask.committed = []
    recording = connector != "GeneratorSource"

    async def run():
        h = herder(josefk_broker, tmp_path)
        await h.start([{"name": "refused", "connector.class": connector, "topic": topic,
                        "max.messages": "3", "message.size": "2000",
                        "errors.tolerance": tolerance}])
        try:
            if tolerance == "all":
                assert await until(lambda: h.offset_store.get("refused", [{"task": 0}])[0],
                                   what="the offsets") == {"seq": 2}
                assert (await h.task_status("refused", 0))["state"] == "RUNNING"
            else:
                status = await until(lambda: task_failed(h, "refused"), what="FAILED")
                assert "Unrecoverable exception from producer send callback" in status.trace
        finally:
            await h.stop()

    asyncio.run(run())
    assert doubles.CommitRecordingSourceTask.committed == (
        [(str(seq).ljust(2000, "x"), None) for seq in range(3)]
        if recording and tolerance == "all" else [])


BYTES_CONVERTERS = {f"{kind}.converter": "org.apache.kafka.connect.converters.ByteArrayConverter"
                    for kind in ("key", "value", "header")}


@pytest.mark.parametrize("converters", ["bytes", "string"])
def test_a_batch_of_rows_is_written_as_given_and_its_offsets_committed_once_all_are(
        josefk_broker, josefk_topic, tmp_path, converters):
    """A SourceRecordBatch: keys, values, timestamps and headers arrive as given when the
    converters pass the bytes through (ByteArray), converted when they do not (String and
    Simple header converters: bytes as base64, as Connect's); commit_rows is told each row's
    offset and the batch's source offset is stored."""
    doubles.RowsSourceTask.committed = []
    extra = BYTES_CONVERTERS if converters == "bytes" else {
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": "org.apache.kafka.connect.storage.StringConverter"}

    async def run():
        h = herder(josefk_broker, tmp_path)
        await h.start([{"name": "rows", "connector.class": "tests.RowsSourceConnector",
                        "topic": josefk_topic, "max.messages": "4", **extra}])
        try:
            assert await until(lambda: h.offset_store.get("rows", [{"rows": 0}])[0],
                               what="the offsets") == {"row": 3}
            assert await until(lambda: doubles.RowsSourceTask.committed,
                               what="commit_rows") == [[0, 1, 2, 3]]
        finally:
            await h.stop()

    asyncio.run(run())
    found = consume_all(josefk_broker, josefk_topic, 4)
    as_written = (lambda b: b) if converters == "bytes" else base64.b64encode
    assert [(m.key(), m.value(), m.timestamp()[1], m.headers()) for m in found] == [
        (as_written(b"k%d" % i), as_written(b"%d" % i), 1000 + i,
         [("h", as_written(b"%d" % i))] if i % 2 == 0 else None) for i in range(4)]


def test_a_transformation_chain_takes_a_batch_row_by_row_and_dropped_rows_are_minus_one(
        josefk_broker, josefk_topic, tmp_path):
    """A chain needs records: each row is made one; those the Filter drops (a header ``h``)
    are told as -1 and still count towards the batch's offsets."""
    doubles.RowsSourceTask.committed = []

    async def run():
        h = herder(josefk_broker, tmp_path)
        await h.start([{"name": "rows", "connector.class": "tests.RowsSourceConnector",
                        "topic": josefk_topic, "max.messages": "4", **BYTES_CONVERTERS,
                        "transforms": "drop", "transforms.drop.type":
                        "org.apache.kafka.connect.transforms.Filter",
                        "transforms.drop.predicate": "hasH", "predicates": "hasH",
                        "predicates.hasH.type":
                        "org.apache.kafka.connect.transforms.predicates.HasHeaderKey",
                        "predicates.hasH.name": "h"}])
        try:
            assert await until(lambda: h.offset_store.get("rows", [{"rows": 0}])[0],
                               what="the offsets") == {"row": 3}
            assert await until(lambda: doubles.RowsSourceTask.committed,
                               what="commit_rows") == [[-1, 0, -1, 1]]
        finally:
            await h.stop()

    asyncio.run(run())
    assert [(m.key(), m.value()) for m in consume_all(josefk_broker, josefk_topic, 2)] == [
        (b"k1", b"1"), (b"k3", b"3")]


def test_a_batch_row_its_converter_fails_is_dropped_under_tolerance_all(
        josefk_broker, josefk_topic, tmp_path):
    doubles.RowsSourceTask.committed = []

    async def run():
        h = herder(josefk_broker, tmp_path)
        await h.start([{"name": "rows", "connector.class": "tests.RowsSourceConnector",
                        "topic": josefk_topic, "max.messages": "3",
                        "value.converter": "tests.PickyConverter", "errors.tolerance": "all"}])
        try:
            assert await until(lambda: doubles.RowsSourceTask.committed,
                               what="commit_rows") == [[0, -1, 1]]
            assert (await h.task_status("rows", 0))["state"] == "RUNNING"
        finally:
            await h.stop()

    asyncio.run(run())
    assert [m.value() for m in consume_all(josefk_broker, josefk_topic, 2)] == [
        base64.b64encode(b"0"), base64.b64encode(b"2")]  # bytes through a StringConverter


def test_the_generators_batches_of_strings_are_encoded_as_the_string_converter_does(
        josefk_broker, josefk_topic, tmp_path):
    """str rows through Kafka's StringConverter (encoded inline, in its converter.encoding)."""
    async def run():
        h = herder(josefk_broker, tmp_path)
        await h.start([{"name": "gen", "connector.class": "GeneratorSource",
                        "topic": josefk_topic, "max.messages": "3", "message.size": "4",
                        "key": "string",
                        "value.converter": "org.apache.kafka.connect.storage.StringConverter",
                        "value.converter.converter.encoding": "UTF-16BE"}])
        try:
            assert await until(lambda: h.offset_store.get("gen", [{"task": 0}])[0],
                               what="the offsets") == {"seq": 2}
        finally:
            await h.stop()

    asyncio.run(run())
    assert [(m.key(), m.value()) for m in consume_all(josefk_broker, josefk_topic, 3)] == [
        (str(i).encode(), f"{i}xxx".encode("utf-16-be")) for i in range(3)]
