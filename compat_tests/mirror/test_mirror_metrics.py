"""MirrorMaker 2's metrics over a real run of ``josefk mirror``'s dedicated mode between two
josefk brokers: two source tasks mirror two partitions while a producer writes to both, and
the worker's /metrics shows Kafka's MirrorSourceConnector metrics per remote partition (every
record and byte counted once, ages and latencies consistent) and the checkpoint latency of
the group the MirrorCheckpointConnector translates."""

import httpx
from confluent_kafka import Consumer, Producer, TopicPartition
from prometheus_client.parser import text_string_to_metric_families

from josefk.testing import broker

from compat_tests.mirror.mirroring import dedicated_mode, until

PER_PARTITION = 400
SOURCE = "kafka_connect_mirror_mirrorsourceconnector_"
CHECKPOINT = "kafka_connect_mirror_mirrorcheckpointconnector_checkpoint_latency_ms"


def scrape(url: str) -> dict:
    found = {}
    text = httpx.get(f"{url}metrics", timeout=10).text
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name.startswith("kafka_connect_mirror_"):
                found[sample.name, tuple(sorted(sample.labels.items()))] = sample.value
    return found


def produce(bootstrap: str, sizes: dict) -> None:
    """PER_PARTITION records to each partition of "orders", interleaved, of growing sizes;
    ``sizes`` gets each partition's value bytes."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(PER_PARTITION):
        for partition in (0, 1):
            value = b"v" * (1 + i % 50)
            producer.produce("orders", value, f"k{i}".encode(), partition=partition)
            sizes[partition] = sizes.get(partition, 0) + len(value)
        if i % 100 == 0:
            producer.poll(0)
    assert producer.flush(30) == 0


def test_a_mirror_run_shows_kafkas_mirror_metrics_on_the_workers_endpoint():
    with broker() as primary, broker() as backup:
        primary.create_topic("orders", 2)
        app = Consumer({"bootstrap.servers": primary.bootstrap_servers, "group.id": "app",
                        "enable.auto.commit": False})
        app.commit(offsets=[TopicPartition("orders", p, 0) for p in (0, 1)],
                   asynchronous=False)
        with dedicated_mode(primary, backup, **{
                "groups": "app", "emit.checkpoints.interval.seconds": "1",
                "tasks.max": "2"}) as herders:
            url = herders[0].config.rest_url
            sizes = {}
            produce(primary.bootstrap_servers, sizes)
            tags = {p: (("partition", str(p)), ("source", "primary"), ("target", "backup"),
                        ("topic", "primary.orders")) for p in (0, 1)}

            def counted():
                got = scrape(url)
                return all(got.get((SOURCE + "record_count", tags[p])) == PER_PARTITION
                           for p in (0, 1)) and got
            got = until(counted, timeout=90)
            for p in (0, 1):
                t = tags[p]
                assert got[SOURCE + "byte_count", t] == sizes[p]
                assert got[SOURCE + "record_rate", t] > 0 and got[SOURCE + "byte_rate", t] > 0
                for name in ("record_age_ms", "replication_latency_ms"):
                    low, avg, high = (got[f"{SOURCE}{name}_{s}", t] for s in ("min", "avg", "max"))
                    assert 0 <= low <= avg <= high < 120_000, (name, low, avg, high)
                    assert low <= got[SOURCE + name, t] <= high
                # a record is acknowledged by the target after it was polled
                assert got[SOURCE + "replication_latency_ms_max", t] >= \
                    got[SOURCE + "record_age_ms_min", t]

            app.commit(offsets=[TopicPartition("orders", p, PER_PARTITION) for p in (0, 1)],
                       asynchronous=False)
            app.close()
            group_tags = {p: (("group", "app"), ("partition", str(p)), ("source", "primary"),
                              ("target", "backup"), ("topic", "primary.orders"))
                          for p in (0, 1)}
            got = until(lambda: (g := scrape(url)) and all(
                (CHECKPOINT, group_tags[p]) in g for p in (0, 1)) and g, timeout=60)
            for p in (0, 1):
                assert 0 <= got[CHECKPOINT + "_min", group_tags[p]] <= \
                    got[CHECKPOINT + "_max", group_tags[p]] < 60_000
