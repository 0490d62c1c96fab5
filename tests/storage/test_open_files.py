"""Segment files open lazily and idle ones are closed: descriptor use stays bounded whatever
the number of partitions, and a parked segment reads and appends as before."""
import os
import threading

import pytest

from josefk.storage.log_validator import validate_records
from josefk.storage.manager import LogManager
from josefk.storage.open_files import OPEN_SEGMENTS, OpenSegments
from josefk.wire.records import build_batch


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.fixture
def small_limit():
    saved = OPEN_SEGMENTS.limit
    OPEN_SEGMENTS.limit = 20
    yield 20
    OPEN_SEGMENTS.limit = saved


def _append(lg, value: bytes):
    buf = bytearray(build_batch([(None, value, None, None)]))
    return lg.append(validate_records(buf, lg.config))


def test_descriptors_stay_bounded_with_many_partitions(tmp_path, small_limit):
    before = _fds()
    m = LogManager([str(tmp_path)])
    for p in range(300):
        _append(m.get_or_create("big", p), b"v%d" % p)
        assert _fds() - before <= 3 * small_limit + 3
    # every partition, parked or not, still reads its record and takes more
    for p in range(300):
        lg = m.get("big", p)
        assert _append(lg, b"w") == (1, 1)
        lg.high_watermark = lg.log_end_offset
        assert b"v%d" % p in bytes(lg.read(0, 1 << 20).records)
    assert _fds() - before <= 3 * small_limit + 3
    assert OPEN_SEGMENTS.parked > 0
    m.close()
    assert _fds() <= before
    # a restart loads all of them within the bound, too
    m = LogManager([str(tmp_path)])
    assert _fds() - before <= 3 * small_limit + 3
    assert [m.get("big", p).log_end_offset for p in (0, 150, 299)] == [2, 2, 2]
    m.close()


def test_old_segments_are_parked_after_load(tmp_path):
    m = LogManager([str(tmp_path)])
    lg = m.get_or_create("t", 0)
    for _ in range(5):
        _append(lg, b"x")
        lg.roll()
    m.close()
    m = LogManager([str(tmp_path)])
    segs = m.get("t", 0)._segments
    assert [s.parked for s in segs] == [True] * 5 + [False]
    lg = m.get("t", 0)
    lg.high_watermark = lg.log_end_offset
    assert b"x" in bytes(lg.read(0, 100).records)  # reopened on demand
    assert not segs[0].parked
    m.close()


class _Seg:
    def __init__(self, lock):
        self.lock = lock
        self.used = False
        self.closed = False

    def close_files(self, parked):
        self.closed = parked


def test_sweep_skips_used_busy_and_own_segments():
    cache = OpenSegments(limit=2)
    mine = threading.RLock()
    other = threading.RLock()
    held = threading.Lock()
    a, b, c = _Seg(other), _Seg(held), _Seg(mine)
    for s in (a, b, c):
        cache.opened(s)
    assert a.closed and not b.closed and not c.closed  # oldest idle one goes
    held.acquire()  # a log busy in another thread: its segment is not touched
    d = _Seg(mine)
    d.used = True
    cache.opened(d)
    assert not b.closed and not c.closed and not d.closed
    held.release()
    cache.opened(_Seg(mine))
    assert b.closed and not c.closed
