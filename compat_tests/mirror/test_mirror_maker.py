"""``josefk mirror``'s dedicated mode on two josefk clusters: from a connect-mirror-maker
properties file, a distributed Connect worker per pair of clusters; the enabled flow mirrors
a topic, both flows write heartbeats."""

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from josefk.mirror.records import Heartbeat
from josefk.testing import broker

from compat_tests.mirror.mirroring import dedicated_mode, read_all, until


def test_dedicated_mode_runs_the_flows_of_an_mm2_file():
    with broker() as primary, broker() as backup:
        primary.create_topic("orders", 1)
        primary.create_topic("ignored", 1)
        producer = Producer({"bootstrap.servers": primary.bootstrap_servers})
        for i in range(5):
            producer.produce("orders", f"v{i}".encode(), f"k{i}".encode())
            producer.produce("ignored", b"x")
        assert producer.flush(15) == 0
        with dedicated_mode(primary, backup):
            copies = until(lambda: len(m := read_all(backup.bootstrap_servers, "primary.orders",
                                                     1, 5)) >= 5 and m, timeout=60)
            assert [(m.key(), m.value()) for m in copies] == [
                (f"k{i}".encode(), f"v{i}".encode()) for i in range(5)]
            for cluster, source in ((backup, "primary"), (primary, "backup")):
                beats = until(lambda: read_all(cluster.bootstrap_servers, "heartbeats", 1, 5),
                              timeout=30)
                beat = Heartbeat.from_record(beats[0].key(), beats[0].value())
                assert beat.source_cluster_alias == source
            topics = AdminClient({"bootstrap.servers": backup.bootstrap_servers}).list_topics(
                timeout=10).topics
            assert "primary.orders" in topics and "primary.ignored" not in topics
