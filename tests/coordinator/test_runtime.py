"""The coordinator runtime (coordinator/runtime/runtime.py): writing a result's records before
applying them, timers on the clock, and each coordinator as its shard: a partition written
through one runtime, loaded into a fresh one, gives back the same groups, offsets, share state
and transactions."""
from __future__ import annotations

import asyncio
import uuid

import pytest

from josefk.coordinator import (CoordinatorResult, CoordinatorRuntime, FakeClock,
                                GroupCoordinator, InMemoryOffsetsLog, OffsetStore, errors)
from josefk.coordinator.group.consumer_groups import Heartbeat
from josefk.coordinator.share.share_state import ShareCoordinator
from josefk.coordinator.txn.txn_coordinator import TransactionCoordinator
from tests.coordinator.test_consumer_groups import FakeTopics


def run(coro):
    return asyncio.run(coro)


async def settle():
    for _ in range(20):
        await asyncio.sleep(0)


class Recorder:
    """A shard that keeps what the runtime tells it."""
    compacted = False

    def __init__(self):
        self.events = []

    def loading(self, partition):
        self.events.append(("loading", partition))
        return True

    def replay(self, partition, offset, producer_id, producer_epoch, key, value):
        self.events.append(("replay", partition, offset, key, value))

    def replay_end_txn(self, partition, producer_id, producer_epoch, commit):
        self.events.append(("end_txn", partition, producer_id, commit))

    def loaded(self, partition, epoch):
        self.events.append(("loaded", partition, epoch))

    def unloaded(self, partition):
        self.events.append(("unloaded", partition))


def recording_runtime(log=None):
    runtime = CoordinatorRuntime("__test", log or InMemoryOffsetsLog())
    shard = Recorder()
    runtime.register(shard, FakeClock())
    return runtime, shard


def test_a_write_appends_the_records_then_applies_them_then_answers():
    runtime, shard = recording_runtime()
    runtime.load(0)
    applied = []

    async def scenario():
        return await runtime.write(0, CoordinatorResult(
            [(b"k1", b"v1"), (b"k2", None)], "done",
            lambda offset: applied.append((offset, runtime.log.records(0)))), 1000)

    assert run(scenario()) == "done"
    # applied once written, at the batch's offset, seeing the records in the log
    assert applied == [(0, [(0, b"k1", b"v1"), (1, b"k2", None)])]
    again, shard2 = recording_runtime(runtime.log)
    again.load(0, 7)
    assert shard2.events == [("loading", 0), ("replay", 0, 0, b"k1", b"v1"),
                             ("replay", 0, 1, b"k2", None), ("loaded", 0, 7)]


def test_a_failed_append_applies_nothing():
    runtime, _ = recording_runtime()
    runtime.load(0)
    runtime.log.fail_next(errors.NOT_ENOUGH_REPLICAS)
    applied = []
    with pytest.raises(errors.CoordinatorLogError) as e:
        run(runtime.write(0, CoordinatorResult([(b"k", b"v")], None, applied.append), 1000))
    assert e.value.error_code == errors.NOT_ENOUGH_REPLICAS and applied == []


def test_a_partition_that_moves_while_its_records_are_written_applies_nothing():
    class GatedLog(InMemoryOffsetsLog):
        def __init__(self):
            super().__init__()
            self.gate = asyncio.Event()

        def append(self, partition, batch):
            offset = super().append(partition, batch)

            async def acked():
                await self.gate.wait()
                return offset
            return acked()

    async def scenario():
        runtime, shard = recording_runtime(GatedLog())
        runtime.load(0)
        applied = []
        write = asyncio.ensure_future(runtime.write(
            0, CoordinatorResult([(b"k", b"v")], None, applied.append), 1000))
        await settle()
        runtime.unload(0)
        runtime.load(0)   # leadership left and came back: the write's partition is gone
        runtime.log.gate.set()
        with pytest.raises(errors.CoordinatorLogError) as e:
            await write
        return e.value.error_code, applied, shard.events

    code, applied, events = run(scenario())
    assert code == errors.NOT_COORDINATOR and applied == []
    assert ("unloaded", 0) in events


def test_a_timer_per_key_on_the_clock_replaced_by_the_next_and_cancelled_at_shutdown():
    runtime, _ = recording_runtime()
    fired = []
    runtime.schedule("expiry", 100, lambda: fired.append("first"))
    runtime.schedule("expiry", 200, lambda: fired.append("second"))
    runtime.schedule("other", 300, lambda: fired.append("other"))
    runtime.clock.advance(250)
    assert fired == ["second"]
    runtime.shutdown()
    runtime.clock.advance(1000)
    assert fired == ["second"] and runtime.clock.pending() == 0


# ---------------------------------------------------------------------------------------------
# each coordinator as a shard: written by one runtime, loaded by a fresh one

GROUP_CONFIG = {"offsets.topic.num.partitions": 1, "group.initial.rebalance.delay.ms": 0}


def group_coordinator(log, clock):
    topics = FakeTopics()
    topics.create("t", 3)
    coord = GroupCoordinator(GROUP_CONFIG, OffsetStore(log), clock, topics=topics)
    coord.startup(enable_expiration=False)
    return coord


def group_state(coord):
    """What a group coordinator knows of its groups, comparably."""
    return {gid: (type(g).__name__, g.state,
                  {mid: m.current.assigned if hasattr(m, "current") else bytes(m.assignment)
                   for mid, m in g.members.items()},
                  getattr(g, "generation_id", None), getattr(g, "group_epoch", None),
                  {tp: (cr.offset_and_metadata.offset, cr.offset_and_metadata.metadata)
                   for tp, cr in g.offsets.items()},
                  {pid: {tp: cr.offset_and_metadata.offset for tp, cr in t.items()}
                   for pid, t in g.pending_txn_offsets.items()})
            for gid, g in coord.groups.items()}


def test_the_group_coordinator_replays_groups_and_offsets_through_the_runtime():
    async def scenario():
        clock = FakeClock()
        log = InMemoryOffsetsLog()
        coord = group_coordinator(log, clock)
        # a classic group with one member and its generation
        join = asyncio.ensure_future(coord.join_group(
            "classic", "", None, "c", "/127.0.0.1", 10000, 10000, "consumer",
            [("range", b"meta")], require_known_member_id=False))
        for _ in range(10):
            clock.advance(100)
            await settle()
        joined = join.result()
        assert joined.error == errors.NONE
        synced = await coord.sync_group("classic", joined.generation_id, joined.member_id, None,
                                        "consumer", "range", {joined.member_id: b"assignment"})
        assert synced.error == errors.NONE
        assert await coord.commit_offsets("classic", joined.generation_id, joined.member_id,
                                          None, -1, {("t", 0): (42, -1, "meta")}) == \
            {("t", 0): errors.NONE}
        # a KIP-848 consumer group, its member's offsets, and a transaction's pending offsets
        res = await coord.consumer_group_heartbeat(Heartbeat(
            "consumer", "m1", 0, rebalance_timeout_ms=30000, topic_names=["t"], owned={},
            client_id="c", client_host="/127.0.0.1"))
        assert res.error == errors.NONE
        assert await coord.commit_offsets("consumer", res.member_epoch, "m1", None, -1,
                                          {("t", 1): (7, -1, "")}) == {("t", 1): errors.NONE}
        assert await coord.commit_txn_offsets("txn", 4000, 0, -1, "", None,
                                              {("t", 2): (9, -1, "")}) == {("t", 2): errors.NONE}
        assert await coord.commit_offsets("simple", -1, "", None, -1,
                                          {("t", 0): (3, -1, "")}) == {("t", 0): errors.NONE}
        await coord.drain()
        before = group_state(coord)
        coord.shutdown()
        fresh = group_coordinator(log, FakeClock())
        after = group_state(fresh)
        fresh.shutdown()
        return before, after

    before, after = run(scenario())
    assert set(before) == {"classic", "consumer", "txn", "simple"}
    assert after == before


def share_coordinator(log):
    c = ShareCoordinator({"share.coordinator.state.topic.num.partitions": "1",
                          "share.coordinator.snapshot.update.records.per.snapshot": "3"},
                         log, FakeClock())
    c.startup()
    c.load_partition(0)
    return c


def test_the_share_coordinator_replays_share_state_through_the_runtime():
    t1, t2 = uuid.uuid4(), uuid.uuid4()

    async def scenario():
        c = share_coordinator(InMemoryOffsetsLog())
        assert await c.initialize("g", t1, 0, 1, 10) == errors.NONE
        for i in range(4):  # updates, and a snapshot after the third
            assert await c.write("g", t1, 0, 1, 2, 10 + i, [(10 + i, 19, 2, 1)]) == errors.NONE
        assert await c.write("g", t2, 1, 0, 1, 0, [(0, 4, 0, 2)]) == errors.NONE
        assert await c.write("h", t2, 1, 0, 1, 0, [(0, 4, 0, 2)]) == errors.NONE
        assert await c.delete("h", t2, 1) == errors.NONE
        return c

    c = run(scenario())
    fresh = share_coordinator(c.log)

    def state(coord):
        return {k: (s.state_epoch, s.leader_epoch, s.start, s.batches, s.snapshot_epoch,
                    s.complete) for k, s in coord.states.items()}
    assert set(state(c)) == {("g", t1, 0), ("g", t2, 1)}
    assert state(fresh) == state(c)
    assert [fresh.summary("g", t, p) for t, p in ((t1, 0), (t2, 1))] == \
        [c.summary("g", t, p) for t, p in ((t1, 0), (t2, 1))]


class Ids:
    def __init__(self):
        self.next = 1000

    def new_id(self):
        self.next += 1
        return self.next


async def no_markers(*_args):
    return True


def txn_coordinator(log):
    coord = TransactionCoordinator({"transaction.state.log.num.partitions": 1}, log, Ids(),
                                   no_markers, FakeClock())
    coord.load_partition(0, 3)
    return coord


def test_the_transaction_coordinator_replays_transactions_through_the_runtime():
    async def scenario():
        coord = txn_coordinator(InMemoryOffsetsLog())
        code, pid, epoch = await coord.init_producer_id("ongoing", 60000)
        assert code == errors.NONE
        assert await coord.add_partitions("ongoing", pid, epoch, [("t", 0), ("u", 1)]) == \
            errors.NONE
        code, pid2, epoch2 = await coord.init_producer_id("committed", 60000)
        assert await coord.add_partitions("committed", pid2, epoch2, [("t", 1)]) == errors.NONE
        assert await coord.end_txn("committed", pid2, epoch2, True) == errors.NONE
        await settle()
        return coord

    coord = run(scenario())

    def state(c):
        return {tid: (t.producer_id, t.producer_epoch, t.state_name, sorted(t.partitions),
                      t.timeout_ms, t.start_ms) for tid, t in c.txns.items()}
    before = state(coord)
    assert before["ongoing"][2:4] == ("Ongoing", [("t", 0), ("u", 1)])
    assert before["committed"][2] == "CompleteCommit"
    fresh = txn_coordinator(coord.log)
    assert state(fresh) == before and fresh.owned == {0: 3}
