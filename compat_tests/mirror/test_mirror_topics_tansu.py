"""A cluster link from Tansu (another Kafka-compatible broker, the bench extra installs it) to
josefk (issue 30, item 4): the mirror topic holds Tansu's batches at Tansu's offsets, compared
batch by batch. Tansu's ends are read from its Fetch answers' high watermark: its ListOffsets
for the latest offset does not answer the log end (shown by the last test)."""
import os

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from bench import brokers
from josefk.mirror.links import main as mirror
from josefk.tools.tool_client import ClusterClient

from compat_tests.mirror.test_mirror_topics import batches, ends, link, name
from compat_tests.mirror.mirroring import until

WAIT_MS = 100


def high_watermarks(bootstrap, topic, partitions):
    """Each partition's high watermark (Tansu answers a Fetch with max_wait_ms 0 with no
    partition at all: it is given WAIT_MS)."""
    with ClusterClient(bootstrap) as c:
        c.refresh([topic])
        return {p: hwm for _t, p, _r, hwm, _a in c.fetch(
            {(topic, p): 0 for p in range(partitions)}, max_wait_ms=WAIT_MS,
            read_committed=False)}


@pytest.fixture(scope="module")
def tansu(tmp_path_factory):
    try:
        binary = brokers.tansu_binary()
    except ImportError:
        binary = None
    if not binary or not os.path.exists(binary):
        pytest.fail("Tansu is not installed: scripts/setup.sh ...,bench")
    t = brokers.Tansu(tmp_path_factory.mktemp("tansu"), binary)
    t.start()
    yield t
    t.stop()


def test_a_topic_of_tansu_is_mirrored_offset_exact(tansu, clusters, capsys):
    _source, destination = clusters
    src, dest = tansu.bootstrap, destination.bootstrap_servers
    topic = name("tansu")
    admin = AdminClient({"bootstrap.servers": src})
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(15)
    producer = Producer({"bootstrap.servers": src, "linger.ms": 5})
    for i in range(300):
        producer.produce(topic, key=str(i % 5), value=f"t-{i}", partition=i % 2)
    assert producer.flush(15) == 0
    link_name = link(capsys, type("S", (), {"bootstrap_servers": src}), destination)
    assert mirror(["create-topic", "--bootstrap-server", dest, "--link", link_name,
                   "--topic", topic]) == 0
    until(lambda: ends(dest, topic) == high_watermarks(src, topic, 2), timeout=60)
    for p in range(2):
        assert batches(dest, topic, p) == batches(src, topic, p, max_wait_ms=WAIT_MS)
    for i in range(100):
        producer.produce(topic, value=f"more-{i}", partition=i % 2)
    assert producer.flush(15) == 0
    until(lambda: ends(dest, topic) == high_watermarks(src, topic, 2), timeout=60)
    for p in range(2):
        assert batches(dest, topic, p) == batches(src, topic, p, max_wait_ms=WAIT_MS)
    assert mirror(["failover", "--bootstrap-server", dest, "--topic", topic]) == 0


@pytest.fixture(scope="module")
def clusters():
    from josefk.testing import broker

    with broker() as destination:
        yield None, destination


def test_tansus_list_offsets_does_not_answer_its_log_end(tansu):
    """What the link does not rely on: ListOffsets LATEST, which Kafka answers with the log
    end (the high watermark), answers less on Tansu once a batch holds several records; a
    Fetch with max_wait_ms 0 is answered without the partition."""
    topic = name("tansu-ends")
    admin = AdminClient({"bootstrap.servers": tansu.bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(15)
    producer = Producer({"bootstrap.servers": tansu.bootstrap, "linger.ms": 50})
    for i in range(10):
        producer.produce(topic, value=f"v{i}", partition=0)
    assert producer.flush(15) == 0
    assert high_watermarks(tansu.bootstrap, topic, 1) == {0: 10}
    assert ends(tansu.bootstrap, topic) != {0: 10}
    with ClusterClient(tansu.bootstrap) as c:  # and a Fetch that may not wait: no partition
        c.refresh([topic])
        assert c.fetch({(topic, 0): 0}, max_wait_ms=0, read_committed=False) == []
