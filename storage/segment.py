"""One log segment: ``<base offset, 20 digits>.log`` plus its sparse ``.index`` and ``.timeindex``.

File formats are Kafka's:

* ``.log``: record batches back to back, exactly as received (after offset assignment).
* ``.index``: 8-byte entries, relative offset int32 + file position int32 (big-endian). An entry
  is added when more than ``index.interval.bytes`` were appended since the previous one; it names
  the *last* offset of the batch starting at that position (as Kafka does).
* ``.timeindex``: 12-byte entries, timestamp int64 + relative offset int32: the segment's max
  timestamp so far and the last offset of the batch holding it, added at the same points as
  offset-index entries when the max timestamp grew, and once more when the segment stops being
  active.

Entries are kept in memory (``array``) so lookups are bisects; new entries are appended to the
files with plain writes. A segment never decodes records and never verifies CRCs except in
``recover``.
"""
from __future__ import annotations

import logging
import os
import struct
import sys
import time
from array import array
from bisect import bisect_left, bisect_right

from crc32c import crc32c

from josefk.wire.batch import ATTRIBUTES_OFFSET, HEADER, HEADER_SIZE, LOG_OVERHEAD, BatchHeader

from .open_files import OPEN_SEGMENTS

log = logging.getLogger(__name__)

_idx_entry = struct.Struct(">ii")
_time_entry = struct.Struct(">qi")
_LITTLE = sys.byteorder == "little"
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)

SCAN_CHUNK = 1 << 20
_BIG_BATCH = 64 << 10  # after a batch this big, header-only scans read just the next header
_FIRST_STEP = 16 << 10
INT32_MAX = 2147483647
NO_TIMESTAMP = -1


def file_prefix(base_offset: int) -> str:
    return f"{base_offset:020d}"


def write_all(fd: int, data) -> None:
    n = os.write(fd, data)
    total = len(data)
    if n < total:
        mv = memoryview(data)
        while n < total:
            n += os.write(fd, mv[n:])


def _fsync(fd: int) -> None:
    (getattr(os, "fdatasync", None) or os.fsync)(fd)


def _fsync_dir(path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _unlink(path) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


class Scan:
    """Iterate ``(BatchHeader, data)`` over the complete batches of ``fd`` in ``[pos, end)``.

    ``header.pos`` is the file position. ``data`` is None unless ``data=True`` (then a
    memoryview or bytes of the whole batch). Iteration stops at the first position that does not
    hold a plausible batch header (magic 2, sane length, batch within ``end``); after (or
    during) iteration ``self.pos`` is the position of the batch last yielded, or past it once
    the consumer asked for the next one, so ``self.pos < end`` after a full iteration means
    trailing garbage or a partial batch.
    """

    __slots__ = ("fd", "pos", "end", "data", "chunk")

    def __init__(self, fd: int, pos: int, end: int, data: bool = False, chunk: int = SCAN_CHUNK):
        self.fd = fd
        self.pos = pos
        self.end = end
        self.data = data
        self.chunk = chunk

    def __iter__(self):
        fd = self.fd
        pos = self.pos
        end = self.end
        want_data = self.data
        buf = b""
        bstart = pos
        last_size = 0
        # header-only scans start small (an index lookup lands within index.interval.bytes of
        # the target) and grow; after a big batch they read just the next header
        step = self.chunk if want_data else min(_FIRST_STEP, self.chunk)
        unpack = HEADER.unpack_from
        while end - pos >= HEADER_SIZE:
            off = pos - bstart
            if off + HEADER_SIZE > len(buf):
                if not want_data and last_size >= _BIG_BATCH:
                    n = HEADER_SIZE
                else:
                    n = step
                    step = min(step * 2, self.chunk)
                buf = os.pread(fd, min(n, end - pos), pos)
                bstart = pos
                off = 0
                if len(buf) < HEADER_SIZE:
                    return
            fields = unpack(buf, off)
            size = fields[1] + LOG_OVERHEAD
            if fields[3] != 2 or size < HEADER_SIZE or pos + size > end:
                return
            h = BatchHeader(pos, size, fields)
            data = None
            if want_data:
                if off + size <= len(buf):
                    data = memoryview(buf)[off:off + size]
                else:
                    data = os.pread(fd, size, pos)
                    if len(data) < size:
                        return
            self.pos = pos
            yield h, data
            pos += size
            self.pos = pos
            last_size = size


class IndexInconsistent(Exception):
    """Raised internally when an index entry does not match the log; the index is rebuilt."""


class Segment:
    """Its files are open while it is in use; `OPEN_SEGMENTS` may park it (close them) when
    too many are open, and ``fd``/``index_fd``/``time_fd`` reopen them on the next access.
    ``lock`` is the owning log's lock, under which every access happens."""

    __slots__ = ("base_offset", "log_path", "index_path", "timeindex_path", "_fd", "_index_fd",
                 "_time_fd", "size", "index_interval", "idx_off", "idx_pos", "time_ts",
                 "time_off", "bytes_since_index", "max_timestamp", "offset_of_max_timestamp",
                 "rolling_ts", "dirty", "stale_index", "lock", "used", "parked", "unborn")

    def __init__(self, directory, base_offset: int, index_interval: int, *, create: bool = False,
                 lock=None, lazy: bool = False):
        self.base_offset = base_offset
        prefix = os.path.join(str(directory), file_prefix(base_offset))
        self.log_path = prefix + ".log"
        self.index_path = prefix + ".index"
        self.timeindex_path = prefix + ".timeindex"
        self.index_interval = index_interval
        self.lock = lock
        self.used = False
        self.parked = False
        self.stale_index = False  # an index write failed (disk full): rewrite from memory
        # ``lazy``: a new segment whose files are made on its first access (a topic of
        # thousands of partitions costs a directory each until they are written to or read)
        self.unborn = create and lazy
        if self.unborn:
            self._fd = self._index_fd = self._time_fd = -1
            self.parked = True
            self.size = 0
        else:
            self._open_files(os.O_CREAT | (os.O_TRUNC if create else 0))
            self.size = os.fstat(self._fd).st_size
        self._reset_indexes()
        self.rolling_ts = None
        # a new segment has no data to sync: the log fsyncs the directory that names it
        self.dirty = False

    # -- opening -------------------------------------------------------------------------

    @classmethod
    def create(cls, directory, base_offset: int, index_interval: int, lock=None,
               lazy: bool = False) -> "Segment":
        return cls(directory, base_offset, index_interval, create=True, lock=lock, lazy=lazy)

    @classmethod
    def open(cls, directory, base_offset: int, index_interval: int,
             lock=None) -> tuple["Segment", bool]:
        """Open an existing segment; returns ``(segment, indexes_loaded_ok)``."""
        prefix = os.path.join(str(directory), file_prefix(base_offset))
        had_index = os.path.exists(prefix + ".index")
        had_time = os.path.exists(prefix + ".timeindex")
        seg = cls(directory, base_offset, index_interval, lock=lock)
        ok = had_index and had_time and seg._load_indexes()
        if not ok:
            seg._reset_indexes()
        seg._init_rolling_ts()
        return seg, ok

    def _open_files(self, extra: int) -> None:
        """Open the three files (``extra``: O_CREAT/O_TRUNC for the log file) and count them
        among the open segments. Index files are created when missing."""
        flags = os.O_RDWR | os.O_APPEND | _O_CLOEXEC
        self._fd = self._index_fd = self._time_fd = -1
        try:
            self._fd = os.open(self.log_path, flags | extra, 0o644)
            index_flags = flags | os.O_CREAT | (extra & os.O_TRUNC)
            self._index_fd = os.open(self.index_path, index_flags, 0o644)
            self._time_fd = os.open(self.timeindex_path, index_flags, 0o644)
        except BaseException:
            self.close_files(parked=False)
            raise
        self.parked = False
        OPEN_SEGMENTS.opened(self)

    def _reopen(self) -> int:
        """Reopen a parked segment's files (create an unborn one's); a closed (deleted)
        segment's stay closed (-1)."""
        if self.parked:
            self._open_files(os.O_CREAT | os.O_TRUNC if self.unborn else 0)
            self.unborn = False
        return self._fd

    def make_files(self) -> None:
        """Create a lazy segment's files now and leave them closed (parked): its first access
        then opens them instead of creating them. Under the log's lock."""
        if self.unborn and self.parked:
            self._reopen()
            self.park()

    @property
    def fd(self) -> int:
        self.used = True
        fd = self._fd
        return fd if fd >= 0 else self._reopen()

    @property
    def index_fd(self) -> int:
        return self._index_fd if self._index_fd >= 0 else (self._reopen(), self._index_fd)[1]

    @property
    def time_fd(self) -> int:
        return self._time_fd if self._time_fd >= 0 else (self._reopen(), self._time_fd)[1]

    def _init_rolling_ts(self):
        if self.size >= HEADER_SIZE:
            try:
                fields = HEADER.unpack(os.pread(self.fd, HEADER_SIZE, 0))
                if fields[8] > 0:
                    self.rolling_ts = fields[8]
                    return
            except struct.error:
                pass
            self.rolling_ts = int(os.fstat(self.fd).st_mtime * 1000)

    def _reset_indexes(self):
        self.idx_off = array("i")
        self.idx_pos = array("i")
        self.time_ts = array("q")
        self.time_off = array("i")
        self.bytes_since_index = 0
        self.max_timestamp = NO_TIMESTAMP
        self.offset_of_max_timestamp = -1

    def _load_indexes(self) -> bool:
        """Load both index files and sanity-check them against the log; False if unusable."""
        data = _read_all(self.index_fd)
        if len(data) % _idx_entry.size:
            return False
        offs, poss = offset_index_entries(data)
        if offs:
            if offs[0] < 0 or poss[0] < 0 or poss[-1] >= self.size:
                return False
            if not (_strictly_increasing(offs) and _strictly_increasing(poss)):
                return False
            h = self._header_at(poss[-1])
            if h is None or h.last_offset != self.base_offset + offs[-1]:
                return False
        tdata = _read_all(self.time_fd)
        if len(tdata) % _time_entry.size:
            return False
        ts, toff = time_index_entries(tdata)
        if ts:
            if toff[0] < 0 or not _strictly_increasing(ts) or not _non_decreasing(toff):
                return False
        self.idx_off, self.idx_pos, self.time_ts, self.time_off = offs, poss, ts, toff
        if ts:
            self.max_timestamp = ts[-1]
            self.offset_of_max_timestamp = self.base_offset + toff[-1]
        self.bytes_since_index = self.size - poss[-1] if poss else self.size
        return True

    def _header_at(self, pos: int):
        raw = os.pread(self.fd, HEADER_SIZE, pos)
        if len(raw) < HEADER_SIZE:
            return None
        fields = HEADER.unpack(raw)
        size = fields[1] + LOG_OVERHEAD
        if fields[3] != 2 or size < HEADER_SIZE or pos + size > self.size:
            return None
        return BatchHeader(pos, size, fields)

    # -- index bookkeeping ---------------------------------------------------------------

    def _index_headers(self, headers, pos0: int, write: bool = True) -> None:
        """Account for batches appended at ``pos0 + h.pos`` (max timestamp, sparse entries)."""
        base = self.base_offset
        interval = self.index_interval
        bs = self.bytes_since_index
        mts = self.max_timestamp
        moff = self.offset_of_max_timestamp
        idx_new = time_new = None
        for h in headers:
            last = h.base_offset + h.last_offset_delta
            if h.max_timestamp > mts:
                mts = h.max_timestamp
                moff = last
            if bs > interval:
                rel = last - base
                p = pos0 + h.pos
                self.idx_off.append(rel)
                self.idx_pos.append(p)
                if write:
                    if idx_new is None:
                        idx_new = bytearray()
                    idx_new += _idx_entry.pack(rel, p)
                if mts > (self.time_ts[-1] if self.time_ts else NO_TIMESTAMP):
                    trel = moff - base
                    self.time_ts.append(mts)
                    self.time_off.append(trel)
                    if write:
                        if time_new is None:
                            time_new = bytearray()
                        time_new += _time_entry.pack(mts, trel)
                bs = 0
            bs += h.size
        self.bytes_since_index = bs
        self.max_timestamp = mts
        self.offset_of_max_timestamp = moff
        if idx_new:
            write_all(self.index_fd, idx_new)
        if time_new:
            write_all(self.time_fd, time_new)

    def write_index_files(self) -> None:
        """Rewrite both index files from the in-memory entries."""
        arr = array("i")
        for o, p in zip(self.idx_off, self.idx_pos):
            arr.append(o)
            arr.append(p)
        if _LITTLE:
            arr.byteswap()
        os.ftruncate(self.index_fd, 0)
        if arr:
            write_all(self.index_fd, arr.tobytes())
        tdata = b"".join(_time_entry.pack(t, o) for t, o in zip(self.time_ts, self.time_off))
        os.ftruncate(self.time_fd, 0)
        if tdata:
            write_all(self.time_fd, tdata)
        self.dirty = True

    def finalize_time_index(self) -> None:
        """Record the final max timestamp when the segment stops being active (like Kafka)."""
        last = self.time_ts[-1] if self.time_ts else NO_TIMESTAMP
        if self.max_timestamp > last:
            rel = self.offset_of_max_timestamp - self.base_offset
            self.time_ts.append(self.max_timestamp)
            self.time_off.append(rel)
            write_all(self.time_fd, _time_entry.pack(self.max_timestamp, rel))
            self.dirty = True

    # -- append / lookup -----------------------------------------------------------------

    def append(self, buf, headers, now_ms: int) -> None:
        """Write ``buf`` (whose batches are ``headers``, positions relative to ``buf``) at the
        end with one write, then update the indexes."""
        pos0 = self.size
        if pos0 == 0 and self.rolling_ts is None:
            self.rolling_ts = now_ms
        try:
            write_all(self.fd, buf)
        except BaseException:
            # never leave a partial batch behind (e.g. disk full)
            try:
                os.ftruncate(self.fd, pos0)
            except OSError:
                pass
            raise
        self.size = pos0 + len(buf)
        self.dirty = True
        if self.stale_index:
            self._rewrite_index_files()
        try:
            self._index_headers(headers, pos0)
        except OSError as e:
            # The batches are in the log and in the in-memory index: keep them, and rewrite
            # the index files from memory once the disk takes writes again.
            log.warning("cannot write the index of %s (%s); rewriting it later", self.log_path, e)
            self.stale_index = True

    def _rewrite_index_files(self) -> None:
        try:
            self.write_index_files()
            self.stale_index = False
        except OSError as e:
            log.warning("cannot rewrite the index of %s yet: %s", self.log_path, e)

    def lookup(self, offset: int) -> tuple[int, int]:
        """``(i, position)`` of the last index entry whose offset is <= ``offset`` (i = -1:
        start of the segment)."""
        i = bisect_right(self.idx_off, offset - self.base_offset) - 1
        return i, (self.idx_pos[i] if i >= 0 else 0)

    def find(self, offset: int, end: int | None = None):
        """Header of the first batch with last offset >= ``offset`` starting before ``end``
        (default: the segment's size), or None. Rebuilds the offset index if it turns out to
        disagree with the log."""
        if end is None:
            end = self.size
        try:
            return self._find(offset, end)
        except IndexInconsistent:
            log.warning("index of segment %s is inconsistent with the log; rebuilding",
                        self.log_path)
            self.rebuild_indexes()
            return self._find(offset, min(end, self.size), check=False)

    def _find(self, offset, end, check=True):
        i, pos = self.lookup(offset)
        if pos >= end:
            if check and pos > self.size:
                raise IndexInconsistent
            return None
        sc = Scan(self.fd, pos, end)
        first = check and i >= 0
        for h, _ in sc:
            if first:
                if h.last_offset != self.base_offset + self.idx_off[i]:
                    raise IndexInconsistent
                first = False
            if h.last_offset >= offset:
                return h
        if check and sc.pos < end:
            raise IndexInconsistent
        return None

    def position_of(self, offset: int, end: int | None = None) -> int:
        """File position of the first batch with last offset >= ``offset`` (or ``end``)."""
        if end is None:
            end = self.size
        h = self.find(offset, end)
        return end if h is None else h.pos

    def last_modified_ms(self) -> int:
        try:
            return int(os.stat(self.log_path).st_mtime * 1000)
        except OSError:  # deleted concurrently
            return NO_TIMESTAMP

    def largest_timestamp(self) -> int:
        """Max timestamp, or the file's mtime when no batch carries a timestamp (as Kafka)."""
        return self.max_timestamp if self.max_timestamp >= 0 else self.last_modified_ms()

    # -- recovery / truncation -------------------------------------------------------------

    def rebuild_indexes(self) -> int:
        """Rebuild the in-memory and on-disk indexes from a header scan; returns the end of
        the last well-formed batch (the log itself is not modified)."""
        self._reset_indexes()
        sc = Scan(self.fd, 0, self.size)
        batch = []
        for h, _ in sc:
            batch.append(h)
            if len(batch) >= 4096:
                self._index_headers(batch, 0, write=False)
                batch.clear()
        self._index_headers(batch, 0, write=False)
        self.write_index_files()
        return sc.pos

    def recover(self) -> int:
        """Validate every batch (framing + CRC), truncate the log at the first bad or partial
        one, rebuild the indexes. Returns the number of bytes truncated."""
        self._reset_indexes()
        sc = Scan(self.fd, 0, self.size, data=True)
        batch = []
        valid_end = 0
        for h, data in sc:
            if crc32c(memoryview(data)[ATTRIBUTES_OFFSET:h.size]) != h.crc or h.count < 0:
                break
            batch.append(h)
            valid_end = h.pos + h.size
            if len(batch) >= 4096:
                self._index_headers(batch, 0, write=False)
                batch.clear()
        self._index_headers(batch, 0, write=False)
        truncated = self.size - valid_end
        if truncated:
            log.warning("recovery: truncating %s at position %d (%d bytes of invalid or "
                        "partial data)", self.log_path, valid_end, truncated)
            os.ftruncate(self.fd, valid_end)
            self.size = valid_end
        self.write_index_files()
        self.dirty = True
        return truncated

    def truncate(self, pos: int, cut_offset: int) -> None:
        """Drop everything from file position ``pos`` (a batch boundary); ``cut_offset`` is the
        first offset removed (for the time index)."""
        os.ftruncate(self.fd, pos)
        self.size = pos
        k = bisect_left(self.idx_pos, pos)
        del self.idx_off[k:]
        del self.idx_pos[k:]
        os.ftruncate(self.index_fd, k * 8)
        kt = bisect_left(self.time_off, cut_offset - self.base_offset)
        del self.time_ts[kt:]
        del self.time_off[kt:]
        os.ftruncate(self.time_fd, kt * 12)
        # recompute the max timestamp from the last surviving time entry on
        if kt:
            mts = self.time_ts[-1]
            moff = self.base_offset + self.time_off[-1]
            start = self.position_of(moff, pos)
        else:
            mts, moff, start = NO_TIMESTAMP, -1, 0
        for h, _ in Scan(self.fd, start, pos):
            if h.max_timestamp > mts:
                mts = h.max_timestamp
                moff = h.last_offset
        self.max_timestamp = mts
        self.offset_of_max_timestamp = moff
        self.bytes_since_index = pos - self.idx_pos[-1] if self.idx_pos else pos
        if pos == 0:
            self.rolling_ts = None
        self.dirty = True

    def last_offset(self) -> int | None:
        """Last offset in the segment (scans from the last index entry), None when empty."""
        _i, pos = self.lookup(1 << 62)
        last = None
        for h, _ in Scan(self.fd, pos, self.size):
            last = h.last_offset
        return last

    def tail_is_clean(self) -> tuple[bool, int | None]:
        """``(ok, last_offset)``: whether the batches after the last index entry reach the end
        of the file exactly, and the last offset seen (None when empty)."""
        i, pos = self.lookup(1 << 62)
        sc = Scan(self.fd, pos, self.size)
        last = None
        first = i >= 0
        for h, _ in sc:
            if first and h.last_offset != self.base_offset + self.idx_off[i]:
                return False, None
            first = False
            last = h.last_offset
            if h.max_timestamp > self.max_timestamp:
                self.max_timestamp = h.max_timestamp
                self.offset_of_max_timestamp = h.last_offset
        return sc.pos == self.size, last

    # -- lifetime ----------------------------------------------------------------------------

    def fds(self) -> tuple[int, int, int]:
        return self.fd, self.index_fd, self.time_fd

    def close(self) -> None:
        """Close the files for good (the segment is closed or deleted)."""
        OPEN_SEGMENTS.closed(self)
        self.close_files(parked=False)

    def park(self) -> None:
        """Close the files until the next access reopens them."""
        OPEN_SEGMENTS.closed(self)
        self.close_files(parked=True)

    def close_files(self, parked: bool) -> None:
        if self.stale_index and self._fd >= 0:
            self._rewrite_index_files()
        self.parked = parked
        for name in ("_fd", "_index_fd", "_time_fd"):
            fd = getattr(self, name)
            if fd >= 0:
                setattr(self, name, -1)
                try:
                    os.close(fd)
                except OSError:
                    pass

    def delete(self) -> None:
        self.close()
        for p in (self.log_path, self.index_path, self.timeindex_path):
            try:
                os.unlink(p)
            except FileNotFoundError:
                pass

    def __repr__(self):
        return f"Segment(base={self.base_offset}, size={self.size})"


def offset_index_entries(data) -> tuple[array, array]:
    """The whole entries of an ``.index`` file's bytes: (relative offsets, file positions)."""
    arr = array("i")
    arr.frombytes(data[:len(data) - len(data) % _idx_entry.size])
    if _LITTLE:
        arr.byteswap()
    return arr[0::2], arr[1::2]


def time_index_entries(data) -> tuple[array, array]:
    """The whole entries of a ``.timeindex`` file's bytes: (timestamps, relative offsets)."""
    ts, rel = array("q"), array("i")
    for t, o in _time_entry.iter_unpack(data[:len(data) - len(data) % _time_entry.size]):
        ts.append(t)
        rel.append(o)
    return ts, rel


def _read_all(fd: int) -> bytes:
    size = os.fstat(fd).st_size
    return os.pread(fd, size, 0) if size else b""


def _strictly_increasing(a) -> bool:
    return all(x < y for x, y in zip(a, a[1:]))


def _non_decreasing(a) -> bool:
    return all(x <= y for x, y in zip(a, a[1:]))


def now_ms() -> int:
    return int(time.time() * 1000)
