"""The offset-syncs topic's two ends, as Kafka's OffsetSyncWriter and OffsetSyncStore.

The writer (in each MirrorSourceTask) decides per partition when a replicated record's
upstream/downstream offset pair is worth a sync: the first of the task's lifetime, one whose
translation would otherwise lag ``offset.lag.max`` or more, one after a gap upstream (records
skipped: compaction, transaction markers) and one after the downstream topic went back. Syncs
sent at once are "pending"; the others are "delayed" until the task's next offset commit. At
most ten syncs are in flight.

The store (in each MirrorCheckpointTask) keeps, per partition, 64 syncs spaced roughly
exponentially below the latest (slot i within 2^i of slot 0, distinct slots at least
2^(i-2) apart), so that older group offsets still translate closely, and translates an upstream
offset to the downstream offset of the closest sync at or before it (one past it when the
group is beyond the sync), or -1 when every sync kept is ahead of it."""
from __future__ import annotations

import threading
from typing import Callable

from josefk.mirror.records import OffsetSync

MAX_OUTSTANDING_OFFSET_SYNCS = 10
_SLOTS = 64


class PartitionState:
    __slots__ = ("previous_upstream", "previous_downstream", "last_sync_downstream",
                 "max_offset_lag", "should_sync")

    def __init__(self, max_offset_lag: int):
        self.previous_upstream = self.previous_downstream = self.last_sync_downstream = -1
        self.max_offset_lag = max_offset_lag
        self.should_sync = False

    def update(self, upstream: int, downstream: int) -> bool:
        """Whether a sync should be sent now for this pair."""
        if (self.last_sync_downstream == -1
                # translation lands one past the last sync, hence the +1
                or downstream - (self.last_sync_downstream + 1) >= self.max_offset_lag
                or upstream - self.previous_upstream != 1
                or downstream < self.previous_downstream):
            self.last_sync_downstream = downstream
            self.should_sync = True
        self.previous_upstream, self.previous_downstream = upstream, downstream
        return self.should_sync


class OffsetSyncWriter:
    """``send(sync, done)`` writes one sync and calls ``done()`` once it is acknowledged or
    failed."""

    def __init__(self, send: Callable[[OffsetSync, Callable[[], None]], None],
                 max_offset_lag: int):
        self.send, self.max_offset_lag = send, max_offset_lag
        self.states: dict[tuple[str, int], PartitionState] = {}
        self.pending: dict[tuple[str, int], OffsetSync] = {}
        self.delayed: dict[tuple[str, int], tuple[int, int]] = {}  # (upstream, downstream)
        self.outstanding = 0
        self.lock = threading.Lock()

    def maybe_queue(self, topic: str, partition: int, upstream: int, downstream: int) -> bool:
        """True when a sync of this pair is pending (to fire now); else it is the delayed
        one of its partition (kept as the pair: no OffsetSync made for most records)."""
        tp = (topic, partition)
        state = self.states.get(tp)
        if state is None:
            state = self.states[tp] = PartitionState(self.max_offset_lag)
        with self.lock:
            if state.update(upstream, downstream):
                self.delayed.pop(tp, None)
                self.pending[tp] = OffsetSync(topic, partition, upstream, downstream)
                state.should_sync = False
                return True
            self.delayed[tp] = (upstream, downstream)
            return False

    def promote_delayed(self) -> None:
        with self.lock:
            for (topic, partition), pair in self.delayed.items():
                self.pending[topic, partition] = OffsetSync(topic, partition, *pair)
            self.delayed.clear()

    def fire_pending(self) -> None:
        while True:
            with self.lock:
                if not self.pending or self.outstanding >= MAX_OUTSTANDING_OFFSET_SYNCS:
                    return
                sync = self.pending.pop(next(iter(self.pending)))
                self.outstanding += 1
            self.send(sync, self._release)

    def _release(self) -> None:
        with self.lock:
            self.outstanding -= 1


def _spaced_below(newer: OffsetSync, older: OffsetSync, i: int, j: int) -> bool:
    """Slot j's sync is recent enough below slot i's: newer.upstream <= older.upstream + 2^j
    - 2^i."""
    bound = older.upstream_offset + (1 << j) - (1 << i)
    return newer is older or bound < 0 or newer.upstream_offset <= bound


def _spaced_above(newer: OffsetSync, older: OffsetSync, i: int) -> bool:
    """Slot i's sync is far enough above the next one: newer.upstream >= older.upstream +
    2^max(i-2, 0)."""
    bound = older.upstream_offset + (1 << max(i - 2, 0))
    return newer is older or (bound >= 0 and newer.upstream_offset >= bound)


class OffsetSyncStore:
    """Syncs read from the offset-syncs topic; ``read_to_end`` is set once the topic was read
    to its end: before that nothing is translated."""

    def __init__(self):
        self.syncs: dict[tuple[str, int], list[OffsetSync]] = {}
        self.read_to_end = False

    def handle(self, sync: OffsetSync) -> None:
        tp = (sync.topic, sync.partition)
        original = self.syncs.get(tp)
        if (original is None or not self.read_to_end
                or original[0].upstream_offset > sync.upstream_offset):
            # the first, the initial read (only its latest sync may translate, so that
            # translation never goes back) or a rewind (the older syncs are invalid)
            self.syncs[tp] = [sync] * _SLOTS
            return
        syncs = original.copy()  # readers on other threads see the old list or the new one
        syncs[0] = sync
        replacement, candidate = sync, 0
        for current in range(1, _SLOTS):
            previous = current - 1
            # prefer an older sync of the original list as the replacement: more distinct
            # syncs are kept, and translation of older offsets is closer
            while True:
                old = original[candidate]
                recent = _spaced_below(syncs[previous], old, previous, current)
                apart_from_previous = _spaced_above(syncs[previous], old, previous)
                apart_from_next = (current + 1 >= _SLOTS
                                   or _spaced_above(old, syncs[current + 1], current))
                duplicate = candidate + 1 < _SLOTS and original[candidate + 1] is old
                promote = recent and apart_from_previous and apart_from_next
                if promote:
                    replacement = old
                skip = duplicate or not apart_from_previous
                if promote or skip:
                    candidate += 1
                if not (candidate < current and skip):
                    break
            if _spaced_below(syncs[previous], syncs[current], previous, current):
                break  # this slot and all later ones are still valid
            syncs[current] = replacement
        self.syncs[tp] = syncs

    def translate_downstream(self, topic: str, partition: int, upstream: int) -> int | None:
        """The downstream offset for a group at ``upstream``; -1 when it is older than every
        sync kept; None when it cannot be translated (no sync, or not read to the end)."""
        if not self.read_to_end:
            return None
        syncs = self.syncs.get((topic, partition))
        if syncs is None:
            return None
        sync = next((s for s in syncs if s.upstream_offset <= upstream), syncs[-1])
        if sync.upstream_offset > upstream:
            return -1
        return sync.downstream_offset + (0 if upstream == sync.upstream_offset else 1)
