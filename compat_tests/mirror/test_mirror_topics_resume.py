"""Mirror topics (issue 30, items 3 and 4): a partition stopped because the source's log start
passed it continues only on ``josefk mirror resume-partition``, from the source's log start,
the skipped offsets counted; lag in records, bytes and ms in ``list-links`` and the metrics;
links to a source reached over SASL_SSL (SCRAM), SASL_PLAINTEXT (PLAIN) and SSL (librdkafka's
ssl.ca.location), mirroring at the same time, their passwords kept encrypted with the
destination's password.encoder.secret (refused without one, as Confluent's links)."""
import json
import re
from pathlib import Path

import pytest
from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from josefk.mirror.links import CLUSTER_LINK, _alter_all
from josefk.mirror.links import main as mirror
from josefk.testing import broker
from josefk.tools.client import Client

from compat_tests.mirror.mirroring import until
from compat_tests.mirror.test_mirror_topics import (METRICS_PORT, batches, caught_up, ends, link,
                                                    mirror_metrics, name, starts)
from compat_tests.security_setup import (SCRAM_USERS, Pki, add_scram_users, listener_address,
                                         module_broker, secure_overrides)


ENCODER_SECRET = "links-at-rest"


@pytest.fixture(scope="module")
def clusters():
    with broker() as source, broker(josefk_metrics_port=METRICS_PORT,
                                    password_encoder_secret=ENCODER_SECRET) as destination:
        yield source, destination


def produce(bootstrap, topic, partitions, count, prefix, **config):
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, **config})
    for i in range(count):
        producer.produce(topic, value=f"{prefix}-{i}", partition=i % partitions)
    assert producer.flush(15) == 0


def partition_lines(capsys, dest):
    assert mirror(["list-links", "--bootstrap-server", dest]) == 0
    return {(t, int(p)): rest for t, p, rest in re.findall(
        r"\tTopic: (\S+)\tPartition: (\d+)\t(.*)", capsys.readouterr().out)}


def test_a_stopped_partition_resumes_at_the_sources_log_start_on_command(clusters, capsys):
    source, destination = clusters
    src, dest = source.bootstrap_servers, destination.bootstrap_servers
    topics = [name("ledger"), name("ledger")]
    for t in topics:
        source.create_topic(t, partitions=2)
        produce(src, t, 2, 40, "first")
    link_name = link(capsys, source, destination)
    for t in topics:
        assert mirror(["create-topic", "--bootstrap-server", dest, "--link", link_name,
                       "--topic", t]) == 0
    for t in topics:
        caught_up(source, destination, t)
    until(lambda: all(partition_lines(capsys, dest).get((t, p), "").startswith(
        "State: ACTIVE\tLagRecords: 0\tLagBytes: 0\tLagMs: 0\t") for t in topics
        for p in (0, 1)), timeout=30)

    # the link cut (pointed at a port nobody listens on) while the source goes on and
    # DeleteRecords passes the mirror's position
    with Client(dest) as c:
        _alter_all(c, CLUSTER_LINK, link_name, {"bootstrap.servers": "127.0.0.1:1",
                                                "metadata.max.age.ms": "1000"})
    for t in topics:
        produce(src, t, 2, 80, "second")
    admin = AdminClient({"bootstrap.servers": src})
    cut = {(topics[0], 0): 50, (topics[0], 1): 45, (topics[1], 0): 15}
    for f in admin.delete_records([TopicPartition(t, p, o) for (t, p), o in cut.items()]
                                  ).values():
        f.result(15)
    with Client(dest) as c:
        _alter_all(c, CLUSTER_LINK, link_name, {"bootstrap.servers": src,
                                                "metadata.max.age.ms": "1000"})
    stopped = {(topics[0], 0), (topics[0], 1)}  # topics[1]-0 was cut at 15: below its end
    until(lambda: {k for k, v in mirror_metrics().items() if v == 1 and k[0] ==
                   "josefk_cluster_link_mirror_partition_stopped"} ==
          {("josefk_cluster_link_mirror_partition_stopped", *k) for k in stopped}, timeout=30)
    caught_up(source, destination, topics[1])
    assert ends(dest, topics[0]) == {0: 20, 1: 20}
    lines = partition_lines(capsys, dest)
    assert lines[(topics[0], 0)].startswith(
        "State: STOPPED (offset 20 is below the source's log start (50..60")
    assert lines[(topics[1], 0)].startswith("State: ACTIVE")

    # resumed one partition at a time, each from the source's log start, the gap counted
    assert mirror(["resume-partition", "--bootstrap-server", dest, "--link", link_name,
                   "--topic", topics[0], "--partition", "0"]) == 0
    out = capsys.readouterr().out
    assert "Partition: 0\tWas: offset 20 is below the source's log start" in out
    assert out.rstrip().endswith("SkippedOffsets: 30")
    until(lambda: ends(dest, topics[0])[0] == ends(src, topics[0])[0], timeout=30)
    assert starts(dest, topics[0])[0] == 50
    assert batches(dest, topics[0], 0, 50) == batches(src, topics[0], 0, 50)
    assert ends(dest, topics[0])[1] == 20  # still stopped
    assert mirror(["resume-partition", "--bootstrap-server", dest, "--link", link_name,
                   "--topic", topics[0], "--partition", "0"]) == 1
    assert "No stopped partition [0]" in capsys.readouterr().err
    assert mirror(["resume-partition", "--bootstrap-server", dest, "--link", link_name,
                   "--topic", topics[0]]) == 0
    assert "Partition: 1\tWas: offset 20 is below" in capsys.readouterr().out
    caught_up(source, destination, topics[0])
    assert batches(dest, topics[0], 1, 45) == batches(src, topics[0], 1, 45)
    metrics = mirror_metrics()
    assert metrics[("josefk_cluster_link_mirror_skipped_offsets_total", topics[0], 0)] == 30
    assert metrics[("josefk_cluster_link_mirror_skipped_offsets_total", topics[0], 1)] == 25
    assert metrics[("josefk_cluster_link_mirror_resumes_total", topics[0], 1)] == 1
    assert metrics[("josefk_cluster_link_mirror_skipped_offsets_total", topics[1], 0)] == 0
    until(lambda: all(mirror_metrics().get((f"josefk_cluster_link_mirror_lag_{unit}", t, p))
                      == 0 for unit in ("records", "bytes", "ms") for t in topics
                      for p in (0, 1)), timeout=30)

    # the mirror goes on after a resume
    produce(src, topics[0], 2, 10, "third")
    caught_up(source, destination, topics[0])
    for t in topics:
        assert mirror(["failover", "--bootstrap-server", dest, "--topic", t]) == 0


def test_resume_after_the_source_topic_was_recreated_takes_the_new_topic(clusters, capsys):
    source, destination = clusters
    src, dest = source.bootstrap_servers, destination.bootstrap_servers
    topic = name("audit")
    source.create_topic(topic, partitions=1)
    produce(src, topic, 1, 30, "old")
    link_name = link(capsys, source, destination)
    assert mirror(["create-topic", "--bootstrap-server", dest, "--link", link_name,
                   "--topic", topic]) == 0
    caught_up(source, destination, topic)
    source.delete_topic(topic)
    until(lambda: topic not in AdminClient({"bootstrap.servers": src}).list_topics(
        timeout=10).topics)
    source.create_topic(topic, partitions=1)
    produce(src, topic, 1, 50, "new")
    until(lambda: mirror_metrics().get(
        ("josefk_cluster_link_mirror_partition_stopped", topic, 0)) == 1, timeout=30)
    assert mirror(["resume-partition", "--bootstrap-server", dest, "--link", link_name,
                   "--topic", topic]) == 0
    assert "Was: the source topic was recreated" in capsys.readouterr().out
    caught_up(source, destination, topic)
    assert batches(dest, topic, 0) == batches(src, topic, 0)
    assert mirror(["failover", "--bootstrap-server", dest, "--topic", topic]) == 0


# -- SASL and TLS to the source --------------------------------------------------------------
@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return Pki(tmp_path_factory.mktemp("mirror-pki"))


@pytest.fixture(scope="module")
def secure_source(pki, tmp_path_factory):
    b = module_broker(tmp_path_factory, "mirror-secure-source", secure_overrides(pki))
    add_scram_users(listener_address(b, "PLAINTEXT"), SCRAM_USERS)
    yield b
    b.stop()


def scram_jaas(user):
    return (f'org.apache.kafka.common.security.scram.ScramLoginModule required '
            f'username="{user}" password="{SCRAM_USERS[user]}";')


def test_links_reach_a_source_over_sasl_ssl_sasl_plaintext_and_ssl_at_once(pki, secure_source,
                                                                       clusters, capsys,
                                                                       tmp_path):
    _source, destination = clusters
    dest = destination.bootstrap_servers
    plain = listener_address(secure_source, "PLAINTEXT")
    ways = {
        "SASL_SSL": {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
                     "sasl.jaas.config": scram_jaas("bob"), "ssl.truststore.type": "PEM",
                     "ssl.truststore.location": pki.ca},
        "SASL_PLAINTEXT": {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
                           "sasl.jaas.config":
                               'org.apache.kafka.common.security.plain.PlainLoginModule '
                               'required username="alice" password="alice-secret";'},
        "SSL": {"security.protocol": "SSL", "ssl.ca.location": pki.ca},
    }
    topics = {}
    admin = AdminClient({"bootstrap.servers": plain})
    for listener, settings in ways.items():
        topic = topics[listener] = name(listener.lower().replace("_", "-"))
        admin.create_topics(
            [NewTopic(topic, 3, 1)])[topic].result(15)
        produce(plain, topic, 3, 300, listener, **{"enable.idempotence": True})
        props = tmp_path / f"{listener}.properties"
        props.write_text("".join(f"{k}={v}\n" for k, v in settings.items()
                                 if k == "sasl.jaas.config"))
        link_name = link(capsys, type("S", (), {"bootstrap_servers": listener_address(
            secure_source, listener)}), destination, **settings)
        assert mirror(["list-links", "--bootstrap-server", dest]) == 0
        assert "alice-secret" not in capsys.readouterr().out
        assert mirror(["create-topic", "--bootstrap-server", dest, "--link", link_name,
                       "--topic", topic, "--source-command-config", str(props)]) == 0
    # kept encrypted (a single broker keeps its dynamic configs in its first log dir)
    kept = json.loads((Path(destination.config.log_dirs[0]) /
                       "josefk-dynamic-configs.json").read_text())["cluster-links"]
    jaas = [c["sasl.jaas.config"] for c in kept.values() if c.get("sasl.jaas.config")]
    assert len(jaas) == 2 and all(j.startswith("keyFactoryAlgorithm:") for j in jaas)
    assert "alice-secret" not in json.dumps(kept) and SCRAM_USERS["bob"] not in json.dumps(kept)
    produce(plain, topics["SASL_SSL"], 3, 300, "more")  # while both mirror
    for topic in topics.values():
        until(lambda topic=topic: ends(dest, topic) == ends(plain, topic), timeout=60)
        for p in range(3):
            assert batches(dest, topic, p) == batches(plain, topic, p)
        assert mirror(["failover", "--bootstrap-server", dest, "--topic", topic]) == 0

    # a destination without password.encoder.secret does not keep a link's password
    sasl = [a for k, v in ways["SASL_PLAINTEXT"].items() for a in ("--config", f"{k}={v}")]
    assert mirror(["create-link", "--bootstrap-server", _source.bootstrap_servers,
                   "--link", name("bare"), "--config", f"bootstrap.servers={plain}",
                   *sasl]) == 1
    assert "Password encoder secret not configured" in capsys.readouterr().err

    # settings a link cannot run with are refused when it is made
    assert mirror(["create-link", "--bootstrap-server", dest, "--link", name("bad"),
                   "--config", f"bootstrap.servers={plain}",
                   "--config", "security.protocol=SASL_SSL",
                   "--config", "sasl.mechanism=GSSAPI"]) == 1
    assert "sasl.mechanism GSSAPI is not supported" in capsys.readouterr().err
    assert mirror(["create-link", "--bootstrap-server", dest, "--link", name("bad"),
                   "--config", f"bootstrap.servers={plain}",
                   "--config", "security.protocol=SSL",
                   "--config", "ssl.truststore.location=/no/such/ca.pem"]) == 1
    assert "cannot load the TLS settings" in capsys.readouterr().err


def test_a_clusters_brokers_keep_a_links_password_encrypted_in_zookeeper_and_use_it(
        secure_source, capsys, tmp_path):
    """The link made through one broker: ZooKeeper holds its password encrypted, and both
    brokers decrypt it, each leading a partition it mirrors over SASL_PLAINTEXT."""
    from kazoo.client import KazooClient

    from josefk.testing import cluster

    plain = listener_address(secure_source, "PLAINTEXT")
    topic = name("zk-secret")
    admin = AdminClient({"bootstrap.servers": plain})
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(15)
    produce(plain, topic, 2, 200, "zk")
    jaas = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
            'username="alice" password="alice-secret";')
    with cluster(2, password_encoder_secret=ENCODER_SECRET) as dest:
        link_name = link(capsys, type("S", (), {"bootstrap_servers": listener_address(
            secure_source, "SASL_PLAINTEXT")}), dest, **{
            "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
            "sasl.jaas.config": jaas})
        zk = KazooClient(hosts=dest.local.zk_connect)
        zk.start(timeout=15)
        try:
            kept = json.loads(zk.get(f"/config/cluster-links/{link_name}")[0])["config"]
        finally:
            zk.stop()
            zk.close()
        assert kept["sasl.jaas.config"].startswith("keyFactoryAlgorithm:")
        assert "alice-secret" not in json.dumps(kept)
        command_config = tmp_path / "sasl.properties"
        command_config.write_text(f"sasl.jaas.config={jaas}\n")
        assert mirror(["create-topic", "--bootstrap-server", dest.bootstrap_servers, "--link",
                       link_name, "--topic", topic, "--replication-factor", "1",
                       "--source-command-config", str(command_config)]) == 0
        leaders = {p.leader for p in AdminClient({"bootstrap.servers": dest.bootstrap_servers})
                   .list_topics(topic, timeout=10).topics[topic].partitions.values()}
        assert leaders == {1, 2}
        until(lambda: ends(dest.bootstrap_servers, topic) == ends(plain, topic), timeout=60)
        for p in range(2):
            assert batches(dest.bootstrap_servers, topic, p) == batches(plain, topic, p)
