"""The standalone herder (Kafka's StandaloneHerder): one worker, connector configs in memory
(given at start, changed through the REST API), source offsets in a local file
(``offset.storage.file.filename``), statuses in memory."""
from __future__ import annotations

import asyncio
import logging

from josefk.connect.runtime.abstract_herder import AbstractHerder, MemoryStatusStore, StatusWriter
from josefk.connect.api.config import ConfigException
from josefk.connect.runtime.herder import AlreadyExists, HerderError, NotFound
from josefk.connect.runtime.metrics import ConnectMetrics
from josefk.connect.runtime.offset_store import FileOffsetStore
from josefk.connect.runtime.plugins import Plugins
from josefk.connect.runtime.seams import ConnectorTaskId, TargetState
from josefk.connect.runtime.worker import Worker
from josefk.connect.runtime.worker_config import WorkerConfig

log = logging.getLogger("josefk.connect.standalone")


class StandaloneHerder(AbstractHerder):
    """``worker`` None: a Worker over the FileOffsetStore and this herder's statuses."""

    async def set_cluster_logger_level(self, namespace: str, level: str) -> None:
        """This worker is the whole cluster (as Kafka's standalone herder answers)."""
        self.loggers.set_level(namespace, level)

    def __init__(self, config: WorkerConfig, worker: Worker | None, plugins: Plugins,
                 metrics: ConnectMetrics | None = None):
        status_store = MemoryStatusStore()
        metrics = metrics or ConnectMetrics()
        self.listener = StatusWriter(status_store, lambda: config.worker_id, metrics=metrics)
        offset_store = (worker.offset_store if worker is not None
                        else FileOffsetStore(config["offset.storage.file.filename"]))
        worker = worker or Worker(config, plugins, offset_store, self.listener, metrics)
        super().__init__(config, worker, plugins, status_store, offset_store, metrics)
        self.configs: dict[str, dict[str, str]] = {}
        self.targets: dict[str, TargetState] = {}
        self.task_configs_by_connector: dict[str, list[dict[str, str]]] = {}
        self._ready = False
        self._lock = asyncio.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None

    # ---- lifecycle ------------------------------------------------------------------------
    async def start(self, connector_configs: list[dict]) -> None:
        """Create each connector of ``connector_configs`` (their ``name`` setting); a config
        that cannot be is a ConfigException (``josefk connect`` exits with its message)."""
        self._loop = asyncio.get_running_loop()
        for props in connector_configs:
            name = props.get("name")
            if not name:
                raise ConfigException(f"Connector config {props} contains no connector name")
            try:
                await self.put_connector_config(name, props, False)
            except HerderError as e:
                raise ConfigException(f"Failed to create connector {name}: {e.message}") \
                    from None
        self._ready = True

    def ready(self) -> bool:
        return self._ready

    async def stop(self) -> None:
        async with self._lock:
            await asyncio.to_thread(self.worker.stop)
        self._admin_client = None

    # ---- configs ----------------------------------------------------------------------------
    def _config(self, name: str) -> dict[str, str]:
        if name not in self.configs:
            raise NotFound(f"Connector {name} not found")
        return self.configs[name]

    def _target(self, name: str) -> TargetState:
        self._config(name)
        return self.targets[name]

    async def connectors(self) -> list[str]:
        return sorted(self.configs)

    async def connector_info(self, name: str) -> dict:
        props = self._config(name)
        return {"name": name, "config": dict(props),
                "tasks": [{"connector": name, "task": i}
                          for i in range(len(self.task_configs_by_connector.get(name, [])))],
                "type": self.connector_type(props)}

    async def connector_config(self, name: str) -> dict[str, str]:
        return dict(self._config(name))

    async def put_connector_config(self, name: str, config: dict[str, str],
                                   allow_replace: bool,
                                   initial_state: str | None = None) -> tuple[bool, dict]:
        config = dict(config, name=name)
        await self._validated(config)
        async with self._lock:
            created = name not in self.configs
            if not created and not allow_replace:
                raise AlreadyExists(f"Connector {name} already exists")
            if not created:
                await self._stop_connector(name)
            self.configs[name] = config
            target = self.targets.setdefault(name, TargetState(initial_state or "STARTED"))
            await self._start_connector(name, target)
        return created, await self.connector_info(name)

    async def delete_connector(self, name: str) -> None:
        async with self._lock:
            self._config(name)
            await self._stop_connector(name)
            for task in range(len(self.task_configs_by_connector.pop(name, []))):
                self.listener.on_deletion(ConnectorTaskId(name, task))
            self.listener.on_deletion(name)
            del self.configs[name], self.targets[name]

    async def put_task_configs(self, name, configs, signature) -> None:
        raise HerderError("Kafka Connect in standalone mode does not support externally setting "
                          "task configurations.")

    async def fence_zombies(self, name, signature) -> None:
        raise HerderError("Kafka Connect in standalone mode does not support exactly-once "
                          "source connectors.")

    async def task_configs(self, name: str) -> list[dict]:
        self._config(name)
        return [{"id": {"connector": name, "task": i}, "config": dict(c)}
                for i, c in enumerate(self.task_configs_by_connector.get(name, []))]

    # ---- running them -----------------------------------------------------------------------
    async def _start_connector(self, name: str, target: TargetState) -> None:
        props = self.configs[name]
        self.worker.start_connector(name, props, target, lambda: self._reconfigure_soon(name))
        if target is TargetState.STOPPED:
            self.task_configs_by_connector[name] = []
            return
        await self._update_tasks(name)

    async def _stop_connector(self, name: str) -> None:
        ids = self._task_ids(name)
        await asyncio.to_thread(self.worker.stop_tasks, ids)
        await asyncio.to_thread(self.worker.stop_connectors, [name])

    def _task_ids(self, name: str) -> list[ConnectorTaskId]:
        return [ConnectorTaskId(name, i)
                for i in range(len(self.task_configs_by_connector.get(name, [])))]

    async def _update_tasks(self, name: str) -> None:
        """Take the connector's task configs again; restart its tasks if they changed."""
        props = self.configs[name]
        try:
            configs = await asyncio.to_thread(self.worker.connector_task_configs, name, props)
        except Exception as e:
            log.error("Failed to generate task configs for connector %s: %s", name, e)
            return
        if configs == self.task_configs_by_connector.get(name) and all(
                id in self.worker.task_ids() for id in self._task_ids(name)):
            return
        old = self._task_ids(name)
        await asyncio.to_thread(self.worker.stop_tasks, old)
        for id in old[len(configs):]:
            self.listener.on_deletion(id)
        self.task_configs_by_connector[name] = configs
        self._start_tasks(name, self._task_ids(name))

    def _start_tasks(self, name: str, ids: list[ConnectorTaskId]) -> None:
        props, configs = self.configs[name], self.task_configs_by_connector[name]
        for id in ids:
            self.worker.start_task(id, props, configs[id.task], self.targets[name])

    def _reconfigure_soon(self, name: str) -> None:
        """A connector asked for its tasks to be reconfigured (from its own thread)."""
        async def reconfigure():
            async with self._lock:
                if name in self.configs and self.targets[name] is not TargetState.STOPPED:
                    await self._update_tasks(name)
        if self._loop is not None:
            asyncio.run_coroutine_threadsafe(reconfigure(), self._loop)

    async def restart_connector(self, name: str, include_tasks: bool,
                                only_failed: bool) -> dict | None:
        async with self._lock:
            plan = self.restart_plan(name, include_tasks, only_failed)
            if plan.restart_connector:
                self.listener.on_restart(name)
                await asyncio.to_thread(self.worker.stop_connectors, [name])
                self.worker.start_connector(name, self.configs[name], self.targets[name],
                                            lambda: self._reconfigure_soon(name))
            if plan.tasks:
                for id in plan.tasks:
                    self.listener.on_restart(id)
                await asyncio.to_thread(self.worker.stop_tasks, plan.tasks)
                self._start_tasks(name, plan.tasks)
        if not include_tasks and not only_failed:
            return None
        return plan.body

    async def restart_task(self, name: str, task: int) -> None:
        async with self._lock:
            self._config(name)
            id = ConnectorTaskId(name, task)
            if task >= len(self.task_configs_by_connector.get(name, [])):
                raise NotFound(f"Task {id} not found")
            await asyncio.to_thread(self.worker.stop_tasks, [id])
            self._start_tasks(name, [id])

    async def _set_target(self, name: str, target: TargetState) -> None:
        async with self._lock:
            self._config(name)
            previous, self.targets[name] = self.targets[name], target
            if target is TargetState.STOPPED:
                await asyncio.to_thread(self.worker.set_target_state, name, target)
                self.task_configs_by_connector[name] = []
            else:
                await asyncio.to_thread(self.worker.set_target_state, name, target)
                if previous is TargetState.STOPPED:
                    await self._update_tasks(name)

    async def pause_connector(self, name: str) -> None:
        await self._set_target(name, TargetState.PAUSED)

    async def resume_connector(self, name: str) -> None:
        await self._set_target(name, TargetState.STARTED)

    async def stop_connector(self, name: str) -> None:
        await self._set_target(name, TargetState.STOPPED)
