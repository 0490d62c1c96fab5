"""A log-bucketed latency histogram in the manner of HdrHistogram, for bench.omb.

Values are non-negative integers (bench.omb records microseconds). Values below 256 have a
bucket each; above, every power of two is split into 128 buckets, so a bucket is at most 1/128
of its lower bound wide (under 0.8% relative error, about what HdrHistogram gives with 2
significant digits). A percentile is the highest value its bucket can hold, as HdrHistogram's
``getValueAtPercentile`` answers, capped by the exact maximum. Histograms of several processes
merge by adding counts, and travel as JSON (``to_json`` / ``from_json``).

The PyPI ``hdrhistogram`` package was not used: its wheel requires ``setuptools>=83`` and
``pbr`` at run time, which would upgrade the environment's setuptools for a few dozen lines.
"""
from __future__ import annotations

import math

SUB_BITS = 8                  # values under 2**8 are exact
HALF = 1 << (SUB_BITS - 1)    # buckets per power of two above that: 128


def bucket_of(value: int) -> int:
    if value < (1 << SUB_BITS):
        return value
    shift = value.bit_length() - SUB_BITS
    return (shift << (SUB_BITS - 1)) + (value >> shift)


def bucket_bounds(index: int) -> tuple[int, int]:
    """The lowest and highest value of bucket ``index``."""
    shift = max(0, (index >> (SUB_BITS - 1)) - 1)
    low = (index - (shift << (SUB_BITS - 1))) << shift
    return low, low + (1 << shift) - 1


class Histogram:
    __slots__ = ("counts", "count", "total", "min", "max")

    def __init__(self) -> None:
        self.counts: dict[int, int] = {}
        self.count = 0
        self.total = 0
        self.min: int | None = None
        self.max: int | None = None

    def record(self, value: int) -> None:
        if value < 0:
            value = 0
        b = bucket_of(value)
        self.counts[b] = self.counts.get(b, 0) + 1
        self.count += 1
        self.total += value
        if self.max is None or value > self.max:
            self.max = value
        if self.min is None or value < self.min:
            self.min = value

    def merge(self, other: "Histogram") -> "Histogram":
        for b, n in other.counts.items():
            self.counts[b] = self.counts.get(b, 0) + n
        self.count += other.count
        self.total += other.total
        if other.count:
            self.max = other.max if self.max is None else max(self.max, other.max)
            self.min = other.min if self.min is None else min(self.min, other.min)
        return self

    def percentile(self, q: float) -> int | None:
        """The value at or under which ``q`` percent of the recorded values fall (nearest
        rank), as its bucket's highest value, never above the recorded maximum."""
        if not self.count:
            return None
        rank = max(1, math.ceil(q / 100 * self.count))
        seen = 0
        for b in sorted(self.counts):
            seen += self.counts[b]
            if seen >= rank:
                return min(bucket_bounds(b)[1], self.max)
        return self.max

    def distribution(self) -> list[tuple[float, int]]:
        """(percentile, value) at every occupied bucket's end, in order: HdrHistogram's
        percentile distribution, the points of a latency-by-percentile plot."""
        points, seen = [], 0
        for b in sorted(self.counts):
            seen += self.counts[b]
            points.append((100.0 * seen / self.count, min(bucket_bounds(b)[1], self.max)))
        return points

    def mean(self) -> float | None:
        return self.total / self.count if self.count else None

    def to_json(self) -> dict:
        return {"counts": {str(b): n for b, n in self.counts.items()}, "count": self.count,
                "total": self.total, "min": self.min, "max": self.max}

    @classmethod
    def from_json(cls, data: dict) -> "Histogram":
        h = cls()
        h.counts = {int(b): n for b, n in data["counts"].items()}
        h.count, h.total, h.min, h.max = data["count"], data["total"], data["min"], data["max"]
        return h


def merged(histograms) -> Histogram:
    out = Histogram()
    for h in histograms:
        out.merge(h)
    return out
