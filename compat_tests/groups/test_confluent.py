"""Consumer groups driven by confluent-kafka (librdkafka) consumers that subscribe():
rebalances on join, leave and crash, committed offsets, cooperative-sticky, static members."""

from __future__ import annotations

import json
import queue
import signal
import subprocess
import sys
import threading
import time

import pytest
from confluent_kafka import ConsumerGroupTopicPartitions, KafkaError, TopicPartition

from josefk.faults.processes import REPO_ROOT
from compat_tests.helpers import (
    GroupMember,
    admin_client,
    assert_no_more,
    balanced,
    close_all,
    consume_n,
    consumer,
    poll_until,
    produce_plain,
    produce_values,
    settle,
    unique_topic,
)

pytestmark = pytest.mark.timeout(90)

PARTS = 6


def _all(topic, n=PARTS) -> set:
    return {(topic, p) for p in range(n)}


def _start_group(bootstrap, topic, group, n, **conf):
    members = [GroupMember(bootstrap, group, [topic], name=f"c{i}", **conf) for i in range(n)]
    took = poll_until(members, lambda: balanced(members, _all(topic)), 30,
                      f"{n} members sharing {PARTS} partitions")
    return members, took


def test_three_consumers_split_six_partitions_and_consume_once(target):
    topic = target.create_topic(unique_topic("g3"), PARTS)
    group = unique_topic("grp")
    members, _ = _start_group(target.bootstrap, topic, group, 3)
    try:
        shares = [m.assignment() for m in members]
        assert [len(s) for s in shares] == [2, 2, 2], shares
        assert set().union(*shares) == _all(topic)

        sent = produce_values(target.bootstrap, topic, PARTS, 0, 600)
        poll_until(members, lambda: sum(len(m.messages) for m in members) >= 600, 30,
                   "600 messages consumed")
        settle(members)  # any duplicate would arrive now
        got = [(x.partition(), x.offset(), x.value()) for m in members for x in m.messages]
        assert len(got) == 600, f"{len(got)} deliveries for 600 messages"
        assert {(p, o): v for p, o, v in got} == sent
        for m, share in zip(members, shares):
            assert {(topic, x.partition()) for x in m.messages} <= share, m.name
            assert m.messages, f"{m.name} got nothing"
    finally:
        close_all(members)


def test_closing_consumer_hands_partitions_to_the_others(target):
    topic = target.create_topic(unique_topic("gclose"), PARTS)
    group = unique_topic("grp")
    members, _ = _start_group(target.bootstrap, topic, group, 3, commit_each=True)
    try:
        first = produce_values(target.bootstrap, topic, PARTS, 0, 120, "a")
        poll_until(members, lambda: sum(len(m.messages) for m in members) >= 120, 30,
                   "first batch consumed")
        leaving = members[0]
        gone = leaving.assignment()
        leaving.close()  # LeaveGroup
        rest = members[1:]
        took = poll_until(rest, lambda: balanced(rest, _all(topic)), 15,
                          "2 members taking over")
        assert took < 10, f"takeover after a clean close took {took:.1f}s"
        assert gone <= rest[0].assignment() | rest[1].assignment()
        assert [len(m.assignment()) for m in rest] == [3, 3]

        second = produce_values(target.bootstrap, topic, PARTS, 120, 120, "b")
        poll_until(rest, lambda: sum(len(m.messages) for m in members) >= 240, 30,
                   "second batch consumed")
        settle(rest)
        got = [(x.partition(), x.offset(), x.value()) for m in members for x in m.messages]
        assert len(got) == 240, f"{len(got)} deliveries for 240 messages (committed each)"
        assert {(p, o): v for p, o, v in got} == {**first, **second}
        assert all(not m.commit_errors for m in members), [m.commit_errors for m in members]
    finally:
        close_all(members)


_VICTIM = r"""
import json, sys, time
from confluent_kafka import Consumer
bootstrap, group, topic = sys.argv[1:4]
c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "client.id": "victim",
              "session.timeout.ms": 6000, "heartbeat.interval.ms": 300,
              "enable.auto.commit": False, "auto.offset.reset": "earliest"})
def on_assign(_c, parts):
    print(json.dumps(["assign", sorted(p.partition for p in parts)]), flush=True)
def on_revoke(_c, parts):
    print(json.dumps(["revoke", sorted(p.partition for p in parts)]), flush=True)
c.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke)
while True:
    c.poll(0.05)
"""


def test_killed_consumer_is_evicted_after_session_timeout(target):
    topic = target.create_topic(unique_topic("gkill"), PARTS)
    group = unique_topic("grp")
    victim = subprocess.Popen(
        [sys.executable, "-c", _VICTIM, target.bootstrap, group, topic],
        cwd=str(REPO_ROOT), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(json.loads(x)) for x in victim.stdout],
                     daemon=True).start()
    victim_parts: set = set()

    def drain():
        while True:
            try:
                kind, parts = lines.get_nowait()
            except queue.Empty:
                return
            if kind == "assign":
                victim_parts.clear()
                victim_parts.update((topic, p) for p in parts)
            else:
                victim_parts.clear()

    members = []
    try:
        # the victim joins first, then two more
        deadline = time.monotonic() + 20
        while not victim_parts and time.monotonic() < deadline:
            time.sleep(0.05)
            drain()
        assert victim_parts == _all(topic), victim_parts
        members = [GroupMember(target.bootstrap, group, [topic], name=f"c{i}") for i in range(2)]

        def three_way():
            drain()
            mine = [m.assignment() for m in members]
            return (len(victim_parts) == 2 and all(len(s) == 2 for s in mine)
                    and victim_parts.union(*mine) == _all(topic))

        poll_until(members, three_way, 30, "victim + 2 members sharing 6 partitions")
        taken = set(victim_parts)
        t0 = time.monotonic()
        victim.send_signal(signal.SIGKILL)
        victim.wait(5)
        poll_until(members, lambda: balanced(members, _all(topic)), 25,
                   "survivors taking over the killed member's partitions")
        took = time.monotonic() - t0
        # evicted by the session timeout (6 s since its last heartbeat, <= 0.3 s before the kill)
        assert took >= 5.0, f"takeover only {took:.2f}s after the kill: not a session expiry?"
        assert took <= 20.0, f"takeover took {took:.2f}s"
        assert taken <= members[0].assignment() | members[1].assignment()
    finally:
        if victim.poll() is None:
            victim.kill()
            victim.wait(5)
        close_all(members)


def _commit_close_resume(bootstrap_before, bootstrap_after_fn, topic, group):
    sent = produce_values(bootstrap_before, topic, 3, 0, 90)
    a = GroupMember(bootstrap_before, group, [topic], name="a")
    try:
        poll_until([a], lambda: len(a.messages) >= 40, 30, "40 messages")
        # commit exactly what was consumed, per partition, synchronously
        nxt = {}
        for m in a.messages[:40]:
            nxt[m.partition()] = max(nxt.get(m.partition(), 0), m.offset() + 1)
        tps = [TopicPartition(topic, p, o) for p, o in sorted(nxt.items())]
        res = a.call(lambda c: c.commit(offsets=tps, asynchronous=False))
        assert all(tp.error is None for tp in res), res
        got = a.call(lambda c: c.committed([TopicPartition(topic, p) for p in range(3)],
                                          timeout=10))
        assert {tp.partition: tp.offset for tp in got} == {p: nxt.get(p, -1001) for p in range(3)}
        first = {(m.partition(), m.offset()) for m in a.messages[:40]
                 if m.offset() < nxt[m.partition()]}
    finally:
        a.close()
    bootstrap = bootstrap_after_fn()
    b = GroupMember(bootstrap, group, [topic], name="b")
    try:
        expected = {k: v for k, v in sent.items() if k[1] >= nxt.get(k[0], 0)}
        poll_until([b], lambda: len(b.messages) >= len(expected), 30,
                   f"{len(expected)} remaining messages")
        settle([b])
        got = [(m.partition(), m.offset(), m.value()) for m in b.messages]
        assert len(got) == len(expected), "duplicates or extras after resuming"
        assert {(p, o): v for p, o, v in got} == expected
        # together: every message exactly once
        assert first | set(expected) == set(sent) and not first & set(expected)
    finally:
        b.close()


def test_commit_close_new_consumer_resumes_exactly(target):
    topic = target.create_topic(unique_topic("gresume"), 3)
    _commit_close_resume(target.bootstrap, lambda: target.bootstrap, topic,
                         unique_topic("grp"))


@pytest.mark.slow
@pytest.mark.parametrize("how", ["stop", "kill"])
def test_committed_offsets_survive_a_restart_of_the_coordinator(target_factory, how):
    t = target_factory()
    topic = t.create_topic(unique_topic("grestart"), 3)
    group = unique_topic("grp")

    def restart():
        t.restart(t.group_coordinator(group), how=how)
        return t.bootstrap

    _commit_close_resume(t.bootstrap, restart, topic, group)


@pytest.mark.slow
@pytest.mark.parametrize("how", ["stop", "kill"])
def test_live_group_survives_its_coordinator_going_away(target_factory, how):
    """Two members keep running while the broker coordinating their group stops or dies and
    comes back: a single broker loads the group back from __consumer_offsets, a cluster hands
    it to the broker that takes over its __consumer_offsets partition. The members carry on
    and resume from their commits."""
    t = target_factory()
    topic = t.create_topic(unique_topic("glive"), 4)
    group = unique_topic("grp")
    everything = _all(topic, 4)
    members = [GroupMember(t.bootstrap, group, [topic], name=f"c{i}", commit_each=True,
                           tolerate_errors=True) for i in range(2)]
    try:
        poll_until(members, lambda: balanced(members, everything), 30, "2 members sharing")
        sent = produce_values(t.bootstrap, topic, 4, 0, 80, "a")
        poll_until(members, lambda: sum(len(m.messages) for m in members) >= 80, 30,
                   "first batch")
        assert [m.commit_errors for m in members] == [[], []]
        coordinator = t.group_coordinator(group)
        t.restart(coordinator, how=how)
        if t.cluster is not None:  # leadership stays where the failover put it
            assert t.group_coordinator(group) != coordinator
        sent.update(produce_values(t.bootstrap, topic, 4, 80, 80, "b"))
        poll_until(members, lambda: sum(len(m.messages) for m in members) >= 160, 40,
                   "second batch after the restart")
        poll_until(members, lambda: balanced(members, everything), 20, "2 members sharing")
        settle(members)
        got = [(x.partition(), x.offset(), x.value()) for m in members for x in m.messages]
        assert len(got) == 160, f"{len(got)} deliveries of 160 messages"
        assert {(p, o): v for p, o, v in got} == sent
        # only connection-level errors while the broker was away
        odd = [e for m in members for e in m.errors
               if e.code() not in (KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN)]
        assert odd == [], odd
    finally:
        close_all(members)


def test_cooperative_sticky_incremental_rebalance(target):
    topic = target.create_topic(unique_topic("gcoop"), PARTS)
    group = unique_topic("grp")
    conf = {"partition.assignment.strategy": "cooperative-sticky"}
    members = [GroupMember(target.bootstrap, group, [topic], name=f"c{i}", commit_each=True,
                           **conf) for i in range(2)]
    try:
        poll_until(members, lambda: balanced(members, _all(topic)), 30, "2 cooperative members")
        before = {m.name: m.assignment() for m in members}
        sent = produce_values(target.bootstrap, topic, PARTS, 0, 120, "a")
        poll_until(members, lambda: sum(len(m.messages) for m in members) >= 60, 30,
                   "half of the first batch")
        n_events = {m.name: len(m.events) for m in members}

        third = GroupMember(target.bootstrap, group, [topic], name="c2", commit_each=True, **conf)
        members.append(third)
        poll_until(members, lambda: balanced(members, _all(topic)), 30, "3 cooperative members")
        after = {m.name: m.assignment() for m in members}
        for m in members[:2]:
            # sticky: each old member keeps 2 of its 3 partitions
            assert after[m.name] <= before[m.name] and len(after[m.name]) == 2, (before, after)
            new_events = m.events[n_events[m.name]:]
            revoked = [set(e[2]) for e in new_events if e[1] == "revoke"]
            lost = [e for e in new_events if e[1] == "lost"]
            # incremental: only the moved partition is revoked, never the whole assignment
            assert revoked and set().union(*revoked) == before[m.name] - after[m.name], new_events
            assert not lost, new_events
        assert after["c2"] == _all(topic) - after["c0"] - after["c1"]

        sent.update(produce_values(target.bootstrap, topic, PARTS, 120, 120, "b"))
        poll_until(members, lambda: sum(len(m.messages) for m in members) >= 240, 30,
                   "all 240 messages")
        settle(members)
        assert [m.commit_errors for m in members] == [[], [], []]
        got = [(x.partition(), x.offset(), x.value()) for m in members for x in m.messages]
        assert len(got) == 240, f"{len(got)} deliveries of 240 messages: duplicates"
        assert {(p, o): v for p, o, v in got} == sent
    finally:
        close_all(members)


def test_static_member_rejoins_without_rebalance(target):
    topic = target.create_topic(unique_topic("gstatic"), PARTS)
    group = unique_topic("grp")
    stats = []
    conf = {"session.timeout.ms": 10000}
    a = GroupMember(target.bootstrap, group, [topic], name="a", **conf,
                    **{"group.instance.id": "inst-a"})
    b = GroupMember(target.bootstrap, group, [topic], name="b", commit_each=True, **conf,
                    **{"statistics.interval.ms": 200,
                       "stats_cb": lambda s: stats.append(json.loads(s).get("cgrp", {}))})
    members = [a, b]
    try:
        poll_until(members, lambda: balanced(members, _all(topic)), 30, "a and b sharing")
        a_parts, b_parts = a.assignment(), b.assignment()
        b_events = len(b.events)
        seen = len(stats)  # statistics emitted from now on describe the settled group
        poll_until(members, lambda: len(stats) >= seen + 2, 10, "fresh statistics")
        assert stats[-1]["join_state"] == "steady", stats[-1]
        rebalances = stats[-1]["rebalance_cnt"]
        assert rebalances >= 1

        admin = admin_client(target.bootstrap)
        d1 = admin.describe_consumer_groups([group])[group].result(15)
        a_id1 = next(m.member_id for m in d1.members if m.group_instance_id == "inst-a")

        a.close()  # a static member does not send LeaveGroup
        a2 = GroupMember(target.bootstrap, group, [topic], name="a2", **conf,
                         **{"group.instance.id": "inst-a"})
        members = [a2, b]
        poll_until(members, lambda: a2.assignment() == a_parts, 9, "a2 getting a's partitions")
        # b keeps polling a while: no rebalance reaches it
        settle(members, 2.0)
        assert b.assignment() == b_parts
        assert b.events[b_events:] == [], f"b saw a rebalance: {b.events[b_events:]}"
        assert stats[-1]["rebalance_cnt"] == rebalances, stats[-1]

        # b's generation is still current: its commit is accepted
        sent = produce_values(target.bootstrap, topic, PARTS, 0, 60)
        poll_until(members, lambda: len(a2.messages) + len(b.messages) >= 60, 20, "60 messages")
        assert b.commit_errors == []
        assert {(x.partition(), x.offset()) for x in a2.messages + b.messages} == set(sent)

        d2 = admin.describe_consumer_groups([group])[group].result(15)
        assert d2.state.name == "STABLE"
        assert sorted(m.group_instance_id or "" for m in d2.members) == ["", "inst-a"]
        a_id2 = next(m.member_id for m in d2.members if m.group_instance_id == "inst-a")
        assert a_id2 != a_id1  # the static member got a new member id, nothing else changed
    finally:
        close_all(members + [a])


def test_session_timeout_below_group_min_is_refused(target):
    """JoinGroup with session.timeout.ms under group.min.session.timeout.ms (6000) fails with
    INVALID_SESSION_TIMEOUT, which librdkafka hands to the application from poll()."""
    from confluent_kafka import Consumer

    topic = target.create_topic(unique_topic("gsess"), 1)
    c = Consumer({"bootstrap.servers": target.bootstrap, "group.id": unique_topic("grp"),
                  "session.timeout.ms": 3000, "heartbeat.interval.ms": 500})
    try:
        c.subscribe([topic])
        deadline = time.monotonic() + 15
        err = None
        while err is None and time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is not None and m.error():
                err = m.error()
        assert err is not None, "no error within 15s"
        assert err.code() == KafkaError.INVALID_SESSION_TIMEOUT, err
        assert c.assignment() == []
    finally:
        c.close()


def test_second_static_member_with_same_instance_id_fences_the_first(target):
    """KIP-345: a newer member with the same group.instance.id replaces the old one, which
    gets FENCED_INSTANCE_ID (a fatal error in librdkafka) on its next heartbeat."""
    topic = target.create_topic(unique_topic("gfence"), 2)
    group = unique_topic("grp")
    old = GroupMember(target.bootstrap, group, [topic], name="old", tolerate_errors=True,
                      **{"group.instance.id": "twin"})
    new = None
    try:
        poll_until([old], lambda: len(old.assignment()) == 2, 30, "old member assigned")
        admin = admin_client(target.bootstrap)
        d = admin.describe_consumer_groups([group], request_timeout=10)[group].result(15)
        (old_id,) = [m.member_id for m in d.members]
        new = GroupMember(target.bootstrap, group, [topic], name="new",
                          **{"group.instance.id": "twin"})
        poll_until([old, new], lambda: old.errors and len(new.assignment()) == 2, 10,
                   "old member fenced, new one assigned")
        fatal = old.errors[0]
        assert fatal.code() == KafkaError._FATAL, fatal
        assert "fenced" in fatal.str().lower(), fatal
        assert new.assignment() == _all(topic, 2)
        d = admin.describe_consumer_groups([group], request_timeout=10)[group].result(15)
        # one member, with a new member id; like Kafka, the replacement keeps the client id
        # and host recorded when the instance first joined (MemberMetadata.clientId is a val)
        assert [(m.group_instance_id, m.client_id) for m in d.members] == [("twin", "old")]
        assert d.members[0].member_id != old_id
        assert d.members[0].member_id.startswith("twin-")
    finally:
        close_all([old] + ([new] if new else []))


def test_commit_errors(target):
    """OffsetCommit per-partition errors as Kafka answers them."""
    from confluent_kafka import KafkaException

    topic = target.create_topic(unique_topic("gcerr"), 2)
    group = unique_topic("grp")
    c = consumer(target.bootstrap, **{"group.id": group})
    try:
        cases = [
            (TopicPartition(unique_topic("nosuch"), 0, 5), KafkaError.UNKNOWN_TOPIC_OR_PART),
            (TopicPartition(topic, 7, 5), KafkaError.UNKNOWN_TOPIC_OR_PART),
            (TopicPartition(topic, 0, 5, metadata="x" * 5000),  # offset.metadata.max.bytes 4096
             KafkaError.OFFSET_METADATA_TOO_LARGE),
        ]
        for tp, code in cases:
            with pytest.raises(KafkaException) as ei:
                c.commit(offsets=[tp], asynchronous=False)
            assert ei.value.args[0].code() == code, (tp, ei.value)
        # long metadata under the limit is kept and comes back unchanged (the exact 4096
        # boundary is checked with kafka-python: confluent-kafka sends a trailing NUL)
        ok = c.commit(offsets=[TopicPartition(topic, 1, 3, metadata="y" * 4000)],
                      asynchronous=False)
        assert [tp.error for tp in ok] == [None]
        (got,) = c.committed([TopicPartition(topic, 1)], timeout=10)
        assert (got.offset, got.metadata) == (3, "y" * 4000)
        (p0,) = c.committed([TopicPartition(topic, 0)], timeout=10)
        assert p0.offset == -1001  # the refused commit stored nothing
    finally:
        c.close()


def test_member_without_a_common_assignor_is_refused(target):
    """A new member whose assignors share none with the group's gets
    INCONSISTENT_GROUP_PROTOCOL and no partitions; the group carries on undisturbed."""
    topic = target.create_topic(unique_topic("gproto"), 2)
    group = unique_topic("grp")
    first = GroupMember(target.bootstrap, group, [topic], name="ranger",
                        **{"partition.assignment.strategy": "range"})
    odd = None
    try:
        poll_until([first], lambda: len(first.assignment()) == 2, 30, "first member assigned")
        events = len(first.events)
        odd = GroupMember(target.bootstrap, group, [topic], name="rr", tolerate_errors=True,
                          **{"partition.assignment.strategy": "roundrobin"})
        poll_until([first, odd], lambda: odd.errors, 10, "the odd member refused")
        assert {e.code() for e in odd.errors} == {KafkaError.INCONSISTENT_GROUP_PROTOCOL}
        settle([first, odd], 1.0)
        assert odd.assignment() == set()
        assert first.assignment() == _all(topic, 2)
        assert first.events[events:] == []
    finally:
        close_all([first] + ([odd] if odd else []))


_ZOMBIE = r"""
import json, sys, time
from confluent_kafka import Consumer, KafkaException, TopicPartition
bootstrap, group, topic = sys.argv[1:4]
c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "client.id": "zombie",
              "session.timeout.ms": 6000, "heartbeat.interval.ms": 300,
              "enable.auto.commit": False, "auto.offset.reset": "earliest"})
owned = []
def out(*a):
    print(json.dumps(a), flush=True)
def on_assign(_c, ps):
    owned[:] = sorted(p.partition for p in ps)
    out("assign", owned)
c.subscribe([topic], on_assign=on_assign,
            on_revoke=lambda _c, ps: out("revoke", sorted(p.partition for p in ps)),
            on_lost=lambda _c, ps: out("lost", sorted(p.partition for p in ps)))
last = time.monotonic()
while True:
    now = time.monotonic()
    if now - last > 3 and owned:  # we were stopped: commit as if nothing had happened
        try:
            res = c.commit(offsets=[TopicPartition(topic, p, 999) for p in owned],
                           asynchronous=False)
            out("commit", [tp.error.name() if tp.error else "NO_ERROR" for tp in res])
        except KafkaException as e:
            out("commit", [e.args[0].name()])
    last = now
    c.poll(0.05)
"""


def test_zombie_member_commit_is_fenced(target):
    """A member that stalls (SIGSTOP) past its session timeout is evicted; its partitions go
    to the others.  When it wakes up, its commit is refused (UNKNOWN_MEMBER_ID under the old
    member id) and changes nothing; it then rejoins under a new member id."""
    topic = target.create_topic(unique_topic("gzombie"), 2)
    group = unique_topic("grp")
    z = subprocess.Popen([sys.executable, "-c", _ZOMBIE, target.bootstrap, group, topic],
                         cwd=str(REPO_ROOT), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         text=True)
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(json.loads(x)) for x in z.stdout],
                     daemon=True).start()
    said = []

    def heard(kind):
        while not lines.empty():
            said.append(lines.get_nowait())
        return [x for x in said if x[0] == kind]

    m = None
    try:
        deadline = time.monotonic() + 20
        while not heard("assign") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert heard("assign")[-1] == ["assign", [0, 1]], said
        m = GroupMember(target.bootstrap, group, [topic], name="c0", commit_each=True)
        poll_until([m], lambda: len(m.assignment()) == 1 and heard("assign")[-1][1] != [0, 1],
                   20, "c0 and the zombie sharing")
        admin = admin_client(target.bootstrap)
        d = admin.describe_consumer_groups([group], request_timeout=10)[group].result(15)
        (zombie_id,) = [x.member_id for x in d.members if x.client_id == "zombie"]

        z.send_signal(signal.SIGSTOP)
        t0 = time.monotonic()
        poll_until([m], lambda: len(m.assignment()) == 2, 20, "c0 owning both")
        assert time.monotonic() - t0 >= 5.0
        sent = produce_values(target.bootstrap, topic, 2, 0, 10)
        poll_until([m], lambda: len(m.messages) >= 10, 20, "c0 consuming")
        assert {(x.partition(), x.offset()) for x in m.messages} == set(sent)

        z.send_signal(signal.SIGCONT)
        deadline = time.monotonic() + 15
        while not heard("commit") and time.monotonic() < deadline:
            time.sleep(0.05)
        # Which refusal depends on how far the woken zombie got before its commit: under its
        # old member id, UNKNOWN_MEMBER_ID; once its heartbeat has told it the assignment is
        # lost, librdkafka may already have rejoined under a new member id, which the group
        # knows at another generation: ILLEGAL_GENERATION (REBALANCE_IN_PROGRESS once the
        # rebalance awaits its SyncGroup), as Kafka answers too.
        commit = said.index(heard("commit")[0])
        lost_first = any(kind == "lost" for kind, _ in said[:commit])
        refusals = {"UNKNOWN_MEMBER_ID"} | (
            {"ILLEGAL_GENERATION", "REBALANCE_IN_PROGRESS"} if lost_first else set())
        assert heard("commit")[0][1][0] in refusals, said
        # the zombie comes back under a new member id (librdkafka may even join twice: once
        # after its failed heartbeat, once after the failed commit - the first of those then
        # expires), never under the old one
        def zombies():
            d = admin.describe_consumer_groups([group], request_timeout=10)[group].result(15)
            return [x.member_id for x in d.members if x.client_id == "zombie"]

        poll_until([m], lambda: zombies(), 20, "zombie rejoined")
        assert zombie_id not in zombies()
        # the zombie's commit changed nothing
        res = admin.list_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(group)], request_timeout=10)[group].result(15)
        assert {(tp.partition, tp.offset) for tp in res.topic_partitions} == {(0, 5), (1, 5)}
    finally:
        if z.poll() is None:
            z.send_signal(signal.SIGCONT)
            z.kill()
            z.wait(5)
        if m is not None:
            m.close()


def test_consumer_group_subscribe_commit_resume(target, new_topic):
    """subscribe() through the group coordinator; committed offsets are resumed from."""
    topic = new_topic(partitions=2)
    group = unique_topic("grp")
    values = {pt: [f"p{pt}-{i}".encode() for i in range(10)] for pt in range(2)}
    for pt, vs in values.items():
        produce_plain(target.bootstrap, topic, vs, partition=pt)

    c = consumer(target.bootstrap, **{"group.id": group, "auto.offset.reset": "earliest",
                                      "session.timeout.ms": 10000})
    try:
        c.subscribe([topic])
        msgs = consume_n(c, 20, timeout=30)
        for pt in range(2):
            assert [m.value() for m in msgs if m.partition() == pt] == values[pt]
        # Commit a position in the middle of each partition.
        c.commit(offsets=[TopicPartition(topic, 0, 4), TopicPartition(topic, 1, 7)],
                 asynchronous=False)
        committed = c.committed([TopicPartition(topic, 0), TopicPartition(topic, 1)], timeout=10)
        assert sorted((t.partition, t.offset) for t in committed) == [(0, 4), (1, 7)]
    finally:
        c.close()

    c = consumer(target.bootstrap, **{"group.id": group, "auto.offset.reset": "earliest",
                                      "session.timeout.ms": 10000})
    try:
        c.subscribe([topic])
        msgs = consume_n(c, 6 + 3, timeout=30)
        assert_no_more(c, 1.0)
    finally:
        c.close()
    got = sorted((m.partition(), m.offset(), m.value()) for m in msgs)
    want = sorted([(0, i, values[0][i]) for i in range(4, 10)] +
                  [(1, i, values[1][i]) for i in range(7, 10)])
    assert got == want
