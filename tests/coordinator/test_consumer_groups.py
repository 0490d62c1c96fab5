"""The consumer group protocol (KIP-848) in the group coordinator, driven by a FakeClock over an
in-memory __consumer_offsets (no sleeping, no sockets)."""
from __future__ import annotations

import asyncio
import functools
import uuid

import pytest

from josefk.coordinator import errors
from josefk.coordinator.runtime.clock import FakeClock
from josefk.coordinator.group.consumer_group import (ConsumerGroup, STABLE, UNRELEASED_PARTITIONS,
                                               UNREVOKED_PARTITIONS)
from josefk.coordinator.group.consumer_groups import ConsumerGroupConfig, Heartbeat
from josefk.coordinator.group.group import GroupMetadata
from josefk.coordinator.group.group_coordinator import GroupCoordinator
from josefk.coordinator.group.offset_store import OffsetStore
from josefk.coordinator.runtime import InMemoryOffsetsLog
from josefk.wire.apis.consumer_protocol import ASSIGNMENT, SUBSCRIPTION
from tests.coordinator.stores import SlowStore

SESSION = 45_000
INTERVAL = 5_000
REBALANCE = 30_000


def async_test(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return asyncio.run(fn(*args, **kwargs))
    return wrapper


class FakeTopics:
    """coordinator.group.seams.TopicsView over a dict."""

    def __init__(self):
        self.by_name = {}
        self.version = 0

    def create(self, name, partitions):
        tid = uuid.uuid5(uuid.NAMESPACE_DNS, name)
        self.by_name[name] = (tid, partitions)
        self.version += 1
        return tid

    def get(self, name):
        return self.by_name.get(name)

    def name_of(self, topic_id):
        return next((n for n, (t, _) in self.by_name.items() if t == topic_id), None)

    def names(self):
        return list(self.by_name)


class Member:
    """A consumer-protocol client: heartbeats with what it owns, and adopts each assignment it
    is given (releasing what it no longer has) as librdkafka does."""

    def __init__(self, h, member_id, topics=("t",), regex=None, instance=None, group="g",
                 assignor=None):
        self.h, self.member_id, self.group = h, member_id, group
        self.topics, self.regex, self.instance, self.assignor = topics, regex, instance, assignor
        self.epoch = 0
        self.owned = {}
        self.last = None

    async def heartbeat(self, epoch=None, **kw):
        joining = self.epoch == 0
        fields = dict(instance_id=self.instance, rebalance_timeout_ms=REBALANCE if joining else -1,
                      topic_names=list(self.topics) if joining and self.topics is not None
                      else None,
                      topic_regex=self.regex if joining else None,
                      server_assignor=self.assignor if joining else None,
                      owned={} if joining else dict(self.owned), client_id="c",
                      client_host="/127.0.0.1")
        fields.update(kw)
        hb = Heartbeat(self.group, self.member_id, self.epoch if epoch is None else epoch,
                       **fields)
        res = self.last = await self.h.coord.consumer_group_heartbeat(hb)
        if res.error == errors.NONE:
            self.epoch = res.member_epoch
            if res.assignment is not None:
                self.owned = dict(res.assignment)
        return res

    def partitions(self):
        return {(self.h.topics.name_of(t), p) for t, ps in self.owned.items() for p in ps}


class H:
    def __init__(self, config=None, partitions=None, log=None, topics=None, store=OffsetStore):
        cfg = {"group.consumer.session.timeout.ms": SESSION,
               "group.consumer.heartbeat.interval.ms": INTERVAL}
        cfg.update(config or {})
        self.clock = FakeClock()
        self.log = log or InMemoryOffsetsLog()
        self.topics = topics or FakeTopics()
        self.coord = GroupCoordinator(cfg, store(self.log), self.clock, topics=self.topics)
        self.coord.startup(partitions)

    async def settle(self):
        for _ in range(20):
            await asyncio.sleep(0)

    async def advance(self, ms):
        self.clock.advance(ms)
        await self.settle()

    async def until(self, tasks, step=1000, limit=60):
        """Advance the clock until ``tasks`` (parked classic requests) are answered."""
        for _ in range(limit):
            if all(t.done() for t in tasks):
                return [t.result() for t in tasks]
            await self.advance(step)
        raise AssertionError("requests never answered")

    def group(self, gid="g"):
        return self.coord.groups.get(gid)

    async def converge(self, members, rounds=10):
        """Heartbeat every member until nothing changes; return the rounds it took."""
        for n in range(rounds):
            before = [(m.epoch, m.owned) for m in members]
            for m in members:
                await m.heartbeat()
            self.check_exclusive(members)
            if [(m.epoch, m.owned) for m in members] == before:
                return n
        raise AssertionError("members never converged")

    @staticmethod
    def check_exclusive(members):
        seen = {}
        for m in members:
            for tp in m.partitions():
                assert tp not in seen, f"{tp} owned by {seen[tp]} and {m.member_id}"
                seen[tp] = m.member_id


@async_test
async def test_first_member_gets_every_partition():
    h = H()
    h.topics.create("t", 4)
    a = Member(h, "a")
    res = await a.heartbeat()
    assert (res.error, res.member_id, res.member_epoch, res.heartbeat_interval_ms) == (
        errors.NONE, "a", 1, INTERVAL)
    assert a.partitions() == {("t", p) for p in range(4)}
    g = h.group()
    assert isinstance(g, ConsumerGroup)
    assert (g.state, g.group_epoch, g.assignment_epoch) == (STABLE, 1, 1)
    res = await a.heartbeat()   # a plain heartbeat: no assignment sent again
    assert res.error == errors.NONE and res.assignment is None and res.member_epoch == 1


@async_test
async def test_a_partition_moves_only_once_its_owner_released_it():
    h = H()
    h.topics.create("t", 4)
    a, b = Member(h, "a"), Member(h, "b")
    await a.heartbeat()
    await b.heartbeat()                          # b is assigned 2 partitions a still owns
    g = h.group()
    assert g.group_epoch == 2
    assert g.members["b"].current.state == UNRELEASED_PARTITIONS and not b.owned
    await a.heartbeat()                          # a is asked to give them up, at its epoch
    assert g.members["a"].current.state == UNREVOKED_PARTITIONS
    assert a.epoch == 1 and len(a.partitions()) == 2
    await b.heartbeat()                          # still owned by a: b waits
    assert not b.owned
    await a.heartbeat()                          # a reports them released: next epoch
    assert a.epoch == 2 and g.members["a"].current.state != UNREVOKED_PARTITIONS
    await b.heartbeat()
    assert b.epoch == 2 and len(b.partitions()) == 2
    H.check_exclusive([a, b])
    assert a.partitions() | b.partitions() == {("t", p) for p in range(4)}
    assert g.state == STABLE


@async_test
async def test_group_grows_to_four_and_shrinks_back_with_one_owner_per_partition():
    h = H()
    h.topics.create("t", 8)
    members = [Member(h, f"m{i}") for i in range(4)]
    for n in range(1, 5):
        await h.converge(members[:n])
        assert sorted(len(m.owned.get(h.topics.get("t")[0], ())) for m in members[:n]) == \
            sorted([8 // n + (i < 8 % n) for i in range(n)])
    for n in range(4, 1, -1):
        leaving = members[n - 1]
        res = await leaving.heartbeat(epoch=-1)
        assert (res.error, res.member_epoch) == (errors.NONE, -1)
        await h.converge(members[:n - 1])
    assert members[0].partitions() == {("t", p) for p in range(8)}


@async_test
async def test_session_timeout_fences_a_silent_member_and_frees_its_partitions():
    h = H()
    h.topics.create("t", 2)
    a, b = Member(h, "a"), Member(h, "b")
    await h.converge([a, b])
    for _ in range(SESSION // INTERVAL + 1):    # a keeps heartbeating, b has died
        await h.advance(INTERVAL)
        await a.heartbeat()
    assert "b" not in h.group().members
    await h.converge([a])
    assert a.partitions() == {("t", 0), ("t", 1)}
    res = await b.heartbeat()         # b comes back: it is no longer a member
    assert res.error == errors.UNKNOWN_MEMBER_ID


@async_test
async def test_a_session_timer_that_fires_during_the_members_own_heartbeat_fences_nobody():
    """The session timer fires while the member's heartbeat holds the group, its write under
    way: the heartbeat armed the session anew, so the expiry that waited for the group finds
    a live member and leaves it be."""
    h = H(store=SlowStore)
    h.topics.create("t", 2)
    h.topics.create("u", 1)
    a = Member(h, "a")
    await h.converge([a])
    await h.advance(SESSION - 1)
    beat = asyncio.ensure_future(a.heartbeat(topic_names=["t", "u"]))
    await asyncio.sleep(0)            # the heartbeat waits for its write
    h.clock.advance(1)                # the session timer armed before it fires
    assert (await beat).error == errors.NONE
    await h.settle()
    assert "a" in h.group().members
    assert (await a.heartbeat()).error == errors.NONE


@async_test
async def test_rebalance_timeout_fences_a_member_that_keeps_its_partitions():
    h = H()
    h.topics.create("t", 2)
    a, b = Member(h, "a"), Member(h, "b")
    await a.heartbeat()
    await b.heartbeat()
    stubborn_owned = dict(a.owned)
    await a.heartbeat()
    assert h.group().members["a"].current.state == UNREVOKED_PARTITIONS
    for _ in range(REBALANCE // INTERVAL + 1):
        await h.advance(INTERVAL)
        a.owned = dict(stubborn_owned)   # never releases
        await a.heartbeat()
        await b.heartbeat()
    assert "a" not in h.group().members
    await b.heartbeat()
    assert b.partitions() == {("t", 0), ("t", 1)}


@async_test
async def test_member_epoch_checks():
    h = H()
    h.topics.create("t", 2)
    a = Member(h, "a")
    await a.heartbeat()
    b = Member(h, "b")
    await b.heartbeat()
    await a.heartbeat()
    await a.heartbeat()                 # a: epoch 2, previous 1
    assert a.epoch == 2
    res = await a.heartbeat(epoch=5)
    assert res.error == errors.FENCED_MEMBER_EPOCH and "greater" in res.message
    res = await a.heartbeat(epoch=1)    # the previous epoch with a subset of its partitions
    assert res.error == errors.NONE
    res = await a.heartbeat(epoch=0 + 1, owned={uuid.uuid4(): frozenset({0})})
    assert res.error == errors.FENCED_MEMBER_EPOCH
    res = await Member(h, "ghost").heartbeat(epoch=3)
    assert res.error == errors.UNKNOWN_MEMBER_ID


@async_test
async def test_request_checks():
    h = H()
    h.topics.create("t", 1)

    async def hb(**kw):
        base = dict(group_id="g", member_id="m", member_epoch=0, rebalance_timeout_ms=1000,
                    topic_names=["t"], owned={})
        base.update(kw)
        return await h.coord.consumer_group_heartbeat(Heartbeat(**base))

    assert (await hb(member_id="")).message == "MemberId can't be empty."
    res = await hb(member_id="", version=0)   # v0: the coordinator names the member
    assert res.error == errors.NONE and len(res.member_id) == 22
    assert (await hb(group_id="")).message == "GroupId can't be empty."
    assert (await hb(instance_id=" ")).message == "InstanceId can't be empty."
    assert (await hb(rebalance_timeout_ms=-1)).error == errors.INVALID_REQUEST
    assert (await hb(owned=None)).error == errors.INVALID_REQUEST
    assert (await hb(topic_names=None)).error == errors.INVALID_REQUEST
    assert (await hb(member_epoch=-2)).message == "InstanceId can't be null."
    assert (await hb(member_epoch=-3)).message == "MemberEpoch is invalid."
    res = await hb(server_assignor="sticky")
    assert res.error == errors.UNSUPPORTED_ASSIGNOR and "uniform, range" in res.message
    assert (await hb(group_id="nope", member_epoch=3)).error == errors.GROUP_ID_NOT_FOUND


@async_test
async def test_the_assignor_members_name_is_used():
    h = H()
    h.topics.create("t", 4)
    a, b = Member(h, "a", assignor="range"), Member(h, "b", assignor="range")
    await h.converge([a, b])
    assert a.partitions() == {("t", 0), ("t", 1)} and b.partitions() == {("t", 2), ("t", 3)}
    d, = h.coord.consumer_group_describe(["g"])
    assert d.assignor == "range"


@async_test
async def test_static_member_leaves_for_a_while_and_a_new_instance_takes_over():
    h = H()
    h.topics.create("t", 2)
    a, b = Member(h, "a", instance="ia"), Member(h, "b")
    await h.converge([a, b])
    held = a.partitions()
    res = await Member(h, "a2", instance="ia").heartbeat()
    assert res.error == errors.UNRELEASED_INSTANCE_ID
    res = await a.heartbeat(epoch=-2)
    assert (res.error, res.member_epoch) == (errors.NONE, -2)
    await h.converge([b])
    assert not (b.partitions() & held)    # nobody takes a's partitions while it is away
    a2 = Member(h, "a2", instance="ia")
    await h.converge([a2, b])
    assert a2.partitions() == held and "a" not in h.group().members
    res = await a.heartbeat(epoch=a2.epoch)
    assert res.error == errors.FENCED_INSTANCE_ID


@async_test
async def test_static_member_is_fenced_when_it_does_not_come_back():
    h = H()
    h.topics.create("t", 2)
    a, b = Member(h, "a", instance="ia"), Member(h, "b")
    await h.converge([a, b])
    await a.heartbeat(epoch=-2)
    for _ in range(SESSION // INTERVAL + 2):
        await h.advance(INTERVAL)
        await b.heartbeat()
    assert "a" not in h.group().members
    await h.converge([b])
    assert len(b.partitions()) == 2


@async_test
async def test_regular_expression_picks_up_a_topic_created_later():
    h = H()
    h.topics.create("orders-eu", 2)
    h.topics.create("payments", 2)
    a = Member(h, "a", topics=[], regex="orders-.*")
    await a.heartbeat()
    assert a.partitions() == {("orders-eu", 0), ("orders-eu", 1)}
    h.topics.create("orders-us", 1)
    await h.advance(1000)
    await a.heartbeat()
    assert ("orders-us", 0) not in a.partitions()   # resolved again at most every 10 s
    await h.advance(10_000)
    await h.converge([a])
    assert a.partitions() == {("orders-eu", 0), ("orders-eu", 1), ("orders-us", 0)}
    d, = h.coord.consumer_group_describe(["g"])
    assert d.members[0].topic_regex == "orders-.*"
    res = await Member(h, "b", topics=None, regex="orders-(").heartbeat()
    assert res.error == errors.INVALID_REGULAR_EXPRESSION


@async_test
async def test_regex_resolves_only_to_topics_the_member_may_describe():
    h = H()
    h.topics.create("orders-a", 1)
    h.topics.create("orders-secret", 1)
    res = await h.coord.consumer_group_heartbeat(
        Heartbeat("g", "m", 0, rebalance_timeout_ms=1000, topic_regex="orders-.*", owned={}),
        may_describe=lambda t: "secret" not in t)
    assert {h.topics.name_of(t) for t in res.assignment} == {"orders-a"}


@async_test
async def test_state_survives_a_reload_of_the_partition():
    h = H()
    h.topics.create("t", 4)
    a, b = Member(h, "a", instance="ia"), Member(h, "b", topics=[], regex="t")
    await h.converge([a, b])
    before = h.group()
    h2 = H(log=h.log, topics=h.topics)            # another coordinator reads the same log
    g = h2.group()
    assert isinstance(g, ConsumerGroup)
    assert (g.group_epoch, g.assignment_epoch, g.state) == (
        before.group_epoch, before.assignment_epoch, before.state)
    assert g.members == before.members and g.targets == before.targets
    assert g.regexes.keys() == before.regexes.keys()
    assert g.subscription_metadata == before.subscription_metadata
    assert g.static_members == {"ia": "a"}
    a.h = b.h = h2
    assert (await a.heartbeat()).error == errors.NONE
    assert (await b.heartbeat()).error == errors.NONE


@async_test
async def test_offset_commits_and_fetches_need_the_member_epoch():
    h = H()
    h.topics.create("t", 1)
    a = Member(h, "a")
    await a.heartbeat()
    off = {("t", 0): (5, -1, "")}
    commit = h.coord.commit_offsets
    assert await commit("g", a.epoch, "a", None, -1, off, api_version=9) == {("t", 0): 0}
    assert await commit("g", a.epoch + 1, "a", None, -1, off, api_version=9) == {
        ("t", 0): errors.STALE_MEMBER_EPOCH}
    assert await commit("g", a.epoch, "x", None, -1, off, api_version=9) == {
        ("t", 0): errors.UNKNOWN_MEMBER_ID}
    assert await commit("g", a.epoch, "a", None, -1, off, api_version=8) == {
        ("t", 0): errors.UNSUPPORTED_VERSION}
    assert await commit("g", -1, "", None, -1, off, api_version=9) == {
        ("t", 0): errors.UNKNOWN_MEMBER_ID}    # the group has members
    assert await commit("new", 3, "m", None, -1, off, api_version=9) == {
        ("t", 0): errors.GROUP_ID_NOT_FOUND}
    assert await commit("new", 3, "m", None, -1, off, api_version=8) == {
        ("t", 0): errors.ILLEGAL_GENERATION}
    assert h.coord.fetch_offsets("g", [("t", 0)], member_id="a", member_epoch=a.epoch)[1][
        ("t", 0)].offset == 5
    assert h.coord.fetch_offsets("g", [("t", 0)], member_id="a", member_epoch=9)[0] == \
        errors.STALE_MEMBER_EPOCH
    assert h.coord.fetch_offsets("g", [("t", 0)])[0] == errors.NONE   # an admin client
    await a.heartbeat(epoch=-1)
    assert await commit("g", -1, "", None, -1, {("t", 0): (9, -1, "")}, api_version=9) == {
        ("t", 0): errors.NONE}


@async_test
async def test_list_and_describe_show_both_kinds_of_group():
    h = H()
    h.topics.create("t", 2)
    await Member(h, "a").heartbeat()
    await h.coord.commit_offsets("simple", -1, "", None, -1, {("t", 0): (1, -1, "")})
    _, listed = h.coord.list_groups()
    assert {(g.group_id, g.group_type, g.protocol_type, g.state) for g in listed} == {
        ("g", "consumer", "consumer", "Stable"), ("simple", "classic", "", "Empty")}
    assert [g.group_id for g in h.coord.list_groups(["STABLE"])[1]] == ["g"]
    d, = h.coord.consumer_group_describe(["g"])
    m, = d.members
    assert (d.state, d.group_epoch, d.assignment_epoch, d.assignor) == ("Stable", 1, 1, "uniform")
    assert (m.member_id, m.member_epoch, m.topic_names, m.classic) == ("a", 1, ["t"], False)
    assert [(n, ps) for _, n, ps in m.assignment] == [("t", [0, 1])] == \
        [(n, ps) for _, n, ps in m.target_assignment]
    nf, other = h.coord.consumer_group_describe(["nope", "simple"])
    assert nf.error == other.error == errors.GROUP_ID_NOT_FOUND
    assert other.message == "Group simple is not a consumer group."
    classic_view, = h.coord.describe_groups(["g"])
    assert (classic_view.state, classic_view.protocol_type, classic_view.protocol) == (
        "Stable", "consumer", "uniform")
    got = ASSIGNMENT.from_bytes(classic_view.members[0].assignment)
    assert [(tp.topic, tp.partitions) for tp in got.assigned_partitions] == [("t", [0, 1])]
    assert SUBSCRIPTION.from_bytes(classic_view.members[0].metadata).topics == ["t"]


@async_test
async def test_delete_only_an_empty_consumer_group_and_it_stays_deleted():
    h = H()
    h.topics.create("t", 1)
    a = Member(h, "a")
    await a.heartbeat()
    await h.coord.commit_offsets("g", a.epoch, "a", None, -1, {("t", 0): (3, -1, "")},
                                 api_version=9)
    assert await h.coord.delete_groups(["g"]) == {"g": errors.NON_EMPTY_GROUP}
    await a.heartbeat(epoch=-1)
    assert await h.coord.delete_groups(["g"]) == {"g": errors.NONE}
    assert "g" not in h.coord.groups
    assert "g" not in H(log=h.log, topics=h.topics).coord.groups


@async_test
async def test_empty_groups_change_protocol_keeping_their_offsets():
    h = H()
    h.topics.create("t", 1)
    await h.coord.commit_offsets("g", -1, "", None, -1, {("t", 0): (7, -1, "")})
    assert isinstance(h.group(), GroupMetadata)
    a = Member(h, "a")
    assert (await a.heartbeat()).error == errors.NONE
    assert isinstance(h.group(), ConsumerGroup)
    assert h.coord.fetch_offsets("g", [("t", 0)])[1][("t", 0)].offset == 7
    await a.heartbeat(epoch=-1)
    join = asyncio.ensure_future(classic_join(h))
    res, = await h.until([join])         # the classic group's initial rebalance delay
    assert res.error == errors.NONE
    assert isinstance(h.group(), GroupMetadata)
    assert h.coord.fetch_offsets("g", [("t", 0)])[1][("t", 0)].offset == 7
    h2 = H(log=h.log, topics=h.topics)
    assert isinstance(h2.group(), GroupMetadata)


def classic_subscription(*topics, version=1):
    return SUBSCRIPTION.to_bytes(version, topics=list(topics), owned_partitions=[])


async def classic_join(h, member_id="", instance=None, topics=("t",), group="g"):
    return await h.coord.join_group(group, member_id, instance, "classic", "/h", 10_000, 20_000,
                                    "consumer", [("range", classic_subscription(*topics))],
                                    False)


async def classic_group(h, n):
    """A classic group of ``n`` members, Stable: [(member id, generation)]."""
    results = await h.until([asyncio.ensure_future(classic_join(h)) for _ in range(n)])
    leader = next(r for r in results if r.members)
    assignments = {r.member_id: ASSIGNMENT.to_bytes(0, assigned_partitions=[
        ASSIGNMENT.Struct.TopicPartition(topic="t", partitions=[i])])
        for i, r in enumerate(results)}
    syncs = [h.coord.sync_group("g", r.generation_id, r.member_id, None, None, None,
                                assignments if r is leader else {}) for r in results]
    await asyncio.gather(*syncs)
    return [(r.member_id, r.generation_id) for r in results]


@async_test
async def test_a_classic_group_upgrades_when_a_consumer_protocol_member_joins():
    h = H()
    h.topics.create("t", 4)
    classic = await classic_group(h, 2)
    assert isinstance(h.group(), GroupMetadata)
    c = Member(h, "c")
    res = await c.heartbeat()
    assert res.error == errors.NONE
    g = h.group()
    assert isinstance(g, ConsumerGroup) and g.classic_members == 2
    (m1, gen), (m2, _) = classic
    # the classic members keep their partitions and are asked to rejoin
    assert h.coord.heartbeat("g", gen, m1) == errors.REBALANCE_IN_PROGRESS
    r = await h.coord.join_group("g", m1, None, "classic", "/h", 10_000, 20_000, "consumer",
                                 [("range", classic_subscription("t"))], True)
    assert r.error == errors.NONE and r.protocol_name == "range"
    s = await h.coord.sync_group("g", r.generation_id, m1, None, "consumer", "range", {})
    assert s.error == errors.NONE
    assert ASSIGNMENT.from_bytes(s.assignment).assigned_partitions
    d, = h.coord.consumer_group_describe(["g"])
    assert sorted(m.classic for m in d.members) == [False, True, True]
    h2 = H(log=h.log, topics=h.topics)   # the converted group is on the log
    assert isinstance(h2.group(), ConsumerGroup) and h2.group().classic_members == 2


@async_test
async def test_upgrade_follows_the_migration_policy():
    h = H({"group.consumer.migration.policy": "downgrade"})
    h.topics.create("t", 2)
    await classic_group(h, 1)
    res = await Member(h, "c").heartbeat()
    assert res.error == errors.GROUP_ID_NOT_FOUND
    assert res.message == "Group g is not a consumer group."


@async_test
async def test_the_group_downgrades_when_its_last_consumer_protocol_member_leaves():
    h = H()
    h.topics.create("t", 2)
    c = Member(h, "c")
    await c.heartbeat()
    r = await classic_join(h)            # a classic member joins the consumer group
    assert r.error == errors.NONE and r.generation_id == 2
    assert (await c.heartbeat(epoch=-1)).error == errors.NONE
    g = h.group()
    assert isinstance(g, GroupMetadata) and list(g.members) == [r.member_id]
    assert g.state == "PreparingRebalance"
    assert isinstance(H(log=h.log, topics=h.topics).group(), GroupMetadata)


@async_test
async def test_a_coordinator_in_doubt_answers_nothing_and_fences_nobody():
    trusted = [True]
    h = H()
    h.coord.catalog.may_serve = lambda p: trusted[0] or p != h.coord.catalog.partition_for("g")
    h.topics.create("t", 1)
    a = Member(h, "a")
    await a.heartbeat()
    trusted[0] = False
    assert (await a.heartbeat()).error == errors.NOT_COORDINATOR
    await h.advance(SESSION * 3)
    trusted[0] = True
    assert "a" in h.group().members
    assert (await a.heartbeat()).error == errors.NONE


def test_config_bounds():
    get = {"group.consumer.session.timeout.ms": "5000"}.get
    with pytest.raises(ValueError, match="group.consumer.min.session.timeout.ms"):
        ConsumerGroupConfig.from_config(get)
    with pytest.raises(ValueError, match="migration.policy"):
        ConsumerGroupConfig.from_config({"group.consumer.migration.policy": "sideways"}.get)
    cfg = ConsumerGroupConfig.from_config({"group.consumer.assignors": "range"}.get)
    assert cfg.assignors == ("range",) and cfg.upgrade_enabled and cfg.downgrade_enabled


@async_test
async def test_an_empty_consumer_group_without_offsets_expires():
    h = H({"offsets.retention.minutes": 1})
    h.topics.create("t", 1)
    a = Member(h, "a")
    await a.heartbeat()
    await a.heartbeat(epoch=-1)
    assert h.group().state == "Empty"
    await h.coord.expire_offsets()
    assert "g" not in h.coord.groups
    assert "g" not in H(log=h.log, topics=h.topics).coord.groups


@async_test
async def test_a_static_member_back_with_its_own_id_keeps_its_partitions():
    h = H()
    h.topics.create("t", 2)
    a, b = Member(h, "a", instance="ia"), Member(h, "b")
    await h.converge([a, b])
    held = a.partitions()
    await a.heartbeat(epoch=-2)
    a.epoch, a.owned = 0, {}
    await h.converge([a, b])
    assert a.partitions() == held and h.group().members["a"].epoch > 0


def test_the_broker_refuses_bad_group_settings(tmp_path):
    from josefk.broker.app import Broker
    from josefk.broker.config import BrokerConfig, ConfigError

    for bad in ({"group.coordinator.rebalance.protocols": "consumer"},
                {"group.coordinator.rebalance.protocols": "classic,streams"},
                {"group.consumer.heartbeat.interval.ms": "90000"},
                {"group.consumer.assignors": "sticky"}):
        with pytest.raises(ConfigError):
            Broker(BrokerConfig({"log.dirs": str(tmp_path), **bad}))
    assert BrokerConfig({"group.coordinator.rebalance.protocols": " Classic "}).list(
        "group.coordinator.rebalance.protocols") == ["classic"]


@async_test
async def test_a_classic_group_still_forming_upgrades_and_its_parked_joins_are_answered():
    h = H()
    h.topics.create("t", 2)
    parked = asyncio.ensure_future(classic_join(h))
    await h.settle()                                  # waiting out the initial delay
    assert (await Member(h, "c").heartbeat()).error == errors.NONE
    await h.settle()
    assert parked.done() and parked.result().error == errors.REBALANCE_IN_PROGRESS
    g = h.group()
    assert isinstance(g, ConsumerGroup) and g.size == 2 and g.classic_members == 1
    assert set(g.timers) == {("session", m) for m in g.members}
    assert h.clock.pending() == len(g.timers) + 1     # + offset expiry: no classic timer left
