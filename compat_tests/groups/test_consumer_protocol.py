"""The consumer group protocol (KIP-848) driven by confluent-kafka consumers with
``group.protocol=consumer`` (librdkafka's ConsumerGroupHeartbeat v1), on one broker and on the
3-broker cluster: members joining and leaving while a producer writes, regular expressions,
static members, a member killed with SIGKILL, restarts and a coordinator failover, classic and
consumer groups side by side and converted into one another."""

from __future__ import annotations

import json
import queue
import signal
import subprocess
import sys
import threading
import time

import pytest
from confluent_kafka import ConsumerGroupState, ConsumerGroupType
from confluent_kafka.admin import NewTopic

from josefk.faults.processes import REPO_ROOT
from compat_tests import rawkafka as rk
from compat_tests.helpers import (GroupMember, admin_client, balanced, close_all, consumer,
                                  create_topic, josefk_cli, poll_until, produce_values, producer,
                                  settle, unique_topic, wait_for_topic)

pytestmark = pytest.mark.timeout(180)

KIP848 = {"group.protocol": "consumer"}


def _all(topic, n) -> set:
    return {(topic, p) for p in range(n)}


def members848(bootstrap, group, topics, n, start=0, **conf):
    return [GroupMember(bootstrap, group, topics, name=f"c{start + i}", **{**KIP848, **conf})
            for i in range(n)]


def describe(bootstrap, group):
    admin = admin_client(bootstrap)   # referenced until the future is answered
    return admin.describe_consumer_groups([group], request_timeout=10)[group].result(15)


class Writer:
    """A producer thread writing values w0, w1, ... round robin over the partitions, at most
    ``limit`` of them, until stopped; remembers every acknowledged (partition, offset)."""

    def __init__(self, bootstrap, topic, partitions, limit=4000, every=0.004):
        self.acked = {}
        self._p = producer(bootstrap, acks="all", **{"linger.ms": 5})
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, args=(topic, partitions, limit, every),
                                   daemon=True)
        self._t.start()

    def _run(self, topic, partitions, limit, every):
        def done(err, msg):
            if err is None:
                self.acked[(msg.partition(), msg.offset())] = msg.value()
        for i in range(limit):
            if self._stop.is_set():
                break
            self._p.produce(topic, value=f"w{i}".encode(), partition=i % partitions,
                            on_delivery=done)
            self._p.poll(0)
            time.sleep(every)
        self._p.flush(30)

    def stop(self) -> dict:
        self._stop.set()
        self._t.join(60)
        return self.acked


def ownership(m, now) -> dict:
    """{(topic, partition): [(from, to)]} of the time ``m`` owned each partition, from its
    rebalance callbacks (incremental under the consumer group protocol)."""
    spans, since = {}, {}
    for t, kind, tps in m.events:
        for tp in tps:
            if kind == "assign":
                since[tp] = t
            elif tp in since:
                spans.setdefault(tp, []).append((since.pop(tp), t))
    for tp, t in since.items():
        spans.setdefault(tp, []).append((t, now))
    return spans


def check_one_owner_and_exactly_once(members, topic, acked):
    """Every acknowledged record reached exactly one member, which owned its partition when
    it polled it, and no partition ever had two owners at once."""
    now = time.monotonic()
    spans = {m.name: ownership(m, now) for m in members}
    flat = sorted((f, t, name, tp) for name, s in spans.items() for tp, ss in s.items()
                  for f, t in ss)
    for i, (f, t, name, tp) in enumerate(flat):
        for f2, t2, name2, tp2 in flat[i + 1:]:
            if f2 >= t:
                break
            assert not (tp2 == tp and name2 != name), \
                f"{tp} owned by {name} [{f:.3f}, {t:.3f}) and {name2} from {f2:.3f}"
    got = {}
    for m in members:
        for msg, at in zip(m.messages, m.received_at):
            key = (msg.partition(), msg.offset())
            assert key not in got, f"{key} consumed by {got[key]} and {m.name}"
            got[key] = m.name
            assert any(f <= at <= t for f, t in spans[m.name].get((topic, msg.partition()), ())), \
                f"{m.name} got {key} without owning partition {msg.partition()}"
    assert set(got) == set(acked), (f"{len(acked)} acknowledged, {len(got)} consumed; missing "
                                    f"{sorted(set(acked) - set(got))[:10]}")
    assert [m.commit_errors for m in members] == [[] for _ in members]


# ------------------------------------------------------------------ the protocol is served
def test_api_versions_advertise_the_consumer_group_protocol(broker, broker_factory):
    with rk.RawConnection(broker.bootstrap) as conn:
        ranges, supported, epoch, finalized = rk.api_versions_v3(conn)
    assert ranges[68] == (0, 1) and ranges[69] == (0, 1)   # ConsumerGroupHeartbeat/Describe
    assert ranges[8][1] == 10 and ranges[9][1] == 10       # OffsetCommit/Fetch by topic id
    assert supported["group.version"] == (0, 1)
    assert finalized["group.version"] == (1, 1) and epoch >= 0

    off = broker_factory({"group.coordinator.rebalance.protocols": "classic"})
    with rk.RawConnection(off.bootstrap) as conn:
        ranges, supported, epoch, finalized = rk.api_versions_v3(conn)
    assert 68 not in ranges and 69 not in ranges
    assert supported["group.version"] == (0, 1) and "group.version" not in finalized
    topic = create_topic(off.bootstrap, unique_topic("k848off"), 1)
    produce_values(off.bootstrap, topic, 1, 0, 3)
    c = consumer(off.bootstrap, **KIP848, **{"auto.offset.reset": "earliest"})
    try:
        c.subscribe([topic])
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:   # librdkafka finds no coordinator to join with
            assert c.poll(0.2) is None
        assert c.assignment() == []
    finally:
        c.close()


# ------------------------------------------------------------------ growing and shrinking
def test_group_grows_to_four_and_shrinks_back_while_a_producer_writes(target):
    bootstrap = target.bootstrap
    topic = target.create_topic(unique_topic("k848grow"), 8)
    group = unique_topic("k848g")
    everything = _all(topic, 8)
    writer = Writer(bootstrap, topic, 8)
    members = []
    try:
        for n in range(1, 5):
            members += members848(bootstrap, group, [topic], 1, start=n - 1, commit_each=True)
            poll_until(members, lambda: balanced(members, everything), 40,
                       f"{n} members sharing 8 partitions")
            d = describe(bootstrap, group)
            assert (d.type, d.state, len(d.members)) == (
                ConsumerGroupType.CONSUMER, ConsumerGroupState.STABLE, n)
        for n in range(3, 0, -1):
            members[n].close()
            live = members[:n]
            poll_until(live, lambda: balanced(live, everything), 40,
                       f"{n} members sharing 8 partitions")
        acked = writer.stop()
        assert len(acked) > 100
        poll_until(members[:1], lambda: sum(len(m.messages) for m in members) >= len(acked),
                   60, f"{len(acked)} records consumed")
        settle(members[:1])
        check_one_owner_and_exactly_once(members, topic, acked)
    finally:
        writer.stop()
        close_all(members)


def test_committed_offsets_resume_in_a_new_consumer(broker):
    topic = create_topic(broker.bootstrap, unique_topic("k848resume"), 3)
    group = unique_topic("k848g")
    sent = produce_values(broker.bootstrap, topic, 3, 0, 60)
    a, = members848(broker.bootstrap, group, [topic], 1, commit_each=True)
    try:
        poll_until([a], lambda: len(a.messages) >= 60, 30, "60 records")
    finally:
        a.close()
    sent.update(produce_values(broker.bootstrap, topic, 3, 60, 30))
    b, = members848(broker.bootstrap, group, [topic], 1, start=1)
    try:
        poll_until([b], lambda: len(b.messages) >= 30, 30, "30 new records")
        settle([b])
        assert {(m.partition(), m.offset()) for m in b.messages} == \
            set(sent) - {(m.partition(), m.offset()) for m in a.messages}
    finally:
        b.close()


def consuming_pair(bootstrap, topic, group, members):
    """Once the two ``members`` share ``topic``'s 4 partitions and consumed 80 records:
    ({(partition, offset)}, the group's description, their rebalance events so far)."""
    poll_until(members, lambda: balanced(members, _all(topic, 4)), 40, "2 members sharing")
    sent = produce_values(bootstrap, topic, 4, 0, 80, "a")
    poll_until(members, lambda: sum(len(m.messages) for m in members) >= 80, 30, "first batch")
    return sent, describe(bootstrap, group), [list(m.events) for m in members]


@pytest.mark.slow
@pytest.mark.parametrize("how", ["stop", "kill"])
def test_live_group_survives_a_broker_restart(broker_factory, how):
    """The broker that coordinates the group restarts under two running members: the group
    is read back from __consumer_offsets, they carry on at their epochs and resume from their
    commits, every record delivered once."""
    b = broker_factory()
    topic = create_topic(b.bootstrap, unique_topic("k848live"), 4)
    group = unique_topic("k848g")
    members = members848(b.bootstrap, group, [topic], 2, commit_each=True, tolerate_errors=True)
    try:
        sent, before, rebalances = consuming_pair(b.bootstrap, topic, group, members)
        b.stop() if how == "stop" else b.kill()
        b.start()
        wait_for_topic(admin_client(b.bootstrap), topic, 4, timeout=20)
        sent.update(produce_values(b.bootstrap, topic, 4, 80, 80, "b"))
        poll_until(members, lambda: sum(len(m.messages) for m in members) >= 160, 40,
                   "second batch after the restart")
        settle(members)
        got = [(x.partition(), x.offset()) for m in members for x in m.messages]
        assert sorted(got) == sorted(sent), "lost or repeated records"
        after = describe(b.bootstrap, group)
        assert {m.member_id for m in after.members} == {m.member_id for m in before.members}
        assert [m.events for m in members] == rebalances   # nobody fenced, nothing lost
        assert [m.commit_errors for m in members] == [[], []]
    finally:
        close_all(members)


# ------------------------------------------------------------------ subscriptions
def test_regex_subscription_picks_up_a_topic_created_later(broker):
    prefix = unique_topic("k848rx")
    first = create_topic(broker.bootstrap, f"{prefix}-a", 2)
    group = unique_topic("k848g")
    m, = members848(broker.bootstrap, group, [f"^{prefix}-.*"], 1)
    try:
        poll_until([m], lambda: m.assignment() == _all(first, 2), 30, "the first topic")
        later = create_topic(broker.bootstrap, f"{prefix}-b", 1)
        produce_values(broker.bootstrap, later, 1, 0, 5)
        poll_until([m], lambda: sum(x.topic() == later for x in m.messages) == 5, 45,
                   "records of the topic created later")
        assert m.assignment() == _all(first, 2) | _all(later, 1)
        d = describe(broker.bootstrap, group)
        assert {(tp.topic, tp.partition) for tp in d.members[0].assignment.topic_partitions} \
            == _all(first, 2) | _all(later, 1)
    finally:
        m.close()


# ------------------------------------------------------------------ failures
_VICTIM = r"""
import json, sys
from confluent_kafka import Consumer
bootstrap, group, topic = sys.argv[1:4]
c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "client.id": "victim",
              "group.protocol": "consumer", "enable.auto.commit": False,
              "auto.offset.reset": "earliest"})
def changed(kind):
    return lambda _c, parts: print(json.dumps([kind, sorted(p.partition for p in parts)]),
                                   flush=True)
c.subscribe([topic], on_assign=changed("assign"), on_revoke=changed("revoke"))
while True:
    c.poll(0.05)
"""


def test_killed_member_is_fenced_after_its_session_timeout(broker):
    topic = create_topic(broker.bootstrap, unique_topic("k848kill"), 6)
    group = unique_topic("k848g")
    victim = subprocess.Popen([sys.executable, "-c", _VICTIM, broker.bootstrap, group, topic],
                              cwd=str(REPO_ROOT), stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True)
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(json.loads(x)) for x in victim.stdout],
                     daemon=True).start()
    held: set = set()

    def drain():   # the victim's callbacks are incremental
        while not lines.empty():
            kind, parts = lines.get_nowait()
            (held.update if kind == "assign" else held.difference_update)(
                (topic, p) for p in parts)

    members = []
    try:
        deadline = time.monotonic() + 20
        while held != _all(topic, 6) and time.monotonic() < deadline:
            time.sleep(0.05)
            drain()
        assert held == _all(topic, 6), held
        members = members848(broker.bootstrap, group, [topic], 2)

        def three_way():
            drain()
            mine = [m.assignment() for m in members]
            return len(held) == 2 and all(len(s) == 2 for s in mine) and \
                held.union(*mine) == _all(topic, 6)

        poll_until(members, three_way, 30, "victim + 2 members sharing 6 partitions")
        taken = set(held)
        t0 = time.monotonic()
        victim.send_signal(signal.SIGKILL)
        victim.wait(5)
        poll_until(members, lambda: balanced(members, _all(topic, 6)), 25,
                   "survivors taking over the killed member's partitions")
        took = time.monotonic() - t0
        # fenced by group.consumer.session.timeout.ms (6 s after its last heartbeat)
        assert 5.0 <= took <= 20.0, f"takeover {took:.2f}s after the kill"
        assert taken <= members[0].assignment() | members[1].assignment()
        assert len(describe(broker.bootstrap, group).members) == 2
    finally:
        if victim.poll() is None:
            victim.kill()
            victim.wait(5)
        close_all(members)


def test_static_member_leaves_for_a_while_and_comes_back_to_its_partitions(broker):
    topic = create_topic(broker.bootstrap, unique_topic("k848static"), 4)
    group = unique_topic("k848g")
    everything = _all(topic, 4)
    a, = members848(broker.bootstrap, group, [topic], 1, **{"group.instance.id": "inst-a"})
    b, = members848(broker.bootstrap, group, [topic], 1, start=1)
    members = [a, b]
    try:
        poll_until(members, lambda: balanced(members, everything), 30, "2 members sharing")
        mine = a.assignment()
        a.close()                      # a static member leaves with epoch -2
        time.sleep(2)
        assert b.assignment() == everything - mine, "a's partitions moved while it was away"
        a2, = members848(broker.bootstrap, group, [topic], 1, start=2,
                         **{"group.instance.id": "inst-a"})
        members.append(a2)
        poll_until(members, lambda: a2.assignment() == mine and b.assignment() ==
                   everything - mine, 30, "the same instance back on its partitions")
    finally:
        close_all(members)


# ------------------------------------------------------------------ both protocols
def test_classic_group_upgrades_and_downgrades_as_members_switch_protocol(broker):
    topic = create_topic(broker.bootstrap, unique_topic("k848mig"), 6)
    group = unique_topic("k848g")
    everything = _all(topic, 6)
    classic = [GroupMember(broker.bootstrap, group, [topic], name=f"classic{i}",
                           commit_each=True) for i in range(2)]
    members = list(classic)
    try:
        poll_until(members, lambda: balanced(members, everything), 30, "2 classic members")
        assert describe(broker.bootstrap, group).type == ConsumerGroupType.CLASSIC
        new, = members848(broker.bootstrap, group, [topic], 1, start=9, commit_each=True)
        members.append(new)
        poll_until(members, lambda: balanced(members, everything), 40,
                   "2 classic members and a consumer-protocol member sharing")
        d = describe(broker.bootstrap, group)
        assert d.type == ConsumerGroupType.CONSUMER and len(d.members) == 3
        sent = produce_values(broker.bootstrap, topic, 6, 0, 120)
        poll_until(members, lambda: sum(len(m.messages) for m in members) >= 120, 30,
                   "records consumed by the mixed group")
        new.close()                    # the last consumer-protocol member leaves
        live = classic
        poll_until(live, lambda: balanced(live, everything), 40, "the classic members again")
        assert describe(broker.bootstrap, group).type == ConsumerGroupType.CLASSIC
        sent.update(produce_values(broker.bootstrap, topic, 6, 120, 60))
        poll_until(live, lambda: sum(len(m.messages) for m in members) >= 180, 30,
                   "records after the downgrade")
        settle(live)
        got = [(x.partition(), x.offset()) for m in members for x in m.messages]
        assert sorted(got) == sorted(sent), "lost or repeated records"
    finally:
        close_all(members)


def test_admin_and_cli_show_both_kinds_of_group(broker):
    topic = create_topic(broker.bootstrap, unique_topic("k848adm"), 2)
    g848, gclassic = unique_topic("k848g"), unique_topic("k848classic")
    m848, = members848(broker.bootstrap, g848, [topic], 1)
    mclassic = GroupMember(broker.bootstrap, gclassic, [topic], name="classic")
    members = [m848, mclassic]
    try:
        poll_until(members, lambda: all(len(m.assignment()) == 2 for m in members), 30,
                   "both groups assigned")
        admin = admin_client(broker.bootstrap)
        listed = admin.list_consumer_groups(request_timeout=10).result(15).valid
        types = {g.group_id: g.type for g in listed}
        assert types[g848] == ConsumerGroupType.CONSUMER
        assert types[gclassic] == ConsumerGroupType.CLASSIC
        only = admin.list_consumer_groups(types={ConsumerGroupType.CONSUMER},
                                          request_timeout=10).result(15).valid
        assert g848 in {g.group_id for g in only} and gclassic not in {g.group_id for g in only}
        d = describe(broker.bootstrap, g848)
        member, = d.members
        assert {(tp.topic, tp.partition) for tp in member.assignment.topic_partitions} == \
            {(tp.topic, tp.partition) for tp in member.target_assignment.topic_partitions} == \
            _all(topic, 2)
        assert d.partition_assignor == "uniform"
        out = josefk_cli(broker, "groups", "describe", "--group", g848, "--members").stdout
        header, row = [ln.split() for ln in out.splitlines() if ln.strip()][:2]
        assert header == ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS",
                          "CURRENT-EPOCH", "CURRENT-ASSIGNMENT", "TARGET-EPOCH",
                          "TARGET-ASSIGNMENT"]
        assert row[1] == member.member_id and int(row[5]) >= 1
        assert row[6] == row[8] == f"{topic}:0,1"
        out = josefk_cli(broker, "groups", "describe", "--group", g848, "--state").stdout
        assert "GROUP-EPOCH" in out and "uniform" in out and "Stable" in out
        out = josefk_cli(broker, "groups", "list", "--type").stdout
        assert any(ln.split()[:2] == [g848, "Consumer"] for ln in out.splitlines())
        assert any(ln.split()[:2] == [gclassic, "Classic"] for ln in out.splitlines())
    finally:
        close_all(members)


# ------------------------------------------------------------------ the cluster
def test_coordinator_failover_keeps_the_group(cluster_factory):
    c = cluster_factory()
    topic = unique_topic("k848fo")
    admin = c.admin()   # referenced until the future is answered
    admin.create_topics([NewTopic(topic, 4, 3)])[topic].result(30)
    c.wait_for_topic(topic, 4)
    group = unique_topic("k848g")
    members = members848(c.bootstrap, group, [topic], 2, commit_each=True, tolerate_errors=True)
    try:
        sent, before, rebalances = consuming_pair(c.bootstrap, topic, group, members)
        coordinator = before.coordinator.id
        c.brokers[coordinator].kill()
        survivor = next(i for i in c.brokers if i != coordinator)

        def moved():
            d = describe(c.brokers[survivor].bootstrap, group)
            return d.coordinator.id != coordinator and len(d.members) == 2 and d

        after = c.wait_for(moved, 40, "another coordinator with the group")
        # the new coordinator read the group back: same members, none fenced and rejoined
        assert {m.member_id for m in after.members} == {m.member_id for m in before.members}
        sent.update(produce_values(c.brokers[survivor].bootstrap, topic, 4, 80, 80, "b"))
        poll_until(members, lambda: {(x.partition(), x.offset()) for m in members
                                     for x in m.messages} >= set(sent), 60,
                   "every record after the failover")
        assert balanced(members, _all(topic, 4))
        # nobody was fenced nor lost a partition: the group went on as it was
        assert [m.events for m in members] == rebalances
    finally:
        close_all(members)
