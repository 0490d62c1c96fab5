"""MirrorMaker 2's metrics: Kafka's sampled statistics (two windows of 30 s: min, max, avg,
rates, the last value), per-batch recording from timestamps, and their Prometheus names and
labels on the worker's /metrics."""
import math

from prometheus_client.parser import text_string_to_metric_families

from josefk.connect.runtime.metrics import ConnectMetrics
from josefk.mirror.metrics import METRICS, WINDOW_S, Sampled, SourcePartition


def test_sampled_statistics_over_two_windows():
    s = Sampled()
    assert math.isnan(s.min(0)) and math.isnan(s.max(0)) and math.isnan(s.avg(0))
    assert s.rate(0) == 0.0
    s.record(100.0, 2, 30.0, 10.0, 20.0, 20.0)
    s.record(110.0, 1, 40.0, 40.0, 40.0, 40.0)
    assert (s.min(110), s.max(110), s.avg(110), s.last) == (10.0, 40.0, 70.0 / 3, 40.0)
    # one sample 10 s old: the elapsed time is stretched to one full window more
    assert s.rate(110.0) == 70.0 / (10.0 + WINDOW_S)
    s.record(100.0 + WINDOW_S, 1, 5.0, 5.0, 5.0, 5.0)  # a second sample
    assert len(s.samples) == 2 and s.min(131) == 5.0 and s.max(131) == 40.0
    s.record(100.0 + 2 * WINDOW_S, 1, 7.0, 7.0, 7.0, 7.0)  # a third: the first is gone
    assert len(s.samples) == 2 and s.max(161) == 7.0 and s.min(161) == 5.0
    assert s.total == 82.0  # what a Meter's count keeps: everything
    assert math.isnan(s.max(100.0 + 5 * WINDOW_S))  # every sample expired


def test_ages_and_latencies_come_from_the_batchs_timestamps():
    p = SourcePartition()
    p.polled(3, 300, 10_000.0, [9_000, 9_500, 9_900])
    sample = p.age.samples[-1]
    assert sample[1:] == [3, 1000 + 500 + 100, 100.0, 1000.0]
    assert p.age.last == 100.0 and p.bytes.total == 300
    p.polled(2, 50, 10_000.0, [])  # records without timestamps: bytes only
    assert p.age.samples[-1][1] == 3 and p.bytes.total == 350
    p.replicated(3, 10_050.0, [9_000, 9_500, 9_900])
    assert p.records.total == 3 and p.latency.samples[-1][1:] == [3, 1050 + 550 + 150,
                                                                  150.0, 1050.0]


def scrape() -> dict:
    found = {}
    for family in text_string_to_metric_families(ConnectMetrics().render().decode()):
        for sample in family.samples:
            found[sample.name, tuple(sorted(sample.labels.items()))] = sample.value
    return found


def test_the_worker_shows_them_with_the_jmx_exporters_names_until_forgotten():
    partition = METRICS.source("east", "west", "east.orders", 3)
    checkpoint = METRICS.checkpoint("east", "west", "app", "east.orders", 3)
    try:
        partition.polled(2, 64, 5_000.0, [4_000, 4_800])
        partition.replicated(2, 5_010.0, [4_000, 4_800])
        checkpoint.record(1.0, 1, 12.0, 12.0, 12.0, 12.0)
        got = scrape()
        tags = (("partition", "3"), ("source", "east"), ("target", "west"),
                ("topic", "east.orders"))
        prefix = "kafka_connect_mirror_mirrorsourceconnector_"
        assert got[prefix + "record_count", tags] == 2
        assert got[prefix + "byte_count", tags] == 64
        assert got[prefix + "record_rate", tags] > 0 and got[prefix + "byte_rate", tags] > 0
        assert (got[prefix + "record_age_ms", tags], got[prefix + "record_age_ms_min", tags],
                got[prefix + "record_age_ms_max", tags],
                got[prefix + "record_age_ms_avg", tags]) == (200, 200, 1000, 600)
        assert (got[prefix + "replication_latency_ms_min", tags],
                got[prefix + "replication_latency_ms_max", tags]) == (210, 1010)
        group_tags = (("group", "app"), ("partition", "3"), ("source", "east"),
                      ("target", "west"), ("topic", "east.orders"))
        assert got["kafka_connect_mirror_mirrorcheckpointconnector_checkpoint_latency_ms",
                   group_tags] == 12
    finally:
        METRICS.forget([partition, checkpoint])
    assert not [k for k in scrape() if k[0].startswith("kafka_connect_mirror_")]


def test_a_task_that_stops_late_leaves_its_successors_sensors():
    old = METRICS.source("east", "west", "east.orders", 0)
    new = METRICS.source("east", "west", "east.orders", 0)
    try:
        METRICS.forget([old])
        assert list(METRICS.sources.values()) == [new]
    finally:
        METRICS.forget([new])
    assert METRICS.sources == {}
