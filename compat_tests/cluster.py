"""A josefk cluster for the tests: the project's launcher (``faults.processes.LocalCluster``)
on the session's ZooKeeper (each cluster in its own chroot), seen through confluent-kafka's
AdminClient. Tests see it only through its brokers' sockets, ZooKeeper and signals, as an
operator would."""
from __future__ import annotations

import json
import time

from confluent_kafka.admin import AdminClient

from josefk.faults.processes import QUICK_FAILOVER, LocalCluster

# Consumer-protocol groups (KIP-848) fence a silent member in seconds, not Kafka's 45 s, and
# their members heartbeat every 0.5 s, not 5 s: every test broker gets these.
CONSUMER_GROUP_TIMING = {
    "group.consumer.session.timeout.ms": 6000,
    "group.consumer.min.session.timeout.ms": 6000,
    "group.consumer.heartbeat.interval.ms": 500,
    "group.consumer.min.heartbeat.interval.ms": 500,
}


class Cluster(LocalCluster):
    def __init__(self, zk_connect: str, root, size: int = 3, overrides=None, racks=None,
                 isolation: bool = False):
        super().__init__(root, size, zk_connect=zk_connect, racks=racks, isolation=isolation,
                         overrides={**QUICK_FAILOVER, **CONSUMER_GROUP_TIMING,
                                    **(overrides or {})})

    def admin(self, broker_id: int | None = None) -> AdminClient:
        bootstrap = self.brokers[broker_id].bootstrap if broker_id else self.bootstrap
        return AdminClient({"bootstrap.servers": bootstrap})

    def metadata(self, broker_id: int):
        """What ``broker_id`` itself answers to Metadata (not what a client caches)."""
        return self.admin(broker_id).list_topics(timeout=10)

    def controller_id(self, broker_id: int) -> int:
        admin = self.admin(broker_id)  # keep it alive until the future is answered
        return admin.describe_cluster(request_timeout=10).result(10).controller.id

    def partition(self, topic: str, index: int, broker_id: int | None = None):
        bid = broker_id or next(i for i, b in self.brokers.items() if b.is_running())
        return self.metadata(bid).topics[topic].partitions[index]

    def wait_for(self, predicate, timeout: float = 30, what: str = "condition"):
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            try:
                last = predicate()
                if last:
                    return last
            except Exception as e:  # noqa: BLE001 - brokers may be failing over
                last = e
            time.sleep(0.2)
        raise AssertionError(f"timed out waiting for {what} (last: {last!r})")

    def displace_preferred_leader(self, topic: str) -> tuple[dict, int]:
        """Stop the preferred leader of partition 0 until leadership moves, then start it again
        (it comes back as a follower). Returns ({partition: preferred leader}, a survivor)."""
        preferred = {i: p.replicas[0] for i, p in self.metadata(1).topics[topic]
                     .partitions.items()}
        victim = preferred[0]
        self.brokers[victim].stop()
        survivor = next(i for i in self.brokers if i != victim)
        self.wait_for(lambda: self.partition(topic, 0, survivor).leader != victim, 20,
                      "failover")
        self.brokers[victim].start()
        return preferred, survivor

    def wait_for_topic(self, topic: str, partitions: int, timeout: float = 30):
        """Until every running broker knows ``topic`` with a leader for every partition."""
        def ready():
            for i, b in self.brokers.items():
                if not b.is_running():
                    continue
                t = self.metadata(i).topics.get(topic)
                if t is None or t.error is not None or len(t.partitions) != partitions or \
                        any(p.leader < 0 for p in t.partitions.values()):
                    return False
            return True
        return self.wait_for(ready, timeout, f"topic {topic} on every broker")


def zk_json(zk_connect: str, path: str):
    """Read a znode as Kafka wrote it: JSON (or plain text) and its stat."""
    from kazoo.client import KazooClient

    k = KazooClient(hosts=zk_connect, timeout=10.0)
    k.start(timeout=15)
    try:
        data, stat = k.get(path)
    finally:
        k.stop()
        k.close()
    text = data.decode()
    try:
        return json.loads(text), stat
    except ValueError:
        return text, stat
