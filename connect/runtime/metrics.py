"""The worker's Prometheus metrics, named as Kafka Connect's JMX metrics appear through the
Prometheus JMX exporter (``kafka_connect_<group>_<metric>``, dashes as underscores), labelled
by connector and task. Tasks count per batch, not per record. ``render()`` is the
``/metrics`` body, with the metrics plug-ins register in ``PLUGINS`` (MirrorMaker's)."""
from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest

from josefk.connect.runtime.seams import ConnectorTaskId, State

_TASK = ("connector", "task")

PLUGINS = CollectorRegistry(auto_describe=False)
"""Metrics of connectors' own, for the process (Kafka's plug-ins report theirs to JMX)."""


class ConnectMetrics:
    def __init__(self, registry: CollectorRegistry | None = None):
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.connector_status = Gauge(
            "kafka_connect_connector_status", "1 for the connector's current state",
            ("connector", "status"), registry=r)
        self.task_status = Gauge(
            "kafka_connect_connector_task_status", "1 for the task's current state",
            ("connector", "task", "status"), registry=r)
        self.poll = Counter("kafka_connect_source_task_source_record_poll",
                            "Records polled from the source task (before transforms)",
                            _TASK, registry=r)
        self.write = Counter("kafka_connect_source_task_source_record_write",
                             "Records written to Kafka (after transforms and conversion)",
                             _TASK, registry=r)
        self.read = Counter("kafka_connect_sink_task_sink_record_read",
                            "Records read from Kafka (before transforms)", _TASK, registry=r)
        self.send = Counter("kafka_connect_sink_task_sink_record_send",
                            "Records given to the sink task's put (after transforms)",
                            _TASK, registry=r)
        self.commit_avg = Gauge("kafka_connect_task_offset_commit_avg_time_ms",
                                "Average time an offset commit takes", _TASK, registry=r)
        self.commit_max = Gauge("kafka_connect_task_offset_commit_max_time_ms",
                                "Longest time an offset commit took", _TASK, registry=r)
        self.dlq = Counter("kafka_connect_task_error_deadletterqueue_produce_requests",
                           "Records written to the dead letter queue", _TASK, registry=r)
        self.record_errors = Gauge("kafka_connect_task_error_total_record_errors",
                                   "Records that failed in the pipeline", _TASK, registry=r)
        self.records_skipped = Gauge("kafka_connect_task_error_total_records_skipped",
                                     "Records skipped because of errors", _TASK, registry=r)
        self.connector_count = Gauge("kafka_connect_worker_connector_count",
                                     "Connectors on this worker", registry=r)
        self.task_count = Gauge("kafka_connect_worker_task_count", "Tasks on this worker",
                                registry=r)

    def task(self, id: ConnectorTaskId, sink: bool) -> "TaskMetrics":
        return TaskMetrics(self, (id.connector, str(id.task)), sink)

    def state(self, id: str | ConnectorTaskId, state: State) -> None:
        """One gauge set to 1 for the current state, the others of ``id`` to 0."""
        for each in State:
            value = 1 if each is state else 0
            if isinstance(id, ConnectorTaskId):
                self.task_status.labels(id.connector, str(id.task), each.value.lower()).set(value)
            else:
                self.connector_status.labels(id, each.value.lower()).set(value)

    def forget(self, id: str | ConnectorTaskId) -> None:
        for each in State:
            try:
                if isinstance(id, ConnectorTaskId):
                    self.task_status.remove(id.connector, str(id.task), each.value.lower())
                else:
                    self.connector_status.remove(id, each.value.lower())
            except KeyError:
                pass

    def render(self) -> bytes:
        return generate_latest(self.registry) + generate_latest(PLUGINS)


class TaskMetrics:
    """One task's counters (labels bound once): a source's poll and write, a sink's read and
    send, and both kinds' commit times and errors."""

    def __init__(self, metrics: ConnectMetrics, labels: tuple[str, str], sink: bool):
        if sink:
            self.read = metrics.read.labels(*labels)
            self.send = metrics.send.labels(*labels)
        else:
            self.poll = metrics.poll.labels(*labels)
            self.write = metrics.write.labels(*labels)
        self.dlq = metrics.dlq.labels(*labels)
        self.record_errors = metrics.record_errors.labels(*labels)
        self.records_skipped = metrics.records_skipped.labels(*labels)
        self._commits, self._commit_total = 0, 0.0
        self._avg = metrics.commit_avg.labels(*labels)
        self._max = metrics.commit_max.labels(*labels)
        self._longest = 0.0

    def committed(self, ms: float) -> None:
        self._commits += 1
        self._commit_total += ms
        self._longest = max(self._longest, ms)
        self._avg.set(self._commit_total / self._commits)
        self._max.set(self._longest)
