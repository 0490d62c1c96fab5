"""Per-partition producer state: last sequences per producer id, and transactions.

Mirrors Kafka's ProducerStateManager rules for one partition: the last five batches of each
producer are remembered so a retried batch is answered with its original offsets; a gap in
sequence numbers is OUT_OF_ORDER_SEQUENCE_NUMBER; an older epoch is INVALID_PRODUCER_EPOCH.

Transactions: a producer's first transactional batch opens its transaction at that offset; its
COMMIT or ABORT marker (a control batch) closes it. The first offset of the oldest open
transaction bounds the last stable offset (LSO); aborted transactions are remembered as
(producer id, first offset, marker offset) so read_committed fetches can list them. All of it
comes from batch headers (and the one record of each marker), never per data record.

An aborted transaction is forgotten with its marker: once the segment holding the marker is
deleted (retention, DeleteRecords; trimmed at each snapshot) or the compactor removed the marker
(all its data gone): a listed transaction without its marker would make readers drop that
producer's later transactions. Not at the log start offset: after a crash before its checkpoint
the log starts again at the oldest segment, whose aborted records must stay hidden.
"""
from __future__ import annotations

import bisect
import collections
import json
import threading

from josefk.wire import errors
from josefk.wire.records import CONTROL_ABORT, iter_records, parse_control_record

CACHED_BATCHES = 5
SEQ_MOD = 1 << 31


class ProducerEntry:
    __slots__ = ("epoch", "batches", "last_timestamp", "txn_first_offset", "coordinator_epoch")

    def __init__(self, epoch):
        self.epoch = epoch
        # (first_seq, last_seq, first_offset, last_offset), oldest first
        self.batches = collections.deque(maxlen=CACHED_BATCHES)
        self.last_timestamp = -1
        self.txn_first_offset = -1  # first offset of the open transaction, -1 if none
        self.coordinator_epoch = -1

    @property
    def last_seq(self) -> int:
        return self.batches[-1][1] if self.batches else -1


def marker_of(buf, h) -> tuple[int, int]:
    """``(CONTROL_COMMIT or CONTROL_ABORT, coordinator epoch)`` of the control batch ``h`` in
    ``buf``."""
    for rec in iter_records(buf, h):
        kind, coordinator_epoch = parse_control_record(rec)
        return kind, -1 if coordinator_epoch is None else coordinator_epoch
    return CONTROL_ABORT, -1


class ProducerStateTable:
    def __init__(self):
        self.producers: dict[int, ProducerEntry] = {}
        self.ongoing: dict[int, int] = {}  # producer id -> first offset of its open transaction
        self.aborted: list[tuple[int, int, int]] = []  # (pid, first, last), by last offset
        self._aborted_last: list[int] = []
        self._aborted_lock = threading.Lock()  # the compactor forgets entries from its thread

    def check(self, h):
        """Vet a batch header before appending: returns ``(error, duplicate)`` where
        ``duplicate`` is the original ``(first_offset, last_offset)`` of a retried batch."""
        entry = self.producers.get(h.producer_id)
        if entry is None:
            return errors.NONE, None  # unknown producer (new, or its state expired): accept
        if h.producer_epoch < entry.epoch:
            return errors.INVALID_PRODUCER_EPOCH, None
        first, last = h.base_sequence, h.last_sequence
        if first < 0:
            return errors.NONE, None  # no sequence (a coordinator's transactional write)
        if h.producer_epoch > entry.epoch:
            return (errors.NONE if first == 0 else errors.OUT_OF_ORDER_SEQUENCE_NUMBER), None
        for b in entry.batches:
            if b[0] == first and b[1] == last:
                return errors.NONE, (b[2], b[3])
        if entry.batches and first != (entry.last_seq + 1) % SEQ_MOD:
            return errors.OUT_OF_ORDER_SEQUENCE_NUMBER, None
        return errors.NONE, None

    def _entry(self, pid, epoch) -> ProducerEntry:
        entry = self.producers.get(pid)
        if entry is None or epoch > entry.epoch:
            new = self.producers[pid] = ProducerEntry(epoch)
            if entry is not None:
                new.txn_first_offset = entry.txn_first_offset
                new.coordinator_epoch = entry.coordinator_epoch
            entry = new
        return entry

    def update(self, h, first_offset: int, last_offset: int) -> None:
        entry = self._entry(h.producer_id, h.producer_epoch)
        if h.base_sequence >= 0:
            entry.batches.append((h.base_sequence, h.last_sequence, first_offset, last_offset))
        entry.last_timestamp = h.max_timestamp
        if h.is_transactional and entry.txn_first_offset < 0:
            entry.txn_first_offset = first_offset
            self.ongoing[h.producer_id] = first_offset

    def check_marker(self, producer_id: int, producer_epoch: int, coordinator_epoch: int) -> int:
        """Kafka's checks of a WriteTxnMarkers entry: an older producer epoch was fenced, and a
        coordinator epoch older than the last marker's comes from a coordinator that lost its
        partition of ``__transaction_state`` (TRANSACTION_COORDINATOR_FENCED)."""
        entry = self.producers.get(producer_id)
        if entry is None:
            return errors.NONE
        if producer_epoch < entry.epoch:
            return errors.INVALID_PRODUCER_EPOCH
        if coordinator_epoch < entry.coordinator_epoch:
            return errors.TRANSACTION_COORDINATOR_FENCED
        return errors.NONE

    def end_txn(self, producer_id: int, producer_epoch: int, kind: int, marker_offset: int,
                coordinator_epoch: int = -1, timestamp: int = -1) -> None:
        """A COMMIT/ABORT marker was appended at ``marker_offset``."""
        entry = self._entry(producer_id, producer_epoch)
        entry.coordinator_epoch = coordinator_epoch
        entry.last_timestamp = timestamp
        first = entry.txn_first_offset
        entry.txn_first_offset = -1
        self.ongoing.pop(producer_id, None)
        if kind == CONTROL_ABORT and first >= 0:
            with self._aborted_lock:
                self.aborted.append((producer_id, first, marker_offset))
                self._aborted_last.append(marker_offset)

    def apply(self, h, buf) -> None:
        """Account for a batch already in the log (``h.pos`` locates it in ``buf``)."""
        if h.producer_id < 0:
            return
        if h.is_control:
            kind, coordinator_epoch = marker_of(buf, h)
            self.end_txn(h.producer_id, h.producer_epoch, kind, h.base_offset,
                         coordinator_epoch, h.max_timestamp)
        else:
            self.update(h, h.base_offset, h.last_offset)

    def rebuild(self, headers, read_batch) -> None:
        """Replay batch headers (already carrying their offsets) read back from the log;
        ``read_batch(h)`` returns the bytes of a control batch, whose marker type is needed."""
        for h in headers:
            if h.producer_id >= 0:
                if h.is_control:
                    buf = read_batch(h)
                    h.pos = 0
                    self.apply(h, buf)
                else:
                    self.update(h, h.base_offset, h.last_offset)

    def remove_expired(self, now_ms: int, expiration_ms: int) -> list[int]:
        """Forget producers without an open transaction whose last write is older than
        ``expiration_ms`` (Kafka's producer.id.expiration.ms, KIP-854); returns their ids."""
        out = [pid for pid, e in self.producers.items()
               if e.txn_first_offset < 0 and now_ms - e.last_timestamp >= expiration_ms]
        for pid in out:
            del self.producers[pid]
        return out

    def first_unstable_offset(self) -> int | None:
        return min(self.ongoing.values()) if self.ongoing else None

    def aborted_between(self, start: int, end: int) -> list[tuple[int, int]]:
        """(producer id, first offset) of aborted transactions overlapping [start, end)."""
        with self._aborted_lock:
            i = bisect.bisect_left(self._aborted_last, start)
            return [(pid, first) for pid, first, _last in self.aborted[i:] if first < end]

    def _keep_aborted(self, keep) -> None:
        with self._aborted_lock:
            self.aborted = [a for a in self.aborted if keep(a)]
            self._aborted_last = [a[2] for a in self.aborted]

    def trim_aborted(self, first_offset: int) -> None:
        """Forget aborted transactions whose marker is below ``first_offset`` (no longer in
        the log)."""
        aborted = self.aborted  # (the compactor's thread may replace the list)
        if aborted and aborted[0][2] < first_offset:
            self._keep_aborted(lambda a: a[2] >= first_offset)

    def markers_removed(self, log_, offsets) -> None:
        """The compactor removed the markers at ``offsets``: forget their aborted transactions,
        here and in the snapshots on disk (which would bring them back at the next start)."""
        gone = set(offsets)
        self._keep_aborted(lambda a: a[2] not in gone)

        def without(data: bytes) -> bytes:
            state = json.loads(data)
            if "aborted" in state:
                state["aborted"] = [a for a in state["aborted"] if a[2] not in gone]
            return json.dumps(state).encode()
        log_.rewrite_snapshots(without)

    # -- snapshots (Kafka's <offset>.snapshot: state up to an offset, so start-up replays only
    # -- the batches after it; the aborted transactions stand in for Kafka's .txnindex) --------
    def snapshot(self, first_offset: int = 0) -> bytes:
        self.trim_aborted(first_offset)
        return json.dumps({
            "producers": {str(pid): [e.epoch, e.last_timestamp, list(e.batches),
                                     e.txn_first_offset, e.coordinator_epoch]
                          for pid, e in self.producers.items()},
            "aborted": self.aborted}).encode()

    def load(self, log_) -> None:
        """Restore from the log's newest snapshot, then replay the batches after it; the log
        then snapshots this table at every roll and at clean shutdown."""
        log_.snapshot_source = lambda: self.snapshot(log_.first_segment_offset)
        log_.on_markers_removed = lambda offsets: self.markers_removed(log_, offsets)
        if log_.log_end_offset == 0:  # nothing written: no state (and no directory listing)
            return
        snap = log_.latest_snapshot()
        start = 0
        if snap is not None:
            start, data = snap
            data = json.loads(data)
            if "producers" not in data:  # written before transactions: producers only
                data = {"producers": data, "aborted": []}
            for pid, (epoch, last_ts, batches, *txn) in data["producers"].items():
                entry = self.producers[int(pid)] = ProducerEntry(epoch)
                entry.last_timestamp = last_ts
                entry.batches.extend(tuple(b) for b in batches)
                if txn:
                    entry.txn_first_offset, entry.coordinator_epoch = txn
                    if entry.txn_first_offset >= 0:
                        self.ongoing[int(pid)] = entry.txn_first_offset
            self.aborted = [tuple(a) for a in data["aborted"]]
            self._aborted_last = [a[2] for a in self.aborted]
        self.rebuild(log_.iter_headers(start), lambda h: next(iter(
            log_.iter_batches(h.base_offset, h.base_offset + 1)))[1])
        self.trim_aborted(log_.first_segment_offset)
