"""Producer id blocks for a broker of a ZooKeeper cluster (`coordinator.txn.producer_ids`' blocks
interface). Claiming a block is a ZooKeeper round trip, which never runs on the event loop: the
next block is claimed in the background as soon as one is taken into use, so handing out an id
stays synchronous; if ids run out before it arrives, InitProducerId answers
COORDINATOR_LOAD_IN_PROGRESS and the client retries (as Kafka's brokers do)."""
from __future__ import annotations

import asyncio
import logging

from josefk.coordinator.txn.producer_ids import BLOCK_SIZE, ProducerIdsUnavailable
from josefk.zk.producer_ids import claim_block

log = logging.getLogger("josefk.producer_ids")


class ZkBlocks:
    def __init__(self, zk, broker_id: int):
        self.zk = zk
        self.broker_id = broker_id
        self.ready: tuple[int, int] | None = None  # the claimed block not yet in use
        self._claiming = None

    async def claim(self) -> None:
        try:
            self.ready = await self.zk.run(claim_block, self.broker_id, BLOCK_SIZE)
        except Exception as e:  # noqa: BLE001 - ZooKeeper away: the next use tries again
            log.warning("cannot claim a producer id block: %s", e)

    def reserve(self) -> tuple[int, int]:
        block, self.ready = self.ready, None
        self._claim_soon()  # the next one, ahead of need
        if block is None:
            raise ProducerIdsUnavailable("claiming a block of producer ids")
        return block

    def _claim_soon(self) -> None:
        if self._claiming is None or self._claiming.done():
            self._claiming = asyncio.ensure_future(self.claim())
