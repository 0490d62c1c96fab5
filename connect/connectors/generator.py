"""A generator source and a discarding sink for demos and benchmarks (like Kafka's MockSource
and Confluent's datagen): the source writes ``max.messages`` records (-1: without end) of
``message.size`` characters to ``topic``, at ``throughput`` records per second across its
tasks (-1: as fast as it can), keyed by their sequence number when ``key=string``; each task
resumes after its last committed record. A poll's records are one SourceRecordBatch (josefk's
columnar extension of Connect's API) unless ``record.batch=false``. The sink drops what it is
given."""
from __future__ import annotations

import threading
import time

from josefk.connect.api.config import ConfigDef, Importance, NonEmptyString, Range, ValidString
from josefk.connect.api.config import Type as T
from josefk.connect.api.connector import (ExactlyOnceSupport, SinkConnector, SinkTask,
                                          SourceConnector, SourceTask)
from josefk.connect.api.records import SourceRecord, SourceRecordBatch
from josefk.connect.api.schema import Schema

VERSION = "1.0"
BATCH = 1000


def generator_config() -> ConfigDef:
    return (ConfigDef()
            .define("topic", T.STRING, validator=NonEmptyString(), importance=Importance.HIGH,
                    documentation="The topic to write to")
            .define("max.messages", T.LONG, -1, importance=Importance.MEDIUM,
                    documentation="Records to write in all (-1: without end)")
            .define("message.size", T.INT, 100, Range.at_least(0), importance=Importance.MEDIUM,
                    documentation="Characters in each record's value")
            .define("throughput", T.LONG, -1, importance=Importance.MEDIUM,
                    documentation="Records per second, across the tasks (-1: as fast as "
                                  "possible)")
            .define("key", T.STRING, "none", ValidString.in_("none", "string"),
                    importance=Importance.LOW,
                    documentation="none: records without key; string: the sequence number")
            .define("record.batch", T.BOOLEAN, True, importance=Importance.LOW,
                    documentation="Return each poll's records as one SourceRecordBatch (a "
                                  "josefk extension), not a list of SourceRecords"))


class GeneratorSourceConnector(SourceConnector):
    def version(self) -> str:
        return VERSION

    def start(self, props: dict[str, str]) -> None:
        self.props = dict(props)
        self.values = generator_config().parse(props)

    def task_class(self):
        return GeneratorSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        total, rate = self.values["max.messages"], self.values["throughput"]
        configs = []
        for task in range(max_tasks):
            share = -1 if total < 0 else total // max_tasks + (task < total % max_tasks)
            config = {k: v for k, v in self.props.items() if k in generator_config().keys}
            config.update({"task.index": str(task), "max.messages": str(share),
                           "throughput": str(-1 if rate < 0 else rate / max_tasks)})
            configs.append(config)
        return configs

    def stop(self) -> None:
        """Nothing to release."""

    def config(self) -> ConfigDef:
        return generator_config()

    def exactly_once_support(self, connector_config) -> ExactlyOnceSupport:
        return ExactlyOnceSupport.SUPPORTED  # records are a function of their offsets

    def alter_offsets(self, connector_config, offsets) -> bool:
        return True


class GeneratorSourceTask(SourceTask):
    def version(self) -> str:
        return VERSION

    def start(self, props: dict[str, str]) -> None:
        self.index = int(props["task.index"])
        self.topic = props["topic"]
        self.max = int(props.get("max.messages", -1))
        self.size = int(props.get("message.size", 100))
        self.rate = float(props.get("throughput", -1))
        self.keyed = props.get("key", "none") == "string"
        self.batched = props.get("record.batch", "true").strip().lower() != "false"
        self.partition = {"task": self.index}
        stored = self.context.offset_storage_reader().offset(self.partition)
        self.next = stored["seq"] + 1 if stored else 0
        self.started, self.sent_since_start = time.monotonic(), 0
        self.stopped = threading.Event()

    def poll(self) -> list[SourceRecord] | SourceRecordBatch | None:
        count = BATCH if self.max < 0 else min(BATCH, self.max - self.next)
        if self.rate >= 0:
            allowed = int((time.monotonic() - self.started) * self.rate) - self.sent_since_start
            count = min(count, allowed)
        if count <= 0:
            self.stopped.wait(0.01 if self.max < 0 or self.next < self.max else 0.5)
            return None
        first, size = self.next, self.size
        self.next += count
        self.sent_since_start += count
        if self.batched:
            texts = [str(seq) for seq in range(first, first + count)]
            return SourceRecordBatch(
                self.topic, [text.ljust(size, "x") for text in texts],
                texts if self.keyed else None,
                key_schema=Schema.STRING_SCHEMA if self.keyed else None,
                value_schema=Schema.STRING_SCHEMA, offsets=[(self.partition,
                                                             {"seq": self.next - 1})])
        records = []
        for seq in range(first, first + count):
            text = str(seq)
            value = text.ljust(size, "x")  # the number, padded to message.size
            records.append(SourceRecord(
                self.partition, {"seq": seq}, self.topic, None,
                Schema.STRING_SCHEMA if self.keyed else None, text if self.keyed else None,
                Schema.STRING_SCHEMA, value))
        return records

    def stop(self) -> None:
        self.stopped.set()


class DiscardSinkConnector(SinkConnector):
    def version(self) -> str:
        return VERSION

    def start(self, props: dict[str, str]) -> None:
        self.props = dict(props)

    def task_class(self):
        return DiscardSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [{} for _ in range(max_tasks)]

    def stop(self) -> None:
        """Nothing to release."""

    def config(self) -> ConfigDef:
        return ConfigDef()

    def alter_offsets(self, connector_config, offsets) -> bool:
        return True


class DiscardSinkTask(SinkTask):
    """Counts what it is given (``received``) and keeps nothing."""

    def version(self) -> str:
        return VERSION

    def start(self, props: dict[str, str]) -> None:
        self.received = 0

    def put(self, records) -> None:
        self.received += len(records)

    def stop(self) -> None:
        """Nothing to release."""
