"""The leader-epoch cache of a log: which leader epoch started at which offset (KIP-101).

Kept in the partition directory as Kafka's ``leader-epoch-checkpoint`` file:
a version line (0), a count line, then one ``<epoch> <start offset>`` line per entry.
"""
from __future__ import annotations

import logging
import os
from bisect import bisect_right
from pathlib import Path

log = logging.getLogger(__name__)

FILE = "leader-epoch-checkpoint"
UNDEFINED = -1


class LeaderEpochCache:
    def __init__(self, dir):
        self.path = Path(dir) / FILE
        self.entries: list[tuple[int, int]] = []  # (epoch, start offset), both increasing
        # the file is behind the entries (a new epoch, or a failed write): the log's flush
        # writes it
        self.unsaved = False
        self._warned = False
        try:
            lines = self.path.read_text().split("\n")
            count = int(lines[1])
            for line in lines[2:2 + count]:
                epoch, offset = line.split()
                self.entries.append((int(epoch), int(offset)))
        except (OSError, ValueError, IndexError):
            self.entries = []

    @property
    def latest_epoch(self) -> int:
        return self.entries[-1][0] if self.entries else UNDEFINED

    def assign(self, epoch: int, start_offset: int) -> None:
        """Record that ``epoch`` starts at ``start_offset`` (no-op unless it is a newer epoch)."""
        if epoch < 0 or (self.entries and epoch <= self.entries[-1][0]):
            return
        # A newer epoch cannot start before an older one: drop entries it overrides.
        while self.entries and self.entries[-1][1] >= start_offset:
            self.entries.pop()
        self.entries.append((epoch, start_offset))
        # Written by the log's flush, not here (Kafka writes and fsyncs it here): a new
        # partition's first append, or a leader's first after an election, would wait on the
        # disk. The flush writes it before it moves the recovery point past the entry, and
        # recovery assigns again the epochs of the batches past the recovery point
        # (`Log.__init__`).
        self.unsaved = True

    def end_offset_for(self, epoch: int, log_end_offset: int) -> tuple[int, int]:
        """Kafka's OffsetsForLeaderEpoch answer: the largest epoch <= ``epoch`` we know and the
        offset where the next epoch starts (the log end for the latest). (-1, -1) if ``epoch``
        is older than anything we have."""
        if not self.entries:
            return UNDEFINED, UNDEFINED
        if epoch >= self.entries[-1][0]:
            return self.entries[-1][0], log_end_offset
        k = bisect_right([e for e, _ in self.entries], epoch)
        if k == 0:
            return UNDEFINED, UNDEFINED
        return self.entries[k - 1][0], self.entries[k][1]

    def truncate_from_end(self, end_offset: int) -> None:
        """Forget epochs that start at or after ``end_offset`` (the log was truncated there)."""
        before = len(self.entries)
        while self.entries and self.entries[-1][1] >= end_offset:
            self.entries.pop()
        if len(self.entries) != before:
            self._save()

    def save_if_behind(self) -> None:
        if self.unsaved:
            self._save()

    def _save(self) -> None:
        """Write the file; on a failure (a full disk) the entries stay right in memory, for
        the log whose batches they describe is already appended, and the file is written at
        the next change or flush."""
        body = "".join(f"{e} {o}\n" for e, o in self.entries)
        tmp = self.path.with_suffix(".tmp")
        try:
            with open(tmp, "w") as f:
                f.write(f"0\n{len(self.entries)}\n{body}")
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        except OSError as e:
            if not self._warned:
                log.warning("cannot write %s (%s); writing it later", self.path, e)
            self._warned = self.unsaved = True
            return
        self._warned = self.unsaved = False
