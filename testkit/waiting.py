"""Waiting in asyncio tests for a condition that becomes true."""
from __future__ import annotations

import asyncio
import time


async def until(check, timeout: float = 30.0, what: str = "the condition"):
    """``check()``'s first truthy answer (awaited where it is a coroutine), polled every 0.1 s;
    AssertionError naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = check()
        if asyncio.iscoroutine(result):
            result = await result
        if result:
            return result
        await asyncio.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")
