"""__consumer_offsets records (Kafka's byte layout), replay after restart, tombstones, expiry."""
from __future__ import annotations

import asyncio
import functools
import struct

from josefk.coordinator import errors
from josefk.coordinator.runtime.clock import FakeClock
from josefk.coordinator.group.group import EMPTY, PREPARING_REBALANCE, STABLE, OffsetAndMetadata
from josefk.coordinator.runtime.partitions import partition_for
from josefk.coordinator.group.group_coordinator import GroupCoordinator
from josefk.coordinator.group.offset_store import (GroupKey, GroupMemberRecord, GroupRecord,
                                                   OffsetKey, OffsetStore, group_metadata_key,
                                                   group_metadata_value, offset_commit_key,
                                                   offset_commit_value, read_group_value,
                                                   read_key, read_offset_value)
from josefk.coordinator.runtime import InMemoryOffsetsLog
from josefk.wire import records as wire_records

SESSION = 10_000
REBALANCE = 30_000
RETENTION_MS = 10080 * 60 * 1000
CHECK_MS = 600_000


def async_test(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return asyncio.run(fn(*args, **kwargs))
    return wrapper


def s16(s):
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def sub(*topics):
    out = struct.pack(">hi", 0, len(topics)) + b"".join(s16(t) for t in topics)
    return out + struct.pack(">i", -1)


def uvarint(n):
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def cstr(s):
    if s is None:
        return b"\x00"
    b = s.encode()
    return uvarint(len(b) + 1) + b


# ------------------------------------------------------------------------------------------
# record layout

def test_keys_are_kafkas_bytes():
    assert offset_commit_key("grp", "topic", 7) == (
        b"\x00\x01" + b"\x00\x03grp" + b"\x00\x05topic" + b"\x00\x00\x00\x07")
    assert group_metadata_key("grp") == b"\x00\x02\x00\x03grp"
    assert read_key(offset_commit_key("grp", "topic", 7)) == OffsetKey("grp", "topic", 7)
    # key version 0 has the same layout
    assert read_key(b"\x00\x00\x00\x01g\x00\x01t\x00\x00\x00\x02") == OffsetKey("g", "t", 2)
    assert read_key(group_metadata_key("grp")) == GroupKey("grp")


def test_offset_value_v3_and_v1_bytes():
    om = OffsetAndMetadata(offset=100, leader_epoch=5, metadata="meta", commit_timestamp=1234)
    v = offset_commit_value(om)
    assert v == struct.pack(">hqi", 3, 100, 5) + s16("meta") + struct.pack(">q", 1234)
    assert read_offset_value(v) == om
    # an explicit expire timestamp is written as version 1 (no leader epoch), like Kafka
    om1 = OffsetAndMetadata(100, 5, "", 1234, expire_timestamp=9999)
    v1 = offset_commit_value(om1)
    assert v1 == struct.pack(">hq", 1, 100) + s16("") + struct.pack(">qq", 1234, 9999)
    assert read_offset_value(v1) == OffsetAndMetadata(100, -1, "", 1234, 9999)
    assert read_offset_value(None) is None


def test_older_offset_value_versions_decode():
    v0 = struct.pack(">hq", 0, 42) + s16("m") + struct.pack(">q", 77)
    assert read_offset_value(v0) == OffsetAndMetadata(42, -1, "m", 77, None)
    v1_no_expire = struct.pack(">hq", 1, 42) + s16("m") + struct.pack(">qq", 77, -1)
    assert read_offset_value(v1_no_expire) == OffsetAndMetadata(42, -1, "m", 77, None)
    v2 = struct.pack(">hq", 2, 42) + s16("m") + struct.pack(">q", 77)
    assert read_offset_value(v2) == OffsetAndMetadata(42, -1, "m", 77, None)
    # flexible v4: compact string and a (skipped) tagged field
    v4 = struct.pack(">hqi", 4, 42, 3) + cstr("m") + struct.pack(">q", 77) + b"\x01\x05\x02ab"
    assert read_offset_value(v4) == OffsetAndMetadata(42, 3, "m", 77, None)


def _group_record():
    return GroupRecord("consumer", 4, "range", "m1", 555, [
        GroupMemberRecord("m1", "inst-1", "client-1", "/10.0.0.1", 30000, 10000, b"sub1", b"asg1"),
        GroupMemberRecord("m2", None, "client-2", "/10.0.0.2", 30000, 10000, b"sub2", b""),
    ])


def test_group_value_v3_bytes():
    rec = _group_record()
    v = group_metadata_value(rec)
    expected = (struct.pack(">h", 3) + s16("consumer") + struct.pack(">i", 4) + s16("range")
                + s16("m1") + struct.pack(">q", 555) + struct.pack(">i", 2)
                + s16("m1") + s16("inst-1") + s16("client-1") + s16("/10.0.0.1")
                + struct.pack(">ii", 30000, 10000) + struct.pack(">i", 4) + b"sub1"
                + struct.pack(">i", 4) + b"asg1"
                + s16("m2") + struct.pack(">h", -1) + s16("client-2") + s16("/10.0.0.2")
                + struct.pack(">ii", 30000, 10000) + struct.pack(">i", 4) + b"sub2"
                + struct.pack(">i", 0))
    assert v == expected
    assert read_group_value(v) == rec
    empty = GroupRecord("consumer", 5, None, None, 999, [])
    ve = group_metadata_value(empty)
    assert ve == (struct.pack(">h", 3) + s16("consumer") + struct.pack(">i", 5)
                  + struct.pack(">hh", -1, -1) + struct.pack(">qi", 999, 0))
    assert read_group_value(ve) == empty
    assert read_group_value(None) is None


def test_older_group_value_versions_decode():
    member_v0 = s16("m1") + s16("c") + s16("/h") + struct.pack(">i", 6000) \
        + struct.pack(">i", 1) + b"s" + struct.pack(">i", 1) + b"a"
    v0 = (struct.pack(">h", 0) + s16("consumer") + struct.pack(">i", 2) + s16("range")
          + s16("m1") + struct.pack(">i", 1) + member_v0)
    g0 = read_group_value(v0)
    assert g0.generation == 2 and g0.current_state_timestamp == -1
    m = g0.members[0]
    assert (m.member_id, m.group_instance_id, m.session_timeout, m.rebalance_timeout) == \
        ("m1", None, 6000, 6000)
    assert (m.subscription, m.assignment) == (b"s", b"a")
    member_v1 = s16("m1") + s16("c") + s16("/h") + struct.pack(">ii", 30000, 6000) \
        + struct.pack(">i", 1) + b"s" + struct.pack(">i", 0)
    v2 = (struct.pack(">h", 2) + s16("consumer") + struct.pack(">i", 2) + s16("range")
          + s16("m1") + struct.pack(">q", 123) + struct.pack(">i", 1) + member_v1)
    g2 = read_group_value(v2)
    assert g2.current_state_timestamp == 123 and g2.members[0].rebalance_timeout == 30000
    # flexible v4
    member_v4 = (cstr("m1") + cstr("i1") + cstr("c") + cstr("/h") + struct.pack(">ii", 30000, 6000)
                 + uvarint(2) + b"s" + uvarint(1) + b"\x00")
    v4 = (struct.pack(">h", 4) + cstr("consumer") + struct.pack(">i", 2) + cstr("range")
          + cstr(None) + struct.pack(">q", 123) + uvarint(2) + member_v4 + b"\x00")
    g4 = read_group_value(v4)
    assert g4.leader is None and g4.members[0].group_instance_id == "i1"
    assert g4.members[0].subscription == b"s" and g4.members[0].assignment == b""


# ------------------------------------------------------------------------------------------
# store + replay

class Env:
    def __init__(self, log=None, clock=None, config=None):
        self.clock = clock or FakeClock()
        self.log = log or InMemoryOffsetsLog()
        self.store = OffsetStore(self.log)
        cfg = {"group.initial.rebalance.delay.ms": 0}
        cfg.update(config or {})
        self.coord = GroupCoordinator(cfg, self.store, self.clock)
        self.coord.startup()

    def restart(self, **kw):
        """A new broker process over the same log."""
        self.coord.shutdown()
        return Env(log=self.log, clock=self.clock, **kw)

    async def settle(self):
        for _ in range(10):
            await asyncio.sleep(0)

    async def stable(self, group="g", instances=(None, None), topics=("t1",)):
        tasks = [asyncio.ensure_future(self.coord.join_group(
            group, "", inst, f"client-{i}", "/127.0.0.1", SESSION, REBALANCE, "consumer",
            [("range", sub(*topics))], False)) for i, inst in enumerate(instances)]
        await self.settle()
        self.clock.advance(0)
        await self.settle()
        results = [await t for t in tasks]
        leader = next(r for r in results if r.members)
        syncs = [asyncio.ensure_future(self.coord.sync_group(
            group, 1, r.member_id, r_inst, None, None,
            {x.member_id: b"asg-" + x.member_id.encode() for x in results} if r is leader else {}))
            for r, r_inst in zip(results, instances)]
        for s in syncs:
            assert (await s).error == errors.NONE
        return results


@async_test
async def test_commit_then_reload_gives_same_offsets_and_group():
    env = Env()
    a, b = await env.stable(instances=("inst-a", None))
    res = await env.coord.commit_offsets("g", 1, a.member_id, "inst-a", -1, {
        ("t1", 0): (10, 2, "m0"), ("t1", 1): (11, -1, "")})
    assert set(res.values()) == {errors.NONE}
    await env.coord.commit_offsets("simple", -1, "", None, -1, {("x", 0): (5, -1, "s")})
    before = env.coord.groups["g"]
    snapshot = {
        "gen": before.generation_id, "proto": before.protocol_name, "leader": before.leader_id,
        "members": {mid: (m.group_instance_id, m.client_id, m.client_host, m.session_timeout_ms,
                          m.rebalance_timeout_ms, m.metadata("range"), m.assignment)
                    for mid, m in before.members.items()},
    }
    offsets_before = env.coord.fetch_offsets("g", None)[1]

    env2 = env.restart()
    g = env2.coord.groups["g"]
    assert g.state == STABLE
    assert (g.generation_id, g.protocol_name, g.leader_id) == (
        snapshot["gen"], snapshot["proto"], snapshot["leader"])
    assert g.protocol_type == "consumer"
    assert {mid: (m.group_instance_id, m.client_id, m.client_host, m.session_timeout_ms,
                  m.rebalance_timeout_ms, m.metadata("range"), m.assignment)
            for mid, m in g.members.items()} == snapshot["members"]
    assert g.static_members == {"inst-a": a.member_id}
    assert g.subscribed_topics == {"t1"}
    assert env2.coord.fetch_offsets("g", None)[1] == offsets_before
    assert tuple(env2.coord.fetch_offsets("g", [("t1", 0)])[1][("t1", 0)]) == (10, 2, "m0", 0)
    assert tuple(env2.coord.fetch_offsets("simple", [("x", 0)])[1][("x", 0)]) == (5, -1, "s", 0)
    assert env2.coord.groups["simple"].state == EMPTY
    # members that are still alive carry on without a rebalance
    assert env2.coord.heartbeat("g", 1, a.member_id, "inst-a") == errors.NONE
    s = await env2.coord.sync_group("g", 1, b.member_id, None, None, None, {})
    assert s.error == errors.NONE and s.assignment == b"asg-" + b.member_id.encode()
    res = await env2.coord.commit_offsets("g", 1, a.member_id, "inst-a", -1,
                                          {("t1", 0): (12, 2, "")})
    assert res == {("t1", 0): errors.NONE}


@async_test
async def test_reloaded_members_that_are_gone_expire_and_group_empties():
    env = Env()
    await env.stable()
    env2 = env.restart()
    env2.clock.advance(SESSION)
    await env2.settle()
    g = env2.coord.groups["g"]
    assert g.state == EMPTY and g.generation_id == 2
    await env2.coord.drain()
    env3 = env2.restart()
    g = env3.coord.groups["g"]
    assert g.state == EMPTY and g.generation_id == 2 and not g.members
    assert g.protocol_type == "consumer" and g.protocol_name is None


@async_test
async def test_restarted_consumer_resumes_from_committed_offsets():
    env = Env()
    (a, b) = await env.stable()
    await env.coord.commit_offsets("g", 1, a.member_id, None, -1, {("t1", 0): (41, -1, "")})
    await env.coord.leave_group("g", [(a.member_id, None), (b.member_id, None)])
    await env.coord.drain()
    env2 = env.restart()
    g = env2.coord.groups["g"]
    assert g.state == EMPTY and g.generation_id == 2
    t = asyncio.ensure_future(env2.coord.join_group(
        "g", "", None, "c", "/h", SESSION, REBALANCE, "consumer", [("range", sub("t1"))], False))
    await env2.settle()
    env2.clock.advance(0)          # the (zero) initial rebalance delay
    r = await t
    assert r.error == errors.NONE and r.generation_id == 3
    assert env2.coord.fetch_offsets("g", [("t1", 0)])[1][("t1", 0)].offset == 41


@async_test
async def test_last_write_wins_and_tombstones_delete():
    env = Env()
    c = env.coord.commit_offsets
    await c("s", -1, "", None, -1, {("t", 0): (1, -1, ""), ("t", 1): (1, -1, "")})
    await c("s", -1, "", None, -1, {("t", 0): (2, -1, "")})
    await c("s", -1, "", None, -1, {("t", 0): (3, 7, "last")})
    err, per = await env.coord.delete_offsets("s", [("t", 1)])
    assert per == {("t", 1): errors.NONE}
    await c("gone", -1, "", None, -1, {("t", 0): (9, -1, "")})
    assert (await env.coord.delete_groups(["gone"])) == {"gone": errors.NONE}
    env2 = env.restart()
    offs = env2.coord.fetch_offsets("s", None)[1]
    assert {tp: tuple(v) for tp, v in offs.items()} == {("t", 0): (3, 7, "last", 0)}
    assert "gone" not in env2.coord.groups
    assert env2.coord.fetch_offsets("gone", None) == (errors.NONE, {})


@async_test
async def test_deleted_group_metadata_stays_deleted_after_reload():
    env = Env()
    a, b = await env.stable()
    await env.coord.leave_group("g", [(a.member_id, None), (b.member_id, None)])
    await env.coord.drain()
    assert (await env.coord.delete_groups(["g"])) == {"g": errors.NONE}
    p = partition_for("g", 50)
    keys = [read_key(k) for _, k, v in env.log.records(p) if v is None]
    assert GroupKey("g") in keys
    env2 = env.restart()
    assert "g" not in env2.coord.groups


@async_test
async def test_loading_reports_load_in_progress():
    seen = []

    class SlowLog(InMemoryOffsetsLog):
        def read_batches(self, partition):
            if partition == partition_for("g", 50):
                seen.append(env.coord.fetch_offsets("g", [("t", 0)])[0])
                seen.append(env.coord.heartbeat("g", 1, "m"))
            return super().read_batches(partition)

    log = SlowLog()
    clock = FakeClock()
    env = Env.__new__(Env)
    env.clock, env.log = clock, log
    env.store = OffsetStore(log)
    env.coord = GroupCoordinator({}, env.store, clock)
    env.coord.startup()
    assert seen == [errors.COORDINATOR_LOAD_IN_PROGRESS, errors.NONE]
    assert env.coord.fetch_offsets("g", [("t", 0)])[0] == errors.NONE


@async_test
async def test_transactional_offset_commits_count_only_when_committed():
    log = InMemoryOffsetsLog()
    p = partition_for("g", 50)

    def txn(pid, offset):
        rec = (offset_commit_key("g", "t", pid), offset_commit_value(
            OffsetAndMetadata(offset, -1, "", 1)), None, 1)
        log.append(p, wire_records.build_batch([rec], transactional=True, producer_id=pid,
                                               producer_epoch=0, now_ms=1))

    def marker(pid, kind):
        log.append(p, wire_records.build_batch([wire_records.control_record(kind)],
                                               transactional=True, control=True,
                                               producer_id=pid, producer_epoch=0, now_ms=1))

    txn(1, 100)
    txn(2, 200)
    txn(3, 300)
    marker(1, wire_records.CONTROL_COMMIT)
    marker(2, wire_records.CONTROL_ABORT)
    loaded = OffsetStore(log).load(p)
    got = {tp: cr.offset_and_metadata.offset for tp, cr in loaded.offsets["g"].items()}
    assert got == {("t", 1): 100}


@async_test
async def test_undecodable_record_is_skipped():
    log = InMemoryOffsetsLog()
    p = partition_for("s", 50)
    log.append(p, wire_records.build_batch([(b"\x00\x09junk", b"x", None, 1)], now_ms=1))
    env = Env(log=log)
    await env.coord.commit_offsets("s", -1, "", None, -1, {("t", 0): (4, -1, "")})
    env2 = env.restart()
    assert env2.coord.fetch_offsets("s", [("t", 0)])[1][("t", 0)].offset == 4


# ------------------------------------------------------------------------------------------
# expiry

@async_test
async def test_simple_group_offsets_expire_with_tombstones():
    env = Env()
    await env.coord.commit_offsets("s", -1, "", None, -1, {("t", 0): (1, -1, "")})
    env.clock.advance(RETENTION_MS - 1)
    await env.coord.expire_offsets()
    assert env.coord.fetch_offsets("s", [("t", 0)])[1][("t", 0)].offset == 1
    env.clock.advance(1)
    assert await env.coord.expire_offsets() == 1
    assert "s" not in env.coord.groups            # Empty without offsets: Dead and forgotten
    recs = env.log.records(partition_for("s", 50))
    assert recs[-1][2] is None and read_key(recs[-1][1]) == OffsetKey("s", "t", 0)
    # generation 0 groups never wrote metadata, so no group tombstone
    assert not any(isinstance(read_key(k), GroupKey) for _, k, _ in recs)
    env2 = env.restart()
    assert "s" not in env2.coord.groups


@async_test
async def test_expiry_runs_periodically():
    env = Env()
    await env.coord.commit_offsets("s", -1, "", None, -1, {("t", 0): (1, -1, "")})
    for _ in range(RETENTION_MS // CHECK_MS + 1):
        env.clock.advance(CHECK_MS)
        await env.settle()
    await env.coord.drain()
    assert "s" not in env.coord.groups


@async_test
async def test_empty_consumer_group_expires_from_when_it_became_empty():
    env = Env()
    a, b = await env.stable()
    await env.coord.commit_offsets("g", 1, a.member_id, None, -1, {("t1", 0): (1, -1, "")})
    for _ in range(720):  # stay alive for an hour, then leave
        env.clock.advance(5_000)
        env.coord.heartbeat("g", 1, a.member_id)
        env.coord.heartbeat("g", 1, b.member_id)
    await env.coord.leave_group("g", [(a.member_id, None), (b.member_id, None)])
    await env.coord.drain()
    assert env.coord.groups["g"].state == EMPTY
    env.clock.advance(RETENTION_MS - 1)           # retention counts from becoming Empty
    assert await env.coord.expire_offsets() == 0
    env.clock.advance(1)
    assert await env.coord.expire_offsets() == 1
    assert "g" not in env.coord.groups
    recs = env.log.records(partition_for("g", 50))
    assert any(v is None and read_key(k) == GroupKey("g") for _, k, v in recs)


@async_test
async def test_stable_consumer_group_keeps_offsets_of_subscribed_topics():
    env = Env(config={"group.max.session.timeout.ms": 30 * 24 * 3600 * 1000})
    a, b = await env.stable(topics=("t1",))
    await env.coord.commit_offsets("g", 1, a.member_id, None, -1,
                                   {("t1", 0): (1, -1, ""), ("t2", 0): (2, -1, "")})
    g = env.coord.groups["g"]
    for m in g.members.values():      # keep the members alive without heartbeating
        m.session_timeout_ms = 10 * RETENTION_MS
        env.coord.membership.extend_session(g, m)
    env.clock.advance(RETENTION_MS)
    assert await env.coord.expire_offsets() == 1
    assert set(env.coord.fetch_offsets("g", None)[1]) == {("t1", 0)}
    assert g.state == STABLE


@async_test
async def test_explicit_retention_time_sets_expire_timestamp():
    env = Env()
    res = await env.coord.commit_offsets("s", -1, "", None, 60_000, {("t", 0): (1, 4, "")})
    assert res == {("t", 0): errors.NONE}
    recs = env.log.records(partition_for("s", 50))
    om = read_offset_value(recs[-1][2])
    assert om.expire_timestamp == om.commit_timestamp + 60_000 and om.leader_epoch == -1
    env.clock.advance(60_000)
    assert await env.coord.expire_offsets() == 1
    assert env.coord.fetch_offsets("s", [("t", 0)])[1][("t", 0)].offset == -1


@async_test
async def test_group_in_rebalance_keeps_offsets():
    env = Env()
    a, b = await env.stable()
    await env.coord.commit_offsets("g", 1, a.member_id, None, -1, {("t9", 0): (1, -1, "")})
    await env.coord.leave_group("g", [(b.member_id, None)])
    assert env.coord.groups["g"].state == PREPARING_REBALANCE
    g = env.coord.groups["g"]
    env.coord.membership.cancel_timers(g)   # freeze the rebalance
    env.clock.advance(2 * RETENTION_MS)
    assert await env.coord.expire_offsets() == 0
