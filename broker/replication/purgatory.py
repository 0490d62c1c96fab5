"""Requests parked until a partition's replication state moves (Kafka's purgatories): woken by
the change itself, never by polling.

Every partition keeps one watcher list per kind of wait, so waking is a swap of that list on
the partition's own state change:

- ``acks_waiting`` (`AcksWatchers`), the delayed produce (`DelayedProduce`,
  `wait_all_replicated`): a request's acks=all appends wait until each high watermark passes
  their last offset, within the request's timeout; they fail at once when the partition stops
  being led here.
- ``fetches_waiting`` (`Watchers`), a consumer's delayed fetch (`DelayedFetch`): a fetch that
  has not got its min_bytes sleeps until the next move of what a consumer may read (the high
  watermark, the last stable offset), or of its role.
- ``replica_fetches_waiting`` (`Watchers`), a follower's delayed fetch: woken by the next
  append, as followers read up to the log end (the high watermark then waits for them).
- ``deletes_waiting`` (`Watchers`), the delayed DeleteRecords: woken when a follower reports
  another log start offset.

This module parks and wakes; it must not know what moves the state (appends, follower fetches,
role changes: ``replica.py``) nor when a waiting fetch or DeleteRecords is complete (whoever
parked it decides that when woken), nor the wire.
"""
from __future__ import annotations

import asyncio
from bisect import insort
from operator import itemgetter

from josefk.wire import errors

_offset_of = itemgetter(0)


class Watchers:
    """Futures parked on one partition until its next change (a purgatory's watcher list for
    one key)."""

    __slots__ = ("futures",)

    def __init__(self):
        self.futures: list[asyncio.Future] = []

    def wake(self) -> None:
        futures = self.futures
        if futures:
            self.futures = []
            for f in futures:
                if not f.done():
                    f.set_result(None)

    async def wait(self, timeout_s: float) -> None:
        """Sleep until the next ``wake`` or ``timeout_s`` passes."""
        fut = asyncio.get_running_loop().create_future()
        self.futures.append(fut)
        try:
            await asyncio.wait_for(fut, timeout_s)
        except asyncio.TimeoutError:
            pass
        finally:
            if fut in self.futures:
                self.futures.remove(fut)


class AcksWatchers:
    """acks=all appends parked on one partition, in offset order: (offset the high watermark
    must pass, the `DelayedProduce` waiting, its index there)."""

    __slots__ = ("waiting",)

    def __init__(self):
        self.waiting: list[tuple[int, DelayedProduce, int]] = []

    def complete(self, high_watermark: int) -> None:
        """The high watermark moved: release those it passed (a prefix: appends come in
        offset order)."""
        waiting = self.waiting
        n = 0
        for off, produce, i in waiting:
            if off > high_watermark:
                break
            produce.answer(i, errors.NONE)
            n += 1
        if n:
            del waiting[:n]

    def fail(self, code: int) -> None:
        waiting, self.waiting = self.waiting, []
        for _, produce, i in waiting:
            produce.answer(i, code)


class DelayedProduce:
    """One request's acks=all appends, parked on their partitions (`AcksWatchers`) until each
    high watermark passes its offset: one future and one timer for the request, however many
    partitions it wrote (no task per partition)."""

    __slots__ = ("codes", "remaining", "future", "timer", "parts")

    def __init__(self, waits, timeout_ms: int):
        loop = asyncio.get_running_loop()
        self.codes = [None] * len(waits)
        self.remaining = len(waits)
        self.future = loop.create_future()
        self.parts = [part for part, _ in waits]
        for i, (part, next_offset) in enumerate(waits):
            # in offset order, even for a wait registered after a later append's
            insort(part.acks_waiting.waiting, (next_offset, self, i), key=_offset_of)
        self.timer = loop.call_later(timeout_ms / 1000, self._expire)

    def answer(self, i: int, code: int) -> None:
        if self.codes[i] is None:
            self.codes[i] = code
            self.remaining -= 1
            if not self.remaining:
                self.timer.cancel()
                if not self.future.done():
                    self.future.set_result(None)

    def _expire(self) -> None:
        """The request's timeout: those not replicated yet answer REQUEST_TIMED_OUT."""
        for part in set(self.parts):
            acks = part.acks_waiting
            acks.waiting = [w for w in acks.waiting if w[1] is not self]
        self.codes = [errors.REQUEST_TIMED_OUT if c is None else c for c in self.codes]
        self.remaining = 0
        if not self.future.done():
            self.future.set_result(None)

    async def wait(self) -> list[int]:
        """Each append's code: NONE once replicated, REQUEST_TIMED_OUT, or the error its
        partition failed the waits with (NOT_LEADER_OR_FOLLOWER: leadership moved)."""
        try:
            await self.future
        finally:
            if self.remaining:  # cancelled (the connection closed): stop watching
                self.timer.cancel()
                self._expire()
        return self.codes


async def wait_all_replicated(waits, timeout_ms: int) -> list[int]:
    """The delayed produce of ``waits``, [(partition, offset its high watermark must pass)],
    within ``timeout_ms``. Returns the error code to answer for each: NONE, REQUEST_TIMED_OUT,
    NOT_LEADER_OR_FOLLOWER (leadership moved), or NOT_ENOUGH_REPLICAS_AFTER_APPEND when the
    ISR is smaller than min.insync.replicas by then (as Kafka's
    checkEnoughReplicasReachOffset)."""
    codes = [errors.NONE] * len(waits)
    parked = [k for k, (part, off) in enumerate(waits) if not part.replicated(off)]
    if parked:
        got = await DelayedProduce([waits[k] for k in parked], timeout_ms).wait()
        for k, code in zip(parked, got):
            codes[k] = code
    return [errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND
            if not code and len(part.isr) < part.min_insync else code
            for (part, _), code in zip(waits, codes)]


async def wait_replicated(part, next_offset: int, timeout_ms: int) -> int:
    """`wait_all_replicated` of one append."""
    return (await wait_all_replicated([(part, next_offset)], timeout_ms))[0]


class DelayedFetch:
    """A fetch parked on the partitions it reads, woken by the next change of any of them
    (a follower's: an append; a consumer's: what it may read moved). Registering happens at
    construction, synchronously, so no change can slip in before the wait begins."""

    __slots__ = ("lists", "future")

    def __init__(self, partitions, follower: bool = False):
        self.future = asyncio.get_running_loop().create_future()
        self.lists = [p.replica_fetches_waiting.futures if follower else p.fetches_waiting.futures
                      for p in partitions]
        for futures in self.lists:
            futures.append(self.future)

    def wake(self, *_) -> None:
        """End the wait now (something else the fetch waits for happened)."""
        if not self.future.done():
            self.future.set_result(None)

    async def wait(self, timeout_s: float) -> None:
        """Sleep until an append, a ``wake`` or ``timeout_s`` passes, then stop watching."""
        try:
            if timeout_s > 0:
                await asyncio.wait_for(self.future, timeout_s)
        except asyncio.TimeoutError:
            pass
        finally:
            for futures in self.lists:
                try:
                    futures.remove(self.future)
                except ValueError:
                    pass
