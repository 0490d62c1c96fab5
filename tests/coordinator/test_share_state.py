"""The share coordinator (coordinator/share/share_state.py) and share groups (coordinator/group/
share_groups.py) on in-memory logs and a fake clock: state writes, snapshots and replay, epoch
fencing, pruning; heartbeats, the simple assignor, session expiry, persisted group records."""
from __future__ import annotations

import asyncio
import uuid

import pytest

from josefk.coordinator import FakeClock, InMemoryOffsetsLog, OffsetStore
from josefk.coordinator.group.group_catalog import GroupCatalog
from josefk.coordinator.group.share_groups import ShareGroups, assign
from josefk.coordinator.share.share_state import ShareCoordinator, coordinator_key, state_partition_for
from josefk.wire import errors
from josefk.wire.internal_topics.share_group_state import SHARE_GROUP_STATE
from tests.coordinator.stores import SlowStore

T = uuid.UUID("6f1c1ab4-27a5-4c32-9a44-1d4b3b0a6b11")


class StateLog(InMemoryOffsetsLog):
    def prune(self, partition, offset):
        self.pruned = (partition, offset)


def run(coro):
    return asyncio.get_event_loop_policy().new_event_loop().run_until_complete(coro)


def coordinator(log=None, snapshot_every=3):
    c = ShareCoordinator({"share.coordinator.state.topic.num.partitions": "1",
                          "share.coordinator.snapshot.update.records.per.snapshot":
                              str(snapshot_every)}, log or StateLog(), FakeClock())
    c.active = True
    c.load_partition(0)
    return c


def test_the_key_and_its_partition_are_kafkas():
    assert coordinator_key("g", T, 3) == "g:bxwatCelTDKaRB1LOwprEQ:3"
    assert 0 <= state_partition_for("g", T, 3, 50) < 50


def test_a_never_written_share_partition_reads_as_uninitialized():
    c = coordinator()
    assert run(c.read("g", T, 0, 0)) == (errors.NONE, 0, -1, [])


def test_writes_merge_and_replay_from_snapshots_and_updates():
    async def scenario():
        c = coordinator(snapshot_every=3)
        assert await c.write("g", T, 0, 0, 1, 0, [(0, 9, 0, 1)]) == errors.NONE
        assert await c.write("g", T, 0, 0, 1, 5, [(5, 9, 0, 2), (10, 19, 2, 1)]) == errors.NONE
        assert await c.write("g", T, 0, 0, 1, -1, [(12, 12, 4, 1)]) == errors.NONE
        return c

    c = run(scenario())
    want = (errors.NONE, 0, 5, [(5, 9, 0, 2), (10, 11, 2, 1), (12, 12, 4, 1), (13, 19, 2, 1)])
    assert run(c.read("g", T, 0, 1)) == want
    kinds = [SHARE_GROUP_STATE.read_key(k)[0].name for _o, k, _v in c.log.records(0)]
    assert kinds == ["ShareSnapshot", "ShareUpdate", "ShareUpdate"]
    again = coordinator(c.log)  # a new leader of the partition replays it
    assert run(again.read("g", T, 0, 1)) == want
    assert again.summary("g", T, 0) == (errors.NONE, 0, 1, 5, 10)


def test_every_n_updates_a_snapshot_and_the_log_below_can_be_pruned():
    async def scenario():
        c = coordinator(snapshot_every=2)
        for i in range(4):
            assert await c.write("g", T, 0, 0, 1, i, []) == errors.NONE
        return c

    c = run(scenario())
    kinds = [SHARE_GROUP_STATE.read_key(k)[0].name for _o, k, _v in c.log.records(0)]
    assert kinds == ["ShareSnapshot", "ShareUpdate", "ShareSnapshot", "ShareUpdate"]
    assert c.prunable(0) == 2
    c._prune()
    assert c.log.pruned == (0, 2)


def test_an_older_leader_or_state_epoch_is_fenced():
    async def scenario():
        c = coordinator()
        await c.write("g", T, 0, 0, 5, 0, [(0, 4, 0, 1)])
        assert (await c.read("g", T, 0, 4))[0] == errors.FENCED_LEADER_EPOCH
        assert (await c.read("g", T, 0, 6))[0] == errors.NONE  # a new leader read it
        assert await c.write("g", T, 0, 0, 5, 0, []) == errors.FENCED_LEADER_EPOCH
        assert await c.initialize("g", T, 0, 1, 100) == errors.NONE  # an admin reset it
        assert await c.write("g", T, 0, 0, 6, 0, []) == errors.FENCED_STATE_EPOCH
        assert await c.read("g", T, 0, 6) == (errors.NONE, 1, 100, [])
        assert await c.delete("g", T, 0) == errors.NONE
        assert await c.read("g", T, 0, 6) == (errors.NONE, 0, -1, [])

    run(scenario())


@pytest.mark.parametrize("batch", [(5, 4, 0, 1), (-1, 3, 0, 1), (0, 3, 1, 1), (0, 3, 7, 1),
                                   (0, 3, 0, -1)])
def test_state_batches_no_leader_writes_are_refused(batch):
    """Backwards or negative ranges, the ACQUIRED state or an unknown one, a negative count:
    INVALID_REQUEST, and the state stays as it was (found by the request fuzzer)."""
    async def scenario():
        c = coordinator()
        await c.write("g", T, 0, 0, 1, 0, [(0, 4, 0, 1)])
        assert await c.write("g", T, 0, 0, 1, 0, [batch]) == errors.INVALID_REQUEST
        assert await c.read("g", T, 0, 1) == (errors.NONE, 0, 0, [(0, 4, 0, 1)])

    run(scenario())


def test_the_delivery_complete_count_of_a_huge_range_fits_its_int32():
    async def scenario():
        c = coordinator()
        assert await c.write("g", T, 0, 0, 1, 0, [(0, 2**40, 2, 1)]) == errors.NONE
        assert c.summary("g", T, 0)[4] == 2**31 - 1

    run(scenario())


def test_a_failed_append_leaves_the_state_as_it_was():
    async def scenario():
        c = coordinator()
        await c.write("g", T, 0, 0, 1, 0, [(0, 4, 0, 1)])
        c.log.fail_next(errors.NOT_ENOUGH_REPLICAS)
        assert await c.write("g", T, 0, 0, 1, 5, []) == errors.COORDINATOR_NOT_AVAILABLE
        assert (await c.read("g", T, 0, 1))[2] == 0

    run(scenario())


def test_requests_for_partitions_not_led_here_are_refused():
    c = coordinator()
    c.unload_partition(0)
    assert run(c.write("g", T, 0, 0, 1, 0, [])) == errors.NOT_COORDINATOR
    c.load_partition(0)
    fenced = c.partition_for("g", T, 0)
    c.may_serve = lambda p: p != fenced  # the ZooKeeper session is in doubt
    assert run(c.read("g", T, 0, 0))[0] == errors.NOT_COORDINATOR


# -- share groups --------------------------------------------------------------------------------

A, B = uuid.UUID(int=1), uuid.UUID(int=2)


def test_the_simple_assignor_shares_partitions_when_members_outnumber_them():
    members = {"m1": ["a"], "m2": ["a"], "m3": ["a"]}
    got = assign(members, {"a": (A, [0])})
    assert got == {"m1": {A: [0]}, "m2": {A: [0]}, "m3": {A: [0]}}
    # fewer members than the partitions they subscribe to: each partition to one of them
    got = assign({"m1": ["a", "b"], "m2": ["a", "b"]}, {"a": (A, [0, 1, 2, 3]), "b": (B, [0])})
    assert got == {"m1": {A: [0, 2], B: [0]}, "m2": {A: [1, 3]}}
    # members of other subscriptions share what they have in common
    got = assign({"m1": ["a"], "m2": ["b"], "m3": ["a", "b"]}, {"a": (A, [0]), "b": (B, [0])})
    assert got == {"m1": {A: [0]}, "m2": {B: [0]}, "m3": {A: [0], B: [0]}}


class Groups:
    """A group coordinator's share groups on ``log`` (a new one, or the log another
    coordinator of the same partition wrote); ``store`` makes the group records' store."""

    def __init__(self, log=None, store=OffsetStore, max_size=2):
        self.clock = FakeClock()
        self.catalog = GroupCatalog(1, self.clock)
        self.catalog.active = True
        self.catalog.owned_partitions.add(0)
        self.log = log or InMemoryOffsetsLog()
        self.topics = {"t": (A, 1)}
        self.deleted = []

        async def delete_state(g, t, p):
            self.deleted.append((g, t, p))
            return errors.NONE

        async def initialize_state(g, t, p):
            self.initialized.append((g, t, p))
            return errors.NONE

        self.initialized = []
        self.groups = ShareGroups(self.catalog, store(self.log),
                                  lambda names: {n: self.topics[n] for n in names
                                                 if n in self.topics},
                                  lambda g: (45000, 5000), initialize_state, delete_state,
                                  max_size=max_size)
        self.loop = asyncio.new_event_loop()

    def hb(self, member, epoch, topics=None):
        """A heartbeat, after which the background work (initializing state) is done."""
        async def beat():
            r = await self.groups.heartbeat("g", member, epoch, None, topics, "client", "/h")
            await self.catalog.drain()
            return r
        return self.loop.run_until_complete(beat())


def test_heartbeats_join_share_and_leave():
    g = Groups()
    r1 = g.hb("m1", 0, ["t"])  # partition 0 is assigned once its share state is initialized
    assert (r1.error, r1.epoch, r1.assignment) == (errors.NONE, 1, {})
    assert g.initialized == [("g", A, 0)]
    r1 = g.hb("m1", 1)  # behind: gets the new epoch and its assignment
    assert (r1.error, r1.epoch, r1.assignment) == (errors.NONE, 2, {A: [0]})
    r2 = g.hb("m2", 0, ["t"])
    assert (r2.error, r2.epoch, r2.assignment) == (errors.NONE, 3, {A: [0]})
    assert g.hb("m1", 2).assignment == {A: [0]}
    assert g.hb("m1", 3).assignment is None  # nothing new
    assert g.hb("m1", 7).error == errors.FENCED_MEMBER_EPOCH
    assert g.hb("nobody", 3).error == errors.UNKNOWN_MEMBER_ID
    assert g.hb("m3", 0, ["t"]).error == errors.GROUP_MAX_SIZE_REACHED
    assert g.hb("", 0, ["t"]).error == errors.INVALID_REQUEST
    assert g.hb("m4", 0).error == errors.INVALID_REQUEST  # no subscription on joining
    r = g.hb("m2", -1)
    assert (r.error, r.epoch) == (errors.NONE, -1)
    assert g.groups.groups["g"].epoch == 4 and g.initialized == [("g", A, 0)]


def test_a_silent_member_is_removed_after_its_session_timeout():
    g = Groups()

    async def scenario():
        await g.groups.heartbeat("g", "m1", 0, None, ["t"], "c", "/h")
        await g.groups.heartbeat("g", "m2", 0, None, ["t"], "c", "/h")
        await g.catalog.drain()
        g.clock.advance(30000)
        await g.groups.heartbeat("g", "m1", 1, None, None, "c", "/h")
        g.clock.advance(20000)  # m2 was silent for 50 s
        await g.catalog.drain()
        return g.groups.groups["g"]

    group = g.loop.run_until_complete(scenario())
    assert list(group.members) == ["m1"] and group.epoch == 4


def test_members_joining_a_new_group_at_once_are_all_kept():
    """Seven first heartbeats of a brand-new group, at once, each waiting for its write: every
    member stays (none builds a group of its own that a later write replaces), each gets its
    own epoch, and every member's next heartbeat at the epoch it was given is accepted."""
    g = Groups(store=SlowStore, max_size=10)
    names = [f"m{i}" for i in range(7)]

    async def scenario():
        joined = await asyncio.gather(*(g.groups.heartbeat("g", m, 0, None, ["t"], "c", "/h")
                                        for m in names))
        await g.catalog.drain()
        again = await asyncio.gather(*(g.groups.heartbeat("g", m, r.epoch, None, None, "c",
                                                          "/h")
                                       for m, r in zip(names, joined)))
        return joined, again

    joined, again = g.loop.run_until_complete(scenario())
    assert [r.error for r in joined] == [errors.NONE] * 7
    assert sorted(r.epoch for r in joined) == list(range(1, 8))
    assert [r.error for r in again] == [errors.NONE] * 7
    group = g.groups.groups["g"]
    assert sorted(group.members) == names and group.epoch == 8
    assert g.initialized == [("g", A, 0)]  # the partition's state initialized once
    assert all(m.assignment == {A: [0]} for m in group.members.values())
    other = Groups(g.log)  # what was written says the same
    other.groups.loaded(0, OffsetStore(g.log).load(0).records)
    assert sorted(other.groups.groups["g"].members) == names


def test_a_session_timer_belongs_to_the_member_it_was_armed_for():
    """A member's session timer fires while that member's own heartbeat holds the group (its
    write under way): the heartbeat armed the timer anew, so the member stays; and a timer of
    a member object that another of the same id replaced never removes the newcomer."""
    g = Groups(store=SlowStore)

    async def scenario():
        await g.groups.heartbeat("g", "m1", 0, None, ["t"], "c", "/h")
        await g.catalog.drain()
        g.clock.advance(44000)
        beat = asyncio.ensure_future(g.groups.heartbeat("g", "m1", 1, None, ["t", "u"], "c",
                                                        "/h"))
        await asyncio.sleep(0)  # the heartbeat now waits for its write
        g.clock.advance(1000)  # m1's first session timer fires meanwhile
        assert (await beat).error == errors.NONE
        await g.catalog.drain()
        kept = list(g.groups.groups["g"].members)
        old = g.groups.groups["g"].members["m1"]
        g.groups.groups["g"].members["m1"] = replacement = type(old)("m1", "c", "/h")
        replacement.epoch, replacement.subscribed = old.epoch, old.subscribed
        g.clock.advance(45000)  # the replaced object's timer fires
        await g.catalog.drain()
        return kept, list(g.groups.groups["g"].members)

    kept, after = g.loop.run_until_complete(scenario())
    assert kept == ["m1"] and after == ["m1"]


def test_group_records_are_persisted_and_loaded():
    g = Groups()
    g.hb("m1", 0, ["t"])
    g.hb("m1", -1)
    loaded = OffsetStore(g.log).load(0)
    other = Groups()
    other.groups.loaded(0, loaded.records)
    group = other.groups.groups["g"]
    assert (group.epoch, group.state, group.initialized) == (3, "Empty", {A: ("t", {0})})
    assert other.loop.run_until_complete(other.groups.delete("g")) == errors.NONE
    assert other.deleted == [("g", A, 0)] and not other.groups.has("g")


def test_members_are_persisted_and_a_new_coordinator_keeps_them():
    """The members' subscriptions, target assignment and epochs are in Kafka's share group
    records: a coordinator that loads the partition knows the members at their epochs (their
    next heartbeats are accepted), times their sessions anew, and forgets those that left."""
    from josefk.wire.internal_topics.consumer_offsets import CONSUMER_OFFSETS

    g = Groups()
    g.hb("m1", 0, ["t"])
    g.hb("m1", 1)
    g.hb("m2", 0, ["t"])
    g.hb("m1", 2)
    kinds = {CONSUMER_OFFSETS.read_key(k)[0].name for _o, k, _v in g.log.records(0)}
    assert kinds == {"ShareGroupMemberMetadata", "ShareGroupMetadata",
                     "ShareGroupTargetAssignmentMetadata", "ShareGroupTargetAssignmentMember",
                     "ShareGroupCurrentMemberAssignment", "ShareGroupStatePartitionMetadata"}
    other = Groups(g.log)  # the coordinator moved
    other.groups.loaded(0, OffsetStore(g.log).load(0).records)
    group = other.groups.groups["g"]
    assert (group.epoch, group.assignment_epoch, sorted(group.members)) == (3, 3, ["m1", "m2"])
    assert {m.member_id: (m.epoch, m.assignment, m.subscribed, m.client_id)
            for m in group.members.values()} == {"m1": (3, {A: [0]}, ["t"], "client"),
                                                 "m2": (3, {A: [0]}, ["t"], "client")}
    r = other.hb("m1", 3)
    assert (r.error, r.epoch) == (errors.NONE, 3)
    assert other.hb("m2", -1).error == errors.NONE  # a leave persists the member's tombstones
    again = Groups(g.log)
    again.groups.loaded(0, OffsetStore(g.log).load(0).records)
    assert sorted(again.groups.groups["g"].members) == ["m1"]

    async def silence():  # m1's session, timed anew at loading, ends
        other.clock.advance(45000)
        await other.catalog.drain()

    other.loop.run_until_complete(silence())
    assert not other.groups.groups["g"].members


def test_a_classic_group_id_is_not_a_share_group():
    g = Groups()
    from josefk.coordinator.group.group import EMPTY, GroupMetadata
    g.catalog.add(GroupMetadata("g", EMPTY, 0))
    assert g.hb("m1", 0, ["t"]).error == errors.GROUP_ID_NOT_FOUND


@pytest.mark.parametrize("value,expected", [("earliest", ("earliest", 0)),
                                            ("LATEST", ("latest", 0)),
                                            ("by_duration:PT1H", ("by_duration", 3600000)),
                                            ("by_duration:P1DT0.5S", ("by_duration", 86400500)),
                                            ("by_duration:-PT1H", None), ("sometimes", None)])
def test_share_auto_offset_reset_values(value, expected):
    from josefk.broker.group_configs import auto_offset_reset
    assert auto_offset_reset(value) == expected


def test_find_coordinator_share_keys():
    from josefk.broker.handlers.groups import share_key
    assert share_key("g:bxwatCelTDKaRB1LOwprEQ:3") == ("g", T, 3)
    assert share_key("a:b:bxwatCelTDKaRB1LOwprEQ:0") == ("a:b", T, 0)  # ':' in the group id
    assert share_key("g:not-a-uuid:3") is None
    assert share_key("g:bxwatCelTDKaRB1LOwprEQ:x") is None
    assert share_key("nothing") is None
