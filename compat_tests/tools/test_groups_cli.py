"""`python -m josefk groups ...` (kafka-consumer-groups.sh style) against the running broker,
in both spellings of an action (``groups describe`` and Kafka's ``groups --describe``),
cross-checked with real confluent-kafka clients."""

from __future__ import annotations

import subprocess
import time

import pytest
from confluent_kafka import ConsumerGroupState, ConsumerGroupTopicPartitions, TopicPartition

from josefk.tools.client import Client
from josefk.wire.apis import FIND_COORDINATOR, JOIN_GROUP, SYNC_GROUP
from compat_tests.helpers import (
    GroupMember,
    admin_client,
    consumer,
    create_topic,
    josefk_cli,
    poll_until,
    settle,
    wait_group_state,
    produce_values,
    unique_topic,
)

pytestmark = pytest.mark.timeout(90)

HEADER = ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
          "CONSUMER-ID", "HOST", "CLIENT-ID"]


def groups(broker, *args, check=True) -> subprocess.CompletedProcess:
    return josefk_cli(broker, "groups", *args, check=check)


def _table(out: str, header=HEADER) -> list[dict]:
    lines = [ln for ln in out.splitlines() if ln.strip()]
    start = next(i for i, ln in enumerate(lines) if ln.split() == header)
    return [dict(zip(header, ln.split())) for ln in lines[start + 1:]]


def _commit(bootstrap, group, topic, offsets: dict):
    c = consumer(bootstrap, **{"group.id": group})
    try:
        c.commit(offsets=[TopicPartition(topic, p, o) for p, o in offsets.items()],
                 asynchronous=False)
    finally:
        c.close()


def _committed(bootstrap, group, topic, n) -> dict:
    admin = admin_client(bootstrap)
    req = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, p) for p in range(n)])
    res = admin.list_consumer_group_offsets([req], request_timeout=10)[group].result(15)
    return {tp.partition: tp.offset for tp in res.topic_partitions}


def test_groups_list(broker, spell):
    topic = create_topic(broker.bootstrap, unique_topic("cligl"), 1)
    simple, active = unique_topic("cli-simple"), unique_topic("cli-active")
    _commit(broker.bootstrap, simple, topic, {0: 0})
    m = GroupMember(broker.bootstrap, active, [topic], name="cli-l")
    try:
        poll_until([m], lambda: len(m.assignment()) == 1, 30, "member assigned")
        admin = admin_client(broker.bootstrap)  # keep a reference while the future runs

        def admin_listed():
            res = admin.list_consumer_groups(request_timeout=10).result(15)
            assert res.errors == []
            return {g.group_id for g in res.valid}

        before = admin_listed()
        listed = groups(broker, spell("list")).stdout.splitlines()
        after = admin_listed()
        assert simple in listed and active in listed
        assert all(ln == ln.strip() and ln for ln in listed), listed
        assert listed == sorted(listed)
        # the groups the AdminClient sees (other tests' groups may come or expire meanwhile)
        assert before & after <= set(listed) <= before | after
    finally:
        m.close()


def test_groups_list_leaves_out_other_protocols_groups(broker):
    """As kafka-consumer-groups.sh --list: a group of another protocol on the same coordinator
    (Schema Registry's "sr") is not a consumer group; --type lists it with its protocol."""
    group = unique_topic("cli-sr")
    with Client(broker.bootstrap) as c:  # a member id first (KIP-394), the join, the sync
        found = None
        for _ in range(50):  # the first FindCoordinator creates __consumer_offsets
            (found,) = c.request(FIND_COORDINATOR, key_type=0,
                                 coordinator_keys=[group]).coordinators
            if found.error_code == 0:
                break
            time.sleep(0.2)
        assert found.error_code == 0, found
        join = dict(group_id=group, session_timeout_ms=30000, rebalance_timeout_ms=30000,
                    protocol_type="sr", protocols=[
                        JOIN_GROUP.Request.JoinGroupRequestProtocol(name="v0", metadata=b"")])
        member = c.request(JOIN_GROUP, member_id="", **join).member_id
        joined = c.request(JOIN_GROUP, member_id=member, **join)
        assert joined.error_code == 0, joined
        synced = c.request(SYNC_GROUP, group_id=group, generation_id=joined.generation_id,
                           member_id=member, protocol_type="sr", protocol_name="v0",
                           assignments=[SYNC_GROUP.Request.SyncGroupRequestAssignment(
                               member_id=member, assignment=b"")])
        assert synced.error_code == 0, synced
    typed = [ln.split() for ln in groups(broker, "list", "--type").stdout.splitlines()]
    assert [group, "Classic", "sr"] in typed
    assert group not in groups(broker, "list").stdout.splitlines()


def test_groups_describe_lag(broker, spell):
    topic = create_topic(broker.bootstrap, unique_topic("cligd"), 3)
    produce_values(broker.bootstrap, topic, 3, 0, 30)  # 10 per partition
    idle, live = unique_topic("cli-idle"), unique_topic("cli-live")
    _commit(broker.bootstrap, idle, topic, {0: 4, 1: 10})

    out = groups(broker, spell("describe"), "--group", idle).stdout
    assert f"Consumer group '{idle}' has no active members." in out
    rows = _table(out)
    # only partitions with a committed offset; lag = log end offset - committed
    assert [(r["PARTITION"], r["CURRENT-OFFSET"], r["LOG-END-OFFSET"], r["LAG"]) for r in rows] \
        == [("0", "4", "10", "6"), ("1", "10", "10", "0")]
    assert all((r["GROUP"], r["TOPIC"]) == (idle, topic) for r in rows)
    assert all((r["CONSUMER-ID"], r["HOST"], r["CLIENT-ID"]) == ("-", "-", "-") for r in rows)
    # --all-groups: each group as --group shows it, this one among them
    out = groups(broker, spell("describe"), "--all-groups").stdout
    assert [line.split()[:6] for line in out.splitlines() if line.startswith(f"{idle} ")] == \
        [[idle, topic, "0", "4", "10", "6"], [idle, topic, "1", "10", "10", "0"]]

    m = GroupMember(broker.bootstrap, live, [topic], name="cli-desc")
    try:
        poll_until([m], lambda: len(m.assignment()) == 3, 30, "member owning all")
        m.call(lambda c: c.commit(offsets=[TopicPartition(topic, 0, 7),
                                           TopicPartition(topic, 2, 1)], asynchronous=False))
        produce_values(broker.bootstrap, topic, 3, 30, 3)  # 11 per partition now
        out = groups(broker, spell("describe"), "--group", live).stdout
        assert "has no active members" not in out
        rows = _table(out)
        admin = admin_client(broker.bootstrap)  # keep a reference while the future runs
        member_id = admin.describe_consumer_groups(
            [live], request_timeout=10)[live].result(15).members[0].member_id
        assert [(r["PARTITION"], r["CURRENT-OFFSET"], r["LOG-END-OFFSET"], r["LAG"])
                for r in rows] == [("0", "7", "11", "4"), ("1", "-", "11", "-"),
                                   ("2", "1", "11", "10")]
        for r in rows:
            assert (r["CONSUMER-ID"], r["CLIENT-ID"]) == (member_id, "cli-desc")
            assert r["HOST"] == "/127.0.0.1"  # as kafka-consumer-groups.sh shows it
    finally:
        m.close()

    proc = groups(broker, spell("describe"), "--group", unique_topic("cli-none"), check=False)
    assert proc.returncode != 0
    assert "does not exist" in proc.stderr


def test_groups_reset_offsets_to_earliest_then_reread(broker, spell):
    topic = create_topic(broker.bootstrap, unique_topic("cligr"), 2)
    group = unique_topic("cli-reset")
    sent = produce_values(broker.bootstrap, topic, 2, 0, 20)

    a = GroupMember(broker.bootstrap, group, [topic], name="cli-r1", commit_each=True)
    try:
        poll_until([a], lambda: len(a.messages) >= 20, 30, "all 20 messages")
        assert a.commit_errors == []
        # an active group cannot be reset
        proc = groups(broker, spell("reset-offsets"), "--group", group, "--topic", topic,
                      "--to-earliest", "--execute", check=False)
        assert proc.returncode != 0
        assert "inactive" in proc.stderr and "Stable" in proc.stderr, proc.stderr
    finally:
        a.close()
    wait_group_state(admin_client(broker.bootstrap), group, ConsumerGroupState.EMPTY)
    assert _committed(broker.bootstrap, group, topic, 2) == {0: 10, 1: 10}

    # without --execute nothing changes (dry run: the plan is printed)
    out = groups(broker, spell("reset-offsets"), "--group", group, "--topic", topic,
                 "--to-earliest").stdout
    assert [(r["PARTITION"], r["NEW-OFFSET"]) for r in
            _table(out, ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"])] == [("0", "0"), ("1", "0")]
    assert _committed(broker.bootstrap, group, topic, 2) == {0: 10, 1: 10}

    # shift and to-offset, clamped to the log like Kafka's tool does
    groups(broker, spell("reset-offsets"), "--group", group, "--topic", f"{topic}:1",
           "--shift-by", "-3", "--execute")
    assert _committed(broker.bootstrap, group, topic, 2) == {0: 10, 1: 7}
    groups(broker, spell("reset-offsets"), "--group", group, "--topic", topic, "--to-offset",
           "99", "--execute")
    assert _committed(broker.bootstrap, group, topic, 2) == {0: 10, 1: 10}

    # --all-topics: every partition the group has an offset for
    groups(broker, spell("reset-offsets"), "--group", group, "--all-topics", "--to-earliest",
           "--execute")
    assert _committed(broker.bootstrap, group, topic, 2) == {0: 0, 1: 0}

    # a consumer of the group re-reads everything from offset 0, exactly once
    b = GroupMember(broker.bootstrap, group, [topic], name="cli-r2",
                    **{"auto.offset.reset": "latest"})  # would skip all if not reset
    try:
        poll_until([b], lambda: len(b.messages) >= 20, 30, "re-read 20 messages")
        settle([b])
        got = [(m.partition(), m.offset(), m.value()) for m in b.messages]
        assert len(got) == 20
        assert {(p, o): v for p, o, v in got} == sent
    finally:
        b.close()


def test_groups_delete(broker, spell):
    topic = create_topic(broker.bootstrap, unique_topic("cligdel"), 1)
    group = unique_topic("cli-del")
    m = GroupMember(broker.bootstrap, group, [topic], name="cli-d")
    try:
        poll_until([m], lambda: len(m.assignment()) == 1, 30, "member assigned")
        m.call(lambda c: c.commit(offsets=[TopicPartition(topic, 0, 0)], asynchronous=False))
        proc = groups(broker, spell("delete"), "--group", group, check=False)
        assert proc.returncode != 0
        assert "NON_EMPTY_GROUP" in proc.stderr, proc.stderr
    finally:
        m.close()
    wait_group_state(admin_client(broker.bootstrap), group, ConsumerGroupState.EMPTY)
    assert group in groups(broker, spell("list")).stdout.splitlines()

    out = groups(broker, spell("delete"), "--group", group).stdout
    assert out.strip() == f"Deletion of requested consumer groups ('{group}') was successful."
    assert group not in groups(broker, spell("list")).stdout.splitlines()
    assert _committed(broker.bootstrap, group, topic, 1) == {0: -1001}
    proc = groups(broker, spell("describe"), "--group", group, check=False)
    assert proc.returncode != 0 and "does not exist" in proc.stderr

    proc = groups(broker, spell("delete"), "--group", group, check=False)
    assert proc.returncode != 0
    assert "GROUP_ID_NOT_FOUND" in proc.stderr, proc.stderr
