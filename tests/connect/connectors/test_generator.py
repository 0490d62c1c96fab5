import time

from josefk.connect.api.schema import Schema
from josefk.connect.connectors.generator import (DiscardSinkTask, GeneratorSourceConnector,
                                                 GeneratorSourceTask)
from tests.connect.connectors.test_file_stream import Offsets


class TaskOffsets(Offsets):
    def offset(self, partition):
        return self.stored.get(partition["task"])


def task(config, stored=None):
    t = GeneratorSourceTask()
    t.initialize(TaskOffsets(stored))
    t.start(config)
    return t


def test_the_messages_are_split_between_tasks():
    connector = GeneratorSourceConnector()
    connector.start({"topic": "t", "max.messages": "5", "throughput": "100"})
    configs = connector.task_configs(2)
    assert [c["max.messages"] for c in configs] == ["3", "2"]
    assert [c["throughput"] for c in configs] == ["50.0", "50.0"]
    assert [c["task.index"] for c in configs] == ["0", "1"]


def test_a_poll_is_a_batch_with_the_last_offset_and_stops_at_the_maximum():
    t = task({"task.index": "0", "topic": "t", "max.messages": "3", "message.size": "8",
              "key": "string"})
    batch = t.poll()
    assert batch.topic == "t" and batch.values == ["0xxxxxxx", "1xxxxxxx", "2xxxxxxx"]
    assert batch.keys == ["0", "1", "2"] and batch.key_schema == Schema.STRING_SCHEMA
    assert batch.offsets == [({"task": 0}, {"seq": 2})]
    assert batch.record(1).value == "1xxxxxxx"
    t.stop()
    assert t.poll() is None


def test_keyless_batches_have_no_key_schema():
    batch = task({"task.index": "0", "topic": "t", "max.messages": "2"}).poll()
    assert batch.keys is None and batch.key_schema is None


def test_records_have_their_size_key_and_offset_and_stop_at_the_maximum():
    t = task({"task.index": "0", "topic": "t", "max.messages": "3", "message.size": "8",
              "key": "string", "record.batch": "false"})
    records = t.poll()
    assert [r.value for r in records] == ["0xxxxxxx", "1xxxxxxx", "2xxxxxxx"]
    assert [r.key for r in records] == ["0", "1", "2"]
    assert records[2].source_offset == {"seq": 2} and records[2].source_partition == {"task": 0}
    t.stop()
    assert t.poll() is None


def test_a_restart_resumes_after_the_last_committed_record():
    t = task({"task.index": "1", "topic": "t", "max.messages": "10"}, {1: {"seq": 6}})
    assert t.poll().offsets == [({"task": 1}, {"seq": 9})]
    t.stop()
    assert t.poll() is None


def test_throughput_bounds_the_rate():
    t = task({"task.index": "0", "topic": "t", "throughput": "100"})
    deadline, count = time.monotonic() + 0.3, 0
    while time.monotonic() < deadline:
        count += len(t.poll() or [])
    assert 10 <= count <= 40
    t.stop()


def test_the_discarding_sink_counts():
    sink = DiscardSinkTask()
    sink.start({})
    sink.put([object()] * 3)
    assert sink.received == 3
