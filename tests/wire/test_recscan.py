"""The plain-Python record walk (wire/_recscan_py.py) answers exactly as the native one
(wire/_recscan.c), so that a josefk installed without a C compiler behaves the same: on a corpus
of well-formed batches of every codec and on thousands of broken ones (wrong counts, random
bytes, bit flips, cuts and insertions, as the fuzzer makes them)."""
from __future__ import annotations

import random

import pytest

from josefk.wire import _recscan, _recscan_py
from josefk.wire import records as R
from josefk.wire.batch import HEADER_SIZE, read_header
from josefk.wire.records import build_batch

TS = 1_700_000_000_000
WINDOWS = [(-(1 << 63), (1 << 63) - 1), (-5, 5), (0, 0), (-100_000, -1)]


def _outcome(fn, *args):
    try:
        return "ok", fn(*args)
    except Exception as e:  # noqa: BLE001 - the error is what is compared
        return type(e).__name__, str(e)


def _latest(impl, data, count):
    into = {b"old": (b"x", 0)}
    out = _outcome(impl.latest, data, count, into, 7)
    return out, list(into.items())


def _same(data, count):
    for need_key in (False, True):
        for lo, hi in WINDOWS:
            assert _outcome(_recscan.scan, data, count, need_key, lo, hi) == \
                _outcome(_recscan_py.scan, data, count, need_key, lo, hi), (data, count)
    assert _latest(_recscan, data, count) == _latest(_recscan_py, data, count), (data, count)


def _corpus(rng: random.Random):
    """(records section, count) of generated batches: every codec, keys and nulls, headers,
    timestamps spread around TS."""
    for _ in range(300):
        n = rng.randrange(0, 12)
        recs = [(rng.choice((None, b"k", rng.randbytes(rng.randrange(0, 20)))),
                 rng.choice((None, rng.randbytes(rng.randrange(0, 300)))),
                 rng.choice((None, [("h", b"v"), ("n", None)])),
                 TS + rng.randrange(-200_000, 200_000))
                for _ in range(n)]
        if not recs:
            yield b"", 0
            continue
        codec = rng.randrange(0, 5)
        buf = build_batch(recs, compression=codec)
        h = read_header(buf, 0)
        section = bytes(buf[h.pos + HEADER_SIZE:h.pos + h.size])
        yield (section if codec == R.NONE else R.decompress(codec, section, 1 << 24)), h.count


def _broken(section: bytes, count: int, rng: random.Random):
    yield section, count + rng.choice((1, 2, 1000))
    yield section, max(count - 1, 0)
    yield rng.randbytes(rng.randrange(0, 120)), rng.randrange(0, 5)
    for _ in range(8):
        b = bytearray(section)
        for _edit in range(rng.randrange(1, 4)):
            if not b:
                break
            pos = rng.randrange(len(b))
            op = rng.random()
            if op < 0.4:
                b[pos] ^= 1 << rng.randrange(8)
            elif op < 0.6:
                b[pos:pos + 1] = rng.choice((b"\xff", b"\x01", b"\x00", b"\x7f", b"\x80" * 10))
            elif op < 0.8:
                del b[pos:pos + rng.randrange(1, 8)]
            else:
                b[pos:pos] = rng.randbytes(rng.randrange(1, 6))
        yield bytes(b), count


@pytest.mark.parametrize("seed", range(4))
def test_python_walk_answers_as_the_native_one(seed):
    rng = random.Random(seed)
    for section, count in _corpus(rng):
        _same(section, count)
        for data, claimed in _broken(section, count, rng):
            _same(data, claimed)


def test_buffer():
    assert len(_recscan_py.buffer(5)) == len(_recscan.buffer(5)) == 5
    assert _outcome(_recscan_py.buffer, -1) == _outcome(_recscan.buffer, -1)
