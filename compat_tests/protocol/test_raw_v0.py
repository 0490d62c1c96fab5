"""Version 0 (and the other versions Kafka 4.0 dropped) of every API, with hand-built requests
(compat_tests/rawkafka.py, independent of the broker's wire/) and expected responses written
from Kafka's message schemas, byte for byte where the answer is deterministic."""
from __future__ import annotations

import pytest
from confluent_kafka import Producer

from compat_tests import rawkafka as rk
from compat_tests.helpers import create_topic, unique_topic
from testkit.kafka_versions import KAFKA_3_9_RANGES, KAFKA_4_2_SHARE_RANGES

pytestmark = pytest.mark.timeout(60)

I16, I32, I64, S, B = rk.int16, rk.int32, rk.int64, rk.string, rk.nbytes
NODE_ID = 1  # the compat brokers run with --node-id 1
UNSUPPORTED_COMPRESSION_TYPE = 76
TOPIC_ALREADY_EXISTS = 36


def call(conn, api_key, version, body) -> bytes:
    """The response body (after the correlation id) of a non-flexible request."""
    r = conn.request(api_key, version, body, flexible_request=False, flexible_response=False)
    return r.data[r.pos:]


def arr(items) -> bytes:
    items = list(items)
    return I32(len(items)) + b"".join(items)


@pytest.fixture
def conn(broker):
    with rk.RawConnection(broker.bootstrap) as c:
        yield c


@pytest.fixture
def topic(broker):
    return create_topic(broker.bootstrap, unique_topic("raw0"), partitions=1)


def test_advertised_versions_are_kafka_3_9s(conn):
    """Kafka 3.9's versions, with Kafka 4's group protocols beside them; without a receiver
    of client metrics, no telemetry APIs (test_metrics checks them with one)."""
    ranges = {**KAFKA_3_9_RANGES, **KAFKA_4_2_SHARE_RANGES}
    for name in ("GetTelemetrySubscriptions", "PushTelemetry"):
        del ranges[name]
    assert rk.api_versions(conn) == {key: (lo, hi) for key, lo, hi in ranges.values()}


# -- Produce v0-2 / Fetch v0-3 ------------------------------------------------------------------

def produce(conn, version, topic, message_set, acks=-1):
    body = I16(acks) + I32(10000) + arr([S(topic) + arr([I32(0) + B(message_set)])])
    return call(conn, rk.PRODUCE, version, body)


def produce_answer(version, topic, error, base_offset):
    part = I32(0) + I16(error) + I64(base_offset) + (I64(-1) if version >= 2 else b"")
    return arr([S(topic) + arr([part])]) + (I32(0) if version >= 1 else b"")


def fetch(conn, version, topic, offset, max_bytes=1 << 20):
    body = I32(-1) + I32(100) + I32(1) + (I32(max_bytes) if version >= 3 else b"")
    body += arr([S(topic) + arr([I32(0) + I64(offset) + I32(max_bytes)])])
    return call(conn, rk.FETCH, version, body)


def fetch_answer(version, topic, error, hwm, records):
    part = I32(0) + I16(error) + I64(hwm) + B(records)
    return (I32(0) if version >= 1 else b"") + arr([S(topic) + arr([part])])


@pytest.mark.parametrize("version", [0, 1, 2])
def test_produce_old_versions_store_and_fetch_back(conn, topic, version):
    magic = 0 if version < 2 else 1
    msgs = [rk.legacy_message(0, magic, b"k%d" % i, b"v%d" % i, 1_700_000_000_000 + i)
            for i in range(3)]
    assert produce(conn, version, topic, b"".join(msgs)) == produce_answer(version, topic, 0, 0)
    assert produce(conn, version, topic, msgs[0]) == produce_answer(version, topic, 0, 3)
    # The same uncompressed messages come back byte for byte, with their offsets.
    stored = [rk.legacy_message(o, magic, b"k%d" % i, b"v%d" % i, 1_700_000_000_000 + i)
              for o, i in ((0, 0), (1, 1), (2, 2), (3, 0))]
    for fv in ((0, 1) if magic == 0 else (2, 3)):
        assert fetch(conn, fv, topic, 0) == fetch_answer(fv, topic, 0, 4, b"".join(stored))
        assert fetch(conn, fv, topic, 2) == fetch_answer(fv, topic, 0, 4, b"".join(stored[2:]))
    # Fetch v4+ reads the same records as v2 batches.
    batches = list(rk.parse_batches(rk.fetch(conn, 4, topic, 0, 0)["partitions"][(topic, 0)]
                                    ["records"]))
    assert [(b["magic"], b["base_offset"], b["count"]) for b in batches] == [(2, 0, 3), (2, 3, 1)]


def test_fetch_v2_gives_v0_messages_no_timestamp_and_v0_drops_it(conn, topic):
    produce(conn, 0, topic, rk.legacy_message(0, 0, None, b"old"))
    produce(conn, 2, topic, rk.legacy_message(0, 1, b"k", None, 42))
    v1 = [rk.legacy_message(0, 1, None, b"old", -1), rk.legacy_message(1, 1, b"k", None, 42)]
    assert fetch(conn, 2, topic, 0) == fetch_answer(2, topic, 0, 2, b"".join(v1))
    v0 = [rk.legacy_message(0, 0, None, b"old"), rk.legacy_message(1, 0, b"k", None)]
    assert fetch(conn, 0, topic, 0) == fetch_answer(0, topic, 0, 2, b"".join(v0))


def test_produce_old_versions_refuse_what_kafka_refuses(conn, topic):
    good = rk.legacy_message(0, 1, b"k", b"v", 5)
    bad_crc = good[:-1] + bytes([good[-1] ^ 0xFF])
    assert produce(conn, 2, topic, bad_crc) == produce_answer(2, topic, rk.CORRUPT_MESSAGE, -1)
    assert produce(conn, 2, topic, good[:-2]) == produce_answer(2, topic, rk.CORRUPT_MESSAGE, -1)
    v2_after_v1 = good + rk.record_batch([(b"k", b"v")], 5)
    assert produce(conn, 1, topic, v2_after_v1) == produce_answer(1, topic, rk.INVALID_RECORD,
                                                                  -1)
    zstd_wrapper = rk.legacy_message(0, 1, None, b"\x28\xb5\x2f\xfd", 5, attributes=4)
    assert produce(conn, 2, topic, zstd_wrapper) == produce_answer(2, topic, rk.INVALID_RECORD, -1)
    # and nothing was stored
    assert fetch(conn, 2, topic, 0) == fetch_answer(2, topic, 0, 0, b"")


def test_produce_old_versions_take_v2_batches_as_kafka_does(conn, topic):
    """Kafka checks the magic only from Produce v3 on: a v2 batch in Produce v0-2 is stored."""
    v2 = rk.record_batch([(b"k", b"v")], 5)
    assert produce(conn, 1, topic, v2) == produce_answer(1, topic, 0, 0)
    assert fetch(conn, 2, topic, 0) == fetch_answer(2, topic, 0, 1,
                                                    rk.legacy_message(0, 1, b"k", b"v", 5))


def test_fetch_old_versions_honour_downconversion_and_zstd(broker, conn):
    off = create_topic(broker.bootstrap, unique_topic("raw0-nodown"), partitions=1,
                       config={"message.downconversion.enable": "false"})
    produce(conn, 2, off, rk.legacy_message(0, 1, b"k", b"v", 5))
    assert fetch(conn, 2, off, 0) == fetch_answer(2, off, rk.UNSUPPORTED_VERSION, -1, b"")
    served = rk.fetch(conn, 4, off, 0, 0)["partitions"][(off, 0)]  # v4+ needs no conversion
    assert served["error_code"] == 0 and len(list(rk.parse_batches(served["records"]))) == 1
    # zstd needs message format v2: Kafka answers old fetches of such data with an error
    z = create_topic(broker.bootstrap, unique_topic("raw0-zstd"), partitions=1)
    p = Producer({"bootstrap.servers": broker.bootstrap, "compression.codec": "zstd"})
    p.produce(z, b"v" * 1000, partition=0)  # compressible: librdkafka compresses it
    assert p.flush(15) == 0
    assert fetch(conn, 3, z, 0) == fetch_answer(3, z, UNSUPPORTED_COMPRESSION_TYPE, -1, b"")


# -- ListOffsets v0 -----------------------------------------------------------------------------

def list_offsets_v0(conn, topic, timestamp, max_num, partition=0):
    body = I32(-1) + arr([S(topic) + arr([I32(partition) + I64(timestamp) + I32(max_num)])])
    return call(conn, rk.LIST_OFFSETS, 0, body)


def offsets_answer(topic, error, offsets, partition=0):
    return arr([S(topic) + arr([I32(partition) + I16(error) + arr(I64(o) for o in offsets)])])


def test_list_offsets_v0_offsets_before(conn, topic):
    assert list_offsets_v0(conn, topic, -1, 10) == offsets_answer(topic, 0, [0])
    produce(conn, 2, topic, b"".join(rk.legacy_message(0, 1, None, b"x", 5) for _ in range(3)))
    # one segment (base 0) plus the log end offset: latest first
    assert list_offsets_v0(conn, topic, -1, 10) == offsets_answer(topic, 0, [3, 0])
    assert list_offsets_v0(conn, topic, -1, 1) == offsets_answer(topic, 0, [3])
    assert list_offsets_v0(conn, topic, -2, 10) == offsets_answer(topic, 0, [0])
    # "before a timestamp" goes by segment modification times: none is older than 1970
    assert list_offsets_v0(conn, topic, 1000, 10) == offsets_answer(topic, 0, [])
    assert list_offsets_v0(conn, topic, 1 << 50, 10) == offsets_answer(topic, 0, [3, 0])
    assert list_offsets_v0(conn, topic, -1, 10, partition=7) == offsets_answer(
        topic, rk.UNKNOWN_TOPIC_OR_PARTITION, [], partition=7)


# -- Metadata v0 --------------------------------------------------------------------------------

def test_metadata_v0_empty_list_means_all_topics(conn, topic):
    r = conn.request(rk.METADATA, 0, I32(0), flexible_request=False, flexible_response=False)
    brokers = [(r.int32(), r.string(), r.int32()) for _ in range(r.int32())]
    assert [b[0] for b in brokers] == [NODE_ID]
    topics = {}
    for _ in range(r.int32()):
        err, name = r.int16(), r.string()
        parts = []
        for _ in range(r.int32()):
            perr, idx, leader = r.int16(), r.int32(), r.int32()
            replicas = [r.int32() for _ in range(r.int32())]
            isr = [r.int32() for _ in range(r.int32())]
            parts.append((perr, idx, leader, replicas, isr))
        topics[name] = (err, parts)
    assert r.pos == len(r.data)
    assert topics[topic] == (0, [(0, 0, NODE_ID, [NODE_ID], [NODE_ID])])


# -- CreateTopics v0 / DeleteTopics v0 / DescribeConfigs v0 -------------------------------------

def test_create_describe_delete_topics_v0(conn):
    name = unique_topic("raw0-admin")
    configs = arr([S("retention.ms") + S("3600000")])
    body = arr([S(name) + I32(2) + I16(1) + arr([]) + configs]) + I32(10000)
    assert call(conn, 19, 0, body) == arr([S(name) + I16(0)])
    assert call(conn, 19, 0, body) == arr([S(name) + I16(TOPIC_ALREADY_EXISTS)])

    body = arr([rk.int8(2) + S(name) + arr([S("retention.ms"), S("cleanup.policy")])])
    r = rk.Reader(call(conn, 32, 0, body))
    assert (r.int32(), r.int32(), r.int16(), r.string(), r.int8(), r.string()) == (
        0, 1, 0, None, 2, name)
    # name, value, read only, is default (v0 only), is sensitive
    entries = {(r.string(), r.string(), r.bool(), r.bool(), r.bool()) for _ in range(r.int32())}
    assert r.pos == len(r.data)
    assert entries == {("retention.ms", "3600000", False, False, False),
                       ("cleanup.policy", "delete", False, True, False)}

    body = arr([S(name)]) + I32(10000)
    assert call(conn, 20, 0, body) == arr([S(name) + I16(0)])
    assert call(conn, 20, 0, body) == arr([S(name) + I16(rk.UNKNOWN_TOPIC_OR_PARTITION)])


# -- the group APIs at v0, OffsetCommit v0-1, OffsetFetch v0 ------------------------------------

def test_group_lifecycle_v0(broker, conn, topic):
    group = unique_topic("raw0-group")
    host, port = broker.bootstrap.rsplit(":", 1)
    assert call(conn, 10, 0, S(group)) == I16(0) + I32(NODE_ID) + S(host) + I32(int(port))

    meta = b"\x00\x00subscription"
    join = S(group) + I32(10000) + S("") + S("consumer") + arr([S("range") + B(meta)])
    r = rk.Reader(call(conn, 11, 0, join))
    err, generation, protocol, leader, member = (r.int16(), r.int32(), r.string(), r.string(),
                                                 r.string())
    assert (err, generation, protocol, leader == member) == (0, 1, "range", True)
    assert [(r.string(), r.nbytes()) for _ in range(r.int32())] == [(member, meta)]
    assert r.pos == len(r.data)

    assignment = b"\x00\x00assignment"
    sync = S(group) + I32(generation) + S(member) + arr([S(member) + B(assignment)])
    assert call(conn, 14, 0, sync) == I16(0) + B(assignment)
    assert call(conn, 12, 0, S(group) + I32(generation) + S(member)) == I16(0)

    r = rk.Reader(call(conn, 15, 0, arr([S(group)])))
    assert r.int32() == 1
    assert (r.int16(), r.string(), r.string(), r.string(), r.string()) == (
        0, group, "Stable", "consumer", "range")
    assert r.int32() == 1
    assert (r.string(), r.string(), r.string(), r.nbytes(), r.nbytes()) == (
        member, "compat-raw", "/127.0.0.1", meta, assignment)

    r = rk.Reader(call(conn, 16, 0, b""))
    assert r.int16() == 0
    assert (group, "consumer") in [(r.string(), r.string()) for _ in range(r.int32())]

    # OffsetCommit v1: generation, member and a commit timestamp per partition
    commit = (S(group) + I32(generation) + S(member)
              + arr([S(topic) + arr([I32(0) + I64(7) + I64(1_700_000_000_000) + S("m1")])]))
    assert call(conn, 8, 1, commit) == arr([S(topic) + arr([I32(0) + I16(0)])])
    fetch_offsets = S(group) + arr([S(topic) + arr([I32(0)])])
    answer = arr([S(topic) + arr([I32(0) + I64(7) + S("m1") + I16(0)])])
    assert call(conn, 9, 0, fetch_offsets) == answer
    assert call(conn, 9, 1, fetch_offsets) == answer

    assert call(conn, 13, 0, S(group) + S(member)) == I16(0)
    r = rk.Reader(call(conn, 15, 0, arr([S(group)])))
    r.int32()
    assert (r.int16(), r.string(), r.string()) == (0, group, "Empty")

    # OffsetCommit v0 (no generation, no member) into the now empty group
    commit = S(group) + arr([S(topic) + arr([I32(0) + I64(9) + S(None)])])
    assert call(conn, 8, 0, commit) == arr([S(topic) + arr([I32(0) + I16(0)])])
    assert call(conn, 9, 0, fetch_offsets) == arr([S(topic) + arr([I32(0) + I64(9) + S("")
                                                                    + I16(0)])])

