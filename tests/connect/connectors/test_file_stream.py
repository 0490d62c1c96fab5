import pytest

from josefk.connect.api.errors import ConnectException
from josefk.connect.api.records import SinkRecord
from josefk.connect.connectors.file_stream import (FileStreamSinkConnector, FileStreamSinkTask,
                                                   FileStreamSourceConnector,
                                                   FileStreamSourceTask)


class Offsets:
    """The task's OffsetStorageReader and context (a seam double)."""

    def __init__(self, stored=None):
        self.stored = stored or {}

    def offset(self, partition):
        return self.stored.get(partition["filename"])

    def offsets(self, partitions):
        return [self.offset(p) for p in partitions]

    def offset_storage_reader(self):
        return self

    def configs(self):
        return {}

    def transaction_context(self):
        return None


def source_task(path, stored=None, batch=2000):
    task = FileStreamSourceTask()
    task.initialize(Offsets(stored))
    task.start({"file": str(path), "topic": "t", "batch.size": str(batch)})
    return task


def test_lines_become_records_with_byte_positions(tmp_path):
    path = tmp_path / "in.txt"
    path.write_bytes("één\r\ntwo\nthr".encode())
    task = source_task(path)
    records = task.poll()
    assert [r.value for r in records] == ["één", "two"]
    assert [r.source_offset for r in records] == [{"position": 7}, {"position": 11}]
    assert records[0].source_partition == {"filename": str(path)}
    assert records[0].topic == "t" and records[0].value_schema.type.name == "STRING"
    with path.open("ab") as f:
        f.write(b"ee\n")
    [third] = task.poll()
    assert (third.value, third.source_offset) == ("three", {"position": 17})
    task.stop()


def test_a_stored_offset_resumes_and_batch_size_bounds_a_poll(tmp_path):
    path = tmp_path / "in.txt"
    path.write_text("a\nb\nc\nd\n")
    task = source_task(path, {str(path): {"position": 2}}, batch=2)
    assert [r.value for r in task.poll()] == ["b", "c"]
    assert [r.value for r in task.poll()] == ["d"]
    task.stop()


def test_a_missing_file_is_waited_for(tmp_path):
    task = source_task(tmp_path / "later.txt")
    task.stop()  # the wait ends at once
    assert task.poll() is None


def test_one_source_task_whatever_tasks_max():
    connector = FileStreamSourceConnector()
    connector.start({"file": "/f", "topic": "t"})
    assert connector.task_configs(4) == [{"topic": "t", "batch.size": "2000", "file": "/f"}]
    assert connector.exactly_once_support({"file": "/f"}).value == "SUPPORTED"
    assert connector.exactly_once_support({}).value == "UNSUPPORTED"


def test_source_offsets_alterations_are_checked_as_kafkas():
    connector = FileStreamSourceConnector()
    config = {"file": "/f", "topic": "t"}
    assert connector.alter_offsets(config, {}) is True
    with pytest.raises(ConnectException, match="stdin is used for input"):
        connector.alter_offsets({"topic": "t"}, {})
    with pytest.raises(ConnectException, match="contain the key 'position'"):
        connector.alter_offsets(config, {"k": {"pos": 1}})
    with pytest.raises(ConnectException, match="expected to be a Long value"):
        connector.alter_offsets(config, {"k": {"position": "1"}})
    with pytest.raises(ConnectException, match="non-negative"):
        connector.alter_offsets(config, {"k": {"position": -1}})


def test_the_sink_writes_one_line_per_value_and_flushes(tmp_path):
    path = tmp_path / "out.txt"
    connector = FileStreamSinkConnector()
    connector.start({"file": str(path), "topics": "t"})
    assert connector.task_configs(2) == [{"file": str(path)}, {"file": str(path)}]
    task = FileStreamSinkTask()
    task.start({"file": str(path)})
    task.put([SinkRecord("t", 0, None, None, None, v, i) for i, v in enumerate(["a", None, 3])])
    task.flush({})
    assert path.read_text() == "a\nnull\n3\n"
    task.stop()
