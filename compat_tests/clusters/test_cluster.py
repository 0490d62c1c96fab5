"""A ZooKeeper-coordinated josefk cluster, driven by real clients, real ZooKeeper and signals:
registration, controller election and failover, placement, metadata, leadership errors, topic
deletion, coordinators on other brokers, and Kafka's znode layout."""
from __future__ import annotations

import collections
import os
import signal
import time

import pytest
from confluent_kafka import (OFFSET_INVALID, Consumer, KafkaError, KafkaException,
                             TopicCollection, TopicPartition)
from confluent_kafka.admin import NewPartitions, NewTopic
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka import errors as kerrors
from kafka.structs import TopicPartition as KTopicPartition

from compat_tests import rawkafka as rk
from compat_tests.cluster import zk_json
from compat_tests.helpers import consume_n, flush_all, producer, unique_topic

NOT_LEADER_OR_FOLLOWER = 6


def create(c, name, partitions=3, rf=3, config=None, **kw):
    admin = c.admin()
    fs = admin.create_topics([NewTopic(name, partitions, rf, config=config or {}, **kw)],
                             operation_timeout=30)
    fs[name].result(30)
    c.wait_for_topic(name, partitions)
    return name


def test_every_broker_agrees_on_metadata(cluster):
    topic = create(cluster, unique_topic("agree"), 4)
    views = []
    for i in cluster.brokers:
        md = cluster.metadata(i)
        assert sorted(md.brokers) == [1, 2, 3]
        t = md.topics[topic]
        views.append({p: (pm.leader, sorted(pm.replicas), sorted(pm.isrs))
                      for p, pm in t.partitions.items()})
    assert views[0] == views[1] == views[2]
    for p, (leader, replicas, isr) in views[0].items():
        assert replicas == [1, 2, 3] and isr == [1, 2, 3] and leader in replicas
    controllers = {cluster.controller_id(i) for i in cluster.brokers}
    assert len(controllers) == 1 and controllers.pop() in (1, 2, 3)


@pytest.mark.parametrize("via", [1, 2, 3])
def test_confluent_produce_consume_replicated_through_any_broker(cluster, via):
    topic = create(cluster, unique_topic(f"rt{via}"), 3)
    boot = cluster.brokers[via].bootstrap
    p = producer(boot, acks="all", **{"enable.idempotence": True})
    for i in range(300):
        p.produce(topic, key=str(i % 3).encode(), value=f"v{i}".encode())
    flush_all(p)
    c = Consumer({"bootstrap.servers": boot, "group.id": unique_topic("g"),
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.subscribe([topic])
    got = consume_n(c, 300, timeout=40)
    c.close()
    assert sorted(int(m.value()[1:]) for m in got) == list(range(300))


def test_kafka_python_produce_consume_replicated(cluster):
    topic = create(cluster, unique_topic("kp"), 2)
    boot = cluster.brokers[2].bootstrap
    prod = KafkaProducer(bootstrap_servers=boot, acks="all")
    for i in range(100):
        prod.send(topic, value=f"m{i}".encode(), partition=i % 2)
    prod.flush(30)
    prod.close()
    cons = KafkaConsumer(topic, bootstrap_servers=cluster.brokers[3].bootstrap,
                         auto_offset_reset="earliest", consumer_timeout_ms=15000,
                         group_id=unique_topic("kpg"))
    values = sorted(int(m.value[1:]) for _, m in zip(range(100), cons))
    cons.close()
    assert values == list(range(100))


def test_leaders_spread_evenly(cluster):
    topic = create(cluster, unique_topic("spread"), 6)
    leaders = collections.Counter(p.leader for p in cluster.metadata(1).topics[topic]
                                  .partitions.values())
    assert sorted(leaders.values()) == [2, 2, 2], leaders


def test_replication_factor_larger_than_brokers_is_refused(cluster):
    name = unique_topic("rf4")
    admin = cluster.admin()
    fs = admin.create_topics([NewTopic(name, 1, 4)], operation_timeout=10)
    with pytest.raises(Exception) as e:
        fs[name].result(15)
    assert e.value.args[0].code() == KafkaError.INVALID_REPLICATION_FACTOR


def test_manual_replica_assignment_is_honoured(cluster):
    name = unique_topic("manual")
    admin = cluster.admin()
    fs = admin.create_topics([NewTopic(name, 2, replica_assignment=[[2, 3], [3, 1]])],
                             operation_timeout=30)
    fs[name].result(30)
    cluster.wait_for_topic(name, 2)
    parts = cluster.metadata(1).topics[name].partitions
    assert parts[0].replicas == [2, 3] and parts[0].leader == 2
    assert parts[1].replicas == [3, 1] and parts[1].leader == 3
    fs = admin.create_partitions([NewPartitions(name, 3, [[1, 2]])])
    fs[name].result(30)
    cluster.wait_for_topic(name, 3)
    assert cluster.metadata(2).topics[name].partitions[2].replicas == [1, 2]


def test_request_to_non_leader_gets_not_leader_or_follower(cluster):
    topic = create(cluster, unique_topic("notleader"), 1)
    leader = cluster.partition(topic, 0).leader
    other = next(i for i in cluster.brokers if i != leader)
    conn = rk.RawConnection(cluster.brokers[other].bootstrap)
    try:
        batch = rk.record_batch([(b"k", b"v")], int(time.time() * 1000))
        res = rk.produce_v9(conn, topic, 0, batch, acks=1)
        assert res[(topic, 0)]["error_code"] == NOT_LEADER_OR_FOLLOWER, res
        fetched = rk.fetch(conn, 11, topic, 0, 0)
        assert fetched["partitions"][(topic, 0)]["error_code"] == NOT_LEADER_OR_FOLLOWER
    finally:
        conn.sock.close()


def test_topic_deletion_removes_files_on_every_broker(cluster):
    topic = create(cluster, unique_topic("del"), 2)
    p = producer(cluster.bootstrap, acks="all")
    for i in range(20):
        p.produce(topic, value=b"x", partition=i % 2)
    flush_all(p)
    dirs = [b.data_dir / f"{topic}-{i}" for b in cluster.brokers.values() for i in range(2)]
    assert all(d.exists() for d in dirs)
    admin = cluster.admin()
    admin.delete_topics([topic], operation_timeout=30)[topic].result(30)
    cluster.wait_for(lambda: not any(d.exists() for d in dirs), 30, "partition dirs removed")
    cluster.wait_for(lambda: all(topic not in cluster.metadata(i).topics
                                 for i in cluster.brokers), 30, "topic gone everywhere")


def test_partitions_added_cluster_wide(cluster):
    topic = create(cluster, unique_topic("grow"), 2)
    admin = cluster.admin()
    admin.create_partitions([NewPartitions(topic, 5)])[topic].result(30)
    cluster.wait_for_topic(topic, 5)
    p = producer(cluster.bootstrap, acks="all")
    for i in range(5):
        p.produce(topic, value=b"x", partition=i)
    flush_all(p)


def test_admin_timeouts_bound_the_wait_for_the_controller(cluster):
    """DeleteTopics and CreatePartitions wait up to the request's timeout for the controller to
    act, then answer REQUEST_TIMED_OUT, as Kafka does; the change still happens."""
    from josefk.tools.client import Client
    from josefk.wire.apis import CREATE_PARTITIONS, DELETE_TOPICS
    topic = create(cluster, unique_topic("tmo"), 2)
    with Client(cluster.bootstrap) as c:
        grow = CREATE_PARTITIONS.Request.CreatePartitionsTopic(name=topic, count=4,
                                                               assignments=None)
        resp = c.request(CREATE_PARTITIONS, topics=[grow], timeout_ms=1, validate_only=False)
        assert resp.results[0].error_code == KafkaError.REQUEST_TIMED_OUT
        cluster.wait_for_topic(topic, 4)
        resp = c.request(DELETE_TOPICS, topic_names=[topic], timeout_ms=1,
                         topics=[DELETE_TOPICS.Request.DeleteTopicState(name=topic)])
        # the controller may have deleted it within the ZooKeeper round trip already
        assert resp.responses[0].error_code in (KafkaError.NO_ERROR, KafkaError.REQUEST_TIMED_OUT)
    cluster.wait_for(lambda: all(topic not in cluster.metadata(i).topics
                                 for i in cluster.brokers), 30, "topic gone everywhere")


def test_group_coordinated_by_another_broker_keeps_offsets(cluster_factory):
    c = cluster_factory()
    topic = create(c, unique_topic("grp"), 3)
    p = producer(c.bootstrap, acks="all")
    for i in range(90):
        p.produce(topic, value=f"{i}".encode(), partition=i % 3)
    flush_all(p)
    group = unique_topic("coord")
    boot = c.brokers[1].bootstrap
    cons = Consumer({"bootstrap.servers": boot, "group.id": group,
                     "auto.offset.reset": "earliest", "enable.auto.commit": False})
    cons.subscribe([topic])
    got = consume_n(cons, 60, timeout=40)
    cons.commit(asynchronous=False)
    cons.close()
    admin = c.admin()
    coordinator = admin.describe_consumer_groups([group])[group].result(15).coordinator.id
    # Kill the coordinator: the group's offsets live on in the other replicas.
    c.brokers[coordinator].kill()
    survivor = next(i for i in c.brokers if i != coordinator)
    c.wait_for(lambda: c.metadata(survivor).topics["__consumer_offsets"] is not None and
               all(p.leader != coordinator
                   for p in c.metadata(survivor).topics["__consumer_offsets"].partitions.values()),
               30, "offsets partitions moved")
    cons = Consumer({"bootstrap.servers": c.brokers[survivor].bootstrap, "group.id": group,
                     "auto.offset.reset": "earliest", "enable.auto.commit": False})
    committed = cons.committed([TopicPartition(topic, i) for i in range(3)], timeout=30)
    cons.close()
    assert sum(max(tp.offset, 0) for tp in committed) == len(got)


def test_group_commits_partitions_its_coordinator_does_not_host(cluster):
    """Replication factor 1 spreads a topic's partitions over the brokers; the group's
    coordinator hosts one of them at most, and commits every one (Kafka checks that a
    partition exists in the cluster, not on the coordinator)."""
    topic = create(cluster, unique_topic("rf1"), 3, rf=1)
    leaders = {p.leader for p in cluster.metadata(1).topics[topic].partitions.values()}
    assert leaders == {1, 2, 3}
    p = producer(cluster.bootstrap, acks="all")
    for i in range(30):
        p.produce(topic, value=f"{i}".encode(), partition=i % 3)
    flush_all(p)
    group = unique_topic("rf1g")
    conf = {"bootstrap.servers": cluster.bootstrap, "group.id": group,
            "auto.offset.reset": "earliest", "enable.auto.commit": False}
    cons = Consumer(conf)
    cons.subscribe([topic])
    consume_n(cons, 30, timeout=40)
    committed = cons.commit(asynchronous=False)
    cons.close()
    assert {(tp.partition, tp.offset, tp.error) for tp in committed} == \
        {(i, 10, None) for i in range(3)}
    cons = Consumer(conf)
    fetched = cons.committed([TopicPartition(topic, i) for i in range(3)], timeout=30)
    # OffsetDelete: the partitions the coordinator does not host are deleted as well.
    kp = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=15000)
    try:
        deleted = kp.delete_group_offsets(group, [KTopicPartition(topic, i) for i in range(3)])
    finally:
        kp.close()
    after = cons.committed([TopicPartition(topic, i) for i in range(3)], timeout=30)
    cons.close()
    assert [tp.offset for tp in fetched] == [10, 10, 10]
    assert deleted == {KTopicPartition(topic, i): kerrors.NoError for i in range(3)}
    assert [tp.offset for tp in after] == [OFFSET_INVALID] * 3


def test_controller_failover_and_rejoin(cluster_factory):
    c = cluster_factory()
    old = c.controller_id(1)
    started = time.monotonic()
    c.brokers[old].kill()
    survivors = [i for i in c.brokers if i != old]
    new = c.wait_for(lambda: (c.controller_id(survivors[0]) not in (-1, old)
                              and c.controller_id(survivors[0])), 20, "new controller")
    elapsed = time.monotonic() - started
    assert new in survivors
    assert elapsed < 6 + 5, f"controller failover took {elapsed:.1f}s"
    create(c, unique_topic("after"), 3, rf=2)
    c.brokers[old].start()
    c.wait_for_brokers(3, 60)
    topic = create(c, unique_topic("rejoined"), 3, rf=3)
    assert all(sorted(p.replicas) == [1, 2, 3]
               for p in c.metadata(old).topics[topic].partitions.values())


def test_duplicate_broker_id_is_refused(cluster, tmp_path):
    from josefk.faults.processes import BrokerProcess, BrokerStartError

    dup = BrokerProcess(data_dir=tmp_path / "dup", node_id=2, log_dir=tmp_path,
                        overrides={"zookeeper.connect": cluster.zk_connect,
                                   "zookeeper.session.timeout.ms": 6000}, start_timeout=30)
    with pytest.raises(BrokerStartError) as e:
        dup.start()
        dup.proc.wait(30)  # it listens first, then fails to register
        raise BrokerStartError(dup.log_tail())
    assert "already registered" in str(e.value)
    dup.stop()


def test_rack_aware_placement(cluster_factory):
    c = cluster_factory(4, racks=["a", "a", "b", "b"])
    topic = create(c, unique_topic("racks"), 8, rf=2)
    racks = {1: "a", 2: "a", 3: "b", 4: "b"}
    for p in c.metadata(1).topics[topic].partitions.values():
        assert {racks[r] for r in p.replicas} == {"a", "b"}, p.replicas


def test_znodes_follow_kafka_layout(cluster):
    topic = create(cluster, unique_topic("znodes"), 2, config={"retention.ms": "3600000"})
    zk = cluster.zk_connect
    reg, stat = zk_json(zk, "/brokers/ids/1")
    assert stat.ephemeralOwner != 0
    assert reg["version"] == 5 and reg["jmx_port"] == -1 and reg["features"] == {}
    assert reg["endpoints"] == [f"PLAINTEXT://127.0.0.1:{cluster.brokers[1].port}"]
    assert reg["listener_security_protocol_map"] == {"PLAINTEXT": "PLAINTEXT"}
    assert reg["host"] == "127.0.0.1" and reg["port"] == cluster.brokers[1].port
    assert reg["timestamp"].isdigit()
    t, _ = zk_json(zk, f"/brokers/topics/{topic}")
    assert t["version"] == 3 and set(t["partitions"]) == {"0", "1"}
    assert t["adding_replicas"] == {} and t["removing_replicas"] == {}
    assert len(t["topic_id"]) == 22
    admin = cluster.admin()
    md_id = admin.describe_topics(TopicCollection([topic]))[topic].result(15).topic_id
    # librdkafka prints a Uuid in standard base64, Kafka (and the znode) in url-safe base64.
    assert str(md_id).replace("+", "-").replace("/", "_") == t["topic_id"]
    st, _ = zk_json(zk, f"/brokers/topics/{topic}/partitions/0/state")
    assert set(st) == {"controller_epoch", "leader", "version", "leader_epoch", "isr"}
    assert st["version"] == 1 and st["leader"] in st["isr"]
    ctl, cstat = zk_json(zk, "/controller")
    assert set(ctl) == {"version", "brokerid", "timestamp", "kraftControllerEpoch"}
    assert ctl["version"] == 2 and ctl["kraftControllerEpoch"] == -1 and cstat.ephemeralOwner
    epoch, _ = zk_json(zk, "/controller_epoch")
    assert isinstance(epoch, int) and epoch >= 1
    cid, _ = zk_json(zk, "/cluster/id")
    assert cid["version"] == "1" and cid["id"] == admin.describe_cluster(
        request_timeout=10).result(10).cluster_id
    conf, _ = zk_json(zk, f"/config/topics/{topic}")
    assert conf == {"version": 1, "config": {"retention.ms": "3600000"}}
    for d in cluster.brokers.values():
        props = (d.data_dir / "meta.properties").read_text()
        assert f"cluster.id={cid['id']}" in props
    assert os.path.isdir(cluster.brokers[1].data_dir)


def test_topics_describe_shows_leader_replicas_isr(cluster):
    from compat_tests.helpers import josefk_cli

    topic = create(cluster, unique_topic("cli"), 2)
    out = josefk_cli(cluster.brokers[2], "topics", "describe", "--topic", topic).stdout
    lines = out.strip().splitlines()
    assert f"Topic: {topic}" in lines[0] and "PartitionCount: 2" in lines[0]
    assert "ReplicationFactor: 3" in lines[0]
    md = cluster.metadata(1).topics[topic].partitions
    for p in (0, 1):
        want = (f"\tTopic: {topic}\tPartition: {p}\tLeader: {md[p].leader}\t"
                f"Replicas: {','.join(map(str, md[p].replicas))}\t"
                f"Isr: {','.join(map(str, md[p].isrs))}")
        assert want in lines, (want, lines)


def test_auto_leader_rebalance_brings_leadership_back(cluster_factory):
    c = cluster_factory(overrides={"auto.leader.rebalance.enable": "true",
                                   "leader.imbalance.check.interval.seconds": 1,
                                   "zookeeper.session.timeout.ms": 3000})
    topic = create(c, unique_topic("autobal"), 3)
    preferred, survivor = c.displace_preferred_leader(topic)
    c.wait_for(lambda: {i: p.leader for i, p in c.metadata(survivor).topics[topic]
                        .partitions.items()} == preferred, 60, "preferred leaders restored")


def test_stale_controller_and_non_controller_requests_are_refused(cluster):
    from josefk.tools.client import Client
    from josefk.wire.apis import ALTER_PARTITION, LEADER_AND_ISR, UPDATE_METADATA

    controller = cluster.controller_id(1)
    other = next(i for i in cluster.brokers if i != controller)
    with Client(cluster.brokers[other].bootstrap) as c:
        resp = c.request(UPDATE_METADATA, controller_id=controller, controller_epoch=0,
                         broker_epoch=-1, topic_states=[], live_brokers=[])
        assert resp.error_code == 11  # STALE_CONTROLLER_EPOCH
        resp = c.request(LEADER_AND_ISR, controller_id=controller, controller_epoch=0,
                         broker_epoch=-1, type=0, topic_states=[], live_leaders=[])
        assert resp.error_code == 11
        resp = c.request(ALTER_PARTITION, broker_id=other, broker_epoch=-1, topics=[])
        assert resp.error_code == 41  # NOT_CONTROLLER


def test_offset_for_leader_epoch(cluster):
    from josefk.tools.client import Client
    from josefk.wire.apis import OFFSET_FOR_LEADER_EPOCH

    topic = create(cluster, unique_topic("ofle"), 1)
    p = producer(cluster.bootstrap, acks="all")
    for i in range(7):
        p.produce(topic, value=b"x", partition=0)
    flush_all(p)
    part = cluster.partition(topic, 0)
    Q = OFFSET_FOR_LEADER_EPOCH.Request
    req = [Q.OffsetForLeaderTopic(topic=topic, partitions=[Q.OffsetForLeaderTopic.OffsetForLeaderPartition(
        partition=0, current_leader_epoch=-1, leader_epoch=0)])]
    with Client(cluster.brokers[part.leader].bootstrap) as c:
        r = c.request(OFFSET_FOR_LEADER_EPOCH, replica_id=-1, topics=req).topics[0].partitions[0]
        assert (r.error_code, r.leader_epoch, r.end_offset) == (0, 0, 7)
    follower = next(i for i in part.replicas if i != part.leader)
    with Client(cluster.brokers[follower].bootstrap) as c:
        r = c.request(OFFSET_FOR_LEADER_EPOCH, replica_id=-1, topics=req).topics[0].partitions[0]
        assert r.error_code == NOT_LEADER_OR_FOLLOWER


def test_topic_deleted_while_a_broker_is_down_disappears_when_it_returns(cluster_factory):
    c = cluster_factory(overrides={"zookeeper.session.timeout.ms": 3000})
    topic = create(c, unique_topic("stray"), 2)
    p = producer(c.bootstrap, acks="all")
    for i in range(10):
        p.produce(topic, value=b"x", partition=i % 2)
    flush_all(p)
    away = c.brokers[3]
    away.stop()
    admin = c.admin(1)
    admin.delete_topics([topic], operation_timeout=30)[topic].result(30)
    assert (away.data_dir / f"{topic}-0").exists()
    away.start()
    c.wait_for_brokers(3)
    c.wait_for(lambda: not any((away.data_dir / f"{topic}-{i}").exists() for i in range(2)),
               30, "stray logs removed")


def test_a_short_zookeeper_outage_keeps_every_session(tmp_path):
    """ZooKeeper down for 10 s (longer than the 6 s session timeout): the brokers reconnect
    within their sessions once it is back (the reconnect backoff stays near a second), so no
    broker re-registers and no ISR shrinks."""
    from compat_tests.cluster import Cluster
    from testkit.zookeeper import new_chroot
    from josefk.zk.local_server import LocalZooKeeper

    zk = LocalZooKeeper(tmp_path / "zk", fsync=False).start(timeout=60)
    c = None
    try:
        c = Cluster(new_chroot(zk, "outage"), tmp_path / "cluster").start()
        topic = create(c, unique_topic("zkout"), 3)
        epochs = {i: zk_json(c.zk_connect, f"/brokers/ids/{i}")[1].czxid for i in c.brokers}
        zk.stop()
        time.sleep(4)  # past a third of the session timeout: the sessions are in doubt
        p = producer(c.bootstrap, acks="all")  # the followers still fetch: leaders serve
        p.produce(topic, value=b"during the outage", partition=0)
        assert p.flush(5) == 0, "an acks=all write stopped by a ZooKeeper outage alone"
        time.sleep(6)
        zk.start(timeout=60)
        time.sleep(8)  # past a session timeout after ZooKeeper's return
        assert {i: zk_json(c.zk_connect, f"/brokers/ids/{i}")[1].czxid
                for i in c.brokers} == epochs
        for i, b in c.brokers.items():
            assert "session expired" not in b.log_path.read_text(), f"broker {i} lost its session"
        isrs = {p: sorted(pm.isrs) for p, pm in c.metadata(1).topics[topic].partitions.items()}
        assert isrs == {p: [1, 2, 3] for p in range(3)}
        p = producer(c.bootstrap, acks="all")
        p.produce(topic, value=b"after the outage", partition=0)
        flush_all(p)
    finally:
        if c is not None:
            c.stop()
        zk.stop()


def test_a_zookeeper_outage_stops_no_group(tmp_path):
    """A consumer commits synchronously through a 10 s ZooKeeper outage (longer than the 6 s
    session timeout). ZooKeeper out of reach takes no partition from any broker, and Kafka's
    coordinators keep serving through it: every commit succeeds, the group never rebalances
    and no broker stops acting on its leaderships."""
    from compat_tests.cluster import Cluster
    from testkit.zookeeper import new_chroot
    from josefk.zk.local_server import LocalZooKeeper

    zk = LocalZooKeeper(tmp_path / "zk", fsync=False).start(timeout=60)
    c = cons = None
    try:
        c = Cluster(new_chroot(zk, "zkgroup"), tmp_path / "cluster").start()
        topic = create(c, unique_topic("zkgroup"), 3)
        p = producer(c.bootstrap)
        for i in range(1000):
            p.produce(topic, value=b"%d" % i)
        flush_all(p)
        assigned, revoked = [], []
        cons = Consumer({"bootstrap.servers": c.bootstrap, "group.id": unique_topic("zkgroupg"),
                         "enable.auto.commit": False, "auto.offset.reset": "earliest",
                         "session.timeout.ms": 6000, "heartbeat.interval.ms": 1000})
        cons.subscribe([topic], on_assign=lambda _c, parts: assigned.append(parts),
                       on_revoke=lambda _c, parts: revoked.append(parts))
        failures, commits = [], collections.Counter()

        def consume_and_commit(phase, seconds):
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                m = cons.poll(0.05)
                if m is None or m.error():
                    continue
                try:
                    cons.commit(message=m, asynchronous=False)
                    commits[phase] += 1
                except KafkaException as e:
                    failures.append((phase, e.args[0]))
                time.sleep(0.05)

        consume_and_commit("before", 5)
        assert assigned and commits["before"], "the consumer never joined"
        member = cons.memberid()
        zk.stop()
        consume_and_commit("during", 10)
        zk.start(timeout=60)
        consume_and_commit("after", 8)  # past a session timeout after ZooKeeper's return
        assert not failures, failures
        assert commits["during"] > 20 and commits["after"] > 20, commits
        assert (len(assigned), revoked, cons.memberid()) == (1, [], member)
        for i, b in c.brokers.items():
            assert "acting on no leadership" not in b.log_path.read_text(), f"broker {i}"
    finally:
        if cons is not None:
            cons.close()
        if c is not None:
            c.stop()
        zk.stop()


def test_zookeeper_restarted_again_and_again_expires_no_session(tmp_path):
    """ZooKeeper stopped and started again as fast as it goes: each broker reconnects within
    its session every time, even through an attempt that reaches a ZooKeeper still starting
    (kazoo waited for its answer for a whole session timeout, and the session expired). No
    broker registers again and the controller stays where it is."""
    from compat_tests.cluster import Cluster
    from testkit.zookeeper import new_chroot
    from josefk.zk.local_server import LocalZooKeeper

    zk = LocalZooKeeper(tmp_path / "zk", fsync=False).start(timeout=60)
    c = None
    try:
        c = Cluster(new_chroot(zk, "zkrestarts"), tmp_path / "cluster").start()
        create(c, unique_topic("zkrestarts"), 3)

        def sessions():
            return ({i: zk_json(c.zk_connect, f"/brokers/ids/{i}")[1].ephemeralOwner
                     for i in c.brokers}, zk_json(c.zk_connect, "/controller")[1].czxid)
        before = sessions()
        for _ in range(20):
            zk.stop()
            zk.start(timeout=60)
        time.sleep(6 + 2)  # past a session timeout: a session that expired is gone
        assert sessions() == before
        for i, b in c.brokers.items():
            assert "session expired" not in b.log_path.read_text(), f"broker {i} lost its session"
    finally:
        if c is not None:
            c.stop()
        zk.stop()


def test_a_controller_stuck_on_a_dead_zookeeper_still_stops(tmp_path):
    """ZooKeeper dies for good just before the controller's periodic preferred leader election
    writes (the preferred leader is back after a restart): SIGTERM still stops the controller at
    once. Before, its stop waited for that election, and the election for a ZooKeeper answer
    that never came: the process ran on forever."""
    from compat_tests.cluster import Cluster
    from testkit.zookeeper import new_chroot
    from josefk.zk.local_server import LocalZooKeeper

    zk = LocalZooKeeper(tmp_path / "zk", fsync=False).start(timeout=60)
    c = None
    try:
        c = Cluster(new_chroot(zk, "zkdead"), tmp_path / "cluster", overrides={
            "controlled.shutdown.enable": "false", "auto.leader.rebalance.enable": "true",
            "leader.imbalance.check.interval.seconds": 3,
            "leader.imbalance.per.broker.percentage": 0}).start()
        controller = c.controller_id(1)
        preferred = next(i for i in c.brokers if i != controller)
        topic = unique_topic("zkdead")
        admin = c.admin()
        admin.create_topics([NewTopic(topic, 1, replica_assignment=[
            [preferred] + [i for i in c.brokers if i != preferred]])])[topic].result(30)
        c.wait_for_topic(topic, 1)
        c.brokers[preferred].kill()
        c.wait_for(lambda: c.partition(topic, 0, controller).leader not in (preferred, -1), 30,
                   "a new leader")
        c.brokers[preferred].restart()
        c.wait_for(lambda: preferred in c.partition(topic, 0, controller).isrs, 30,
                   "the preferred leader back in the ISR")
        zk.stop()
        b = c.brokers[controller]
        c.wait_for(lambda: "preferred election for 1 partitions" in b.log_path.read_text(), 10,
                   "the periodic preferred leader election")
        t0 = time.monotonic()
        b.proc.send_signal(signal.SIGTERM)
        b.proc.wait(60)
        assert time.monotonic() - t0 < 20, "the controller took too long to stop"
    finally:
        if c is not None:
            c.stop(timeout=10)
        zk.stop()


def test_a_leader_cut_off_sends_producers_to_the_new_leader(tmp_path):
    """The leader cut off from the other brokers and ZooKeeper (clients still reach it): once
    its session is in doubt and its followers are silent it stops acting as leader, so its
    clients go to the leader the controller elects instead of waiting for acknowledgements
    that cannot come: Produce to it answers NOT_LEADER_OR_FOLLOWER, its Metadata names no
    leader, and acks=all writes resume within the session timeout plus 2 s."""
    from compat_tests.cluster import Cluster
    from testkit.zookeeper import new_chroot
    from josefk.zk.local_server import LocalZooKeeper

    zk = LocalZooKeeper(tmp_path / "zk", fsync=False).start(timeout=60)
    c = None
    try:
        c = Cluster(new_chroot(zk, "cut"), tmp_path / "cluster", isolation=True).start()
        if c.isolation_unavailable:
            pytest.skip(f"network partitions unavailable here: {c.isolation_unavailable}")
        topic = create(c, unique_topic("cut"), 3, config={"min.insync.replicas": "2"})
        leader = c.partition(topic, 0).leader
        p = producer(c.bootstrap, acks="all")
        for i in range(3):
            p.produce(topic, value=b"before", partition=i)
        assert p.flush(10) == 0
        c.isolate(leader)
        cut_at = time.monotonic()
        c.wait_for(lambda: c.partition(topic, 0, leader).leader == -1, 8,
                   "the cut-off leader to stop naming itself")
        with rk.RawConnection(c.brokers[leader].bootstrap) as conn:
            res = rk.produce_v9(conn, topic, 0, rk.record_batch([(None, b"to the old")],
                                                                int(time.time() * 1000)))
        assert res[(topic, 0)]["error_code"] == NOT_LEADER_OR_FOLLOWER, res
        # A producer writing every partition (librdkafka asks the broker it used last for
        # metadata: one writing only to the cut-off broker would ask nobody else)
        acked = {}
        while 0 not in acked and time.monotonic() - cut_at < 20:
            for i in range(3):
                p.produce(topic, value=b"after", partition=i, on_delivery=lambda err, m: (
                    err is None and acked.setdefault(m.partition(), time.monotonic())))
            p.poll(0.05)
        p.flush(20)
        assert acked.get(0, float("inf")) - cut_at < 6 + 2 + 2, \
            f"acks=all writes resumed {acked.get(0, float('inf')) - cut_at:.1f} s after the cut"
        assert c.partition(topic, 0, next(i for i in c.brokers if i != leader)).leader \
            not in (-1, leader)
    finally:
        if c is not None:
            c.heal()
            c.stop()
        zk.stop()


def test_stopping_every_broker_at_once_is_clean(cluster_factory):
    """SIGTERM to all brokers together: each one may become controller while the others leave
    and its own ZooKeeper client closes; every one stops within its time, with no traceback
    and no warning about its session (closing it is on purpose)."""
    c = cluster_factory()
    for n in range(3):
        create(c, unique_topic(f"stopall{n}"), 6)
    for b in c.brokers.values():
        b.proc.send_signal(signal.SIGTERM)
    for i, b in c.brokers.items():
        assert b.stop(timeout=30) == 0 and not b.needed_sigkill, f"broker {i}"
        text = b.log_path.read_text()
        for bad in ("Traceback", "Task exception was never retrieved", "session expired",
                    "handler failed"):
            assert bad not in text, f"broker {i}: {bad}\n{b.log_tail()}"


def test_paused_coordinator_never_answers_stale_offsets(cluster_factory):
    """The group's coordinator is paused past its session timeout: another broker takes over
    and acknowledges newer commits. Resumed, the old coordinator answers OffsetFetch with
    NOT_COORDINATOR until it has learnt that it lost the partition, never with the offsets it
    remembers from before."""
    c = cluster_factory()
    topic = create(c, unique_topic("pausecoord"), 3)
    group = unique_topic("pauseg")

    def commit(bootstrap, offset):
        cons = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                         "enable.auto.commit": False})
        try:
            cons.commit(offsets=[TopicPartition(topic, p, offset) for p in range(3)],
                        asynchronous=False)
        finally:
            cons.close()

    def coordinator_seen_by(broker_id):
        admin = c.admin(broker_id)  # kept alive until the future is answered
        return admin.describe_consumer_groups([group])[group].result(10).coordinator.id

    commit(c.bootstrap, 5)
    coordinator = coordinator_seen_by(1)
    paused = c.brokers[coordinator]
    survivor = next(i for i in c.brokers if i != coordinator)
    others = ",".join(b.bootstrap for i, b in c.brokers.items() if i != coordinator)
    paused.proc.send_signal(signal.SIGSTOP)
    try:
        c.wait_for(lambda: coordinator_seen_by(survivor) != coordinator, 30, "a new coordinator")
        commit(others, 50)
    finally:
        paused.proc.send_signal(signal.SIGCONT)
    answers = set()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            with rk.RawConnection(paused.bootstrap) as conn:
                answers.update(rk.offset_fetch_v1(conn, group, topic, [0, 1, 2]).values())
        except (OSError, rk.ConnectionClosed):
            pass
        time.sleep(0.05)
    assert answers <= {(rk.NOT_COORDINATOR, -1), (rk.NONE, 50)}, answers


def test_a_stopped_broker_leaves_every_brokers_metadata(cluster_factory):
    """A broker that shuts down (SIGTERM: controlled shutdown first, so no partition state
    changes when it goes) is no longer offered to clients as a live broker: the controller
    tells every broker, as Kafka's does on any broker failure."""
    c = cluster_factory(overrides={"zookeeper.session.timeout.ms": 3000})
    create(c, unique_topic("leave"), 3)
    victim = next(i for i in c.brokers if i != c.controller_id(1))
    c.brokers[victim].stop()
    c.wait_for(lambda: all(victim not in c.metadata(i).brokers
                           for i, b in c.brokers.items() if b.is_running()),
               10, f"broker {victim} gone from every broker's metadata")
