"""broker/metrics.py: the histograms' buckets."""
import pytest

from josefk.broker.metrics import BUCKETS_MS, Histogram


def test_histogram_buckets_are_cumulative():
    h = Histogram()
    for ms in (0.1, 0.7, 3, 3, 20000):
        h.observe(ms)
    buckets = dict(h.buckets())
    assert buckets["0.5"] == 1 and buckets["1"] == 2 and buckets["5"] == 4
    assert buckets["10000"] == 4 and buckets["+Inf"] == 5
    assert len(buckets) == len(BUCKETS_MS) and h.sum == pytest.approx(20006.8)
