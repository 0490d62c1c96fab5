"""A bound on the segment files the broker keeps open, whatever its partition count.

Every segment holds three descriptors (``.log``, ``.index``, ``.timeindex``) while it is open.
`OpenSegments` remembers the open ones in least-recently-opened order and, when more than
``limit`` are open, parks the oldest that were not used since they were last looked at (a CLOCK
sweep over ``Segment.used``): their files are closed and reopen on the next access. The hot
partitions' active segments are used by every request, so they stay open; a topic of 20,000
idle partitions costs no descriptors.

A segment is parked only while its log's lock is free (taken without waiting, so the sweep
never blocks nor deadlocks), and never one of the log the opening thread is working on: every
use of a segment's descriptor happens under its log's lock, so no descriptor is closed while
in use. Descriptors that outlive the lock (sendfile regions, compaction, fsync) are dups.
"""
from __future__ import annotations

import resource
import threading
from collections import OrderedDict

FILES_PER_SEGMENT = 3
MIN_OPEN_SEGMENTS = 16


def default_limit() -> int:
    """Segments that may stay open: half the process's descriptor limit (the rest serves
    connections, checkpoints and dups), three descriptors each."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft > 1 << 20:
        soft = 1 << 20
    return max(MIN_OPEN_SEGMENTS, soft // 2 // FILES_PER_SEGMENT)


class OpenSegments:
    def __init__(self, limit: int | None = None):
        self.limit = limit if limit is not None else default_limit()
        self._open: OrderedDict = OrderedDict()
        self._lock = threading.Lock()
        self.parked = 0  # segments closed to stay within the limit (a metric, and for tests)

    def __len__(self):
        return len(self._open)

    def opened(self, seg) -> None:
        with self._lock:
            self._open[seg] = None
            if len(self._open) > self.limit:
                self._sweep(seg.lock)

    def closed(self, seg) -> None:
        with self._lock:
            self._open.pop(seg, None)

    def _sweep(self, busy) -> None:
        """Park segments, oldest first, until within the limit; one pass at most."""
        open_ = self._open
        for _ in range(len(open_)):
            if len(open_) <= self.limit:
                return
            seg = next(iter(open_))
            open_.move_to_end(seg)
            if seg.used:
                seg.used = False
                continue
            lock = seg.lock
            if lock is busy or lock is None or not lock.acquire(blocking=False):
                continue
            try:
                del open_[seg]
                seg.close_files(parked=True)
                self.parked += 1
            finally:
                lock.release()


OPEN_SEGMENTS = OpenSegments()
