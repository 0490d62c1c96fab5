"""Connector and task statuses, and the topics connectors used (KIP-558), in the status topic
(Kafka Connect's KafkaStatusBackingStore), in Kafka's layout:

    status-connector-<name>              {"state":"RUNNING","trace":null,"worker_id":"h:p","generation":3}
    status-task-<name>-<n>               the same
    status-topic-<topic>:connector-<name>  {"topic":{"name","connector","task","discoverTimestamp"}}

A deleted connector's or task's status (state DESTROYED) is a tombstone. ``put_safe`` writes
only when no other worker's status of a newer generation is known (Kafka's putSafe)."""
from __future__ import annotations

import json
import logging

from josefk.connect.runtime.kafka_log import TopicBackedStore, to_json
from josefk.connect.runtime.seams import ConnectorTaskId, State, Status

log = logging.getLogger("josefk.connect.status_store")

CONNECTOR_PREFIX, TASK_PREFIX = "status-connector-", "status-task-"
TOPIC_PREFIX, TOPIC_CONNECTOR = "status-topic-", ":connector-"


def status_key(id: str | ConnectorTaskId) -> bytes:
    if isinstance(id, ConnectorTaskId):
        return f"{TASK_PREFIX}{id.connector}-{id.task}".encode()
    return (CONNECTOR_PREFIX + id).encode()


def status_value(status: Status) -> bytes | None:
    if status.state is State.DESTROYED:
        return None
    return to_json({"state": status.state.value, "trace": status.trace,
                    "worker_id": status.worker_id, "generation": status.generation})


def topic_key(connector: str, topic: str) -> bytes:
    return f"{TOPIC_PREFIX}{topic}{TOPIC_CONNECTOR}{connector}".encode()


def topic_value(connector: str, topic: str, task: int, discovered_ms: int) -> bytes:
    return to_json({"topic": {"name": topic, "connector": connector, "task": task,
                              "discoverTimestamp": discovered_ms}})


class StatusState:
    """The status topic's records applied in order (the reading half of the store)."""

    def __init__(self):
        self.connectors: dict[str, Status] = {}
        self.tasks: dict[str, dict[int, Status]] = {}
        self.topics: dict[str, set[str]] = {}

    def apply(self, key: bytes | None, value: bytes | None) -> None:
        text = (key or b"").decode("utf-8", "replace")
        try:
            self._apply(text, None if value is None else json.loads(value))
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            log.error("Discarding status record with key %r: %s", text, e)

    def _apply(self, key: str, data) -> None:
        if key.startswith(CONNECTOR_PREFIX):
            name = key[len(CONNECTOR_PREFIX):]
            if data is None:
                self.connectors.pop(name, None)
            else:
                self.connectors[name] = _status(data)
        elif key.startswith(TASK_PREFIX):
            name, _, number = key[len(TASK_PREFIX):].rpartition("-")
            if not name:
                raise ValueError("no task id")
            if data is None:
                self.tasks.get(name, {}).pop(int(number), None)
            else:
                self.tasks.setdefault(name, {})[int(number)] = _status(data)
        elif key.startswith(TOPIC_PREFIX):
            topic, sep, connector = key[len(TOPIC_PREFIX):].partition(TOPIC_CONNECTOR)
            if not sep:
                raise ValueError("no connector")
            if data is None:
                self.topics.get(connector, set()).discard(topic)
            else:
                self.topics.setdefault(connector, set()).add(data["topic"]["name"])
        else:
            raise ValueError("unknown key")

    def get(self, id: str | ConnectorTaskId) -> Status | None:
        if isinstance(id, ConnectorTaskId):
            return self.tasks.get(id.connector, {}).get(id.task)
        return self.connectors.get(id)


def _status(data: dict) -> Status:
    return Status(State(data["state"]), data.get("trace"), data["worker_id"],
                  int(data["generation"]))


class KafkaStatusStore(TopicBackedStore):
    """The StatusStore seam on ``status.storage.topic``. Writes are applied to the cache at
    once (a worker reads back its own statuses without waiting for the topic) and appended;
    other workers' statuses come from reading the topic."""

    def __init__(self, config):
        super().__init__(StatusState(), config, "status.storage.topic",
                         "connector and task statuses", config["status.storage.partitions"],
                         "statuses")

    def refresh(self, timeout: float = 30.0) -> None:
        self.log.read_to_end(timeout)

    def _send(self, key: bytes, value: bytes | None) -> None:
        with self._lock:
            self._state.apply(key, value)
        self.log.send(key, value)

    def put(self, id: str | ConnectorTaskId, status: Status) -> None:
        self._send(status_key(id), status_value(status))

    def put_safe(self, id: str | ConnectorTaskId, status: Status) -> None:
        with self._lock:
            stored = self._state.get(id)
        if (stored is not None and stored.worker_id != status.worker_id
                and stored.generation > status.generation):
            log.debug("Not writing status of %s: generation %d of %s is newer than %d", id,
                      stored.generation, stored.worker_id, status.generation)
            return
        self.put(id, status)

    def get(self, id: str | ConnectorTaskId) -> Status | None:
        with self._lock:
            return self._state.get(id)

    def tasks(self, connector: str) -> dict[int, Status]:
        with self._lock:
            return dict(self._state.tasks.get(connector, {}))

    def delete(self, id: str | ConnectorTaskId) -> None:
        self._send(status_key(id), None)

    def put_topic(self, connector: str, topic: str, task: int, discovered_ms: int) -> None:
        with self._lock:
            if topic in self._state.topics.get(connector, ()):
                return
        self._send(topic_key(connector, topic),
                   topic_value(connector, topic, task, discovered_ms))

    def topics(self, connector: str) -> list[str]:
        with self._lock:
            return sorted(self._state.topics.get(connector, ()))

    def delete_topics(self, connector: str) -> None:
        for topic in self.topics(connector):
            self._send(topic_key(connector, topic), None)
        self.log.flush()
