"""The status topic's records: exact bytes and read-back of records in Kafka's layout."""
from josefk.connect.runtime.seams import ConnectorTaskId, State, Status
from josefk.connect.runtime.status_store import (StatusState, status_key, status_value,
                                                 topic_key, topic_value)


def test_status_records_in_kafkas_bytes():
    assert status_key("c") == b"status-connector-c"
    assert status_key(ConnectorTaskId("my-conn", 3)) == b"status-task-my-conn-3"
    assert status_value(Status(State.RUNNING, None, "10.0.0.1:8083", 7)) == (
        b'{"state":"RUNNING","trace":null,"worker_id":"10.0.0.1:8083","generation":7}')
    assert status_value(Status(State.FAILED, "boom\n\tat x", "w:1", 0)) == (
        b'{"state":"FAILED","trace":"boom\\n\\tat x","worker_id":"w:1","generation":0}')
    assert status_value(Status(State.DESTROYED, None, "w:1", 2)) is None
    assert topic_key("c", "orders") == b"status-topic-orders:connector-c"
    assert topic_value("c", "orders", 1, 1700000000123) == (
        b'{"topic":{"name":"orders","connector":"c","task":1,'
        b'"discoverTimestamp":1700000000123}}')


def test_read_back():
    s = StatusState()
    s.apply(b"status-connector-c",
            b'{"state":"RUNNING","trace":null,"worker_id":"w1:8083","generation":2}')
    s.apply(b"status-task-c-d-0",
            b'{"state":"FAILED","trace":"t","worker_id":"w2:8083","generation":3}')
    s.apply(b"status-topic-a:b:connector-c",
            b'{"topic":{"name":"a:b","connector":"c","task":0,"discoverTimestamp":1}}')
    assert s.get("c") == Status(State.RUNNING, None, "w1:8083", 2)
    assert s.get(ConnectorTaskId("c-d", 0)) == Status(State.FAILED, "t", "w2:8083", 3)
    assert s.topics == {"c": {"a:b"}}
    s.apply(b"status-connector-c", None)
    s.apply(b"status-task-c-d-0", None)
    s.apply(b"status-topic-a:b:connector-c", None)
    assert s.get("c") is None and s.get(ConnectorTaskId("c-d", 0)) is None
    assert s.topics == {"c": set()}


def test_bad_status_records_are_discarded():
    s = StatusState()
    s.apply(b"status-connector-c", b'{"state":"NOPE","worker_id":"w","generation":1}')
    s.apply(b"status-task-x", b'{}')
    s.apply(b"other", b'{}')
    assert s.connectors == {} and s.tasks == {}
