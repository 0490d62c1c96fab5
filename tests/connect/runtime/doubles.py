"""Test doubles of plug-ins for failures the real ones do not make on demand: a converter
that fails retriably a few times, a sink task whose put does, one that reports a record to
its errant record reporter, a source whose poll blocks until stopped, one that commits
and aborts its own transactions, and one whose poll returns a SourceRecordBatch."""
from __future__ import annotations

import threading

from josefk.connect.api.connector import ConnectorTransactionBoundaries, SourceTask
from josefk.connect.api.errors import ConnectException, DataException, RetriableException
from josefk.connect.connectors.file_stream import FileStreamSinkConnector, FileStreamSinkTask
from josefk.connect.api.records import SourceRecord, SourceRecordBatch
from josefk.connect.api.schema import Schema
from josefk.connect.connectors.generator import GeneratorSourceConnector, GeneratorSourceTask
from josefk.connect.converters.simple import StringConverter


class FlakyConverter(StringConverter):
    """A StringConverter failing retriably the first ``failures`` calls of the whole test
    (class-wide), as a registry-backed converter whose registry is unreachable for a while."""
    failures = 0

    def to_connect_data(self, topic, value, headers=None):
        if FlakyConverter.failures > 0:
            FlakyConverter.failures -= 1
            raise RetriableException("the schema store is unreachable for now")
        return super().to_connect_data(topic, value, headers)


class FlakySinkTask(FileStreamSinkTask):
    """FileStreamSink whose put fails retriably ``failures`` times (class-wide) first."""
    failures = 0
    attempts = 0

    def put(self, records):
        FlakySinkTask.attempts += 1
        if FlakySinkTask.failures > 0:
            FlakySinkTask.failures -= 1
            self.context.timeout(100)
            raise RetriableException("the file system is busy")
        super().put(records)


class FlakySinkConnector(FileStreamSinkConnector):
    def task_class(self):
        return FlakySinkTask


class ReportingSinkTask(FileStreamSinkTask):
    """FileStreamSink that sends the value ``bad`` to its errant record reporter (KIP-610)
    and asks for a commit after each batch."""

    def put(self, records):
        reporter = self.context.errant_record_reporter()
        good = []
        for record in records:
            if record.value == "bad":
                reporter.report(record, DataException("a bad value"))
            else:
                good.append(record)
        super().put(good)
        self.context.request_commit()


class ReportingSinkConnector(FileStreamSinkConnector):
    def task_class(self):
        return ReportingSinkTask


class BlockingSourceTask(SourceTask):
    """A source whose poll blocks until ``stop`` (from another thread) wakes it."""

    def start(self, props):
        self.stopped = threading.Event()

    def poll(self):
        self.stopped.wait(60)
        raise ConnectException("the source's connection was closed")  # as a closed socket

    def stop(self):
        self.stopped.set()


class BlockingSourceConnector(GeneratorSourceConnector):
    def task_class(self):
        return BlockingSourceTask


class HeaderSinkTask(FileStreamSinkTask):
    """FileStreamSink writing each record's headers after its value (``v h=x,g=y``)."""

    def put(self, records):
        self.out.write("".join(f"{r.value} " + ",".join(f"{h.key}={h.value}" for h in r.headers)
                               + "\n" for r in records))


class HeaderSinkConnector(FileStreamSinkConnector):
    def task_class(self):
        return HeaderSinkTask


PLUGINS = {"converter": {"tests.FlakyConverter": FlakyConverter},
           "connector": {"tests.FlakySinkConnector": FlakySinkConnector,
                         "tests.ReportingSinkConnector": ReportingSinkConnector,
                         "tests.HeaderSinkConnector": HeaderSinkConnector,
                         "tests.BlockingSourceConnector": BlockingSourceConnector}}


class RewindingSinkTask(FileStreamSinkTask):
    """FileStreamSink that, after its first batch, rewinds its partitions to offset 0 once
    (SinkTaskContext.offset) and pauses then resumes them."""
    rewound = False

    def put(self, records):
        super().put(records)
        if records and not RewindingSinkTask.rewound:
            RewindingSinkTask.rewound = True
            partitions = self.context.assignment()
            self.context.pause(*partitions)
            self.context.resume(*partitions)
            self.context.offset({tp: 0 for tp in partitions})


class RewindingSinkConnector(FileStreamSinkConnector):
    def task_class(self):
        return RewindingSinkTask


PLUGINS["connector"]["tests.RewindingSinkConnector"] = RewindingSinkConnector


class ClosingSinkTask(FileStreamSinkTask):
    """FileStreamSink that records the partitions opened and closed (class-wide)."""
    calls: list = []

    def open(self, partitions):
        ClosingSinkTask.calls.append(("open", sorted(partitions)))

    def close(self, partitions):
        ClosingSinkTask.calls.append(("close", sorted(partitions)))


class ClosingSinkConnector(FileStreamSinkConnector):
    def task_class(self):
        return ClosingSinkTask


PLUGINS["connector"]["tests.ClosingSinkConnector"] = ClosingSinkConnector


class BoundarySourceTask(GeneratorSourceTask):
    """A generator whose batches of 5 are committed (even batches) or aborted (odd ones) by
    the connector itself (transaction.boundary=connector)."""

    def poll(self):
        if self.next >= self.max:
            self.stopped.wait(0.2)
            return None
        records = [self._record(seq) for seq in range(self.next, min(self.next + 5, self.max))]
        self.next += len(records)
        transactions = self.context.transaction_context()
        if (self.next - 1) // 5 % 2 == 0:
            transactions.commit_transaction()
        else:
            transactions.abort_transaction()
        return records

    def _record(self, seq):
        return SourceRecord(self.partition, {"seq": seq}, self.topic, None,
                            Schema.STRING_SCHEMA, str(seq), Schema.STRING_SCHEMA, str(seq))


class BoundarySourceConnector(GeneratorSourceConnector):
    def task_class(self):
        return BoundarySourceTask

    def can_define_transaction_boundaries(self, connector_config):
        return ConnectorTransactionBoundaries.SUPPORTED


PLUGINS["connector"]["tests.BoundarySourceConnector"] = BoundarySourceConnector


class PickyConverter(StringConverter):
    """A StringConverter that cannot write the value "1" (nor b"1")."""

    def from_connect_data(self, topic, schema, value, headers=None):
        if value in ("1", b"1"):
            raise DataException("the value 1 cannot be written")
        return super().from_connect_data(topic, schema, value, headers)


class CommitRecordingSourceTask(GeneratorSourceTask):
    """The generator source that keeps what commit_record was told (class-wide):
    (the record's value, the written offset or None)."""
    committed: list = []

    def start(self, props):
        super().start({**props, "record.batch": "false"})  # commit_record: records, not rows

    def commit_record(self, record, metadata):
        CommitRecordingSourceTask.committed.append(
            (record.value, None if metadata is None else metadata.offset))


class CommitRecordingSourceConnector(GeneratorSourceConnector):
    def task_class(self):
        return CommitRecordingSourceTask


PLUGINS["converter"]["tests.PickyConverter"] = PickyConverter
PLUGINS["connector"]["tests.CommitRecordingSourceConnector"] = CommitRecordingSourceConnector


class RowsSourceTask(SourceTask):
    """One SourceRecordBatch of ``max.messages`` rows, to partition 0: value ``b"<i>"``, key
    ``b"k<i>"``, timestamp 1000 + i, a header ``h`` on even rows; what ``commit_rows`` was
    told is kept class-wide."""
    committed: list = []

    def start(self, props):
        self.topic, self.count, self.polled = props["topic"], int(props["max.messages"]), False
        self.stopped = threading.Event()

    def poll(self):
        if self.polled:
            self.stopped.wait(0.05)
            return None
        self.polled, n = True, self.count
        return SourceRecordBatch(
            self.topic, [str(i).encode() for i in range(n)], [f"k{i}".encode() for i in range(n)],
            partitions=[0] * n, timestamps=[1000 + i for i in range(n)],
            headers=[[("h", str(i).encode())] if i % 2 == 0 else None for i in range(n)],
            offsets=[({"rows": 0}, {"row": n - 1})])

    def commit_rows(self, batch, offsets):
        RowsSourceTask.committed.append(list(offsets))

    def stop(self):
        self.stopped.set()

    def version(self):
        return "1"


class RowsSourceConnector(GeneratorSourceConnector):
    def task_class(self):
        return RowsSourceTask


PLUGINS["connector"]["tests.RowsSourceConnector"] = RowsSourceConnector
