"""A dict-backed Herder for the tests of Connect's REST API and the web console's Connect page
(tests/connect/rest, tests/tools, compat_tests/tools): connectors, their states, task statuses,
topics and offsets kept in dicts; ``follow(url)`` makes it a follower whose writes raise
NotLeader; ``calls`` records what the REST layer asked. ``Loop`` runs the REST servers (and so
the herders) on an event loop of its own thread."""
from __future__ import annotations

import asyncio
import threading

from josefk.connect.runtime.herder import (AlreadyExists, BadRequest, NotFound, NotLeader,
                                           Rebalancing)
from josefk.connect.runtime.loggers import Loggers

SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"
SINK = "org.apache.kafka.connect.file.FileStreamSinkConnector"
PLUGINS = [{"class": SINK, "type": "sink", "version": "1.0"},
           {"class": SOURCE, "type": "source", "version": "1.0"}]
CONVERTERS = [{"class": "org.apache.kafka.connect.json.JsonConverter", "type": "converter"}]


class Loop:
    """An event loop on a thread: the servers' (and the herders') loop."""

    def __init__(self):
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, coro, timeout: float = 10):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def close(self):
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        self.loop.close()


class DictHerder:
    def __init__(self, url: str = "http://worker-1:8083", cluster_id: str = "cluster-a"):
        self.url, self.cluster_id = url, cluster_id
        self.configs: dict[str, dict] = {}
        self.states: dict[str, str] = {}
        self.failed_tasks: dict[str, set] = {}
        self.topics: dict[str, list] = {}
        self.offsets: dict[str, list] = {}
        self.leader: str | None = None  # set: a follower that knows (or not) the leader
        self.follower = False
        self.rebalancing = False
        self.delay = 0.0  # seconds every answer takes
        self.calls: list[tuple] = []
        self.initial_states: dict[str, str | None] = {}
        self.started = True  # ready(): start-up complete
        self.loggers = Loggers()

    async def set_cluster_logger_level(self, namespace: str, level: str) -> None:
        await self._ask("set_cluster_logger_level", namespace, level)
        self.loggers.set_level(namespace, level)

    def follow(self, leader_url: str | None) -> None:
        self.follower, self.leader = True, leader_url

    async def _ask(self, *call, write: bool = False):
        self.calls.append(call)
        if self.delay:
            await asyncio.sleep(self.delay)
        if write and self.follower:
            raise NotLeader("This worker is not able to communicate with the leader", self.leader)
        if write and self.rebalancing:
            raise Rebalancing("Cannot complete request momentarily due to stale configuration "
                              "(typically caused by a concurrent config change)")

    def _config(self, name: str) -> dict:
        if name not in self.configs:
            raise NotFound(f"Connector {name} not found")
        return self.configs[name]

    def _type(self, name: str) -> str:
        return "source" if "Source" in self._config(name)["connector.class"] else "sink"

    def _tasks(self, name: str) -> int:
        return int(self._config(name).get("tasks.max", "1"))

    def _info(self, name: str) -> dict:
        return {"name": name, "config": self._config(name),
                "tasks": [{"connector": name, "task": t} for t in range(self._tasks(name))],
                "type": self._type(name)}

    def _task_status(self, name: str, task: int, restarting: bool = False) -> dict:
        failed = task in self.failed_tasks.get(name, set())
        state = "RESTARTING" if restarting else "FAILED" if failed else self.states[name]
        out = {"id": task, "state": state, "worker_id": self.url}
        if failed and not restarting:
            out["trace"] = "org.apache.kafka.connect.errors.ConnectException: boom"
        return out

    def _status(self, name: str, restart: tuple | None = None) -> dict:
        self._config(name)
        include_tasks, only_failed = restart or (False, False)
        return {"name": name,
                "connector": {"state": "RESTARTING" if restart else self.states[name],
                              "worker_id": self.url},
                "tasks": [self._task_status(name, t, bool(restart) and include_tasks and (
                    not only_failed or t in self.failed_tasks.get(name, set())))
                    for t in range(self._tasks(name))],
                "type": self._type(name)}

    async def connectors(self) -> list[str]:
        await self._ask("connectors")
        return sorted(self.configs)

    async def connector_info(self, name):
        await self._ask("connector_info", name)
        return self._info(name)

    async def connector_config(self, name):
        await self._ask("connector_config", name)
        return self._config(name)

    def ready(self) -> bool:
        return self.started

    async def put_connector_config(self, name, config, allow_replace, initial_state=None):
        await self._ask("put_connector_config", name, dict(config), allow_replace, write=True)
        if not name:
            raise BadRequest("Connector configuration is invalid and contains the following 1 "
                             "error(s):\nInvalid value  for configuration name: String must be "
                             "non-empty")
        created = name not in self.configs
        if not created and not allow_replace:
            raise AlreadyExists(f"Connector {name} already exists")
        self.configs[name] = dict(config)
        if created:
            self.initial_states[name] = initial_state
        self.states.setdefault(name, "RUNNING")
        return created, self._info(name)

    async def put_task_configs(self, name, configs, signature):
        await self._ask("put_task_configs", name, configs, signature, write=True)
        self._config(name)

    async def fence_zombies(self, name, signature):
        await self._ask("fence_zombies", name, signature, write=True)
        self._config(name)

    async def patch_connector_config(self, name, patch):
        await self._ask("patch_connector_config", name, dict(patch), write=True)
        config = self._config(name)
        for key, value in patch.items():
            if value is None:
                config.pop(key, None)
            else:
                config[key] = value
        return self._info(name)

    async def delete_connector(self, name):
        await self._ask("delete_connector", name, write=True)
        self._config(name)
        del self.configs[name], self.states[name]

    async def connector_status(self, name):
        await self._ask("connector_status", name)
        return self._status(name)

    async def task_configs(self, name):
        await self._ask("task_configs", name)
        config = self._config(name)
        return [{"id": {"connector": name, "task": t}, "config": {**config, "task.id": str(t)}}
                for t in range(self._tasks(name))]

    async def task_status(self, name, task):
        await self._ask("task_status", name, task)
        if not 0 <= task < self._tasks(name):
            raise NotFound(f"No status found for task {name}-{task}")
        return self._task_status(name, task)

    async def connector_topics(self, name):
        await self._ask("connector_topics", name)
        self._config(name)
        return self.topics.get(name, [])

    async def reset_connector_topics(self, name):
        await self._ask("reset_connector_topics", name)
        self._config(name)
        self.topics.pop(name, None)

    async def restart_connector(self, name, include_tasks, only_failed):
        await self._ask("restart_connector", name, include_tasks, only_failed, write=True)
        self._config(name)
        if not include_tasks and not only_failed:
            return None
        return self._status(name, (include_tasks, only_failed))

    async def restart_task(self, name, task):
        await self._ask("restart_task", name, task, write=True)
        if not 0 <= task < self._tasks(name):
            raise NotFound(f"Task {name}-{task} not found")
        self.failed_tasks.get(name, set()).discard(task)

    async def pause_connector(self, name):
        await self._ask("pause_connector", name)
        self._config(name)
        self.states[name] = "PAUSED"

    async def resume_connector(self, name):
        await self._ask("resume_connector", name)
        self._config(name)
        self.states[name] = "RUNNING"

    async def stop_connector(self, name):
        await self._ask("stop_connector", name, write=True)
        self._config(name)
        self.states[name] = "STOPPED"

    async def connector_offsets(self, name):
        await self._ask("connector_offsets", name)
        self._config(name)
        return {"offsets": self.offsets.get(name, [])}

    def _stopped(self, name):
        self._config(name)
        if self.states[name] != "STOPPED":
            raise BadRequest("Connectors must be in the STOPPED state before their offsets can "
                             "be modified. This can be done for the specified connector by "
                             "issuing a 'PUT' request to the '/connectors/" + name + "/stop' "
                             "endpoint")

    async def alter_connector_offsets(self, name, offsets):
        await self._ask("alter_connector_offsets", name, offsets, write=True)
        self._stopped(name)
        self.offsets[name] = offsets
        return "The offsets for this connector have been altered successfully"

    async def reset_connector_offsets(self, name):
        await self._ask("reset_connector_offsets", name, write=True)
        self._stopped(name)
        self.offsets.pop(name, None)
        return "The offsets for this connector have been reset successfully"

    async def validate_connector_config(self, config):
        await self._ask("validate_connector_config", dict(config))
        missing = [k for k in ("file", "topic") if k not in config]
        return {"name": config["connector.class"], "error_count": len(missing), "groups":
                ["Common"], "configs": [{"definition": {"name": k}, "value": {
                    "name": k, "value": config.get(k), "recommended_values": [], "errors":
                    [f"Missing required configuration \"{k}\" which has no default value."]
                    if k in missing else [], "visible": True}} for k in ("file", "topic")]}

    async def connector_plugins(self, connectors_only):
        await self._ask("connector_plugins", connectors_only)
        return PLUGINS if connectors_only else PLUGINS + CONVERTERS

    async def plugin_config(self, plugin):
        await self._ask("plugin_config", plugin)
        if plugin not in {p["class"] for p in PLUGINS} | {"FileStreamSource"}:
            raise NotFound(f"Unknown plugin {plugin}.")
        return [{"name": "file", "type": "STRING", "required": False, "default_value": None,
                 "importance": "HIGH", "documentation": "Source filename.", "group": None,
                 "width": "NONE", "display_name": "file", "dependents": [], "order": -1}]

    def kafka_cluster_id(self) -> str:
        return self.cluster_id

    def worker_url(self) -> str:
        return self.url
