"""What both herders do alike (Kafka's AbstractHerder): plug-in listings and validation,
statuses read from a StatusStore and written there by a StatusListener, the topics connectors
used (KIP-558), KIP-745's restart plans, and KIP-875's offsets: a source's from the
OffsetStore, a sink's from its consumer group (``connect-<name>``) through confluent-kafka's
AdminClient. A herder says how connector configs are kept (``_config``, ``_target``)."""
from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from typing import NamedTuple

from confluent_kafka import ConsumerGroupTopicPartitions, KafkaException, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient

from josefk.connect.api.connector import SinkConnector
from josefk.connect.runtime import connector_config
from josefk.connect.runtime.herder import BadRequest, HerderError, NotFound
from josefk.connect.runtime.loggers import Loggers
from josefk.connect.runtime.metrics import ConnectMetrics
from josefk.connect.runtime.offset_store import ConnectorOffsetStore, connector_offset_store
from josefk.connect.runtime.plugins import Plugins
from josefk.connect.runtime.seams import (ConnectorTaskId, OffsetStore, State, Status,
                                          StatusStore, TargetState)
from josefk.connect.runtime.source_task import (TRANSACTION_TIMEOUT, producer_defaults,
                                                transactional_settings)
from josefk.connect.runtime.worker_config import WorkerConfig

log = logging.getLogger("josefk.connect.herder")


class MemoryStatusStore:
    """Standalone's statuses, in memory (Kafka's MemoryStatusBackingStore)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._statuses: dict[str | ConnectorTaskId, Status] = {}
        self._topics: dict[str, dict[str, tuple[int, int]]] = {}

    def put(self, id, status: Status) -> None:
        with self._lock:
            self._statuses[id] = status

    def put_safe(self, id, status: Status) -> None:
        with self._lock:
            stored = self._statuses.get(id)
            if stored is None or stored.generation <= status.generation:
                self._statuses[id] = status

    def get(self, id) -> Status | None:
        with self._lock:
            return self._statuses.get(id)

    def tasks(self, connector: str) -> dict[int, Status]:
        with self._lock:
            return {id.task: s for id, s in self._statuses.items()
                    if isinstance(id, ConnectorTaskId) and id.connector == connector}

    def delete(self, id) -> None:
        with self._lock:
            self._statuses.pop(id, None)

    def put_topic(self, connector: str, topic: str, task: int, discovered_ms: int) -> None:
        with self._lock:
            self._topics.setdefault(connector, {}).setdefault(topic, (task, discovered_ms))

    def topics(self, connector: str) -> list[str]:
        with self._lock:
            return sorted(self._topics.get(connector, {}))

    def delete_topics(self, connector: str) -> None:
        with self._lock:
            self._topics.pop(connector, None)


class StatusWriter:
    """The StatusListener a herder gives its worker: each state change stored with this
    worker's id and the herder's generation (``generation()``); ``metrics`` (optional)
    tracks the state gauges."""

    def __init__(self, store: StatusStore, worker_id, generation=lambda: 0, metrics=None):
        self.store, self._worker_id, self.generation = store, worker_id, generation
        self.metrics = metrics

    def _put(self, id, state: State, trace: str | None = None) -> None:
        self.store.put(id, Status(state, trace, self._worker_id(), self.generation()))
        if self.metrics is not None:
            self.metrics.state(id, state)

    def on_startup(self, id):
        self._put(id, State.RUNNING)

    def on_running(self, id):
        self._put(id, State.RUNNING)

    def on_pause(self, id):
        self._put(id, State.PAUSED)

    def on_stop(self, id):
        self._put(id, State.STOPPED)

    def on_failure(self, id, trace: str):
        self._put(id, State.FAILED, trace)

    def on_shutdown(self, id):
        status = Status(State.UNASSIGNED, None, self._worker_id(), self.generation())
        self.store.put_safe(id, status)
        if self.metrics is not None:
            self.metrics.state(id, State.UNASSIGNED)

    def on_restart(self, id):
        self._put(id, State.RESTARTING)

    def on_deletion(self, id):
        self.store.delete(id)
        if self.metrics is not None:
            self.metrics.forget(id)

    def on_topic_used(self, id: ConnectorTaskId, topic: str):
        self.store.put_topic(id.connector, topic, id.task, int(time.time() * 1000))


def state_body(status: Status) -> dict:
    body = {"state": status.state.value, "worker_id": status.worker_id}
    if status.trace is not None:
        body["trace"] = status.trace
    return body


class RestartPlan(NamedTuple):
    """KIP-745: what a restart request restarts, and the status body answered (202)."""
    restart_connector: bool
    tasks: list[ConnectorTaskId]
    body: dict


class AbstractHerder:
    """The mode-independent half of a herder. Subclasses implement ``_config(name)`` (the
    connector's settings, NotFound if none), ``_target(name)`` and ``_task_count(name)``."""

    def __init__(self, config: WorkerConfig, worker, plugins: Plugins,
                 status_store: StatusStore, offset_store: OffsetStore,
                 metrics: ConnectMetrics | None = None):
        self.config, self.worker, self.plugins = config, worker, plugins
        self.status_store, self.offset_store = status_store, offset_store
        self.metrics = metrics or ConnectMetrics()  # the REST API's /metrics: render()
        self.loggers = Loggers()
        self._cluster_id: str | None = None
        self._admin_client: AdminClient | None = None
        # One offsets modification at a time: an exactly-once source's would fence another's
        # transaction (both are task 0's producer).
        self._modifying_offsets = threading.Lock()

    # ---- to implement ----------------------------------------------------------------------
    def _config(self, name: str) -> dict[str, str]:
        raise NotImplementedError

    def _target(self, name: str) -> TargetState:
        raise NotImplementedError

    # ---- plug-ins and validation ------------------------------------------------------------
    async def connector_plugins(self, connectors_only: bool) -> list[dict]:
        return self.plugins.connector_plugins(connectors_only)

    async def plugin_config(self, plugin: str) -> list[dict]:
        return self.plugins.plugin_config(plugin, connector_config.plugin_base_def)

    async def validate_connector_config(self, config: dict[str, str]) -> dict:
        return await asyncio.to_thread(connector_config.validate, self.plugins, self.config,
                                       config)

    async def _validated(self, config: dict[str, str]) -> None:
        """BadRequest with Connect's message when the config has errors."""
        infos = await self.validate_connector_config(config)
        message = connector_config.config_errors(infos)
        if message:
            raise BadRequest(message)

    def connector_type(self, props: dict[str, str]) -> str:
        cls = self.plugins.find("connector", props.get("connector.class", ""))
        if cls is None:
            return "unknown"
        return "sink" if issubclass(cls, SinkConnector) else "source"

    async def patch_connector_config(self, name: str, patch: dict) -> dict:
        """KIP-477: the config with ``patch`` merged (a None value removes the key), put."""
        props = dict(self._config(name))
        for key, value in patch.items():
            if value is None:
                props.pop(key, None)
            else:
                props[key] = value
        _, info = await self.put_connector_config(name, props, True)
        return info

    # ---- statuses --------------------------------------------------------------------------
    async def connector_status(self, name: str) -> dict:
        props = self._config(name)
        status = self.status_store.get(name)
        if status is None:
            raise NotFound(f"No status found for connector {name}")
        tasks = [dict(id=task, **state_body(s))
                 for task, s in sorted(self.status_store.tasks(name).items())]
        return {"name": name, "connector": state_body(status), "tasks": tasks,
                "type": self.connector_type(props)}

    async def task_status(self, name: str, task: int) -> dict:
        self._config(name)
        status = self.status_store.get(ConnectorTaskId(name, task))
        if status is None:
            raise NotFound(f"No status found for task {name}-{task}")
        return dict(id=task, **state_body(status))

    async def connector_topics(self, name: str) -> list[str]:
        self._config(name)
        return self.status_store.topics(name)

    async def reset_connector_topics(self, name: str) -> None:
        self._config(name)
        self.status_store.delete_topics(name)

    def restart_plan(self, name: str, include_tasks: bool, only_failed: bool) -> RestartPlan:
        """Kafka's buildRestartPlan: the connector restarts unless ``only_failed`` and it is
        not FAILED; its tasks with ``include_tasks`` (only the FAILED ones if asked)."""
        props = self._config(name)
        status = self.status_store.get(name)
        if status is None:
            raise NotFound(f"Status for connector {name} not found")
        restart_connector = not only_failed or status.state is State.FAILED
        connector_body = state_body(status)
        if restart_connector:
            connector_body = {"state": State.RESTARTING.value, "worker_id": status.worker_id}
        tasks, task_bodies = [], []
        for task, task_status in sorted(self.status_store.tasks(name).items()):
            body = dict(id=task, **state_body(task_status))
            if include_tasks and (not only_failed or task_status.state is State.FAILED):
                tasks.append(ConnectorTaskId(name, task))
                body = {"id": task, "state": State.RESTARTING.value,
                        "worker_id": task_status.worker_id}
            task_bodies.append(body)
        return RestartPlan(restart_connector, tasks,
                           {"name": name, "connector": connector_body, "tasks": task_bodies,
                            "type": self.connector_type(props)})

    # ---- offsets (KIP-875) -----------------------------------------------------------------
    def _admin(self) -> AdminClient:
        if self._admin_client is None:
            self._admin_client = AdminClient(self.config.client_settings("admin"))
        return self._admin_client

    async def connector_offsets(self, name: str) -> dict:
        props = self._config(name)
        if self.connector_type(props) == "sink":
            offsets = await asyncio.to_thread(self._sink_offsets, name, props)
        else:
            offsets = await asyncio.to_thread(self._source_offsets, name, props)
        return {"offsets": offsets}

    def _source_clients(self, props: dict[str, str]) -> dict[str, dict]:
        """The connector's client settings, per "producer", "consumer", "admin"."""
        clients = {}
        for kind in ("producer", "consumer", "admin"):
            prefix = f"{kind}.override."
            clients[kind] = self.config.client_settings(
                kind, {k[len(prefix):]: v for k, v in props.items() if k.startswith(prefix)})
        return clients

    def _source_store(self, name: str, props: dict[str, str]) -> ConnectorOffsetStore:
        """The connector's offset store (its own offsets topic first, KIP-618), started."""
        store = connector_offset_store(self.config, self.offset_store, props,
                                       self._source_clients(props), f"connector-offsets-{name}")
        store.start()
        return store

    def _source_offsets(self, name: str, props: dict[str, str]) -> list[dict]:
        store = self._source_store(name, props)
        try:
            return [{"partition": p, "offset": o} for p, o in store.all(name)]
        finally:
            store.stop()

    def _sink_group(self, name: str, props: dict[str, str]) -> str:
        return props.get("consumer.override.group.id") or f"connect-{name}"

    def _sink_offsets(self, name: str, props: dict[str, str]) -> list[dict]:
        group = self._sink_group(name, props)
        future = self._admin().list_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(group)])[group]
        try:
            found = future.result(30)
        except KafkaException as e:
            raise HerderError(f"Failed to retrieve consumer group offsets for sink "
                              f"connector {name}: {e}") from e
        return [{"partition": {"kafka_topic": tp.topic, "kafka_partition": tp.partition},
                 "offset": {"kafka_offset": tp.offset}}
                for tp in sorted(found.topic_partitions, key=lambda t: (t.topic, t.partition))
                if tp.offset >= 0]

    def _check_stopped(self, name: str, tasks_left: bool = False) -> None:
        """BadRequest unless the connector is STOPPED (and, distributed, its task configs
        emptied: ``tasks_left`` False)."""
        if tasks_left or self._target(name) is not TargetState.STOPPED:
            raise BadRequest(f"Connectors must be in the STOPPED state before their offsets can "
                             f"be modified. This can be done for the specified connector by "
                             f"issuing a 'PUT' request to the '/connectors/{name}/stop' endpoint")

    async def alter_connector_offsets(self, name: str, offsets: list[dict]) -> str:
        if not offsets:
            raise BadRequest("The offsets to be altered may not be null or empty")
        props = self._config(name)
        self._check_stopped(name)
        await self._before_modifying_offsets(name, props)
        return await asyncio.to_thread(self._modify_offsets, name, props, offsets)

    async def reset_connector_offsets(self, name: str) -> str:
        props = self._config(name)
        self._check_stopped(name)
        await self._before_modifying_offsets(name, props)
        return await asyncio.to_thread(self._modify_offsets, name, props, None)

    async def _before_modifying_offsets(self, name: str, props: dict[str, str]) -> None:
        """What must precede the write once the connector is known STOPPED (the distributed
        herder fences an exactly-once source's zombies)."""

    def _modify_offsets(self, name: str, props: dict[str, str], offsets: list[dict] | None):
        try:
            with self._modifying_offsets:
                return self._modify_offsets_of(name, props, offsets)
        except HerderError:
            raise
        except Exception as e:  # the connector's refusal, with its message (500 as Kafka)
            raise HerderError(str(e)) from e

    def _modify_offsets_of(self, name, props, offsets):
        connector = self.plugins.new_connector(props["connector.class"])
        sink = isinstance(connector, SinkConnector)
        if sink:
            parsed = _sink_offsets(offsets) if offsets is not None else None
            if parsed is None:
                current = self._sink_offsets(name, props)
                parsed = {(o["partition"]["kafka_topic"], o["partition"]["kafka_partition"]):
                          None for o in current}
            asked = connector.alter_offsets(props, dict(parsed))
            self._write_sink_offsets(name, props, parsed, offsets is None)
        else:
            store = self._source_store(name, props)
            try:
                if offsets is None:
                    pairs = [(p, None) for p, _ in store.all(name)]
                else:
                    pairs = [(_map(o, "partition"), _map(o, "offset", True)) for o in offsets]
                asked = connector.alter_offsets(
                    props, {SourcePartition(p): o for p, o in pairs})
                if not pairs:
                    log.info("No offsets found for source connector %s - this can occur due to "
                             "a prior attempt to reset offsets or if the source connector "
                             "hasn't committed any offsets yet", name)
                elif self.config.exactly_once_source:
                    self._put_in_transaction(name, props, store, pairs)
                else:
                    store.put(name, pairs)
            finally:
                store.stop()
        kind = "reset" if offsets is None else "altered"
        if asked:
            return f"The offsets for this connector have been {kind} successfully"
        return (f"The Connect framework-managed offsets for this connector have been {kind} "
                f"successfully. However, if this connector manages offsets externally, they "
                f"will need to be manually {kind} in the system that the connector uses.")

    def _put_in_transaction(self, name, props, store: ConnectorOffsetStore, pairs) -> None:
        """KIP-618 with KIP-875 (Kafka's Worker.modifySourceConnectorOffsets): the offsets
        written in a transaction of task 0's transactional producer."""
        settings = {**producer_defaults(f"connector-producer-{name}-0"),
                    **transactional_settings(self.config["group.id"], ConnectorTaskId(name, 0)),
                    **self._source_clients(props)["producer"]}
        producer = Producer(settings)
        try:
            store.put_in_transaction(name, pairs, producer, TRANSACTION_TIMEOUT)
        except KafkaException as e:
            log.error("Failed to modify offsets for source connector %s: %s", name, e)
            raise HerderError(f"Failed to modify offsets for source connector {name}") from e

    def _write_sink_offsets(self, name, props, parsed, reset: bool) -> None:
        group = self._sink_group(name, props)
        admin = self._admin()
        if reset:
            futures = admin.delete_consumer_groups([group], request_timeout=30)
            try:
                futures[group].result(30)
            except KafkaException as e:
                if e.args[0].code() != 69:  # GROUP_ID_NOT_FOUND: nothing to reset
                    raise HerderError(f"Failed to reset offsets for sink connector {name}: "
                                      f"{e}") from e
            return
        if any(o is None for o in parsed.values()):
            raise BadRequest("Removing a single partition's offset of a sink connector is not "
                             "supported here: reset the connector's offsets instead")
        request = ConsumerGroupTopicPartitions(group, [KafkaTopicPartition(t, p, o)
                                                       for (t, p), o in parsed.items()])
        try:
            admin.alter_consumer_group_offsets([request])[group].result(30)
        except KafkaException as e:
            raise HerderError(f"Failed to alter consumer group offsets for sink connector "
                              f"{name}: {e}") from e

    def kafka_cluster_id(self) -> str:
        if self._cluster_id is None:
            self._cluster_id = self._admin().list_topics(timeout=30).cluster_id
        return self._cluster_id

    def worker_url(self) -> str:
        return self.config.rest_url


class SourcePartition(dict):
    """A source partition usable as a key of the offsets given to a connector's
    ``alter_offsets`` (a dict, hashed by its content)."""

    def __hash__(self):
        return hash(json.dumps(self, sort_keys=True))


def _map(entry: dict, field: str, nullable: bool = False):
    value = entry.get(field) if isinstance(entry, dict) else None
    if value is None and nullable and isinstance(entry, dict):
        return None
    if not isinstance(value, dict):
        raise BadRequest(f"The {field} for a source connector's offset must be a JSON object")
    return value


def _sink_offsets(offsets: list[dict]) -> dict[tuple[str, int], int | None]:
    parsed = {}
    for entry in offsets:
        partition = _map(entry, "partition")
        topic, number = partition.get("kafka_topic"), partition.get("kafka_partition")
        if not isinstance(topic, str) or not isinstance(number, int):
            raise BadRequest("Partitions of sink connector offsets must have the keys "
                             "'kafka_topic' (a string) and 'kafka_partition' (an integer)")
        offset = _map(entry, "offset", True)
        value = None if offset is None else offset.get("kafka_offset")
        if offset is not None and (not isinstance(value, int) or value < 0):
            raise BadRequest("Offsets of sink connectors must have the key 'kafka_offset' "
                             "(a non-negative integer)")
        parsed[(topic, number)] = value
    return parsed
