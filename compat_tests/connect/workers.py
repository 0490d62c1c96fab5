"""``josefk connect`` workers as real processes for the Connect scenarios: a distributed
worker's properties as Kafka's config/connect-distributed.properties has them (the internal
topics' replication factor as the target allows), a group of such workers, and REST calls
retried while the group rebalances (409), as Connect's clients do."""
from __future__ import annotations

import time
import uuid
from pathlib import Path

import httpx

from compat_tests.http_services import ServiceProcess


def distributed_props(bootstrap: str, group: str, replication_factor: int = 1,
                      **overrides) -> dict:
    """config/connect-distributed.properties (JsonConverter with schemas, the three topics),
    with the group's own topic names and timings short enough for tests."""
    return {"bootstrap.servers": bootstrap, "group.id": group,
            "key.converter": "org.apache.kafka.connect.json.JsonConverter",
            "value.converter": "org.apache.kafka.connect.json.JsonConverter",
            "key.converter.schemas.enable": "true", "value.converter.schemas.enable": "true",
            "offset.storage.topic": f"{group}-offsets", "config.storage.topic": f"{group}-configs",
            "status.storage.topic": f"{group}-status",
            "offset.storage.replication.factor": str(replication_factor),
            "config.storage.replication.factor": str(replication_factor),
            "status.storage.replication.factor": str(replication_factor),
            "offset.storage.partitions": "5", "status.storage.partitions": "2",
            "offset.flush.interval.ms": "500", "session.timeout.ms": "6000",
            "heartbeat.interval.ms": "500", "scheduled.rebalance.max.delay.ms": "1000",
            **overrides}


class Workers:
    """``count`` distributed workers of one new group on ``bootstrap``; ``stop()`` ends every
    one still running."""

    def __init__(self, bootstrap: str, log_dir: Path, count: int = 2,
                 replication_factor: int = 1, **overrides):
        self.group = f"connect-{uuid.uuid4().hex[:8]}"
        self.props = distributed_props(bootstrap, self.group, replication_factor, **overrides)
        self.log_dir = Path(log_dir)
        self.processes: list[ServiceProcess] = []
        try:
            for _ in range(count):
                self.add()
        except BaseException:
            self.stop()
            raise

    def add(self) -> ServiceProcess:
        n = len(self.processes)
        worker = ServiceProcess("connect", self.props, self.log_dir / f"{self.group}-{n}.log")
        self.processes.append(worker)
        return worker.start()

    @property
    def urls(self) -> list[str]:
        return [w.url for w in self.processes]

    def by_id(self, worker_id: str) -> ServiceProcess:
        """The worker a status's ``worker_id`` (host:port) names."""
        return next(w for w in self.processes if w.url.endswith("//" + worker_id))

    def stop(self) -> None:
        for worker in self.processes:
            worker.stop(timeout=30)


def call(method: str, url: str, timeout: float = 60, **kwargs) -> httpx.Response:
    """A request answered 409 while the group rebalances is asked again."""
    deadline = time.monotonic() + timeout
    while True:
        r = httpx.request(method, url, timeout=30, **kwargs)
        if r.status_code != 409 or time.monotonic() > deadline:
            return r
        time.sleep(0.5)
