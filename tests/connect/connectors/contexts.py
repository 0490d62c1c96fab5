"""Small test doubles of the contexts the worker gives connectors and tasks (the Protocols of
josefk.connect.api.connector, as far as these connectors use them), for driving connectors
directly in their unit tests."""
from __future__ import annotations

import time


class Offsets:
    """The offsets a worker would have committed: {partition as JSON-able key: offset}."""

    def __init__(self, stored: dict | None = None):
        self.stored = dict(stored or {})

    @staticmethod
    def _key(partition: dict):
        return tuple(sorted(partition.items()))

    def offset(self, partition: dict) -> dict | None:
        return self.stored.get(self._key(partition))

    def offsets(self, partitions: list[dict]) -> list[dict | None]:
        return [self.offset(p) for p in partitions]

    def commit(self, records) -> None:
        """What the worker does once records are written: keep each partition's last offset."""
        for r in records:
            if r.source_offset is not None:
                self.stored[self._key(r.source_partition)] = r.source_offset


class SourceContext:
    def __init__(self, props: dict, offsets: Offsets | None = None):
        self.props, self.reader = props, offsets or Offsets()

    def configs(self):
        return self.props

    def offset_storage_reader(self):
        return self.reader


class ConnectorContext:
    def __init__(self):
        self.reconfigurations, self.errors = 0, []

    def request_task_reconfiguration(self):
        self.reconfigurations += 1

    def raise_error(self, error):
        self.errors.append(error)


class SinkContext:
    """What the JDBC sink uses of a SinkTaskContext: its settings, and the back-off it asks
    for before a retry."""

    def __init__(self, props: dict):
        self.props, self.timeouts = props, []

    def configs(self):
        return self.props

    def timeout(self, timeout_ms: int):
        self.timeouts.append(timeout_ms)


def poll_until(task, count: int, timeout: float = 10.0) -> list:
    """Poll ``task`` until ``count`` records came (or fail after ``timeout``); no more than
    ``count`` polls' worth is taken beyond: the result may hold more when a batch overshoots."""
    records, deadline = [], time.monotonic() + timeout
    while len(records) < count:
        assert time.monotonic() < deadline, f"{len(records)} of {count} records: {records}"
        records += task.poll() or []
    return records
