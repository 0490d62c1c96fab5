"""Run a handler's coroutine inline up to its first real wait, as Python 3.12's eager tasks do.

Most requests handled by a coroutine never wait (an OffsetCommit on a single broker, whose
append is acknowledged at once; a DeleteGroups of an empty group ...). Run inline they cost no
Task, no loop iteration, and their answer leaves with the others of the same read. Only a
coroutine that suspends gets a Task, which carries on from where the inline step stopped.
"""
from __future__ import annotations

import asyncio


def start(coro):
    """Run ``coro`` until it first suspends. Returns its result if it finished (an exception
    it raised propagates), else an `asyncio.Task` that finishes it."""
    try:
        waiting = coro.send(None)
    except StopIteration as done:
        return done.value
    return asyncio.ensure_future(_rest(coro, waiting))


async def _rest(coro, waiting):
    """What a Task does between two steps of ``coro``: wait for the future it yielded (None
    for a bare yield, as ``sleep(0)``), then resume it. The coroutine reads that future's
    outcome itself; a cancellation of this task while the future is pending is thrown in."""
    while True:
        error = None
        try:
            if waiting is None:
                await asyncio.sleep(0)
            else:
                waiting._asyncio_future_blocking = False  # taken over, as Task does
                await waiting
        except BaseException as e:  # noqa: BLE001 - handed to the coroutine, as Task does
            if waiting is None or not waiting.done():
                error = e
        try:
            waiting = coro.send(None) if error is None else coro.throw(error)
        except StopIteration as done:
            return done.value
