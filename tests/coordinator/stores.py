"""Group record stores for the coordinator tests."""
from __future__ import annotations

import asyncio

from josefk.coordinator import OffsetStore


class SlowStore(OffsetStore):
    """Writes that let other work run first, as a write to a replicated ``__consumer_offsets``
    partition waits for its followers: the window in which concurrent requests interleave."""

    async def store_records(self, partition, records, now):
        for _ in range(3):
            await asyncio.sleep(0)
        return await super().store_records(partition, records, now)
