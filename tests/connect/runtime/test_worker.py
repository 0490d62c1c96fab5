"""The Worker's own rules, without a broker: task configs as tasks.max says, a task that
cannot be built reported FAILED, connectors' target states."""
from josefk.connect.connectors.generator import GeneratorSourceConnector
from josefk.connect.runtime.abstract_herder import MemoryStatusStore, StatusWriter
from josefk.connect.runtime.plugins import Plugins
from josefk.connect.runtime.seams import ConnectorTaskId, State, TargetState
from josefk.connect.runtime.worker import Worker
from josefk.connect.runtime.worker_config import WorkerConfig


class TooMany(GeneratorSourceConnector):
    def task_configs(self, max_tasks):
        return super().task_configs(max_tasks + 1)


def worker(tmp_path, **props):
    config = WorkerConfig({"bootstrap.servers": "127.0.0.1:1",
                           "offset.storage.file.filename": str(tmp_path / "o.json"), **props},
                          distributed=False)
    config.worker_id = "w:1"
    statuses = MemoryStatusStore()
    return Worker(config, Plugins({"connector": {"tests.TooMany": TooMany}}), None,
                  StatusWriter(statuses, lambda: "w:1")), statuses


def test_task_configs_carry_the_task_class_and_respect_tasks_max(tmp_path):
    w, statuses = worker(tmp_path)
    props = {"name": "gen", "connector.class": "GeneratorSource", "topic": "t",
             "tasks.max": "2"}
    w.start_connector("gen", props, TargetState.STARTED, lambda: None)
    try:
        configs = w.connector_task_configs("gen", props)
        assert [c["task.class"] for c in configs] == [
            "josefk.connect.connectors.generator.GeneratorSourceTask"] * 2
        assert statuses.get("gen").state is State.RUNNING
        w.set_target_state("gen", TargetState.PAUSED)
        assert statuses.get("gen").state is State.PAUSED
        w.set_target_state("gen", TargetState.STOPPED)
        assert statuses.get("gen").state is State.STOPPED
        w.set_target_state("gen", TargetState.STARTED)
        assert statuses.get("gen").state is State.RUNNING
    finally:
        w.stop()
    assert statuses.get("gen").state is State.UNASSIGNED


def test_a_connector_making_more_tasks_than_tasks_max_fails_unless_not_enforced(tmp_path):
    w, statuses = worker(tmp_path)
    props = {"name": "many", "connector.class": "tests.TooMany", "topic": "t", "tasks.max": "1"}
    w.start_connector("many", props, TargetState.STARTED, lambda: None)
    try:
        try:
            w.connector_task_configs("many", props)
        except Exception as e:
            assert str(e).startswith("The connector many has generated 2 tasks, which is "
                                     "greater than 1, the maximum number of tasks it is "
                                     "configured to create.")
        else:
            raise AssertionError("more tasks than tasks.max were accepted")
        assert statuses.get("many").state is State.FAILED
        lenient = dict(props, name="lenient", **{"tasks.max.enforce": "false"})
        w.start_connector("lenient", lenient, TargetState.STARTED, lambda: None)
        assert len(w.connector_task_configs("lenient", lenient)) == 2
    finally:
        w.stop()


def test_a_task_the_override_policy_refuses_is_failed_with_the_reason(tmp_path):
    w, statuses = worker(tmp_path, **{"connector.client.config.override.policy": "None"})
    props = {"name": "gen", "connector.class": "GeneratorSource", "topic": "t",
             "producer.override.linger.ms": "5"}
    w.start_connector("gen", props, TargetState.STARTED, lambda: None)
    try:
        [config] = w.connector_task_configs("gen", props)
        assert w.start_task(ConnectorTaskId("gen", 0), props, config,
                            TargetState.STARTED) is False
        status = statuses.get(ConnectorTaskId("gen", 0))
        assert status.state is State.FAILED
        assert ("The 'None' policy does not allow 'linger.ms' to be overridden in the "
                "connector configuration.") in status.trace
        assert w.task_ids() == []
    finally:
        w.stop()


def test_an_unknown_connector_class_is_failed_at_start(tmp_path):
    w, statuses = worker(tmp_path)
    w.start_connector("x", {"name": "x", "connector.class": "Nope"}, TargetState.STARTED,
                      lambda: None)
    status = statuses.get("x")
    assert status.state is State.FAILED and "Failed to find any class" in status.trace
    assert w.connector_names() == []
