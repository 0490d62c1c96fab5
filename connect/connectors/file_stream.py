"""Kafka's FileStreamSource and FileStreamSink connectors, with their names and settings:
the source reads a file's lines (standard input without ``file``) into ``topic``, at most
``batch.size`` per poll, its partition ``{"filename": <file>}`` and offset
``{"position": <byte offset after the line>}`` so a restart resumes where it stopped; the sink
writes each record's value as a line to ``file`` (standard output without it)."""
from __future__ import annotations

import logging
import os
import sys
import threading
import time

from josefk.connect.api.config import ConfigDef, Importance, NonEmptyString
from josefk.connect.api.config import Type as T
from josefk.connect.api.connector import (ExactlyOnceSupport, SinkConnector, SinkTask,
                                          SourceConnector, SourceTask)
from josefk.connect.api.errors import ConnectException
from josefk.connect.api.records import SourceRecord
from josefk.connect.api.schema import Schema

log = logging.getLogger("josefk.connect.file")

VERSION = "3.6.0"
FILENAME_FIELD = "filename"
POSITION_FIELD = "position"


def source_config() -> ConfigDef:
    return (ConfigDef()
            .define("file", T.STRING, None, importance=Importance.HIGH,
                    documentation="Source filename. If not specified, the standard input "
                                  "will be used")
            .define("topic", T.STRING, validator=NonEmptyString(), importance=Importance.HIGH,
                    documentation="The topic to publish data to")
            .define("batch.size", T.INT, 2000, importance=Importance.LOW,
                    documentation="The maximum number of records the source task can read "
                                  "from the file each time it is polled"))


def sink_config() -> ConfigDef:
    return ConfigDef().define("file", T.STRING, None, importance=Importance.HIGH,
                              documentation="Destination filename. If not specified, the "
                                            "standard output will be used")


class FileStreamSourceConnector(SourceConnector):
    """One task, whatever ``tasks.max``: one input stream."""

    def version(self) -> str:
        return VERSION

    def start(self, props: dict[str, str]) -> None:
        self.props = dict(props)
        self.values = source_config().parse(props)

    def task_class(self):
        return FileStreamSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        config = {"topic": self.values["topic"], "batch.size": str(self.values["batch.size"])}
        if self.values["file"] is not None:
            config["file"] = self.values["file"]
        return [config]

    def stop(self) -> None:
        """Nothing to release: the task holds the file."""

    def config(self) -> ConfigDef:
        return source_config()

    def exactly_once_support(self, connector_config: dict[str, str]) -> ExactlyOnceSupport:
        # A file appended to can be read exactly once; stdin keeps no offsets.
        return (ExactlyOnceSupport.SUPPORTED if connector_config.get("file")
                else ExactlyOnceSupport.UNSUPPORTED)

    def alter_offsets(self, connector_config: dict[str, str], offsets: dict) -> bool:
        if not connector_config.get("file"):
            raise ConnectException("Offsets cannot be modified if the 'file' configuration is "
                                   "unspecified. This is because stdin is used for input and "
                                   "offsets are not tracked.")
        for partition, offset in offsets.items():
            if offset is None:
                continue  # tombstones clean up anything
            if POSITION_FIELD not in offset:
                raise ConnectException("Offset objects should either be null or contain the "
                                       "key 'position'")
            position = offset[POSITION_FIELD]
            if not isinstance(position, int) or isinstance(position, bool):
                raise ConnectException("The value for the 'position' key in the offset is "
                                       "expected to be a Long value")
            if position < 0:
                raise ConnectException("The value for the 'position' key in the offset should "
                                       "be a non-negative value")
            if partition is None:
                raise ConnectException("Partition objects cannot be null")
            if FILENAME_FIELD not in partition:
                raise ConnectException("Partition objects should contain the key 'filename'")
        return True


class FileStreamSourceTask(SourceTask):
    def version(self) -> str:
        return VERSION

    def start(self, props: dict[str, str]) -> None:
        values = source_config().parse(props)
        self.filename, self.topic = values["file"], values["topic"]
        self.batch_size = values["batch.size"]
        self.stream = None
        self.position = 0
        self.buffer = b""
        self._stopped = threading.Event()

    def _open(self) -> bool:
        if not self.filename:
            self.stream = sys.stdin.buffer
            return True
        try:
            self.stream = open(self.filename, "rb")
        except FileNotFoundError:
            log.warning("Couldn't find file %s for FileStreamSourceTask, sleeping to wait for "
                        "it to be created", self.filename)
            self._stopped.wait(1)
            return False
        stored = self.context.offset_storage_reader().offset({FILENAME_FIELD: self.filename})
        if stored is not None:
            position = stored.get(POSITION_FIELD)
            if not isinstance(position, int) or position < 0:
                raise ConnectException(f"Offset position is the incorrect type or negative: "
                                       f"{position!r}")
            self.stream.seek(position)
            self.position = position
            log.debug("Found previous offset, trying to skip to file offset %d", position)
        return True

    def poll(self) -> list[SourceRecord] | None:
        if self.stream is None and not self._open():
            return None
        records: list[SourceRecord] = []
        while len(records) < self.batch_size:
            line_end = self.buffer.find(b"\n")
            if line_end < 0:
                chunk = (self.stream.read1(65536) if hasattr(self.stream, "read1")
                         else self.stream.read(65536))
                if not chunk:
                    break
                self.buffer += chunk
                continue
            raw, self.buffer = self.buffer[:line_end], self.buffer[line_end + 1:]
            self.position += line_end + 1
            line = raw[:-1] if raw.endswith(b"\r") else raw
            records.append(self._record(line.decode("utf-8", errors="replace")))
        if not records:
            self._stopped.wait(1)
            return None
        return records

    def _record(self, line: str) -> SourceRecord:
        partition = {FILENAME_FIELD: self.filename} if self.filename else None
        offset = {POSITION_FIELD: self.position} if self.filename else None
        return SourceRecord(partition, offset, self.topic, None, None, None,
                            Schema.STRING_SCHEMA, line, int(time.time() * 1000))

    def stop(self) -> None:
        self._stopped.set()
        if self.stream is not None and self.filename:
            self.stream.close()


class FileStreamSinkConnector(SinkConnector):
    def version(self) -> str:
        return VERSION

    def start(self, props: dict[str, str]) -> None:
        self.props = dict(props)
        self.values = sink_config().parse(props)

    def task_class(self):
        return FileStreamSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        config = {} if self.values["file"] is None else {"file": self.values["file"]}
        return [dict(config) for _ in range(max_tasks)]

    def stop(self) -> None:
        """Nothing to release: each task holds its file."""

    def config(self) -> ConfigDef:
        return sink_config()

    def alter_offsets(self, connector_config, offsets) -> bool:
        return True  # its offsets are Kafka's consumer offsets alone


def _text(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)


class FileStreamSinkTask(SinkTask):
    def version(self) -> str:
        return VERSION

    def start(self, props: dict[str, str]) -> None:
        self.filename = sink_config().parse(props)["file"]
        self.out = (open(self.filename, "a", encoding="utf-8") if self.filename
                    else sys.stdout)

    def put(self, records) -> None:
        self.out.write("".join(_text(r.value) + "\n" for r in records))

    def flush(self, current_offsets) -> None:
        self.out.flush()
        if self.filename:
            os.fsync(self.out.fileno())

    def stop(self) -> None:
        if self.filename and not self.out.closed:
            self.out.close()
