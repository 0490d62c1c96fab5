"""Connector configs, task configs, target states, session keys, restart requests and task
counts in the config topic (Kafka Connect's KafkaConfigBackingStore), in Kafka's layout:

    connector-<name>         {"properties":{...}}            null: the connector is deleted
    task-<name>-<n>          {"properties":{...}}
    commit-<name>            {"tasks":<count>}               applies the task configs before it
    target-state-<name>      {"state":"PAUSED","state.v2":"STOPPED"}
    session-key              {"key":"<base64>","algorithm":"HmacSHA256","creation-timestamp":<ms>}
    restart-connector-<name> {"include-tasks":<bool>,"only-failed":<bool>}   (KIP-745)
    task-count-record-<name> {"task-count":<n>}                            (KIP-618)
    logger-cluster-<namespace> {"level":"DEBUG"}                           (KIP-976)

Task configs are applied only once their commit record is read, and only if every task id
below its count has a config since the previous commit (otherwise the connector is
inconsistent until the next commit), as Kafka does."""
from __future__ import annotations

import base64
import json
import logging
import threading
from dataclasses import dataclass, field
from typing import Protocol

from josefk.connect.api.config import ConfigException
from josefk.connect.runtime.kafka_log import to_json, worker_log
from josefk.connect.runtime.seams import ConnectorTaskId, TargetState

log = logging.getLogger("josefk.connect.config_store")

CONNECTOR_PREFIX, TASK_PREFIX, COMMIT_PREFIX = "connector-", "task-", "commit-"
TARGET_STATE_PREFIX, RESTART_PREFIX = "target-state-", "restart-connector-"
TASK_COUNT_PREFIX, SESSION_KEY = "task-count-record-", "session-key"
LOGGER_PREFIX = "logger-cluster-"
READ_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class SessionKey:
    key: bytes
    algorithm: str
    creation_timestamp: int


@dataclass(frozen=True)
class RestartRequest:
    connector: str
    include_tasks: bool
    only_failed: bool


@dataclass
class ClusterConfigState:
    """A snapshot of the config topic (Kafka's ClusterConfigState): ``offset`` is the position
    in the topic it reflects."""
    offset: int = -1
    session_key: SessionKey | None = None
    connector_configs: dict[str, dict[str, str]] = field(default_factory=dict)
    target_states: dict[str, TargetState] = field(default_factory=dict)
    task_configs: dict[ConnectorTaskId, dict[str, str]] = field(default_factory=dict)
    task_counts: dict[str, int] = field(default_factory=dict)
    task_count_records: dict[str, int] = field(default_factory=dict)
    inconsistent: set[str] = field(default_factory=set)
    # KIP-618: connectors whose task configs were committed after their last task-count record
    pending_fencing: set[str] = field(default_factory=set)

    def connectors(self) -> list[str]:
        return sorted(self.connector_configs)

    def target_state(self, connector: str) -> TargetState:
        return self.target_states.get(connector, TargetState.STARTED)

    def tasks(self, connector: str) -> list[ConnectorTaskId]:
        if connector in self.inconsistent:
            return []
        return [ConnectorTaskId(connector, i) for i in range(self.task_counts.get(connector, 0))]

    def task_config(self, id: ConnectorTaskId) -> dict[str, str] | None:
        return self.task_configs.get(id)

    def copy(self) -> ClusterConfigState:
        return ClusterConfigState(self.offset, self.session_key, dict(self.connector_configs),
                                  dict(self.target_states), dict(self.task_configs),
                                  dict(self.task_counts), dict(self.task_count_records),
                                  set(self.inconsistent), set(self.pending_fencing))


class ConfigUpdateListener(Protocol):
    """Told (on the store's reading thread) of every change read from the topic."""

    def on_connector_config_update(self, connector: str) -> None: ...
    def on_connector_config_remove(self, connector: str) -> None: ...
    def on_task_config_update(self, tasks: list[ConnectorTaskId]) -> None: ...
    def on_connector_target_state_change(self, connector: str) -> None: ...
    def on_session_key_update(self, key: SessionKey) -> None: ...
    def on_restart_request(self, request: RestartRequest) -> None: ...
    def on_logging_level_update(self, namespace: str, level: str) -> None: ...


def connector_record(name: str, props: dict[str, str] | None) -> tuple[bytes, bytes | None]:
    return (CONNECTOR_PREFIX + name).encode(), (
        None if props is None else to_json({"properties": props}))


def task_record(id: ConnectorTaskId, props: dict[str, str]) -> tuple[bytes, bytes]:
    return f"{TASK_PREFIX}{id.connector}-{id.task}".encode(), to_json({"properties": props})


def commit_record(connector: str, count: int) -> tuple[bytes, bytes]:
    return (COMMIT_PREFIX + connector).encode(), to_json({"tasks": count})


def target_state_record(connector: str, state: TargetState | None) -> tuple[bytes, bytes | None]:
    if state is None:
        return (TARGET_STATE_PREFIX + connector).encode(), None
    # Workers older than KIP-875 know no STOPPED: they read "state" and pause.
    legacy = TargetState.PAUSED if state is TargetState.STOPPED else state
    return (TARGET_STATE_PREFIX + connector).encode(), to_json(
        {"state": legacy.value, "state.v2": state.value})


def session_key_record(key: SessionKey) -> tuple[bytes, bytes]:
    return SESSION_KEY.encode(), to_json({
        "key": base64.b64encode(key.key).decode(), "algorithm": key.algorithm,
        "creation-timestamp": key.creation_timestamp})


def restart_record(request: RestartRequest) -> tuple[bytes, bytes]:
    return (RESTART_PREFIX + request.connector).encode(), to_json(
        {"include-tasks": request.include_tasks, "only-failed": request.only_failed})


def task_count_record(connector: str, count: int) -> tuple[bytes, bytes]:
    return (TASK_COUNT_PREFIX + connector).encode(), to_json({"task-count": count})


class ConfigState:
    """The config topic's records applied in order to a ClusterConfigState (the reading half
    of the store, without Kafka: what the unit tests feed by hand)."""

    def __init__(self, listener: ConfigUpdateListener | None = None):
        self.state = ClusterConfigState()
        self.listener = listener
        self._deferred: dict[str, dict[int, dict[str, str]]] = {}
        # logger levels written before this worker read the topic to its end are not applied
        # (KIP-976: a new worker keeps its own levels)
        self.started = False

    def apply(self, key: bytes | None, value: bytes | None, offset: int) -> None:
        self.state.offset = offset + 1
        text = (key or b"").decode("utf-8", "replace")
        try:
            data = None if value is None else json.loads(value)
            if value is not None and not isinstance(data, dict):
                raise ValueError("not a JSON object")
            self._apply(text, data)
        except (ValueError, KeyError, TypeError) as e:
            log.error("Discarding config update record with key %r: %s", text, e)

    def _apply(self, key: str, data: dict | None) -> None:
        s, notify = self.state, self.listener
        if key.startswith(TARGET_STATE_PREFIX):
            name = key[len(TARGET_STATE_PREFIX):]
            if data is None:
                s.target_states.pop(name, None)
                return
            s.target_states[name] = TargetState(data.get("state.v2") or data["state"])
            if notify:
                notify.on_connector_target_state_change(name)
        elif key.startswith(CONNECTOR_PREFIX):
            name = key[len(CONNECTOR_PREFIX):]
            if data is None:
                existed = s.connector_configs.pop(name, None) is not None
                s.target_states.pop(name, None)
                s.task_counts.pop(name, None)
                s.task_count_records.pop(name, None)
                s.inconsistent.discard(name)
                s.pending_fencing.discard(name)
                self._deferred.pop(name, None)
                for id in [t for t in s.task_configs if t.connector == name]:
                    del s.task_configs[id]
                if existed and notify:
                    notify.on_connector_config_remove(name)
                return
            s.connector_configs[name] = _properties(data)
            if notify:
                notify.on_connector_config_update(name)
        elif key.startswith(TASK_COUNT_PREFIX):
            name = key[len(TASK_COUNT_PREFIX):]
            s.task_count_records[name] = int(data["task-count"])
            s.pending_fencing.discard(name)
        elif key.startswith(TASK_PREFIX):
            name, _, number = key[len(TASK_PREFIX):].rpartition("-")
            if not name or data is None:
                raise ValueError("not a task configuration")
            self._deferred.setdefault(name, {})[int(number)] = _properties(data)
        elif key.startswith(COMMIT_PREFIX):
            self._commit(key[len(COMMIT_PREFIX):], int(data["tasks"]))
        elif key.startswith(RESTART_PREFIX):
            request = RestartRequest(key[len(RESTART_PREFIX):], bool(data["include-tasks"]),
                                     bool(data["only-failed"]))
            if notify:
                notify.on_restart_request(request)
        elif key.startswith(LOGGER_PREFIX):
            if data is not None and self.started and notify:
                notify.on_logging_level_update(key[len(LOGGER_PREFIX):], str(data["level"]))
        elif key == SESSION_KEY:
            s.session_key = SessionKey(base64.b64decode(data["key"]), data["algorithm"],
                                       int(data["creation-timestamp"]))
            if notify:
                notify.on_session_key_update(s.session_key)
        else:
            raise ValueError("unknown key")

    def _commit(self, name: str, count: int) -> None:
        s = self.state
        deferred = self._deferred.pop(name, {})
        if any(i not in deferred for i in range(count)):
            log.error("Ignoring task configuration commit for connector %s: %d task configs "
                      "expected, %d read since the previous commit", name, count,
                      len(deferred))
            s.inconsistent.add(name)
            return
        removed = [t for t in s.task_configs if t.connector == name]
        for id in removed:
            del s.task_configs[id]
        ids = [ConnectorTaskId(name, i) for i in range(count)]
        for id in ids:
            s.task_configs[id] = deferred[id.task]
        s.task_counts[name] = count
        s.inconsistent.discard(name)
        s.pending_fencing.add(name)
        if self.listener:  # the tasks gone count as updated (a commit of zero tasks too)
            self.listener.on_task_config_update(sorted(set(removed) | set(ids)))


def _properties(data: dict) -> dict[str, str]:
    props = data["properties"]
    if not isinstance(props, dict):
        raise ValueError("properties is not a JSON object")
    return {str(k): v if isinstance(v, str) or v is None else str(v) for k, v in props.items()}


class KafkaConfigStore:
    """The config topic (``config.storage.topic``, one partition) of a distributed worker."""

    def __init__(self, config, listener: ConfigUpdateListener | None = None):
        self._reader = ConfigState(listener)
        self._lock = threading.Lock()
        self.log = worker_log(config, "config.storage.topic", "connector configurations",
                              self._on_record, 1, "configs")

    def _on_record(self, key, value, _partition, offset):
        with self._lock:
            self._reader.apply(key, value, offset)

    def start(self) -> None:
        self.log.start()
        self._reader.started = True
        if len(self.log.partitions) != 1:
            s = self.log.spec
            raise ConfigException(
                f"Topic '{s.name}' supplied via the '{s.setting}' property is required to have "
                f"a single partition in order to guarantee consistency of connector "
                f"configurations, but found {len(self.log.partitions)} partitions.")

    def stop(self) -> None:
        self.log.stop()

    @property
    def offset(self) -> int:
        """The position read to (an update listener's call already counts its record)."""
        return self._reader.state.offset

    def snapshot(self) -> ClusterConfigState:
        with self._lock:
            return self._reader.state.copy()

    def refresh(self, timeout: float = READ_TIMEOUT_S) -> None:
        self.log.read_to_end(timeout)

    def _write(self, *records: tuple[bytes, bytes | None]) -> None:
        for key, value in records:
            self.log.send(key, value)
        self.log.flush()
        self.log.read_to_end()

    def put_connector_config(self, name: str, props: dict[str, str],
                             target: TargetState | None = None) -> None:
        """The connector's config (its target state first, when given, as Kafka writes a new
        connector's)."""
        records = [target_state_record(name, target)] if target is not None else []
        self._write(*records, connector_record(name, props))

    def remove_connector_config(self, name: str) -> None:
        self._write(connector_record(name, None), target_state_record(name, None))

    def put_task_configs(self, name: str, configs: list[dict[str, str]]) -> None:
        self.log.read_to_end()
        self._write(*(task_record(ConnectorTaskId(name, i), c) for i, c in enumerate(configs)),
                    commit_record(name, len(configs)))

    def put_target_state(self, name: str, state: TargetState) -> None:
        self._write(target_state_record(name, state))

    def put_session_key(self, key: SessionKey) -> None:
        self._write(session_key_record(key))

    def put_restart_request(self, request: RestartRequest) -> None:
        self._write(restart_record(request))

    def put_task_count_record(self, name: str, count: int) -> None:
        self._write(task_count_record(name, count))

    def put_logger_level(self, namespace: str, level: str) -> None:
        self._write(((LOGGER_PREFIX + namespace).encode(), to_json({"level": level})))
