import math
import random

import pytest

from bench.histogram import Histogram, bucket_bounds, bucket_of, merged


def test_every_value_lies_in_its_bucket_and_buckets_are_contiguous():
    previous_high = -1
    for index in range(bucket_of(1 << 40) + 1):
        low, high = bucket_bounds(index)
        assert low == previous_high + 1
        assert bucket_of(low) == index and bucket_of(high) == index
        previous_high = high


@pytest.mark.parametrize("value", [0, 1, 255, 256, 257, 1000, 12_345, 999_999, 3_600_000_000])
def test_a_bucket_is_under_one_percent_of_its_values(value):
    low, high = bucket_bounds(bucket_of(value))
    assert low <= value <= high
    assert high - low <= max(0, low) / 100


def test_small_values_are_exact():
    h = Histogram()
    for v in range(1, 101):
        h.record(v)
    assert [h.percentile(q) for q in (1, 50, 99, 100)] == [1, 50, 99, 100]
    assert (h.count, h.min, h.max, h.mean()) == (100, 1, 100, 50.5)


def test_percentiles_match_nearest_rank_within_the_bucket_precision():
    rng = random.Random(35)
    values = [int(rng.lognormvariate(7, 1.5)) for _ in range(20_000)]
    h = Histogram()
    for v in values:
        h.record(v)
    values.sort()
    for q in (50, 90, 99, 99.9):
        exact = values[math.ceil(len(values) * q / 100) - 1]
        got = h.percentile(q)
        assert exact <= got <= exact * 1.008 + 1, (q, exact, got)
    assert h.percentile(100) == values[-1] == h.max


def test_a_percentile_never_exceeds_the_maximum():
    h = Histogram()
    h.record(1_000_001)
    assert h.percentile(50) == h.percentile(99.9) == 1_000_001


def test_empty_and_negative():
    h = Histogram()
    assert h.percentile(99) is None and h.mean() is None
    h.record(-5)
    assert (h.min, h.max, h.percentile(50)) == (0, 0, 0)


def test_merge_equals_recording_everything_in_one():
    rng = random.Random(7)
    parts, whole = [Histogram() for _ in range(3)], Histogram()
    for _ in range(3000):
        v = rng.randrange(0, 5_000_000)
        rng.choice(parts).record(v)
        whole.record(v)
    m = merged(parts)
    assert (m.counts, m.count, m.total, m.min, m.max) == \
        (whole.counts, whole.count, whole.total, whole.min, whole.max)
    assert merged([Histogram(), m]).percentile(99) == whole.percentile(99)


def test_json_round_trip():
    h = Histogram()
    for v in (3, 300, 30_000, 3_000_000):
        h.record(v)
    back = Histogram.from_json(h.to_json())
    assert back.counts == h.counts and back.percentile(75) == h.percentile(75)
    assert (back.count, back.total, back.min, back.max) == (4, 3_030_303, 3, 3_000_000)


def test_the_distribution_agrees_with_percentile_and_ends_at_the_maximum():
    h = Histogram()
    rng = random.Random(7)
    for _ in range(5000):
        h.record(int(rng.lognormvariate(8, 1)))
    points = h.distribution()
    assert [q for q, _ in points] == sorted(q for q, _ in points)
    assert [v for _, v in points] == sorted(v for _, v in points)
    assert points[-1] == (100.0, h.max)
    for q, v in points:
        assert h.percentile(q - 1e-9) <= v
