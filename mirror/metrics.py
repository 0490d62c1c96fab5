"""MirrorMaker 2's metrics with Kafka's names (MirrorSourceMetrics, MirrorCheckpointMetrics):
JMX group ``kafka.connect.mirror:type=MirrorSourceConnector,source=..,target=..,topic=..,
partition=..`` with ``record-count``, ``record-rate``, ``record-age-ms`` (``-min``, ``-max``,
``-avg``), ``replication-latency-ms`` (the same), ``byte-count`` and ``byte-rate``; and
``type=MirrorCheckpointConnector,source=..,target=..,group=..,topic=..,partition=..`` with
``checkpoint-latency-ms`` (the same). The worker's ``/metrics`` shows them as the Prometheus
JMX exporter does (``kafka_connect_mirror_mirrorsourceconnector_record_count``, dashes as
underscores), beside the Connect metrics.

Statistics are Kafka's sampled ones (two samples of 30 s): min, max and avg over the samples
still in the window (NaN without any), rates over the window's elapsed time (at least one
sample's length), ``-ms`` the last value. Tasks record per batch: a count, a sum, the least,
the greatest and the last value of their records."""
from __future__ import annotations

import math
import threading
import time

from prometheus_client.core import GaugeMetricFamily

from josefk.connect.runtime.metrics import PLUGINS

SAMPLES = 2
WINDOW_S = 30.0
SOURCE = "MirrorSourceConnector"
CHECKPOINT = "MirrorCheckpointConnector"
SOURCE_TAGS = ("source", "target", "topic", "partition")
CHECKPOINT_TAGS = ("source", "target", "group", "topic", "partition")


class Sampled:
    """One sensor's samples: [start, count, sum, min, max] each, the newest last."""

    __slots__ = ("samples", "last", "total")

    def __init__(self):
        self.samples: list[list[float]] = []
        self.last = math.nan
        self.total = 0.0  # every sum recorded (a Meter's cumulative count)

    def record(self, now: float, count: int, total: float, least: float, greatest: float,
               last: float) -> None:
        samples = self.samples
        if not samples or now - samples[-1][0] >= WINDOW_S:
            samples.append([now, 0, 0.0, math.inf, -math.inf])
            del samples[:-SAMPLES]
        sample = samples[-1]
        sample[1] += count
        sample[2] += total
        sample[3] = min(sample[3], least)
        sample[4] = max(sample[4], greatest)
        self.last = last
        self.total += total

    def _live(self, now: float) -> list[list[float]]:
        return [s for s in self.samples if now - s[0] < SAMPLES * WINDOW_S]

    def min(self, now: float) -> float:
        live = [s[3] for s in self._live(now) if s[1]]
        return min(live) if live else math.nan

    def max(self, now: float) -> float:
        live = [s[4] for s in self._live(now) if s[1]]
        return max(live) if live else math.nan

    def avg(self, now: float) -> float:
        live = self._live(now)
        count = sum(s[1] for s in live)
        return sum(s[2] for s in live) / count if count else math.nan

    def rate(self, now: float) -> float:
        """The sum per second over the window (Kafka's Rate: the elapsed time since the
        oldest sample, stretched to at least SAMPLES - 1 full windows)."""
        live = self._live(now)
        if not live:
            return 0.0
        elapsed = now - live[0][0]
        full = int(elapsed // WINDOW_S)
        if full < SAMPLES - 1:
            elapsed += (SAMPLES - 1 - full) * WINDOW_S
        return sum(s[2] for s in live) / elapsed


class SourcePartition:
    """One remote topic-partition's sensors (MirrorSourceMetrics.PartitionMetrics)."""

    __slots__ = ("records", "bytes", "age", "latency")

    def __init__(self):
        self.records, self.bytes = Sampled(), Sampled()
        self.age, self.latency = Sampled(), Sampled()

    def polled(self, count: int, size: int, now_ms: float, stamps: list[int]) -> None:
        """A batch of ``count`` records of ``size`` bytes polled at ``now_ms``; ``stamps``
        the timestamps of those that have one, in order."""
        now = time.monotonic()
        self.bytes.record(now, count, size, size, size, size)
        _ages(self.age, now, now_ms, stamps)

    def replicated(self, count: int, now_ms: float, stamps: list[int]) -> None:
        """``count`` records the target acknowledged by ``now_ms``; ``stamps`` as ``polled``."""
        now = time.monotonic()
        self.records.record(now, count, count, count, count, count)
        _ages(self.latency, now, now_ms, stamps)


def _ages(sensor: Sampled, now: float, now_ms: float, stamps: list[int]) -> None:
    """Record ``now_ms - stamp`` of each stamp, computed from their sum, least and greatest."""
    if stamps:
        n = len(stamps)
        sensor.record(now, n, n * now_ms - sum(stamps), now_ms - max(stamps),
                      now_ms - min(stamps), now_ms - stamps[-1])


class MirrorMetrics:
    """The process's MirrorMaker metrics (Kafka's tasks each register theirs with JMX, one
    registry per JVM): tasks add and remove their partitions, ``collect`` reads them at each
    scrape."""

    def __init__(self):
        self._lock = threading.Lock()
        self.sources: dict[tuple[str, ...], SourcePartition] = {}
        self.checkpoints: dict[tuple[str, ...], Sampled] = {}

    def source(self, source: str, target: str, topic: str, partition: int) -> SourcePartition:
        """New sensors of a remote partition for a task starting (counting from zero, as a
        new task's Metrics in Kafka), in place of a previous task's."""
        made = SourcePartition()
        with self._lock:
            self.sources[source, target, topic, str(partition)] = made
        return made

    def checkpoint(self, source: str, target: str, group: str, topic: str,
                   partition: int) -> Sampled:
        made = Sampled()
        with self._lock:
            self.checkpoints[source, target, group, topic, str(partition)] = made
        return made

    def forget(self, sensors) -> None:
        """Remove these sensors (their task stopped), not those a later task made."""
        with self._lock:
            for table in (self.sources, self.checkpoints):
                for key in [k for k, v in table.items() if any(v is s for s in sensors)]:
                    del table[key]

    def collect(self):
        now = time.monotonic()
        with self._lock:
            sources = list(self.sources.items())
            checkpoints = list(self.checkpoints.items())
        families = []

        def family(kind: str, name: str, doc: str, tags, rows):
            metric = GaugeMetricFamily(
                f"kafka_connect_mirror_{kind.lower()}_{name.replace('-', '_')}", doc,
                labels=tags)
            for labels, value in rows:
                metric.add_metric(list(labels), value)
            families.append(metric)

        def stats(kind, name, what, tags, rows):
            family(kind, name, f"The {what}.", tags, [(k, s.last) for k, s in rows])
            family(kind, f"{name}-max", f"The max {what}.", tags,
                   [(k, s.max(now)) for k, s in rows])
            family(kind, f"{name}-min", f"The min {what}.", tags,
                   [(k, s.min(now)) for k, s in rows])
            family(kind, f"{name}-avg", f"The average {what}.", tags,
                   [(k, s.avg(now)) for k, s in rows])

        family(SOURCE, "record-count",
               "Number of source records replicated to the target cluster.", SOURCE_TAGS,
               [(k, p.records.total) for k, p in sources])
        family(SOURCE, "record-rate", "Average number of source records replicated to the "
                                      "target cluster per second.", SOURCE_TAGS,
               [(k, p.records.rate(now)) for k, p in sources])
        stats(SOURCE, "record-age-ms", "age of incoming source records when replicated to the "
                                       "target cluster", SOURCE_TAGS,
              [(k, p.age) for k, p in sources])
        family(SOURCE, "byte-count", "Number of bytes replicated to the target cluster.",
               SOURCE_TAGS, [(k, p.bytes.total) for k, p in sources])
        family(SOURCE, "byte-rate", "Average number of bytes replicated per second.",
               SOURCE_TAGS, [(k, p.bytes.rate(now)) for k, p in sources])
        stats(SOURCE, "replication-latency-ms", "time it takes records to replicate from "
                                                "source to target cluster", SOURCE_TAGS,
              [(k, p.latency) for k, p in sources])
        stats(CHECKPOINT, "checkpoint-latency-ms", "time it takes consumer group offsets to "
                                                   "replicate from source to target cluster",
              CHECKPOINT_TAGS, checkpoints)
        return families

    def describe(self):
        return []  # names only known at a scrape: never checked at registration


METRICS = MirrorMetrics()
PLUGINS.register(METRICS)
