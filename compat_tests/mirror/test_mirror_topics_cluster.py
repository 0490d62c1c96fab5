"""Mirror topics with a cluster of three brokers (ZooKeeper) on either side. As destination:
the link is known by every broker, each partition's leader mirrors it and its followers copy
it, and when a destination leader dies the new one goes on from its own log end. As source:
when a source partition's leader dies the mirror follows it to the new one. Either way no
record is missing, none is there twice, the offsets are the source's."""
import re

from confluent_kafka import Producer

from josefk.mirror.links import main as mirror
from josefk.testing import broker

from compat_tests.mirror.mirroring import until
from compat_tests.mirror.test_mirror_topics import (batches, caught_up, committed_values, ends,
                                                    link, name)


def produce(bootstrap, topic, count, prefix):
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True,
                         "linger.ms": 5})
    for i in range(count):
        producer.produce(topic, key=str(i), value=f"{prefix}-{i}")
    assert producer.flush(15) == 0


def test_a_mirror_topic_survives_its_destination_leaders_death(josefk_cluster, capsys):
    dest = josefk_cluster.bootstrap_servers
    with broker() as source:
        src = source.bootstrap_servers
        topic = name("payments")
        source.create_topic(topic, partitions=3)
        produce(src, topic, 300, "first")
        link_name = link(capsys, source, josefk_cluster)
        for b in josefk_cluster.brokers.values():  # kept in ZooKeeper: every broker has it
            until(lambda b=b: mirror(["list-links", "--bootstrap-server",
                                      b.bootstrap_servers]) == 0
                  and link_name in capsys.readouterr().out)
        assert mirror(["create-topic", "--bootstrap-server", dest, "--link", link_name,
                       "--topic", topic, "--replication-factor", "3"]) == 0
        caught_up(source, josefk_cluster, topic)

        victim = josefk_cluster.leader(topic, 0)
        josefk_cluster.kill(victim)
        produce(src, topic, 300, "second")
        until(lambda: josefk_cluster.leader(topic, 0) not in (victim, -1), timeout=30)
        caught_up(source, josefk_cluster, topic)
        for p in range(3):
            assert batches(dest, topic, p) == batches(src, topic, p)
        assert committed_values(dest, topic, 3) == committed_values(src, topic, 3)

        assert mirror(["promote", "--bootstrap-server", dest, "--topic", topic]) == 0
        promoted = {int(p): int(o) for p, o in re.findall(r"Partition: (\d+)\tOffset: (\d+)",
                                                           capsys.readouterr().out)}
        assert promoted == ends(src, topic) and sum(promoted.values()) == 600
        writer = Producer({"bootstrap.servers": dest, "acks": "all"})
        acked = []
        writer.produce(topic, value=b"after", partition=1,
                       on_delivery=lambda e, m: acked.append((e, m.offset())))
        writer.flush(15)
        assert acked == [(None, promoted[1])]

        josefk_cluster.restart(victim)  # it reads the links from ZooKeeper as it starts
        until(lambda: mirror(["list-links", "--bootstrap-server",
                              josefk_cluster.brokers[victim].bootstrap_servers]) == 0
              and link_name in capsys.readouterr().out, timeout=60)


def test_a_mirror_follows_its_source_partitions_to_their_new_leader(josefk_cluster, capsys):
    src = josefk_cluster.bootstrap_servers
    topic = name("trades")
    josefk_cluster.create_topic(topic, partitions=2, replication_factor=3)
    produce(src, topic, 200, "first")
    with broker() as destination:
        dest = destination.bootstrap_servers
        link_name = link(capsys, josefk_cluster, destination, **{"metadata.max.age.ms": "60000"})
        assert mirror(["create-topic", "--bootstrap-server", dest, "--link", link_name,
                       "--topic", topic]) == 0
        caught_up(josefk_cluster, destination, topic)
        victim = josefk_cluster.leader(topic, 0)
        josefk_cluster.kill(victim)
        until(lambda: josefk_cluster.leader(topic, 0) not in (victim, -1), timeout=30)
        producer = Producer({"bootstrap.servers": src, "enable.idempotence": True,
                             "acks": "all"})
        for i in range(200):
            producer.produce(topic, key=str(i), value=f"second-{i}")
        assert producer.flush(30) == 0
        caught_up(josefk_cluster, destination, topic)
        for p in range(2):
            assert batches(dest, topic, p) == batches(src, topic, p)
        assert len(committed_values(dest, topic, 2)) == 400


def test_a_partition_resumed_after_its_source_was_recreated_is_the_same_on_every_replica(
        josefk_cluster, capsys):
    """The leader empties the partition and starts at the new source topic's log start, below
    its followers' ends: they follow it there, so the next leader holds the same batches."""
    from confluent_kafka.admin import AdminClient

    dest = josefk_cluster.bootstrap_servers
    with broker() as source:
        src = source.bootstrap_servers
        topic = name("recreated")
        source.create_topic(topic, partitions=1)
        produce(src, topic, 30, "old")
        link_name = link(capsys, source, josefk_cluster)
        assert mirror(["create-topic", "--bootstrap-server", dest, "--link", link_name,
                       "--topic", topic, "--replication-factor", "3"]) == 0
        caught_up(source, josefk_cluster, topic)
        source.delete_topic(topic)
        until(lambda: topic not in AdminClient({"bootstrap.servers": src}).list_topics(
            timeout=10).topics)
        source.create_topic(topic, partitions=1)
        produce(src, topic, 10, "new")

        def stopped():
            assert mirror(["list-links", "--bootstrap-server", dest]) == 0
            return f"Topic: {topic}\tPartition: 0\tState: STOPPED" in capsys.readouterr().out
        until(stopped, timeout=30)
        assert mirror(["resume-partition", "--bootstrap-server", dest, "--link", link_name,
                       "--topic", topic]) == 0
        caught_up(source, josefk_cluster, topic)
        assert ends(dest, topic) == {0: 10}
        victim = josefk_cluster.leader(topic, 0)
        josefk_cluster.kill(victim)
        until(lambda: josefk_cluster.leader(topic, 0) not in (victim, -1), timeout=30)
        produce(src, topic, 5, "after")
        caught_up(source, josefk_cluster, topic)
        assert batches(dest, topic, 0) == batches(src, topic, 0)
        assert [v for _p, _o, v in committed_values(dest, topic, 1)] == [
            f"new-{i}".encode() for i in range(10)] + [f"after-{i}".encode() for i in range(5)]
        josefk_cluster.restart(victim)
