"""Replication with real clients and real failures: no acknowledged record lost across leader
kills, the high watermark, min.insync.replicas, a zombie leader, controlled shutdown, unclean
election and preferred leader election."""
from __future__ import annotations

import collections
import json
import resource
import threading
import time

import pytest
from confluent_kafka import Consumer, ElectionType, Producer, TopicPartition
from confluent_kafka.admin import NewTopic
from kafka import KafkaAdminClient

from compat_tests import rawkafka as rk
from compat_tests.helpers import unique_topic
from compat_tests.targets import FAST_FAILOVER
from josefk.faults.checker import longest_silence

NOT_ENOUGH_REPLICAS = 19
NOT_LEADER_OR_FOLLOWER = 6
KAFKA_STORAGE_ERROR = 56


def create(c, name, partitions=1, rf=3, config=None):
    admin = c.admin()
    admin.create_topics([NewTopic(name, partitions, rf, config=config or {})],
                        operation_timeout=30)[name].result(30)
    c.wait_for_topic(name, partitions)
    return name


def read_all(bootstrap, topic, partitions, expect, timeout=60):
    """Every record of ``topic`` from the beginning: {partition: [value, ...]} in offset order."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": unique_topic("reader"),
                  "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    out = {p: [] for p in range(partitions)}
    n = 0
    deadline = time.monotonic() + timeout
    while n < expect and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is None or m.error():
            continue
        out[m.partition()].append(m.value())
        n += 1
    c.close()
    return out


class LoadProducer:
    """An idempotent acks=all producer writing unique values until stopped; remembers what
    was acknowledged and every error reported."""

    def __init__(self, bootstrap, topic, partitions):
        self.p = Producer({"bootstrap.servers": bootstrap, "acks": "all",
                           "enable.idempotence": True, "linger.ms": 5,
                           "message.timeout.ms": 120000, "retry.backoff.ms": 100})
        self.topic, self.partitions = topic, partitions
        self.acked: dict[int, list[int]] = {p: [] for p in range(partitions)}
        self.ack_times: dict[int, list[float]] = {p: [] for p in range(partitions)}
        self.errors = []
        self.sent = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _delivered(self, err, msg):
        if err is not None:
            self.errors.append(err)
        else:
            self.acked[msg.partition()].append(int(msg.value()))
            self.ack_times[msg.partition()].append(time.monotonic())

    def _run(self):
        while not self.stop.is_set() and self.sent < 2_000_000:
            try:
                self.p.produce(self.topic, value=str(self.sent).encode(),
                               partition=self.sent % self.partitions, on_delivery=self._delivered)
                self.sent += 1
            except BufferError:
                self.p.poll(0.05)
                continue
            if self.sent % 50 == 0:
                self.p.poll(0)
                time.sleep(0.005)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(30)
        self.p.flush(120)

    def total_acked(self):
        return sum(len(v) for v in self.acked.values())

    def longest_gap(self, partition, since: float) -> float:
        """The longest time without an acknowledgement on ``partition`` from ``since`` until
        now."""
        return longest_silence(self.ack_times[partition], since, time.monotonic())


def check_nothing_lost(c, load, partitions):
    acked = load.total_acked()
    got = read_all(c.bootstrap, load.topic, partitions, acked)
    lost = duplicated = 0
    for p in range(partitions):
        values = [int(v) for v in got[p]]
        seen = set(values)
        duplicated += len(values) - len(seen)
        lost += len(set(load.acked[p]) - seen)
        assert values == sorted(values), f"partition {p} out of order"
    read = sum(len(v) for v in got.values())
    print(f"acked={acked} read={read} lost={lost} duplicated={duplicated} "
          f"errors={len(load.errors)} {collections.Counter(str(e) for e in load.errors)}")
    assert lost == 0 and duplicated == 0
    return acked


def own_view(c, broker_id: int, topic: str) -> str:
    """What ``broker_id`` itself answers of the controller and of ``topic``'s leaders and ISRs
    (for a failure message: a client would ask any broker)."""
    try:
        md = c.metadata_from(broker_id, [topic])
    except Exception as e:  # noqa: BLE001 - what it could not say is part of the answer
        return f"broker {broker_id}: {e!r}"
    parts = {p.partition_index: (p.leader_id, p.isr_nodes) for t in md.topics
             for p in t.partitions}
    return f"broker {broker_id}: controller {md.controller_id}, leader and ISR {parts}"


@pytest.mark.parametrize("fault", ["kill", "pause"])
def test_controller_death_takes_it_out_of_every_isr(cluster_factory, fault):
    """The broker that dies (or pauses past its session) is the controller: the new controller
    takes it out of the ISR of the partitions it followed at once, so acks=all writes led by
    the others stall no longer than a session timeout (6 s) plus 2 s."""
    c = cluster_factory()
    topic = create(c, unique_topic("ctlisr"), 3, config={"min.insync.replicas": "2"})
    controller = c.controller_id(1)
    followed = [i for i, p in c.metadata(1).topics[topic].partitions.items()
                if p.leader != controller]
    with LoadProducer(c.bootstrap, topic, 3) as load:
        time.sleep(1)
        killed_at = time.monotonic()
        if fault == "kill":
            c.brokers[controller].kill()
        else:
            c.brokers[controller].pause()
        try:
            time.sleep(12)
            gaps = {p: load.longest_gap(p, killed_at) for p in followed}
            views = [own_view(c, i, topic) for i in c.brokers if i != controller]
        finally:
            if fault == "pause":
                c.brokers[controller].resume()
    survivor = next(i for i in c.brokers if i != controller)
    isrs = {i: p.isrs for i, p in c.metadata(survivor).topics[topic].partitions.items()}
    assert all(gap < 8 for gap in gaps.values()), f"gaps {gaps}; at 12 s: {'; '.join(views)}"
    if fault == "kill":
        assert all(controller not in isr for isr in isrs.values()), isrs
    check_nothing_lost(c, load, 3)


def test_a_topic_created_as_a_new_controller_takes_over_lives_on_living_brokers(
        cluster_factory):
    """The controller and another broker die at once; the survivor becomes controller and is
    asked to create a topic the moment it names itself (before its first UpdateMetadata has
    told its own cache that the others died). Every replica is placed on the survivor and gets
    its leader: before, placement used the stale cache and the partitions placed on the dead
    brokers had no leader for good. As Kafka, a broker that died while still registered may
    still be chosen; one the controller has seen die never is."""
    from josefk.testing.admin import metadata
    from josefk.tools.client import Client
    from josefk.wire.apis import CREATE_TOPICS

    c = cluster_factory(overrides=FAST_FAILOVER)
    controller = c.controller_id(1)
    other, survivor = [i for i in sorted(c.brokers) if i != controller]
    c.brokers[controller].kill()
    c.brokers[other].kill()
    topic = unique_topic("after-takeover")
    R = CREATE_TOPICS.Request
    with Client(c.brokers[survivor].bootstrap, "takeover-test", timeout=30) as client:
        deadline = time.monotonic() + 30
        while metadata(client, []).controller_id != survivor:
            assert time.monotonic() < deadline, "the survivor never became the controller"
            time.sleep(0.005)
        answer = client.request(CREATE_TOPICS, timeout_ms=10000, topics=[R.CreatableTopic(
            name=topic, num_partitions=6, replication_factor=1, configs=[])]).topics[0]
        assert answer.error_code == 0, answer.error_message
        (t,) = metadata(client, [topic]).topics
    assert {p.partition_index: (p.replica_nodes, p.leader_id) for p in t.partitions} == \
        {i: ([survivor], survivor) for i in range(6)}


def test_a_failed_log_dir_moves_leadership_to_the_in_sync_replicas(cluster_factory):
    """The leader's disk fails under acks=all load (a file-size limit makes its next writes fail
    as a full disk does): its log dir goes offline, the controller moves leadership to another
    in-sync replica within a session timeout plus 2 s, nothing acknowledged is lost; restarted,
    the broker serves the partition again."""
    c = cluster_factory()
    topic = create(c, unique_topic("diskfail"), 1, config={"min.insync.replicas": "2"})
    leader = c.partition(topic, 0).leader
    segment = c.brokers[leader].data_dir / f"{topic}-0" / "00000000000000000000.log"
    with LoadProducer(c.bootstrap, topic, 1) as load:
        c.wait_for(lambda: segment.stat().st_size > 0, 10, "records on the leader")
        failed_at = time.monotonic()
        resource.prlimit(c.brokers[leader].proc.pid, resource.RLIMIT_FSIZE,
                         (segment.stat().st_size + 50_000, resource.RLIM_INFINITY))
        survivor = next(i for i in c.brokers if i != leader)
        c.wait_for(lambda: c.partition(topic, 0, survivor).leader not in (leader, -1), 15,
                   "leadership moved")
        time.sleep(3)
        gap = load.longest_gap(0, failed_at)
    assert gap < 8, gap
    moved = c.partition(topic, 0, survivor)
    assert leader not in moved.isrs and leader in moved.replicas
    assert c.brokers[leader].is_running()
    check_nothing_lost(c, load, 1)
    admin = KafkaAdminClient(bootstrap_servers=c.bootstrap)
    try:  # the failed dir, as Kafka reports it: KAFKA_STORAGE_ERROR and nothing else
        dirs = {n["broker"]: n["log_dirs"] for n in admin.describe_log_dirs()}
    finally:
        admin.close()
    (failed,) = dirs[leader]
    assert (failed["error_code"], failed["topics"]) == (KAFKA_STORAGE_ERROR, []), failed
    assert all(d["error_code"] == 0 for b, ds in dirs.items() if b != leader for d in ds), dirs
    c.brokers[leader].restart()
    c.wait_for(lambda: leader in c.partition(topic, 0, survivor).isrs, 30, "back in the ISR")


@pytest.mark.slow
def test_no_acknowledged_record_lost_across_leader_kills(cluster_factory):
    c = cluster_factory(overrides={**FAST_FAILOVER, "min.insync.replicas": 2})
    topic = create(c, unique_topic("durable"), 2)
    cycles = 10
    with LoadProducer(c.bootstrap, topic, 2) as load:
        for cycle in range(cycles):
            leader = c.partition(topic, cycle % 2).leader
            before = load.total_acked()
            c.brokers[leader].kill()
            survivor = next(i for i in c.brokers if i != leader)
            c.wait_for(lambda: c.partition(topic, cycle % 2, survivor).leader not in (-1, leader),
                       20, "a new leader")
            c.brokers[leader].start()
            c.wait_for(lambda: len(c.partition(topic, cycle % 2, survivor).isrs) == 3, 60,
                       "the restarted broker back in the ISR")
            c.wait_for(lambda: load.total_acked() > before + 100, 60, "acks to continue")
    assert not load.errors, load.errors[:5]
    assert check_nothing_lost(c, load, 2) > 1000


def test_consumers_never_read_past_the_high_watermark(cluster_factory):
    c = cluster_factory(overrides={"replica.lag.time.max.ms": 3000})
    topic = create(c, unique_topic("hwm"), 1, rf=2)
    part = c.partition(topic, 0)
    leader = part.leader
    follower = next(r for r in part.replicas if r != leader)
    boot = c.brokers[leader].bootstrap
    p = Producer({"bootstrap.servers": boot, "acks": "all"})
    p.produce(topic, value=b"replicated")
    p.flush(20)
    c.brokers[follower].pause()
    try:
        p = Producer({"bootstrap.servers": boot, "acks": 1})
        p.produce(topic, value=b"leader-only")
        assert p.flush(20) == 0
        produced = time.monotonic()
        cons = Consumer({"bootstrap.servers": boot, "group.id": unique_topic("h"),
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
        cons.assign([TopicPartition(topic, 0, 0)])
        seen = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(seen) < 2:
            m = cons.poll(0.1)
            if m is not None and not m.error():
                seen.append((m.value(), time.monotonic() - produced))
        cons.close()
        assert [v for v, _ in seen] == [b"replicated", b"leader-only"]
        # Visible only once the follower had been out of touch for replica.lag.time.max.ms
        # and left the ISR.
        assert seen[1][1] >= 3.0 * 0.9, f"read a record the follower lacked after {seen[1][1]}s"
        c.wait_for(lambda: c.partition(topic, 0, leader).isrs == [leader], 10, "ISR shrunk")
    finally:
        c.brokers[follower].resume()


def test_min_insync_replicas(cluster_factory):
    c = cluster_factory(overrides=FAST_FAILOVER)
    topic = create(c, unique_topic("minisr"), 1, config={"min.insync.replicas": "2"})
    leader = c.partition(topic, 0).leader
    others = [i for i in c.brokers if i != leader]
    for i in others:
        c.brokers[i].kill()
    c.wait_for(lambda: c.partition(topic, 0, leader).isrs == [leader], 30, "ISR of one")
    conn = rk.RawConnection(c.brokers[leader].bootstrap)
    batch = rk.record_batch([(None, b"x")], int(time.time() * 1000))
    res = rk.produce_v9(conn, topic, 0, batch, acks=-1)
    assert res[(topic, 0)]["error_code"] == NOT_ENOUGH_REPLICAS, res
    assert rk.produce_v9(conn, topic, 0, batch, acks=1)[(topic, 0)]["error_code"] == 0
    c.brokers[others[0]].start()
    c.wait_for(lambda: len(c.partition(topic, 0, leader).isrs) == 2, 60, "ISR of two")
    conn.sock.close()
    conn = rk.RawConnection(c.brokers[leader].bootstrap)
    res = rk.produce_v9(conn, topic, 0, batch, acks=-1)
    conn.sock.close()
    assert res[(topic, 0)]["error_code"] == 0, res


@pytest.mark.parametrize("acks", [-1, 1])
def test_zombie_leader_cannot_acknowledge_and_truncates(cluster_factory, acks):
    """A leader paused past its session and replaced: the requests queued while it slept are
    answered as soon as it resumes, before it hears of the new leader. It must neither
    acknowledge a write (with acks=1 nothing else would stop it, and the write would be
    truncated away) nor name itself the leader."""
    c = cluster_factory(overrides=FAST_FAILOVER)
    topic = create(c, unique_topic("zombie"), 1)
    p = Producer({"bootstrap.servers": c.bootstrap, "acks": "all"})
    for i in range(10):
        p.produce(topic, value=f"a{i}".encode())
    assert p.flush(20) == 0
    zombie = c.partition(topic, 0).leader
    others = [i for i in c.brokers if i != zombie]
    c.brokers[zombie].pause()
    new = c.wait_for(lambda: c.partition(topic, 0, others[0]).leader in others and
                     c.partition(topic, 0, others[0]).leader, 30, "a new leader")
    p = Producer({"bootstrap.servers": c.brokers[new].bootstrap, "acks": "all"})
    for i in range(5):
        p.produce(topic, value=f"b{i}".encode())
    assert p.flush(20) == 0
    # A write and a Metadata request sent to the zombie while it sleeps
    conn = rk.RawConnection(c.brokers[zombie].bootstrap, timeout=60)
    meta_conn = rk.RawConnection(c.brokers[zombie].bootstrap, timeout=60)
    reply, meta = {}, {}
    batch = rk.record_batch([(None, b"zombie")], int(time.time() * 1000))
    writer = threading.Thread(target=lambda: reply.update(
        rk.produce_v9(conn, topic, 0, batch, acks=acks)))
    asker = threading.Thread(target=lambda: meta.update(rk.metadata_v9(meta_conn, [topic])))
    writer.start()
    asker.start()
    time.sleep(0.5)
    c.brokers[zombie].resume()
    writer.join(60)
    asker.join(60)
    conn.sock.close()
    meta_conn.sock.close()
    assert reply and reply[(topic, 0)]["error_code"] == NOT_LEADER_OR_FOLLOWER, reply
    assert meta and meta["topics"][topic]["partitions"][0]["leader"] != zombie, meta
    c.wait_for(lambda: len(c.partition(topic, 0, new).isrs) == 3, 60, "zombie back in ISR")
    # Make the former zombie the leader again: its log must hold exactly the acknowledged data.
    for other in others:
        if other != new:
            c.brokers[other].stop()
    c.brokers[new].stop()
    c.wait_for(lambda: c.partition(topic, 0, zombie).leader == zombie, 30, "zombie leads")
    got = read_all(c.brokers[zombie].bootstrap, topic, 1, 16, timeout=20)[0]
    assert b"zombie" not in got
    assert got == [f"a{i}".encode() for i in range(10)] + [f"b{i}".encode() for i in range(5)]


def test_sigterm_of_a_leader_under_load_loses_nothing(cluster_factory):
    c = cluster_factory()
    topic = create(c, unique_topic("sigterm"), 3)
    with LoadProducer(c.bootstrap, topic, 3) as load:
        c.wait_for(lambda: load.total_acked() > 500, 30, "load running")
        leader = c.partition(topic, 0).leader
        c.brokers[leader].stop(timeout=60)
        assert not c.brokers[leader].needed_sigkill
        survivor = next(i for i in c.brokers if i != leader)
        c.wait_for(lambda: all(p.leader != leader for p in
                               c.metadata(survivor).topics[topic].partitions.values()),
                   10, "leadership moved")
        before = load.total_acked()
        c.wait_for(lambda: load.total_acked() > before + 500, 30, "acks continue")
    assert not load.errors, load.errors[:5]
    check_nothing_lost(c, load, 3)


def test_unclean_leader_election(cluster_factory):
    c = cluster_factory(overrides=FAST_FAILOVER)
    admin = c.admin()
    clean, unclean = unique_topic("clean"), unique_topic("unclean")
    # Both on brokers 1 (preferred leader) and 2; broker 3 keeps the cluster going.
    fs = admin.create_topics([
        NewTopic(clean, 1, replica_assignment=[[1, 2]]),
        NewTopic(unclean, 1, replica_assignment=[[1, 2]],
                 config={"unclean.leader.election.enable": "true"})], operation_timeout=30)
    for topic in (clean, unclean):
        fs[topic].result(30)
        c.wait_for_topic(topic, 1)
    p = Producer({"bootstrap.servers": c.bootstrap, "acks": "all"})
    for topic in (clean, unclean):
        p.produce(topic, value=b"both")
    assert p.flush(20) == 0
    c.brokers[2].kill()
    for topic in (clean, unclean):
        c.wait_for(lambda: c.partition(topic, 0, 1).isrs == [1], 30, "ISR shrunk to 1")
    p = Producer({"bootstrap.servers": c.brokers[1].bootstrap, "acks": "all"})
    for topic in (clean, unclean):
        p.produce(topic, value=b"leader-only")
    assert p.flush(20) == 0
    c.brokers[1].kill()
    c.brokers[2].start()
    c.wait_for(lambda: c.partition(unclean, 0, 3).leader == 2, 30, "unclean election")
    time.sleep(2)
    assert c.partition(clean, 0, 3).leader == -1, "the clean partition must stay offline"
    got = read_all(c.brokers[2].bootstrap, unclean, 1, 1, timeout=20)[0]
    assert got == [b"both"]  # what the surviving replica had; leader-only was lost, as Kafka's


def test_elect_leaders_restores_preferred(cluster_factory):
    c = cluster_factory(overrides=FAST_FAILOVER)
    topic = create(c, unique_topic("preferred"), 3)
    preferred, survivor = c.displace_preferred_leader(topic)
    c.wait_for(lambda: len(c.partition(topic, 0, survivor).isrs) == 3, 60, "ISR full")
    admin = c.admin()
    fut = admin.elect_leaders(ElectionType.PREFERRED,
                              [TopicPartition(topic, i) for i in range(3)])
    fut.result(30)
    c.wait_for(lambda: {i: p.leader for i, p in c.metadata(survivor).topics[topic]
                        .partitions.items()} == preferred, 20, "preferred leaders")


def test_an_isr_change_the_leader_missed_is_learned_and_the_isr_grows_back(cluster):
    """The ISR in ZooKeeper shrank at the same leader epoch without the leader hearing of it
    (its AlterPartition answer lost to a partition or a ZooKeeper outage): the next controller's
    LeaderAndIsr carries it, the leader takes it, and, its followers being caught up, grows
    the ISR back. Before, the leader refused that LeaderAndIsr as stale, went on believing its
    old ISR and never asked to add the followers again: under-replicated for good."""
    from kazoo.client import KazooClient

    topic = create(cluster, unique_topic("isr-drift"))
    p = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    for i in range(50):
        p.produce(topic, str(i).encode())
    assert p.flush(30) == 0
    path = f"/brokers/topics/{topic}/partitions/0/state"
    k = KazooClient(hosts=cluster.zk_connect, timeout=10.0)
    k.start(timeout=15)
    try:
        data, stat = k.get(path)
        state = json.loads(data)
        assert len(state["isr"]) == 3
        state["isr"] = [state["leader"]]
        k.set(path, json.dumps(state).encode(), version=stat.version)
        k.delete("/controller")  # the next controller reads the states and sends them
        cluster.wait_for(lambda: len(json.loads(k.get(path)[0])["isr"]) == 3, 30,
                         f"the ISR of {topic}-0 back to 3 in ZooKeeper")
        assert json.loads(k.get(path)[0])["leader_epoch"] == state["leader_epoch"]
    finally:
        k.stop()
        k.close()
    cluster.wait_for(lambda: len(cluster.partition(topic, 0).isrs) == 3, 20, "ISR in metadata")
