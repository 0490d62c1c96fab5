"""Requests parked until a partition's replication state moves (Kafka's purgatories): woken by
the change itself, never by polling.

Every partition keeps one watcher list per kind of wait, so waking is a swap of that list on
the partition's own state change:

- ``acks_waiting`` (`AcksWatchers`), the delayed produce (`wait_replicated`): an acks=all
  append waits until the high watermark passes its last offset, within the request's timeout;
  it fails at once when the partition stops being led here.
- ``fetches_waiting`` (`Watchers`), the delayed fetch (`DelayedFetch`): a fetch that has not
  got its min_bytes sleeps until the next append to any partition it reads.
- ``deletes_waiting`` (`Watchers`), the delayed DeleteRecords: woken when a follower reports
  another log start offset.

This module parks and wakes; it must not know what moves the state (appends, follower fetches,
role changes: ``replica.py``) nor when a waiting fetch or DeleteRecords is complete (whoever
parked it decides that when woken), nor the wire.
"""
from __future__ import annotations

import asyncio

from josefk.wire import errors


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
    """acks=all appends parked on one partition: (offset the high watermark must pass, future
    told the error code to answer)."""

    __slots__ = ("waiting",)

    def __init__(self):
        self.waiting: list[tuple[int, asyncio.Future]] = []

    def complete(self, high_watermark: int) -> None:
        """The high watermark moved: release those it passed."""
        keep = []
        for off, fut in self.waiting:
            if off <= high_watermark:
                if not fut.done():
                    fut.set_result(errors.NONE)
            else:
                keep.append((off, fut))
        self.waiting = keep

    def fail(self, code: int) -> None:
        waiting, self.waiting = self.waiting, []
        for _, fut in waiting:
            if not fut.done():
                fut.set_result(code)


async def wait_replicated(part, next_offset: int, timeout_ms: int) -> int:
    """The delayed produce: wait until ``part``'s high watermark passes ``next_offset``. Returns
    the error code to answer: NONE, REQUEST_TIMED_OUT, NOT_LEADER_OR_FOLLOWER (leadership
    moved), or NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR is smaller than
    min.insync.replicas by then (as Kafka's checkEnoughReplicasReachOffset)."""
    if not part.replicated(next_offset):
        acks = part.acks_waiting
        fut = asyncio.get_running_loop().create_future()
        acks.waiting.append((next_offset, fut))
        try:
            code = await asyncio.wait_for(fut, timeout_ms / 1000)
        except asyncio.TimeoutError:
            return errors.REQUEST_TIMED_OUT
        finally:
            acks.waiting = [w for w in acks.waiting if w[1] is not fut]
        if code:
            return code
    if len(part.isr) < part.min_insync:
        return errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND
    return errors.NONE


class DelayedFetch:
    """A fetch parked on the partitions it reads, woken by the next append to any of them.
    Registering happens at construction, synchronously, so no append can slip in before the
    wait begins."""

    __slots__ = ("partitions", "future")

    def __init__(self, partitions):
        self.partitions = partitions
        self.future = asyncio.get_running_loop().create_future()
        for p in partitions:
            p.fetches_waiting.futures.append(self.future)

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
            for p in self.partitions:
                try:
                    p.fetches_waiting.futures.remove(self.future)
                except ValueError:
                    pass
