"""Connectors and tasks, as Connect's (``org.apache.kafka.connect.{connector,source,sink}``):
a connector is told its settings, declares them (``config``), says how many tasks with which
settings (``task_configs``) and names its task class; the worker runs each task on a thread of
its own. A source task's ``poll`` returns records (or None when it has nothing now); a sink
task's ``put`` is given records, and ``flush`` must make what it was given durable before the
worker commits the consumer offsets.

A connector is found through the ``josefk.connect.plugins`` entry-point group (its entry
point's value names the class), or by its dotted Python path in ``connector.class``."""
from __future__ import annotations

import enum
from typing import NamedTuple, Protocol

from josefk.connect.api.config import ConfigDef, ConfigValue
from josefk.connect.api.records import (RecordMetadata, SinkRecord, SourceRecord,
                                        SourceRecordBatch)


class TopicPartition(NamedTuple):
    topic: str
    partition: int


class ExactlyOnceSupport(enum.Enum):
    """A source connector's answer to ``exactly_once_support`` (KIP-618)."""
    SUPPORTED = "SUPPORTED"
    UNSUPPORTED = "UNSUPPORTED"


class ConnectorTransactionBoundaries(enum.Enum):
    """Whether a source connector can define its own transaction boundaries (KIP-618)."""
    SUPPORTED = "SUPPORTED"
    UNSUPPORTED = "UNSUPPORTED"


# ---- what the worker offers connectors and tasks ------------------------------------------

class ConnectorContext(Protocol):
    def request_task_reconfiguration(self) -> None:
        """Ask the worker to call ``task_configs`` again (the source's layout changed)."""

    def raise_error(self, error: Exception) -> None:
        """Fail the connector from one of its own threads."""


class OffsetStorageReader(Protocol):
    def offset(self, partition: dict) -> dict | None:
        """The last committed offset of one source partition, or None."""

    def offsets(self, partitions: list[dict]) -> list[dict | None]:
        """The last committed offset of each partition, in their order (None: none yet)."""


class TransactionContext(Protocol):
    """Given to source tasks whose connector defines its transaction boundaries
    (``transaction.boundary=connector``)."""

    def commit_transaction(self, record: SourceRecord | None = None) -> None:
        """Commit after the current batch, or after ``record`` once it is sent."""

    def abort_transaction(self, record: SourceRecord | None = None) -> None:
        """Abort after the current batch, or after ``record``: the records of the
        transaction so far (``record`` included) are dropped."""


class SourceTaskContext(Protocol):
    def configs(self) -> dict[str, str]: ...
    def offset_storage_reader(self) -> OffsetStorageReader: ...
    def transaction_context(self) -> TransactionContext | None: ...


class ErrantRecordReporter(Protocol):
    def report(self, record: SinkRecord, error: Exception) -> None:
        """Send a record the task could not handle to the dead letter queue (or fail the
        task, as ``errors.tolerance`` says)."""


class SinkTaskContext(Protocol):
    def configs(self) -> dict[str, str]: ...
    def offset(self, offsets: dict[TopicPartition, int]) -> None:
        """Rewind or skip: consume these partitions from these offsets."""
    def timeout(self, timeout_ms: int) -> None:
        """After a RetriableException from put, wait this long before calling it again."""
    def assignment(self) -> set[TopicPartition]: ...
    def pause(self, *partitions: TopicPartition) -> None: ...
    def resume(self, *partitions: TopicPartition) -> None: ...
    def request_commit(self) -> None: ...
    def errant_record_reporter(self) -> ErrantRecordReporter | None: ...


# ---- connectors --------------------------------------------------------------------------

class Connector:
    """Common to source and sink connectors. Subclasses set ``task_class`` (or override it)
    and implement ``start``, ``task_configs``, ``stop`` and ``config``."""

    context: ConnectorContext | None = None

    def version(self) -> str:
        return "unknown"

    def initialize(self, context: ConnectorContext, task_configs: list[dict] | None = None):
        self.context = context

    def start(self, props: dict[str, str]) -> None:
        raise NotImplementedError

    def reconfigure(self, props: dict[str, str]) -> None:
        self.stop()
        self.start(props)

    def task_class(self) -> type["Task"]:
        raise NotImplementedError

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def config(self) -> ConfigDef:
        return ConfigDef()

    def validate(self, connector_configs: dict[str, str]) -> dict[str, ConfigValue]:
        """Every setting's ConfigValue (Connect's ``validate``); connectors with checks across
        settings add errors here."""
        return self.config().validate(connector_configs)


class SourceConnector(Connector):
    def exactly_once_support(self, connector_config: dict[str, str]) -> ExactlyOnceSupport | None:
        """None: unknown (Connect treats it as UNSUPPORTED when exactly.once.support=required)."""
        return None

    def can_define_transaction_boundaries(
            self, connector_config: dict[str, str]) -> ConnectorTransactionBoundaries:
        return ConnectorTransactionBoundaries.UNSUPPORTED

    def alter_offsets(self, connector_config: dict[str, str], offsets: dict) -> bool:
        """KIP-875: asked before the worker alters or resets this connector's offsets
        (``offsets``: {partition key: offset or None}). False: the connector does not say it
        can, and the request fails; True: it can."""
        return False


class SinkConnector(Connector):
    TOPICS_CONFIG = "topics"

    def alter_offsets(self, connector_config: dict[str, str],
                      offsets: dict[TopicPartition, int | None]) -> bool:
        return False


# ---- tasks -------------------------------------------------------------------------------

class Task:
    def version(self) -> str:
        return "unknown"

    def start(self, props: dict[str, str]) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError


class SourceTask(Task):
    context: SourceTaskContext | None = None

    def initialize(self, context: SourceTaskContext) -> None:
        self.context = context

    def poll(self) -> list[SourceRecord] | SourceRecordBatch | None:
        """Records read from the source now (None or [] when there are none: the worker calls
        again), or (a josefk extension) a SourceRecordBatch of them as columns. It may block a
        little, not for long: ``stop`` is called from another thread."""
        raise NotImplementedError

    def commit(self) -> None:
        """The offsets of the records polled so far are committed."""

    def commit_record(self, record: SourceRecord, metadata: RecordMetadata | None) -> None:
        """``record`` was written to Kafka (``metadata``), or dropped by a transform or the
        error handling (None)."""

    def commit_rows(self, batch: SourceRecordBatch, offsets: list[int]) -> None:
        """Every row of ``batch`` (a josefk extension: ``poll`` returned it) was written or
        let go: ``offsets[i]`` is the Kafka offset row ``i`` was written at, -1 when a
        transform or the error handling dropped it. Called instead of ``commit_record``."""


class SinkTask(Task):
    context: SinkTaskContext | None = None

    def initialize(self, context: SinkTaskContext) -> None:
        self.context = context

    def put(self, records: list[SinkRecord]) -> None:
        raise NotImplementedError

    def flush(self, current_offsets: dict[TopicPartition, int]) -> None:
        """Make everything ``put`` so far durable (the offsets are the next to read)."""

    def pre_commit(self, current_offsets: dict[TopicPartition, int]) -> dict[TopicPartition, int]:
        """The offsets safe to commit; by default flush, then all of them."""
        self.flush(current_offsets)
        return current_offsets

    def open(self, partitions: list[TopicPartition]) -> None:
        """These partitions are now assigned to the task."""

    def close(self, partitions: list[TopicPartition]) -> None:
        """These partitions are taken from the task: write out their buffers."""
