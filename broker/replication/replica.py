"""Partitions this broker hosts, as leader or follower, and the replica manager that answers
for them: appends (acks, idempotence, min.insync.replicas), reads, the high watermark, the ISR
and the requests that wait on them.

A `Partition` wraps a storage `Log`. Its role comes from the controller (LeaderAndIsr) or, on
a single broker without ZooKeeper, from the local metadata store (leader of everything, the ISR
is itself). As leader it tracks every follower's log end offset from their fetches; the high
watermark is the smallest log end offset over the ISR and never moves back; followers that fall
behind for replica.lag.time.max.ms leave the ISR and come back once caught up, through
AlterPartition requests to the controller (`isr_changes`). As follower it is appended to by a
replica fetcher (`fetcher.py`).

The `ReplicaManager` is what the Produce, Fetch and DeleteRecords handlers call, as Kafka's:
``append_records`` (acks=all waits in a delayed produce until the ISR has the batches),
``fetch_messages`` (a follower's fetch moves its state, the ISR and the high watermark; a
consumer's reads up to the high watermark or, read_committed, the last stable offset with the
aborted transactions to drop; a fetch short of min_bytes waits in a delayed fetch, a
follower's woken by appends, a consumer's when the high watermark moves) and
``delete_records``. A request's acks=all appends wait in one delayed produce. The waits park in ``purgatory.py``. The handlers map the wire
to these calls and their results back; nothing here knows the wire's versions.
"""
from __future__ import annotations

import asyncio
import logging
import struct
import time

from josefk.broker.control.metadata import MetadataError, partition_exists
from josefk.broker.replication.producer_state import ProducerStateTable
from josefk.broker.replication import remote
from josefk.broker.replication.purgatory import (AcksWatchers, DelayedFetch, Watchers,
                                                 wait_all_replicated)
from josefk.storage.config import LogConfig
from josefk.storage.errors import InvalidConfig, OffsetOutOfRange, RecordTooLarge, StorageError
from josefk.storage.manager import remove_dirs
from josefk.storage.log_validator import ValidatedRecords, own_records, validate_records
from josefk.wire import errors, legacy
from josefk.wire.batch import CorruptRecord, InvalidRecord, crc_ok, iter_headers
from josefk.wire.records import CONTROL_ABORT, CONTROL_COMMIT, build_batch, control_record

log = logging.getLogger("josefk.replica")

# Record ranges at least this long are sent from the segment file with sendfile; shorter ones
# are cheaper to copy.
ZERO_COPY_MIN = 16 * 1024
HIGH_WATERMARK = -1  # DeleteRecords offset meaning "everything below the high watermark"
_EPOCH, _EPOCH_AT = struct.Struct(">i"), 12  # a batch's partitionLeaderEpoch and where it is


def _now_ms() -> int:
    return int(time.time() * 1000)


class AppendResult:
    __slots__ = ("error", "base_offset", "log_start_offset", "message", "next_offset",
                 "record_errors", "log_append_time")

    def __init__(self, error, base_offset=-1, log_start_offset=-1, message=None, next_offset=-1,
                 record_errors=(), log_append_time=-1):
        self.error = error
        self.base_offset = base_offset
        self.log_start_offset = log_start_offset
        self.message = message
        self.next_offset = next_offset  # the offset the high watermark must pass for acks=all
        self.record_errors = record_errors  # (index in batch, message) pairs
        self.log_append_time = log_append_time  # the time stamped in, on a LogAppendTime topic

    @property
    def appended(self) -> bool:
        """The records are in the log (or were already: a duplicate), whatever the acks=all
        wait answered after; False when the append was refused."""
        return self.next_offset >= 0


class ReadResult:
    __slots__ = ("error", "records", "high_watermark", "last_stable_offset", "log_start_offset",
                 "diverging_epoch", "aborted")

    def __init__(self, error, records=None, high_watermark=-1, log_start_offset=-1,
                 diverging_epoch=None, last_stable_offset=-1, aborted=None):
        self.error = error
        self.records = records
        self.high_watermark = high_watermark
        self.last_stable_offset = last_stable_offset
        self.log_start_offset = log_start_offset
        self.diverging_epoch = diverging_epoch  # (epoch, end offset) for a follower to truncate to
        self.aborted = aborted  # read_committed: [(producer id, first offset)] in the range


class FetchParams:
    """What a fetch asks of every partition it reads (Kafka's FetchParams)."""

    __slots__ = ("replica_id", "max_wait_ms", "min_bytes", "max_bytes", "read_committed",
                 "magic")

    def __init__(self, replica_id, max_wait_ms, min_bytes, max_bytes, read_committed=False,
                 magic=2):
        self.replica_id = replica_id  # the fetching follower's broker id; -1 for a consumer
        self.max_wait_ms, self.min_bytes, self.max_bytes = max_wait_ms, min_bytes, max_bytes
        self.read_committed = read_committed
        # the message format read: 2 the stored batches as they are, 0 or 1 converted down
        # (where the topic allows it)
        self.magic = magic


TELL_LOG_START_MS = 5000  # how long a follower is told a log start it does not take


class FollowerState:
    """What the leader knows of one follower, from its fetches (Kafka's Replica)."""

    __slots__ = ("leo", "log_start", "caught_up_ms", "last_fetch_ms", "leader_leo_at_last_fetch",
                 "told_log_start")

    def __init__(self, now_ms):
        self.leo = -1
        self.log_start = -1  # unknown until the follower's first fetch (Fetch v5+ reports it)
        self.caught_up_ms = now_ms  # a new leader gives every follower a full lag window
        self.last_fetch_ms = now_ms
        self.leader_leo_at_last_fetch = -1
        # tiered: (whole log's start, the start it reported, since when) it is being told
        self.told_log_start: tuple[int, int, int] | None = None


class PartitionState:
    """One partition's role as LeaderAndIsr (or the local store) describes it."""

    __slots__ = ("topic", "index", "topic_id", "leader", "leader_epoch", "isr", "replicas",
                 "partition_epoch")

    def __init__(self, topic, index, leader, leader_epoch, isr, replicas, partition_epoch=0,
                 topic_id=None):
        self.topic, self.index, self.topic_id = topic, index, topic_id
        self.leader, self.leader_epoch = leader, leader_epoch
        self.isr, self.replicas = list(isr), list(replicas)
        self.partition_epoch = partition_epoch


class Partition:
    __slots__ = ("topic", "index", "topic_id", "log", "node_id", "leader", "leader_epoch",
                 "partition_epoch", "replicas", "isr", "pending_isr", "followers", "producers",
                 "fetches_waiting", "replica_fetches_waiting", "acks_waiting", "config",
                 "min_insync", "manager", "epoch_start_offset", "deletes_waiting", "mirror")

    def __init__(self, manager, topic, index, log_, config: LogConfig):
        self.manager = manager
        self.node_id = manager.node_id
        self.topic = topic
        self.index = index
        self.topic_id = None
        self.log = log_
        self.config = config
        self.min_insync = config.min_insync_replicas
        self.leader = -1
        self.leader_epoch = -1
        self.partition_epoch = -1
        self.replicas: list[int] = []
        self.isr: list[int] = []
        self.pending_isr = None  # an ISR change sent to the controller and not yet answered
        self.followers: dict[int, FollowerState] = {}
        self.epoch_start_offset = 0
        self.producers = ProducerStateTable()
        self.producers.load(log_)
        self.fetches_waiting = Watchers()  # consumers' fetches waiting for the high watermark
        self.replica_fetches_waiting = Watchers()  # followers' fetches waiting for appends
        self.acks_waiting = AcksWatchers()  # acks=all produces
        self.deletes_waiting = Watchers()  # DeleteRecords waiting for the followers
        self.mirror = None  # a mirror topic's cluster link while it mirrors: read-only

    @property
    def is_leader(self) -> bool:
        return self.leader == self.node_id

    @property
    def remote_log_start(self) -> int:
        """Tiered storage: where DeleteRecords moved the log start below the local log (the
        remote segments wholly below go at the remote log manager's next pass); on a
        follower rebuilt from the remote copy, the leader's log start then. -1 if neither;
        kept across restarts in the log-start-offset checkpoint."""
        return self.log.remote_log_start

    @remote_log_start.setter
    def remote_log_start(self, offset: int) -> None:
        self.log.remote_log_start = offset

    @property
    def log_start_offset(self) -> int:
        """The first offset a consumer may read, remote data included (tiered storage)."""
        return remote.log_start_offset(self, self.manager.remote)

    @property
    def remote_pending(self) -> bool:
        """Tiered, and the remote log's metadata not loaded yet (a new leader)."""
        return remote.pending(self, self.manager.remote)

    def remote_has_timestamp(self, timestamp: int) -> bool:
        """Whether ListOffsets for ``timestamp`` is answered from the remote log."""
        rlm = self.manager.remote
        return rlm is not None and self.config.remote_storage_enable and rlm.has_timestamp(
            self.topic, self.index, timestamp, self.log_start_offset)

    def remote_max_timestamp(self) -> int | None:
        """The largest timestamp in the remote log (ListOffsets MAX_TIMESTAMP), or None."""
        rlm = self.manager.remote
        if rlm is None or not self.config.remote_storage_enable:
            return None
        return rlm.max_timestamp(self.topic, self.index, self.log_start_offset)

    def remote_offset_for_timestamp(self, timestamp: int):
        """``((offset, timestamp) or None, error code)`` from the remote log (blocking: from
        a worker thread)."""
        return remote.offset_for_timestamp(self, self.manager.remote, timestamp)

    @property
    def last_stable_offset(self) -> int:
        """The high watermark, or the first offset of the oldest open transaction below it."""
        hwm = self.log.high_watermark
        first = self.producers.first_unstable_offset()
        return hwm if first is None else min(hwm, first)

    # -- role changes -----------------------------------------------------------------------------
    def make_leader(self, st: PartitionState) -> None:
        was_leader = self.is_leader
        new_epoch = st.leader_epoch != self.leader_epoch
        self._apply(st)
        now = _now_ms()
        if new_epoch or not was_leader:
            self.epoch_start_offset = self.log.log_end_offset
            self.followers = {r: FollowerState(now) for r in st.replicas if r != self.node_id}
        else:
            for r in st.replicas:
                if r != self.node_id and r not in self.followers:
                    self.followers[r] = FollowerState(now)
        self.pending_isr = None
        self.maybe_advance_hwm()

    def make_follower(self, st: PartitionState) -> None:
        self._apply(st)
        self.followers = {}
        self.pending_isr = None
        self._release_waiting()

    def _apply(self, st: PartitionState):
        self.leader = st.leader
        self.leader_epoch = st.leader_epoch
        self.partition_epoch = st.partition_epoch
        self.isr = list(st.isr)
        self.replicas = list(st.replicas)
        if st.topic_id is not None:
            self.topic_id = st.topic_id

    def stop(self) -> None:
        self.leader = -1
        self._release_waiting()

    def _release_waiting(self) -> None:
        """Not the leader any more: acks=all appends fail, fetches and DeleteRecords look
        again."""
        self.acks_waiting.fail(errors.NOT_LEADER_OR_FOLLOWER)
        self.fetches_waiting.wake()
        self.replica_fetches_waiting.wake()
        self.deletes_waiting.wake()

    # -- leader: append -------------------------------------------------------------------------
    def append(self, records, acks: int, old_formats: bool = False) -> AppendResult:
        """Append a client's batches: checked, converted from message formats v0/v1
        (``old_formats``: Produce v0-2) and given their final timestamps in one pass
        (`log_validator.validate_records`); the log then writes them."""
        if not self.is_leader:
            return AppendResult(errors.NOT_LEADER_OR_FOLLOWER)
        if self.mirror is not None:
            return AppendResult(errors.INVALID_REQUEST, message=(
                f"Topic {self.topic} is a mirror topic of cluster link {self.mirror}: it is "
                "read-only until it is promoted or failed over"))
        if self.config.remote_read_replica or self.config.remote_recovery:
            refused = remote.append_refused(self, self.manager.remote)
            if refused is not None:
                return AppendResult(refused[0], message=refused[1])
        try:
            validated = validate_records(records, self.config, old_formats=old_formats)
        except CorruptRecord as e:
            return AppendResult(errors.CORRUPT_MESSAGE, message=str(e))
        except InvalidRecord as e:
            return AppendResult(e.error_code, message=str(e), record_errors=e.record_errors)
        except RecordTooLarge as e:
            return AppendResult(errors.MESSAGE_TOO_LARGE, message=str(e))
        return self._append_valid(validated, acks)

    def append_own(self, batch, acks: int) -> AppendResult:
        """Append one batch the broker built itself (the coordinators' records): it is well
        formed by construction, so its framing, CRC and records are not checked again."""
        if not self.is_leader:
            return AppendResult(errors.NOT_LEADER_OR_FOLLOWER)
        try:
            validated = own_records(batch, self.config)
        except RecordTooLarge as e:
            return AppendResult(errors.MESSAGE_TOO_LARGE, message=str(e))
        return self._append_valid(validated, acks)

    def _append_valid(self, validated: ValidatedRecords, acks: int) -> AppendResult:
        lg = self.log
        if acks == -1 and len(self.isr) < self.min_insync:
            return AppendResult(errors.NOT_ENOUGH_REPLICAS, message=(
                f"The size of the current ISR {self.isr} is insufficient to satisfy the min.isr "
                f"requirement of {self.min_insync} for partition {self.topic}-{self.index}"))
        batches = validated.batches
        h = batches[0]
        if any(b.is_control for b in batches):
            return AppendResult(errors.INVALID_RECORD,
                                message="clients may not write control batches")
        idempotent = h.producer_id >= 0
        if idempotent:
            if len(batches) > 1:
                return AppendResult(errors.INVALID_RECORD,
                                    message="idempotent produce must carry exactly one batch")
            err, duplicate = self.producers.check(h)
            if err:
                return AppendResult(err, log_start_offset=lg.log_start_offset)
            if duplicate is not None:
                return AppendResult(errors.NONE, duplicate[0], lg.log_start_offset,
                                    next_offset=duplicate[1] + 1)
        try:
            first, last = lg.append(validated, leader_epoch=self.leader_epoch)
        except OSError as e:  # disk full, file too large, I/O error: nothing was appended
            return self._storage_error(e)
        if idempotent:
            self.producers.update(h, first, last)
        self.replica_fetches_waiting.wake()
        if self._advance_hwm():  # alone in the ISR: consumers may read it at once
            if self.acks_waiting.waiting:
                self.acks_waiting.complete(lg.high_watermark)
            self.fetches_waiting.wake()
        return AppendResult(errors.NONE, first, lg.log_start_offset, next_offset=last + 1,
                            log_append_time=validated.log_append_time_ms)

    def write_marker(self, producer_id: int, producer_epoch: int, commit: bool,
                     coordinator_epoch: int) -> AppendResult:
        """Append a transaction's COMMIT or ABORT marker (WriteTxnMarkers) and close it."""
        if not self.is_leader:
            return AppendResult(errors.NOT_LEADER_OR_FOLLOWER)
        if self.mirror is not None:  # the source's markers come with its batches; a local
            end = self.log.log_end_offset  # transaction's records were refused here
            return AppendResult(errors.NONE, end, self.log.log_start_offset, next_offset=end)
        err = self.producers.check_marker(producer_id, producer_epoch, coordinator_epoch)
        if err:
            return AppendResult(err)
        kind = CONTROL_COMMIT if commit else CONTROL_ABORT
        buf = build_batch([control_record(kind, coordinator_epoch)], producer_id=producer_id,
                          producer_epoch=producer_epoch, transactional=True, control=True)
        try:
            validated = own_records(buf, self.config)
        except RecordTooLarge as e:  # max.message.bytes below a marker's size: Kafka refuses too
            return AppendResult(errors.MESSAGE_TOO_LARGE, message=str(e))
        h = validated.batches[0]
        try:
            first, _last = self.log.append(validated, leader_epoch=self.leader_epoch)
        except OSError as e:
            return self._storage_error(e)
        self.producers.end_txn(producer_id, producer_epoch, kind, first, coordinator_epoch,
                               h.max_timestamp)
        self.maybe_advance_hwm()
        self.fetches_waiting.wake()  # the last stable offset may have moved
        self.replica_fetches_waiting.wake()
        return AppendResult(errors.NONE, first, self.log.log_start_offset, next_offset=first + 1)

    def abort_open_transactions(self) -> list[int]:
        """A mirror partition became writable: the source's transactions still open here
        would hold the last stable offset forever (their coordinator is the source's), so
        they are aborted here, as a coordinator's timeout would. Returns their producer
        ids."""
        aborted = []
        for pid in list(self.producers.ongoing):
            entry = self.producers.producers[pid]
            if self.write_marker(pid, entry.epoch, False, entry.coordinator_epoch).appended:
                aborted.append(pid)
        return aborted

    def _storage_error(self, e: OSError) -> AppendResult:
        log.warning("append to %s-%d failed: %s", self.topic, self.index, e)
        self.manager.storage_failed(self, e)
        return AppendResult(errors.KAFKA_STORAGE_ERROR, message=f"Disk error when trying "
                            f"to access log file on disk: {e.strerror or e}")

    def replicated(self, next_offset: int) -> bool:
        return self.log.high_watermark >= next_offset

    # -- leader: followers, high watermark, ISR -----------------------------------------------------
    def update_follower(self, replica_id: int, fetch_offset: int, now_ms: int,
                        log_start_offset: int = -1) -> bool:
        """A follower fetched from ``fetch_offset``: it has everything below, and its log
        starts at ``log_start_offset``. Returns False if ``replica_id`` is not a replica of
        this partition."""
        st = self.followers.get(replica_id)
        if st is None:
            return False
        if log_start_offset != st.log_start:
            st.log_start = log_start_offset
            self.deletes_waiting.wake()
        leo = self.log.log_end_offset
        if fetch_offset >= leo:
            st.caught_up_ms = now_ms
        elif fetch_offset >= st.leader_leo_at_last_fetch >= 0:
            st.caught_up_ms = st.last_fetch_ms
        st.leo = fetch_offset
        st.last_fetch_ms = now_ms
        st.leader_leo_at_last_fetch = leo
        if (replica_id not in self.isr and self.pending_isr is None
                and fetch_offset >= self.log.high_watermark
                and fetch_offset >= self.epoch_start_offset):
            self._propose_isr(self.isr + [replica_id])
        self.maybe_advance_hwm()
        return True

    def low_watermark(self, alive) -> int:
        """Kafka's low watermark: the smallest log start offset over this replica and the
        followers on live brokers (``alive``), learned from their fetches. DeleteRecords is
        done when it reaches the requested offset. With a log start below the local log
        (tiered), a follower still reporting more has not learned it yet: it counts as none."""
        low = self.log_start_offset
        below_local = low < self.log.log_start_offset
        for r in self.replicas:
            if r != self.node_id and r in alive:
                st = self.followers.get(r)
                start = -1 if st is None or (below_local and st.log_start > low) \
                    else st.log_start
                low = min(low, start)
        return low

    def follower_log_start(self, replica_id: int) -> int:
        """The log start a follower's fetch is answered: the local log's, which it follows,
        unless the whole log's (tiered, DeleteRecords or remote data below the local log)
        differs from what the follower reported: then that one, which the follower keeps as
        its log start over remote data (Kafka's followers take the leader's logStartOffset
        from each fetch response), for `TELL_LOG_START_MS` at most while it reports the same
        other one (a follower whose local log starts at or below it takes it for the local
        log's: it must go on following that)."""
        local = self.log.log_start_offset
        if not self.config.remote_storage_enable:
            return local
        start = self.log_start_offset
        st = self.followers.get(replica_id)
        if st is None or start >= local or st.log_start == start:
            return local
        told = st.told_log_start
        if told is None or told[:2] != (start, st.log_start):
            st.told_log_start = told = (start, st.log_start, st.last_fetch_ms)
        return start if st.last_fetch_ms - told[2] < TELL_LOG_START_MS else local

    def maybe_advance_hwm(self) -> None:
        if self._advance_hwm():
            self.acks_waiting.complete(self.log.high_watermark)
            self.fetches_waiting.wake()

    def _advance_hwm(self) -> bool:
        """Move the high watermark up to the smallest log end offset over the ISR (counting a
        follower being added: Kafka's "maximal ISR"). Returns True if it moved."""
        if not self.is_leader:
            return False
        lg = self.log
        new = lg.log_end_offset
        # a list is enough to take a minimum over; the union only while an ISR change is out
        members = self.isr if self.pending_isr is None else set(self.isr) | set(self.pending_isr)
        for r in members:
            if r == self.node_id:
                continue
            st = self.followers.get(r)
            new = min(new, st.leo if st is not None else -1)
        if new > lg.high_watermark:
            lg.high_watermark = new
            return True
        return False

    def maybe_shrink_isr(self, now_ms: int, lag_max_ms: int) -> None:
        if not self.is_leader or self.pending_isr is not None:
            return
        out = [r for r in self.isr if r != self.node_id and
               (r not in self.followers or now_ms - self.followers[r].caught_up_ms > lag_max_ms)]
        if out:
            log.info("shrinking ISR of %s-%d from %s: %s fell behind", self.topic, self.index,
                     self.isr, out)
            self._propose_isr([r for r in self.isr if r not in out])

    def _propose_isr(self, new_isr):
        self.pending_isr = list(new_isr)
        self.manager.isr_changes.propose(self, list(new_isr))

    def followers_silent(self, now_ms: int, silent_ms: int) -> bool:
        """The ISR has followers and none of them fetched for ``silent_ms``."""
        others = [r for r in self.isr if r != self.node_id]
        return bool(others) and all(
            r not in self.followers or now_ms - self.followers[r].last_fetch_ms > silent_ms
            for r in others)

    def isr_committed(self, isr, leader_epoch, partition_epoch) -> None:
        """The controller accepted (or reported) the ISR."""
        self.pending_isr = None
        if leader_epoch != self.leader_epoch:
            return
        if sorted(isr) != sorted(self.isr):
            log.info("ISR of %s-%d now %s (partition epoch %d)", self.topic, self.index, isr,
                     partition_epoch)
        self.isr = list(isr)
        self.partition_epoch = partition_epoch
        self.maybe_advance_hwm()

    def isr_rejected(self) -> None:
        self.pending_isr = None

    # -- reads --------------------------------------------------------------------------------------
    def read(self, offset: int, max_bytes: int, min_one: bool,
             replica_id: int = -1, last_fetched_epoch: int = -1,
             zero_copy_min: int = 0, read_committed: bool = False) -> ReadResult:
        """Batches from ``offset``: up to the log end for a follower, the high watermark for a
        consumer, the last stable offset for a read_committed one (with the aborted
        transactions it must drop)."""
        lg = self.log
        hwm = lg.high_watermark
        lso = self.last_stable_offset
        if last_fetched_epoch >= 0:
            epoch, end = lg.end_offset_for_epoch(last_fetched_epoch)
            if epoch != last_fetched_epoch or end < offset:
                return ReadResult(errors.NONE, b"", hwm, lg.log_start_offset,
                                  diverging_epoch=(epoch, end), last_stable_offset=lso)
        limit = lg.log_end_offset if replica_id >= 0 else lso if read_committed else hwm
        if offset == limit >= lg.log_start_offset:  # caught up (most of a large fetch)
            start = self.follower_log_start(replica_id) if replica_id >= 0 \
                else self.log_start_offset if self.config.remote_storage_enable \
                else lg.log_start_offset
            return ReadResult(errors.NONE, b"", hwm, start, last_stable_offset=lso,
                              aborted=[] if read_committed else None)
        try:
            data = lg.read(offset, max_bytes, max_offset=limit, min_one=min_one,
                           zero_copy_min=zero_copy_min)
        except OffsetOutOfRange:
            if self.config.remote_storage_enable:
                below_local = offset < lg.log_start_offset
                if below_local and remote.pending(self, self.manager.remote):
                    return ReadResult(errors.REPLICA_NOT_AVAILABLE)
                start = self.log_start_offset
                if start <= offset and below_local and replica_id >= 0:
                    # KIP-405: the follower rebuilds its state below from the remote copy
                    return ReadResult(errors.OFFSET_MOVED_TO_TIERED_STORAGE, None, hwm, start,
                                      last_stable_offset=lso)
                if start <= offset and below_local:  # the remote log holds it
                    return ReadResult(errors.NONE, remote.RemoteRead(
                        self.topic, self.index, offset, max_bytes, limit, min_one,
                        self if self.config.compact else None), hwm, start,
                        last_stable_offset=lso, aborted=[] if read_committed else None)
                return ReadResult(errors.OFFSET_OUT_OF_RANGE, None, hwm, start,
                                  last_stable_offset=lso)
            return ReadResult(errors.OFFSET_OUT_OF_RANGE, None, hwm, lg.log_start_offset,
                              last_stable_offset=lso)
        aborted = None
        if read_committed:
            aborted = self.producers.aborted_between(offset, limit) if data.records else []
        start = self.follower_log_start(replica_id) if replica_id >= 0 \
            else self.log_start_offset if self.config.remote_storage_enable \
            else lg.log_start_offset
        return ReadResult(errors.NONE, data.records, hwm, start,
                          last_stable_offset=lso, aborted=aborted)

    def check_leader_epoch(self, current_leader_epoch: int) -> int:
        if current_leader_epoch < 0 or current_leader_epoch == self.leader_epoch:
            return errors.NONE
        if current_leader_epoch < self.leader_epoch:
            return errors.FENCED_LEADER_EPOCH
        return errors.UNKNOWN_LEADER_EPOCH

    # -- follower -----------------------------------------------------------------------------------
    def truncate_to(self, offset: int) -> None:
        """Cut the log at ``offset`` (it diverged from the leader's); producer state follows."""
        self.log.truncate_to(offset)
        self._reload_producer_state()

    def restart_at(self, offset: int, remote_state=None) -> None:
        """Empty the log and continue at ``offset`` (the leader's log starts past ours); with
        ``remote_state`` (leader epochs, producer-state snapshot: tiered storage's copy of the
        segment ending there), the state below ``offset`` is rebuilt from it (KIP-405)."""
        lg = self.log
        lg.truncate_fully_and_start_at(offset)
        if remote_state is not None:
            epochs, snapshot = remote_state
            for epoch, start in epochs:
                # past the current leader epoch: another cluster's (a topic recovered from a
                # bucket), which this cluster's epochs must not follow
                if epoch <= self.leader_epoch:
                    lg.epochs.assign(epoch, min(start, offset))
            # written now: recovery rebuilds entries from local batches, and these have none
            lg.epochs.save_if_behind()
            if snapshot:
                lg.write_snapshot(offset, snapshot)
        self._reload_producer_state()

    def _reload_producer_state(self) -> None:
        self.producers = ProducerStateTable()
        self.producers.load(self.log)

    def append_as_follower(self, records, leader_hwm: int) -> None:
        """Append what the leader sent, unchanged. A fetch response may end in a partial
        batch (cut at the fetch size): only whole batches are kept, the rest comes next time."""
        lg = self.log
        batches = list(iter_headers(records)) if records else []
        if batches:
            for h in batches:
                if not crc_ok(records, h):
                    raise CorruptRecord(f"batch at offset {h.base_offset} from the leader fails "
                                        "its CRC")
            end = batches[-1].pos + batches[-1].size
            lg.append_as_follower(memoryview(records)[:end], batches)
            for h in batches:
                self.producers.apply(h, records)
        lg.high_watermark = min(leader_hwm, lg.log_end_offset)
        self.fetches_waiting.wake()


    def append_mirrored(self, records) -> int | None:
        """A mirror topic's leader appends its source partition's batches at their own
        offsets, unchanged (producer ids, sequences, markers, timestamps, CRCs) but for the
        partitionLeaderEpoch, outside the CRC, which every leader stamps with its own epoch
        (this cluster's replicas compare logs by it). A partial batch at the end (the fetch
        size) comes whole next time. Returns the last batch's max timestamp (None if none)."""
        batches = list(iter_headers(records)) if records else []
        if not batches or not self.is_leader:
            return None
        lg = self.log
        first = batches[0].base_offset
        if first < lg.log_end_offset == lg.log_start_offset:
            # an empty log asked from the source's log start, inside a batch (DeleteRecords
            # there): the log starts at the batch, its log start follows the source's after
            self.restart_at(first)
        buf = bytearray(memoryview(records)[:batches[-1].pos + batches[-1].size])
        epoch = self.leader_epoch
        for h in batches:
            if not crc_ok(buf, h):
                raise CorruptRecord(f"batch at offset {h.base_offset} from the source fails "
                                    "its CRC")
            _EPOCH.pack_into(buf, h.pos + _EPOCH_AT, epoch)
            h.leader_epoch = epoch
        lg.append_as_follower(buf, batches)
        for h in batches:
            self.producers.apply(h, buf)
        self.replica_fetches_waiting.wake()
        self.maybe_advance_hwm()
        return batches[-1].max_timestamp


def _make_files(logs) -> None:
    """`Log.make_files` for each of ``logs`` (a worker thread's job); a log whose files cannot
    be made now reports it at its first use."""
    for lg in logs:
        try:
            lg.make_files()
        except OSError:
            pass


def topic_log_config(broker_config, topic_configs: dict) -> LogConfig:
    return LogConfig.from_props(topic_configs, broker_config.topic_defaults())


class ReplicaManager:
    """Every partition replica on this broker, keyed by (topic, partition), and the requests
    that read and write them."""

    def __init__(self, broker_config, log_manager, metadata, node_id: int, isr_changes=None):
        self.config = broker_config
        self.logs = log_manager
        self.metadata = metadata  # the cluster's topics, to tell unknown from led elsewhere
        self.node_id = node_id
        self.partitions: dict[tuple[str, int], Partition] = {}
        self.offline: set[tuple[str, int]] = set()  # replicas whose log cannot be served
        self.isr_changes = isr_changes
        # In a cluster: callables(log dir) told when a log dir goes offline (the controller must
        # move its partitions); alone, a broker keeps its dirs and retries (a full disk recovers)
        self.dir_failure_listeners = []
        self.fetchers = None  # a broker.fetcher.FetcherManager in cluster mode
        self.lag_max_ms = broker_config.int("replica.lag.time.max.ms")
        self.role_listeners = []  # callables(partition, became_leader) e.g. group coordinator
        # In a cluster: the broker's SessionGuard, and how long followers may stay silent
        # before a leader whose ZooKeeper session is in doubt stops acting as one (`fenced`)
        self.session = None
        self.silent_ms = max(1000, 2 * broker_config.int("replica.fetch.wait.max.ms"))
        self.fenced_leaders: set[tuple[str, int]] = set()
        # tiered storage: the remote log manager (tiered/) when remote.log.storage.system.enable,
        # set once the broker started it (until then a tiered partition's remote log is unknown)
        self.remote = None
        self.remote_enabled = broker_config.bool("remote.log.storage.system.enable")

    def _partition(self, topic, index, configs: dict, cfg: LogConfig | None) -> Partition:
        key = (topic, index)
        if cfg is None:
            cfg = topic_log_config(self.config, configs)
        part = self.partitions.get(key)
        if part is None:
            lg = self.logs.get_or_create(topic, index, cfg)
            part = self.partitions[key] = Partition(self, topic, index, lg, cfg)
        else:
            self.reconfigure(part, cfg)
        return part

    @staticmethod
    def reconfigure(part: Partition, cfg: LogConfig) -> None:
        part.config = cfg
        part.min_insync = cfg.min_insync_replicas
        part.log.config = cfg

    def apply(self, st: PartitionState, configs: dict,
              cfg: LogConfig | None = None) -> Partition | None:
        """Become leader or follower of ``st``'s partition as it says (``cfg``: the log config
        ``configs`` make, when the caller has it already). A replica whose stored state cannot
        be loaded is reported offline (None) and the broker serves the others."""
        try:
            part = self._partition(st.topic, st.index, configs, cfg)
        except (InvalidConfig, StorageError, OSError) as e:
            log.error("partition %s-%d is offline: %s", st.topic, st.index, e)
            self.offline.add((st.topic, st.index))
            return None
        self.offline.discard((st.topic, st.index))
        was_leader = part.is_leader
        if st.leader == self.node_id:
            if self.fetchers is not None:
                self.fetchers.remove(part)
            part.make_leader(st)
        else:
            part.make_follower(st)
            if self.fetchers is not None and st.leader >= 0:
                self.fetchers.add(part, st.leader)
        if was_leader != part.is_leader:
            log.info("%s-%d: %s at leader epoch %d, ISR %s", st.topic, st.index,
                     "leader" if part.is_leader else f"follower of {st.leader}", st.leader_epoch,
                     st.isr)
            for fn in self.role_listeners:
                fn(part, part.is_leader)
        return part

    def _stop(self, topic: str, index: int) -> None:
        part = self.partitions.pop((topic, index), None)
        if part is not None:
            if self.fetchers is not None:
                self.fetchers.remove(part)
            was_leader = part.is_leader
            part.stop()
            if was_leader:
                for fn in self.role_listeners:
                    fn(part, False)

    def storage_failed(self, part: Partition, error: OSError) -> None:
        """An I/O error in ``part``'s log. In a cluster its log dir goes offline as in Kafka:
        every replica in it stops (answering KAFKA_STORAGE_ERROR) and the listeners tell the
        controller, which moves their leadership to other in-sync replicas."""
        if not self.dir_failure_listeners:
            return
        d = self.logs.log_dir_of(part.topic, part.index)
        if d is None:
            return  # its dir is offline already
        log.error("log dir %s failed (%s): its replicas go offline until this broker restarts",
                  d, error)
        for topic, index in self.logs.fail_dir(d, str(error)):
            self._stop(topic, index)
            self.offline.add((topic, index))
        for fn in self.dir_failure_listeners:
            fn(d)

    def stop_replicas(self, items) -> None:
        """Stop serving each ``(topic, index, delete)``; the logs to delete are detached
        in one pass per topic (one checkpoint write, not one per partition) and their files
        removed in a worker thread. A deleted tiered partition led here has its remote log
        deleted by the remote log manager."""
        doomed: dict[str, list[int]] = {}
        for topic, index, delete in items:
            part = self.partitions.get((topic, index))
            if delete and part is not None and part.is_leader and self.remote is not None \
                    and part.config.remote_storage_enable and part.topic_id is not None \
                    and part.config.remote_delete \
                    and not part.config.remote_read_replica:  # a read replica's is the origin's
                self.remote.delete_partition(topic, index, part.topic_id, part.leader_epoch)
            self._stop(topic, index)
            if delete:
                self.offline.discard((topic, index))
                doomed.setdefault(topic, []).append(index)
        dirs = [d for topic, indexes in doomed.items() for d in self.logs.detach(topic, indexes)]
        if dirs:
            asyncio.get_running_loop().run_in_executor(None, remove_dirs, dirs)

    def lead_locally(self, metadata) -> None:
        """Single broker: lead every partition of ``metadata`` and follow its changes."""
        for t in metadata.topics.values():
            self._lead_topic(t)
        metadata.listeners.append(self._on_local_metadata)
        metadata.preparers.append(self.prepare_logs)

    async def create_logs(self, topic, indexes, configs: dict) -> None:
        """Create the logs of the partitions ``indexes`` of ``topic`` that have none here, in a
        worker thread: thousands of directories and files take seconds, and the event loop
        keeps serving meanwhile. Raises InvalidConfig, StorageError or OSError."""
        cfg = topic_log_config(self.config, configs)
        missing = [i for i in indexes if self.logs.get(topic, i) is None]

        if missing:
            loop = asyncio.get_running_loop()
            made = await loop.run_in_executor(None, self.logs.create_many, topic, missing, cfg)
            # their segment files next, in the background: a first append then opens them
            # instead of creating them on the event loop
            loop.run_in_executor(None, _make_files, made)

    async def prepare_logs(self, t, indexes) -> None:
        """Make the logs of new partitions before the local store persists them; on a disk
        error the logs made so far are removed and nothing is persisted
        (KAFKA_STORAGE_ERROR)."""
        try:
            await self.create_logs(t.name, indexes, t.configs)
        except (StorageError, OSError) as e:
            log.error("cannot create the logs of %s: %s", t.name, e)
            fresh = [i for i in indexes if (t.name, i) not in self.partitions]
            await asyncio.get_running_loop().run_in_executor(None, self.logs.delete, t.name,
                                                             fresh)
            raise MetadataError(errors.KAFKA_STORAGE_ERROR,
                                f"Cannot create the logs of {t.name}: {e}") from None

    def _lead_topic(self, t):
        me = self.node_id
        try:
            cfg = topic_log_config(self.config, t.configs)
        except InvalidConfig:
            cfg = None  # every partition reports it offline
        for p in t.partitions:
            self.apply(PartitionState(t.name, p.index, me, p.leader_epoch, [me], [me],
                                      topic_id=t.topic_id), t.configs, cfg)

    def _on_local_metadata(self, event, t):
        if event == "deleted":
            self.stop_replicas([(t.name, p.index, True) for p in t.partitions])
        else:
            self._lead_topic(t)

    def get(self, topic: str, index: int) -> Partition | None:
        return self.partitions.get((topic, index))

    def sync_remote(self) -> None:
        """Hand the remote log manager the partitions led here with remote.storage.enable,
        and take back the others (after a topic config change; roles follow at once through
        `sync_remote_partition`)."""
        rlm = self.remote
        if rlm is None:
            return
        for part in self.partitions.values():
            self.sync_remote_partition(part)
        for key in [k for k in rlm.leaders if k not in self.partitions]:
            rlm.resign(*key)

    def sync_remote_partition(self, part: Partition) -> None:
        rlm = self.remote
        if rlm is None:
            return
        tiered = part.is_leader and part.config.remote_storage_enable \
            and part.topic_id is not None
        current = rlm.leaders.get((part.topic, part.index))
        if tiered and (current is None or current.leader_epoch != part.leader_epoch):
            rlm.lead(remote.leader_of(part))
        elif not tiered and current is not None:
            rlm.resign(part.topic, part.index)

    def leader_partition(self, topic: str, index: int) -> Partition | None:
        """The partition if this broker leads it."""
        part = self.partitions.get((topic, index))
        return part if part is not None and part.is_leader else None

    def leadership_in_doubt(self) -> bool:
        return self.session is not None and self.session.in_doubt()

    def fenced(self, part: Partition) -> bool:
        """A partition led here whose leadership this broker must not act on: its ZooKeeper
        session not known alive (expired, or the process stood still: the controller may have
        elected another leader unseen), or cut off from ZooKeeper with the ISR followers silent
        (the controller is likely electing another leader). Clients are told to look for it
        (Produce: NOT_LEADER_OR_FOLLOWER, Metadata: no leader, coordinators: NOT_COORDINATOR)
        rather than be answered from what may be stale. Call only when `leadership_in_doubt`."""
        return not self.session.trusted() or part.followers_silent(_now_ms(), self.silent_ms)

    def fenced_leader(self, topic: str, index: int) -> bool:
        """Whether this broker must not act on its leadership of the partition (`fenced`)."""
        if not self.leadership_in_doubt():
            return False
        part = self.leader_partition(topic, index)
        return part is None or self.fenced(part)

    def fence_cut_off_leaders(self) -> None:
        """Periodically: fail the acks=all appends waiting on fenced partitions at once, so
        their producers retry at the new leader."""
        now = set()
        if self.leadership_in_doubt():
            for key, part in self.partitions.items():
                if part.is_leader and self.fenced(part):
                    now.add(key)
                    part.acks_waiting.fail(errors.NOT_LEADER_OR_FOLLOWER)
        if now != self.fenced_leaders:
            if now - self.fenced_leaders:
                log.warning("not acting as leader of %d partitions: ZooKeeper session in doubt",
                            len(now))
            elif not now:
                log.info("acting as leader again of every partition led here")
            self.fenced_leaders = now

    def check_isr(self) -> None:
        now = _now_ms()
        for part in self.partitions.values():
            if part.followers:
                part.maybe_shrink_isr(now, self.lag_max_ms)

    def not_hosted_error(self, topic, index) -> int:
        """What a request for a partition this broker does not lead gets: KAFKA_STORAGE_ERROR
        if its replica here is offline (its log dir failed), NOT_LEADER_OR_FOLLOWER if the
        partition exists in the cluster, else UNKNOWN_TOPIC_OR_PARTITION."""
        if (topic, index) in self.offline:
            return errors.KAFKA_STORAGE_ERROR
        if partition_exists(self.metadata, topic, index):
            return errors.NOT_LEADER_OR_FOLLOWER
        return errors.UNKNOWN_TOPIC_OR_PARTITION

    # -- produce -------------------------------------------------------------------------------
    def append_records(self, topics, acks: int, timeout_ms: int, respond,
                       old_formats: bool = False):
        """Append clients' batches, in order: ``topics`` is [(topic, [partition data: .index,
        .records])]. With acks=all the answer waits (a delayed produce) until the ISR has
        every batch appended, at most ``timeout_ms``. ``respond`` maps the results, [[an
        `AppendResult` per partition] per topic], to the answer: returned at once when nothing
        waits, else by the coroutine returned. ``old_formats``: see `Partition.append`."""
        partitions = self.partitions
        in_doubt = self.leadership_in_doubt()
        results = []
        waits = []  # (partition, result) of acks=all appends the ISR does not have yet
        for topic, partition_data in topics:
            out = []
            for pd in partition_data:
                part = partitions.get((topic, pd.index))
                if part is None or not part.is_leader or (in_doubt and self.fenced(part)):
                    res = AppendResult(self.not_hosted_error(topic, pd.index))
                elif pd.records is None:
                    res = AppendResult(errors.CORRUPT_MESSAGE)
                else:
                    res = part.append(pd.records, acks, old_formats)
                    if acks == -1 and not res.error and not part.replicated(res.next_offset):
                        waits.append((part, res))
                out.append(res)
            results.append(out)
        if not waits:
            return respond(results)
        return self._respond_replicated(waits, timeout_ms, results, respond)

    @staticmethod
    async def _respond_replicated(waits, timeout_ms, results, respond):
        codes = await wait_all_replicated([(part, res.next_offset) for part, res in waits],
                                          timeout_ms)
        for (_part, res), code in zip(waits, codes):
            if code:
                res.error = code
                if code != errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND:
                    res.base_offset = -1
        return respond(results)

    # -- fetch ---------------------------------------------------------------------------------
    def fetch_messages(self, params: FetchParams, reads, respond):
        """Read ``reads``, [(topic, [fetch partition], last answers)]: each fetch partition has
        Kafka's fields (.partition, .fetch_offset, .partition_max_bytes, .current_leader_epoch,
        .last_fetched_epoch, .log_start_offset); ``last answers`` is None or, for a consumer's
        incremental fetch session (KIP-227), what the session last answered for each partition
        (.high_watermark, .last_stable_offset, .log_start_offset). ``respond`` maps the results,
        [[(fetch partition, `ReadResult`)] per read], to the answer: returned at once when the
        fetch has min_bytes, an error or divergence to tell, or may not wait; else by the
        coroutine returned, which waits (a delayed fetch) up to max_wait_ms for appends to the
        partitions read, reading again each time one comes."""
        results, size, ready, watch = self._read(params, reads)
        if self.remote is not None and remote.has_remote(results):
            return self._respond_remote(results, respond)
        if ready or size >= params.min_bytes or params.max_wait_ms <= 0 or not watch:
            return respond(results)
        # Register before returning: an append handled before the coroutine first runs must
        # wake it.
        return self._respond_fetched(params, reads, respond,
                                     DelayedFetch(watch, params.replica_id >= 0))

    async def _respond_remote(self, results, respond):
        await remote.resolve(self.remote, results)
        return respond(results)

    async def _respond_fetched(self, params, reads, respond, waiter):
        loop = asyncio.get_running_loop()
        deadline = loop.time() + params.max_wait_ms / 1000
        while True:
            await waiter.wait(deadline - loop.time())
            results, size, ready, watch = self._read(params, reads)
            if self.remote is not None and remote.has_remote(results):
                await remote.resolve(self.remote, results)
                return respond(results)
            if ready or size >= params.min_bytes or loop.time() >= deadline or not watch:
                return respond(results)
            waiter = DelayedFetch(watch, params.replica_id >= 0)

    def _read(self, params: FetchParams, reads):
        """One pass over ``reads``: (results, bytes, ready, partitions to watch); ``ready`` when
        an error or a divergence must be answered at once. A follower's fetch reads up to the
        log end and moves its state first (`Partition.update_follower`). With last answers, a
        partition the consumer is caught up on (fetch offset at the high watermark, or the last
        stable offset for read_committed) whose high watermark, last stable offset and log
        start offset are those last answered, with no fencing or divergence now, would be left
        out of the answer, so it is only watched for new data: a few comparisons instead of a
        read and a result."""
        partitions = self.partitions
        replica_id = params.replica_id
        follower = replica_id >= 0
        now_ms = _now_ms() if follower else 0
        read_committed = params.read_committed
        magic = params.magic
        zero_copy_min = ZERO_COPY_MIN if magic == 2 else 0
        remaining = params.max_bytes
        size = 0
        ready = False
        watch = []
        results = []
        for topic, fps, last in reads:
            if follower:
                last = None  # a follower's every fetch moves its state
            out = []
            results.append(out)
            for k, fp in enumerate(fps):
                part = partitions.get((topic, fp.partition))
                if part is None or not part.is_leader:
                    ready = True
                    out.append((fp, ReadResult(self.not_hosted_error(topic, fp.partition))))
                    continue
                if last is not None:
                    c = last[k]
                    lg = part.log
                    hwm = lg.high_watermark
                    # The last stable offset is the high watermark unless a transaction is open.
                    lso = part.last_stable_offset if part.producers.ongoing else hwm
                    if (hwm == c.high_watermark and lso == c.last_stable_offset
                            and lg.log_start_offset == c.log_start_offset
                            and fp.fetch_offset == (lso if read_committed else hwm)
                            and fp.fetch_offset >= c.log_start_offset
                            and (fp.current_leader_epoch < 0
                                 or fp.current_leader_epoch == part.leader_epoch)
                            and (fp.last_fetched_epoch < 0
                                 or fp.last_fetched_epoch == lg.epochs.latest_epoch)):
                        watch.append(part)
                        continue
                err = part.check_leader_epoch(fp.current_leader_epoch)
                if not err and magic < 2 and not part.config.message_downconversion_enable:
                    err = errors.UNSUPPORTED_VERSION
                if not err and follower and not part.update_follower(
                        replica_id, fp.fetch_offset, now_ms, fp.log_start_offset):
                    err = errors.NOT_LEADER_OR_FOLLOWER  # not a replica of this partition
                if err:
                    ready = True
                    out.append((fp, ReadResult(err)))
                    continue
                res = part.read(fp.fetch_offset, min(fp.partition_max_bytes, remaining),
                                min_one=size == 0, replica_id=replica_id,
                                last_fetched_epoch=fp.last_fetched_epoch,
                                zero_copy_min=zero_copy_min, read_committed=read_committed)
                if res.error or res.diverging_epoch is not None:
                    ready = True
                else:
                    n = len(res.records)
                    if magic < 2:
                        try:
                            res.records = legacy.down_convert(res.records, magic,
                                                              fp.fetch_offset)
                        except legacy.UnsupportedDownConversion:
                            ready = True
                            out.append((fp, ReadResult(errors.UNSUPPORTED_COMPRESSION_TYPE)))
                            continue
                    size += n
                    remaining = max(0, remaining - n)
                    watch.append(part)
                out.append((fp, res))
        return results, size, ready, watch

    # -- DeleteRecords ---------------------------------------------------------------------------
    async def delete_records(self, requests, timeout_ms: int) -> list[tuple[int, int]]:
        """Move the log start offsets of ``requests``, [(topic, index, offset or
        HIGH_WATERMARK)], one after the other, then wait (a delayed DeleteRecords) until every
        live replica's log starts there (the followers move theirs from the leader's in fetch
        responses), at most ``timeout_ms``. Returns (error, low watermark) per request."""
        deadline = asyncio.get_running_loop().time() + timeout_ms / 1000
        answers = []  # (error, low watermark), or the coroutine waiting for it
        for topic, index, offset in requests:
            part = self.leader_partition(topic, index)
            if part is None:
                answers.append((self.not_hosted_error(topic, index), -1))
                continue
            lg = part.log
            offset = lg.high_watermark if offset == HIGH_WATERMARK else offset
            if self.remote is not None and part.config.remote_storage_enable \
                    and 0 <= offset <= lg.high_watermark:
                # remote segments wholly below go at the remote log manager's next pass
                part.remote_log_start = max(part.remote_log_start, offset)
                if offset <= lg.log_start_offset:
                    answers.append(self._low_watermark_reached(part, offset, deadline))
                    continue
            try:
                # Dropping whole segments unlinks files: off the event loop (the log locks).
                await asyncio.to_thread(lg.delete_records_before, offset)
            except OffsetOutOfRange:
                answers.append((errors.OFFSET_OUT_OF_RANGE, -1))
                continue
            answers.append(self._low_watermark_reached(part, offset, deadline))
        waited = iter(await asyncio.gather(*(a for a in answers if type(a) is not tuple)))
        return [a if type(a) is tuple else next(waited) for a in answers]

    async def _low_watermark_reached(self, part, offset, deadline) -> tuple[int, int]:
        loop = asyncio.get_running_loop()
        while True:
            if not part.is_leader:
                return errors.NOT_LEADER_OR_FOLLOWER, -1
            low = part.low_watermark(self.metadata.brokers)
            if low >= offset:
                return errors.NONE, low
            remaining = deadline - loop.time()
            if remaining <= 0:
                return errors.REQUEST_TIMED_OUT, -1
            await part.deletes_waiting.wait(remaining)
