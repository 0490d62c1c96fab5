"""Replay the request frames recorded from the Apache Kafka Java client and Spark's connector
(`testkit/vectors/java/`) against a broker and check each answer is the one Kafka would give.

The frames are sent byte for byte as recorded (their correlation ids included); responses are
decoded with the response layout of the request's version.
"""
from __future__ import annotations

import json
import socket
import struct
import uuid
from pathlib import Path

import pytest

from josefk.wire import errors
from josefk.wire.apis import API_BY_KEY
from josefk.wire.compiler import Message
from josefk.wire.headers import peek_request_header, read_request_header, read_response_header
from josefk.zk.local_server import free_port
from testkit import JAVA_VECTORS

VECTORS = JAVA_VECTORS

# The order a client session would send them in: set up, produce, consume in a group, tear down.
ORDER = ["ApiVersions", "Metadata", "CreateTopics", "DescribeCluster", "DescribeTopicPartitions",
         "GetTelemetrySubscriptions", "InitProducerId", "Produce", "ListOffsets", "Fetch",
         "FindCoordinator", "JoinGroup", "SyncGroup", "Heartbeat", "OffsetCommit", "OffsetFetch",
         "LeaveGroup", "DeleteTopics"]


# The only fields of these responses that Apache Kafka may leave null (every other field the Java
# client reads must carry a value; e.g. a null DescribeTopicPartitions EligibleLeaderReplicas
# makes the Java AdminClient's describeTopics, and so Spark's connector, throw).
KAFKA_NULLS = {
    "Metadata": {"brokers[].rack"},  # no broker.rack set
    "DescribeCluster": {"brokers[].rack", "error_message"},
    "DescribeTopicPartitions": {"next_cursor"},  # every partition fitted in the response
    "Produce": {"responses[].partition_responses[].error_message"},
    "Fetch": {"responses[].partitions[].aborted_transactions"},  # read_uncommitted
    "FindCoordinator": {"coordinators[].error_message"},
    "JoinGroup": {"protocol_type", "protocol_name"},  # MEMBER_ID_REQUIRED: no protocol yet
    "SyncGroup": {"protocol_type", "protocol_name"},  # UNKNOWN_MEMBER_ID
    "LeaveGroup": {"members[].group_instance_id"},  # dynamic members
    "DeleteTopics": {"responses[].error_message"},
}


def null_fields(msg, version: int, path: str = "") -> set[str]:
    """Paths of the (untagged) fields of ``msg`` present in ``version`` whose value is null."""
    out = set()
    for f in type(msg)._fields:
        if version not in f.versions or f.tag is not None:
            continue
        value, here = getattr(msg, f.name), path + f.name
        if value is None:
            out.add(here)
        elif isinstance(value, Message):
            out |= null_fields(value, version, here + ".")
        elif isinstance(value, list):
            for item in value:
                if isinstance(item, Message):
                    out |= null_fields(item, version, here + "[].")
    return out


def _vectors():
    index = json.loads((VECTORS / "index.json").read_text())["vectors"]
    by_name = {v["api_name"]: v for v in index}
    assert set(by_name) == set(ORDER), "a recorded API is missing from this test's ORDER"
    return [by_name[n] for n in ORDER]


def _exchange(sock, frame: bytes):
    sock.sendall(frame)
    size = struct.unpack(">i", _recv(sock, 4))[0]
    return _recv(sock, size)


def _recv(sock, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("broker closed the connection")
        buf += chunk
    return bytes(buf)


@pytest.fixture
def broker(broker_factory):
    """A broker with a receiver of client metrics (its Prometheus endpoint), so it serves the
    telemetry APIs (KIP-714) the recorded clients call, as Kafka does with a metrics reporter."""
    return broker_factory({"josefk.metrics.port": free_port()})


def test_recorded_java_requests_get_kafka_answers(broker):
    # The Java client's own frames (by-client/java-client) are the top-level ones replayed here.
    java_client = sorted((VECTORS / "by-client" / "java-client").glob("*.bin"))
    assert [f.name for f in java_client] == sorted(v["file"] for v in _vectors())
    assert all(f.read_bytes() == (VECTORS / f.name).read_bytes() for f in java_client)
    host, port = broker.bootstrap.rsplit(":", 1)
    answers = {}
    with socket.create_connection((host, int(port)), timeout=15) as sock:
        for v in _vectors():
            frame = (VECTORS / v["file"]).read_bytes()
            h = peek_request_header(frame[4:])
            api = API_BY_KEY[h.api_key]
            data = _exchange(sock, frame)
            corr, pos = read_response_header(data, api.response_header_version(h.api_version))
            assert corr == v["correlation_id"]
            resp, end = api.Response.decode(data, h.api_version, pos)
            assert end == len(data), f"{v['api_name']}: trailing bytes in the response"
            answers[v["api_name"]] = resp
            assert null_fields(resp, h.api_version) <= KAFKA_NULLS.get(v["api_name"], set()), \
                f"{v['api_name']} v{h.api_version}: null where Kafka sends a value"

    a = answers
    assert a["ApiVersions"].error_code == errors.NONE
    advertised = {k.api_key for k in a["ApiVersions"].api_keys}
    assert advertised == set(API_BY_KEY)
    assert a["Metadata"].brokers and a["Metadata"].cluster_id
    topic = "java-smoke-1795239611439"
    (created,) = a["CreateTopics"].topics
    assert (created.name, created.error_code, created.num_partitions) == (topic, 0, 3)
    assert a["DescribeCluster"].error_code == 0 and a["DescribeCluster"].brokers
    (described,) = a["DescribeTopicPartitions"].topics
    assert described.error_code == 0 and len(described.partitions) == 3
    assert described.topic_id == created.topic_id
    assert all(p.eligible_leader_replicas == [] and p.last_known_elr == []
               for p in described.partitions)
    subs = a["GetTelemetrySubscriptions"]
    assert subs.error_code == 0 and subs.client_instance_id != uuid.UUID(int=0)
    assert subs.requested_metrics == []
    assert a["InitProducerId"].error_code == 0 and a["InitProducerId"].producer_id >= 0
    produced = a["Produce"].responses[0].partition_responses
    assert sorted(p.index for p in produced) == [0, 1, 2]
    assert all(p.error_code == 0 and p.base_offset == 0 for p in produced)
    listed = a["ListOffsets"].topics[0].partitions
    assert all(p.error_code == 0 and p.offset == 0 for p in listed)
    # The recorded fetch names the recording broker's topic id, unknown here.
    fetched = a["Fetch"].responses[0].partitions[0]
    assert fetched.error_code == errors.UNKNOWN_TOPIC_ID
    (coord,) = a["FindCoordinator"].coordinators
    assert coord.error_code == 0 and coord.port == int(port)
    join = a["JoinGroup"]
    assert join.error_code == errors.MEMBER_ID_REQUIRED and join.member_id
    # The recorded member ids were never admitted by this broker.
    assert a["SyncGroup"].error_code == errors.UNKNOWN_MEMBER_ID
    assert a["Heartbeat"].error_code == errors.UNKNOWN_MEMBER_ID
    commit_codes = {p.error_code for t in a["OffsetCommit"].topics for p in t.partitions}
    assert commit_codes == {errors.UNKNOWN_MEMBER_ID}
    (group,) = a["OffsetFetch"].groups
    assert group.error_code == 0
    assert all(p.committed_offset == -1 for t in group.topics for p in t.partitions)
    (left,) = a["LeaveGroup"].members
    assert left.error_code == errors.UNKNOWN_MEMBER_ID
    (deleted,) = a["DeleteTopics"].responses
    assert (deleted.name, deleted.error_code) == (topic, 0)


def _replay(sock, path: Path, patch: tuple[bytes, bytes] | None = None):
    """Send one recorded frame (with ``patch``'s bytes replaced) and return the decoded answer,
    after checking its correlation id and that no field is null where Kafka sends a value."""
    frame = path.read_bytes()
    if patch is not None:
        assert frame.count(patch[0]) == 1
        frame = frame.replace(*patch)
    h = peek_request_header(frame[4:])
    api = API_BY_KEY[h.api_key]
    data = _exchange(sock, frame)
    corr, pos = read_response_header(data, api.response_header_version(h.api_version))
    assert corr == h.correlation_id
    resp, end = api.Response.decode(data, h.api_version, pos)
    assert end == len(data)
    assert null_fields(resp, h.api_version) <= KAFKA_NULLS.get(api.name, set()), \
        f"{path.name}: null where Kafka sends a value"
    return resp


def _request(path: Path):
    frame = path.read_bytes()[4:]
    h = peek_request_header(frame)
    api = API_BY_KEY[h.api_key]
    _, pos = read_request_header(frame, api.request_header_version(h.api_version))
    return api.Request.decode(frame[pos:], h.api_version)[0]


def test_spark_connector_session_gets_kafka_answers(broker):
    """The frames of a Spark job's run, in its order: both clients' ApiVersions (each API they
    send is advertised at the version they send), the set-up admin's Metadata and its topics,
    the connector's AdminClient discovers partitions (DescribeCluster, DescribeTopicPartitions),
    its idempotent producer writes, its consumer lists offsets and fetches (the recorded topic
    id is swapped for this broker's), and the admin deletes the topics. Every frame recorded
    from these two clients is sent."""
    admin, spark = VECTORS / "by-client" / "java-admin-in-spark-check-setup", \
        VECTORS / "by-client" / "spark-connector"
    host, port = broker.bootstrap.rsplit(":", 1)
    sent = set()
    with socket.create_connection((host, int(port)), timeout=15) as sock:
        def replay(path, patch=None):
            sent.add(path)
            return _replay(sock, path, patch)

        for client in (admin, spark):
            # Every API the client sends, at the version it sends, is advertised.
            versions = replay(client / "ApiVersions_v4.bin")
            assert versions.error_code == 0
            ranges = {k.api_key: (k.min_version, k.max_version) for k in versions.api_keys}
            for f in client.glob("*.bin"):
                h = peek_request_header(f.read_bytes()[4:])
                low, high = ranges[h.api_key]
                assert low <= h.api_version <= high, f.name
        # The admin's first look at the cluster: brokers only (an empty topic list).
        md = replay(admin / "Metadata_v12.bin")
        assert [(b.host, b.port) for b in md.brokers] == [(host, int(port))]
        assert md.topics == [] and md.cluster_id and md.controller_id >= 0
        created = {t.name: t for t in replay(admin / "CreateTopics_v7.bin").topics}
        source = "spark-check-in-1795239673563"
        assert [t.error_code for t in created.values()] == [0, 0]
        assert created[source].num_partitions == 3

        for client in (admin, spark):
            cluster = replay(client / "DescribeCluster_v1.bin")
            assert cluster.error_code == 0 and cluster.controller_id >= 0
            assert [(b.host, b.port) for b in cluster.brokers] == [(host, int(port))]
            described = replay(client / "DescribeTopicPartitions_v0.bin").topics
            assert {t.name for t in described} <= set(created)
            for t in described:
                assert t.error_code == 0 and t.topic_id == created[t.name].topic_id
                assert sorted(p.partition_index for p in t.partitions) == \
                    list(range(created[t.name].num_partitions))
                for p in t.partitions:
                    assert p.leader_id == cluster.brokers[0].broker_id and p.leader_epoch >= 0
                    assert p.replica_nodes == p.isr_nodes == [p.leader_id]
                    assert p.eligible_leader_replicas == p.last_known_elr == []
                    assert p.offline_replicas == []
        metadata = replay(spark / "Metadata_v12.bin")
        assert metadata.cluster_id == cluster.cluster_id
        assert metadata.controller_id == cluster.controller_id

        assert replay(spark / "GetTelemetrySubscriptions_v0.bin").error_code == 0
        pid = replay(spark / "InitProducerId_v5.bin")
        assert (pid.error_code, pid.producer_epoch) == (0, 0) and pid.producer_id >= 0
        batches = {p.index: p.records for t in _request(spark / "Produce_v11.bin").topic_data
                   for p in t.partition_data}
        produced = replay(spark / "Produce_v11.bin").responses[0].partition_responses
        for p in produced:
            assert (p.error_code, p.base_offset, p.log_append_time_ms, p.log_start_offset) == \
                (0, 0, -1, 0)
            assert p.record_errors == []

        (listed,) = replay(spark / "ListOffsets_v9.bin").topics[0].partitions
        assert (listed.error_code, listed.timestamp, listed.offset) == (0, -1, 0)
        assert listed.leader_epoch >= 0

        recorded_id = _request(spark / "Fetch_v17.bin").topics[0].topic_id
        fetched = replay(spark / "Fetch_v17.bin",
                          patch=(recorded_id.bytes, created[source].topic_id.bytes))
        assert fetched.error_code == 0
        (part,) = fetched.responses[0].partitions
        records, written = bytes(part.records), bytes(batches[0])
        n = _count_records(written)
        assert part.error_code == 0 and part.high_watermark == part.last_stable_offset == n
        assert part.log_start_offset == 0 and part.preferred_read_replica == -1
        # The batch as written, at base offset 0 (the leader epoch at 12..15 is the broker's).
        assert records[:12] == bytes(8) + written[8:12] and records[16:] == written[16:]

        deleted = replay(admin / "DeleteTopics_v6.bin").responses
        assert sorted((d.name, d.error_code) for d in deleted) == sorted(
            (name, 0) for name in created)
    assert sent == {*admin.glob("*.bin"), *spark.glob("*.bin")}  # every recorded frame


def _count_records(batch: bytes) -> int:
    """Records in one v2 record batch: last offset delta + 1."""
    return struct.unpack_from(">i", batch, 23)[0] + 1
