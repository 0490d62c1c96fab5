"""Tiered storage (KIP-405) with a real object store (SeaweedFS's S3 API): a topic whose local
log keeps only its last segments reads whole from offset 0 with real clients, the rest coming
from the bucket; on a cluster of the `spread` shape (a target of its own: it kills brokers), a
new leader serves the remote data its predecessor copied and a follower below the leader's local
log rebuilds from the bucket."""
from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest
from confluent_kafka import OFFSET_BEGINNING, KafkaError, TopicPartition

from josefk.faults.processes import BROKER_PYTHON, REPO_ROOT, BrokerProcess
from josefk.faults.storeproxy import StoreProxy
from josefk.pipelines.kafka_source import NAME
from josefk.tiered.store import S3Store
from josefk.tools.client import Client
from josefk.tools.web_console import ConsoleData, topic_page, topic_view
from josefk.wire import errors
from josefk.wire.apis import LIST_OFFSETS
from compat_tests.helpers import (DeliveryLog, admin_client, consumer, create_topic, flush_all,
                                  josefk_cli, producer, read_exactly, scrape, unique_topic,
                                  wait_for_topic)
from josefk.zk.local_server import free_port
from compat_tests.security_setup import Pki, listener_address, secure_overrides
from testkit.seaweedfs import seaweedfs

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

RECORDS = 1500
VALUE = "v{:05d}-" + "x" * 90  # ~100 bytes a record: 20+ segments of 8 KiB
TOPIC_CONFIG = {"remote.storage.enable": "true", "segment.bytes": "8192",
                "local.retention.bytes": "16384", "retention.ms": "-1"}


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    with seaweedfs(tmp_path_factory.mktemp("seaweedfs")) as server:
        yield server


def tiered_overrides(s3, bucket: str, **extra) -> dict:
    return {"remote.log.storage.system.enable": "true",
            "remote.log.manager.task.interval.ms": 200,
            "log.retention.check.interval.ms": 200,
            "remote.log.metadata.topic.num.partitions": 3,
            "remote.log.storage.josefk.store": "s3",
            "remote.log.storage.josefk.s3.endpoint": s3.endpoint,
            "remote.log.storage.josefk.s3.bucket": bucket,
            "remote.log.storage.josefk.s3.access.key": s3.access_key,
            "remote.log.storage.josefk.s3.secret.key": s3.secret_key,
            "offsets.topic.replication.factor": 1, **extra}


def local_segments(data_dirs, topic: str) -> list[int]:
    """Base offsets of the partition's local segments, over the brokers' data dirs."""
    for d in data_dirs:
        part = Path(d) / f"{topic}-0"
        if part.is_dir():
            yield sorted(int(p.name[:20]) for p in part.glob("*.log"))


def wait_tiered(bucket: S3Store, topic: str, data_dirs, timeout: float = 60.0,
                remote_segments: int = 15) -> None:
    """Until the bucket holds the topic's segments and every local log keeps only its last
    ones (local.retention.bytes: two segments, plus the active one and one being copied)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        remote = [k for k in bucket.list(f"{topic}-0-") if k.endswith(".log")]
        local = list(local_segments(data_dirs, topic))
        if len(remote) >= remote_segments and local and all(s and s[0] > 0 and len(s) <= 4 for s in local):
            return
        time.sleep(0.3)
    raise AssertionError(f"not tiered after {timeout} s: remote {len(remote)} segments, "
                         f"local {local}")


def produce_small_batches(bootstrap: str, topic: str) -> None:
    """Every record acknowledged, in batches of about 1 KiB (many per segment)."""
    p = producer(bootstrap, acks="all", batch_size=1024, linger_ms=0)
    delivered = DeliveryLog()
    for v in values(RECORDS):
        p.produce(topic, value=v, partition=0, on_delivery=delivered)
    flush_all(p)
    assert delivered.errors == []


def values(n: int) -> list[str]:
    return [VALUE.format(i) for i in range(n)]


def kill_leader(cluster, topic: str) -> None:
    """SIGKILL partition 0's leader; return once another broker leads it (or after 60 s)."""
    meta = admin_client(cluster.bootstrap).list_topics(topic, timeout=10)
    leader = meta.topics[topic].partitions[0].leader
    cluster.kill(leader)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        meta = admin_client(cluster.bootstrap).list_topics(topic, timeout=10)
        if meta.topics[topic].partitions[0].leader not in (-1, leader):
            return
        time.sleep(0.3)


def check_read_from_zero_with_kcat(bootstrap: str, topic: str) -> None:
    out = subprocess.run(["kcat", "-b", bootstrap, "-C", "-t", topic, "-p", "0",
                          "-o", "beginning", "-e", "-q", "-f", "%o %s\n"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [f"{i} {v}" for i, v in enumerate(values(RECORDS))]


def check_read_from_zero_with_kafka_python(bootstrap: str, topic: str) -> None:
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KTopicPartition

    kc = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                       consumer_timeout_ms=20000)
    try:
        kc.assign([KTopicPartition(topic, 0)])
        kc.seek_to_beginning()
        got = []
        for m in kc:
            got.append((m.offset, m.value.decode()))
            if len(got) == RECORDS:
                break
    finally:
        kc.close()
    assert got == list(enumerate(values(RECORDS)))


def check_read_from_zero(bootstrap: str, topic: str) -> list:
    msgs = read_exactly(bootstrap, [TopicPartition(topic, 0, OFFSET_BEGINNING)], RECORDS,
                        timeout=60)
    assert [m.offset() for m in msgs] == list(range(RECORDS))
    assert [m.value().decode() for m in msgs] == values(RECORDS)
    return msgs


def test_one_broker_reads_every_record_from_the_bucket(s3, tmp_path, spark):
    bucket = "tiered-one"
    store = S3Store(bucket, endpoint=s3.endpoint, access_key=s3.access_key,
                    secret_key=s3.secret_key)
    metrics_port = free_port()
    broker = BrokerProcess(data_dir=tmp_path / "data", log_dir=tmp_path,
                           overrides=tiered_overrides(s3, bucket, **{
                               "josefk.metrics.port": metrics_port}))
    broker.start()
    try:
        topic = create_topic(broker.bootstrap, unique_topic("tiered"), config=TOPIC_CONFIG)
        produce_small_batches(broker.bootstrap, topic)
        wait_tiered(store, topic, [broker.data_dir])
        msgs = check_read_from_zero(broker.bootstrap, topic)
        consumer_low, _high = _watermarks(broker.bootstrap, topic)

        # ListOffsets by timestamp finds records in the remote log
        c = consumer(broker.bootstrap)
        try:
            for k in (0, 100, 400):
                ts = msgs[k].timestamp()[1]
                want = next(m.offset() for m in msgs if m.timestamp()[1] >= ts)
                (tp,) = c.offsets_for_times([TopicPartition(topic, 0, ts)], timeout=15)
                assert tp.error is None and tp.offset == want, (k, tp)
        finally:
            c.close()
        assert consumer_low == 0  # ListOffsets EARLIEST: the remote log's start

        # `josefk topics describe` shows the partition's remote and local offsets, local size
        line = josefk_cli(broker, "topics", "describe", "--topic", topic).stdout.splitlines()[1]
        cols = dict(c.split(": ", 1) for c in line.strip().split("\t"))
        local_start = int(cols["LocalLogStartOffset"])
        assert cols["LogStartOffset"] == "0" and cols["EndOffset"] == str(RECORDS)
        assert 0 < local_start <= int(cols["TieredOffset"]) + 1 < RECORDS
        assert 0 < int(cols["LocalSize"]) < 15 * 7000
        assert int(cols["RemoteSize"]) > 15 * 7000

        check_read_from_zero_with_kcat(broker.bootstrap, topic)

        # Kafka's remote-storage metrics
        metrics = scrape(metrics_port)
        labels = frozenset({("topic", topic)})
        prefix = "kafka_server_brokertopicmetrics_"
        assert metrics[(prefix + "remotefetchbytespersec_total", labels)] > 0
        assert metrics[(prefix + "remotecopyrequestspersec_total", labels)] >= 15
        assert metrics[(prefix + "remotelogsizebytes", labels)] > 15 * 7000
        assert (prefix + "remotecopylagbytes", labels) in metrics
        assert metrics[(prefix + "remotelogmetadatacount", labels)] >= 15
        assert (prefix + "remotedeletelagsegments", labels) in metrics
        # the broker's totals (no topic label: one tiered topic here) and the remote log
        # manager's gauges
        for name in ("remotefetchbytespersec_total", "remotecopyrequestspersec_total",
                     "remotelogsizebytes", "remotelogmetadatacount", "remotecopylagbytes"):
            assert metrics[(prefix + name, frozenset())] == metrics[(prefix + name, labels)]
        for name in ("kafka_log_remote_remotelogmanager_remotelogmanagertasksavgidlepercent",
                     "kafka_log_remote_remotestoragethreadpool_remotelogreaderavgidlepercent"):
            assert 0 <= metrics[(name, frozenset())] <= 1
        assert metrics[("kafka_log_remote_remotestoragethreadpool_remotelogreadertaskqueuesize",
                        frozenset())] >= 0

        check_read_from_zero_with_kafka_python(broker.bootstrap, topic)

        # Spark, through the project's pipelines, reads the whole history
        rows = (spark.read.format(NAME).option("kafka.bootstrap.servers", broker.bootstrap)
                .option("subscribe", topic).option("startingOffsets", "earliest").load()
                .select("offset", "value").orderBy("offset").collect())
        assert [(r.offset, r.value.decode()) for r in rows] == list(enumerate(values(RECORDS)))

        # every copied segment has its six objects
        keys = store.list(f"{topic}-0-")
        stems = {k.rsplit(".", 1)[0] for k in keys}
        for stem in stems:
            for suffix in (".log", ".index", ".timeindex", ".snapshot",
                           ".leader_epoch_checkpoint", ".txnindex"):
                assert stem + suffix in keys, (stem, suffix)

        # restarted, the broker reads its remote log's metadata back and serves it again
        broker.restart()
        check_read_from_zero(broker.bootstrap, topic)

        # DeleteRecords below the local log: the log starts there, the remote segments
        # wholly below it go
        cut = 500
        admin = admin_client(broker.bootstrap)
        (done,) = admin.delete_records([TopicPartition(topic, 0, cut)]).values()
        assert done.result(15).low_watermark == cut
        assert _watermarks(broker.bootstrap, topic)[0] == cut
        msgs = read_exactly(broker.bootstrap, [TopicPartition(topic, 0, OFFSET_BEGINNING)],
                            RECORDS - cut, timeout=60)
        assert [m.offset() for m in msgs] == list(range(cut, RECORDS))
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            starts = sorted(int(k.rsplit("/", 1)[1][:20]) for k in store.list(f"{topic}-0-")
                            if k.endswith(".log"))
            if starts and starts[0] > 0:
                break
            time.sleep(0.3)
        assert 0 < starts[0] <= cut
        # the log start inside a remote segment outlives a restart (the log-start-offset
        # checkpoint keeps it, as Kafka's does)
        broker.restart()
        assert _earliest_once_known(broker.bootstrap, topic) == cut
        admin = admin_client(broker.bootstrap)

        # a deleted topic's remote log goes too
        admin.delete_topics([topic])[topic].result(15)
        deadline = time.monotonic() + 30
        while store.list(f"{topic}-0-") and time.monotonic() < deadline:
            time.sleep(0.3)
        assert store.list(f"{topic}-0-") == []
    finally:
        broker.stop()


def test_a_restarted_broker_answers_the_log_start_only_once_it_knows_its_remote_log(
        s3, tmp_path):
    """Restarted, a broker serves its partitions before its remote log manager starts (that
    waits on the object store, slow here): until it has read the remote log back, ListOffsets
    EARLIEST is answered REPLICA_NOT_AVAILABLE (retried), never the local log's start."""
    bucket = "tiered-restart"
    store = S3Store(bucket, endpoint=s3.endpoint, access_key=s3.access_key,
                    secret_key=s3.secret_key)
    proxy = StoreProxy(s3.endpoint)
    proxy.start()
    broker = BrokerProcess(data_dir=tmp_path / "data", log_dir=tmp_path, overrides={
        **tiered_overrides(s3, bucket),
        "remote.log.storage.josefk.s3.endpoint": proxy.endpoint})
    broker.start()
    try:
        topic = create_topic(broker.bootstrap, unique_topic("tiered"), config=TOPIC_CONFIG)
        produce_small_batches(broker.bootstrap, topic)
        wait_tiered(store, topic, [broker.data_dir])
        proxy.delay = 5.0  # the object store answers each request 5 s late
        broker.restart()
        answers = []
        assert _earliest_once_known(broker.bootstrap, topic, answers) == 0
        proxy.delay = 0.0
        # asked while the broker had not read its remote log back, and told to retry
        assert len(answers) > 1 and {e for e, _o in answers[:-1]} == {
            errors.REPLICA_NOT_AVAILABLE}, answers
        check_read_from_zero(broker.bootstrap, topic)

        # `josefk dump-log` reads the first remote segment from the bucket
        first = min(k for k in store.list(f"{topic}-0-") if k.endswith(".log"))
        props = tmp_path / "tiered.properties"
        props.write_text("".join(f"{k}={v}\n" for k, v in {
            **tiered_overrides(s3, bucket), "log.dirs": broker.data_dir}.items()))
        out = subprocess.run([BROKER_PYTHON, "-m", "josefk", "dump-log", "--remote-storage-config",
                              str(props), "--files", first], cwd=str(REPO_ROOT),
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        assert out.stdout.splitlines()[2].startswith("baseOffset: 0 "), out.stdout

        # the web console shows the local log's start and size and the remote log's size
        data = ConsoleData(broker.bootstrap)
        try:
            deadline = time.monotonic() + 30
            while True:  # until the bucket holds only finished copies (none in flight)
                _parts, starts, ends, sizes, _configs, tiered = data.call(topic_view, topic)
                local_starts, remote_sizes = tiered
                in_bucket = sum(len(store.get(k)) for k in store.list(f"{topic}-0-")
                                if k.endswith(".log"))
                if remote_sizes[0] == in_bucket:
                    break
                assert time.monotonic() < deadline, (remote_sizes, in_bucket)
                time.sleep(0.5)
            assert starts[0] == 0 and 0 < local_starts[0] < ends[0] == RECORDS
            assert 0 < sizes[0] < in_bucket
            page = topic_page(data, {}, topic)
            assert "Local start offset" in page and "Remote size (bytes)" in page
        finally:
            data.cc.close()
    finally:
        broker.stop()
        proxy.stop()


def test_read_committed_over_remote_data_skips_aborted_transactions(s3, tmp_path):
    from confluent_kafka import Producer

    bucket = "tiered-txn"
    store = S3Store(bucket, endpoint=s3.endpoint, access_key=s3.access_key,
                    secret_key=s3.secret_key)
    broker = BrokerProcess(data_dir=tmp_path / "data", log_dir=tmp_path,
                           overrides=tiered_overrides(s3, bucket, **{
                               "transaction.state.log.replication.factor": 1,
                               "transaction.state.log.min.isr": 1}))
    broker.start()
    try:
        topic = create_topic(broker.bootstrap, unique_topic("tiered-txn"), config=TOPIC_CONFIG)
        p = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": topic,
                      "batch.size": 1024, "linger.ms": 0})
        p.init_transactions(30)
        committed = []
        for t in range(60):
            p.begin_transaction()
            batch = [VALUE.format(t * 100 + i) for i in range(20)]
            for v in batch:
                p.produce(topic, value=v, partition=0)
            if t % 3 == 2:
                assert p.flush(30) == 0  # in the log, not purged from the producer's queue
                p.abort_transaction(30)
            else:
                p.commit_transaction(30)
                committed.extend(batch)
        wait_tiered(store, topic, [broker.data_dir], remote_segments=8)

        c = consumer(broker.bootstrap, **{"isolation.level": "read_committed"})
        try:
            c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
            got = []
            deadline = time.monotonic() + 60
            while len(got) < len(committed) and time.monotonic() < deadline:
                m = c.poll(0.5)
                if m is not None and not m.error():
                    got.append(m.value().decode())
            time.sleep(1)
            extra = c.poll(1)
        finally:
            c.close()
        assert got == committed
        assert extra is None or extra.error()
    finally:
        broker.stop()


def _leader_address(cluster, topic: str) -> str:
    leader = admin_client(cluster.bootstrap).list_topics(topic, timeout=10) \
        .topics[topic].partitions[0].leader
    return f"127.0.0.1:{cluster.brokers[leader].port}"


def _watermarks(bootstrap: str, topic: str):
    c = consumer(bootstrap)
    try:
        return c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
    finally:
        c.close()


def _earliest_once_known(bootstrap: str, topic: str, answers=None) -> int:
    """ListOffsets EARLIEST of partition 0 asked again while the broker answers
    REPLICA_NOT_AVAILABLE (a restarted broker until it has read its remote log back); every
    answer goes to ``answers``. Asked raw: librdkafka's query_watermark_offsets was seen to
    report that error of its EARLIEST request as low = high (the partition's end)."""
    answers = [] if answers is None else answers
    deadline = time.monotonic() + 60
    while not answers or answers[-1][0] == errors.REPLICA_NOT_AVAILABLE:
        assert time.monotonic() < deadline, f"no log start after the restart: {answers}"
        if answers:
            time.sleep(0.1)
        answers.append(_earliest(bootstrap, topic))
    assert answers[-1][0] == errors.NONE, answers
    return answers[-1][1]


def _earliest(bootstrap: str, topic: str) -> tuple[int, int]:
    """(error code, offset) of the broker's answer to ListOffsets EARLIEST of partition 0."""
    Q = LIST_OFFSETS.Request
    with Client(bootstrap, timeout=15) as c:
        resp = c.request(LIST_OFFSETS, replica_id=-1, isolation_level=0, topics=[
            Q.ListOffsetsTopic(name=topic, partitions=[Q.ListOffsetsPartition(
                partition_index=0, current_leader_epoch=-1, timestamp=-2)])])
    p = resp.topics[0].partitions[0]
    return p.error_code, p.offset


def spread_tiered(s3, target_factory, bucket: str):
    """A cluster of the `spread` shape tiering to ``bucket``, its store and a tiered topic of
    RF 2 there."""
    store = S3Store(bucket, endpoint=s3.endpoint, access_key=s3.access_key,
                    secret_key=s3.secret_key)
    overrides = tiered_overrides(s3, bucket, **{
        "remote.log.metadata.topic.replication.factor": 2})
    del overrides["offsets.topic.replication.factor"]  # the shape's
    cluster = target_factory(overrides).cluster
    topic = create_topic(cluster.bootstrap, unique_topic("tiered"), config=TOPIC_CONFIG,
                         replication_factor=2)
    return store, cluster, topic


@pytest.mark.parametrize("target_factory", ["spread"], indirect=True)
def test_new_leader_serves_the_remote_data(s3, target_factory):
    """On the `spread` shape (RF 2, coordinators apart from the leaders) confluent-kafka,
    kcat and kafka-python read every record from offset 0; then the leader killed after a
    DeleteRecords into the remote range: the new leader, which learned the log start
    from its fetches (the local log starts far above), answers it as ListOffsets EARLIEST and
    serves every record from there, none below."""
    store, cluster, topic = spread_tiered(s3, target_factory, "tiered-cluster")
    produce_small_batches(cluster.bootstrap, topic)
    dirs = [b.data_dir for b in cluster.brokers.values()]
    wait_tiered(store, topic, dirs)
    check_read_from_zero(cluster.bootstrap, topic)
    check_read_from_zero_with_kcat(cluster.bootstrap, topic)
    check_read_from_zero_with_kafka_python(cluster.bootstrap, topic)

    deleted = RECORDS // 3  # far below every local log (wait_tiered: its last segments)
    admin = admin_client(cluster.bootstrap)  # kept alive until the future is answered
    tp = TopicPartition(topic, 0, deleted)
    # answered once every follower's log starts there (learned from its fetches)
    assert admin.delete_records([tp], operation_timeout=30)[tp].result(40) \
        .low_watermark == deleted
    kill_leader(cluster, topic)
    wait_for_topic(admin_client(cluster.bootstrap), topic, 1)
    assert _earliest_once_known(_leader_address(cluster, topic), topic) == deleted
    msgs = read_exactly(cluster.bootstrap, [TopicPartition(topic, 0, OFFSET_BEGINNING)],
                        RECORDS - deleted, timeout=60)
    assert [m.offset() for m in msgs] == list(range(deleted, RECORDS))
    assert [m.value().decode() for m in msgs] == values(RECORDS)[deleted:]
    below = consumer(cluster.bootstrap, **{"auto.offset.reset": "error"})
    try:
        below.assign([TopicPartition(topic, 0, deleted - 1)])
        deadline = time.monotonic() + 30
        while True:  # never a record below the deletion point
            msg = below.poll(1)
            assert msg is None or msg.error(), msg.offset()
            if msg is not None and msg.error().code() == KafkaError._AUTO_OFFSET_RESET:
                break
            assert time.monotonic() < deadline, "no out-of-range answer below the start"
    finally:
        below.close()

    # the new leader copies on from where its predecessor stopped: no segment twice
    copied_before = len([k for k in store.list(f"{topic}-0-") if k.endswith(".log")])
    p = producer(cluster.bootstrap, acks="all", batch_size=1024, linger_ms=0)
    delivered = DeliveryLog()
    for i in range(RECORDS, RECORDS + 300):
        p.produce(topic, value=VALUE.format(i), partition=0, on_delivery=delivered)
    flush_all(p)
    assert delivered.errors == []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        logs = [k for k in store.list(f"{topic}-0-") if k.endswith(".log")]
        if len(logs) >= copied_before + 3:
            break
        time.sleep(0.3)
    starts = [int(k.rsplit("/", 1)[1][:20]) for k in logs]
    assert len(logs) >= copied_before + 3 and len(set(starts)) == len(starts), logs


@pytest.mark.parametrize("target_factory", ["spread"], indirect=True)
def test_a_follower_below_the_leaders_local_log_rebuilds_from_the_bucket(s3, target_factory):
    """KIP-405's follower, on the `spread` shape: back after the leader's local log moved
    past it, it restarts its log at the leader's local log start with the leader epochs and
    producer state of the remote segment that ends there."""
    store, cluster, topic = spread_tiered(s3, target_factory, "tiered-follower")
    deadline = time.monotonic() + 30
    while True:  # every broker's metadata has the partition's leader
        parts = admin_client(cluster.bootstrap).list_topics(topic, timeout=10) \
            .topics[topic].partitions
        if 0 in parts and parts[0].leader >= 0:
            break
        assert time.monotonic() < deadline, "no leader"
        time.sleep(0.3)
    leader = parts[0].leader
    follower = next(b for b in parts[0].replicas if b != leader)
    cluster.kill(follower)
    deadline = time.monotonic() + 60  # out of the ISR (a new controller first, maybe)
    while True:
        parts = admin_client(cluster.bootstrap).list_topics(topic, timeout=10) \
            .topics[topic].partitions
        if 0 in parts and follower not in parts[0].isrs:
            break
        assert time.monotonic() < deadline, "the killed follower stays in the ISR"
        time.sleep(0.5)
    produce_small_batches(cluster.bootstrap, topic)
    alive = [b.data_dir for n, b in cluster.brokers.items() if n != follower]
    wait_tiered(store, topic, alive)
    cluster.restart(follower)

    part_dir = Path(cluster.brokers[follower].data_dir) / f"{topic}-0"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        bases = sorted(int(p.name[:20]) for p in part_dir.glob("*.log"))
        if bases and bases[0] > 0 and (part_dir / "leader-epoch-checkpoint").exists():
            break
        time.sleep(0.3)
    assert bases and bases[0] > 0, bases  # restarted at the leader's local log start
    # the epoch history from offset 0 came from the bucket (restarted bare, the follower
    # would know the epoch of its first local batch only, from there); the leader's
    # epoch is 0 or, after an election the kill caused, more
    epochs = (part_dir / "leader-epoch-checkpoint").read_text().split("\n")
    assert epochs[2].split(" ")[1] == "0", epochs
    check_read_from_zero(cluster.bootstrap, topic)


@pytest.mark.parametrize("inter_broker", ["SASL_SSL", "MTLS"])
def test_the_metadata_topic_speaks_the_inter_broker_listeners_security(s3, tmp_path,
                                                                       inter_broker):
    """``__remote_log_metadata``'s clients reach the inter-broker listener with its security
    (TLS with SASL PLAIN; TLS with a client certificate required): segments are copied,
    recorded there, and read back."""
    bucket = f"tiered-{inter_broker.lower().replace('_', '-')}"
    store = S3Store(bucket, endpoint=s3.endpoint, access_key=s3.access_key,
                    secret_key=s3.secret_key)
    pki = Pki(tmp_path / "pki")
    broker = BrokerProcess(data_dir=tmp_path / "data", log_dir=tmp_path, overrides={
        **tiered_overrides(s3, bucket), **secure_overrides(pki, {
            "inter.broker.listener.name": inter_broker,
            "sasl.mechanism.inter.broker.protocol": "PLAIN"})})
    broker.start()
    try:
        bootstrap = listener_address(broker, "PLAINTEXT")
        topic = create_topic(bootstrap, unique_topic("tiered"), config=TOPIC_CONFIG)
        produce_small_batches(bootstrap, topic)
        wait_tiered(store, topic, [broker.data_dir])
        check_read_from_zero(bootstrap, topic)
    finally:
        broker.stop()
