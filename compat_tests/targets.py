"""Where the real-client scenarios run: the shared single broker, or a 3-broker ZooKeeper cluster
in one of two shapes. A scenario takes the ``target`` fixture (a target shared by the session) or
``target_factory`` (a target of its own, to restart or reconfigure) and runs unchanged on each:

* ``single``: one broker, every topic on it (the shared broker of ``conftest.py``);
* ``rf3``: 3 brokers, replication factor 3 on every topic, ``__consumer_offsets`` and
  ``__transaction_state`` included, ``min.insync.replicas`` 2;
* ``spread``: 3 brokers, topics with replication factor 2 and 1 in turn (2 by default), partitions
  spread over the brokers, ``__consumer_offsets`` (6 partitions, RF 2) and ``__transaction_state``
  (4 partitions, RF 1) spread too, so that group and transaction coordinators sit on other brokers
  than the leaders of the partitions they commit for.
"""
from __future__ import annotations

import itertools
import time

from confluent_kafka.admin import AdminClient

from compat_tests.helpers import admin_client, create_topic, wait_for_topic

TARGETS = ("single", "rf3", "spread")

# What every cluster shape shares with the shared broker: topics auto-created with 2 partitions.
_AUTO_CREATE = {"auto.create.topics.enable": "true", "num.partitions": 2}

CLUSTER_SHAPES = {
    "rf3": {
        **_AUTO_CREATE,
        "default.replication.factor": 3, "min.insync.replicas": 2,
        "offsets.topic.replication.factor": 3, "offsets.topic.num.partitions": 6,
        "transaction.state.log.replication.factor": 3, "transaction.state.log.min.isr": 2,
        "transaction.state.log.num.partitions": 4,
    },
    "spread": {
        **_AUTO_CREATE,
        "default.replication.factor": 2, "min.insync.replicas": 1,
        "offsets.topic.replication.factor": 2, "offsets.topic.num.partitions": 6,
        "transaction.state.log.replication.factor": 1, "transaction.state.log.min.isr": 1,
        "transaction.state.log.num.partitions": 4,
    },
}

# The replication factors of the topics the scenarios create, taken in turn.
REPLICATION_FACTORS = {"single": (1,), "rf3": (3,), "spread": (2, 1)}

# Targets of their own fail over faster than the shared clusters (which no test kills).
FAST_FAILOVER = {"zookeeper.session.timeout.ms": 3000, "replica.lag.time.max.ms": 2000}


class Target:
    """A broker or a cluster as the scenarios see it: bootstrap servers, its brokers by node id,
    the topics created through it and where their partitions and coordinators are."""

    def __init__(self, name: str, brokers: dict, cluster=None):
        self.name = name
        self.brokers = brokers             # node id -> BrokerProcess
        self.cluster = cluster             # the compat_tests.cluster.Cluster, if any
        self.metrics_ports: list[int] = []  # josefk.metrics.port of each broker, if set
        self._rfs = itertools.cycle(REPLICATION_FACTORS[name])
        self.created: dict[str, int] = {}  # topic -> replication factor, this test's

    def __repr__(self) -> str:
        return f"<Target {self.name} {self.bootstrap}>"

    @property
    def bootstrap(self) -> str:
        return ",".join(b.bootstrap for b in self.brokers.values() if b.is_running())

    def replication_factor(self) -> int:
        """The replication factor for the next topic a scenario creates."""
        return next(self._rfs)

    def admin(self, node_id: int | None = None) -> AdminClient:
        return admin_client(self.bootstrap if node_id is None else self.brokers[node_id].bootstrap)

    def create_topic(self, name: str, partitions: int = 1, config: dict | None = None) -> str:
        rf = self.replication_factor()
        create_topic(self.bootstrap, name, partitions, config, replication_factor=rf)
        self.wait_for_topic(name, partitions)
        self.created[name] = rf
        return name

    def wait_for_topic(self, name: str, partitions: int | None = None, timeout: float = 30):
        """Until every running broker knows ``name`` with a leader for every partition; returns
        its TopicMetadata."""
        t = wait_for_topic(self.admin(), name, partitions, timeout)
        if self.cluster is not None:
            self.cluster.wait_for_topic(name, len(t.partitions), timeout)
        return t

    def partitions(self, topic: str) -> dict:
        """{partition: PartitionMetadata} of ``topic`` as the cluster describes it."""
        return self.admin().list_topics(topic, timeout=10).topics[topic].partitions

    def leader(self, topic: str, partition: int) -> int:
        return self.partitions(topic)[partition].leader

    def leader_bootstrap(self, topic: str, partition: int) -> str:
        """The address of the partition's leader, for raw requests that must go there."""
        return self.brokers[self.leader(topic, partition)].bootstrap

    def group_coordinator(self, group: str) -> int:
        admin = self.admin()
        return admin.describe_consumer_groups([group], request_timeout=10)[group] \
            .result(15).coordinator.id

    def transaction_coordinator(self, transactional_id: str, timeout: float = 15) -> int:
        """The broker coordinating ``transactional_id`` (FindCoordinator; the first asking may
        create ``__transaction_state``, answered COORDINATOR_NOT_AVAILABLE meanwhile)."""
        from josefk.tools.client import Client
        from josefk.wire.apis import FIND_COORDINATOR

        deadline = time.monotonic() + timeout
        while True:
            with Client(self.bootstrap) as c:
                (found,) = c.request(FIND_COORDINATOR, coordinator_keys=[transactional_id],
                                     key_type=1).coordinators
            if found.error_code == 0:
                return found.node_id
            if time.monotonic() > deadline:
                raise AssertionError(f"no coordinator for {transactional_id}: {found}")
            time.sleep(0.2)

    # -- restarts ---------------------------------------------------------------------------------
    def restart(self, *node_ids: int, how: str = "stop") -> None:
        """Stop (SIGTERM) or kill (SIGKILL) the brokers ``node_ids`` and start them again. In a
        cluster the others fail over first (leaderships move where another replica lives, the
        ISRs shrink), as when brokers are down for good, then they rejoin; the target is ready
        again once every partition has a leader and a full ISR."""
        victims = {i: self.brokers[i] for i in node_ids}
        for b in victims.values():
            b.stop() if how == "stop" else b.kill()
        if self.cluster is not None:
            self._wait_failed_over(set(victims))
        for b in victims.values():
            b.start()
        self.wait_ready()

    def restart_all(self, how: str = "stop", change=None) -> None:
        """Stop or kill every broker, apply ``change(broker)`` to each (e.g. to its overrides),
        and start them all again: a whole-cluster crash or restart."""
        for b in self.brokers.values():
            b.stop() if how == "stop" else b.kill()
            if change is not None:
                change(b)
        for b in self.brokers.values():
            b.start()
        self.wait_ready()

    def _wait_failed_over(self, victims: set, timeout: float = 30) -> None:
        """Until, as a surviving broker sees it, ``victims`` lead no partition and are out of
        the ISR of every partition that has a replica elsewhere (an offline partition keeps its
        last ISR member, as in Kafka)."""
        survivor = next(i for i, b in self.brokers.items() if b.is_running())
        deadline = time.monotonic() + timeout
        while True:
            left = [f"{name}-{i} (leader {p.leader}, replicas {p.replicas}, isr {p.isrs})"
                    for name, t in self.cluster.metadata(survivor).topics.items()
                    for i, p in t.partitions.items()
                    if p.leader in victims
                    or (victims & set(p.isrs) and set(p.replicas) - victims)]
            if not left:
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"broker {survivor} still shows, {timeout}s after brokers "
                                     f"{sorted(victims)} went away: {left[:10]}")
            time.sleep(0.2)

    def wait_ready(self, timeout: float = 60) -> None:
        """Until every broker runs, knows all the others, and sees a leader and every replica
        in the ISR of every partition."""
        deadline = time.monotonic() + timeout
        if self.cluster is not None:
            self.cluster.wait_for_brokers(len(self.brokers), timeout)
        while True:
            try:
                ready = all(p.leader >= 0 and sorted(p.isrs) == sorted(p.replicas)
                            for i in self.brokers
                            for t in self.admin(i).list_topics(timeout=10).topics.values()
                            for p in t.partitions.values())
            except Exception:  # noqa: BLE001 - still starting
                ready = False
            if ready:
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"{self}: partitions without a leader or a full ISR "
                                     f"{timeout}s after a restart")
            time.sleep(0.2)

    # -- failure evidence -------------------------------------------------------------------------
    def layout(self) -> str:
        """Where the partitions of this test's topics sit (leader, replicas, ISR), for reports."""
        lines = []
        try:
            topics = self.admin().list_topics(timeout=10).topics
        except Exception as e:  # noqa: BLE001 - a report must not fail
            return f"metadata unavailable: {e!r}"
        for name, rf in sorted(self.created.items()):
            t = topics.get(name)
            if t is None:
                lines.append(f"{name} (RF {rf}): not listed")
                continue
            lines.append(f"{name} (RF {rf}): " + "; ".join(
                f"p{i} leader {p.leader} replicas {list(p.replicas)} isr {list(p.isrs)}"
                for i, p in sorted(t.partitions.items())))
        return "\n".join(lines) or "no topics created through the target"
