"""One share-partition (KIP-932): the records of one topic-partition as one share group sees them,
kept by the partition's leader.

The share-partition start offset (SPSO) is the first offset not yet done with; everything below
it was acknowledged, rejected or is out of reach. Between it and ``next_offset`` (one past the
last offset ever handed out, Kafka's SPEO + 1) every record is tracked in *runs*: a range of
offsets in one state, with one delivery count, owner and acquisition lock. A run is as long as
the record batches it came from; it is split only where acknowledgements differ inside it, so
the usual answer - whole batches acquired, whole batches accepted - is a few runs, never a
record at a time::

    AVAILABLE --acquire--> ACQUIRED --accept--> ACKNOWLEDGED
        ^                     |  --reject / gap--> ARCHIVED
        +--release, lock timeout--+  (ARCHIVED instead once the delivery count reached the limit)

Records are acquired for ``lock_ms`` (group.share.record.lock.duration.ms); a lock that expires
makes them available again, or archives them at the delivery count limit. The SPSO moves over
the finished runs at the front. What this class holds is persisted by its owner
(`SharePartitionManager`) after every change: acquired records are written as AVAILABLE with
their new delivery count before they are handed out, so after a crash no record has been
delivered more often than its persisted count says.

Pure logic: no I/O; timers go through the injected clock (``coordinator.runtime.clock``).
"""
from __future__ import annotations

import bisect
import math

AVAILABLE, ACQUIRED, ACKNOWLEDGED, ARCHIVED = 0, 1, 2, 4
STATE_NAMES = {AVAILABLE: "Available", ACQUIRED: "Acquired", ACKNOWLEDGED: "Acknowledged",
               ARCHIVED: "Archived"}
# Acknowledge types of ShareFetch / ShareAcknowledge
GAP, ACCEPT, RELEASE, REJECT, RENEW = 0, 1, 2, 3, 4
_TERMINAL = (ACKNOWLEDGED, ARCHIVED)


class StateError(Exception):
    """An acknowledgement the share-partition refuses; ``code`` is the Kafka error."""

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code


class Acquisition:
    """The records one fetch acquired for one member, and the timer of their lock."""

    __slots__ = ("member", "held", "timer")

    def __init__(self, member: str):
        self.member = member
        self.held = 0  # records still acquired under this lock
        self.timer = None


class Run:
    __slots__ = ("first", "last", "state", "count", "lock")

    def __init__(self, first, last, state, count, lock=None):
        self.first, self.last, self.state, self.count, self.lock = first, last, state, count, lock

    @property
    def member(self) -> str:
        return self.lock.member if self.lock is not None else ""

    def __len__(self):
        return self.last - self.first + 1

    def __repr__(self):
        return f"Run({self.first}-{self.last} {STATE_NAMES[self.state]} x{self.count})"


def _first(run):
    return run.first


class SharePartition:
    """The in-flight records of one share group on one partition. ``on_available()`` is called
    when records become available again (a release or an expired lock), ``on_change()`` when
    the state changed without a request that persists it (an expired lock)."""

    def __init__(self, clock, delivery_limit: int, lock_ms: int, max_locks: int,
                 on_available=lambda: None, on_change=lambda: None):
        self.clock = clock
        self.delivery_limit = delivery_limit
        self.lock_ms = lock_ms
        self.max_locks = max_locks
        self.on_available = on_available
        self.on_change = on_change
        self.start = 0
        self.next_offset = 0
        self.state_epoch = 0
        self.runs: list[Run] = []

    # ------------------------------------------------------------------ persisted state
    def load(self, start: int, state_epoch: int, batches) -> None:
        """Take the state as it was persisted: ``batches`` of (first, last, state, count) with
        states AVAILABLE, ACKNOWLEDGED or ARCHIVED. Records that reached the delivery limit
        come back archived."""
        self.start = self.next_offset = start
        self.state_epoch = state_epoch
        self.runs = []
        for first, last, state, count in sorted(batches):
            if last < start:
                continue
            first = max(first, start)
            if state == AVAILABLE and count >= self.delivery_limit:
                state = ARCHIVED
            if first < self.next_offset:
                continue  # overlapping batches: the first one stands
            if first > self.next_offset:  # not in the state: to be fetched again
                self.runs.append(Run(self.next_offset, first - 1, AVAILABLE, 0))
            self.runs.append(Run(first, last, state, count))
            self.next_offset = last + 1
        self._advance()

    def state_batches(self) -> list[tuple[int, int, int, int]]:
        """What to persist: every tracked run, acquired records as AVAILABLE with their
        delivery count (what they go back to if this leader goes away)."""
        return [(r.first, r.last, AVAILABLE if r.state == ACQUIRED else r.state, r.count)
                for r in self.runs]

    def delivery_complete_count(self) -> int:
        """Records at or past the SPSO that are done with (acknowledged or archived)."""
        return sum(len(r) for r in self.runs if r.state in _TERMINAL)

    def move_start(self, offset: int) -> None:
        """The log starts later now (retention, DeleteRecords): what is below is out of reach."""
        if offset <= self.start:
            return
        self.start = offset
        self.next_offset = max(self.next_offset, offset)
        self._trim_front()

    # ------------------------------------------------------------------ acquiring
    def next_fetch_offset(self) -> int:
        for r in self.runs:
            if r.state == AVAILABLE:
                return r.first
        return self.next_offset

    def acquire(self, member: str, fetch_offset: int, batches, max_records: int,
                strict: bool = False) -> list:
        """Acquire for ``member`` what the ``batches`` read from ``fetch_offset`` hold: an
        iterable of (base offset, last offset, deliverable) in offset order, consumed only as
        far as needed. Available runs they cover and whole new batches past ``next_offset`` are
        acquired, stopping after the batch that reaches ``max_records`` or once
        group.share.partition.max.record.locks records are in flight; ``strict`` (KIP-1206's
        record-limit mode) stops at ``max_records`` exactly, inside a batch if need be (the rest
        of it stays for the next fetch). New batches that are
        not deliverable (control batches, aborted transactions) are archived at once, and so
        are offsets the log no longer has (compacted away: a batch starts past where the
        previous one, or ``fetch_offset``, ended). Returns [(first offset, last offset,
        delivery count)]."""
        acq = Acquisition(member)
        out = []
        n = 0
        first_batch = True
        for base, last, deliverable in batches:
            if first_batch and base > fetch_offset:
                self._archive_available(fetch_offset, base - 1)
            first_batch = False
            if last < self.start:
                continue
            lo = max(base, self.start)
            if lo < self.next_offset:
                n += self._acquire_available(acq, lo, min(last, self.next_offset - 1), out,
                                             max_records - n if strict else math.inf)
            if last >= self.next_offset and not (strict and n >= max_records):
                if self.next_offset - self.start >= self.max_locks:
                    break
                if lo > self.next_offset:  # offsets the log does not have
                    self.runs.append(Run(self.next_offset, lo - 1, ARCHIVED, 0))
                first = max(lo, self.next_offset)
                if deliverable:
                    if strict:
                        last = min(last, first + max_records - n - 1)
                    n += self._new_run(acq, first, last, out)
                else:
                    self.runs.append(Run(first, last, ARCHIVED, 0))
                self.next_offset = last + 1
            if n >= max_records:
                break
        if acq.held:
            acq.timer = self.clock.call_later(self.lock_ms, lambda: self._expire(acq))
        self._advance()
        return _merged(out)

    def _archive_available(self, lo: int, hi: int) -> None:
        i = self._index(lo)
        while i < len(self.runs) and self.runs[i].first <= hi:
            r = self.runs[i]
            if r.state == AVAILABLE:
                r = self._isolate(i, max(lo, r.first), min(hi, r.last))
                r.state = ARCHIVED
                i = self._index(r.first)
            i += 1

    def _acquire_available(self, acq, lo, hi, out, limit=math.inf) -> int:
        """Acquire the available records between ``lo`` and ``hi``, at most ``limit``."""
        n = 0
        i = self._index(lo)
        while i < len(self.runs) and self.runs[i].first <= hi and n < limit:
            r = self.runs[i]
            if r.state == AVAILABLE and r.last >= lo:
                first = max(lo, r.first)
                r = self._isolate(i, first, min(hi, r.last, first + limit - n - 1))
                r.state, r.lock = ACQUIRED, acq
                r.count += 1
                acq.held += len(r)
                n += len(r)
                out.append((r.first, r.last, r.count))
                i = self._index(r.first)
            i += 1
        return n

    def _new_run(self, acq, first, last, out) -> int:
        self.runs.append(Run(first, last, ACQUIRED, 1, acq))
        acq.held += last - first + 1
        out.append((first, last, 1))
        return last - first + 1

    # ------------------------------------------------------------------ acknowledging
    def acknowledge(self, member: str, batches, renew_allowed: bool = False) -> bool:
        """Apply ``member``'s acknowledgements: (first offset, last offset, [types]) with one
        type for the whole range or one per offset. Every offset must be acquired by
        ``member`` (offsets below the SPSO are done with already and skipped); otherwise
        nothing changes and StateError(INVALID_RECORD_STATE or INVALID_REQUEST) is raised.
        Returns whether records became available again."""
        from josefk.wire import errors  # the codes only; this module stays free of the wire

        plan = []
        for first, last, types in batches:
            if last < first or not types or (len(types) != 1 and len(types) != last - first + 1):
                raise StateError(errors.INVALID_REQUEST,
                                 f"bad acknowledgement batch {first}-{last} with "
                                 f"{len(types)} types")
            for t in types:
                if t not in (GAP, ACCEPT, RELEASE, REJECT) and not (t == RENEW and renew_allowed):
                    raise StateError(errors.INVALID_REQUEST, f"invalid acknowledge type {t}")
            if last < self.start:
                continue
            self._check_acquired(member, max(first, self.start), last)
            if len(types) == 1:
                plan.append((max(first, self.start), last, types[0]))
            else:
                for lo, hi, t in _type_ranges(first, types):
                    if hi >= self.start:
                        plan.append((max(lo, self.start), hi, t))
        released = False
        renewed = None
        for lo, hi, t in plan:
            if t == RENEW:
                renewed = renewed or Acquisition(member)
                self._set(lo, hi, lambda r: self._relock(r, renewed))
            else:
                released |= self._set(lo, hi, lambda r, t=t: self._finish(r, t))
        if renewed is not None and renewed.held:
            renewed.timer = self.clock.call_later(self.lock_ms,
                                                  lambda: self._expire(renewed))
        self._advance()
        return released

    def _check_acquired(self, member, lo, hi) -> None:
        from josefk.wire import errors

        if hi >= self.next_offset:
            raise StateError(errors.INVALID_RECORD_STATE,
                             f"offsets {lo}-{hi} were never acquired")
        pos = lo
        i = self._index(lo)
        while pos <= hi:
            if i >= len(self.runs) or self.runs[i].first > pos:
                raise StateError(errors.INVALID_RECORD_STATE, f"offset {pos} is not acquired")
            r = self.runs[i]
            if r.last >= pos:
                if r.state != ACQUIRED or r.member != member:
                    raise StateError(errors.INVALID_RECORD_STATE,
                                     f"offsets {max(pos, r.first)}-{min(hi, r.last)} are "
                                     f"{STATE_NAMES[r.state].lower()}"
                                     + (f" by another member" if r.state == ACQUIRED else ""))
                pos = r.last + 1
            i += 1

    def _finish(self, r: Run, ack_type: int) -> bool:
        r.lock.held -= len(r)
        if r.lock.held <= 0 and r.lock.timer is not None:
            r.lock.timer.cancel()
        r.lock = None
        if ack_type == ACCEPT:
            r.state = ACKNOWLEDGED
        elif ack_type == RELEASE and r.count < self.delivery_limit:
            r.state = AVAILABLE
            return True
        else:
            r.state = ARCHIVED
        return False

    def _relock(self, r: Run, acq: Acquisition) -> bool:
        old = r.lock
        old.held -= len(r)
        if old.held <= 0 and old.timer is not None:
            old.timer.cancel()
        r.lock = acq
        acq.held += len(r)
        return False

    # ------------------------------------------------------------------ releasing
    def release_member(self, member: str, delivered: bool) -> bool:
        """Give back what ``member`` holds (its share session closed): available again, or
        archived at the delivery limit. ``delivered=False`` (the member closed its session in
        an orderly way: it never handed these records to its application) takes back the
        delivery as Kafka does; a member that vanished keeps the count, so a record that kills
        its consumers is not delivered beyond the limit. Returns whether any was released."""
        changed = False
        for r in self.runs:
            if r.state == ACQUIRED and r.member == member:
                if not delivered:
                    r.count = max(0, r.count - 1)
                self._finish(r, RELEASE)
                changed = True
        if changed:
            self._advance()
        return changed

    def _expire(self, acq: Acquisition) -> None:
        if acq.held <= 0:
            return
        for r in self.runs:
            if r.lock is acq:
                self._finish(r, RELEASE)
        self._advance()
        self.on_change()
        self.on_available()

    # ------------------------------------------------------------------ runs
    def _index(self, offset: int) -> int:
        """Index of the run holding ``offset``, or of the first run after it."""
        i = bisect.bisect_right(self.runs, offset, key=_first) - 1
        if i < 0 or self.runs[i].last < offset:
            i += 1
        return i

    def _isolate(self, i: int, lo: int, hi: int) -> Run:
        """Split run ``i`` so that [lo, hi] (inside it) is a run of its own; return that run."""
        r = self.runs[i]
        if r.first < lo:
            self.runs.insert(i, Run(r.first, lo - 1, r.state, r.count, r.lock))
            r.first = lo
            i += 1
        if r.last > hi:
            self.runs.insert(i + 1, Run(hi + 1, r.last, r.state, r.count, r.lock))
            r.last = hi
        return r

    def _set(self, lo: int, hi: int, change) -> bool:
        """Apply ``change(run)`` to the records lo..hi (all tracked, checked beforehand)."""
        any_true = False
        i = self._index(lo)
        while i < len(self.runs) and self.runs[i].first <= hi:
            r = self.runs[i]
            r = self._isolate(i, max(lo, r.first), min(hi, r.last))
            any_true |= change(r)
            i = self._index(r.first) + 1
        return any_true

    def _advance(self) -> None:
        """Merge neighbouring runs in the same finished or available state, and move the SPSO
        over the finished runs at the front."""
        runs = self.runs
        merged = []
        for r in runs:
            p = merged[-1] if merged else None
            if (p is not None and p.last + 1 == r.first and p.state == r.state
                    and p.lock is r.lock and (r.state in _TERMINAL or p.count == r.count)):
                p.last = r.last
                if r.state in _TERMINAL:
                    p.count = max(p.count, r.count)
            else:
                merged.append(r)
        self.runs = merged
        while self.runs and self.runs[0].state in _TERMINAL and self.runs[0].first <= self.start:
            self.start = self.runs.pop(0).last + 1
        if not self.runs:
            self.start = max(self.start, self.next_offset)

    def _trim_front(self) -> None:
        kept = []
        for r in self.runs:
            if r.last < self.start:
                if r.state == ACQUIRED:
                    r.lock.held -= len(r)
                continue
            if r.first < self.start:
                if r.state == ACQUIRED:
                    r.lock.held -= self.start - r.first
                r.first = self.start
            kept.append(r)
        self.runs = kept
        self._advance()


def _type_ranges(first: int, types):
    """Consecutive equal types of a per-offset acknowledgement, as (lo, hi, type)."""
    out = []
    lo = first
    for i in range(1, len(types) + 1):
        if i == len(types) or types[i] != types[i - 1]:
            out.append((lo, first + i - 1, types[i - 1]))
            lo = first + i
    return out


def _merged(acquired):
    """Neighbouring acquired ranges with one delivery count, as one."""
    out = []
    for first, last, count in acquired:
        if out and out[-1][1] + 1 == first and out[-1][2] == count:
            out[-1] = (out[-1][0], last, count)
        else:
            out.append((first, last, count))
    return out
