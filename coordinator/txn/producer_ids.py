"""Producer ids for idempotent and transactional producers.

Ids are handed out from blocks that are reserved before use, so a restarted broker never reuses
an id it may already have given, and no two brokers of a cluster hand out the same one. Where a
block comes from is a ``blocks`` object's business: `FileBlocks` (a small file, the single
broker) or, in a cluster, blocks claimed in ZooKeeper's ``/latest_producer_id_block`` like
Kafka's ZooKeeper-mode brokers do (``broker.producer_id_blocks``).
"""
from __future__ import annotations

import os
from pathlib import Path

BLOCK_SIZE = 1000
MAX_EPOCH = 32767


class ProducerIdsUnavailable(Exception):
    """No block of ids at hand yet (the next one is being claimed): Kafka answers
    COORDINATOR_LOAD_IN_PROGRESS and the client retries."""


class FileBlocks:
    """Blocks reserved by writing the end of the last one to ``state_file``."""

    def __init__(self, state_file: str | Path):
        self.path = Path(state_file)
        self.end = int(self.path.read_text().strip()) if self.path.exists() else 0

    def reserve(self) -> tuple[int, int]:
        """The next block as (first id, end exclusive)."""
        first, end = self.end, self.end + BLOCK_SIZE
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(str(end))
        os.replace(tmp, self.path)
        self.end = end
        return first, end


class ProducerIdManager:
    def __init__(self, blocks):
        self.blocks = blocks
        self.next_id = self.block_end = 0
        self.epochs: dict[int, int] = {}

    def new_id(self) -> int:
        """A fresh id; raises ProducerIdsUnavailable when no block can be had right now."""
        if self.next_id >= self.block_end:
            self.next_id, self.block_end = self.blocks.reserve()
        pid = self.next_id
        self.next_id += 1
        self.epochs[pid] = 0
        return pid

    def init(self, producer_id: int = -1, producer_epoch: int = -1) -> tuple[int, int]:
        """A fresh (id, epoch); a known id with its current epoch gets a bumped epoch (KIP-360)."""
        if producer_id >= 0 and self.epochs.get(producer_id) == producer_epoch \
                and producer_epoch < MAX_EPOCH - 1:
            self.epochs[producer_id] = producer_epoch + 1
            return producer_id, producer_epoch + 1
        pid = self.new_id()
        return pid, 0
