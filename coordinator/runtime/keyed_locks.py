"""One asyncio lock per key (a group id): the requests and timers that change one group run one
at a time, from reading its state through writing its records to applying them, so none
decides on state another is about to replace."""
from __future__ import annotations

import asyncio
import contextlib


class KeyedLocks:
    """One asyncio lock per key, dropped when nobody holds or waits for it."""

    def __init__(self):
        self._locks: dict[str, list] = {}   # key -> [lock, users]

    @contextlib.asynccontextmanager
    async def hold(self, key: str):
        entry = self._locks.setdefault(key, [asyncio.Lock(), 0])
        entry[1] += 1
        try:
            async with entry[0]:
                yield
        finally:
            entry[1] -= 1
            if not entry[1]:
                del self._locks[key]
