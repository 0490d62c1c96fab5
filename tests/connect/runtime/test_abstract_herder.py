import asyncio

import pytest

from josefk.connect.runtime.abstract_herder import (AbstractHerder, MemoryStatusStore,
                                                    StatusWriter)
from josefk.connect.runtime.herder import NotFound
from josefk.connect.runtime.plugins import Plugins
from josefk.connect.runtime.seams import ConnectorTaskId, State, Status, TargetState


class Herder(AbstractHerder):
    """The mode-specific hooks over a dict of configs."""

    def __init__(self, configs):
        super().__init__(None, None, Plugins(), MemoryStatusStore(), None)
        self.configs = configs

    def _config(self, name):
        if name not in self.configs:
            raise NotFound(f"Connector {name} not found")
        return self.configs[name]

    def _target(self, name):
        return TargetState.STARTED


SOURCE = {"connector.class": "FileStreamSource"}


def herder_with(connector_state, *task_states):
    h = Herder({"c": SOURCE})
    writer = StatusWriter(h.status_store, lambda: "w:1")
    getattr(writer, connector_state)("c")
    for task, state in enumerate(task_states):
        if state == "on_failure":
            writer.on_failure(ConnectorTaskId("c", task), "trace")
        else:
            getattr(writer, state)(ConnectorTaskId("c", task))
    return h


def test_statuses_in_connects_shape():
    h = herder_with("on_startup", "on_startup", "on_failure")
    assert asyncio.run(h.connector_status("c")) == {
        "name": "c", "connector": {"state": "RUNNING", "worker_id": "w:1"},
        "tasks": [{"id": 0, "state": "RUNNING", "worker_id": "w:1"},
                  {"id": 1, "state": "FAILED", "worker_id": "w:1", "trace": "trace"}],
        "type": "source"}
    assert asyncio.run(h.task_status("c", 1))["trace"] == "trace"
    with pytest.raises(NotFound, match="No status found for task c-5"):
        asyncio.run(h.task_status("c", 5))
    with pytest.raises(NotFound, match="Connector d not found"):
        asyncio.run(h.connector_status("d"))


def test_restart_plans_as_kip_745():
    h = herder_with("on_startup", "on_startup", "on_failure")
    everything = h.restart_plan("c", include_tasks=True, only_failed=False)
    assert everything.restart_connector and everything.tasks == [
        ConnectorTaskId("c", 0), ConnectorTaskId("c", 1)]
    assert [t["state"] for t in everything.body["tasks"]] == ["RESTARTING", "RESTARTING"]
    failed_only = h.restart_plan("c", include_tasks=True, only_failed=True)
    assert not failed_only.restart_connector
    assert failed_only.body["connector"] == {"state": "RUNNING", "worker_id": "w:1"}
    assert failed_only.tasks == [ConnectorTaskId("c", 1)]
    assert [t["state"] for t in failed_only.body["tasks"]] == ["RUNNING", "RESTARTING"]
    connector_only = h.restart_plan("c", include_tasks=False, only_failed=False)
    assert connector_only.restart_connector and connector_only.tasks == []


def test_a_status_of_an_older_generation_does_not_replace_a_newer_one_on_shutdown():
    store = MemoryStatusStore()
    store.put("c", Status(State.RUNNING, None, "w:2", 5))
    StatusWriter(store, lambda: "w:1", generation=lambda: 4).on_shutdown("c")
    assert store.get("c").worker_id == "w:2"
    StatusWriter(store, lambda: "w:1", generation=lambda: 6).on_shutdown("c")
    assert store.get("c") == Status(State.UNASSIGNED, None, "w:1", 6)


def test_topics_used_are_kept_per_connector_once():
    store = MemoryStatusStore()
    writer = StatusWriter(store, lambda: "w:1")
    for topic in ("b", "a", "b"):
        writer.on_topic_used(ConnectorTaskId("c", 0), topic)
    assert store.topics("c") == ["a", "b"]
    store.delete_topics("c")
    assert store.topics("c") == []
