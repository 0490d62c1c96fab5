"""What changes with the version of a request, beyond its layout (issue 10 point 3), checked
with hand-built requests against Kafka's documented behaviour:

- OffsetCommit v0 (no generation, no member) stores into ``__consumer_offsets`` like every
  other version, so the offset survives a restart;
- OffsetCommit v1's per-partition commit timestamp is the base of the offset's expiry in a
  standalone group, and v2-4's retention_time_ms sets an explicit expiry;
- JoinGroup v0 has one timeout: the session timeout is also the rebalance timeout;
- ListOffsets v1 answers timestamp -1 for the latest/earliest offsets; old versions put the
  throttle time where their schema does (Produce v1-2 last, OffsetCommit v3 first).
"""
from __future__ import annotations

import threading
import time

import pytest

from compat_tests import rawkafka as rk
from compat_tests.helpers import create_topic, unique_topic
from compat_tests.protocol.test_raw_v0 import B, I16, I32, I64, S, arr, call, produce

pytestmark = pytest.mark.timeout(90)

NO_OFFSET = -1


def _wait_for(predicate, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False


def find_coordinator(conn, group):
    """FindCoordinator v0 until it answers (the first one creates __consumer_offsets), as a
    client does before it commits."""
    assert _wait_for(lambda: call(conn, 10, 0, S(group))[:2] == I16(0))


def commit_v0(conn, group, topic, partition, offset):
    body = S(group) + arr([S(topic) + arr([I32(partition) + I64(offset) + S("")])])
    return call(conn, 8, 0, body)


def commit_v1(conn, group, topic, offsets_and_timestamps):
    parts = [I32(p) + I64(o) + I64(ts) + S("") for p, (o, ts) in offsets_and_timestamps.items()]
    return call(conn, 8, 1, S(group) + I32(-1) + S("") + arr([S(topic) + arr(parts)]))


def commit_v2(conn, group, topic, partition, offset, retention_ms):
    body = (S(group) + I32(-1) + S("") + I64(retention_ms)
            + arr([S(topic) + arr([I32(partition) + I64(offset) + S("")])]))
    return call(conn, 8, 2, body)


def committed(conn, group, topic, partitions) -> dict:
    """OffsetFetch v1: {partition: offset} (-1: none)."""
    r = rk.Reader(call(conn, 9, 1, S(group) + arr([S(topic) + arr(I32(p) for p in partitions)])))
    out = {}
    for _ in range(r.int32()):
        r.string()
        for _ in range(r.int32()):
            p, offset, _meta, err = r.int32(), r.int64(), r.string(), r.int16()
            assert err == 0
            out[p] = offset
    return out


def ok(topic, partitions):
    return arr([S(topic) + arr(I32(p) + I16(0) for p in partitions)])


def test_offset_commit_v0_is_kept_in_consumer_offsets_across_a_restart(broker_factory):
    b = broker_factory()
    topic = create_topic(b.bootstrap, unique_topic("v0-commit"), partitions=2)
    group = unique_topic("v0-group")
    with rk.RawConnection(b.bootstrap) as conn:
        find_coordinator(conn, group)
        assert commit_v0(conn, group, topic, 1, 42) == ok(topic, [1])
    b.restart()  # offsets come back from the __consumer_offsets log only
    with rk.RawConnection(b.bootstrap) as conn:
        assert committed(conn, group, topic, [0, 1]) == {0: NO_OFFSET, 1: 42}
        # and they are records of __consumer_offsets, as a current client's commit would be
        r = rk.Reader(call(conn, rk.LIST_OFFSETS, 0, I32(-1) + arr(
            [S("__consumer_offsets") + arr(I32(p) + I64(-1) + I32(1) for p in range(3))])))
        ends = []
        for _ in range(r.int32()):
            r.string()
            for _ in range(r.int32()):
                r.int32(), r.int16()
                ends += [r.int64() for _ in range(r.int32())]
        assert sum(ends) >= 1


def test_commit_v1_timestamp_and_v2_retention_decide_expiry(broker_factory):
    b = broker_factory({"offsets.retention.minutes": 1,
                        "offsets.retention.check.interval.ms": 200})
    topic = create_topic(b.bootstrap, unique_topic("v1-commit"), partitions=2)
    now = int(time.time() * 1000)
    with rk.RawConnection(b.bootstrap) as conn:
        # v1, standalone group: partition 0 committed "two minutes ago" (older than the
        # one-minute retention), partition 1 with -1, meaning now.
        g1 = unique_topic("v1-group")
        find_coordinator(conn, g1)
        assert commit_v1(conn, g1, topic, {0: (5, now - 120_000), 1: (6, -1)}) == ok(topic, [0, 1])
        # v2: an explicit retention of 300 ms against the default (-1: the broker's minute).
        g2, g3 = unique_topic("v2-short"), unique_topic("v2-default")
        assert commit_v2(conn, g2, topic, 0, 7, 300) == ok(topic, [0])
        assert commit_v2(conn, g3, topic, 0, 8, -1) == ok(topic, [0])
        assert _wait_for(lambda: committed(conn, g1, topic, [0])[0] == NO_OFFSET
                         and committed(conn, g2, topic, [0])[0] == NO_OFFSET)
        assert committed(conn, g1, topic, [1]) == {1: 6}
        assert committed(conn, g3, topic, [0]) == {0: 8}


def _join_v0(conn, group, session_timeout_ms, member_id=""):
    meta = b"\x00\x00sub"
    body = (S(group) + I32(session_timeout_ms) + S(member_id) + S("consumer")
            + arr([S("range") + B(meta)]))
    r = rk.Reader(call(conn, 11, 0, body))
    err, generation, _protocol, leader, member = (r.int16(), r.int32(), r.string(),
                                                  r.string(), r.string())
    members = [(r.string(), r.nbytes())[0] for _ in range(r.int32())]
    return err, generation, leader, member, members


def test_join_group_v0_session_timeout_is_the_rebalance_timeout(broker):
    group = unique_topic("v0-join")
    with rk.RawConnection(broker.bootstrap, timeout=30) as a, \
            rk.RawConnection(broker.bootstrap, timeout=30) as b:
        find_coordinator(a, group)
        err, generation, leader, member_a, _ = _join_v0(a, group, 6000)
        assert err == 0 and leader == member_a
        sync = S(group) + I32(generation) + S(member_a) + arr([S(member_a) + B(b"x")])
        assert call(a, 14, 0, sync)[:2] == I16(0)
        # A stays alive by heartbeating but never rejoins: the rebalance B's join starts ends
        # after the group's rebalance timeout (the largest of its members'), which in v0 is
        # the session timeout: B's 8 s.
        stop = threading.Event()

        def heartbeat():
            while not stop.wait(1.0):
                call(a, 12, 0, S(group) + I32(generation) + S(member_a))
        t = threading.Thread(target=heartbeat, daemon=True)
        t.start()
        start = time.monotonic()
        try:
            err, generation_b, leader_b, member_b, members = _join_v0(b, group, 8000)
        finally:
            stop.set()
            t.join(5)
        waited = time.monotonic() - start
        assert (err, generation_b, leader_b, members) == (0, generation + 1, member_b, [member_b])
        assert 7.5 <= waited < 12.0, waited


def test_list_offsets_v1_latest_has_no_timestamp_and_throttle_time_placement(broker):
    topic = create_topic(broker.bootstrap, unique_topic("v1-lo"), partitions=1)
    with rk.RawConnection(broker.bootstrap) as conn:
        # Produce v1 and v2 end with the throttle time (0); v2 adds log_append_time -1.
        msg = rk.legacy_message(0, 1, b"k", b"v", 1_700_000_000_000)
        assert produce(conn, 1, topic, msg) == arr([S(topic) + arr(
            [I32(0) + I16(0) + I64(0)])]) + I32(0)
        assert produce(conn, 2, topic, msg) == arr([S(topic) + arr(
            [I32(0) + I16(0) + I64(1) + I64(-1)])]) + I32(0)
        for ts, offset in ((-1, 2), (-2, 0)):
            body = I32(-1) + arr([S(topic) + arr([I32(0) + I64(ts)])])
            assert call(conn, rk.LIST_OFFSETS, 1, body) == arr([S(topic) + arr(
                [I32(0) + I16(0) + I64(-1) + I64(offset)])])
        # a timestamp query answers the first message at or after it, with its timestamp
        body = I32(-1) + arr([S(topic) + arr([I32(0) + I64(1_600_000_000_000)])])
        assert call(conn, rk.LIST_OFFSETS, 1, body) == arr([S(topic) + arr(
            [I32(0) + I16(0) + I64(1_700_000_000_000) + I64(0)])])
        # OffsetCommit v2 has no throttle time, v3 starts with it.
        group = unique_topic("v3-commit")
        find_coordinator(conn, group)
        v2 = commit_v2(conn, group, topic, 0, 1, -1)
        assert v2 == ok(topic, [0])
        body = (S(group) + I32(-1) + S("") + I64(-1)
                + arr([S(topic) + arr([I32(0) + I64(1) + S("")])]))
        assert call(conn, 8, 3, body) == I32(0) + ok(topic, [0])


# -- ACL APIs v0 and DescribeLogDirs v0 (Kafka 3.9 still serves them) ---------------------------
TOPIC_RESOURCE, ANY, READ, WRITE, ALLOW = 2, 1, 3, 4, 3
LITERAL, PREFIXED = 3, 4


def test_acl_apis_v0_know_only_literal_patterns(broker_factory):
    b = broker_factory({"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
                        "allow.everyone.if.no.acl.found": "true"})
    name = unique_topic("acl0")
    with rk.RawConnection(b.bootstrap) as conn:
        # CreateAcls v0: no pattern type, the binding is literal
        create = arr([rk.int8(TOPIC_RESOURCE) + S(name) + S("User:alice") + S("*")
                      + rk.int8(READ) + rk.int8(ALLOW)])
        assert call(conn, 30, 0, create) == I32(0) + arr([I16(0) + S(None)])
        # a prefixed one, created with v1
        create_v1 = arr([rk.int8(TOPIC_RESOURCE) + S(name) + rk.int8(PREFIXED) + S("User:bob")
                         + S("*") + rk.int8(WRITE) + rk.int8(ALLOW)])
        assert call(conn, 30, 1, create_v1) == I32(0) + arr([I16(0) + S(None)])
        # DescribeAcls v0 filters on literal bindings only, and answers without pattern types
        describe = rk.int8(ANY) + S(None) + S(None) + S(None) + rk.int8(ANY) + rk.int8(ANY)
        assert call(conn, 29, 0, describe) == I32(0) + I16(0) + S(None) + arr([
            rk.int8(TOPIC_RESOURCE) + S(name) + arr([S("User:alice") + S("*") + rk.int8(READ)
                                                      + rk.int8(ALLOW)])])
        # DeleteAcls v0 likewise deletes the literal binding and leaves the prefixed one
        assert call(conn, 31, 0, arr([describe])) == I32(0) + arr([I16(0) + S(None) + arr([
            I16(0) + S(None) + rk.int8(TOPIC_RESOURCE) + S(name) + S("User:alice") + S("*")
            + rk.int8(READ) + rk.int8(ALLOW)])])
        any_v1 = (rk.int8(ANY) + S(None) + rk.int8(ANY) + S(None) + S(None) + rk.int8(ANY)
                  + rk.int8(ANY))
        r = rk.Reader(call(conn, 29, 1, any_v1))
        assert (r.int32(), r.int16(), r.string(), r.int32()) == (0, 0, None, 1)
        assert (r.int8(), r.string(), r.int8()) == (TOPIC_RESOURCE, name, PREFIXED)


def test_describe_log_dirs_v0(broker):
    topic = create_topic(broker.bootstrap, unique_topic("logdirs0"), partitions=1)
    with rk.RawConnection(broker.bootstrap) as conn:
        body = arr([S(topic) + arr([I32(0)])])
        r = rk.Reader(call(conn, 35, 0, body))
        assert (r.int32(), r.int32()) == (0, 1)  # throttle time, one log dir
        assert r.int16() == 0
        assert r.string() == str(broker.data_dir.resolve())
        assert r.int32() == 1 and r.string() == topic
        assert r.int32() == 1
        assert (r.int32(), r.int64(), r.int64(), r.bool()) == (0, 0, 0, False)
        assert r.pos == len(r.data)
