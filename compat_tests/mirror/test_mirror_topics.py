"""Mirror topics (issue 30, item 2) between two josefk brokers: a cluster link made with
``josefk mirror create-link``, a mirror topic whose leader appends the source's batches at
their offsets (compared batch by batch with the project's raw client), transactions that
read the same committed and aborted records on both sides, producers refused, the source's
log start, partitions and configs followed, then ``promote`` and ``failover``."""
import json
import re
import struct
import urllib.request
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource,
                                  NewPartitions)

from josefk.mirror.links import main as mirror
from josefk.testing import broker
from josefk.tools.client import KafkaError as ToolError
from josefk.tools.tool_client import ClusterClient
from josefk.zk.local_server import free_port

from compat_tests.mirror.mirroring import until


METRICS_PORT = free_port()


@pytest.fixture(scope="module")
def clusters():
    with broker() as source, broker(josefk_metrics_port=METRICS_PORT) as destination:
        yield source, destination


def mirror_metrics():
    """The destination's mirror partition series: {(name, topic, partition): value}."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{METRICS_PORT}/metrics",
                                  timeout=10).read().decode()
    out = {}
    for metric, labels, value in re.findall(
            r'^(josefk_cluster_link_mirror_\w+)\{([^}]*)\} (\S+)$', text, re.M):
        labels = dict(re.findall(r'(\w+)="([^"]*)"', labels))
        out[metric, labels["topic"], int(labels["partition"])] = float(value)
    return out


def name(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def link(capsys, source, destination, **configs):
    link_name = name("link")
    settings = {"bootstrap.servers": source.bootstrap_servers, "topic.config.sync.ms": "300",
                "metadata.max.age.ms": "1000", **configs}
    assert mirror(["create-link", "--bootstrap-server", destination.bootstrap_servers,
                   "--link", link_name,
                   *[a for k, v in settings.items() for a in ("--config", f"{k}={v}")]]) == 0
    assert f"Cluster link '{link_name}' creation successfully completed." in \
        capsys.readouterr().out
    return link_name


def batches(bootstrap, topic, partition, start=0, max_wait_ms=0):
    """The partition's batches from ``start`` to its end, read_uncommitted, each as bytes with
    its partitionLeaderEpoch (bytes 12-15, stamped by every leader, outside the CRC) zeroed."""
    out = []
    with ClusterClient(bootstrap) as c:
        c.refresh([topic])
        offset = start
        while True:
            (_t, _p, records, hwm, _a), = c.fetch({(topic, partition): offset},
                                                  max_wait_ms=max_wait_ms,
                                                  read_committed=False)
            pos = 0
            while pos + 12 <= len(records):
                size = struct.unpack_from(">i", records, pos + 8)[0] + 12
                if pos + size > len(records):
                    break
                batch = bytearray(records[pos:pos + size])
                batch[12:16] = bytes(4)
                out.append(bytes(batch))
                last_delta = struct.unpack_from(">i", records, pos + 23)[0]
                offset = struct.unpack_from(">q", records, pos)[0] + last_delta + 1
                pos += size
            if offset >= hwm or not records:
                return out


def ends(bootstrap, topic):
    with ClusterClient(bootstrap) as c:
        return c.list_offsets(topic, c.partitions(topic), -1)


def starts(bootstrap, topic):
    with ClusterClient(bootstrap) as c:
        return c.list_offsets(topic, c.partitions(topic), -2)


def caught_up(source, destination, topic):
    def same():
        try:
            return ends(destination.bootstrap_servers, topic) == ends(
                source.bootstrap_servers, topic)
        except ToolError as e:  # a new leader without its high watermark yet: asked again
            if e.code in (KafkaError.OFFSET_NOT_AVAILABLE, KafkaError.NOT_LEADER_FOR_PARTITION,
                          KafkaError.LEADER_NOT_AVAILABLE):
                return False
            raise
    until(same, timeout=30)


def committed_values(bootstrap, topic, partitions):
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": name("check"),
                         "isolation.level": "read_committed", "enable.partition.eof": True,
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    values, done = [], set()

    def read():  # what the consumer has, until each partition's end (its last stable offset)
        for msg in consumer.consume(500, 0.5):
            if msg.error():
                done.add(msg.partition())
            else:
                values.append((msg.partition(), msg.offset(), msg.value()))
        return len(done) == partitions
    until(read, timeout=30)
    consumer.close()
    return sorted(values)


def test_links_are_created_listed_and_deleted(clusters, capsys, tmp_path):
    source, destination = clusters
    dest = destination.bootstrap_servers
    link_name = link(capsys, source, destination)
    from_file = name("link")
    (tmp_path / "link.properties").write_text(
        f"bootstrap.servers = {source.bootstrap_servers}\n# a comment\n"
        "metadata.max.age.ms = 2000\n")
    assert mirror(["create-link", "--bootstrap-server", dest, "--link", from_file,
                   "--config-file", str(tmp_path / "link.properties")]) == 0
    assert mirror(["list-links", "--bootstrap-server", dest]) == 0
    listed = capsys.readouterr().out
    for each in (link_name, from_file):
        assert f"Link name: '{each}', bootstrap.servers: '{source.bootstrap_servers}'" in listed
    assert mirror(["delete-link", "--bootstrap-server", dest, "--link", from_file]) == 0
    assert mirror(["create-link", "--bootstrap-server", dest, "--link", link_name,
                   "--config", f"bootstrap.servers={source.bootstrap_servers}"]) == 1
    assert f"Cluster link {link_name} already exists" in capsys.readouterr().err
    assert mirror(["create-link", "--bootstrap-server", dest, "--link", name("bad"),
                   "--config", "metadata.max.age.ms=1000"]) == 1
    assert "needs bootstrap.servers" in capsys.readouterr().err
    assert mirror(["create-link", "--bootstrap-server", dest, "--link", name("bad"),
                   "--config", "bootstrap.servers=x:1", "--config", "no.such=1"]) == 1
    assert "Unknown cluster link config: no.such" in capsys.readouterr().err
    assert mirror(["create-topic", "--bootstrap-server", dest, "--link", "no-such-link",
                   "--topic", "t"]) == 1
    assert "Cluster link no-such-link does not exist" in capsys.readouterr().err
    assert mirror(["delete-link", "--bootstrap-server", dest, "--link", link_name]) == 0
    assert f"Cluster link '{link_name}' deletion successfully completed." in \
        capsys.readouterr().out
    assert mirror(["list-links", "--bootstrap-server", dest]) == 0
    assert link_name not in capsys.readouterr().out
    assert mirror(["delete-link", "--bootstrap-server", dest, "--link", link_name]) == 1
    assert f"Cluster link {link_name} does not exist" in capsys.readouterr().err


def test_a_mirror_topic_keeps_the_sources_batches_offsets_and_transactions(clusters, capsys):
    source, destination = clusters
    src, dest = source.bootstrap_servers, destination.bootstrap_servers
    topic = name("orders")
    source.create_topic(topic, partitions=2, config={"retention.ms": "86400000"})
    plain = Producer({"bootstrap.servers": src, "enable.idempotence": True, "linger.ms": 5})
    for i in range(200):
        plain.produce(topic, key=str(i % 7), value=f"plain-{i}")
    assert plain.flush(15) == 0
    txn = Producer({"bootstrap.servers": src, "transactional.id": name("tx")})
    txn.init_transactions(15)
    for outcome in ("commit", "abort", "commit"):
        txn.begin_transaction()
        for i in range(20):
            txn.produce(topic, key=str(i), value=f"{outcome}-{i}")
        assert txn.flush(15) == 0  # written, so that an abort has records to hide
        (txn.commit_transaction if outcome == "commit" else txn.abort_transaction)(15)
    link_name = link(capsys, source, destination)
    assert mirror(["create-topic", "--bootstrap-server", dest, "--link", link_name,
                   "--topic", topic]) == 0
    assert f"Created mirror topic {topic} (2 partitions)" in capsys.readouterr().out
    caught_up(source, destination, topic)
    for p in (0, 1):
        assert batches(dest, topic, p) == batches(src, topic, p)
    values = committed_values(dest, topic, 2)
    assert values == committed_values(src, topic, 2)
    assert not [v for _p, _o, v in values if v.startswith(b"abort")]
    assert len(values) == 240

    # producers are refused, with Kafka's error and a message saying why
    refused = Producer({"bootstrap.servers": dest, "retries": 0})
    errors = []
    refused.produce(topic, value=b"x", partition=0, on_delivery=lambda e, _m: errors.append(e))
    refused.flush(15)
    assert errors[0].code() == KafkaError.INVALID_REQUEST
    with ClusterClient(dest) as raw:
        with pytest.raises(ToolError) as refusal:
            raw.produce(topic, 0, batches(src, topic, 0)[0])
    assert refusal.value.code == KafkaError.INVALID_REQUEST
    assert f"Topic {topic} is a mirror topic of cluster link {link_name}" in str(refusal.value)

    # the mirror goes on: new records, the source's log start, partitions and configs
    for i in range(50):
        plain.produce(topic, value=f"more-{i}", partition=i % 2)
    assert plain.flush(15) == 0
    caught_up(source, destination, topic)
    admin = AdminClient({"bootstrap.servers": src})
    cut = {0: 30, 1: 25}
    admin.delete_records([TopicPartition(topic, p, o) for p, o in cut.items()])
    until(lambda: starts(dest, topic) == cut, timeout=30)
    admin.create_partitions([NewPartitions(topic, 3)])[topic].result(15)
    admin.incremental_alter_configs([ConfigResource("topic", topic, incremental_configs=[
        ConfigEntry("retention.ms", "3600000", incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("cleanup.policy", "compact,delete",
                    incremental_operation=AlterConfigOpType.SET)])])[
        ConfigResource("topic", topic)].result(15)
    third = Producer({"bootstrap.servers": src})  # it reads the topic's 3 partitions
    for i in range(10):
        third.produce(topic, value=f"third-{i}", partition=2)
    assert third.flush(15) == 0
    until(lambda: ends(dest, topic) == ends(src, topic), timeout=30)
    assert batches(dest, topic, 2) == batches(src, topic, 2)

    dest_admin = AdminClient({"bootstrap.servers": dest})

    def configs():
        described = dest_admin.describe_configs(
            [ConfigResource("topic", topic)])[ConfigResource("topic", topic)].result(15)
        return {k: described[k].value for k in
                ("retention.ms", "cleanup.policy", "josefk.mirror.link", "josefk.mirror.state")}
    until(lambda: configs() == {"retention.ms": "3600000", "cleanup.policy": "compact,delete",
                                "josefk.mirror.link": link_name,
                                "josefk.mirror.state": "ACTIVE"}, timeout=30)
    plain.flush(5)
    txn.flush(5)

    # promote: caught up, stopped, writable at the next offset
    for i in range(30):
        plain.produce(topic, value=f"last-{i}", partition=0)
    assert plain.flush(15) == 0
    assert mirror(["delete-link", "--bootstrap-server", dest, "--link", link_name]) == 1
    assert f"still mirrors {topic}" in capsys.readouterr().err
    assert mirror(["promote", "--bootstrap-server", dest, "--topic", topic]) == 0
    out = capsys.readouterr().out
    promoted = {int(p): int(o) for p, o in re.findall(r"Partition: (\d+)\tOffset: (\d+)", out)}
    assert promoted == ends(src, topic)
    writer = Producer({"bootstrap.servers": dest})
    acked = []
    writer.produce(topic, key=b"k", value=b"after", partition=0,
                   on_delivery=lambda e, m: acked.append((e, m.offset())))
    writer.flush(15)
    assert acked == [(None, promoted[0])]
    plain.produce(topic, value=b"not mirrored any more", partition=1)
    plain.flush(15)
    assert ends(dest, topic)[1] == promoted[1]


def test_failover_stops_a_mirror_without_the_source(clusters, capsys):
    _source, destination = clusters
    dest = destination.bootstrap_servers
    topic = name("events")
    with broker() as lost:
        lost.create_topic(topic, partitions=1)
        producer = Producer({"bootstrap.servers": lost.bootstrap_servers})
        for i in range(20):
            producer.produce(topic, value=f"e{i}")
        assert producer.flush(15) == 0
        open_txn = Producer({"bootstrap.servers": lost.bootstrap_servers,
                             "transactional.id": name("open")})
        open_txn.init_transactions(15)
        open_txn.begin_transaction()
        for i in range(3):
            open_txn.produce(topic, value=f"never committed {i}")
        assert open_txn.flush(15) == 0
        link_name = link(capsys, lost, destination)
        assert mirror(["create-topic", "--bootstrap-server", dest, "--link", link_name,
                       "--topic", topic]) == 0
        caught_up(lost, destination, topic)
    # the source's open transaction can never end here: failover aborts it (its marker at 23)
    assert mirror(["failover", "--bootstrap-server", dest, "--topic", topic]) == 0
    assert "Partition: 0\tOffset: 24" in capsys.readouterr().out
    assert [v for _p, _o, v in committed_values(dest, topic, 1)] == [
        f"e{i}".encode() for i in range(20)]
    assert mirror(["promote", "--bootstrap-server", dest, "--topic", topic]) == 1
    assert f"Topic {topic} is not an active mirror topic" in capsys.readouterr().err
    writer = Producer({"bootstrap.servers": dest})
    acked = []
    writer.produce(topic, value=b"after", on_delivery=lambda e, m: acked.append((e, m.offset())))
    writer.flush(15)
    assert acked == [(None, 24)]
    assert mirror(["delete-link", "--bootstrap-server", dest, "--link", link_name]) == 0


def test_a_mirror_starts_at_the_sources_log_start_and_stops_when_the_source_is_recreated(
        clusters, capsys):
    source, destination = clusters
    src, dest = source.bootstrap_servers, destination.bootstrap_servers
    topic = name("audit")
    source.create_topic(topic, partitions=1)
    producer = Producer({"bootstrap.servers": src})
    for i in range(30):
        producer.produce(topic, key=b"k", value=f"a{i}")
    assert producer.flush(15) == 0
    admin = AdminClient({"bootstrap.servers": src})
    admin.delete_records([TopicPartition(topic, 0, 12)])
    until(lambda: starts(src, topic) == {0: 12})
    link_name = link(capsys, source, destination)
    assert mirror(["create-topic", "--bootstrap-server", dest, "--link", link_name,
                   "--topic", topic]) == 0
    caught_up(source, destination, topic)
    assert starts(dest, topic) == {0: 12}
    assert batches(dest, topic, 0, 12) == batches(src, topic, 0, 12)
    until(lambda: mirror_metrics().get(("josefk_cluster_link_mirror_lag_records", topic, 0))
          == 0)
    assert mirror_metrics()[("josefk_cluster_link_mirror_latency_ms", topic, 0)] >= 0

    # deleted and created again at the source, with more records than the mirror has: the
    # mirror stops there, reported, and takes none of the new topic's records
    source.delete_topic(topic)
    until(lambda: topic not in AdminClient({"bootstrap.servers": src}).list_topics(
        timeout=10).topics)
    source.create_topic(topic, partitions=1)
    again = Producer({"bootstrap.servers": src})
    for i in range(50):
        again.produce(topic, key=b"k", value=f"b{i}")
    assert again.flush(15) == 0
    until(lambda: mirror_metrics().get(
        ("josefk_cluster_link_mirror_partition_stopped", topic, 0)) == 1, timeout=30)
    assert ends(dest, topic) == {0: 30}
    assert mirror(["failover", "--bootstrap-server", dest, "--topic", topic]) == 0
    assert "Partition: 0\tOffset: 30" in capsys.readouterr().out


def commit(bootstrap, group, topic, offsets, metadata=""):
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                         "enable.auto.commit": False})
    consumer.commit(offsets=[TopicPartition(topic, p, o, metadata=metadata)
                             for p, o in offsets.items()], asynchronous=False)
    consumer.close()


def committed(bootstrap, group, topic, partitions=2):
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        return {tp.partition: (tp.offset, tp.metadata) for tp in consumer.committed(
            [TopicPartition(topic, p) for p in range(partitions)], timeout=10)
            if tp.offset >= 0}
    finally:
        consumer.close()


def test_group_offsets_are_copied_for_the_named_groups_while_they_are_idle_here(clusters,
                                                                               capsys):
    source, destination = clusters
    src, dest = source.bootstrap_servers, destination.bootstrap_servers
    topic = name("clicks")
    source.create_topic(topic, partitions=2)
    producer = Producer({"bootstrap.servers": src})
    for i in range(100):
        producer.produce(topic, value=f"c{i}", partition=i % 2)
    assert producer.flush(15) == 0
    tag = uuid.uuid4().hex[:8]
    app, witness, secret, other = (f"app-a{tag}", f"app-z{tag}", f"app-secret{tag}",
                                   f"other-{tag}")
    filters = {"groupFilters": [
        {"name": "app-", "patternType": "PREFIXED", "filterType": "INCLUDE"},
        {"name": secret, "patternType": "LITERAL", "filterType": "EXCLUDE"}]}
    link_name = link(capsys, source, destination, **{
        "consumer.offset.sync.enable": "true", "consumer.offset.sync.ms": "200",
        "consumer.offset.group.filters": json.dumps(filters)})
    assert mirror(["create-topic", "--bootstrap-server", dest, "--link", link_name,
                   "--topic", topic]) == 0
    for group in (app, secret, other):
        commit(src, group, topic, {0: 17, 1: 33}, metadata="from the source")
    until(lambda: committed(dest, app, topic) == {0: (17, "from the source"),
                                                  1: (33, "from the source")}, timeout=30)

    def witnessed(rounds=2):
        """Two later passes of the link's copy went over every group."""
        for n in range(rounds):
            commit(src, witness, topic, {0: n})
            until(lambda n=n: committed(dest, witness, topic) == {0: (n, "")}, timeout=30)
    witnessed()
    assert committed(dest, secret, topic) == {} and committed(dest, other, topic) == {}

    # a member of the group here: its offsets are its own until it leaves
    member = Consumer({"bootstrap.servers": dest, "group.id": app,
                       "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    member.subscribe([topic])
    until(lambda: member.poll(0.5) is not None or member.assignment(), timeout=30)
    commit(src, app, topic, {0: 50, 1: 60})
    witnessed()
    assert committed(dest, app, topic) == {0: (17, "from the source"),
                                           1: (33, "from the source")}
    member.close()
    until(lambda: committed(dest, app, topic) == {0: (50, ""), 1: (60, "")}, timeout=30)


def test_a_link_is_reversed_for_fail_back_from_where_the_mirror_stopped(clusters, capsys):
    first, second = clusters
    a, b = first.bootstrap_servers, second.bootstrap_servers
    topic, diverged = name("ledger"), name("ledger")
    producer = Producer({"bootstrap.servers": a})
    for t in (topic, diverged):
        first.create_topic(t, partitions=1)
        for i in range(20):
            producer.produce(t, key=b"k", value=f"{t}-{i}")
    assert producer.flush(15) == 0
    forth = link(capsys, first, second)
    for t in (topic, diverged):
        assert mirror(["create-topic", "--bootstrap-server", b, "--link", forth,
                       "--topic", t]) == 0
        caught_up(first, second, t)
        assert mirror(["failover", "--bootstrap-server", b, "--topic", t]) == 0
    writes = Producer({"bootstrap.servers": b})
    for i in range(5):
        writes.produce(topic, key=b"k", value=f"at b {i}")
    assert writes.flush(15) == 0
    producer.produce(diverged, key=b"k", value=b"written at a after the failover")
    assert producer.flush(15) == 0
    back = link(capsys, second, first)

    assert mirror(["reverse", "--bootstrap-server", a, "--link", back, "--topic", diverged]) == 1
    assert (f"Topic {diverged} has records here past where {b} stopped mirroring it "
            "(partition 0: 21 > 20)") in capsys.readouterr().err
    assert mirror(["reverse", "--bootstrap-server", a, "--link", back, "--topic", topic]) == 0
    assert (f"Topic {topic} now mirrors {b} over cluster link {back}, from partition 0 "
            "offset 20.") in capsys.readouterr().out
    until(lambda: ends(a, topic) == ends(b, topic) == {0: 25}, timeout=30)
    assert batches(a, topic, 0) == batches(b, topic, 0)
    refused = []
    producer.produce(topic, key=b"k", value=b"x", on_delivery=lambda e, _m: refused.append(e))
    producer.flush(15)
    assert refused[0].code() == KafkaError.INVALID_REQUEST

    # and back: a is the primary again, from b's end
    assert mirror(["promote", "--bootstrap-server", a, "--topic", topic]) == 0
    assert "Partition: 0\tOffset: 25" in capsys.readouterr().out
    acked = []
    producer.produce(topic, key=b"k", value=b"home",
                     on_delivery=lambda e, m: acked.append((e, m.offset())))
    producer.flush(15)
    assert acked == [(None, 25)]
