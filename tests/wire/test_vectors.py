"""Request frames recorded from the real Apache Kafka Java client (3.9.2) and Spark's connector.

Each ``.bin`` is a whole frame: 4-byte big-endian size, request header (v1, or v2 for flexible
versions), body. Every frame must decode completely and re-encode to the very same bytes.
"""
from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from josefk.wire.apis import API_BY_KEY
from josefk.wire.headers import peek_request_header, read_request_header
from testkit import JAVA_VECTORS


VECTORS = JAVA_VECTORS
FRAMES = sorted(VECTORS.rglob("*.bin"))


def _decode(path: Path):
    """Returns (header, request, body) for one recorded frame, checking it is consumed whole."""
    raw = path.read_bytes()
    (size,) = struct.unpack_from(">i", raw, 0)
    assert size == len(raw) - 4, "size prefix does not match the frame"
    frame = raw[4:]
    key, version = peek_request_header(frame).api_key, peek_request_header(frame).api_version
    api = API_BY_KEY[key]
    assert version in api.versions, f"{api.name} v{version} is not declared"
    header, pos = read_request_header(frame, api.request_header_version(version))
    body = frame[pos:]
    request, end = api.Request.decode(body, version)
    assert end == len(body), f"{path.name}: {len(body) - end} trailing bytes"
    return header, request, body


def test_vectors_present():
    assert FRAMES, f"no .bin frames under {VECTORS}"


@pytest.mark.parametrize("path", FRAMES, ids=lambda p: str(p.relative_to(VECTORS)))
def test_frame_decodes_whole_and_reencodes_identically(path):
    header, request, body = _decode(path)
    assert request.to_bytes(header.api_version) == bytes(body)
    name, version = path.stem.rsplit("_v", 1)
    api = API_BY_KEY[header.api_key]
    assert (api.name, header.api_version) == (name, int(version))


def test_index_matches_frames():
    index = json.loads((VECTORS / "index.json").read_text())
    for entry in index["vectors"] + index.get("per_client", []):
        header, _, _ = _decode(VECTORS / entry["file"])
        assert header.api_key == entry["api_key"]
        assert header.api_version == entry["api_version"]
        assert header.correlation_id == entry["correlation_id"]
        assert header.client_id == entry["client_id"]
        assert (VECTORS / entry["file"]).stat().st_size == entry["size"]


def _frame(name):
    return _decode(VECTORS / f"{name}.bin")


def test_produce_v11_carries_record_batches():
    header, req, _ = _frame("Produce_v11")
    assert header.client_id == "java-smoke-producer"
    assert req.acks in (-1, 0, 1) and req.timeout_ms > 0
    assert req.topic_data and req.topic_data[0].name
    for topic in req.topic_data:
        for part in topic.partition_data:
            batch = bytes(part.records)
            assert len(batch) >= 61
            (base_offset, batch_length) = struct.unpack_from(">qi", batch, 0)
            assert batch[16] == 2, "record batch magic must be 2"
            assert 12 + batch_length <= len(batch)


def test_fetch_v17_uses_topic_ids():
    _, req, _ = _frame("Fetch_v17")
    assert req.replica_state is None and req.max_wait_ms == 500 and req.min_bytes == 1
    assert req.topics and all(t.topic_id.int != 0 and t.topic == "" for t in req.topics)
    assert all(p.partition_max_bytes > 0 for t in req.topics for p in t.partitions)


def test_metadata_v12_request():
    _, req, _ = _frame("Metadata_v12")
    assert req.topics == [] and req.allow_auto_topic_creation is True


def test_list_offsets_v9_asks_for_earliest():
    _, req, _ = _frame("ListOffsets_v9")
    assert req.replica_id == -1
    assert {p.timestamp for t in req.topics for p in t.partitions} == {-2}


def test_group_protocol_frames():
    _, join, _ = _frame("JoinGroup_v9")
    assert join.protocol_type == "consumer" and join.member_id == ""
    assert [p.name for p in join.protocols][0] == "range"
    _, sync, _ = _frame("SyncGroup_v5")
    assert sync.protocol_name == "range" and sync.assignments
    _, commit, _ = _frame("OffsetCommit_v9")
    assert commit.topics[0].partitions[0].committed_offset >= 0
    _, fetch, _ = _frame("OffsetFetch_v9")
    assert fetch.groups[0].group_id == commit.group_id and fetch.require_stable is True
    _, find, _ = _frame("FindCoordinator_v6")
    assert find.key_type == 0 and find.coordinator_keys == [commit.group_id]
    _, leave, _ = _frame("LeaveGroup_v5")
    assert leave.members[0].reason


def test_admin_frames():
    _, create, _ = _frame("CreateTopics_v7")
    assert create.topics[0].num_partitions == 3
    _, delete, _ = _frame("DeleteTopics_v6")
    assert delete.topics[0].name == create.topics[0].name
    _, dtp, _ = _frame("DescribeTopicPartitions_v0")
    assert dtp.cursor is None and dtp.response_partition_limit == 2000
    _, init, _ = _frame("InitProducerId_v5")
    assert init.producer_id == -1 and init.producer_epoch == -1
    _, api_versions, _ = _frame("ApiVersions_v4")
    assert api_versions.client_software_name == "apache-kafka-java"
