"""The Prometheus endpoint (``josefk.metrics.port``): produce and consume known amounts with real
clients, then read the counters and gauges back over HTTP as Prometheus would."""
from __future__ import annotations

import json
import re
import time
import urllib.request

import pytest
from confluent_kafka import KafkaError, TopicPartition
from confluent_kafka.admin import NewTopic
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient
from prometheus_client.parser import text_string_to_metric_families

from josefk.faults.processes import REPO_ROOT
from josefk.zk.local_server import free_port
from compat_tests.helpers import (consume_n, consumer, create_topic, flush_all, producer,
                                  scrape, unique_topic)


def value(samples, name, **labels):
    return samples.get((name, frozenset(labels.items())))


def test_counters_and_gauges_match_what_clients_did(broker_factory):
    port = free_port()
    b = broker_factory({"josefk.metrics.port": port})
    topic = create_topic(b.bootstrap, unique_topic("metrics"), partitions=2)
    small = create_topic(b.bootstrap, unique_topic("metrics-small"),
                         config={"max.message.bytes": "200"})
    p = producer(b.bootstrap, **{"linger.ms": 0, "message.max.bytes": 10_000_000})
    for i in range(300):
        p.produce(topic, b"m" * 100, partition=i % 2)
    flush_all(p)
    failed = []
    p.produce(small, b"x" * 1000, on_delivery=lambda err, _m: failed.append(err))
    flush_all(p)
    assert failed[0].code() == KafkaError.MSG_SIZE_TOO_LARGE

    group = unique_topic("metrics-group")
    c = consumer(b.bootstrap, **{"group.id": group, "auto.offset.reset": "earliest"})
    c.assign([TopicPartition(topic, 0, 0), TopicPartition(topic, 1, 0)])
    got = consume_n(c, 300)
    c.commit(offsets=[TopicPartition(topic, 0, 100), TopicPartition(topic, 1, 150)],
             asynchronous=False)
    c.close()
    stored = sum(len(m.value()) for m in got)
    assert stored == 300 * 100

    s = scrape(port)
    assert value(s, "kafka_server_brokertopicmetrics_messagesin_total", topic=topic) == 300
    bytes_in = value(s, "kafka_server_brokertopicmetrics_bytesin_total", topic=topic)
    assert bytes_in > stored  # values plus batch and record overhead
    assert value(s, "kafka_server_brokertopicmetrics_bytesout_total", topic=topic) >= bytes_in
    # The refused message is no input, but an error the Produce handler answered.
    assert value(s, "kafka_server_brokertopicmetrics_messagesin_total", topic=small) in (None, 0)
    assert value(s, "kafka_network_requestmetrics_errors_total", request="Produce",
                 error="MESSAGE_TOO_LARGE") >= 1
    produces = value(s, "kafka_network_requestmetrics_requests_total", request="Produce")
    assert produces >= 2
    assert value(s, "kafka_network_requestmetrics_totaltimems_count", request="Produce") == \
        produces
    assert value(s, "kafka_network_requestmetrics_totaltimems_bucket", request="Produce",
                 le="+Inf") == produces
    assert value(s, "kafka_network_requestmetrics_localtimems_count", request="Fetch") >= 1
    assert value(s, "kafka_network_requestmetrics_requestqueuetimems_count",
                 request="Metadata") >= 1

    sizes = {p: value(s, "kafka_log_log_size", topic=topic, partition=str(p)) for p in (0, 1)}
    k = KafkaAdminClient(bootstrap_servers=b.bootstrap)
    dirs = k.describe_log_dirs({topic: [0, 1]})[0]["log_dirs"][0]["topics"][0]["partitions"]
    k.close()
    assert sizes == {d["partition_index"]: d["partition_size"] for d in dirs}
    assert sum(sizes.values()) == bytes_in
    assert value(s, "kafka_log_log_logendoffset", topic=topic, partition="0") == 150
    assert value(s, "kafka_log_log_logstartoffset", topic=topic, partition="0") == 0
    assert value(s, "kafka_consumergroup_lag", consumergroup=group, topic=topic,
                 partition="0") == 50
    assert value(s, "kafka_consumergroup_lag", consumergroup=group, topic=topic,
                 partition="1") == 0
    assert value(s, "kafka_server_replicamanager_partitioncount") >= 3
    assert value(s, "kafka_server_replicamanager_underreplicatedpartitions") == 0
    assert value(s, "kafka_controller_kafkacontroller_activecontrollercount") == 1
    idle = value(s, "kafka_network_socketserver_networkprocessoravgidlepercent")
    assert 0.0 <= idle <= 1.0


def test_metrics_are_off_by_default(broker):
    k = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    got = k.describe_configs([ConfigResource(ConfigResourceType.BROKER, str(broker.node_id))],
                             config_filter="all")
    k.close()
    assert got["broker"][str(broker.node_id)]["josefk.metrics.port"]["value"] == ""
    assert "metrics on http" not in broker.log_path.read_text()


def test_cluster_gauges(cluster_factory):
    c = cluster_factory(start=False)
    ports = {}
    for i, b in c.brokers.items():
        ports[i] = b.overrides["josefk.metrics.port"] = free_port()
    c.start()
    topic = unique_topic("metrics-cluster")
    admin = c.admin()
    admin.create_topics([NewTopic(topic, 3, 3)])[topic].result(30)
    c.wait_for_topic(topic, 3)
    samples = {i: scrape(port) for i, port in ports.items()}
    active = [value(s, "kafka_controller_kafkacontroller_activecontrollercount")
              for s in samples.values()]
    assert sorted(active) == [0, 0, 1]
    leaders = sum(value(s, "kafka_server_replicamanager_leadercount") for s in samples.values())
    assert leaders == 3  # each partition of the topic, led once

    # One broker gone: the partitions it followed are under-replicated on their leaders once
    # the ISR shrinks (replica.lag.time.max.ms is 4 s in the tests).
    controller = active.index(1) + 1
    victim = next(i for i in c.brokers if i != controller)
    # A partition whose only replica is on the victim goes offline with it (the controller
    # counts it, as Kafka's OfflinePartitionsCount).
    lonely = unique_topic("metrics-lonely")
    admin.create_topics([NewTopic(lonely, 1, replica_assignment=[[victim]])])[lonely].result(30)
    c.wait_for_topic(lonely, 1)
    assert value(scrape(ports[controller]),
                 "kafka_controller_kafkacontroller_offlinepartitionscount") == 0
    c.brokers[victim].stop()
    deadline = time.monotonic() + 30
    while True:
        under = sum(value(scrape(ports[i]), "kafka_server_replicamanager_underreplicatedpartitions")
                    for i in c.brokers if i != victim)
        offline = value(scrape(ports[controller]),
                        "kafka_controller_kafkacontroller_offlinepartitionscount")
        if (under > 0 and offline == 1) or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert under > 0 and offline == 1


def test_grafana_dashboard_shows_exported_metrics(broker_factory):
    """Every metric the dashboard queries is one the broker exports."""
    port = free_port()
    b = broker_factory({"josefk.metrics.port": port})
    topic = create_topic(b.bootstrap, unique_topic("dash"))
    p = producer(b.bootstrap)
    p.produce(topic, b"x")
    flush_all(p)
    group = unique_topic("dash-group")
    c = consumer(b.bootstrap, **{"group.id": group})
    c.commit(offsets=[TopicPartition(topic, 0, 0)], asynchronous=False)
    c.assign([TopicPartition(topic, 0, 0)])
    consume_n(c, 1)
    c.close()
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        families = {f.name for f in text_string_to_metric_families(r.read().decode())}
    exported = families | {f + suffix for f in families for suffix in ("_total", "_bucket")}
    dash = json.loads((REPO_ROOT / "grafana" / "josefk-dashboard.json").read_text())
    queried = {name for panel in dash["panels"] for t in panel["targets"]
               for name in re.findall(r"\b((?:kafka|josefk)_[a-z_]+)", t["expr"])}
    assert len(queried) >= 14
    assert queried <= exported, queried - exported


def test_client_metrics_pushed_by_librdkafka_reach_prometheus(broker_factory):
    """KIP-714: an operator subscribes clients to metrics (client-metrics config resources, as
    kafka-configs.sh --entity-type client-metrics does), librdkafka pushes them, and they appear
    on the broker's Prometheus endpoint labelled by client; the subscription survives a
    restart. Kafka would need a plug-in; josefk serves them itself."""
    from compat_tests.helpers import josefk_cli

    port = free_port()
    b = broker_factory({"josefk.metrics.port": port})
    josefk_cli(b, "configs", "--alter", "--entity-type", "client-metrics", "--entity-name",
               "producers", "--add-config",
               "metrics=org.apache.kafka.producer.,interval.ms=1000,match=[client_id=telem.*]")
    topic = create_topic(b.bootstrap, unique_topic("telemetry"))
    p = producer(b.bootstrap, **{"client.id": "telemetry-test", "enable.metrics.push": True})
    seen = {}
    deadline = time.monotonic() + 30
    while not seen and time.monotonic() < deadline:
        p.produce(topic, b"x")
        p.poll(0.5)
        seen = {name: dict(labels) for (name, labels), _v in scrape(port).items()
                if name.startswith("org_apache_kafka_producer")
                and dict(labels).get("client_id") == "telemetry-test"}
    flush_all(p)
    assert seen, "no pushed client metrics on /metrics"
    labels = next(iter(seen.values()))
    assert labels["client_software_name"] and labels["client_instance_id"]
    assert not any(name.startswith("org_apache_kafka_consumer") for name in seen)
    out = josefk_cli(b, "configs", "--describe", "--entity-type", "client-metrics").stdout
    assert "Dynamic configs for client-metric producers are:" in out
    assert "interval.ms=1000" in out and "match=client_id=telem.*" in out
    b.restart()
    out = josefk_cli(b, "configs", "--describe", "--entity-type", "client-metrics",
                     "--entity-name", "producers").stdout
    assert "metrics=org.apache.kafka.producer." in out
    bad = josefk_cli(b, "configs", "--alter", "--entity-type", "client-metrics",
                     "--entity-name", "producers", "--add-config", "interval.ms=5", check=False)
    assert bad.returncode == 1 and "interval must be between 100 and 3600000" in bad.stderr


@pytest.mark.parametrize("overrides,advertised", [
    ({}, False),
    ({"josefk.metrics.port": "free"}, True),
    ({"josefk.metrics.port": "free", "josefk.client.telemetry.enable": "false"}, False),
])
def test_client_telemetry_is_served_with_a_receiver_only(broker_factory, overrides, advertised):
    """As Kafka advertises GetTelemetrySubscriptions (71) and PushTelemetry (72) only with a
    ClientTelemetry metrics reporter, josefk does only with its Prometheus endpoint, unless
    josefk.client.telemetry.enable=false."""
    from compat_tests import rawkafka as rk

    b = broker_factory({k: free_port() if v == "free" else v for k, v in overrides.items()})
    with rk.RawConnection(b.bootstrap) as conn:
        served = rk.api_versions(conn)
    assert (71 in served, 72 in served, 74 in served) == (advertised, advertised, True)


# A stock producer and consumer, as a user's script runs them: produce one record, read it back.
CLIENT_SCRIPT = """
import sys
from confluent_kafka import Consumer, Producer
bootstrap, topic = sys.argv[1:]
p = Producer({"bootstrap.servers": bootstrap})
p.produce(topic, b"hello")
assert p.flush(15) == 0
c = Consumer({"bootstrap.servers": bootstrap, "group.id": topic, "auto.offset.reset": "earliest"})
c.subscribe([topic])
msgs = c.consume(num_messages=1, timeout=20)
assert [m.value() for m in msgs] == [b"hello"], msgs
c.close()
"""


def _client_stderr(bootstrap: str) -> str:
    import subprocess
    import sys

    topic = create_topic(bootstrap, unique_topic("quiet"))
    proc = subprocess.run([sys.executable, "-c", CLIENT_SCRIPT, bootstrap, topic],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stderr


def test_stock_clients_stay_quiet_against_a_default_broker(broker, broker_factory):
    """librdkafka logs ``Telemetry client instance id changed`` (level 6) when a broker
    advertises KIP-714's APIs: a default broker, as Kafka without a metrics reporter, does not,
    so a user's confluent-kafka producer and consumer print nothing; one with the Prometheus
    endpoint does, and the same clients say so."""
    assert "Telemetry" not in _client_stderr(broker.bootstrap)
    with_receiver = broker_factory({"josefk.metrics.port": free_port()})
    assert "Telemetry client instance id changed" in _client_stderr(with_receiver.bootstrap)
