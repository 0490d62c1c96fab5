"""The config topic's records: the exact bytes of each type, and records written by hand in
Kafka's layout read back into the cluster's config state."""
from josefk.connect.runtime.config_store import (ConfigState, RestartRequest, SessionKey,
                                                 commit_record, connector_record,
                                                 restart_record, session_key_record,
                                                 target_state_record, task_count_record,
                                                 task_record)
from josefk.connect.runtime.seams import ConnectorTaskId, TargetState

T0 = ConnectorTaskId("local-file-source", 0)


def test_each_record_type_in_kafkas_bytes():
    assert connector_record("local-file-source", {"connector.class": "FileStreamSource",
                                                  "tasks.max": "1"}) == (
        b"connector-local-file-source",
        b'{"properties":{"connector.class":"FileStreamSource","tasks.max":"1"}}')
    assert connector_record("gone", None) == (b"connector-gone", None)
    assert task_record(T0, {"file": "/tmp/in.txt"}) == (
        b"task-local-file-source-0", b'{"properties":{"file":"/tmp/in.txt"}}')
    assert commit_record("local-file-source", 2) == (b"commit-local-file-source", b'{"tasks":2}')
    assert target_state_record("c", TargetState.PAUSED) == (
        b"target-state-c", b'{"state":"PAUSED","state.v2":"PAUSED"}')
    assert target_state_record("c", TargetState.STOPPED) == (
        b"target-state-c", b'{"state":"PAUSED","state.v2":"STOPPED"}')
    assert session_key_record(SessionKey(b"\x01\x02\xff", "HmacSHA256", 1700000000000)) == (
        b"session-key",
        b'{"key":"AQL/","algorithm":"HmacSHA256","creation-timestamp":1700000000000}')
    assert restart_record(RestartRequest("c", True, False)) == (
        b"restart-connector-c", b'{"include-tasks":true,"only-failed":false}')
    assert task_count_record("c", 3) == (b"task-count-record-c", b'{"task-count":3}')


class Recorder:
    def __init__(self):
        self.events = []

    def __getattr__(self, name):
        return lambda arg: self.events.append((name, arg))


def feed(state, *records):
    for offset, (key, value) in enumerate(records, start=max(state.state.offset, 0)):
        state.apply(key.encode(), None if value is None else value.encode(), offset)


def test_tasks_apply_only_at_their_commit_record():
    events = Recorder()
    s = ConfigState(events)
    feed(s, ("connector-c", '{"properties":{"tasks.max":"2"}}'),
         ("task-c-0", '{"properties":{"n":"0"}}'),
         ("task-c-1", '{"properties":{"n":"1"}}'))
    assert s.state.connector_configs == {"c": {"tasks.max": "2"}}
    assert s.state.tasks("c") == [] and s.state.task_configs == {}
    feed(s, ("commit-c", '{"tasks":2}'))
    assert s.state.tasks("c") == [ConnectorTaskId("c", 0), ConnectorTaskId("c", 1)]
    assert s.state.task_config(ConnectorTaskId("c", 1)) == {"n": "1"}
    assert s.state.offset == 4
    assert events.events == [("on_connector_config_update", "c"),
                             ("on_task_config_update", [ConnectorTaskId("c", 0),
                                                        ConnectorTaskId("c", 1)])]


def test_a_commit_missing_task_configs_makes_the_connector_inconsistent_until_the_next():
    s = ConfigState()
    feed(s, ("connector-c", '{"properties":{}}'), ("task-c-0", '{"properties":{"n":"0"}}'),
         ("commit-c", '{"tasks":1}'), ("task-c-1", '{"properties":{"n":"1"}}'),
         ("commit-c", '{"tasks":2}'))
    assert "c" in s.state.inconsistent and s.state.tasks("c") == []
    feed(s, ("task-c-0", '{"properties":{"n":"a"}}'), ("task-c-1", '{"properties":{"n":"b"}}'),
         ("commit-c", '{"tasks":2}'))
    assert "c" not in s.state.inconsistent
    assert [s.state.task_config(t) for t in s.state.tasks("c")] == [{"n": "a"}, {"n": "b"}]


def test_a_commit_to_fewer_tasks_drops_the_others():
    s = ConfigState()
    feed(s, ("task-c-0", '{"properties":{}}'), ("task-c-1", '{"properties":{}}'),
         ("commit-c", '{"tasks":2}'), ("task-c-0", '{"properties":{"x":"y"}}'),
         ("commit-c", '{"tasks":1}'))
    assert list(s.state.task_configs) == [ConnectorTaskId("c", 0)]


def test_a_commit_is_pending_fencing_until_its_task_count_record():
    """KIP-618: new task configs wait for a round of zombie fencing, which the task-count
    record ends; the record keeps the count fenced generations are counted by."""
    s = ConfigState()
    feed(s, ("connector-c", '{"properties":{}}'), ("task-c-0", '{"properties":{}}'),
         ("task-c-1", '{"properties":{}}'), ("commit-c", '{"tasks":2}'))
    assert s.state.pending_fencing == {"c"} and s.state.task_count_records == {}
    feed(s, ("task-count-record-c", '{"task-count":2}'))
    assert s.state.pending_fencing == set() and s.state.task_count_records == {"c": 2}
    feed(s, ("task-c-0", '{"properties":{}}'), ("commit-c", '{"tasks":1}'))
    copy = s.state.copy()
    assert copy.pending_fencing == {"c"} and copy.task_count_records == {"c": 2}
    feed(s, ("connector-c", None))
    assert s.state.pending_fencing == set() and s.state.task_count_records == {}


def test_target_states_old_and_new_layout_and_session_key_and_restart():
    events = Recorder()
    s = ConfigState(events)
    feed(s, ("connector-a", '{"properties":{}}'), ("target-state-a", '{"state":"PAUSED"}'),
         ("connector-b", '{"properties":{}}'),
         ("target-state-b", '{"state":"PAUSED","state.v2":"STOPPED"}'),
         ("session-key", '{"key":"AQL/","algorithm":"HmacSHA256","creation-timestamp":5}'),
         ("restart-connector-a", '{"include-tasks":true,"only-failed":true}'),
         ("task-count-record-a", '{"task-count":4}'))
    assert s.state.target_state("a") is TargetState.PAUSED
    assert s.state.target_state("b") is TargetState.STOPPED
    assert s.state.session_key == SessionKey(b"\x01\x02\xff", "HmacSHA256", 5)
    assert s.state.task_count_records == {"a": 4}
    assert ("on_restart_request", RestartRequest("a", True, True)) in events.events


def test_a_tombstone_deletes_the_connector_its_tasks_and_state():
    events = Recorder()
    s = ConfigState(events)
    feed(s, ("connector-c", '{"properties":{}}'), ("target-state-c", '{"state":"PAUSED"}'),
         ("task-c-0", '{"properties":{}}'), ("commit-c", '{"tasks":1}'),
         ("connector-c", None), ("target-state-c", None))
    assert s.state.connectors() == [] and s.state.task_configs == {}
    assert s.state.target_state("c") is TargetState.STARTED
    assert events.events[-1] == ("on_connector_config_remove", "c")


def test_bad_records_are_discarded_not_fatal():
    s = ConfigState()
    feed(s, ("connector-c", "not json"), ("what-is-this", "{}"), ("commit-c", '{"nope":1}'),
         ("connector-d", '{"properties":{"k":"v"}}'))
    assert s.state.connector_configs == {"d": {"k": "v"}}
