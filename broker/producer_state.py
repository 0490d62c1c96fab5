"""Per-partition producer state: last sequences per producer id, and transactions.

Mirrors Kafka's ProducerStateManager rules for one partition: the last five batches of each
producer are remembered so a retried batch is answered with its original offsets; a gap in
sequence numbers is OUT_OF_ORDER_SEQUENCE_NUMBER; an older epoch is INVALID_PRODUCER_EPOCH.

Transactions: a producer's first transactional batch opens its transaction at that offset; its
COMMIT or ABORT marker (a control batch) closes it. The first offset of the oldest open
transaction bounds the last stable offset (LSO); aborted transactions are remembered as
(producer id, first offset, marker offset) so read_committed fetches can list them. All of it
comes from batch headers (and the one record of each marker), never per data record.
"""
from __future__ import annotations

import bisect
import collections
import json

from wire import errors
from wire.records import CONTROL_ABORT, iter_records, parse_control_record

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


def marker_kind(buf, h) -> int:
    """CONTROL_COMMIT or CONTROL_ABORT: the type of the control batch ``h`` in ``buf``."""
    for rec in iter_records(buf, h):
        return parse_control_record(rec)[0]
    return CONTROL_ABORT


class ProducerStateTable:
    def __init__(self):
        self.producers: dict[int, ProducerEntry] = {}
        self.ongoing: dict[int, int] = {}  # producer id -> first offset of its open transaction
        self.aborted: list[tuple[int, int, int]] = []  # (pid, first, last), by last offset
        self._aborted_last: list[int] = []

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

    def check_marker(self, producer_id: int, producer_epoch: int) -> int:
        entry = self.producers.get(producer_id)
        if entry is not None and producer_epoch < entry.epoch:
            return errors.INVALID_PRODUCER_EPOCH
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
            self.aborted.append((producer_id, first, marker_offset))
            self._aborted_last.append(marker_offset)

    def apply(self, h, buf) -> None:
        """Account for a batch already in the log (``h.pos`` locates it in ``buf``)."""
        if h.producer_id < 0:
            return
        if h.is_control:
            self.end_txn(h.producer_id, h.producer_epoch, marker_kind(buf, h), h.base_offset,
                         timestamp=h.max_timestamp)
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

    def first_unstable_offset(self) -> int | None:
        return min(self.ongoing.values()) if self.ongoing else None

    def aborted_between(self, start: int, end: int) -> list[tuple[int, int]]:
        """(producer id, first offset) of aborted transactions overlapping [start, end)."""
        i = bisect.bisect_left(self._aborted_last, start)
        return [(pid, first) for pid, first, _last in self.aborted[i:] if first < end]

    # -- snapshots (Kafka's <offset>.snapshot: state up to an offset, so start-up replays only
    # -- the batches after it; the aborted transactions stand in for Kafka's .txnindex) --------
    def snapshot(self) -> bytes:
        return json.dumps({
            "producers": {str(pid): [e.epoch, e.last_timestamp, list(e.batches),
                                     e.txn_first_offset, e.coordinator_epoch]
                          for pid, e in self.producers.items()},
            "aborted": self.aborted}).encode()

    def load(self, log_) -> None:
        """Restore from the log's newest snapshot, then replay the batches after it; the log
        then snapshots this table at every roll and at clean shutdown."""
        log_.snapshot_source = self.snapshot
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
