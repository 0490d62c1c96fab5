"""The written interfaces between the worker's parts: what a herder asks of the ``Worker``
(which runs connectors and tasks), where the worker reports their states (``StatusListener``),
and where source offsets live (``OffsetStore``). Both herders and both offset stores (the
offsets topic; standalone's local file) meet here."""
from __future__ import annotations

import enum
from typing import Callable, NamedTuple, Protocol


class ConnectorTaskId(NamedTuple):
    connector: str
    task: int

    def __str__(self):
        return f"{self.connector}-{self.task}"


class TargetState(enum.Enum):
    """What the user asked a connector to be (Connect's TargetState; STOPPED is KIP-875's)."""
    STARTED = "STARTED"
    PAUSED = "PAUSED"
    STOPPED = "STOPPED"


class State(enum.Enum):
    """What a connector or task is (the statuses' ``state``)."""
    UNASSIGNED = "UNASSIGNED"
    RUNNING = "RUNNING"
    PAUSED = "PAUSED"
    STOPPED = "STOPPED"
    FAILED = "FAILED"
    RESTARTING = "RESTARTING"
    DESTROYED = "DESTROYED"


class StatusListener(Protocol):
    """Told of every state change of a connector (``id`` its name) or a task (a
    ConnectorTaskId), from the thread it happened on. The herder keeps them (standalone: in
    memory; distributed: in the status topic, under this worker's id and generation)."""

    def on_startup(self, id: str | ConnectorTaskId) -> None: ...
    def on_running(self, id: str | ConnectorTaskId) -> None: ...
    def on_pause(self, id: str | ConnectorTaskId) -> None: ...
    def on_stop(self, id: str | ConnectorTaskId) -> None: ...
    def on_failure(self, id: str | ConnectorTaskId, trace: str) -> None: ...
    def on_shutdown(self, id: str | ConnectorTaskId) -> None: ...
    def on_restart(self, id: str | ConnectorTaskId) -> None: ...
    def on_deletion(self, id: str | ConnectorTaskId) -> None: ...
    def on_topic_used(self, id: ConnectorTaskId, topic: str) -> None:
        """KIP-558: the task produced to or consumed from ``topic`` for the first time."""


class OffsetStore(Protocol):
    """Source connectors' offsets: per connector, {source partition: source offset}, both
    maps of JSON values (Kafka's OffsetBackingStore with its reader and writer)."""

    def get(self, connector: str, partitions: list[dict]) -> list[dict | None]:
        """The last stored offset of each partition, in their order (None: none)."""

    def put(self, connector: str, offsets: list[tuple[dict, dict | None]]) -> None:
        """Store these offsets (None removes the partition's) and return once durable."""

    def all(self, connector: str) -> list[tuple[dict, dict]]:
        """Every partition of the connector that has an offset (KIP-875's GET offsets)."""

    def records(self, connector: str,
                offsets: list[tuple[dict, dict | None]]) -> list[tuple[bytes, bytes | None]]:
        """The (key, value) records ``put`` would write to the offsets topic, in Kafka's
        layout, for a transactional producer to write itself (KIP-618)."""

    topic: str | None
    """The offsets topic (None for a file store)."""


class Worker(Protocol):
    """What a herder asks of the worker. Connectors and tasks run on threads of their own;
    these calls return once the thread is started (or stopped)."""

    worker_id: str

    def start_connector(self, name: str, props: dict[str, str], target: TargetState,
                        on_reconfigure: Callable[[], None]) -> None:
        """Start the connector (its ``start``, on its thread) in ``target`` state;
        ``on_reconfigure`` is called when it asks for its task configs to be taken again."""

    def connector_task_configs(self, name: str, props: dict[str, str]) -> list[dict[str, str]]:
        """The running connector's ``task_configs(tasks.max)``, each with ``task.class``
        added as Connect adds it."""

    def set_target_state(self, name: str, target: TargetState) -> None:
        """Pause, resume or stop a running connector and its tasks."""

    def stop_connectors(self, names: list[str]) -> None:
        """Stop them (their ``stop``) and wait for their threads."""

    def start_task(self, id: ConnectorTaskId, connector_props: dict[str, str],
                   task_props: dict[str, str], target: TargetState) -> bool:
        """Build the task (converters, transforms, clients) and start its thread; False (and
        FAILED reported) if it cannot be built."""

    def stop_tasks(self, ids: list[ConnectorTaskId]) -> None:
        """Stop them and wait up to ``task.shutdown.graceful.timeout.ms`` for their threads
        (a sink commits its offsets, a source its offsets, on the way out)."""

    def connector_names(self) -> list[str]: ...

    def task_ids(self) -> list[ConnectorTaskId]: ...

    def is_sink(self, connector_props: dict[str, str]) -> bool: ...

    def stop(self) -> None:
        """Stop every connector and task."""


class Status(NamedTuple):
    """One connector's or task's status record (the status topic's value, Kafka's layout:
    ``{"state","trace","worker_id","generation"}``)."""
    state: State
    trace: str | None
    worker_id: str
    generation: int


class StatusStore(Protocol):
    """Statuses of connectors and tasks, and the topics connectors used (KIP-558): in memory
    for a standalone worker, the status topic for a distributed one (where a write from an
    older generation than the stored one does not replace it, as Kafka's)."""

    def put(self, id: str | ConnectorTaskId, status: Status) -> None: ...
    def put_safe(self, id: str | ConnectorTaskId, status: Status) -> None:
        """``put`` unless a newer generation's status is stored (Kafka's putSafe)."""
    def get(self, id: str | ConnectorTaskId) -> Status | None: ...
    def tasks(self, connector: str) -> dict[int, Status]: ...
    def delete(self, id: str | ConnectorTaskId) -> None: ...
    def put_topic(self, connector: str, topic: str, task: int, discovered_ms: int) -> None: ...
    def topics(self, connector: str) -> list[str]: ...
    def delete_topics(self, connector: str) -> None: ...
