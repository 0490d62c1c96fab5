"""A Kafka cluster the tests did not start (``--kafka-bootstrap-servers``): topics and roles as
on josefk's brokers, and every fault `Unavailable`, since only josefk's own brokers take them."""
from __future__ import annotations

from josefk.testing.admin import Admin
from josefk.testing.faults import Unavailable

NO_FAULTS = ("faults need brokers started by josefk.testing; these tests run against the "
             "cluster at {} (--kafka-bootstrap-servers)")


class ExternalCluster(Admin):
    """``bootstrap_servers`` of a running cluster (Apache Kafka or josefk)."""

    def __init__(self, bootstrap_servers: str):
        self.bootstrap_servers = bootstrap_servers

    def _unavailable(self, *args, **kwargs):
        raise Unavailable(NO_FAULTS.format(self.bootstrap_servers))

    inject = delay = clear_faults = faults = kill = shutdown = restart = pause = resume = \
        isolate = heal = repair = _unavailable

    @property
    def brokers(self):
        self._unavailable()

    def __repr__(self) -> str:
        return f"<external Kafka cluster at {self.bootstrap_servers}>"
