"""A coordinator log in memory: the log interface of :mod:`coordinator.runtime.runtime` over a
list of batches per partition, for tests and embedding."""
from __future__ import annotations

from josefk.wire import batch as wire_batch
from josefk.wire import records as wire_records

from .errors import CoordinatorLogError


class InMemoryOffsetsLog:
    """A list-of-batches implementation of the log interface, for tests and embedding.

    ``fail_next(error_code)`` makes the next append raise ``CoordinatorLogError``.
    """

    def __init__(self):
        self.batches: dict[int, list[bytearray]] = {}
        self.next_offset: dict[int, int] = {}
        self._fail: list[int] = []

    def fail_next(self, error_code: int) -> None:
        self._fail.append(error_code)

    def append(self, partition: int, batch: bytearray) -> int:
        if self._fail:
            raise CoordinatorLogError(self._fail.pop(0))
        batch = bytearray(batch)
        base = self.next_offset.get(partition, 0)
        h = wire_batch.read_header(batch, 0)
        wire_batch.set_base_offset(batch, 0, base)
        self.batches.setdefault(partition, []).append(batch)
        self.next_offset[partition] = base + h.last_offset_delta + 1
        return base

    def read_batches(self, partition: int):
        for b in self.batches.get(partition, []):
            yield wire_batch.read_header(b, 0), b

    def records(self, partition: int):
        """Every (offset, key, value) in the partition (test helper)."""
        out = []
        for h, b in self.read_batches(partition):
            for r in wire_records.iter_records(b, h):
                out.append((r.offset, None if r.key is None else bytes(r.key),
                            None if r.value is None else bytes(r.value)))
        return out
