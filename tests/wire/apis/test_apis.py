"""Declared API layouts: round trips of every version, conformance with Kafka's JSON schemas,
and a few byte-exact encodings checked by hand."""
from __future__ import annotations

import importlib.resources
import re
import uuid

import pytest

from josefk.wire import types as T
from josefk.wire.apis import (ALL_APIS, ALTER_PARTITION, API_BY_KEY, API_VERSIONS,
                              CONTROLLED_SHUTDOWN, DESCRIBE_TOPIC_PARTITIONS, ELECT_LEADERS, FETCH,
                              LEADER_AND_ISR, METADATA, OFFSET_FOR_LEADER_EPOCH, PRODUCE,
                              STOP_REPLICA, UPDATE_METADATA)
from josefk.wire.compiler import _default_value
from josefk.wire.schema import (BOOL, BYTES, FLOAT64, INT8, INT16, INT32, INT64, RECORDS, STRING,
                                UINT16, UUID, Array, Struct, Versions)
from testkit.kafka_versions import KAFKA_3_9_RANGES, KAFKA_4_2_SHARE_RANGES

# kafka-python vendors no share schemas (KIP-932): their layouts are pinned in test_share_wire.py.

# The versions KIP-896 removed in Kafka 4.0 (name: highest removed version): the only places where
# the vendored 4.x schemas below start later than 3.9 did. Checked against the schemas' own
# "Version(s) ... removed in Apache Kafka 4.0" comments by test_kip_896_table_matches_the_schemas.
KIP_896_REMOVED = {"Produce": 2, "Fetch": 3, "ListOffsets": 0, "OffsetCommit": 1,
                   "OffsetFetch": 0, "CreateTopics": 1, "DeleteTopics": 0, "DescribeConfigs": 0,
                   "OffsetForLeaderEpoch": 1, "WriteTxnMarkers": 0, "DescribeLogDirs": 0,
                   "DescribeAcls": 0, "CreateAcls": 0, "DeleteAcls": 0}

CASES = [(api, v, side) for api in ALL_APIS for v in range(api.min_version, api.max_version + 1)
         for side in ("Request", "Response")]


def _case_id(case):
    api, v, side = case
    return f"{api.name}{side}-v{v}"


# -- a generic populator ------------------------------------------------------------------------

class _Filler:
    """Fills every field present in a version with a value that differs from its default.

    With ``nulls=True`` every field that is nullable in that version is set to None instead."""

    def __init__(self, version: int, flexible: bool, nulls: bool):
        self.version, self.flexible, self.nulls = version, flexible, nulls
        self.n = 0

    def _next(self):
        self.n += 1
        return self.n

    def present(self, f):
        return self.version in f.versions and (f.tag is None or self.flexible)

    def struct(self, klass):
        obj = klass()
        for f in klass._fields:
            if self.present(f):
                setattr(obj, f.name, self.value(klass, f))
        return obj

    def value(self, klass, f):
        if self.nulls and self.version in f.nullable:
            return None
        t = f.type
        if isinstance(t, list):
            return [self.struct(klass._nested[f.name]) for _ in range(2)]
        if isinstance(t, Struct):
            return self.struct(klass._nested[f.name])
        if isinstance(t, Array):
            return [self.prim(t.item, None) for _ in range(2)]
        return self.prim(t, f)

    def prim(self, t, f):
        n = self._next()
        default = _default_value(f) if f is not None else None
        if t is BOOL:
            return not default
        if t in (INT8, INT16, UINT16, INT32, INT64):
            value = {INT8: 3 + n % 100, INT16: 300 + n, UINT16: 40000 + n, INT32: 70000 + n,
                     INT64: (1 << 40) + n}[t]
            return -value if t is not UINT16 and n % 3 == 0 else value
        if t is FLOAT64:
            return n + 0.5
        if t is UUID:
            return uuid.UUID(int=(0x1234 << 100) + n)
        if t is STRING:
            return f"s{n}-é"
        if t is BYTES:
            return bytes([n % 256, 0, 255, 7])
        if t is RECORDS:
            return b"\x00" * 8 + bytes([n % 256]) * 13
        raise AssertionError(f"unknown type {t}")


@pytest.mark.parametrize("case", CASES, ids=_case_id)
@pytest.mark.parametrize("nulls", [False, True], ids=["values", "nulls"])
def test_round_trip_every_version(case, nulls):
    api, version, side = case
    klass = getattr(api, side)
    obj = _Filler(version, api.is_flexible(version), nulls).struct(klass)
    buf = obj.to_bytes(version)
    decoded, end = klass.decode(buf, version)
    assert end == len(buf), "decoder did not consume the whole buffer"
    assert decoded == obj
    assert decoded.to_bytes(version) == buf
    # a buffer cut short must fail cleanly, never decode silently
    if len(buf) > 1:
        with pytest.raises(T.DecodeError):
            klass.decode(buf[:-1], version)


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_defaults_round_trip(case):
    api, version, side = case
    klass = getattr(api, side)
    buf = klass().to_bytes(version)
    decoded, end = klass.decode(buf, version)
    assert end == len(buf)
    assert decoded == klass()


def test_registry_covers_exactly_the_requested_apis():
    assert [a.key for a in ALL_APIS] == sorted(a.key for a in ALL_APIS)
    assert {a.name: (a.key, a.min_version, a.max_version) for a in ALL_APIS} == {
        **KAFKA_3_9_RANGES, **KAFKA_4_2_SHARE_RANGES}
    assert API_BY_KEY == {a.key: a for a in ALL_APIS}
    assert API_BY_KEY[18] is API_VERSIONS


def test_unsupported_version_is_refused():
    with pytest.raises(T.DecodeError):
        PRODUCE.Request.decode(b"", 12)
    with pytest.raises(T.DecodeError):
        FETCH.Request.decode(b"", 18)


def _struct_names(fields):
    for f in fields:
        if isinstance(f.type, (list, Struct)):
            yield f.struct_name
            yield from _struct_names(f.type if isinstance(f.type, list) else f.type.fields)


@pytest.mark.parametrize("api", ALL_APIS, ids=lambda a: a.name)
def test_every_struct_is_named_and_reachable(api):
    for side, fields in (("Request", api.request_fields), ("Response", api.response_fields)):
        top = getattr(api, side)
        for name in _struct_names(fields):
            assert name, f"{api.name}{side}: a struct field has no struct= name"
            assert getattr(top, name).__name__ == name


# -- conformance with Apache Kafka's JSON message schemas ---------------------------------------
# kafka-python vendors Apache Kafka's clients/src/main/resources/common/message/*.json. Those are
# 4.x schemas: newer than our ranges at the top and without the versions KIP-896 removed at the
# bottom, so every comparison is made on versions intersected with both ranges (Kafka never
# changes a released version's layout). The removed versions' layouts are checked byte for byte
# in tests/test_old_versions.py.

from kafka.protocol.schemas.load_json import load_json  # noqa: E402  (a test dependency)

_SCHEMAS = importlib.resources.files("kafka.protocol.schemas.resources")


def _has_schema(api):
    return _SCHEMAS.joinpath(api.name + "Request.json").is_file()


# kafka-python's copy lacks the schemas Kafka 4.0 deleted (the ZooKeeper-era inter-broker APIs),
# KIP-714's telemetry pair and KIP-848's two APIs; those layouts are pinned byte for byte below and
# in test_vectors.py.
PINNED_BY_HAND = {"LeaderAndIsr", "StopReplica", "UpdateMetadata", "ControlledShutdown",
                  "AlterPartition", "GetTelemetrySubscriptions", "PushTelemetry",
                  "ConsumerGroupHeartbeat", "ConsumerGroupDescribe", *KAFKA_4_2_SHARE_RANGES}
WITH_SCHEMA = [api for api in ALL_APIS if _has_schema(api)]


def test_only_the_pinned_apis_lack_a_vendored_schema():
    assert {api.name for api in ALL_APIS if not _has_schema(api)} == PINNED_BY_HAND


def test_kip_896_table_matches_the_schemas():
    removed = {}
    for api in WITH_SCHEMA:
        text = _SCHEMAS.joinpath(api.name + "Request.json").read_text()
        m = re.search(r"Versions? (?:0-)?(\d+) (?:was|were) removed in Apache Kafka 4\.0", text)
        if m:
            removed[api.name] = int(m.group(1))
    assert removed == KIP_896_REMOVED
    assert all(KAFKA_3_9_RANGES[name][1] == 0 for name in removed)


_JSON_PRIMS = {"int8": INT8, "int16": INT16, "uint16": UINT16, "int32": INT32, "int64": INT64,
               "float64": FLOAT64, "bool": BOOL, "uuid": UUID, "string": STRING, "bytes": BYTES,
               "records": RECORDS}


def _cut(spec, lo, hi):
    v = Versions(spec) if isinstance(spec, str) else spec
    a, b = max(v.lo, lo), min(v.hi, hi)
    return (a, b) if a <= b else None


def _snake(name):
    name = name.replace("KRaft", "Kraft")  # isKRaftController -> is_kraft_controller
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _kafka_default(jf, prim):
    d = jf.get("default")
    if d is None:
        return {BOOL: False, STRING: "", BYTES: b"", RECORDS: None, UUID: uuid.UUID(int=0),
                FLOAT64: 0.0}.get(prim, 0)
    if d == "null":
        return None
    if prim is BOOL:
        return d in (True, "true")
    if prim is STRING:
        return d
    return int(d, 0) if isinstance(d, str) else d


def _compare(where, jfields, ours, lo, hi, problems):
    jfields = [jf for jf in jfields if _cut(jf["versions"], lo, hi)]
    ours = [f for f in ours if _cut(f.versions, lo, hi)]
    jnames = [_snake(jf["name"]) for jf in jfields]
    if jnames != [f.name for f in ours]:
        problems.append(f"{where}: fields {[f.name for f in ours]} != kafka {jnames}")
        return
    for jf, f in zip(jfields, ours):
        at = f"{where}.{f.name}"
        span = _cut(jf["versions"], lo, hi)
        if _cut(f.versions, lo, hi) != span:
            problems.append(f"{at}: versions {f.versions} != kafka {jf['versions']}")
            continue
        jnull = _cut(jf.get("nullableVersions", "none"), *span)
        if _cut(f.nullable, *span) != jnull:
            problems.append(f"{at}: nullable {f.nullable} != kafka {jf.get('nullableVersions')}")
        if jf.get("tag") != f.tag:
            problems.append(f"{at}: tag {f.tag} != kafka {jf.get('tag')}")
        elif f.tag is not None and _cut(jf["taggedVersions"], *span) != span:
            problems.append(f"{at}: taggedVersions {jf['taggedVersions']} != versions")
        jt = jf["type"]
        inner = jt[2:] if jt.startswith("[]") else jt
        if jt.startswith("[]") and inner in _JSON_PRIMS:
            if not (isinstance(f.type, Array) and f.type.item is _JSON_PRIMS[inner]):
                problems.append(f"{at}: type != kafka {jt}")
            want = None if jf.get("default") == "null" else []
            if (None if f.default is None else []) != want:
                problems.append(f"{at}: array default != kafka {jf.get('default')}")
        elif inner in _JSON_PRIMS:
            prim = _JSON_PRIMS[inner]
            if f.type is not prim:
                problems.append(f"{at}: type {f.type} != kafka {jt}")
            elif _default_value(f) != _kafka_default(jf, prim):
                problems.append(f"{at}: default {_default_value(f)!r} != kafka {jf.get('default')}")
        else:
            is_array = jt.startswith("[]")
            if is_array != isinstance(f.type, list) or not isinstance(f.type, (list, Struct)):
                problems.append(f"{at}: type != kafka {jt}")
                continue
            if f.struct_name != inner:
                problems.append(f"{at}: struct={f.struct_name!r} != kafka {inner!r}")
            if not is_array and f.tag is None and jf.get("default") == "null" and f.default is not None:
                problems.append(f"{at}: nullable struct should default to None")
            sub = f.type if is_array else f.type.fields
            _compare(at, jf.get("fields", []), sub, *span, problems)


@pytest.mark.parametrize("api", WITH_SCHEMA, ids=lambda a: a.name)
@pytest.mark.parametrize("side", ["Request", "Response"])
def test_matches_kafka_json_schema(api, side):
    schema = load_json(api.name + side)
    assert schema["apiKey"] == api.key
    valid = Versions(schema["validVersions"])
    assert api.max_version <= valid.hi, f"kafka valid versions {schema['validVersions']}"
    assert valid.lo == KIP_896_REMOVED.get(api.name, -1) + 1
    assert api.min_version == (0 if api.name in KIP_896_REMOVED else valid.lo)
    lo, hi = max(api.min_version, valid.lo), api.max_version
    flexible = Versions(schema.get("flexibleVersions", "none"))
    for v in range(lo, hi + 1):
        assert (v in flexible) == api.is_flexible(v), f"flexibility of v{v}"
    problems = []
    ours = api.request_fields if side == "Request" else api.response_fields
    _compare(api.name + side, schema["fields"], ours, lo, hi, problems)
    assert not problems, "\n".join(problems)


# -- byte-exact cases, checked by hand ----------------------------------------------------------

def test_metadata_v0_request_bytes():
    req = METADATA.Request(topics=[METADATA.Request.MetadataRequestTopic(name="t")])
    # int32 array length 1, int16 string length 1, "t"
    assert req.to_bytes(0) == b"\x00\x00\x00\x01\x00\x01t"
    decoded, end = METADATA.Request.decode(b"\x00\x00\x00\x01\x00\x01t", 0)
    assert end == 7 and decoded.topics[0].name == "t"


def test_metadata_v1_null_topics_means_all():
    assert METADATA.Request(topics=None).to_bytes(1) == b"\xff\xff\xff\xff"
    decoded, _ = METADATA.Request.decode(b"\xff\xff\xff\xff", 1)
    assert decoded.topics is None


def test_metadata_v9_flexible_request_bytes():
    req = METADATA.Request(topics=[METADATA.Request.MetadataRequestTopic(name="t")])
    # compact array (1+1), compact string (1+1) "t", topic tags, auto-create true,
    # include cluster ops false, include topic ops false, top-level tags
    assert req.to_bytes(9) == b"\x02\x02t\x00\x01\x00\x00\x00"


_FETCH_V12_FIXED = (b"\xff\xff\xff\xff" b"\x00\x00\x01\xf4" b"\x00\x00\x00\x01" b"\x7f\xff\xff\xff"
                    b"\x00" b"\x00\x00\x00\x00" b"\xff\xff\xff\xff" b"\x01" b"\x01" b"\x01")


def test_fetch_v12_request_with_tagged_cluster_id():
    req = FETCH.Request(cluster_id="c", max_wait_ms=500, min_bytes=1)
    # replica -1, max wait 500, min bytes 1, max bytes 0x7fffffff, isolation 0, session 0,
    # epoch -1, no topics, no forgotten topics, rack "", then 1 tagged field: tag 0, size 2, "c"
    expected = _FETCH_V12_FIXED + b"\x01\x00\x02\x02c"
    assert req.to_bytes(12) == expected
    decoded, end = FETCH.Request.decode(expected, 12)
    assert end == len(expected) and decoded.cluster_id == "c"
    # untouched tagged fields are not written at all
    assert FETCH.Request(max_wait_ms=500, min_bytes=1).to_bytes(12) == _FETCH_V12_FIXED + b"\x00"


def test_fetch_v15_replica_state_is_tag_1_after_cluster_id():
    req = FETCH.Request(cluster_id="c", max_wait_ms=500, min_bytes=1,
                        replica_state=FETCH.Request.ReplicaState(replica_id=2, replica_epoch=9))
    body = req.to_bytes(15)
    # v15 drops the top-level replica id; tags come sorted: 0 (cluster id), 1 (replica state)
    tags = (b"\x02" b"\x00\x02\x02c"
            b"\x01\x0d" b"\x00\x00\x00\x02" b"\x00\x00\x00\x00\x00\x00\x00\x09" b"\x00")
    assert body == _FETCH_V12_FIXED[4:] + tags
    decoded, _ = FETCH.Request.decode(body, 15)
    assert decoded.replica_state.replica_id == 2 and decoded.replica_state.replica_epoch == 9


def test_unknown_tagged_fields_are_skipped():
    body = _FETCH_V12_FIXED + b"\x02" + b"\x07\x03abc" + b"\x00\x02\x02c"
    decoded, end = FETCH.Request.decode(body, 12)
    assert end == len(body) and decoded.cluster_id == "c"


def test_produce_v10_response_tagged_leader_and_endpoints():
    R = PRODUCE.Response
    resp = R(responses=[R.TopicProduceResponse(name="t", partition_responses=[
        R.PartitionProduceResponse(index=0, error_code=6, base_offset=-1,
                                   current_leader=R.LeaderIdAndEpoch(leader_id=2, leader_epoch=5))])],
        node_endpoints=[R.NodeEndpoint(node_id=2, host="h", port=9092)])
    body = resp.to_bytes(10)
    expected = (b"\x02" b"\x02t" b"\x02"                       # responses[1], name "t", partitions[1]
                b"\x00\x00\x00\x00" b"\x00\x06"                # index 0, error 6
                b"\xff\xff\xff\xff\xff\xff\xff\xff"            # base offset -1
                b"\xff\xff\xff\xff\xff\xff\xff\xff"            # log append time -1
                b"\xff\xff\xff\xff\xff\xff\xff\xff"            # log start offset -1
                b"\x01" b"\x00"                                # no record errors, error message null
                b"\x01\x00\x09" b"\x00\x00\x00\x02\x00\x00\x00\x05\x00"  # tag 0: current leader
                b"\x00"                                        # topic tags
                b"\x00\x00\x00\x00"                            # throttle time
                b"\x01\x00\x0d" b"\x02" b"\x00\x00\x00\x02\x02h\x00\x00\x23\x84\x00\x00")  # tag 0
    assert body == expected
    decoded, end = R.decode(body, 10)
    assert end == len(body) and decoded == resp


def test_nullable_struct_has_presence_marker():
    Q = DESCRIBE_TOPIC_PARTITIONS.Request
    no_cursor = Q(topics=[Q.TopicRequest(name="t")]).to_bytes(0)
    assert no_cursor == b"\x02\x02t\x00" b"\x00\x00\x07\xd0" b"\xff" b"\x00"
    with_cursor = Q(topics=[], cursor=Q.Cursor(topic_name="t", partition_index=3)).to_bytes(0)
    assert with_cursor == b"\x01" b"\x00\x00\x07\xd0" b"\x01\x02t\x00\x00\x00\x03\x00" b"\x00"
    decoded, _ = Q.decode(with_cursor, 0)
    assert decoded.cursor == Q.Cursor(topic_name="t", partition_index=3)


def test_api_versions_v0_response_bytes():
    R = API_VERSIONS.Response
    resp = R(error_code=35, api_keys=[R.ApiVersion(api_key=18, min_version=0, max_version=4)])
    assert resp.to_bytes(0) == b"\x00\x23" b"\x00\x00\x00\x01" b"\x00\x12\x00\x00\x00\x04"


def test_records_are_zero_copy_views():
    P = PRODUCE.Request
    batch = bytes(range(70))
    req = P(acks=-1, timeout_ms=1000, topic_data=[P.TopicProduceData(name="t", partition_data=[
        P.PartitionProduceData(index=0, records=batch)])])
    for version in (3, 9, 11):
        chunks = req.encode(version)
        assert any(c is batch for c in chunks), "records should be passed through, not copied"
        decoded, _ = P.decode(b"".join(bytes(c) for c in chunks), version)
        records = decoded.topic_data[0].partition_data[0].records
        assert isinstance(records, memoryview) and bytes(records) == batch


# -- replication APIs (Kafka 3.9, ZooKeeper mode): byte-exact cases derived from the schemas ------
# kafka-python vendors neither LeaderAndIsr, StopReplica, UpdateMetadata, ControlledShutdown nor
# AlterPartition, nor OffsetForLeaderEpoch v0-1, so these pin the layouts by hand.

def _i16(n):
    return n.to_bytes(2, "big", signed=True)


def _i32(n):
    return n.to_bytes(4, "big", signed=True)


def _i64(n):
    return n.to_bytes(8, "big", signed=True)


def _check(klass, obj, version, expected):
    assert obj.to_bytes(version) == expected
    decoded, end = klass.decode(expected, version)
    assert end == len(expected)
    assert decoded.to_bytes(version) == expected
    return decoded


def test_shared_structs_are_one_field_list():
    from josefk.wire.apis import replication as r

    def field(fields, name):
        return next(f for f in fields if f.name == name)

    req = LEADER_AND_ISR.request_fields
    topic_state = field(req, "topic_states").type
    assert field(req, "ungrouped_partition_states").type is r.LEADER_AND_ISR_PARTITION_STATE
    assert field(topic_state, "partition_states").type is r.LEADER_AND_ISR_PARTITION_STATE
    resp = LEADER_AND_ISR.response_fields
    assert field(resp, "partition_errors").type is r.LEADER_AND_ISR_PARTITION_ERROR
    assert (field(field(resp, "topics").type, "partition_errors").type
            is r.LEADER_AND_ISR_PARTITION_ERROR)
    req = UPDATE_METADATA.request_fields
    assert field(req, "ungrouped_partition_states").type is r.UPDATE_METADATA_PARTITION_STATE
    assert (field(field(req, "topic_states").type, "partition_states").type
            is r.UPDATE_METADATA_PARTITION_STATE)


def test_leader_and_isr_v0_request_bytes():
    Q = LEADER_AND_ISR.Request
    req = Q(controller_id=1, controller_epoch=2,
            ungrouped_partition_states=[Q.LeaderAndIsrPartitionState(
                topic_name="t", partition_index=0, controller_epoch=2, leader=1, leader_epoch=3,
                isr=[1], partition_epoch=4, replicas=[1, 2])],
            live_leaders=[Q.LeaderAndIsrLiveLeader(broker_id=1, host_name="h", port=9092)])
    expected = (_i32(1) + _i32(2)                            # controller id, controller epoch
                + _i32(1)                                    # 1 ungrouped partition state
                + b"\x00\x01t" + _i32(0) + _i32(2)            # topic, index, controller epoch
                + _i32(1) + _i32(3)                          # leader, leader epoch
                + _i32(1) + _i32(1)                          # isr [1]
                + _i32(4)                                    # partition epoch (zk version)
                + _i32(2) + _i32(1) + _i32(2)                # replicas [1, 2]; no IsNew in v0
                + _i32(1) + _i32(1) + b"\x00\x01h" + _i32(9092))  # live leaders
    decoded = _check(Q, req, 0, expected)
    assert decoded.ungrouped_partition_states[0].replicas == [1, 2]
    assert decoded.topic_states == [] and decoded.broker_epoch == -1


def test_leader_and_isr_v7_request_bytes():
    Q = LEADER_AND_ISR.Request
    T_ = Q.LeaderAndIsrTopicState
    tid = uuid.UUID(int=1)
    req = Q(controller_id=1, is_kraft_controller=True, controller_epoch=2, broker_epoch=5, type=1,
            topic_states=[T_(topic_name="t", topic_id=tid, partition_states=[
                T_.LeaderAndIsrPartitionState(
                    partition_index=0, controller_epoch=2, leader=1, leader_epoch=3, isr=[1],
                    partition_epoch=4, replicas=[1], adding_replicas=[], removing_replicas=[],
                    is_new=True, leader_recovery_state=1)])],
            live_leaders=[Q.LeaderAndIsrLiveLeader(broker_id=1, host_name="h", port=9092)])
    # controller id, is kraft, controller epoch, broker epoch, type
    expected = (_i32(1) + b"\x01" + _i32(2) + _i64(5) + b"\x01"
                + b"\x02" + b"\x02t" + tid.bytes              # 1 topic state: name, topic id
                + b"\x02" + _i32(0) + _i32(2) + _i32(1) + _i32(3)  # index, ce, leader, le
                + b"\x02" + _i32(1) + _i32(4)                 # isr [1], partition epoch
                + b"\x02" + _i32(1) + b"\x01" + b"\x01"       # replicas [1], adding [], removing []
                + b"\x01" + b"\x01" + b"\x00"                 # is new, leader recovery state, tags
                + b"\x00"                                     # topic state tags
                + b"\x02" + _i32(1) + b"\x02h" + _i32(9092) + b"\x00"  # live leaders
                + b"\x00")                                    # top-level tags
    decoded = _check(Q, req, 7, expected)
    p = decoded.topic_states[0].partition_states[0]
    assert decoded.is_kraft_controller and p.is_new and p.leader_recovery_state == 1
    # v6 lacks only is_kraft_controller
    assert Q(**{f.name: getattr(req, f.name) for f in Q._fields if f.name != "is_kraft_controller"}
             ).to_bytes(6) == expected[:4] + expected[5:]


def test_leader_and_isr_v5_response_bytes():
    R = LEADER_AND_ISR.Response
    tid = uuid.UUID(int=3)
    resp = R(topics=[R.LeaderAndIsrTopicError(topic_id=tid, partition_errors=[
        R.LeaderAndIsrTopicError.LeaderAndIsrPartitionError(partition_index=2, error_code=6)])])
    expected = _i16(0) + b"\x02" + tid.bytes + b"\x02" + _i32(2) + _i16(6) + b"\x00\x00\x00"
    _check(R, resp, 5, expected)
    v0 = R(error_code=0, partition_errors=[R.LeaderAndIsrPartitionError(
        topic_name="t", partition_index=2, error_code=6)])
    _check(R, v0, 0, _i16(0) + _i32(1) + b"\x00\x01t" + _i32(2) + _i16(6))


def test_stop_replica_v0_and_v3_request_bytes():
    Q = STOP_REPLICA.Request
    v0 = Q(controller_id=1, controller_epoch=2, delete_partitions=True,
           ungrouped_partitions=[Q.StopReplicaPartitionV0(topic_name="t", partition_index=4)])
    _check(Q, v0, 0, _i32(1) + _i32(2) + b"\x01" + _i32(1) + b"\x00\x01t" + _i32(4))
    S = Q.StopReplicaTopicState
    v3 = Q(controller_id=1, controller_epoch=2, broker_epoch=9, topic_states=[S(
        topic_name="t", partition_states=[S.StopReplicaPartitionState(
            partition_index=4, leader_epoch=7, delete_partition=True)])])
    # no delete_partitions in v3; partition state then its tags, topic state tags, top tags
    _check(Q, v3, 3, _i32(1) + _i32(2) + _i64(9) + b"\x02\x02t\x02" + _i32(4) + _i32(7)
           + b"\x01\x00\x00\x00")
    # v4 puts is_kraft_controller right after the controller id
    v4 = v3.to_bytes(4)
    assert v4 == _i32(1) + b"\x00" + v3.to_bytes(3)[4:]


def test_update_metadata_v0_and_v8_request_bytes():
    Q = UPDATE_METADATA.Request
    v0 = Q(controller_id=1, controller_epoch=2,
           ungrouped_partition_states=[Q.UpdateMetadataPartitionState(
               topic_name="t", partition_index=0, controller_epoch=2, leader=1, leader_epoch=3,
               isr=[1], zk_version=4, replicas=[1])],
           live_brokers=[Q.UpdateMetadataBroker(id=1, v0_host="h", v0_port=9092)])
    _check(Q, v0, 0, _i32(1) + _i32(2) + _i32(1) + b"\x00\x01t" + _i32(0) + _i32(2) + _i32(1)
           + _i32(3) + _i32(1) + _i32(1) + _i32(4) + _i32(1) + _i32(1)
           + _i32(1) + _i32(1) + b"\x00\x01h" + _i32(9092))   # broker: id, host, port; no rack
    B = Q.UpdateMetadataBroker
    v8 = Q(controller_id=1, is_kraft_controller=True, type=2, controller_epoch=2, broker_epoch=5,
           live_brokers=[B(id=1, endpoints=[B.UpdateMetadataEndpoint(
               port=9092, host="h", listener="L", security_protocol=0)], rack=None)])
    expected = (_i32(1) + b"\x01" + _i32(2) + _i64(5)       # id, kraft, epoch, broker epoch
                + b"\x01"                                   # no topic states
                + b"\x02" + _i32(1)                         # 1 live broker, id 1
                + b"\x02" + _i32(9092) + b"\x02h" + b"\x02L" + _i16(0) + b"\x00"  # 1 endpoint
                + b"\x00" + b"\x00"                         # rack null, broker tags
                + b"\x01\x00\x01\x02")                      # tagged Type (tag 0, 1 byte) = 2
    decoded = _check(Q, v8, 8, expected)
    assert decoded.type == 2 and decoded.live_brokers[0].rack is None
    # an Unknown (0) type is the default and is not written at all
    v8.type = 0
    assert v8.to_bytes(8) == expected[:-4] + b"\x00"


def test_controlled_shutdown_bytes():
    Q, R = CONTROLLED_SHUTDOWN.Request, CONTROLLED_SHUTDOWN.Response
    _check(Q, Q(broker_id=3), 0, _i32(3))
    _check(Q, Q(broker_id=3, broker_epoch=8), 2, _i32(3) + _i64(8))
    _check(Q, Q(broker_id=3, broker_epoch=8), 3, _i32(3) + _i64(8) + b"\x00")
    resp = R(error_code=0, remaining_partitions=[R.RemainingPartition(topic_name="t",
                                                                      partition_index=1)])
    _check(R, resp, 3, _i16(0) + b"\x02\x02t" + _i32(1) + b"\x00\x00")


def test_offset_for_leader_epoch_v0_and_v4_bytes():
    Q, R = OFFSET_FOR_LEADER_EPOCH.Request, OFFSET_FOR_LEADER_EPOCH.Response
    req = Q(topics=[Q.OffsetForLeaderTopic(topic="t", partitions=[
        Q.OffsetForLeaderTopic.OffsetForLeaderPartition(partition=0, leader_epoch=3)])])
    _check(Q, req, 0, _i32(1) + b"\x00\x01t" + _i32(1) + _i32(0) + _i32(3))
    # v3 leads with the replica id (default -2, a debug consumer); v2 adds the current epoch
    _check(Q, req, 3, _i32(-2) + _i32(1) + b"\x00\x01t" + _i32(1) + _i32(0) + _i32(-1) + _i32(3))
    resp = R(topics=[R.OffsetForLeaderTopicResult(topic="t", partitions=[
        R.OffsetForLeaderTopicResult.EpochEndOffset(error_code=0, partition=0, leader_epoch=3,
                                                    end_offset=100)])])
    _check(R, resp, 0, _i32(1) + b"\x00\x01t" + _i32(1) + _i16(0) + _i32(0) + _i64(100))
    _check(R, resp, 1, _i32(1) + b"\x00\x01t" + _i32(1) + _i16(0) + _i32(0) + _i32(3) + _i64(100))
    _check(R, resp, 4, _i32(0) + b"\x02\x02t\x02" + _i16(0) + _i32(0) + _i32(3) + _i64(100)
           + b"\x00\x00\x00")


def test_elect_leaders_null_topic_partitions_means_all():
    Q = ELECT_LEADERS.Request
    _check(Q, Q(election_type=1, topic_partitions=None), 1,
           b"\x01" + b"\xff\xff\xff\xff" + _i32(60000))
    _check(Q, Q(election_type=1, topic_partitions=None), 2, b"\x01\x00" + _i32(60000) + b"\x00")
    R = ELECT_LEADERS.Response
    resp = R(replica_election_results=[R.ReplicaElectionResult(topic="t", partition_result=[
        R.ReplicaElectionResult.PartitionResult(partition_id=0, error_code=0,
                                                error_message=None)])])
    _check(R, resp, 0, _i32(0) + _i32(1) + b"\x00\x01t" + _i32(1) + _i32(0) + _i16(0)
           + b"\xff\xff")


def test_alter_partition_v2_and_v3_request_bytes():
    Q = ALTER_PARTITION.Request
    P = Q.TopicData.PartitionData
    tid = uuid.UUID(int=2)
    req = Q(broker_id=1, broker_epoch=10, topics=[Q.TopicData(topic_id=tid, partitions=[
        P(partition_index=0, leader_epoch=3, new_isr=[1, 2], leader_recovery_state=0,
          partition_epoch=7)])])
    expected = (_i32(1) + _i64(10)                          # broker id, broker epoch
                + b"\x02" + tid.bytes                       # 1 topic, by id (v2+)
                + b"\x02" + _i32(0) + _i32(3)               # 1 partition: index, leader epoch
                + b"\x03" + _i32(1) + _i32(2)               # new isr [1, 2]
                + b"\x00" + _i32(7)                         # leader recovery state, partition epoch
                + b"\x00\x00\x00")                          # partition, topic, top-level tags
    _check(Q, req, 2, expected)
    v3 = Q(broker_id=1, broker_epoch=10, topics=[Q.TopicData(topic_id=tid, partitions=[
        P(partition_index=0, leader_epoch=3, new_isr_with_epochs=[
            P.BrokerState(broker_id=1, broker_epoch=11)], partition_epoch=7)])])
    _check(Q, v3, 3, _i32(1) + _i64(10) + b"\x02" + tid.bytes + b"\x02" + _i32(0) + _i32(3)
           + b"\x02" + _i32(1) + _i64(11) + b"\x00"   # new isr with epochs, broker state tags
           + b"\x00" + _i32(7) + b"\x00\x00\x00")
    # v0 names the topic and has no leader recovery state
    v0 = Q(broker_id=1, broker_epoch=10, topics=[Q.TopicData(topic_name="t", partitions=[
        P(partition_index=0, leader_epoch=3, new_isr=[1], partition_epoch=7)])])
    _check(Q, v0, 0, _i32(1) + _i64(10) + b"\x02\x02t\x02" + _i32(0) + _i32(3)
           + b"\x02" + _i32(1) + _i32(7) + b"\x00\x00\x00")


@pytest.mark.parametrize("version", [0, 9, 12])
def test_encoded_struct_stands_in_for_itself(version):
    """A struct encoded once (Message.encoded) encodes, inside its array, to the same bytes as
    the struct itself, next to structs encoded as usual."""
    R = METADATA.Response
    topics = [R.MetadataResponseTopic(name=f"t{i}", topic_id=uuid.uuid4(), partitions=[
        R.MetadataResponsePartition(partition_index=p, leader_id=1, replica_nodes=[1, 2],
                                    isr_nodes=[1]) for p in range(3)]) for i in range(3)]
    plain = R(brokers=[], cluster_id="c", controller_id=1, topics=topics).to_bytes(version)
    mixed = R(brokers=[], cluster_id="c", controller_id=1,
              topics=[topics[0].encoded(version), topics[1], topics[2].encoded(version)])
    assert mixed.to_bytes(version) == plain
    back, _ = R.decode(plain, version)
    assert [t.name for t in back.topics] == ["t0", "t1", "t2"]


# -- KIP-848 (Kafka 4.x): kafka-python vendors neither ConsumerGroupHeartbeat nor
# ConsumerGroupDescribe; the layouts below are derived from Kafka 4.1's schemas by hand ----------

def _cstr(s):
    return bytes([len(s) + 1]) + s.encode()


TID = uuid.UUID("3f1b8e0c-5a6d-4c3b-9d8e-7f6a5b4c3d2e")


def test_consumer_group_heartbeat_v1_request_bytes():
    from josefk.wire.apis import CONSUMER_GROUP_HEARTBEAT as CGH

    Q = CGH.Request
    join = Q(group_id="g", member_id="m1", member_epoch=0, rebalance_timeout_ms=300000,
             subscribed_topic_names=["orders"], subscribed_topic_regex=None,
             topic_partitions=[])
    expected = (_cstr("g") + _cstr("m1") + _i32(0)
                + b"\x00" + b"\x00"                   # instance id, rack id: null
                + _i32(300000)
                + b"\x02" + _cstr("orders")           # subscribed topic names
                + b"\x00"                             # regex: null (v1+)
                + b"\x00"                             # server assignor: null
                + b"\x01"                             # topic partitions: empty
                + b"\x00")
    _check(Q, join, 1, expected)
    # v0 has no regex field
    assert join.to_bytes(0) == expected[:-4] + expected[-3:]
    steady = Q(group_id="g", member_id="m1", member_epoch=4, topic_partitions=[
        Q.TopicPartitions(topic_id=TID, partitions=[0, 2])])
    assert steady.to_bytes(1) == (_cstr("g") + _cstr("m1") + _i32(4) + b"\x00\x00" + _i32(-1)
                                  + b"\x00\x00\x00" + b"\x02" + TID.bytes + b"\x03" + _i32(0)
                                  + _i32(2) + b"\x00" + b"\x00")


def test_consumer_group_heartbeat_response_bytes():
    from josefk.wire.apis import CONSUMER_GROUP_HEARTBEAT as CGH

    R = CGH.Response
    resp = R(error_code=0, member_id="m1", member_epoch=5, heartbeat_interval_ms=5000,
             assignment=R.Assignment(topic_partitions=[
                 R.TopicPartitions(topic_id=TID, partitions=[1])]))
    _check(R, resp, 1, _i32(0) + _i16(0) + b"\x00" + _cstr("m1") + _i32(5) + _i32(5000)
           + b"\x01" + b"\x02" + TID.bytes + b"\x02" + _i32(1) + b"\x00" + b"\x00" + b"\x00")
    fenced = R(error_code=110, error_message="stale", member_epoch=0, heartbeat_interval_ms=0)
    _check(R, fenced, 0, _i32(0) + _i16(110) + _cstr("stale") + b"\x00" + _i32(0) + _i32(0)
           + b"\xff" + b"\x00")


def test_consumer_group_describe_bytes():
    from josefk.wire.apis import CONSUMER_GROUP_DESCRIBE as CGD

    Q = CGD.Request
    _check(Q, Q(group_ids=["g"], include_authorized_operations=True), 0,
           b"\x02" + _cstr("g") + b"\x01" + b"\x00")
    R = CGD.Response
    A = R.Assignment
    member = R.Member(member_id="m1", member_epoch=3, client_id="c", client_host="/h",
                      subscribed_topic_names=["t"],
                      assignment=A(topic_partitions=[A.TopicPartitions(
                          topic_id=TID, topic_name="t", partitions=[0])]),
                      target_assignment=A(), member_type=1)
    resp = R(groups=[R.DescribedGroup(group_id="g", group_state="Stable", group_epoch=3,
                                      assignment_epoch=3, assignor_name="uniform",
                                      members=[member])])
    assignment = b"\x02" + TID.bytes + _cstr("t") + b"\x02" + _i32(0) + b"\x00" + b"\x00"
    member_v0 = (_cstr("m1") + b"\x00\x00" + _i32(3) + _cstr("c") + _cstr("/h")
                 + b"\x02" + _cstr("t") + b"\x00" + assignment + b"\x01\x00")
    group = (_i16(0) + b"\x00" + _cstr("g") + _cstr("Stable") + _i32(3) + _i32(3)
             + _cstr("uniform") + b"\x02")
    ops = _i32(-2147483648) + b"\x00"
    _check(R, resp, 0, _i32(0) + b"\x02" + group + member_v0 + b"\x00" + ops + b"\x00")
    _check(R, resp, 1, _i32(0) + b"\x02" + group + member_v0 + b"\x01" + b"\x00" + ops + b"\x00")


def test_offset_commit_and_fetch_v10_name_topics_by_id():
    from josefk.wire.apis import OFFSET_COMMIT, OFFSET_FETCH

    Q = OFFSET_COMMIT.Request
    req = Q(group_id="g", generation_id_or_member_epoch=4, member_id="m", topics=[
        Q.OffsetCommitRequestTopic(topic_id=TID, partitions=[Q.OffsetCommitRequestPartition(
            partition_index=0, committed_offset=7, committed_metadata="")])])
    _check(Q, req, 10, _cstr("g") + _i32(4) + _cstr("m") + b"\x00" + b"\x02" + TID.bytes
           + b"\x02" + _i32(0) + _i64(7) + _i32(-1) + _cstr("") + b"\x00" + b"\x00" + b"\x00")
    F = OFFSET_FETCH.Request
    fetch = F(groups=[F.OffsetFetchRequestGroup(group_id="g", member_id="m", member_epoch=4,
                                                topics=[F.OffsetFetchRequestTopics(
                                                    topic_id=TID, partition_indexes=[1])])])
    _check(F, fetch, 10, b"\x02" + _cstr("g") + _cstr("m") + _i32(4) + b"\x02" + TID.bytes
           + b"\x02" + _i32(1) + b"\x00" + b"\x00" + b"\x00" + b"\x00")
