"""Replay the request frames recorded from the Apache Kafka Java client and Spark's connector
(`shared/vectors/java/`) against a broker and check each answer is the one Kafka would give.

The frames are sent byte for byte as recorded (their correlation ids included); responses are
decoded with the response layout of the request's version.
"""
from __future__ import annotations

import json
import os
import socket
import struct
import uuid
from pathlib import Path

import pytest

from wire import errors
from wire.apis import API_BY_KEY
from wire.headers import peek_request_header, read_response_header

VECTORS = Path(os.environ.get("JOSEFK_VECTORS",
                              Path(__file__).resolve().parents[2] / "shared" / "vectors" / "java"))
pytestmark = pytest.mark.skipif(not (VECTORS / "index.json").exists(),
                                reason=f"no recorded vectors at {VECTORS}")

# The order a client session would send them in: set up, produce, consume in a group, tear down.
ORDER = ["ApiVersions", "Metadata", "CreateTopics", "DescribeCluster", "DescribeTopicPartitions",
         "GetTelemetrySubscriptions", "InitProducerId", "Produce", "ListOffsets", "Fetch",
         "FindCoordinator", "JoinGroup", "SyncGroup", "Heartbeat", "OffsetCommit", "OffsetFetch",
         "LeaveGroup", "DeleteTopics"]


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


def test_recorded_java_requests_get_kafka_answers(broker):
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
