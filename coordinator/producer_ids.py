"""Producer ids for idempotent producers (InitProducerId without a transactional id).

Ids are handed out from blocks reserved in a small file, so a restarted broker never reuses an
id it may already have given (like Kafka's ProducerIdManager reserving blocks in ZooKeeper).
"""
from __future__ import annotations

import os
from pathlib import Path

BLOCK_SIZE = 1000
MAX_EPOCH = 32767


class ProducerIdManager:
    def __init__(self, state_file: str | Path):
        self.path = Path(state_file)
        start = int(self.path.read_text().strip()) if self.path.exists() else 0
        self.next_id = start
        self.block_end = start
        self.epochs: dict[int, int] = {}

    def _reserve_block(self):
        end = self.next_id + BLOCK_SIZE
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(str(end))
        os.replace(tmp, self.path)
        self.block_end = end

    def new_id(self) -> int:
        if self.next_id >= self.block_end:
            self._reserve_block()
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
