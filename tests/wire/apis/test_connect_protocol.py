"""Kafka Connect's group protocol: the bytes ConnectProtocol and
IncrementalCooperativeConnectProtocol write, built here field by field from their schemas."""
import struct

from josefk.wire.apis.connect_protocol import ASSIGNMENT, CONNECTOR_TASK, WORKER_METADATA

CA = ASSIGNMENT.Struct.ConnectorAssignment


def s(text: str) -> bytes:
    return struct.pack(">h", len(text)) + text.encode()


def entries(*pairs) -> bytes:
    out = struct.pack(">i", len(pairs))
    for connector, tasks in pairs:
        out += s(connector) + struct.pack(f">i{len(tasks)}i", len(tasks), *tasks)
    return out


URL = "http://w1:8083/"
HEAD = struct.pack(">h", 0) + s("leader-1") + s("http://w0:8083/") + struct.pack(">q", 42)


def test_eager_metadata_is_version_url_offset():
    kafka = struct.pack(">h", 0) + s(URL) + struct.pack(">q", 17)
    assert WORKER_METADATA.to_bytes(0, url=URL, config_offset=17) == kafka
    state = WORKER_METADATA.from_bytes(kafka)
    assert (state.url, state.config_offset) == (URL, 17)


def test_cooperative_metadata_carries_the_previous_assignment_or_null():
    previous = struct.pack(">h", 1) + HEAD + entries(("c1", [CONNECTOR_TASK, 0])) \
        + struct.pack(">ii", -1, 0)
    for version in (1, 2):
        kafka = struct.pack(">h", version) + s(URL) + struct.pack(">q", 17) \
            + struct.pack(">i", len(previous)) + previous
        assert WORKER_METADATA.to_bytes(version, url=URL, config_offset=17,
                                        allocation=previous) == kafka
        assert WORKER_METADATA.from_bytes(kafka).allocation == previous
        none = struct.pack(">h", version) + s(URL) + struct.pack(">q", 17) + b"\xff\xff\xff\xff"
        assert WORKER_METADATA.to_bytes(version, url=URL, config_offset=17) == none
        assert WORKER_METADATA.from_bytes(none).allocation is None


def test_eager_assignment_lists_the_connector_as_task_minus_one():
    kafka = struct.pack(">h", 0) + HEAD + entries(("c1", [-1, 0, 2]), ("c2", [1]))
    ours = ASSIGNMENT.to_bytes(0, error=0, leader="leader-1", leader_url="http://w0:8083/",
                               config_offset=42, assignment=[CA(connector="c1", tasks=[-1, 0, 2]),
                                                             CA(connector="c2", tasks=[1])])
    assert ours == kafka
    read = ASSIGNMENT.from_bytes(kafka)
    assert [(a.connector, a.tasks) for a in read.assignment] == [("c1", [-1, 0, 2]), ("c2", [1])]


def test_cooperative_assignment_has_revoked_and_delay():
    kafka = struct.pack(">h", 2) + HEAD + entries(("c1", [0])) + entries(("c2", [-1, 3])) \
        + struct.pack(">i", 5000)
    ours = ASSIGNMENT.to_bytes(2, error=0, leader="leader-1", leader_url="http://w0:8083/",
                               config_offset=42, assignment=[CA(connector="c1", tasks=[0])],
                               revoked=[CA(connector="c2", tasks=[-1, 3])], scheduled_delay=5000)
    assert ours == kafka
    read = ASSIGNMENT.from_bytes(kafka)
    assert [(a.connector, a.tasks) for a in read.revoked] == [("c2", [-1, 3])]
    assert read.scheduled_delay == 5000


def test_null_arrays_of_a_cooperative_assignment():
    kafka = struct.pack(">h", 1) + HEAD + struct.pack(">iii", -1, -1, 0)
    read = ASSIGNMENT.from_bytes(kafka)
    assert (read.assignment, read.revoked, read.scheduled_delay) == (None, None, 0)
    assert ASSIGNMENT.to_bytes(1, error=0, leader="leader-1", leader_url="http://w0:8083/",
                               config_offset=42, assignment=None) == kafka
