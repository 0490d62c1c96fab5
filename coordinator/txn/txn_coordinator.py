"""Kafka's transaction coordinator (KIP-98, with KIP-360 epoch bumps) for the
``__transaction_state`` partitions this broker leads.

Decisions only: the log (``append``/``read_batches`` like the offset store's), producer ids
(``new_id()``), the marker writer and the clock are passed in, so the state machine runs in tests
with a fake clock and in-memory log. Kafka's rules:

* InitProducerId bumps the epoch on every call (a new id once the epoch is exhausted), fencing
  the previous instance; an Ongoing transaction is first aborted with a bumped epoch and the
  caller told CONCURRENT_TRANSACTIONS (it retries); a KIP-360 retry naming the previous
  id/epoch gets the current one back.
* AddPartitionsToTxn / AddOffsetsToTxn move to Ongoing; EndTxn writes PrepareCommit or
  PrepareAbort, answers, then has markers written to every partition of the transaction and
  writes CompleteCommit / CompleteAbort.
* Every state change is written to the log first and applied once appended; while one is in
  flight the transactional id answers CONCURRENT_TRANSACTIONS.
* A transaction Ongoing for longer than its timeout is aborted with a bumped epoch (the
  producer is fenced). Loading a partition resumes Prepare* transactions' markers.
* A transactional id left in Empty, CompleteCommit or CompleteAbort for longer than
  ``transactional.id.expiration.ms`` is removed (a tombstone in the log), checked every
  ``transaction.remove.expired.transaction.cleanup.interval.ms``.
"""
from __future__ import annotations

import asyncio
import logging

from josefk.wire.types import DecodeError

from ..runtime import errors
from ..runtime.clock import AsyncioClock
from ..runtime.partitions import partition_for
from ..runtime.runtime import CoordinatorResult, CoordinatorRuntime
from .producer_ids import ProducerIdsUnavailable
from .txn_log import (COMPLETE_ABORT, COMPLETE_COMMIT, DEAD, EMPTY, ONGOING, PREPARE_ABORT,
                      PREPARE_COMMIT, STATE_NAMES, TxnRecord, read_txn_key, read_txn_value,
                      txn_key, txn_value)

log = logging.getLogger("josefk.txn")

MAX_EPOCH = 32767
DEFAULTS = {
    "transaction.state.log.num.partitions": 50,
    "transaction.max.timeout.ms": 900000,
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": 10000,
    "transactional.id.expiration.ms": 604800000,
    "transaction.remove.expired.transaction.cleanup.interval.ms": 3600000,
}
TOPIC = "__transaction_state"
EXPIRABLE = (EMPTY, COMPLETE_COMMIT, COMPLETE_ABORT)
RETRY_BACKOFF_MS = 100


class TxnMetadata:
    __slots__ = ("transactional_id", "producer_id", "last_producer_id", "producer_epoch",
                 "last_producer_epoch", "timeout_ms", "state", "partitions", "start_ms",
                 "update_ms", "pending")

    def __init__(self, transactional_id, rec: TxnRecord):
        self.transactional_id = transactional_id
        self.last_producer_id = -1
        self.last_producer_epoch = -1
        self.pending = False  # a state change is being written
        self.apply(rec)

    def apply(self, rec: TxnRecord) -> None:
        self.producer_id, self.producer_epoch = rec.producer_id, rec.producer_epoch
        self.timeout_ms, self.state = rec.timeout_ms, rec.state
        self.partitions = set(rec.partitions)
        self.update_ms, self.start_ms = rec.update_ms, rec.start_ms

    def record(self, **changes) -> TxnRecord:
        rec = TxnRecord(self.producer_id, self.producer_epoch, self.timeout_ms, self.state,
                        set(self.partitions), self.update_ms, self.start_ms)
        for k, v in changes.items():
            setattr(rec, k, v)
        return rec

    @property
    def state_name(self) -> str:
        return STATE_NAMES[self.state]


class TransactionCoordinator:
    def __init__(self, config, log_, producer_ids, write_markers, clock=None, may_serve=None):
        cfg = dict(DEFAULTS)
        for k in DEFAULTS:
            v = config.get(k) if config is not None else None
            if v is not None:
                cfg[k] = int(v)
        self.num_partitions = cfg["transaction.state.log.num.partitions"]
        self.max_timeout_ms = cfg["transaction.max.timeout.ms"]
        self.abort_interval_ms = cfg["transaction.abort.timed.out.transaction.cleanup.interval.ms"]
        self.expiration_ms = cfg["transactional.id.expiration.ms"]
        self.expire_interval_ms = cfg["transaction.remove.expired.transaction.cleanup.interval.ms"]
        self.runtime = CoordinatorRuntime(TOPIC, log_)
        self.producer_ids = producer_ids
        # async write_markers(producer_id, epoch, commit, coordinator_epoch, partitions): True
        # once every partition has its marker (retrying as it must), False if a partition
        # leader fenced this coordinator epoch
        self.write_markers = write_markers
        self.clock = clock if clock is not None else AsyncioClock()
        self.may_serve = may_serve or (lambda _partition: True)  # as the group coordinator's
        self.txns: dict[str, TxnMetadata] = {}
        self.owned: dict[int, int] = {}  # partition -> coordinator epoch
        self._tasks: set = set()
        self._replayed: dict[str, TxnRecord | None] = {}  # the partition being loaded
        self.runtime.register(self, self.clock)

    @property
    def log(self):
        return self.runtime.log

    # ------------------------------------------------------------------ life cycle
    def startup(self) -> None:
        self._every(self.abort_interval_ms, self.abort_timed_out)
        self._every(self.expire_interval_ms, self.remove_expired)

    def shutdown(self) -> None:
        self.runtime.shutdown()
        for t in list(self._tasks):
            t.cancel()

    def partition_for(self, transactional_id: str) -> int:
        return partition_for(transactional_id, self.num_partitions)

    def _spawn(self, coro) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def load_partition(self, partition: int, coordinator_epoch: int) -> None:
        """Replay ``__transaction_state-<partition>`` (last write per id wins) and own it;
        transactions found in PrepareCommit/PrepareAbort get their markers written again."""
        self.runtime.load(partition, coordinator_epoch)

    def unload_partition(self, partition: int) -> None:
        self.runtime.unload(partition)

    # ------------------------------------------------------------------ the runtime's shard
    compacted = True   # a transactional id's last record is its state

    def loading(self, partition: int) -> bool:
        self.unloaded(partition)
        self._replayed = {}
        return True

    def replay(self, partition, offset, _producer_id, _producer_epoch, key, value) -> None:
        try:
            self._replayed[read_txn_key(key)] = read_txn_value(value)
        except DecodeError as e:
            log.warning("skipping undecodable record at offset %d of __transaction_state-%d: %s",
                        offset, partition, e)

    def replay_end_txn(self, *_marker) -> None:
        pass  # the coordinator's own log has no transactions

    def loaded(self, partition: int, coordinator_epoch: int) -> None:
        self.owned[partition] = coordinator_epoch
        replayed, self._replayed = self._replayed, {}
        for tid, rec in replayed.items():
            if rec is None:
                continue
            txn = self.txns[tid] = TxnMetadata(tid, rec)
            if rec.state in (PREPARE_COMMIT, PREPARE_ABORT):
                txn.pending = True
                self._spawn(self._complete(txn, rec.state == PREPARE_COMMIT, partition,
                                           coordinator_epoch))

    def unloaded(self, partition: int) -> None:
        self.owned.pop(partition, None)
        for tid in [t for t in self.txns if self.partition_for(t) == partition]:
            del self.txns[tid]

    # ------------------------------------------------------------------ helpers
    def _now(self) -> int:
        return self.clock.now_ms()

    def _coordinator_error(self, transactional_id) -> int | None:
        if not transactional_id:
            return errors.INVALID_REQUEST
        p = self.partition_for(transactional_id)
        if p not in self.owned or not self.may_serve(p):
            return errors.NOT_COORDINATOR
        return None

    async def _write(self, txn: TxnMetadata, rec: TxnRecord | None) -> int:
        """Append ``rec`` for ``txn``, then apply it (None: a tombstone, and the id is
        removed); returns NONE or the error to answer."""
        tid = txn.transactional_id
        partition = self.partition_for(tid)
        now = self._now() if rec is None else rec.update_ms

        def apply(_offset) -> None:
            if self.txns.get(tid) is not txn:  # unloaded and loaded again while we wrote
                raise errors.CoordinatorLogError(errors.NOT_COORDINATOR)
            if rec is None:
                del self.txns[tid]
            else:
                txn.apply(rec)
        txn.pending = True
        try:
            return await self.runtime.write(partition, CoordinatorResult(
                [(txn_key(tid), None if rec is None else txn_value(rec))], errors.NONE, apply),
                now)
        except Exception as e:  # noqa: BLE001 - every append failure becomes an error code
            code = getattr(e, "error_code", None)
            if code is None:
                log.error("append to __transaction_state-%d failed", partition, exc_info=e)
            return (errors.NOT_COORDINATOR if code in (errors.NOT_LEADER_OR_FOLLOWER,
                                                       errors.NOT_COORDINATOR)
                    else errors.COORDINATOR_NOT_AVAILABLE)
        finally:
            txn.pending = False

    def _current(self, transactional_id, producer_id, producer_epoch):
        """(error or None, metadata) for a request of the id's current producer."""
        err = self._coordinator_error(transactional_id)
        if err is not None:
            return err, None
        txn = self.txns.get(transactional_id)
        if txn is None or txn.producer_id != producer_id:
            return errors.INVALID_PRODUCER_ID_MAPPING, None
        if producer_epoch != txn.producer_epoch:
            return errors.PRODUCER_FENCED, None
        if txn.pending:
            return errors.CONCURRENT_TRANSACTIONS, None
        return None, txn

    # ------------------------------------------------------------------ InitProducerId
    async def init_producer_id(self, transactional_id, timeout_ms, producer_id=-1,
                               producer_epoch=-1) -> tuple[int, int, int]:
        """Returns (error, producer id, epoch)."""
        try:
            return await self._init_producer_id(transactional_id, timeout_ms, producer_id,
                                                producer_epoch)
        except ProducerIdsUnavailable:
            return errors.COORDINATOR_LOAD_IN_PROGRESS, -1, -1

    async def _init_producer_id(self, transactional_id, timeout_ms, producer_id,
                                producer_epoch) -> tuple[int, int, int]:
        err = self._coordinator_error(transactional_id)
        if err is None and not 0 < timeout_ms <= self.max_timeout_ms:
            err = errors.INVALID_TRANSACTION_TIMEOUT
        if err is not None:
            return err, -1, -1
        now = self._now()
        txn = self.txns.get(transactional_id)
        if txn is None:
            txn = self.txns[transactional_id] = TxnMetadata(transactional_id, TxnRecord(
                self.producer_ids.new_id(), -1, timeout_ms, EMPTY, set(), now, -1))
        if txn.pending:
            return errors.CONCURRENT_TRANSACTIONS, -1, -1
        if producer_id >= 0 and txn.producer_epoch >= 0:
            if (producer_id, producer_epoch) == (txn.last_producer_id, txn.last_producer_epoch):
                return errors.NONE, txn.producer_id, txn.producer_epoch  # a retried bump
            if (producer_id, producer_epoch) != (txn.producer_id, txn.producer_epoch):
                return errors.PRODUCER_FENCED, -1, -1
        if txn.state in (PREPARE_COMMIT, PREPARE_ABORT, DEAD):
            return errors.CONCURRENT_TRANSACTIONS, -1, -1
        if txn.state == ONGOING:
            # fence the current producer and abort its transaction; the caller retries
            self._spawn(self._fence_and_abort(txn))
            return errors.CONCURRENT_TRANSACTIONS, -1, -1
        pid, epoch = txn.producer_id, txn.producer_epoch + 1
        if epoch >= MAX_EPOCH - 1:
            pid, epoch = self.producer_ids.new_id(), 0
        last = (txn.producer_id, txn.producer_epoch)
        err = await self._write(txn, txn.record(producer_id=pid, producer_epoch=epoch,
                                                timeout_ms=timeout_ms, state=EMPTY,
                                                partitions=set(), update_ms=now, start_ms=-1))
        if err:
            return err, -1, -1
        txn.last_producer_id, txn.last_producer_epoch = last
        return errors.NONE, pid, epoch

    # ------------------------------------------------------------------ AddPartitions/Offsets
    async def add_partitions(self, transactional_id, producer_id, producer_epoch,
                             partitions) -> int:
        err, txn = self._current(transactional_id, producer_id, producer_epoch)
        if err is not None:
            return err
        if txn.state in (PREPARE_COMMIT, PREPARE_ABORT):
            return errors.CONCURRENT_TRANSACTIONS
        if txn.state == DEAD:
            return errors.INVALID_TXN_STATE
        wanted = set(partitions)
        if txn.state == ONGOING and wanted <= txn.partitions:
            return errors.NONE
        now = self._now()
        start = txn.start_ms if txn.state == ONGOING else now
        return await self._write(txn, txn.record(state=ONGOING, partitions=txn.partitions | wanted,
                                                 update_ms=now, start_ms=start))

    # ------------------------------------------------------------------ EndTxn
    async def end_txn(self, transactional_id, producer_id, producer_epoch, commit: bool) -> int:
        err, txn = self._current(transactional_id, producer_id, producer_epoch)
        if err is not None:
            return err
        state = txn.state
        if state == ONGOING:
            return await self._prepare(txn, commit)
        if state in (COMPLETE_COMMIT, COMPLETE_ABORT):
            return errors.NONE if commit == (state == COMPLETE_COMMIT) else errors.INVALID_TXN_STATE
        if state in (PREPARE_COMMIT, PREPARE_ABORT):
            return (errors.CONCURRENT_TRANSACTIONS if commit == (state == PREPARE_COMMIT)
                    else errors.INVALID_TXN_STATE)
        return errors.INVALID_TXN_STATE

    async def _prepare(self, txn, commit: bool) -> int:
        partition = self.partition_for(txn.transactional_id)
        err = await self._write(txn, txn.record(state=PREPARE_COMMIT if commit else PREPARE_ABORT,
                                                update_ms=self._now()))
        if not err:
            txn.pending = True
            self._spawn(self._complete(txn, commit, partition, self.owned[partition]))
        return err

    async def _complete(self, txn, commit, partition, coordinator_epoch) -> None:
        """Markers to every partition of the transaction, then CompleteCommit/CompleteAbort
        (retried until written, or until this broker stops coordinating the partition)."""
        try:
            if not await self.write_markers(txn.producer_id, txn.producer_epoch, commit,
                                            coordinator_epoch, sorted(txn.partitions)):
                return  # fenced by a newer coordinator, which completes the transaction
            while self.owned.get(partition) == coordinator_epoch:
                err = await self._write(txn, txn.record(
                    state=COMPLETE_COMMIT if commit else COMPLETE_ABORT, partitions=set(),
                    update_ms=self._now()))
                if err != errors.COORDINATOR_NOT_AVAILABLE:
                    return
                txn.pending = True
                await asyncio.sleep(RETRY_BACKOFF_MS / 1000)
        finally:
            txn.pending = False

    # ------------------------------------------------------------------ timeouts
    async def _fence_and_abort(self, txn) -> None:
        """Kafka's PrepareEpochFence: bump the epoch (unless exhausted) and abort."""
        if txn.pending or txn.state != ONGOING:
            return
        if txn.producer_epoch < MAX_EPOCH - 1:
            txn.last_producer_id, txn.last_producer_epoch = txn.producer_id, txn.producer_epoch
            txn.producer_epoch += 1
        await self._prepare(txn, commit=False)

    def _every(self, interval_ms, check) -> None:
        """Run ``check`` every ``interval_ms`` on the runtime's clock until shutdown."""
        def tick():
            check()
            self.runtime.schedule(check, interval_ms, tick)
        self.runtime.schedule(check, interval_ms, tick)

    def abort_timed_out(self) -> list[str]:
        """Start aborting every Ongoing transaction past its timeout; returns their ids."""
        now = self._now()
        out = []
        for txn in list(self.txns.values()):
            if txn.state == ONGOING and not txn.pending and now > txn.start_ms + txn.timeout_ms:
                log.info("aborting transaction %s of producer %d: timed out after %d ms",
                         txn.transactional_id, txn.producer_id, txn.timeout_ms)
                self._spawn(self._fence_and_abort(txn))
                out.append(txn.transactional_id)
        return out

    # ------------------------------------------------------------------ expiration
    def remove_expired(self) -> list[str]:
        """Start removing every id idle in Empty/CompleteCommit/CompleteAbort for longer than
        transactional.id.expiration.ms (Kafka's removeExpiredTransactionalIds); returns them."""
        horizon = self._now() - self.expiration_ms
        out = [t.transactional_id for t in self.txns.values()
               if t.state in EXPIRABLE and not t.pending and t.update_ms <= horizon]
        for tid in out:
            txn = self.txns[tid]
            log.info("removing transactional id %s: idle since %d", tid, txn.update_ms)
            txn.pending = True  # requests meanwhile get CONCURRENT_TRANSACTIONS
            self._spawn(self._write(txn, None))
        return out

    # ------------------------------------------------------------------ admin
    def describe(self, transactional_id) -> tuple[int, TxnMetadata | None]:
        err = self._coordinator_error(transactional_id)
        if err is not None:
            return err, None
        txn = self.txns.get(transactional_id)
        if txn is None:
            return errors.TRANSACTIONAL_ID_NOT_FOUND, None
        return errors.NONE, txn

    def list(self, states=(), producer_ids=(), min_duration_ms=-1) -> list[TxnMetadata]:
        now = self._now()
        return [t for t in self.txns.values()
                if (not states or t.state_name in states)
                and (not producer_ids or t.producer_id in producer_ids)
                and (min_duration_ms < 0 or (t.start_ms >= 0 and
                                              now - t.start_ms >= min_duration_ms))]
