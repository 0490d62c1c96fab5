"""A partition's log: an ordered list of segments, the last one active; appends, reads,
offsets, truncation, retention, flushing and closing.

The hot paths are per batch, never per record: ``append`` takes what ``log_validator`` made
final, writes each batch's baseOffset and partitionLeaderEpoch in the caller's buffer at the
positions the validator found, and writes the whole buffer with one ``os.write``;
``read`` finds a file range with an index bisect plus a short header scan and returns it with
one ``os.pread`` (or a `FileRegion` for sendfile). Records are decoded only by
``offset_for_timestamp`` and ``max_timestamp`` (one batch).

Opening a log dir (the clean-shutdown marker, crash recovery) is ``recovery.py``'s; compaction
is ``compaction.py``'s, which reads pinned segments outside the lock and swaps rewritten ones in
through ``replace_segments``. This module must not know either's rules, only keep the segment
list consistent for them.

Thread-safety: every public method takes the log's lock, so the broker may call ``flush`` and
``compact`` from an executor while the event loop appends and reads. ``flush`` fsyncs duplicated
file descriptors outside the lock.
"""
from __future__ import annotations

import logging
import os
import threading
import time
from bisect import bisect_left, bisect_right
from pathlib import Path

from josefk.wire.batch import HEADER_SIZE, read_header
from josefk.wire.records import iter_records

from . import compaction, recovery, snapshots
from .config import LONG_MAX, LogConfig
from .epochs import LeaderEpochCache
from .errors import OffsetOutOfRange, UnexpectedAppendOffset
from .log_validator import ValidatedRecords
from .segment import (INT32_MAX, NO_TIMESTAMP, SCAN_CHUNK, Scan, Segment, _fsync, _fsync_dir,
                      _unlink, file_prefix)

log = logging.getLogger(__name__)


def _now_ms() -> int:
    return int(time.time() * 1000)


class FileRegion:
    """A byte range of a segment file, to be sent to a socket without copying (``sendfile``).

    It holds its own duplicate of the file descriptor, so the range stays readable even if the
    segment is deleted or closed before the response is written; ``close`` releases it. ``bytes``
    reads it into memory, for the paths that must transform the data.
    """

    __slots__ = ("fd", "offset", "length")

    def __init__(self, fd: int, offset: int, length: int):
        self.fd = os.dup(fd)
        self.offset = offset
        self.length = length

    def __len__(self):
        return self.length

    def __bytes__(self):
        return os.pread(self.fd, self.length, self.offset)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __del__(self):
        self.close()


class FetchData:
    """Result of ``Log.read``.

    ``records``: bytes (or, when asked for, a `FileRegion` of at least ``zero_copy_min`` bytes)
    starting at the batch that contains the requested offset (possibly ending inside a batch, as
    Kafka does). ``first_offset``: the requested fetch offset. ``batch_offset``: base offset of
    the first returned batch (-1 when empty).
    """

    __slots__ = ("records", "first_offset", "batch_offset")

    def __init__(self, records: bytes, first_offset: int, batch_offset: int = -1):
        self.records = records
        self.first_offset = first_offset
        self.batch_offset = batch_offset

    def __len__(self):
        return len(self.records)

    def __repr__(self):
        return (f"FetchData(first_offset={self.first_offset}, batch_offset={self.batch_offset}, "
                f"bytes={len(self.records)})")


class Log:
    """Append-only log of one partition in directory ``dir`` (``<topic>-<partition>``).

    ``log_start_offset``, ``recovery_point`` and ``high_watermark`` come from the log dir's
    checkpoint files (``LogManager``); when omitted, values saved in the clean-shutdown marker
    are used, then Kafka's defaults (start of the first segment, 0, log start offset).
    """

    def __init__(self, dir, config: LogConfig | None = None, *, log_start_offset: int | None = None,
                 recovery_point: int | None = None, high_watermark: int | None = None):
        self.dir = Path(dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.config = config if config is not None else LogConfig()
        self._lock = threading.RLock()
        self._closed = False
        self._limit_cache = None  # (segment, offset, position) of the last max_offset lookup
        self._generation = 0  # bumped by truncations; compaction aborts its swap when it moved
        self.cleaning = compaction.CleaningState()  # compaction.py's, kept between passes
        self._unflushed_msgs = 0
        self._last_flush_ms = _now_ms()
        self.snapshot_source = None  # callable giving the owner's state as bytes (snapshots.py)
        self.on_markers_removed = None  # callable told the offsets of markers compaction removed
        # tiered storage: the last offset copied to the remote log, None while nothing tells
        # (local retention then deletes nothing a copy may still need)
        self.remote_copied_end: int | None = None
        # tiered storage: the log's start below its local data (DeleteRecords, or a follower's
        # leader), -1 if none; LogManager checkpoints it (remote-log-start-offset-checkpoint)
        self.remote_log_start = -1
        with self._lock:  # no other thread parks its segments while they load
            loaded = recovery.load(self.dir, self.config.index_interval_bytes, self._lock,
                                   log_start_offset, recovery_point, high_watermark)
            self._segments = loaded.segments
            self._bases = [s.base_offset for s in loaded.segments]
            self._lso, self._hwm = loaded.log_start_offset, loaded.high_watermark
            self._leo = self._recovery_point = loaded.log_end_offset
            self._dir_dirty = loaded.created
        self.epochs = LeaderEpochCache(self.dir)
        self.epochs.truncate_from_end(self._leo)  # recovery may have cut the tail
        with self._lock:
            # As Kafka's LogSegment.recover: the epochs of the batches past the recovery point
            # are assigned again (a new epoch's entry is fsynced by the flush that moves the
            # recovery point past it, so an OS crash may have lost it, not the batches)
            epochs = self.epochs
            for seg in loaded.recovered:
                for h, _ in Scan(seg.fd, 0, seg.size):
                    if h.leader_epoch > epochs.latest_epoch:
                        epochs.assign(h.leader_epoch, h.base_offset)
            epochs.save_if_behind()

    # =========================================================================================
    # offsets

    @property
    def log_start_offset(self) -> int:
        return self._lso

    @property
    def first_segment_offset(self) -> int:
        """Base offset of the oldest segment: nothing below it is on disk any more (the log
        start offset may be past it, and return to it after a crash before its checkpoint)."""
        return self._bases[0]

    @property
    def log_end_offset(self) -> int:
        """The next offset to assign."""
        return self._leo

    @property
    def high_watermark(self) -> int:
        return self._hwm

    @high_watermark.setter
    def high_watermark(self, value: int) -> None:
        self._hwm = min(max(value, self._lso), self._leo)

    @property
    def recovery_point(self) -> int:
        """Every offset below this one has been fsynced."""
        return self._recovery_point

    @property
    def size(self) -> int:
        """Total bytes of all segment files."""
        return sum(s.size for s in self._segments)

    @property
    def num_segments(self) -> int:
        return len(self._segments)

    @property
    def closed(self) -> bool:
        return self._closed

    def _segment_index(self, offset: int) -> int:
        return max(0, bisect_right(self._bases, offset) - 1)

    # =========================================================================================
    # append

    def append(self, records: ValidatedRecords, *, leader_epoch: int = 0):
        """Append a leader's batches, validated by ``log_validator`` (their timestamps and
        CRCs are final): assigns offsets from the log end offset, writing each batch's
        baseOffset and partitionLeaderEpoch in place (``records.batches`` follow), and writes
        the bytes. Returns ``(first_offset, last_offset)``."""
        headers = records.batches
        if not headers:
            raise ValueError("nothing to append")
        now_ms = records.now_ms
        with self._lock:
            self._check_open()
            first = self._leo
            buf = records.buf
            seg = self._maybe_roll(len(buf), first, first + records.count - 1, now_ms)
            nxt = records.assign_offsets(first, leader_epoch)
            seg.append(buf, headers, now_ms)
            self._leo = nxt  # the batches are in: the log end moves, whatever fails next
            self.epochs.assign(leader_epoch, first)
            self._after_append(records.count, now_ms)
            return first, nxt - 1

    def append_as_follower(self, buf, headers, *, now_ms: int | None = None):
        """Append batches that already carry their offsets (replication). The first base offset
        must be >= the log end offset and offsets must increase; gaps are allowed (compacted
        leaders). Returns ``(first_offset, last_offset)``."""
        if not headers:
            raise ValueError("nothing to append")
        with self._lock:
            self._check_open()
            nxt = self._leo
            count = 0
            for h in headers:
                if h.base_offset < nxt:
                    raise UnexpectedAppendOffset(
                        f"batch at offset {h.base_offset} does not follow offset {nxt - 1}")
                nxt = h.base_offset + h.last_offset_delta + 1
                count += h.count
            if now_ms is None:
                now_ms = _now_ms()
            first = headers[0].base_offset
            seg = self._maybe_roll(len(buf), first, nxt - 1, now_ms)
            seg.append(buf, headers, now_ms)
            self._leo = nxt
            epochs = self.epochs
            for h in headers:
                if h.leader_epoch > epochs.latest_epoch:
                    epochs.assign(h.leader_epoch, h.base_offset)
            self._after_append(count, now_ms)
            return first, nxt - 1

    def _maybe_roll(self, size: int, first_offset: int, last_offset: int, now_ms: int) -> Segment:
        seg = self._segments[-1]
        if seg.size == 0:
            if first_offset - seg.base_offset > INT32_MAX or first_offset < seg.base_offset:
                return self._replace_empty_active(first_offset)
            return seg
        cfg = self.config
        if (seg.size + size > cfg.segment_bytes
                or (seg.rolling_ts is not None and now_ms - seg.rolling_ts > cfg.segment_ms)
                or last_offset - seg.base_offset > INT32_MAX):
            return self.roll(first_offset)
        return seg

    def _replace_empty_active(self, base: int) -> Segment:
        old = self._segments.pop()
        self._bases.pop()
        old.delete()
        new = Segment.create(self.dir, base, self.config.index_interval_bytes, self._lock)
        self._segments.append(new)
        self._bases.append(base)
        self._dir_dirty = True
        return new

    def roll(self, base_offset: int | None = None) -> Segment:
        """Close the active segment and start a new one at ``base_offset`` (default LEO)."""
        with self._lock:
            self._check_open()
            base = self._leo if base_offset is None else base_offset
            old = self._segments[-1]
            if old.size == 0:
                return self._replace_empty_active(base) if old.base_offset != base else old
            old.finalize_time_index()
            new = Segment.create(self.dir, base, self.config.index_interval_bytes, self._lock)
            self._segments.append(new)
            self._bases.append(base)
            self._dir_dirty = True
            self._snapshot(base)
            return new

    def _snapshot(self, offset: int) -> None:
        if self.snapshot_source is not None:
            # a tiered leader keeps the snapshots its copies still have to upload
            keep = self.remote_copied_end if self.config.remote_storage_enable else None
            snapshots.write(self.dir, offset, self.snapshot_source(), keep)

    def write_snapshot(self, offset: int, data: bytes) -> None:
        """Keep ``data`` as the state snapshot at ``offset`` (a follower's state rebuilt from
        tiered storage's copy)."""
        with self._lock:
            snapshots.write(self.dir, offset, data)

    def rewrite_snapshots(self, fn) -> None:
        """Replace the bytes of every state snapshot with ``fn(bytes)``."""
        with self._lock:
            snapshots.rewrite(self.dir, fn)

    def latest_snapshot(self) -> tuple[int, bytes] | None:
        """``(offset, data)`` of the newest state snapshot (never past the log end), or None."""
        with self._lock:
            return snapshots.latest(self.dir)

    def _after_append(self, count: int, now_ms: int) -> None:
        cfg = self.config
        self._unflushed_msgs += count
        if self._unflushed_msgs >= cfg.flush_messages or (
                cfg.flush_ms != LONG_MAX and now_ms - self._last_flush_ms >= cfg.flush_ms):
            self.flush()

    # =========================================================================================
    # read

    def read(self, offset: int, max_bytes: int, *, max_offset: int | None = None,
             min_one: bool = True, zero_copy_min: int = 0) -> FetchData:
        """Bytes of the batches from the one containing ``offset``, within one segment.

        At most ``max_bytes``, except that with ``min_one`` the first batch is returned whole
        (KIP-74). Never returns batches at or past ``max_offset`` (exclusive; default: the high
        watermark). With ``zero_copy_min`` > 0, a range at least that long comes back as a
        `FileRegion` instead of bytes. Raises OffsetOutOfRange if ``offset`` is outside
        [log_start_offset, log_end_offset]; an offset at or past the limit reads nothing.
        """
        with self._lock:
            self._check_open()
            if offset < self._lso or offset > self._leo:
                raise OffsetOutOfRange(offset, self._lso, self._leo)
            limit = self._hwm if max_offset is None else min(max_offset, self._leo)
            if offset >= limit:
                return FetchData(b"", offset)
            segs = self._segments
            i = self._segment_index(offset)
            while i < len(segs):
                seg = segs[i]
                seg_end = seg.size
                h = seg.find(offset, seg_end)
                if h is None:
                    i += 1
                    continue
                if h.base_offset >= limit:
                    break
                if limit >= self._leo or (i + 1 < len(segs) and segs[i + 1].base_offset <= limit):
                    end = seg_end
                else:
                    end = self._position_of_limit(seg, limit, seg_end)
                length = end - h.pos
                if length <= 0:
                    break
                if length > max_bytes:
                    length = max(max_bytes, h.size) if min_one else max(max_bytes, 0)
                    if length == 0:
                        break
                if 0 < zero_copy_min <= length:
                    return FetchData(FileRegion(seg.fd, h.pos, length), offset, h.base_offset)
                return FetchData(os.pread(seg.fd, length, h.pos), offset, h.base_offset)
            return FetchData(b"", offset)

    def _position_of_limit(self, seg: Segment, limit: int, seg_end: int) -> int:
        c = self._limit_cache
        if c is not None and c[0] is seg and c[1] == limit:
            return c[2]
        pos = seg.position_of(limit, seg_end)
        if pos < seg_end:  # only cache positions of existing batches (the tail still grows)
            self._limit_cache = (seg, limit, pos)
        return pos

    def iter_headers(self, start_offset: int = 0):
        """Yield the header of every batch from ``start_offset`` (at least the log start) to
        the log end, reading only the headers (one small read per batch): how producer state
        is rebuilt at start-up."""
        with self._lock:
            self._check_open()
            start = max(self._lso, start_offset)
            segments = self._segments[self._segment_index(start):]
        for seg in segments:
            pos = seg.lookup(start)[1]
            while pos + HEADER_SIZE <= seg.size:
                with self._lock:
                    if self._closed or seg.fd < 0:
                        return
                    h = read_header(os.pread(seg.fd, HEADER_SIZE, pos))
                if h.size < HEADER_SIZE:
                    break
                if h.last_offset >= start:
                    yield h
                pos += h.size

    def iter_batches(self, start_offset: int | None = None, max_offset: int | None = None):
        """Yield ``(BatchHeader, bytes)`` for each batch whose last offset is >= ``start_offset``
        (default: log start offset) and base offset < ``max_offset`` (default: log end offset).
        Each header's ``pos`` is 0, relative to its own bytes. Reads in chunks of about 1 MiB;
        the lock is not held between batches."""
        nxt = self._lso if start_offset is None else start_offset
        while True:
            with self._lock:
                self._check_open()
                limit = self._leo if max_offset is None else min(max_offset, self._leo)
                nxt = max(nxt, self._lso)
                if nxt >= limit:
                    return
                segs = self._segments
                i = self._segment_index(nxt)
                h = None
                while i < len(segs):
                    seg = segs[i]
                    h = seg.find(nxt)
                    if h is not None:
                        break
                    i += 1
                if h is None:
                    return
                end = seg.size
                data = os.pread(seg.fd, max(h.size, min(SCAN_CHUNK, end - h.pos)), h.pos)
            p = 0
            n = len(data)
            mv = memoryview(data)
            while n - p >= HEADER_SIZE:
                hh = read_header(data, p)
                if hh.size < HEADER_SIZE or p + hh.size > n:
                    break
                if hh.base_offset >= limit:
                    return
                if hh.last_offset >= nxt:
                    b = bytes(mv[p:p + hh.size])
                    hh.pos = 0
                    nxt = hh.last_offset + 1
                    yield hh, b
                p += hh.size
            if p == 0:  # cannot happen with a consistent index; never loop forever
                return

    # =========================================================================================
    # timestamps

    def segment_times(self) -> list[tuple[int, int, int]]:
        """``(base offset, last modified ms, size in bytes)`` of every segment, oldest first."""
        with self._lock:
            self._check_open()
            return [(s.base_offset, s.last_modified_ms(), s.size)
                    for s in self._segments]

    def rolled_segments(self, after: int, limit: int) -> list[tuple]:
        """``(base offset, next segment's base, .log, .index, .timeindex, size, max
        timestamp)`` of the rolled segments holding offsets past ``after`` and wholly below
        ``limit``, oldest first: what tiered storage copies next."""
        with self._lock:
            self._check_open()
            segs = self._segments
            return [(s.base_offset, nxt.base_offset, Path(s.log_path), Path(s.index_path),
                     Path(s.timeindex_path), s.size, s.max_timestamp)
                    for s, nxt in zip(segs, segs[1:])
                    if nxt.base_offset - 1 > after and nxt.base_offset <= limit]

    def offset_for_timestamp(self, timestamp: int, *, max_offset: int | None = None):
        """``(offset, timestamp)`` of the first record with timestamp >= ``timestamp`` and
        offset in [log_start_offset, max_offset) (default: high watermark), or None."""
        with self._lock:
            self._check_open()
            limit = self._hwm if max_offset is None else min(max_offset, self._leo)
            lso = self._lso
            for seg in list(self._segments):
                if seg.max_timestamp < timestamp:
                    continue
                j = bisect_right(seg.time_ts, timestamp) - 1
                start = 0
                if j >= 0:
                    start = seg.position_of(seg.base_offset + seg.time_off[j])
                for h, data in Scan(seg.fd, start, seg.size, data=True):
                    if h.base_offset >= limit:
                        return None
                    if h.max_timestamp < timestamp or h.last_offset < lso:
                        continue
                    for r in iter_records(data, read_header(data, 0)):
                        if r.offset >= limit:
                            return None
                        if r.offset >= lso and r.timestamp >= timestamp:
                            return r.offset, r.timestamp
            return None

    def max_timestamp(self, *, max_offset: int | None = None):
        """``(timestamp, offset)`` of the first record carrying the largest timestamp
        (ListOffsets MAX_TIMESTAMP), or None when the log holds no timestamped records below
        ``max_offset`` (default: high watermark)."""
        with self._lock:
            self._check_open()
            limit = self._hwm if max_offset is None else min(max_offset, self._leo)
            best = None
            for seg in self._segments:
                if seg.max_timestamp > NO_TIMESTAMP and (best is None
                                                         or seg.max_timestamp > best.max_timestamp):
                    best = seg
            if best is None:
                return None
            h = best.find(best.offset_of_max_timestamp)
            if h is None:
                return None
            data = os.pread(best.fd, h.size, h.pos)
            for r in iter_records(data, read_header(data, 0)):
                if r.timestamp == best.max_timestamp:
                    if r.offset >= limit or r.offset < self._lso:
                        return None
                    return r.timestamp, r.offset
            return None

    # =========================================================================================
    # truncation, deletion, retention

    def truncate_to(self, offset: int) -> None:
        """Remove every batch at or after ``offset`` (a batch containing ``offset`` goes too).
        Truncating below the log start offset empties the log and restarts it at ``offset``."""
        with self._lock:
            self._check_open()
            if offset >= self._leo:
                return
            self._generation += 1
            self._limit_cache = None
            if offset < self._lso or offset <= self._segments[0].base_offset:
                self._reset_at(offset)
            else:
                k = bisect_left(self._bases, offset)  # k >= 1: the first segment stays
                for s in self._segments[k:]:
                    s.delete()
                del self._segments[k:]
                del self._bases[k:]
                seg = self._segments[-1]
                h = seg.find(offset)
                if h is None:
                    self._leo = offset
                else:
                    seg.truncate(h.pos, h.base_offset)
                    self._leo = min(offset, h.base_offset)
            self._dir_dirty = True
            self.epochs.truncate_from_end(self._leo)
            snapshots.delete_above(self.dir, self._leo)
            self._hwm = min(self._hwm, self._leo)
            self._lso = min(self._lso, self._leo)
            self._recovery_point = min(self._recovery_point, self._leo)

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Drop everything and continue at ``offset`` (a follower behind its leader's log
        start)."""
        with self._lock:
            self._check_open()
            self._generation += 1
            self._limit_cache = None
            self._reset_at(offset)
            self._dir_dirty = True
            self.epochs.truncate_from_end(-1)
            self._hwm = self._recovery_point = offset

    def _reset_at(self, offset: int) -> None:
        for s in self._segments:
            s.delete()
        self._segments = [Segment.create(self.dir, offset, self.config.index_interval_bytes,
                                        self._lock)]
        self._bases = [offset]
        self._lso = offset
        self._leo = offset

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """(largest known epoch <= ``epoch``, its end offset): the OffsetsForLeaderEpoch answer."""
        with self._lock:
            return self.epochs.end_offset_for(epoch, self._leo)

    def delete_records_before(self, offset: int) -> int:
        """Advance the log start offset to ``offset`` (DeleteRecords) and drop the segments
        entirely below it. Raises OffsetOutOfRange past the high watermark. Returns the new
        log start offset."""
        with self._lock:
            self._check_open()
            if offset > self._hwm or offset < 0:
                raise OffsetOutOfRange(offset, self._lso, self._hwm)
            if offset > self._lso:
                self._lso = offset
                self._delete_prefix(lambda seg, next_base: next_base <= self._lso)
            return self._lso

    def apply_retention(self, now_ms: int | None = None) -> int:
        """Delete closed segments past retention.ms (by their max timestamp) or beyond
        retention.bytes (cleanup.policy with "delete"), and any below the log start offset.
        A tiered log (remote.storage.enable) keeps local.retention.* instead and deletes only
        segments copied to the remote log (``remote_copied_end``). Never deletes the active
        segment nor data above the high watermark. Returns the number of segments deleted."""
        if now_ms is None:
            now_ms = _now_ms()
        cfg = self.config
        with self._lock:
            self._check_open()
            # a tiered compacted log keeps locally what local retention says, as any tiered one
            by_policy = cfg.delete or cfg.remote_storage_enable
            retention_ms = cfg.retention_ms
            retention_bytes = cfg.retention_bytes
            copied = self.remote_copied_end
            tiered = cfg.remote_storage_enable
            if tiered:  # only what is remote goes, by the local retention
                retention_ms, retention_bytes = cfg.local_retention
            excess = [self.size - retention_bytes]

            def deletable(seg, next_base):
                if next_base <= self._lso:
                    return True
                if not by_policy or (tiered and (copied is None or next_base - 1 > copied)):
                    return False
                if retention_ms >= 0 and now_ms - seg.largest_timestamp() > retention_ms:
                    return True
                if retention_bytes >= 0 and excess[0] - seg.size >= 0:
                    return True
                return False

            def on_delete(seg):
                excess[0] -= seg.size

            n = self._delete_prefix(deletable, on_delete)
            return n

    def _delete_prefix(self, pred, on_delete=None) -> int:
        n = 0
        segs = self._segments
        while len(segs) > 1:
            seg = segs[0]
            next_base = segs[1].base_offset
            if next_base > self._hwm or not pred(seg, next_base):
                break
            if on_delete:
                on_delete(seg)
            seg.delete()
            del segs[0]
            del self._bases[0]
            n += 1
        if n:
            self._lso = max(self._lso, segs[0].base_offset)
            self._limit_cache = None
            self._dir_dirty = True
            log.info("deleted %d segment(s) of %s; log start offset now %d", n, self.dir,
                     self._lso)
        return n

    # =========================================================================================
    # compaction (compaction.py): the log pins its segments for a pass and swaps results in

    def compact(self, now_ms: int | None = None) -> int:
        """Compact the closed segments (cleanup.policy with "compact"): keep the latest record
        per key with its original offset, drop tombstones in segments older than
        delete.retention.ms, drop records of aborted transactions and keyless records.
        A transaction marker goes delete.retention.ms after its transaction's last data left
        the log (as Kafka's cleaner; ``on_markers_removed`` is told), never before.
        Segments newer than min.compaction.lag.ms, at/after the first open transaction, at/after
        the high watermark, and the active segment are left alone. Small cleaned segments are
        merged up to segment.bytes. Returns the number of bytes reclaimed."""
        return compaction.compact(self, now_ms)

    def pin_segments(self):
        """``(segments, sizes, duplicated fds, high watermark, generation)`` of the log as it is
        now, to be read outside the lock (the caller closes the fds); None with fewer than two
        segments (only the active one: nothing to clean)."""
        with self._lock:
            self._check_open()
            segs = list(self._segments)
            if len(segs) < 2:
                return None
            return segs, [s.size for s in segs], [os.dup(s.fd) for s in segs], self._hwm, \
                self._generation

    def unless_truncated_since(self, generation: int, fn) -> None:
        """Call ``fn()`` under the lock if the log was not truncated since ``generation``."""
        with self._lock:
            if self._generation == generation:
                fn()

    def replace_segments(self, tmp: Path, group: list[Segment], headers, generation: int) -> bool:
        """Replace the consecutive closed segments ``group`` by the file ``tmp`` (its batches'
        ``headers``, positions from 0), unless the log was truncated since ``generation`` or
        ``group`` is no longer there. Crash-safe: ``tmp`` becomes ``<base>.log.swap`` before the
        old files go, and recovery finishes a swap a crash interrupted."""
        base = group[0].base_offset
        with self._lock:
            if self._closed or self._generation != generation:
                _unlink(tmp)
                return False
            try:
                i = next(k for k, s in enumerate(self._segments) if s is group[0])
            except StopIteration:
                _unlink(tmp)
                return False
            if self._segments[i:i + len(group)] != group or i + len(group) >= len(self._segments):
                _unlink(tmp)
                return False
            swap = self.dir / (file_prefix(base) + ".log.swap")
            os.rename(tmp, swap)
            _fsync_dir(self.dir)
            for s in group[1:]:
                s.delete()
            group[0].delete()
            os.rename(swap, self.dir / (file_prefix(base) + ".log"))
            new = Segment(self.dir, base, self.config.index_interval_bytes, lock=self._lock)
            new._index_headers(headers, 0, write=False)
            new.write_index_files()
            new.finalize_time_index()
            new._init_rolling_ts()
            self._segments[i:i + len(group)] = [new]
            self._bases[i:i + len(group)] = [base]
            self._limit_cache = None
            self._dir_dirty = True
            log.info("compacted %d segment(s) of %s from offset %d", len(group), self.dir, base)
            return True

    # =========================================================================================
    # durability and lifetime

    def flush(self) -> None:
        """fsync every segment written since the last flush (data and indexes) and the
        directory if files were created or removed; advances the recovery point to the log end
        offset as of the call. The fsyncs run outside the lock on duplicated descriptors."""
        self._flush(closed_only=False)

    def flush_closed(self) -> None:
        """fsync only the segments that are no longer active (what Kafka does after a roll);
        advances the recovery point to the active segment's base offset."""
        self._flush(closed_only=True)

    def _flush(self, closed_only: bool) -> None:
        with self._lock:
            if self._closed:
                return
            segs = self._segments[:-1] if closed_only else self._segments
            target = self._segments[-1].base_offset if closed_only else self._leo
            dirty = [s for s in segs if s.dirty]
            fds = []
            try:
                for s in dirty:
                    s.dirty = False
                    fds.extend(os.dup(fd) for fd in s.fds())
            except BaseException:
                for fd in fds:
                    os.close(fd)
                raise
            self.epochs.save_if_behind()
            # the recovery point stays below an epoch entry not yet on disk (a failed write)
            epochs_behind = self.epochs.unsaved
            dir_dirty = self._dir_dirty
            self._dir_dirty = False
            if not closed_only:
                self._unflushed_msgs = 0
                self._last_flush_ms = _now_ms()
        ok = False
        try:
            for fd in fds:
                _fsync(fd)
            if dir_dirty:
                _fsync_dir(self.dir)
            ok = True
        finally:
            for fd in fds:
                os.close(fd)
            if not ok:
                with self._lock:
                    for s in dirty:
                        s.dirty = True
                    self._dir_dirty = self._dir_dirty or dir_dirty
        with self._lock:
            if target > self._recovery_point and not epochs_behind:
                self._recovery_point = min(target, self._leo)

    def close(self, *, clean_marker: bool = True) -> None:
        """Flush, write the clean-shutdown marker (with the log start offset and high watermark)
        and close all files. Idempotent. ``clean_marker=False`` (a log about to be deleted)
        skips the flush and the marker."""
        with self._lock:
            if self._closed:
                return
            if clean_marker:
                self._segments[-1].finalize_time_index()
                self.flush()
                if self._leo:  # a log never written has no state to keep
                    self._snapshot(self._leo)
                recovery.write_clean_marker(self.dir, self._lso, self._hwm, self._leo)
            for s in self._segments:
                s.close()
            self._closed = True

    def make_files(self) -> None:
        """Create the files a new log left to its first use (`Segment.make_files`)."""
        with self._lock:
            if not self._closed:
                self._segments[-1].make_files()

    def _check_open(self):
        if self._closed:
            raise ValueError(f"log {self.dir} is closed")

    def __repr__(self):
        return (f"Log({self.dir.name}, start={self._lso}, hwm={self._hwm}, end={self._leo}, "
                f"segments={len(self._segments)})")
