"""`cluster()`: ZooKeeper and several josefk broker processes on 127.0.0.1, for tests.

Built on the project's one launcher of local clusters (``josefk.faults.processes.LocalCluster``)
with its short failure detection (6 s ZooKeeper sessions, 4 s replica lag), topics and internal
topics replicated over up to three brokers, and a control endpoint on every broker for
`inject` and `delay`. ``repair()`` undoes what a test did to it.
"""
from __future__ import annotations

import shutil
import tempfile

from josefk.faults.processes import QUICK_FAILOVER, FaultUnavailable, LocalCluster
from josefk.zk.local_server import free_port
from josefk.testing.admin import Admin
from josefk.testing.faults import Faults, Unavailable
from josefk.testing.lifecycle import Lifecycle
from josefk.testing.local import kafka_properties
from josefk.zk.local_server import ZooKeeperNotInstalled, find_classpath, find_java

START_TIMEOUT = 60.0
REPAIR_TIMEOUT = 60.0


def cluster(brokers: int = 3, properties: dict | None = None, *, topics=None, root=None,
            isolation: bool = True, **keywords) -> "Cluster":
    """Start ZooKeeper and ``brokers`` josefk brokers (node ids 1..n) and return once each
    lists them all and a controller; close it (or use it as a context manager) to stop
    everything. ``properties`` (or keywords, ``_`` for ``.``) go to every broker; ``topics``
    as in `josefk.testing.broker`; ``root`` keeps the data and logs there (else a temporary
    dir, removed on close). ``isolation`` makes `Cluster.isolate` possible where this machine
    allows network cuts (root, cgroup2, iptables). Raises `Unavailable` without a Java runtime
    and ZooKeeper's jars."""
    if not isinstance(brokers, int) or brokers < 1:
        raise ValueError(f"brokers must be a positive integer, got {brokers!r}")
    return Cluster(brokers, kafka_properties(properties, keywords), topics, root, isolation)


class ClusterBroker(Faults):
    """One broker of a `Cluster`: its ``node_id``, ``bootstrap_servers``, and its faults."""

    def __init__(self, process):
        self.process = process
        self.node_id = process.node_id
        self.control = ("127.0.0.1", int(process.overrides["josefk.testing.control.port"]))

    @property
    def bootstrap_servers(self) -> str:
        return self.process.bootstrap

    @property
    def running(self) -> bool:
        """Whether its process runs (a paused one runs, silently)."""
        return self.process.is_running()

    def _control(self, command: dict) -> dict:
        from josefk.broker.injection import FaultError

        # A paused or stopped broker cannot answer its control endpoint: say so now, not after
        # the connection's timeout.
        if self.process.paused:
            raise FaultError(f"broker {self.node_id} is paused: resume it to change its faults")
        if not self.running:
            raise FaultError(f"broker {self.node_id} is not running: restart it to change its "
                             f"faults")
        return super()._control(command)

    def __repr__(self) -> str:
        return f"<josefk.testing cluster broker {self.node_id} on {self.bootstrap_servers}>"


class Cluster(Admin, Lifecycle):
    """ZooKeeper and josefk brokers in processes of their own. ``bootstrap_servers`` names every
    broker (clients find the live ones); ``brokers`` maps node ids to `ClusterBroker`.

    Faults, on a node id (or a `ClusterBroker`): ``kill`` (SIGKILL), ``shutdown`` (SIGTERM, a
    controlled shutdown), ``restart`` (start it again on its port and data), ``pause`` /
    ``resume`` (SIGSTOP / SIGCONT: past the 6 s ZooKeeper session the others take over),
    ``isolate`` (cut it off from the other brokers and ZooKeeper; clients still reach it) and
    ``heal``. A fault this machine cannot make raises `Unavailable`."""

    def __init__(self, size: int, properties: dict[str, str], topics, root, isolation: bool):
        try:
            find_java()
            find_classpath()
        except ZooKeeperNotInstalled as e:
            raise Unavailable(f"a josefk cluster needs ZooKeeper: {e}") from None
        self._tmp = None if root is not None else tempfile.mkdtemp(prefix="josefk-testing-")
        replicas = min(3, size)
        overrides = {**QUICK_FAILOVER,
                     "default.replication.factor": replicas,
                     "offsets.topic.replication.factor": replicas,
                     "transaction.state.log.replication.factor": replicas,
                     "transaction.state.log.min.isr": max(1, replicas - 1),
                     "transaction.state.log.num.partitions": 6,
                     **properties}
        self.local = LocalCluster(root or self._tmp, size, overrides=overrides,
                                  isolation=isolation, start_timeout=START_TIMEOUT)
        for process in self.local.brokers.values():
            process.overrides["josefk.testing.control.port"] = free_port()
        self.brokers = {i: ClusterBroker(p) for i, p in self.local.brokers.items()}
        self._start(lambda: self.local.start(START_TIMEOUT), topics)

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(b.bootstrap_servers for b in self.brokers.values())

    # -- faults ----------------------------------------------------------------------------------
    def kill(self, broker) -> None:
        self.local.kill(self._id(broker))

    def shutdown(self, broker) -> None:
        self.local.shutdown(self._id(broker))

    def restart(self, broker) -> None:
        self.local.restart(self._id(broker))

    def pause(self, broker) -> None:
        self.local.pause(self._id(broker))

    def resume(self, broker) -> None:
        self.local.resume(self._id(broker))

    def isolate(self, broker) -> None:
        try:
            self.local.isolate(self._id(broker))
        except FaultUnavailable as e:
            raise Unavailable(f"cannot isolate a broker here: {e}") from None

    def heal(self) -> None:
        self.local.heal()

    def repair(self, timeout: float = REPAIR_TIMEOUT) -> None:
        """Make the cluster whole again: end every cut, resume paused brokers, start stopped
        ones, clear every broker's faults, and wait until each lists them all."""
        self.local.heal()
        for i, b in self.brokers.items():
            if b.process.paused:
                self.local.resume(i)
            if not b.running:
                self.local.restart(i)
            b.clear_faults()
        self.local.wait_for_brokers(len(self.brokers), timeout)

    def _silent(self) -> set[str]:
        return {b.bootstrap_servers for b in self.brokers.values() if b.process.paused}

    def _id(self, broker) -> int:
        node_id = getattr(broker, "node_id", broker)
        if node_id not in self.brokers:
            raise ValueError(f"no broker {broker!r} in this cluster (node ids "
                             f"{sorted(self.brokers)})")
        return node_id

    # -- lifecycle -----------------------------------------------------------------------------------
    def _close(self) -> None:
        """Stop every broker, then ZooKeeper; end every cut; remove the temporary data."""
        try:
            self.local.stop()
        finally:
            if self._tmp is not None:
                shutil.rmtree(self._tmp, ignore_errors=True)

    def __repr__(self) -> str:
        return f"<josefk.testing cluster of {len(self.brokers)} on {self.bootstrap_servers}>"
