"""Time for the coordinator: "now" in milliseconds and one-shot timers.

Every timeout of the group protocol (session, rebalance, initial rebalance delay, pending
member, pending sync, offsets retention check) goes through this interface, so the state
machine can be driven in tests by :class:`FakeClock` without sleeping.

Interface (duck-typed)::

    clock.now_ms() -> int                          # wall-clock milliseconds (commit timestamps)
    clock.call_later(delay_ms, fn) -> handle       # run fn() once, delay_ms from now
    handle.cancel()                                # idempotent; a cancelled timer never fires
"""
from __future__ import annotations

import asyncio
import heapq
import itertools
import time


class AsyncioClock:
    """The real clock: ``time.time()`` and timers on the running asyncio loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop | None = None):
        self._loop = loop

    def now_ms(self) -> int:
        return int(time.time() * 1000)

    def call_later(self, delay_ms: float, fn):
        loop = self._loop or asyncio.get_running_loop()
        return loop.call_later(max(0.0, delay_ms) / 1000.0, fn)


class _FakeTimer:
    __slots__ = ("deadline", "seq", "fn", "cancelled")

    def __init__(self, deadline, seq, fn):
        self.deadline = deadline
        self.seq = seq
        self.fn = fn
        self.cancelled = False

    def cancel(self):
        self.cancelled = True

    def __lt__(self, other):
        return (self.deadline, self.seq) < (other.deadline, other.seq)


class FakeClock:
    """A manual clock for tests: time only moves on :meth:`advance`.

    ``advance(ms)`` fires every timer that falls due, in deadline order (ties in scheduling
    order), setting ``now`` to each timer's deadline before calling it; timers scheduled by a
    callback fire in the same ``advance`` if they are due before its end.
    """

    def __init__(self, start_ms: int = 1_000_000):
        self._now = start_ms
        self._timers: list[_FakeTimer] = []
        self._seq = itertools.count()

    def now_ms(self) -> int:
        return self._now

    def call_later(self, delay_ms: float, fn) -> _FakeTimer:
        t = _FakeTimer(self._now + max(0, int(delay_ms)), next(self._seq), fn)
        heapq.heappush(self._timers, t)
        return t

    def advance(self, ms: int) -> None:
        end = self._now + ms
        while self._timers and self._timers[0].deadline <= end:
            t = heapq.heappop(self._timers)
            if t.cancelled:
                continue
            self._now = max(self._now, t.deadline)
            t.fn()
        self._now = end

    def pending(self) -> int:
        """Number of timers not yet fired nor cancelled (for tests)."""
        return sum(1 for t in self._timers if not t.cancelled)
