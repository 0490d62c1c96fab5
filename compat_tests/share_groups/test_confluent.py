"""Share groups (KIP-932) with confluent-kafka's ShareConsumer (librdkafka's share consumer):
several consumers on one partition, acknowledgements, acquisition locks, the delivery count
limit, admin views, each on one broker and on a 3-broker cluster; the state across a broker
restart and, on the cluster, a leader kill."""
from __future__ import annotations

import collections
import concurrent.futures
import threading
import time
import uuid

import pytest
from confluent_kafka import ConsumerGroupTopicPartitions, TopicCollection, TopicPartition

from josefk.faults.processes import BrokerProcess
from compat_tests.cluster import Cluster
from compat_tests.conftest import BASE_OVERRIDES
from compat_tests.helpers import (admin_client, create_topic, josefk_cli, produce_values,
                                  producer, unique_topic)
from compat_tests.share_consumers import (ACCEPT, RELEASE, REJECT, ChildConsumer, Member,
                                          set_group_configs, share_consumer, wait_until)
from josefk.tools.client import Client
from josefk.wire import errors
from josefk.wire.apis import (ALTER_SHARE_GROUP_OFFSETS, API_VERSIONS, DELETE_SHARE_GROUP_OFFSETS,
                              DESCRIBE_SHARE_GROUP_OFFSETS, FIND_COORDINATOR, LIST_GROUPS,
                              SHARE_APIS, SHARE_FETCH, SHARE_GROUP_DESCRIBE,
                              SHARE_GROUP_HEARTBEAT)
from testkit.zookeeper import new_chroot

# Locks of one second (Kafka allows 15 s at least by default) so expiry is seen in a test;
# heartbeats every second, so members get newly initialized partitions without waiting 5 s.
SHARE_BROKER = {"group.share.min.record.lock.duration.ms": 1000,
                "group.share.min.heartbeat.interval.ms": 1000,
                "group.share.heartbeat.interval.ms": 1000,
                "share.coordinator.state.topic.num.partitions": 3}
SHARE_OVERRIDES = {**BASE_OVERRIDES, **SHARE_BROKER}


@pytest.fixture(scope="module")
def share_broker(tmp_path_factory):
    root = tmp_path_factory.mktemp("share-broker")
    b = BrokerProcess(data_dir=root / "data", overrides=SHARE_OVERRIDES, log_dir=root)
    try:
        b.start()
        yield b
    finally:
        b.stop()


@pytest.fixture(scope="module", params=["single", "cluster"])
def share_target(request, tmp_path_factory):
    """Where the scenarios run: the share broker, or a 3-broker cluster on which partition
    leaders, group coordinators and share coordinators (3 ``__share_group_state`` partitions)
    are spread over the brokers (``_setup`` picks groups whose share coordinator is not the
    leader, so share state is read and written between brokers)."""
    if request.param == "single":
        yield request.getfixturevalue("share_broker")
        return
    zk = request.getfixturevalue("zookeeper")
    c = Cluster(new_chroot(zk, "share-cluster"), tmp_path_factory.mktemp("share-cluster"), 3,
                SHARE_BROKER)
    try:
        c.start()
        yield c
    finally:
        c.stop()


def _brokers(target) -> list:
    return list(target.brokers.values()) if isinstance(target, Cluster) else [target]


def _coordinator(target, group) -> str | None:
    """The address of the group's coordinator (FindCoordinator), where group requests go; None
    while there is none yet (``__consumer_offsets`` being created)."""
    with Client(target.bootstrap) as c:
        (found,) = c.request(FIND_COORDINATOR, coordinator_keys=[group], key_type=0).coordinators
    if found.error_code == errors.COORDINATOR_NOT_AVAILABLE:
        return None
    assert found.error_code == 0, found
    return f"{found.host}:{found.port}"


def _group(request) -> str:
    return unique_topic("sg-" + request.node.name[:30])


def _share_coordinator_apart(target, topic, request) -> str:
    """A group id whose share coordinator for partition 0 of ``topic`` (FindCoordinator key
    type 2) is another broker than the partition's leader: the leader reads and writes the
    share-partition's state over the inter-broker share-coordinator APIs."""
    admin = admin_client(target.bootstrap)
    desc = admin.describe_topics(TopicCollection([topic]))[topic].result(15)
    topic_id = str(desc.topic_id).replace("+", "-").replace("/", "_").rstrip("=")
    leader = desc.partitions[0].leader.id
    for _ in range(50):
        group = _group(request)
        with Client(target.bootstrap) as c:
            (found,) = c.request(FIND_COORDINATOR, coordinator_keys=[f"{group}:{topic_id}:0"],
                                 key_type=2).coordinators
        if found.error_code == errors.COORDINATOR_NOT_AVAILABLE:  # the state topic is new
            time.sleep(0.2)
        elif found.node_id != leader:
            assert found.error_code == 0, found
            return group
    raise AssertionError(f"no group with a share coordinator apart from broker {leader}")


def _setup(target, request, n, *, partitions=1, batch=10, **group_configs):
    """A topic with ``n`` records in batches of ``batch`` (one producer flush each), and a group
    reading it from the earliest offset; on the cluster the topic has replication factor 2 and
    the group's share coordinator is apart from the leader."""
    bootstrap = target.bootstrap
    cluster = isinstance(target, Cluster)
    topic = create_topic(bootstrap, unique_topic(request.node.name[:30]), partitions,
                         replication_factor=2 if cluster else 1)
    group = _share_coordinator_apart(target, topic, request) if cluster else _group(request)
    set_group_configs(bootstrap, group, share_auto_offset_reset="earliest", **group_configs)
    p = producer(bootstrap, **{"linger.ms": 0})
    for i in range(n):
        p.produce(topic, value=b"v%d" % i, partition=i % partitions)
        if (i + 1) % batch == 0:
            p.flush(10)
    p.flush(10)
    return topic, group


def test_api_versions_advertise_share_groups_with_their_feature_level(share_broker,
                                                                      broker_factory):
    with Client(share_broker.bootstrap) as c:
        resp = c.request(API_VERSIONS, client_software_name="t", client_software_version="1")
    served = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
    for api in SHARE_APIS:
        assert served[api.key] == (api.min_version, api.max_version)
    assert [(f.name, f.min_version_level, f.max_version_level)
            for f in resp.finalized_features] == [("group.version", 1, 1), ("share.version", 1, 1)]
    off = broker_factory({"group.share.enable": "false"})
    with Client(off.bootstrap) as c:
        resp = c.request(API_VERSIONS, client_software_name="t", client_software_version="1")
    assert not {k.api_key for k in resp.api_keys} & {api.key for api in SHARE_APIS}
    assert [f.name for f in resp.finalized_features] == ["group.version"]


def _members_of(target, group) -> int:
    """The members that have heard of the group's current assignment and have partitions."""
    coordinator = _coordinator(target, group)
    if coordinator is None:
        return 0
    with Client(coordinator) as c:
        d = c.request(SHARE_GROUP_DESCRIBE, group_ids=[group],
                      include_authorized_operations=False).groups[0]
    return sum(1 for m in d.members
               if m.assignment.topic_partitions and m.member_epoch == d.group_epoch)


def test_three_share_consumers_split_one_partition(share_target, request):
    topic, group = _setup(share_target, request, 0)
    members = [Member(share_target.bootstrap, group, [topic], max_poll_records=10)
               for _ in range(3)]
    try:
        # all three share partition 0 before the records come, ten to a batch
        wait_until(lambda: _members_of(share_target, group) == 3, 30,
                   "three members with partition 0")
        p = producer(share_target.bootstrap, **{"linger.ms": 0})
        for i in range(300):
            p.produce(topic, value=b"v%d" % i)
            if i % 10 == 9:
                p.flush(10)
        wait_until(lambda: sum(len(m.deliveries) for m in members) >= 300, 60,
                   "300 deliveries")
        time.sleep(1)  # nothing more may come
        offsets = [o for m in members for o in m.offsets()]
        assert sorted(offsets) == list(range(300))  # each record once: accepted implicitly
        assert all(m.deliveries for m in members), [len(m.deliveries) for m in members]
        assert all(d[2] == 1 for m in members for d in m.deliveries)
        assert not any(m.errors for m in members)
    finally:
        for m in members:
            m.close()


def test_released_records_come_back_rejected_ones_never(share_target, request):
    topic, group = _setup(share_target, request, 30)
    first = {}

    def decide(m):  # the first delivery: release evens, reject multiples of 3, accept the rest
        if m.offset() not in first:
            first[m.offset()] = m.delivery_count()
            if m.offset() % 3 == 0:
                return REJECT
            return RELEASE if m.offset() % 2 == 0 else ACCEPT
        return ACCEPT

    member = Member(share_target.bootstrap, group, [topic], decide=decide)
    try:
        released = {o for o in range(30) if o % 2 == 0 and o % 3}
        wait_until(lambda: len(member.deliveries) >= 30 + len(released), 30, "redeliveries")
        time.sleep(1.5)
        counts = collections.Counter(member.offsets())
        assert {o for o, n in counts.items() if n == 2} == released
        assert all(counts[o] == 1 for o in range(30) if o not in released)
        assert all(d[2] == 2 for d in member.deliveries if d[1] in released and
                   member.deliveries.index(d) >= 30)
    finally:
        member.close()


def test_a_dead_consumers_records_are_redelivered(share_target, request):
    topic, group = _setup(share_target, request, 20, batch=20)
    child = ChildConsumer(share_target.bootstrap, group, topic)
    try:
        wait_until(lambda: len(child.deliveries) >= 20, 30, "the child's deliveries")
    finally:
        child.kill()  # -9, holding all 20 acquired
    member = Member(share_target.bootstrap, group, [topic])
    try:
        wait_until(lambda: len(member.deliveries) >= 20, 20, "the redeliveries")
        assert sorted(member.offsets()) == list(range(20))
        assert {d[2] for d in member.deliveries} == {2}  # the dead one's delivery counted
    finally:
        member.close()


def test_never_delivered_beyond_the_delivery_count_limit(share_target, request):
    topic, group = _setup(share_target, request, 10, share_delivery_count_limit=3,
                          share_record_lock_duration_ms=1000)
    # releases everything it gets; a second member lets the locks of what it got expire
    member = Member(share_target.bootstrap, group, [topic], decide=lambda m: RELEASE)
    try:
        wait_until(lambda: len(member.deliveries) >= 30, 30, "three deliveries of each")
        time.sleep(2)
        counts = collections.Counter(member.offsets())
        assert counts == {o: 3 for o in range(10)}
        assert max(d[2] for d in member.deliveries) == 3
    finally:
        member.close()
    # the records were archived: a new member gets nothing
    late = Member(share_target.bootstrap, group, [topic])
    try:
        time.sleep(3)
        assert late.deliveries == []
    finally:
        late.close()


def test_an_expired_lock_makes_records_available_again(share_target, request):
    topic, group = _setup(share_target, request, 10, share_record_lock_duration_ms=1000)
    child = ChildConsumer(share_target.bootstrap, group, topic)
    member = None
    try:
        wait_until(lambda: len(child.deliveries) >= 10, 30, "the child's deliveries")
        # it holds them, alive, without acknowledging: after a second another member gets them
        member = Member(share_target.bootstrap, group, [topic])
        wait_until(lambda: len(member.deliveries) >= 10, 15, "redeliveries after the lock")
        assert sorted(member.offsets()) == list(range(10))
        assert {d[2] for d in member.deliveries} == {2}
    finally:
        child.kill()
        if member is not None:
            member.close()


def _join(target, group, members, topic) -> dict:
    """ShareGroupHeartbeats of ``members`` (ids) subscribing to ``topic``, until each is at
    the group's epoch with partitions: {member: (epoch, assigned TopicPartitions)}."""
    state = {m: (0, None) for m in members}
    deadline = time.monotonic() + 30
    with Client(wait_until(lambda: _coordinator(target, group), 20, "a coordinator")) as c:
        while True:
            for m, (epoch, assigned) in state.items():
                hb = c.request(SHARE_GROUP_HEARTBEAT, group_id=group, member_id=m,
                               member_epoch=epoch, subscribed_topic_names=[topic])
                assert hb.error_code == 0, hb
                got = hb.assignment.topic_partitions if hb.assignment else assigned
                state[m] = (hb.member_epoch, got)
            if len({e for e, _a in state.values()}) == 1 and all(a for _e, a in state.values()):
                return state
            assert time.monotonic() < deadline, f"members not settled after 30 s: {state}"
            time.sleep(0.2)


def _leader_address(target, topic) -> str:
    if not isinstance(target, Cluster):
        return target.bootstrap
    return target.brokers[target.partition(topic, 0).leader].bootstrap


def test_record_limit_mode_acquires_exactly_max_records(share_target, request):
    """ShareFetch v2 in KIP-1206's record_limit mode acquires MaxRecords records exactly, the
    rest of a batch staying for the next fetch (batch_optimized takes whole batches); an
    unknown ShareAcquireMode is an INVALID_REQUEST."""
    topic, group = _setup(share_target, request, 10, batch=10)  # one batch, offsets 0-9
    member = uuid.uuid4().hex
    _epoch, assigned = _join(share_target, group, [member], topic)[member]
    topic_id = assigned[0].topic_id
    Q = SHARE_FETCH.Request
    with Client(_leader_address(share_target, topic)) as c:
        def fetch(session_epoch, mode, max_records=3):
            resp = c.request(SHARE_FETCH, group_id=group, member_id=member,
                             share_session_epoch=session_epoch, max_wait_ms=5000, min_bytes=1,
                             max_bytes=1 << 20, max_records=max_records, batch_size=max_records,
                             share_acquire_mode=mode, is_renew_ack=False,
                             topics=[Q.FetchTopic(topic_id=topic_id, partitions=[
                                 Q.FetchPartition(partition_index=0,
                                                  acknowledgement_batches=[])])],
                             forgotten_topics_data=[])
            if resp.error_code:
                return resp.error_code, resp.error_message
            (p,) = resp.responses[0].partitions
            assert p.error_code == 0, p
            return [(r.first_offset, r.last_offset, r.delivery_count) for r in p.acquired_records]

        assert fetch(1, 7)[0] == errors.INVALID_REQUEST
        assert fetch(0, 1) == [(0, 2, 1)]
        assert fetch(1, 1, max_records=4) == [(3, 6, 1)]
        assert fetch(2, 0) == [(7, 9, 1)]  # batch_optimized: the rest of the batch, whole


ROUNDS = 20


def test_fetches_parked_on_an_empty_partition_acquire_each_record_once(share_target, request):
    """Four members' ShareFetches wait on an empty partition when records arrive, woken
    together, round after round: each record is acquired by exactly one of them, once (the
    acquisition is atomic against every other fetch of the share-partition). record_limit
    mode splits the one batch of each round between them, so every round all four fetches
    take parts of the same batch; each acknowledges its records in its next fetch."""
    topic, group = _setup(share_target, request, 0)
    members = [uuid.uuid4().hex for _ in range(4)]
    topic_id = next(iter(_join(share_target, group, members, topic).values()))[1][0].topic_id
    Q = SHARE_FETCH.Request
    leader = _leader_address(share_target, topic)
    clients = {m: Client(leader) for m in members}
    epochs = {m: 0 for m in members}
    pending = {m: [] for m in members}  # acquired, acknowledged by the member's next fetch

    def fetch(m, max_wait_ms=5000):
        acks = [Q.AcknowledgementBatch(first_offset=a, last_offset=b, acknowledge_types=[1])
                for a, b in pending[m]]
        resp = clients[m].request(
            SHARE_FETCH, group_id=group, member_id=m, share_session_epoch=epochs[m],
            max_wait_ms=max_wait_ms, min_bytes=1, max_bytes=1 << 20, max_records=7,
            batch_size=7,
            share_acquire_mode=1, is_renew_ack=False, forgotten_topics_data=[],
            topics=[Q.FetchTopic(topic_id=topic_id, partitions=[Q.FetchPartition(
                partition_index=0, acknowledgement_batches=acks)])])
        assert resp.error_code == 0, resp
        epochs[m] += 1
        got = [(r.first_offset, r.last_offset, r.delivery_count)
               for t in resp.responses for p in t.partitions for r in p.acquired_records]
        for t in resp.responses:
            for p in t.partitions:
                assert (p.error_code, p.acknowledge_error_code) == (0, 0), p
        pending[m] = [(a, b) for a, b, _c in got]
        return got

    acquired = []
    p = producer(share_target.bootstrap, **{"linger.ms": 50})
    try:
        for m in members:  # open the sessions: nothing there yet
            assert fetch(m, max_wait_ms=0) == []
        for round_ in range(ROUNDS):
            with concurrent.futures.ThreadPoolExecutor(len(members)) as pool:
                parked = [pool.submit(fetch, m) for m in members]
                time.sleep(0.5)  # every fetch is waiting
                for i in range(28):  # one batch, 7 records for each of the 4
                    p.produce(topic, value=b"r%d-%d" % (round_, i))
                p.flush(10)
                acquired += [r for f in parked for r in f.result(15)]
    finally:
        for c in clients.values():
            c.close()
    offsets = sorted(o for a, b, _c in acquired for o in range(a, b + 1))
    assert offsets == list(range(28 * ROUNDS)), acquired
    assert {c for _a, _b, c in acquired} == {1}


def test_share_consumers_parked_on_an_empty_partition_share_its_records(share_target,
                                                                       request):
    """Three confluent-kafka ShareConsumers of a new group wait on an empty partition when
    600 records arrive: 600 deliveries in all, each record once, round after round."""
    for round_ in range(3):
        topic, group = _setup(share_target, request, 0)
        members = [Member(share_target.bootstrap, group, [topic]) for _ in range(3)]
        try:
            wait_until(lambda: _members_of(share_target, group) == 3, 30,
                       "three members with partition 0")
            time.sleep(1)  # their fetches wait on the empty partition
            produce_values(share_target.bootstrap, topic, 1, 0, 600)
            wait_until(lambda: sum(len(m.deliveries) for m in members) >= 600, 30,
                       "600 deliveries")
            time.sleep(1)  # nothing more may come
            offsets = sorted(o for m in members for o in m.offsets())
            assert offsets == list(range(600)), (round_, [len(m.deliveries) for m in members])
            assert not any(m.errors for m in members)
        finally:
            for m in members:
                m.close()


def test_members_joining_a_new_group_at_once_all_stay(share_target, request):
    """Seven members send their first ShareGroupHeartbeat of a brand-new group at the same
    moment (each on its own connection; on the cluster the group's records go to a replicated
    ``__consumer_offsets`` partition, whose writes take long): all seven are members, each at
    its own epoch, and their next heartbeats are accepted (none is an UNKNOWN_MEMBER_ID),
    round after round."""
    topic = create_topic(share_target.bootstrap, unique_topic(request.node.name[:30]), 1)
    for round_ in range(3):
        group = _group(request)
        coordinator = wait_until(lambda: _coordinator(share_target, group), 30, "a coordinator")
        members = [uuid.uuid4().hex for _ in range(7)]
        clients = [Client(coordinator) for _ in members]
        start = threading.Barrier(len(members))

        def beat(c, m, epoch, names):
            if epoch == 0:
                start.wait(10)
            return c.request(SHARE_GROUP_HEARTBEAT, group_id=group, member_id=m,
                             member_epoch=epoch, subscribed_topic_names=names)

        try:
            with concurrent.futures.ThreadPoolExecutor(len(members)) as pool:
                joined = list(pool.map(beat, clients, members, [0] * 7, [[topic]] * 7))
                assert [r.error_code for r in joined] == [0] * 7, joined
                again = list(pool.map(beat, clients, members, [r.member_epoch for r in joined],
                                      [None] * 7))
        finally:
            for c in clients:
                c.close()
        assert [r.error_code for r in again] == [0] * 7, (round_, again)
        with Client(coordinator) as c:
            (d,) = c.request(SHARE_GROUP_DESCRIBE, group_ids=[group],
                             include_authorized_operations=False).groups
        assert sorted(m.member_id for m in d.members) == sorted(members)


def _forward(bootstrap, group, source, sink, stop):
    """A share consumer of ``source`` that produces each record it gets to ``sink``, accepting
    it once the produce is acknowledged (the next poll), until ``stop`` is set."""
    consumer = share_consumer(bootstrap, group, [source], max_poll_records=2000)
    out = producer(bootstrap, acks="all", **{"linger.ms": 5})
    try:
        while not stop.is_set():
            msgs = consumer.poll(0.2)
            for m in msgs:
                if not m.error():
                    out.produce(sink, value=m.value())
            out.flush(15)
    finally:
        consumer.close()


def _share_pipeline(target, request, records, per_level, bound_s):
    """A two-level share-group pipeline: ``per_level`` members of one group forward topic a
    (4 partitions) to topic b, ``per_level`` members of another read b; returns the seconds
    until every record reached the end once at least, after checking that every member of
    both groups is still one."""
    a = create_topic(target.bootstrap, unique_topic("pipe-a"), 4)
    b = create_topic(target.bootstrap, unique_topic("pipe-b"), 4)
    g1, g2 = _group(request) + "-1", _group(request) + "-2"
    for g in (g1, g2):
        set_group_configs(target.bootstrap, g, share_auto_offset_reset="earliest")
    produce_values(target.bootstrap, a, 4, 0, records)
    stop = threading.Event()
    started = time.monotonic()
    forwarders = [threading.Thread(target=_forward, args=(target.bootstrap, g1, a, b, stop),
                                   daemon=True) for _ in range(per_level)]
    for t in forwarders:
        t.start()
    readers = [Member(target.bootstrap, g2, [b], max_poll_records=2000)
               for _ in range(per_level)]
    try:
        wait_until(lambda: len({d[3] for m in readers for d in m.deliveries}) >= records,
                   bound_s, f"{records} records through both levels")
        took = time.monotonic() - started
        for g in (g1, g2):  # every member of both levels is still in its group
            wait_until(lambda: _members_of(target, g) == per_level, 15, f"{g}'s members")
        assert not any(m.errors for m in readers)
        return took
    finally:
        stop.set()
        for m in readers:
            m.close()
        for t in forwarders:
            t.join(30)


def test_a_two_level_share_group_pipeline_finishes_in_time(share_target, request):
    """Many members at each level of a share-group pipeline joining at once (the shape that
    lost members and then expired their successors every session timeout): 20,000 records
    through both levels within 60 s, each reaching the end."""
    took = _share_pipeline(share_target, request, 20_000, 6, 60)
    print(f"pipeline of 20,000 records: {took:.1f} s")


@pytest.mark.slow
def test_a_long_two_level_share_group_pipeline_finishes_in_time(cluster_factory, request):
    """The independent check's size: 500,000 records through two levels of share groups on a
    3-broker cluster within 5 minutes (it took 36 s before its members were lost)."""
    c = cluster_factory(3, SHARE_BROKER)
    took = _share_pipeline(c, request, 500_000, 6, 300)
    print(f"pipeline of 500,000 records: {took:.1f} s")


def test_acknowledged_and_released_state_survives_a_restart(broker_factory, request):
    b = broker_factory(SHARE_OVERRIDES)
    topic, group = _setup(b, request, 40, batch=20)
    # accepts the first 20, releases the others, and closes without fetching again
    member = Member(b.bootstrap, group, [topic], max_poll_records=20, stop_after=40,
                    decide=lambda m: ACCEPT if m.offset() < 20 else RELEASE)
    try:
        wait_until(lambda: len(member.deliveries) >= 40, 30, "40 first deliveries")
    finally:
        member.close()
    assert sorted(member.offsets()) == list(range(40))
    b.stop()
    b.start()
    member = Member(b.bootstrap, group, [topic])
    try:
        wait_until(lambda: len(member.deliveries) >= 20, 30, "the released records again")
        time.sleep(1.5)
        assert sorted(member.offsets()) == list(range(20, 40))  # the accepted ones never
        assert {d[2] for d in member.deliveries} == {2}
    finally:
        member.close()


def test_a_crash_holding_records_does_not_reset_their_delivery_count(broker_factory,
                                                                       request):
    b = broker_factory(SHARE_OVERRIDES)
    topic, group = _setup(b, request, 10, batch=10, share_delivery_count_limit=2)
    for round_ in (1, 2):
        child = ChildConsumer(b.bootstrap, group, topic)
        try:
            wait_until(lambda: len(child.deliveries) >= 10, 30, f"delivery {round_}")
            assert {c for _o, c in child.deliveries} == {round_}
            b.kill()  # the broker dies while the records are acquired
        finally:
            child.kill()
        b.start()
    # delivered twice (the limit), each delivery persisted before it was made: archived
    late = Member(b.bootstrap, group, [topic])
    try:
        time.sleep(4)
        assert late.deliveries == []
    finally:
        late.close()


def test_share_auto_offset_reset_is_a_group_config(share_target, request):
    topic = create_topic(share_target.bootstrap, unique_topic(request.node.name[:30]), 1)
    produce_values(share_target.bootstrap, topic, 1, 0, 5)
    group = _group(request)
    admin = admin_client(share_target.bootstrap)
    from confluent_kafka.admin import ConfigResource
    desc = admin.describe_configs([ConfigResource("GROUP", group)])
    configs = list(desc.values())[0].result(10)
    assert configs["share.auto.offset.reset"].value == "latest"
    assert configs["share.delivery.count.limit"].value == "5"
    with pytest.raises(Exception, match="share.auto.offset.reset|Invalid"):
        set_group_configs(share_target.bootstrap, group, share_auto_offset_reset="sometimes")
    # latest (the default): the five records before the first fetch are not delivered
    member = Member(share_target.bootstrap, group, [topic])
    try:
        time.sleep(3)
        produce_values(share_target.bootstrap, topic, 1, 5, 5)
        wait_until(lambda: len(member.deliveries) >= 5, 20, "the new records")
        assert sorted(member.offsets()) == [5, 6, 7, 8, 9]
    finally:
        member.close()
    set_group_configs(share_target.bootstrap, group, share_auto_offset_reset="by_duration:PT1H")
    desc = admin.describe_configs([ConfigResource("GROUP", group)])
    assert list(desc.values())[0].result(10)["share.auto.offset.reset"].value == \
        "by_duration:PT1H"


def test_list_groups_and_the_cli_show_share_groups_with_lag(share_target, request):
    topic, group = _setup(share_target, request, 30, batch=30)
    member = Member(share_target.bootstrap, group, [topic], stop_after=30,
                    decide=lambda m: ACCEPT if m.offset() < 10 else RELEASE)
    try:
        wait_until(lambda: len(member.deliveries) >= 30, 30, "deliveries")
    finally:
        member.close()
    listed, classic = {}, set()
    for b in _brokers(share_target):  # each broker lists the groups it coordinates
        with Client(b.bootstrap) as c:
            listed.update((g.group_id, g) for g in c.request(
                LIST_GROUPS, states_filter=[], types_filter=["share"]).groups)
            classic.update(g.group_id for g in c.request(
                LIST_GROUPS, states_filter=[], types_filter=["classic"]).groups)
    assert (listed[group].group_type, listed[group].protocol_type,
            listed[group].group_state) == ("share", "share", "Empty")
    assert group not in classic
    assert group in josefk_cli(share_target, "groups", "list").stdout
    out = josefk_cli(share_target, "groups", "describe", "--group", group).stdout
    assert "share" in out.lower()
    row = next(line.split() for line in out.splitlines() if line.startswith(group))
    assert row[1] == topic and row[2] == "0"
    assert row[3] == "10"  # the start offset: 0-9 accepted
    assert row[5] == "20"  # 10-29 not yet done with


def test_delete_a_share_group(share_target, request):
    topic, group = _setup(share_target, request, 5)
    member = Member(share_target.bootstrap, group, [topic])
    wait_until(lambda: len(member.deliveries) >= 5, 30, "deliveries")
    admin = admin_client(share_target.bootstrap)
    with pytest.raises(Exception, match="NON_EMPTY_GROUP"):
        admin.delete_consumer_groups([group])[group].result(10)
    member.close()
    admin.delete_consumer_groups([group])[group].result(10)
    set_group_configs(share_target.bootstrap, group, share_auto_offset_reset="earliest")
    again = Member(share_target.bootstrap, group, [topic])  # starts over: its state is gone
    try:
        wait_until(lambda: len(again.deliveries) >= 5, 30, "deliveries from the start")
    finally:
        again.close()


def _alter_start(coordinator, group, topic, start):
    """AlterShareGroupOffsets of partition 0: (group error, partition error)."""
    Q = ALTER_SHARE_GROUP_OFFSETS.Request
    with Client(coordinator) as c:
        r = c.request(ALTER_SHARE_GROUP_OFFSETS, group_id=group, topics=[
            Q.AlterShareGroupOffsetsRequestTopic(topic_name=topic, partitions=[
                Q.AlterShareGroupOffsetsRequestPartition(partition_index=0,
                                                         start_offset=start)])])
    return r.error_code, (r.responses[0].partitions[0].error_code if r.responses else None)


def test_alter_share_group_offsets_creates_a_new_group_empty_at_its_start(share_target,
                                                                          request):
    """As Kafka 4.2: AlterShareGroupOffsets on a share group that does not exist yet makes it,
    empty, with the given start offsets, so a new group's starting point is set before any
    member joins; its first member then reads from there. A group with members is refused,
    and so is a classic group's id; deleting the offsets of a group that does not exist says
    so."""
    topic, _ = _setup(share_target, request, 10, batch=10)
    group = _group(request)
    coordinator = wait_until(lambda: _coordinator(share_target, group), 30, "a coordinator")
    assert _alter_start(coordinator, group, topic, 4) == (errors.NONE, errors.NONE)
    Q = DESCRIBE_SHARE_GROUP_OFFSETS.Request
    with Client(coordinator) as c:
        (described,) = c.request(DESCRIBE_SHARE_GROUP_OFFSETS, groups=[
            Q.DescribeShareGroupOffsetsRequestGroup(group_id=group, topics=None)]).groups
        listed = {g.group_id: g.group_state for g in c.request(
            LIST_GROUPS, states_filter=[], types_filter=["share"]).groups}
    assert described.error_code == errors.NONE
    assert [(p.partition_index, p.start_offset) for t in described.topics
            for p in t.partitions] == [(0, 4)]
    assert listed[group] == "Empty"
    member = Member(share_target.bootstrap, group, [topic])
    try:
        wait_until(lambda: len(member.deliveries) >= 6, 30, "the records from offset 4")
        time.sleep(1)
        assert member.offsets() == list(range(4, 10))
        assert _alter_start(coordinator, group, topic, 0)[0] == errors.NON_EMPTY_GROUP
    finally:
        member.close()
    classic = _group(request)  # a classic group, made by committing an offset
    admin = admin_client(share_target.bootstrap)
    admin.alter_consumer_group_offsets([
        ConsumerGroupTopicPartitions(classic, [TopicPartition(topic, 0, 1)])])[classic].result(15)
    classic_coordinator = _coordinator(share_target, classic)
    assert _alter_start(classic_coordinator, classic, topic, 0)[0] == errors.GROUP_ID_NOT_FOUND
    missing = _group(request)
    with Client(wait_until(lambda: _coordinator(share_target, missing), 30, "a coordinator")) as c:
        D = DELETE_SHARE_GROUP_OFFSETS.Request
        r = c.request(DELETE_SHARE_GROUP_OFFSETS, group_id=missing, topics=[
            D.DeleteShareGroupOffsetsRequestTopic(topic_name=topic)])
    assert r.error_code == errors.GROUP_ID_NOT_FOUND


@pytest.mark.slow
def test_members_keep_their_epochs_when_the_coordinator_moves(cluster_factory, request):
    """Share group members live in ``__consumer_offsets`` (Kafka's member records): once the
    group's coordinator is stopped, the new one describes the members as they were and takes
    their heartbeats at their epochs, with no UNKNOWN_MEMBER_ID and no rejoin."""
    c = cluster_factory(3, SHARE_BROKER)
    topic = create_topic(c.bootstrap, unique_topic(request.node.name[:30]), 2,
                         replication_factor=3)
    group = _group(request)
    members = sorted(uuid.uuid4().hex for _ in range(2))
    joined = _join(c, group, members, topic)
    old = _coordinator(c, group)
    (old_id,) = [i for i, b in c.brokers.items() if b.bootstrap == old]
    c.brokers[old_id].stop()
    new = wait_until(lambda: _coordinator(c, group) not in (None, old) and _coordinator(c, group),
                     30, "a new coordinator")
    with Client(new) as client:
        d = client.request(SHARE_GROUP_DESCRIBE, group_ids=[group],
                           include_authorized_operations=False).groups[0]
        assert sorted((m.member_id, m.member_epoch) for m in d.members) == [
            (m, joined[m][0]) for m in members], d
        for m in members:
            hb = client.request(SHARE_GROUP_HEARTBEAT, group_id=group, member_id=m,
                                member_epoch=joined[m][0], subscribed_topic_names=None)
            assert (hb.error_code, hb.member_epoch) == (0, joined[m][0]), hb


def test_share_state_survives_a_leader_kill_on_the_cluster(cluster_factory, request):
    c = cluster_factory(3, SHARE_BROKER)
    topic = unique_topic(request.node.name[:30])
    admin = c.admin()
    from confluent_kafka.admin import NewTopic
    admin.create_topics([NewTopic(topic, 1, 3, config={"min.insync.replicas": "2"})])[
        topic].result(20)
    c.wait_for_topic(topic, 1)
    group = _group(request)
    set_group_configs(c.bootstrap, group, share_auto_offset_reset="earliest")
    produce_values(c.bootstrap, topic, 1, 0, 40)
    member = Member(c.bootstrap, group, [topic], stop_after=40,
                    decide=lambda m: ACCEPT if m.offset() < 20 else RELEASE)
    try:
        wait_until(lambda: len(member.deliveries) >= 40, 60, "every record once")
    finally:
        member.close()
    assert sorted(member.offsets()) == list(range(40))
    leader = c.partition(topic, 0).leader
    c.brokers[leader].kill()
    survivor = next(i for i in c.brokers if i != leader)
    c.wait_for(lambda: c.partition(topic, 0, survivor).leader not in (leader, -1), 30,
               "a new leader")
    member = Member(c.bootstrap, group, [topic])
    try:
        wait_until(lambda: len(member.deliveries) >= 20, 60, "the released records")
        time.sleep(1.5)
        assert sorted(member.offsets()) == list(range(20, 40))
        assert {d[2] for d in member.deliveries} == {2}
    finally:
        member.close()
