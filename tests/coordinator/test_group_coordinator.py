"""The classic group coordinator state machine, driven by a FakeClock (no sleeping)."""
from __future__ import annotations

import asyncio
import functools
import struct

from josefk.coordinator import errors
from josefk.coordinator.runtime.clock import FakeClock
from josefk.coordinator.group.group import COMPLETING_REBALANCE, DEAD, EMPTY, PREPARING_REBALANCE, STABLE
from josefk.coordinator.runtime.partitions import java_string_hash, partition_for
from josefk.coordinator.group.group_coordinator import GroupCoordinator
from josefk.coordinator.group.membership import NEW_MEMBER_JOIN_TIMEOUT_MS
from josefk.coordinator.runtime import InMemoryOffsetsLog
from josefk.coordinator.group.offset_store import (OffsetStore, read_group_value,
                                             read_key, GroupKey)

SESSION = 10_000
REBALANCE = 30_000
DELAY = 3_000


def async_test(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return asyncio.run(fn(*args, **kwargs))
    return wrapper


def sub(*topics, user_data=None) -> bytes:
    """A ``consumer`` protocol Subscription v0."""
    out = bytearray(struct.pack(">hi", 0, len(topics)))
    for t in topics:
        b = t.encode()
        out += struct.pack(">h", len(b)) + b
    out += struct.pack(">i", -1) if user_data is None else struct.pack(">i", len(user_data)) + user_data
    return bytes(out)


def protos(*topics, names=("range",)):
    return [(n, sub(*(topics or ("t1",)))) for n in names]


class H:
    """Coordinator + fake clock + in-memory __consumer_offsets."""

    def __init__(self, config=None, start=True, partitions=None):
        cfg = {"group.initial.rebalance.delay.ms": DELAY}
        cfg.update(config or {})
        self.clock = FakeClock()
        self.log = InMemoryOffsetsLog()
        self.store = OffsetStore(self.log)
        self.coord = GroupCoordinator(cfg, self.store, self.clock)
        if start:
            self.coord.startup(partitions)

    async def settle(self):
        for _ in range(10):
            await asyncio.sleep(0)

    async def advance(self, ms):
        self.clock.advance(ms)
        await self.settle()

    async def advance_until(self, tasks, step=DELAY, limit=10 * REBALANCE):
        spent = 0
        while not all(t.done() for t in tasks):
            assert spent < limit, "tasks never completed"
            await self.advance(step)
            spent += step
        return [t.result() for t in tasks]

    def join(self, member_id="", group="g", instance=None, protocols=None, session=SESSION,
             rebalance=REBALANCE, require_known=False, ptype="consumer", client_id="client",
             skip=False):
        return asyncio.ensure_future(self.coord.join_group(
            group, member_id, instance, client_id, "/127.0.0.1", session, rebalance, ptype,
            protocols if protocols is not None else protos(), require_known, "test", skip))

    def sync(self, member_id, generation, assignments=None, group="g", instance=None,
             ptype=None, pname=None):
        return asyncio.ensure_future(self.coord.sync_group(
            group, generation, member_id, instance, ptype, pname, assignments or {}))

    def group(self, gid="g"):
        return self.coord.groups.get(gid)

    def state(self, gid="g"):
        g = self.group(gid)
        return None if g is None else g.state

    async def stable(self, n, group="g", instances=None, **kw):
        """Bring ``n`` new members to a Stable group; returns their JoinResults (leader first in
        join order) after SyncGroup, with assignment = member id bytes."""
        tasks = []
        for i in range(n):
            inst = instances[i] if instances else None
            tasks.append(self.join(group=group, client_id=f"c{i}", instance=inst, **kw))
            await self.settle()
        results = await self.advance_until(tasks)
        assert all(r.error == errors.NONE for r in results), results
        gen = results[0].generation_id
        leader = results[0].leader_id
        syncs = [self.sync(r.member_id, gen, group=group) for r in results if r.member_id != leader]
        await self.settle()
        syncs.append(self.sync(leader, gen, {r.member_id: r.member_id.encode() for r in results},
                               group=group))
        await self.settle()
        for s in syncs:
            assert s.done() and s.result().error == errors.NONE
        assert self.state(group) == STABLE
        return results


# ------------------------------------------------------------------------------------------
# partitioning

def test_partition_for_matches_kafka():
    assert java_string_hash("test") == 3556498
    assert partition_for("test", 50) == 48
    # String.hashCode of this one is Integer.MIN_VALUE: Utils.abs masks it to 0
    assert java_string_hash("polygenelubricants") == -2**31
    assert partition_for("polygenelubricants", 50) == 0
    # hashCode runs over UTF-16 code units (a surrogate pair is two of them)
    assert java_string_hash("\U0001F600") == 0xD83D * 31 + 0xDE00
    assert java_string_hash("") == 0
    assert H().coord.partition_for("test") == 48


# ------------------------------------------------------------------------------------------
# request validation

@async_test
async def test_status_errors():
    h = H(start=False)
    r = await h.join()
    assert r.error == errors.COORDINATOR_NOT_AVAILABLE
    h.coord.startup(partitions=[partition_for("g", 50)])
    assert (await h.join(group="")).error == errors.INVALID_GROUP_ID
    other = next(g for g in ("a", "b", "c", "d", "e") if partition_for(g, 50) != partition_for("g", 50))
    assert (await h.join(group=other)).error == errors.NOT_COORDINATOR
    assert h.coord.heartbeat(other, 1, "m") == errors.NOT_COORDINATOR
    assert (await h.coord.commit_offsets(other, -1, "", None, -1, {("t", 0): (1, -1, "")})) == {
        ("t", 0): errors.NOT_COORDINATOR}
    # loading: join says so, heartbeat answers blindly, sync asks to rejoin
    h.coord.loading_partitions.add(partition_for("g", 50))
    assert (await h.join()).error == errors.COORDINATOR_LOAD_IN_PROGRESS
    assert h.coord.heartbeat("g", 1, "m") == errors.NONE
    assert (await h.sync("m", 1)).error == errors.REBALANCE_IN_PROGRESS
    assert h.coord.fetch_offsets("g")[0] == errors.COORDINATOR_LOAD_IN_PROGRESS
    assert h.coord.list_groups()[0] == errors.COORDINATOR_LOAD_IN_PROGRESS


@async_test
async def test_invalid_group_ids():
    h = H()
    assert (await h.join(group=None)).error == errors.INVALID_GROUP_ID
    assert h.coord.heartbeat("", 0, "m") == errors.INVALID_GROUP_ID
    assert (await h.coord.leave_group("", [("m", None)]))[0] == errors.INVALID_GROUP_ID
    assert h.coord.fetch_offsets(None)[0] == errors.INVALID_GROUP_ID
    # the empty group id stays valid for offset commit/fetch (Kafka's backwards compatibility)
    res = await h.coord.commit_offsets("", -1, "", None, -1, {("t", 0): (5, -1, "")})
    assert res == {("t", 0): errors.NONE}
    assert h.coord.fetch_offsets("", [("t", 0)])[1][("t", 0)].offset == 5


@async_test
async def test_invalid_session_timeout():
    h = H()
    assert (await h.join(session=5999)).error == errors.INVALID_SESSION_TIMEOUT
    assert (await h.join(session=1_800_001)).error == errors.INVALID_SESSION_TIMEOUT
    assert h.group() is None


@async_test
async def test_unknown_member_id_on_unknown_group():
    h = H()
    r = await h.join(member_id="ghost")
    assert r.error == errors.UNKNOWN_MEMBER_ID and r.member_id == "ghost"
    assert r.generation_id == -1 and r.leader_id == "" and r.protocol_name is None
    assert h.group() is None
    assert h.coord.heartbeat("g", 1, "ghost") == errors.UNKNOWN_MEMBER_ID
    assert (await h.sync("ghost", 1)).error == errors.UNKNOWN_MEMBER_ID


# ------------------------------------------------------------------------------------------
# joining

@async_test
async def test_member_id_required_flow():
    h = H()
    r = await h.join(require_known=True, client_id="cid")
    assert r.error == errors.MEMBER_ID_REQUIRED
    assert r.member_id.startswith("cid-") and len(r.member_id) > 4
    g = h.group()
    assert g.state == EMPTY and g.pending_members == {r.member_id} and not g.members
    t = h.join(member_id=r.member_id, require_known=True, client_id="cid")
    await h.settle()
    assert h.state() == PREPARING_REBALANCE and not t.done()
    await h.advance(DELAY - 1)
    assert not t.done()
    await h.advance(1)
    res = t.result()
    assert res.error == errors.NONE and res.generation_id == 1
    assert res.member_id == r.member_id == res.leader_id
    assert res.protocol_type == "consumer" and res.protocol_name == "range"
    assert [m[0] for m in res.members] == [r.member_id]
    assert h.state() == COMPLETING_REBALANCE
    assert not g.pending_members


@async_test
async def test_pending_member_expires_after_session_timeout():
    h = H()
    r = await h.join(require_known=True)
    assert r.error == errors.MEMBER_ID_REQUIRED
    await h.advance(SESSION)
    assert not h.group().pending_members
    late = await h.join(member_id=r.member_id, require_known=True)
    assert late.error == errors.UNKNOWN_MEMBER_ID


@async_test
async def test_pending_member_holds_rebalance_until_it_joins():
    h = H()
    (a,) = await h.stable(1)
    pending = await h.join(require_known=True, client_id="b")
    assert pending.error == errors.MEMBER_ID_REQUIRED
    ta = h.join(member_id=a.member_id)       # the leader rejoining forces a rebalance
    await h.settle()
    assert h.state() == PREPARING_REBALANCE and not ta.done()
    tb = h.join(member_id=pending.member_id, require_known=True, client_id="b")
    await h.settle()
    ra, rb = ta.result(), tb.result()        # everybody known has joined: no waiting
    assert ra.generation_id == rb.generation_id == 2
    assert ra.leader_id == a.member_id and len(ra.members) == 2 and rb.members == []


@async_test
async def test_pending_member_expiry_completes_rebalance():
    h = H()
    (a,) = await h.stable(1)
    pending = await h.join(require_known=True, client_id="b")
    ta = h.join(member_id=a.member_id)
    await h.settle()
    assert not ta.done()
    await h.advance(SESSION)                 # the pending member never came back
    assert ta.result().error == errors.NONE and ta.result().generation_id == 2
    assert not h.group().pending_members and pending.member_id not in h.group().members


@async_test
async def test_three_members_leader_gets_metadata_and_sync_distributes():
    h = H()
    tasks = []
    for i, topics in enumerate((("t1",), ("t1", "t2"), ("t3",))):
        tasks.append(h.join(client_id=f"c{i}", protocols=[("range", sub(*topics))]))
        await h.settle()
    assert h.state() == PREPARING_REBALANCE
    # members arrived during the initial delay, so it is extended once (3s + 3s)
    await h.advance(DELAY)
    assert not any(t.done() for t in tasks)
    await h.advance(DELAY)
    results = [t.result() for t in tasks]
    assert all(r.error == errors.NONE and r.generation_id == 1 for r in results)
    leader = results[0]
    assert {r.leader_id for r in results} == {leader.member_id}
    assert {m[0] for m in leader.members} == {r.member_id for r in results}
    meta = {m[0]: m[2] for m in leader.members}
    assert meta[results[1].member_id] == sub("t1", "t2")
    assert all(m[1] is None for m in leader.members)
    assert results[1].members == [] and results[2].members == []
    assert h.state() == COMPLETING_REBALANCE
    # followers that sync before the leader wait for its assignment
    s1 = h.sync(results[1].member_id, 1)
    s2 = h.sync(results[2].member_id, 1)
    await h.settle()
    assert not s1.done() and not s2.done()
    assignment = {r.member_id: f"assign-{i}".encode() for i, r in enumerate(results)}
    s0 = await h.sync(leader.member_id, 1, assignment)
    await h.settle()
    assert s0.error == errors.NONE and s0.assignment == b"assign-0"
    assert s0.protocol_type == "consumer" and s0.protocol_name == "range"
    assert s1.result().assignment == b"assign-1" and s2.result().assignment == b"assign-2"
    assert h.state() == STABLE
    # a late SyncGroup in Stable gets the stored assignment again
    again = await h.sync(results[2].member_id, 1)
    assert again.error == errors.NONE and again.assignment == b"assign-2"
    # the generation was written to __consumer_offsets with the assignments
    recs = h.log.records(h.coord.partition_for("g"))
    gvals = [read_group_value(v) for _, k, v in recs if isinstance(read_key(k), GroupKey)]
    last = gvals[-1]
    assert last.generation == 1 and last.protocol == "range" and last.leader == leader.member_id
    assert {m.member_id: m.assignment for m in last.members} == assignment


@async_test
async def test_leader_missing_assignments_are_empty():
    h = H()
    ta, tb = h.join(client_id="a"), h.join(client_id="b")
    a, b = await h.advance_until([ta, tb])
    sb = h.sync(b.member_id, 1)
    sa = await h.sync(a.member_id, 1, {a.member_id: b"x", "not-a-member": b"y"})
    await h.settle()
    assert sa.assignment == b"x" and sb.result().assignment == b""


@async_test
async def test_protocol_vote_and_inconsistent_protocols():
    h = H()
    t = [h.join(client_id="a", protocols=[("range", b"r"), ("roundrobin", b"rr")]),
         h.join(client_id="b", protocols=[("roundrobin", b"rr"), ("range", b"r")]),
         h.join(client_id="c", protocols=[("sticky", b"s"), ("roundrobin", b"rr"), ("range", b"r")])]
    await h.settle()
    # a protocol nobody else supports, or another protocol type, is refused
    bad = await h.join(client_id="d", protocols=[("sticky", b"s")])
    assert bad.error == errors.INCONSISTENT_GROUP_PROTOCOL and bad.member_id == ""
    assert (await h.join(client_id="e", ptype="connect")).error == errors.INCONSISTENT_GROUP_PROTOCOL
    results = await h.advance_until(t)
    assert {r.protocol_name for r in results} == {"roundrobin"}     # 2 votes against 1
    leader = next(r for r in results if r.members)
    assert {m[2] for m in leader.members} == {b"rr"}                 # metadata of the chosen one


@async_test
async def test_empty_group_requires_protocol_type_and_protocols():
    h = H()
    assert (await h.join(ptype="")).error == errors.INCONSISTENT_GROUP_PROTOCOL
    assert (await h.join(protocols=[])).error == errors.INCONSISTENT_GROUP_PROTOCOL


@async_test
async def test_initial_rebalance_delay_without_new_members():
    h = H()
    t = h.join()
    await h.settle()
    await h.advance(DELAY - 1)
    assert not t.done()
    await h.advance(1)
    assert t.result().generation_id == 1


@async_test
async def test_initial_rebalance_delay_grows_up_to_rebalance_timeout():
    h = H()
    # rebalance timeout 10s: the initial delay is 3s, then at most 7s more
    ta = h.join(client_id="a", rebalance=10_000)
    await h.settle()
    await h.advance(2_000)
    tb = h.join(client_id="b", rebalance=10_000)   # arrives during the first delay
    await h.settle()
    await h.advance(1_000)                          # t=3s: extended by min(3s, 7s)
    assert not ta.done()
    await h.advance(2_000)
    tc = h.join(client_id="c", rebalance=10_000)   # t=5s: arrives during the second delay
    await h.settle()
    await h.advance(1_000)                          # t=6s: extended by min(3s, 4s)
    assert not ta.done()
    await h.advance(2_999)
    assert not ta.done()
    await h.advance(1)                              # t=9s
    assert {t.result().generation_id for t in (ta, tb, tc)} == {1}
    assert len(ta.result().members) == 3


@async_test
async def test_rebalance_of_non_empty_group_has_no_initial_delay():
    h = H()
    a, b = await h.stable(2)
    ta = h.join(member_id=a.member_id)
    tb = h.join(member_id=b.member_id)
    await h.settle()
    assert ta.done() and tb.done() and ta.result().generation_id == 2


@async_test
async def test_leader_rejoin_forces_rebalance_follower_rejoin_does_not():
    h = H()
    a, b = await h.stable(2)
    # a follower rejoining with the same metadata just gets the current generation
    rb = await h.join(member_id=b.member_id)
    assert rb.error == errors.NONE and rb.generation_id == 1 and rb.members == []
    assert rb.leader_id == a.member_id and h.state() == STABLE
    # a follower with new metadata triggers a rebalance
    tb = h.join(member_id=b.member_id, protocols=protos("t9"))
    await h.settle()
    assert h.state() == PREPARING_REBALANCE and not tb.done()
    assert h.coord.heartbeat("g", 1, a.member_id) == errors.REBALANCE_IN_PROGRESS
    ta = h.join(member_id=a.member_id)
    await h.settle()
    assert ta.result().generation_id == tb.result().generation_id == 2
    assert h.state() == COMPLETING_REBALANCE
    # the leader rejoining in Stable forces one too
    h2 = H()
    a2, _ = await h2.stable(2)
    t = h2.join(member_id=a2.member_id)
    await h2.settle()
    assert h2.state() == PREPARING_REBALANCE and not t.done()


@async_test
async def test_rejoin_during_completing_rebalance():
    h = H()
    ta, tb = h.join(client_id="a"), h.join(client_id="b")
    a, b = await h.advance_until([ta, tb])
    # same metadata (lost response): the current generation again, members for the leader
    again = await h.join(member_id=a.member_id)
    assert again.generation_id == 1 and len(again.members) == 2
    # a follower parked in SyncGroup is told to rejoin when a new member arrives
    sb = h.sync(b.member_id, 1)
    await h.settle()
    tc = h.join(client_id="c")
    await h.settle()
    assert sb.result().error == errors.REBALANCE_IN_PROGRESS
    assert h.state() == PREPARING_REBALANCE
    assert (await h.coord.commit_offsets("g", 1, a.member_id, None, -1,
                                         {("t", 0): (1, -1, "")}))[("t", 0)] == errors.NONE
    ta2, tb2 = h.join(member_id=a.member_id), h.join(member_id=b.member_id)
    await h.settle()
    assert {t.result().generation_id for t in (ta2, tb2, tc)} == {2}


@async_test
async def test_new_member_in_stable_group_triggers_rebalance():
    h = H()
    a, b = await h.stable(2)
    tc = h.join(client_id="c")
    await h.settle()
    assert h.state() == PREPARING_REBALANCE and not tc.done()
    assert h.coord.heartbeat("g", 1, b.member_id) == errors.REBALANCE_IN_PROGRESS
    # existing members that do not rejoin are dropped after the rebalance timeout
    ta = h.join(member_id=a.member_id)
    await h.settle()
    for _ in range(REBALANCE // 5_000):
        await h.advance(5_000)
        h.coord.heartbeat("g", 1, b.member_id)  # keeps its session alive, never rejoins
    assert ta.done() and tc.done()
    assert ta.result().generation_id == 2
    assert {m[0] for m in ta.result().members} == {a.member_id, tc.result().member_id}
    assert h.coord.heartbeat("g", 2, b.member_id) == errors.UNKNOWN_MEMBER_ID


@async_test
async def test_group_max_size():
    h = H({"group.max.size": 2})
    ta, tb = h.join(client_id="a"), h.join(client_id="b")
    await h.settle()
    rc = await h.join(client_id="c")
    assert rc.error == errors.GROUP_MAX_SIZE_REACHED and rc.member_id == ""
    a, b = await h.advance_until([ta, tb])
    assert len(a.members) == 2
    sb = h.sync(b.member_id, 1)
    await h.sync(a.member_id, 1, {})
    await sb
    assert h.state() == STABLE
    assert (await h.join(client_id="d")).error == errors.GROUP_MAX_SIZE_REACHED
    # known members are still welcome
    assert (await h.join(member_id=b.member_id)).error == errors.NONE


@async_test
async def test_group_max_size_with_member_id_required():
    h = H({"group.max.size": 1})
    r1 = await h.join(require_known=True, client_id="a")
    r2 = await h.join(require_known=True, client_id="b")
    assert r1.error == r2.error == errors.MEMBER_ID_REQUIRED
    t1 = h.join(member_id=r1.member_id, require_known=True)
    await h.settle()
    late = await h.join(member_id=r2.member_id, require_known=True)
    assert late.error == errors.GROUP_MAX_SIZE_REACHED
    assert r2.member_id not in h.group().pending_members
    assert (await h.advance_until([t1]))[0].error == errors.NONE


# ------------------------------------------------------------------------------------------
# leaving and failure detection

@async_test
async def test_member_leaving_triggers_rebalance():
    h = H()
    a, b = await h.stable(2)
    err, per = await h.coord.leave_group("g", [(b.member_id, None, "bye")])
    assert err == errors.NONE and [(p.member_id, p.error) for p in per] == [(b.member_id, 0)]
    assert h.state() == PREPARING_REBALANCE
    assert h.coord.heartbeat("g", 1, a.member_id) == errors.REBALANCE_IN_PROGRESS
    ra = await h.join(member_id=a.member_id)   # the only member left: completes at once
    assert ra.generation_id == 2 and [m[0] for m in ra.members] == [a.member_id]
    assert h.coord.heartbeat("g", 2, b.member_id) == errors.UNKNOWN_MEMBER_ID


@async_test
async def test_leave_group_errors():
    h = H()
    err, per = await h.coord.leave_group("nope", [("m", None)])
    assert err == errors.NONE and per[0].error == errors.UNKNOWN_MEMBER_ID
    a, b = await h.stable(2, instances=["ia", "ib"])
    err, per = await h.coord.leave_group("g", [("who", None), (b.member_id, "ia"), ("", "ix")])
    assert [p.error for p in per] == [errors.UNKNOWN_MEMBER_ID, errors.FENCED_INSTANCE_ID,
                                      errors.UNKNOWN_MEMBER_ID]
    assert h.state() == STABLE
    # KIP-345 admin removal: member id "" and the instance id
    err, per = await h.coord.leave_group("g", [("", "ib")])
    assert per[0].error == errors.NONE and per[0].group_instance_id == "ib"
    assert b.member_id not in h.group().members and h.state() == PREPARING_REBALANCE


@async_test
async def test_leave_of_pending_member():
    h = H()
    r = await h.join(require_known=True)
    err, per = await h.coord.leave_group("g", [(r.member_id, None)])
    assert per[0].error == errors.NONE and not h.group().pending_members


@async_test
async def test_all_members_leave_group_becomes_empty():
    h = H()
    a, b = await h.stable(2)
    await h.coord.leave_group("g", [(a.member_id, None), (b.member_id, None)])
    await h.settle()
    g = h.group()
    assert g.state == EMPTY and g.generation_id == 2 and g.protocol_name is None
    assert g.leader_id is None
    await h.coord.drain()
    recs = h.log.records(h.coord.partition_for("g"))
    last = read_group_value(recs[-1][2])
    assert last.generation == 2 and last.members == [] and last.protocol is None


@async_test
async def test_extended_session_expires_exactly_after_the_last_heartbeat_or_commit():
    # the session timer is not re-armed per request: it re-arms for what is left when it fires
    h = H()
    (a,) = await h.stable(1)
    await h.advance(SESSION // 2)
    assert h.coord.heartbeat("g", 1, a.member_id) == errors.NONE
    await h.advance(SESSION - 1)  # past the first deadline, 1 ms before the extended one
    codes = await h.coord.commit_offsets("g", 1, a.member_id, None, -1, {("t1", 0): (5, -1, "")})
    assert codes == {("t1", 0): errors.NONE}
    await h.advance(SESSION - 1)
    assert a.member_id in h.group().members and h.state() == STABLE
    await h.advance(1)
    assert a.member_id not in h.group().members and h.state() == EMPTY


@async_test
async def test_session_timeout_evicts_silent_member():
    h = H()
    a, b = await h.stable(2)
    await h.advance(SESSION // 2)
    assert h.coord.heartbeat("g", 1, a.member_id) == errors.NONE
    await h.advance(SESSION // 2 - 1)
    assert h.state() == STABLE
    await h.advance(1)
    # b never heartbeat: evicted after its session timeout
    assert b.member_id not in h.group().members
    assert h.state() == PREPARING_REBALANCE
    assert h.coord.heartbeat("g", 1, a.member_id) == errors.REBALANCE_IN_PROGRESS
    assert h.coord.heartbeat("g", 1, b.member_id) == errors.UNKNOWN_MEMBER_ID
    ra = await h.join(member_id=a.member_id)
    assert ra.generation_id == 2 and len(ra.members) == 1


@async_test
async def test_session_timeout_of_last_member_empties_group():
    h = H()
    await h.stable(1)
    await h.advance(SESSION)
    assert h.state() == EMPTY and h.group().generation_id == 2


@async_test
async def test_rebalance_timeout_removes_members_that_do_not_rejoin():
    h = H()
    a, b, c = await h.stable(3, rebalance=20_000)
    ta = h.join(member_id=a.member_id, rebalance=20_000)
    tc = h.join(member_id=c.member_id, rebalance=20_000)
    await h.settle()
    assert not ta.done()
    for _ in range(3):   # b keeps heartbeating (REBALANCE_IN_PROGRESS) but never rejoins
        await h.advance(5_000)
        assert h.coord.heartbeat("g", 1, b.member_id) == errors.REBALANCE_IN_PROGRESS
    assert not ta.done()
    await h.advance(5_000)
    ra = ta.result()
    assert ra.generation_id == 2 and {m[0] for m in ra.members} == {a.member_id, c.member_id}
    assert tc.result().generation_id == 2 and tc.result().members == []
    assert b.member_id not in h.group().members


@async_test
async def test_new_member_join_expires_after_five_minutes():
    h = H({"group.max.session.timeout.ms": 1_800_000})
    a, b = await h.stable(2, rebalance=600_000)
    ta = h.join(member_id=a.member_id, rebalance=600_000)
    tc = h.join(client_id="c", rebalance=600_000)
    await h.settle()
    for _ in range(NEW_MEMBER_JOIN_TIMEOUT_MS // 5_000):
        await h.advance(5_000)
        h.coord.heartbeat("g", 1, b.member_id)
    rc = tc.result()
    assert rc.error == errors.UNKNOWN_MEMBER_ID and rc.member_id == ""
    assert not ta.done()


@async_test
async def test_member_that_never_syncs_is_removed():
    h = H()
    ta, tb = h.join(client_id="a"), h.join(client_id="b")
    a, b = await h.advance_until([ta, tb])
    await h.sync(a.member_id, 1, {a.member_id: b"x", b.member_id: b"y"})
    assert h.state() == STABLE
    for _ in range(REBALANCE // 5_000):  # b never sends SyncGroup within the rebalance timeout
        assert b.member_id in h.group().members
        assert h.coord.heartbeat("g", 1, a.member_id) == errors.NONE
        assert h.coord.heartbeat("g", 1, b.member_id) == errors.NONE   # alive, but no sync
        await h.advance(5_000)
    assert b.member_id not in h.group().members
    assert h.state() == PREPARING_REBALANCE


# ------------------------------------------------------------------------------------------
# heartbeat and sync errors

@async_test
async def test_heartbeat_and_sync_errors():
    h = H()
    ta, tb = h.join(client_id="a"), h.join(client_id="b")
    a, b = await h.advance_until([ta, tb])
    # heartbeats after the JoinGroup response are fine while completing the rebalance
    assert h.coord.heartbeat("g", 1, b.member_id) == errors.NONE
    assert h.coord.heartbeat("g", 0, b.member_id) == errors.ILLEGAL_GENERATION
    assert h.coord.heartbeat("g", 1, "x") == errors.UNKNOWN_MEMBER_ID
    assert (await h.sync(b.member_id, 2)).error == errors.ILLEGAL_GENERATION
    assert (await h.sync("x", 1)).error == errors.UNKNOWN_MEMBER_ID
    assert (await h.sync(b.member_id, 1, ptype="connect")).error == errors.INCONSISTENT_GROUP_PROTOCOL
    assert (await h.sync(b.member_id, 1, pname="sticky")).error == errors.INCONSISTENT_GROUP_PROTOCOL
    sb = h.sync(b.member_id, 1, ptype="consumer", pname="range")
    await h.sync(a.member_id, 1, {b.member_id: b"b"})
    assert (await sb).assignment == b"b"
    assert h.coord.heartbeat("g", 1, b.member_id) == errors.NONE
    # sync while preparing a rebalance
    await h.coord.leave_group("g", [(a.member_id, None)])
    assert (await h.sync(b.member_id, 1)).error == errors.REBALANCE_IN_PROGRESS


@async_test
async def test_sync_group_store_failure_propagates_error():
    h = H()
    ta, tb = h.join(client_id="a"), h.join(client_id="b")
    a, b = await h.advance_until([ta, tb])
    sb = h.sync(b.member_id, 1)
    await h.settle()
    h.log.fail_next(errors.NOT_LEADER_OR_FOLLOWER)
    ra = await h.sync(a.member_id, 1, {a.member_id: b"a", b.member_id: b"b"})
    assert ra.error == errors.NOT_COORDINATOR and ra.assignment == b""
    assert (await sb).error == errors.NOT_COORDINATOR
    assert h.state() == PREPARING_REBALANCE


# ------------------------------------------------------------------------------------------
# static membership (KIP-345)

@async_test
async def test_static_member_rejoin_replaces_old_id_without_rebalance():
    h = H()
    a, b = await h.stable(2, instances=["ia", "ib"])
    assert a.member_id.startswith("ia-")
    n_records = len(h.log.records(h.coord.partition_for("g")))
    # "ia" restarts: unknown member id, same instance id and protocols
    ra = await h.join(instance="ia")
    assert ra.error == errors.NONE and ra.member_id != a.member_id
    assert ra.generation_id == 1 and h.state() == STABLE
    # the old leader id is returned so the restarted leader does not run the assignor
    assert ra.leader_id == a.member_id and ra.members == [] and not ra.skip_assignment
    assert h.group().leader_id == ra.member_id
    # the old id is fenced, the new one takes over its assignment and session
    assert h.coord.heartbeat("g", 1, a.member_id, "ia") == errors.FENCED_INSTANCE_ID
    assert (await h.sync(a.member_id, 1, instance="ia")).error == errors.FENCED_INSTANCE_ID
    assert (await h.join(member_id=a.member_id, instance="ia")).error == errors.FENCED_INSTANCE_ID
    assert h.coord.heartbeat("g", 1, ra.member_id, "ia") == errors.NONE
    s = await h.sync(ra.member_id, 1, instance="ia")
    assert s.error == errors.NONE and s.assignment == a.member_id.encode()
    # the new member id was persisted
    recs = h.log.records(h.coord.partition_for("g"))
    assert len(recs) == n_records + 1
    stored = read_group_value(recs[-1][2])
    assert {m.member_id for m in stored.members} == {ra.member_id, b.member_id}
    assert stored.leader == ra.member_id
    assert h.coord.commit_offsets is not None
    res = await h.coord.commit_offsets("g", 1, a.member_id, "ia", -1, {("t1", 0): (1, -1, "")})
    assert res == {("t1", 0): errors.FENCED_INSTANCE_ID}


@async_test
async def test_static_leader_rejoin_with_skip_assignment():
    h = H()
    a, b = await h.stable(2, instances=["ia", "ib"])
    ra = await h.join(instance="ia", skip=True)
    assert ra.error == errors.NONE and ra.skip_assignment
    assert ra.leader_id == ra.member_id
    assert {m[0] for m in ra.members} == {ra.member_id, b.member_id}
    assert {m[1] for m in ra.members} == {"ia", "ib"}
    assert h.state() == STABLE
    # a follower gets skip_assignment False
    rb = await h.join(instance="ib", skip=True)
    assert not rb.skip_assignment and rb.members == []


@async_test
async def test_static_rejoin_with_protocol_change_rebalances():
    h = H()
    (a,) = await h.stable(1, instances=["ia"])
    r = await h.join(instance="ia", protocols=[("roundrobin", b"rr"), ("range", sub("t1"))])
    assert r.error == errors.NONE and r.generation_id == 2 and r.protocol_name == "roundrobin"
    assert h.state() == COMPLETING_REBALANCE


@async_test
async def test_static_member_rejoin_while_completing_rebalance_rebalances():
    h = H()
    ta = h.join(client_id="a", instance="ia")
    tb = h.join(client_id="b", instance="ib")
    a, b = await h.advance_until([ta, tb])
    assert h.state() == COMPLETING_REBALANCE
    tb2 = h.join(instance="ib")
    await h.settle()
    assert h.state() == PREPARING_REBALANCE
    # the old id is fenced for SyncGroup; a rejoins and the rebalance completes
    assert (await h.sync(b.member_id, 1, instance="ib")).error == errors.FENCED_INSTANCE_ID
    ta2 = h.join(member_id=a.member_id, instance="ia")
    await h.settle()
    assert ta2.result().generation_id == tb2.result().generation_id == 2


@async_test
async def test_static_member_is_not_removed_by_rebalance_but_by_session_timeout():
    h = H()
    a, b = await h.stable(2, instances=["ia", "ib"], session=60_000)
    ta = h.join(member_id=a.member_id, instance="ia", session=60_000)
    await h.settle()
    await h.advance(REBALANCE)
    ra = ta.result()
    # "ib" did not rejoin but is static: it stays in the new generation
    assert ra.generation_id == 2 and {m[1] for m in ra.members} == {"ia", "ib"}
    assert b.member_id in h.group().members
    # ... until it misses its SyncGroup / session
    await h.sync(a.member_id, 2, {})
    await h.advance(REBALANCE)
    assert b.member_id not in h.group().members


@async_test
async def test_static_member_unknown_instance_and_fenced_join():
    h = H()
    a, b = await h.stable(2, instances=["ia", "ib"])
    assert (await h.join(member_id=a.member_id, instance="zz")).error == errors.UNKNOWN_MEMBER_ID
    assert (await h.join(member_id=b.member_id, instance="ia")).error == errors.FENCED_INSTANCE_ID
    assert h.coord.heartbeat("g", 1, b.member_id, "ia") == errors.FENCED_INSTANCE_ID


@async_test
async def test_static_join_parks_duplicate_instance_gets_fenced():
    h = H()
    ta = h.join(instance="ia", client_id="a")
    await h.settle()
    # a second process with the same instance id while the first is parked in JoinGroup
    tb = h.join(instance="ia", client_id="b")
    await h.settle()
    assert ta.result().error == errors.FENCED_INSTANCE_ID
    rb = (await h.advance_until([tb]))[0]
    assert rb.error == errors.NONE and rb.member_id.startswith("ia-")


# ------------------------------------------------------------------------------------------
# offsets

@async_test
async def test_simple_commit_and_fetch():
    h = H()
    res = await h.coord.commit_offsets("simple", -1, "", None, -1, {
        ("t1", 0): (10, 3, "meta"), ("t1", 1): (20, None, None)})
    assert res == {("t1", 0): errors.NONE, ("t1", 1): errors.NONE}
    g = h.group("simple")
    assert g.state == EMPTY and g.protocol_type is None and g.generation_id == 0
    err, offs = h.coord.fetch_offsets("simple", [("t1", 0), ("t1", 1), ("t1", 2)])
    assert err == errors.NONE
    assert tuple(offs[("t1", 0)]) == (10, 3, "meta", errors.NONE)
    assert tuple(offs[("t1", 1)]) == (20, -1, "", errors.NONE)
    assert tuple(offs[("t1", 2)]) == (-1, -1, "", errors.NONE)
    err, all_offs = h.coord.fetch_offsets("simple", None)
    assert set(all_offs) == {("t1", 0), ("t1", 1)}
    # unknown group: -1 for what was asked, nothing for "all"
    assert tuple(h.coord.fetch_offsets("nope", [("t", 0)])[1][("t", 0)]) == (-1, -1, "", 0)
    assert h.coord.fetch_offsets("nope", None) == (errors.NONE, {})
    # a later commit wins
    await h.coord.commit_offsets("simple", -1, "", None, -1, {("t1", 0): (11, 3, "m2")})
    assert h.coord.fetch_offsets("simple", [("t1", 0)])[1][("t1", 0)].offset == 11
    # a generation with an unknown group is refused
    res = await h.coord.commit_offsets("other", 3, "m", None, -1, {("t1", 0): (1, -1, "")})
    assert res == {("t1", 0): errors.ILLEGAL_GENERATION}
    assert h.group("other") is None


@async_test
async def test_member_commit_semantics():
    h = H()
    tps = {("t1", 0): (5, 1, "")}
    ta, tb = h.join(client_id="a"), h.join(client_id="b")
    a, b = await h.advance_until([ta, tb])
    # completing the rebalance: the member must sync first
    assert (await h.coord.commit_offsets("g", 1, a.member_id, None, -1, tps))[("t1", 0)] == \
        errors.REBALANCE_IN_PROGRESS
    sb = h.sync(b.member_id, 1)
    await h.sync(a.member_id, 1, {})
    await sb
    c = h.coord.commit_offsets
    assert (await c("g", 1, a.member_id, None, -1, tps))[("t1", 0)] == errors.NONE
    assert (await c("g", 0, a.member_id, None, -1, tps))[("t1", 0)] == errors.ILLEGAL_GENERATION
    assert (await c("g", 1, "stranger", None, -1, tps))[("t1", 0)] == errors.UNKNOWN_MEMBER_ID
    # standalone commits are refused while the group has members
    assert (await c("g", -1, "", None, -1, tps))[("t1", 0)] == errors.UNKNOWN_MEMBER_ID
    # during PreparingRebalance members of the old generation may still commit
    h.join(client_id="c")
    await h.settle()
    assert h.state() == PREPARING_REBALANCE
    assert (await c("g", 1, b.member_id, None, -1, {("t1", 1): (7, -1, "")}))[("t1", 1)] == errors.NONE
    assert h.coord.fetch_offsets("g", [("t1", 1)])[1][("t1", 1)].offset == 7


@async_test
async def test_commit_keeps_member_session_alive():
    h = H()
    a, b = await h.stable(2)
    for _ in range(4):
        await h.advance(SESSION // 2)
        h.coord.heartbeat("g", 1, a.member_id)
        await h.coord.commit_offsets("g", 1, b.member_id, None, -1, {("t1", 0): (1, -1, "")})
    assert h.state() == STABLE and b.member_id in h.group().members


@async_test
async def test_offset_metadata_too_large():
    h = H({"offset.metadata.max.bytes": 8})
    res = await h.coord.commit_offsets("s", -1, "", None, -1, {
        ("t", 0): (1, -1, "12345678"), ("t", 1): (2, -1, "123456789")})
    assert res == {("t", 0): errors.NONE, ("t", 1): errors.OFFSET_METADATA_TOO_LARGE}
    n = len(h.log.records(h.coord.partition_for("s")))
    res = await h.coord.commit_offsets("s", -1, "", None, -1, {("t", 1): (2, -1, "x" * 9)})
    assert res == {("t", 1): errors.OFFSET_METADATA_TOO_LARGE}
    assert len(h.log.records(h.coord.partition_for("s"))) == n
    assert tuple(h.coord.fetch_offsets("s", [("t", 1)])[1][("t", 1)])[0] == -1


@async_test
async def test_commit_append_failures_map_to_kafka_errors():
    h = H()
    tp = {("t", 0): (1, -1, "")}
    await h.coord.commit_offsets("s", -1, "", None, -1, tp)
    cases = [(errors.NOT_LEADER_OR_FOLLOWER, errors.NOT_COORDINATOR),
             (errors.NOT_ENOUGH_REPLICAS, errors.COORDINATOR_NOT_AVAILABLE),
             (errors.MESSAGE_TOO_LARGE, errors.INVALID_COMMIT_OFFSET_SIZE),
             (errors.REQUEST_TIMED_OUT, errors.REQUEST_TIMED_OUT)]
    for log_error, expected in cases:
        h.log.fail_next(log_error)
        res = await h.coord.commit_offsets("s", -1, "", None, -1, {("t", 0): (99, -1, "")})
        assert res == {("t", 0): expected}
    assert h.coord.fetch_offsets("s", [("t", 0)])[1][("t", 0)].offset == 1
    assert not h.group("s").pending_offset_commits


class GatedLog(InMemoryOffsetsLog):
    """Appends wait until the test opens the gate (replication in flight)."""

    def __init__(self):
        super().__init__()
        self.gate = asyncio.Event()

    async def _append(self, partition, batch):
        await self.gate.wait()
        return InMemoryOffsetsLog.append(self, partition, batch)

    def append(self, partition, batch):
        return self._append(partition, batch)


@async_test
async def test_require_stable_sees_unstable_offset_commit():
    h = H()
    h.log = GatedLog()
    h.store.log = h.log
    commit = asyncio.ensure_future(h.coord.commit_offsets("s", -1, "", None, -1,
                                                         {("t", 0): (5, -1, "")}))
    await h.settle()
    assert not commit.done()
    err, offs = h.coord.fetch_offsets("s", [("t", 0)], require_stable=True)
    assert offs[("t", 0)].error == errors.UNSTABLE_OFFSET_COMMIT
    assert h.coord.fetch_offsets("s", [("t", 0)])[1][("t", 0)].offset == -1
    h.log.gate.set()
    assert (await commit) == {("t", 0): errors.NONE}
    err, offs = h.coord.fetch_offsets("s", [("t", 0)], require_stable=True)
    assert tuple(offs[("t", 0)]) == (5, -1, "", errors.NONE)


@async_test
async def test_txn_offsets_count_only_once_committed():
    """TxnOffsetCommit stages offsets in a transactional batch; the COMMIT marker makes them
    visible, an ABORT drops them; meanwhile require_stable fetches get UNSTABLE_OFFSET_COMMIT."""
    h = H()
    tp = ("t", 0)
    p = h.coord.partition_for("s")
    assert await h.coord.commit_txn_offsets("s", 77, 0, -1, "", None, {tp: (5, -1, "")}) == \
        {tp: errors.NONE}
    assert h.coord.fetch_offsets("s", [tp])[1][tp].offset == -1
    assert h.coord.fetch_offsets("s", [tp], require_stable=True)[1][tp].error == \
        errors.UNSTABLE_OFFSET_COMMIT
    h.coord.complete_txn(p, 77, commit=False)
    assert tuple(h.coord.fetch_offsets("s", [tp], require_stable=True)[1][tp]) == \
        (-1, -1, "", errors.NONE)
    await h.coord.commit_txn_offsets("s", 77, 0, -1, "", None, {tp: (9, -1, "")})
    h.coord.complete_txn(p, 77, commit=True)
    assert h.coord.fetch_offsets("s", [tp])[1][tp].offset == 9
    # the batch was transactional, with the producer's id and epoch
    (hdr, _buf), = list(h.log.read_batches(p))[-1:]
    assert hdr.is_transactional and hdr.producer_id == 77 and hdr.producer_epoch == 0


@async_test
async def test_txn_offsets_validate_the_member_and_survive_reload():
    h = H()
    a, _b = await h.stable(2)
    tp = ("t", 0)
    res = await h.coord.commit_txn_offsets("g", 5, 0, 1, "nobody", None, {tp: (1, -1, "")})
    assert res == {tp: errors.UNKNOWN_MEMBER_ID}
    res = await h.coord.commit_txn_offsets("g", 5, 0, 99, a.member_id, None, {tp: (1, -1, "")})
    assert res == {tp: errors.ILLEGAL_GENERATION}
    res = await h.coord.commit_txn_offsets("g", 5, 0, 1, a.member_id, None, {tp: (3, -1, "")})
    assert res == {tp: errors.NONE}
    # reloading the partition keeps the open transaction's offsets pending
    p = h.coord.partition_for("g")
    h.coord.unload_partition(p)
    h.coord.load_partition(p)
    assert h.coord.fetch_offsets("g", [tp], require_stable=True)[1][tp].error == \
        errors.UNSTABLE_OFFSET_COMMIT
    h.coord.complete_txn(p, 5, commit=True)
    assert h.coord.fetch_offsets("g", [tp])[1][tp].offset == 3


# ------------------------------------------------------------------------------------------
# describe / list / delete

@async_test
async def test_describe_groups():
    h = H()
    a, b = await h.stable(2)
    (d, unknown) = h.coord.describe_groups(["g", "nope"])
    assert d.error == errors.NONE and d.state == STABLE and d.protocol_type == "consumer"
    assert d.protocol == "range"
    members = {m.member_id: m for m in d.members}
    assert set(members) == {a.member_id, b.member_id}
    m = members[b.member_id]
    assert m.client_id == "c1" and m.client_host == "/127.0.0.1"
    assert m.metadata == sub("t1") and m.assignment == b.member_id.encode()
    assert unknown.state == DEAD and unknown.error == errors.NONE and unknown.members == []
    h.join(client_id="c")
    await h.settle()
    (d,) = h.coord.describe_groups(["g"])
    assert d.state == PREPARING_REBALANCE and d.protocol == ""
    assert all(m.metadata == b"" and m.assignment == b"" for m in d.members)


@async_test
async def test_list_groups_with_state_filter():
    h = H()
    await h.stable(1, group="g1")
    await h.coord.commit_offsets("simple", -1, "", None, -1, {("t", 0): (1, -1, "")})
    err, groups = h.coord.list_groups()
    assert err == errors.NONE
    assert {(g.group_id, g.protocol_type, g.state) for g in groups} == {
        ("g1", "consumer", STABLE), ("simple", "", EMPTY)}
    assert [g.group_id for g in h.coord.list_groups(["Empty"])[1]] == ["simple"]
    assert [g.group_id for g in h.coord.list_groups({"Stable", "Dead"})[1]] == ["g1"]
    assert h.coord.list_groups([])[1] and len(h.coord.list_groups([])[1]) == 2


@async_test
async def test_delete_groups():
    h = H()
    a, b = await h.stable(2)
    await h.coord.commit_offsets("s", -1, "", None, -1, {("t", 0): (1, -1, ""), ("t", 1): (2, -1, "")})
    res = await h.coord.delete_groups(["g", "s", "nope"])
    assert res == {"g": errors.NON_EMPTY_GROUP, "s": errors.NONE, "nope": errors.GROUP_ID_NOT_FOUND}
    assert h.group("s") is None
    assert tuple(h.coord.fetch_offsets("s", [("t", 0)])[1][("t", 0)])[0] == -1
    recs = h.log.records(h.coord.partition_for("s"))
    tombstoned = {read_key(k).partition for _, k, v in recs
                  if v is None and not isinstance(read_key(k), GroupKey)}
    assert tombstoned == {0, 1}
    # a group with a generation also gets its metadata tombstoned
    await h.coord.leave_group("g", [(a.member_id, None), (b.member_id, None)])
    await h.coord.drain()
    assert (await h.coord.delete_groups(["g"])) == {"g": errors.NONE}
    recs = h.log.records(h.coord.partition_for("g"))
    assert any(v is None and isinstance(read_key(k), GroupKey) and read_key(k).group == "g"
               for _, k, v in recs)
    assert h.coord.list_groups()[1] == []


@async_test
async def test_delete_offsets():
    h = H()
    tps = {("t1", 0): (1, -1, ""), ("t2", 0): (2, -1, "")}
    a, b = await h.stable(2, protocols=[("range", sub("t1"))])
    await h.coord.commit_offsets("g", 1, a.member_id, None, -1, tps)
    err, per = await h.coord.delete_offsets("g", [("t1", 0), ("t2", 0)])
    assert err == errors.NONE
    assert per == {("t1", 0): errors.GROUP_SUBSCRIBED_TO_TOPIC, ("t2", 0): errors.NONE}
    _, offs = h.coord.fetch_offsets("g", None)
    assert set(offs) == {("t1", 0)}
    assert (await h.coord.delete_offsets("nope", [("t1", 0)])) == (errors.GROUP_ID_NOT_FOUND, {})
    # once Empty, anything can go
    await h.coord.leave_group("g", [(a.member_id, None), (b.member_id, None)])
    err, per = await h.coord.delete_offsets("g", [("t1", 0)])
    assert per == {("t1", 0): errors.NONE} and h.coord.fetch_offsets("g", None)[1] == {}


@async_test
async def test_delete_offsets_of_non_consumer_group():
    h = H()
    await h.stable(1, ptype="connect", protocols=[("default", b"x")])
    assert (await h.coord.delete_offsets("g", [("t", 0)]))[0] == errors.NON_EMPTY_GROUP


# ------------------------------------------------------------------------------------------
# partitions moving away

@async_test
async def test_unload_partition_answers_parked_requests():
    h = H()
    t = h.join()
    await h.settle()
    h.coord.unload_partition(h.coord.partition_for("g"))
    await h.settle()
    assert t.result().error == errors.NOT_COORDINATOR
    assert h.group() is None
    assert h.coord.heartbeat("g", 1, "m") == errors.NOT_COORDINATOR
    h.clock.advance(10 * REBALANCE)    # stale timers are harmless


# ------------------------------------------------------------------------------------------
# the real clock

@async_test
async def test_real_asyncio_clock_drives_timers():
    from josefk.coordinator.runtime.clock import AsyncioClock
    coord = GroupCoordinator({"group.initial.rebalance.delay.ms": "20",   # strings, like a
                              "group.min.session.timeout.ms": "50"},      # properties file
                             OffsetStore(InMemoryOffsetsLog()), AsyncioClock())
    coord.startup()
    t0 = asyncio.get_running_loop().time()
    r = await asyncio.wait_for(coord.join_group(
        "g", "", None, "c", "/h", 100, 100, "consumer", protos(), False), 2)
    assert r.error == errors.NONE and asyncio.get_running_loop().time() - t0 >= 0.015
    s = await coord.sync_group("g", 1, r.member_id, None, None, None, {r.member_id: b"a"})
    assert s.assignment == b"a"
    await asyncio.sleep(0.25)                 # no heartbeats: the session (100ms) expires
    assert coord.groups["g"].state == EMPTY
    await coord.drain()
    coord.shutdown()


@async_test
async def test_pending_member_cannot_turn_static():
    # Kafka raises IllegalStateException here, which clients see as UNKNOWN_SERVER_ERROR
    h = H()
    r = await h.join(require_known=True)
    bad = await h.join(member_id=r.member_id, instance="i", require_known=True)
    assert bad.error == errors.UNKNOWN_SERVER_ERROR


@async_test
async def test_commit_with_a_huge_retention_time_does_not_overflow():
    h = H()
    res = await h.coord.commit_offsets("huge", -1, "", None, 0x7FFFFFFFFFFFFFFF,
                                       {("t", 0): (5, -1, "")})
    assert res == {("t", 0): errors.NONE}
    assert tuple(h.coord.fetch_offsets("huge", [("t", 0)])[1][("t", 0)])[0] == 5
