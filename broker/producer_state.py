"""Per-partition idempotent producer state: last sequences per producer id.

Mirrors Kafka's ProducerStateManager rules for one partition: the last five batches of each
producer are remembered so a retried batch is answered with its original offsets; a gap in
sequence numbers is OUT_OF_ORDER_SEQUENCE_NUMBER; an older epoch is INVALID_PRODUCER_EPOCH.
"""
from __future__ import annotations

import collections
import json

from wire import errors

CACHED_BATCHES = 5
SEQ_MOD = 1 << 31


class ProducerEntry:
    __slots__ = ("epoch", "batches", "last_timestamp")

    def __init__(self, epoch):
        self.epoch = epoch
        # (first_seq, last_seq, first_offset, last_offset), oldest first
        self.batches = collections.deque(maxlen=CACHED_BATCHES)
        self.last_timestamp = -1

    @property
    def last_seq(self) -> int:
        return self.batches[-1][1] if self.batches else -1


class ProducerStateTable:
    def __init__(self):
        self.producers: dict[int, ProducerEntry] = {}

    def check(self, h):
        """Vet a batch header before appending: returns ``(error, duplicate)`` where
        ``duplicate`` is the original ``(first_offset, last_offset)`` of a retried batch."""
        entry = self.producers.get(h.producer_id)
        if entry is None:
            return errors.NONE, None  # unknown producer (new, or its state expired): accept
        if h.producer_epoch < entry.epoch:
            return errors.INVALID_PRODUCER_EPOCH, None
        first, last = h.base_sequence, h.last_sequence
        if h.producer_epoch > entry.epoch:
            return (errors.NONE if first == 0 else errors.OUT_OF_ORDER_SEQUENCE_NUMBER), None
        for b in entry.batches:
            if b[0] == first and b[1] == last:
                return errors.NONE, (b[2], b[3])
        if entry.batches and first != (entry.last_seq + 1) % SEQ_MOD:
            return errors.OUT_OF_ORDER_SEQUENCE_NUMBER, None
        return errors.NONE, None

    def update(self, h, first_offset: int, last_offset: int) -> None:
        entry = self.producers.get(h.producer_id)
        if entry is None or h.producer_epoch > entry.epoch:
            entry = self.producers[h.producer_id] = ProducerEntry(h.producer_epoch)
        entry.batches.append((h.base_sequence, h.last_sequence, first_offset, last_offset))
        entry.last_timestamp = h.max_timestamp

    def rebuild(self, headers) -> None:
        """Replay batch headers (already carrying their offsets) read back from the log."""
        for h in headers:
            if h.producer_id >= 0 and not h.is_control:
                self.update(h, h.base_offset, h.last_offset)

    # -- snapshots (Kafka's <offset>.snapshot: state up to an offset, so start-up replays only
    # -- the batches after it) -----------------------------------------------------------------
    def snapshot(self) -> bytes:
        return json.dumps({str(pid): [e.epoch, e.last_timestamp, list(e.batches)]
                           for pid, e in self.producers.items()}).encode()

    def load(self, log_) -> None:
        """Restore from the log's newest snapshot, then replay the batches after it; the log
        then snapshots this table at every roll and at clean shutdown."""
        snap = log_.latest_snapshot()
        start = 0
        if snap is not None:
            start, data = snap
            for pid, (epoch, last_ts, batches) in json.loads(data).items():
                entry = self.producers[int(pid)] = ProducerEntry(epoch)
                entry.last_timestamp = last_ts
                entry.batches.extend(tuple(b) for b in batches)
        self.rebuild(log_.iter_headers(start))
        log_.snapshot_source = self.snapshot
