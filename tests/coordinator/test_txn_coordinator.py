"""The transaction coordinator's state machine, driven by a FakeClock and an in-memory
``__transaction_state`` (no broker, no sleeping)."""
from __future__ import annotations

import asyncio
import functools

from josefk.coordinator import errors
from josefk.coordinator.runtime.clock import FakeClock
from josefk.coordinator.runtime import InMemoryOffsetsLog
from josefk.coordinator.txn.txn_coordinator import MAX_EPOCH, TransactionCoordinator
from josefk.coordinator.txn.txn_log import (COMPLETE_ABORT, COMPLETE_COMMIT, EMPTY, ONGOING,
                                        PREPARE_ABORT, PREPARE_COMMIT, TxnRecord, read_txn_key,
                                        read_txn_value, txn_key, txn_value)
from josefk.wire.records import build_batch

TID = "tx-1"
TIMEOUT = 60_000
TP = [("t", 0), ("t", 1)]


def async_test(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return asyncio.run(fn(*args, **kwargs))
    return wrapper


class Ids:
    def __init__(self):
        self.next = 1000

    def new_id(self):
        self.next += 1
        return self.next - 1


class Markers:
    """Records marker writes; clearing ``gate`` keeps them pending until it is set again;
    ``fenced`` answers as if a partition leader had seen a newer coordinator epoch."""

    def __init__(self):
        self.calls = []
        self.gate = asyncio.Event()
        self.gate.set()
        self.fenced = False

    async def __call__(self, pid, epoch, commit, coordinator_epoch, partitions):
        self.calls.append((pid, epoch, commit, coordinator_epoch, list(partitions)))
        await self.gate.wait()
        return not self.fenced


class H:
    def __init__(self, log=None, config=None):
        self.clock = FakeClock()
        self.log = log or InMemoryOffsetsLog()
        self.ids = Ids()
        self.markers = Markers()
        cfg = {"transaction.state.log.num.partitions": 4,
               "transaction.abort.timed.out.transaction.cleanup.interval.ms": 1000}
        cfg.update(config or {})
        self.coord = TransactionCoordinator(cfg, self.log, self.ids, self.markers, self.clock)
        self.partition = self.coord.partition_for(TID)
        self.coord.load_partition(self.partition, 5)
        self.coord.startup()

    async def settle(self):
        for _ in range(20):
            await asyncio.sleep(0)

    def state(self, tid=TID):
        return self.coord.txns[tid].state

    def logged(self):
        """(transactional id, TxnRecord) of every write, in order."""
        out = []
        for p in self.log.batches:
            for _off, k, v in self.log.records(p):
                out.append((read_txn_key(k), read_txn_value(v)))
        return out


async def _begin(h, tid=TID):
    code, pid, epoch = await h.coord.init_producer_id(tid, TIMEOUT)
    assert code == errors.NONE
    assert await h.coord.add_partitions(tid, pid, epoch, TP) == errors.NONE
    return pid, epoch


@async_test
async def test_init_gives_a_new_id_then_bumps_the_epoch_each_time():
    h = H()
    assert await h.coord.init_producer_id(TID, TIMEOUT) == (errors.NONE, 1000, 0)
    assert await h.coord.init_producer_id(TID, TIMEOUT) == (errors.NONE, 1000, 1)
    assert h.state() == EMPTY
    recs = h.logged()
    assert [(r.producer_id, r.producer_epoch, r.state) for _t, r in recs] == \
        [(1000, 0, EMPTY), (1000, 1, EMPTY)]
    assert recs[0][1].partitions == set()


@async_test
async def test_init_kip360_retry_and_fencing():
    h = H()
    await h.coord.init_producer_id(TID, TIMEOUT)
    assert await h.coord.init_producer_id(TID, TIMEOUT, 1000, 0) == (errors.NONE, 1000, 1)
    # the response to that bump was lost: the same request gets the same answer
    assert await h.coord.init_producer_id(TID, TIMEOUT, 1000, 0) == (errors.NONE, 1000, 1)
    assert (await h.coord.init_producer_id(TID, TIMEOUT, 1000, 7))[0] == errors.PRODUCER_FENCED
    assert (await h.coord.init_producer_id(TID, TIMEOUT, 55, 1))[0] == errors.PRODUCER_FENCED


@async_test
async def test_exhausted_epoch_gets_a_new_producer_id():
    h = H()
    await h.coord.init_producer_id(TID, TIMEOUT)
    h.coord.txns[TID].producer_epoch = MAX_EPOCH - 2
    assert await h.coord.init_producer_id(TID, TIMEOUT) == (errors.NONE, 1001, 0)


@async_test
async def test_request_checks():
    h = H(config={"transaction.max.timeout.ms": 1000})
    assert (await h.coord.init_producer_id(TID, 1001))[0] == errors.INVALID_TRANSACTION_TIMEOUT
    assert (await h.coord.init_producer_id(TID, 0))[0] == errors.INVALID_TRANSACTION_TIMEOUT
    assert (await h.coord.init_producer_id("", 100))[0] == errors.INVALID_REQUEST
    other = next(t for t in (f"x{i}" for i in range(100))
                 if h.coord.partition_for(t) != h.partition)
    assert (await h.coord.init_producer_id(other, 100))[0] == errors.NOT_COORDINATOR
    assert await h.coord.add_partitions("nobody", 1, 0, TP) in (
        errors.INVALID_PRODUCER_ID_MAPPING, errors.NOT_COORDINATOR)


@async_test
async def test_add_partitions_validates_the_producer():
    h = H()
    code, pid, epoch = await h.coord.init_producer_id(TID, TIMEOUT)
    assert await h.coord.add_partitions(TID, pid + 1, epoch, TP) == \
        errors.INVALID_PRODUCER_ID_MAPPING
    assert await h.coord.add_partitions(TID, pid, epoch + 1, TP) == errors.PRODUCER_FENCED
    assert await h.coord.add_partitions(TID, pid, epoch, TP[:1]) == errors.NONE
    assert h.state() == ONGOING
    start = h.coord.txns[TID].start_ms
    h.clock.advance(10)
    assert await h.coord.add_partitions(TID, pid, epoch, TP) == errors.NONE
    txn = h.coord.txns[TID]
    assert txn.partitions == set(TP) and txn.start_ms == start
    n = len(h.logged())
    assert await h.coord.add_partitions(TID, pid, epoch, TP) == errors.NONE  # nothing new
    assert len(h.logged()) == n


@async_test
async def test_commit_writes_prepare_markers_then_complete():
    h = H()
    pid, epoch = await _begin(h)
    assert await h.coord.end_txn(TID, pid, epoch, True) == errors.NONE
    await h.settle()
    assert h.markers.calls == [(pid, epoch, True, 5, sorted(TP))]
    assert [r.state for _t, r in h.logged()][-2:] == [PREPARE_COMMIT, COMPLETE_COMMIT]
    assert h.state() == COMPLETE_COMMIT and h.coord.txns[TID].partitions == set()
    # a retried commit succeeds, an abort now is a state error
    assert await h.coord.end_txn(TID, pid, epoch, True) == errors.NONE
    assert await h.coord.end_txn(TID, pid, epoch, False) == errors.INVALID_TXN_STATE
    # the next transaction goes on with the same epoch
    assert await h.coord.add_partitions(TID, pid, epoch, TP) == errors.NONE
    assert h.state() == ONGOING


@async_test
async def test_fenced_coordinator_stops_and_leaves_the_transaction_prepared():
    """TRANSACTION_COORDINATOR_FENCED from a partition leader: a newer coordinator owns the
    transaction, so this one neither retries nor writes CompleteCommit."""
    h = H()
    pid, epoch = await _begin(h)
    h.markers.fenced = True
    assert await h.coord.end_txn(TID, pid, epoch, True) == errors.NONE
    await h.settle()
    assert len(h.markers.calls) == 1
    assert [r.state for _t, r in h.logged()][-1] == PREPARE_COMMIT
    assert h.state() == PREPARE_COMMIT
    assert await h.coord.end_txn(TID, pid, epoch, True) == errors.CONCURRENT_TRANSACTIONS


@async_test
async def test_end_txn_outside_a_transaction_is_invalid_state():
    h = H()
    code, pid, epoch = await h.coord.init_producer_id(TID, TIMEOUT)
    assert await h.coord.end_txn(TID, pid, epoch, True) == errors.INVALID_TXN_STATE
    assert await h.coord.end_txn(TID, pid, epoch + 1, True) == errors.PRODUCER_FENCED


@async_test
async def test_requests_while_markers_are_pending():
    h = H()
    pid, epoch = await _begin(h)
    h.markers.gate.clear()
    assert await h.coord.end_txn(TID, pid, epoch, False) == errors.NONE
    await h.settle()
    assert h.state() == PREPARE_ABORT
    assert await h.coord.add_partitions(TID, pid, epoch, TP) == errors.CONCURRENT_TRANSACTIONS
    assert await h.coord.end_txn(TID, pid, epoch, False) == errors.CONCURRENT_TRANSACTIONS
    assert await h.coord.end_txn(TID, pid, epoch, True) == errors.CONCURRENT_TRANSACTIONS
    assert (await h.coord.init_producer_id(TID, TIMEOUT))[0] == errors.CONCURRENT_TRANSACTIONS
    h.markers.gate.set()
    await h.settle()
    assert h.state() == COMPLETE_ABORT
    assert await h.coord.init_producer_id(TID, TIMEOUT) == (errors.NONE, pid, epoch + 1)


@async_test
async def test_new_instance_fences_the_ongoing_transaction():
    h = H()
    pid, epoch = await _begin(h)
    assert (await h.coord.init_producer_id(TID, TIMEOUT))[0] == errors.CONCURRENT_TRANSACTIONS
    await h.settle()
    # aborted with a bumped epoch, so the old instance's markers fence it everywhere
    assert h.markers.calls == [(pid, epoch + 1, False, 5, sorted(TP))]
    assert h.state() == COMPLETE_ABORT
    assert await h.coord.init_producer_id(TID, TIMEOUT) == (errors.NONE, pid, epoch + 2)
    assert await h.coord.end_txn(TID, pid, epoch, True) == errors.PRODUCER_FENCED
    assert await h.coord.add_partitions(TID, pid, epoch, TP) == errors.PRODUCER_FENCED


@async_test
async def test_timed_out_transaction_is_aborted_with_a_bumped_epoch():
    h = H()
    code, pid, epoch = await h.coord.init_producer_id(TID, 5000)
    await h.coord.add_partitions(TID, pid, epoch, TP)
    h.clock.advance(4000)
    await h.settle()
    assert h.state() == ONGOING and h.markers.calls == []
    h.clock.advance(2000)
    await h.settle()
    assert h.markers.calls == [(pid, epoch + 1, False, 5, sorted(TP))]
    assert h.state() == COMPLETE_ABORT
    assert await h.coord.end_txn(TID, pid, epoch, True) == errors.PRODUCER_FENCED
    # KIP-360: the fenced producer re-initialises with its last id/epoch and goes on
    assert await h.coord.init_producer_id(TID, 5000, pid, epoch) == (errors.NONE, pid, epoch + 1)


def _log_with(state, partitions=TP, pid=7, epoch=3):
    log = InMemoryOffsetsLog()
    h0 = H(log)  # only for the partition number
    rec = TxnRecord(pid, epoch, TIMEOUT, state, set(partitions) if state != EMPTY else set(),
                    h0.clock.now_ms(), h0.clock.now_ms())
    log.append(h0.partition, build_batch([(txn_key(TID), txn_value(rec), None, None)]))
    return log


@async_test
async def test_reload_resumes_prepared_transactions():
    for prepared, complete, commit in ((PREPARE_COMMIT, COMPLETE_COMMIT, True),
                                       (PREPARE_ABORT, COMPLETE_ABORT, False)):
        h = H(_log_with(prepared))
        await h.settle()
        assert h.markers.calls == [(7, 3, commit, 5, sorted(TP))]
        assert h.state() == complete


@async_test
async def test_reload_keeps_other_states():
    for state in (EMPTY, ONGOING, COMPLETE_COMMIT, COMPLETE_ABORT):
        h = H(_log_with(state))
        await h.settle()
        txn = h.coord.txns[TID]
        assert (txn.state, txn.producer_id, txn.producer_epoch) == (state, 7, 3)
        assert h.markers.calls == []
    # an Ongoing transaction found at load is aborted once it times out
    h = H(_log_with(ONGOING))
    h.clock.advance(TIMEOUT + 1000)
    await h.settle()
    assert h.markers.calls == [(7, 4, False, 5, sorted(TP))]


@async_test
async def test_tombstone_removes_the_id_and_unload_forgets():
    log = _log_with(COMPLETE_COMMIT)
    h0 = H(log)
    log.append(h0.partition, build_batch([(txn_key(TID), None, None, None)]))
    h = H(log)
    assert TID not in h.coord.txns
    h.coord.unload_partition(h.partition)
    assert (await h.coord.init_producer_id(TID, TIMEOUT))[0] == errors.NOT_COORDINATOR


@async_test
async def test_idle_transactional_ids_expire_with_a_tombstone():
    """transactional.id.expiration.ms: ids idle in Empty/CompleteCommit/CompleteAbort are
    removed by the periodic check (a tombstone in the log, so a reload does not bring them
    back); Ongoing ones never are; an expired id starts over with a new producer id."""
    h = H(config={"transactional.id.expiration.ms": 10_000,
                  "transaction.remove.expired.transaction.cleanup.interval.ms": 1000})
    code, pid, epoch = await h.coord.init_producer_id(TID, TIMEOUT)  # Empty
    committed, ongoing = "tx-committed", "tx-ongoing"
    for tid in (committed, ongoing):
        h.coord.load_partition(h.coord.partition_for(tid), 5)
        await _begin(h, tid)
    assert await h.coord.end_txn(committed, *(await _pid(h, committed)), True) == errors.NONE
    await h.settle()
    h.clock.advance(9_000)
    await h.settle()
    assert set(h.coord.txns) == {TID, committed, ongoing}
    # the Empty id is used again: its idle time starts over
    assert await h.coord.init_producer_id(TID, TIMEOUT) == (errors.NONE, pid, epoch + 1)
    h.clock.advance(2_000)
    await h.settle()
    assert set(h.coord.txns) == {TID, ongoing}
    assert read_txn_key(h.log.records(h.coord.partition_for(committed))[-1][1]) == committed
    assert h.log.records(h.coord.partition_for(committed))[-1][2] is None  # the tombstone
    h.clock.advance(TIMEOUT)  # Ongoing past its timeout: aborted, then idle in CompleteAbort
    await h.settle()
    assert h.coord.txns[ongoing].state == COMPLETE_ABORT
    h.clock.advance(11_000)
    await h.settle()
    assert h.coord.txns == {}
    reloaded = H(h.log, config={"transactional.id.expiration.ms": 10_000})
    assert reloaded.coord.txns == {}
    code, new_pid, new_epoch = await h.coord.init_producer_id(TID, TIMEOUT)
    assert code == errors.NONE and new_pid != pid and new_epoch == 0


async def _pid(h, tid):
    txn = h.coord.txns[tid]
    return txn.producer_id, txn.producer_epoch


@async_test
async def test_describe_and_list():
    h = H()
    pid, epoch = await _begin(h)
    code, txn = h.coord.describe(TID)
    assert code == errors.NONE
    assert (txn.state_name, txn.producer_id, txn.partitions) == ("Ongoing", pid, set(TP))
    assert h.coord.describe("missing")[0] in (errors.TRANSACTIONAL_ID_NOT_FOUND,
                                              errors.NOT_COORDINATOR)
    h.clock.advance(100)
    assert [t.transactional_id for t in h.coord.list(states={"Ongoing"})] == [TID]
    assert h.coord.list(states={"Empty"}) == []
    assert [t.transactional_id for t in h.coord.list(producer_ids={pid})] == [TID]
    assert h.coord.list(producer_ids={pid + 99}) == []
    assert [t.transactional_id for t in h.coord.list(min_duration_ms=100)] == [TID]
    assert h.coord.list(min_duration_ms=101) == []


def test_value_format_matches_kafka_v0_bytes():
    rec = TxnRecord(1, 2, 3, ONGOING, {("a", 0), ("a", 1)}, 10, 9)
    assert txn_value(rec) == bytes.fromhex(
        "0000" "0000000000000001" "0002" "00000003" "01"
        "00000001" "0001" "61" "00000002" "00000000" "00000001"
        "000000000000000a" "0000000000000009")
    assert txn_key("a") == bytes.fromhex("0000" "0001" "61")
    back = read_txn_value(txn_value(rec))
    assert (back.producer_id, back.producer_epoch, back.timeout_ms, back.state, back.partitions,
            back.update_ms, back.start_ms) == (1, 2, 3, ONGOING, {("a", 0), ("a", 1)}, 10, 9)
    empty = txn_value(TxnRecord(1, 2, 3, EMPTY, set(), 10, -1))
    assert empty[17:21] == b"\xff\xff\xff\xff"  # Kafka writes null partitions when Empty


def test_reads_flexible_value_v1():
    # version 1: compact array of (compact string, compact int32 array, tags), then tags
    value = bytes.fromhex("0001" "0000000000000001" "0002" "00000003" "01"
                          "02" "0261" "02" "00000004" "00"
                          "000000000000000a" "0000000000000009" "00")
    rec = read_txn_value(value)
    assert rec.partitions == {("a", 4)} and rec.start_ms == 9
