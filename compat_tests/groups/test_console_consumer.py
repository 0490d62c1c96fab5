"""`josefk console-consumer --group` as a real member of a classic consumer group (what
kafka-console-consumer.sh --group does): the group's members split the partitions, a
confluent-kafka or kafka-python consumer in the same group shares them (either one leading),
commits carry the member's generation, and leaving hands the partitions over without waiting for
the session timeout."""
from __future__ import annotations

import signal
import subprocess
import threading
import time

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka import ConsumerGroupState

from josefk.faults.processes import BROKER_PYTHON, REPO_ROOT
from compat_tests.helpers import (admin_client, create_topic, flush_all, josefk_cli, producer,
                                  unique_topic, wait_group_state)


class ConsoleConsumer:
    """A `josefk console-consumer --group` subprocess printing ``Partition:P<TAB>value`` lines,
    read as they come."""

    def __init__(self, broker, topic, group, *extra):
        self.proc = subprocess.Popen(
            [BROKER_PYTHON, "-m", "josefk", "console-consumer", "--bootstrap-server",
             broker.bootstrap, "--topic", topic, "--group", group, "--property",
             "print.partition=true", "--consumer-property", "heartbeat.interval.ms=500", *extra],
            cwd=str(REPO_ROOT), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            # a suite started in the background inherits SIGINT ignored: this test sends it
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        self.lines: list[tuple[int, str]] = []
        self.errors: list[str] = []
        self.readers = [threading.Thread(target=self._read, daemon=True),
                        threading.Thread(target=lambda: self.errors.extend(self.proc.stderr),
                                         daemon=True)]
        for r in self.readers:
            r.start()

    def _read(self):
        for line in self.proc.stdout:
            part, _, value = line.rstrip("\n").partition("\t")
            self.lines.append((int(part.removeprefix("Partition:")), value))

    def wait(self, timeout=60) -> str:
        """Wait for the exit; its stderr."""
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"console-consumer still running after {timeout}s") from None
        for r in self.readers:
            r.join(5)
        err = "".join(self.errors)
        assert code == 0, err
        return err

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


def members(admin, group, count, timeout=30.0) -> dict:
    """{client id + member id: {partition}} once ``group`` is stable with ``count`` members
    that all have partitions."""
    deadline = time.monotonic() + timeout
    while True:
        d = admin.describe_consumer_groups([group], request_timeout=10)[group].result(15)
        got = {(m.client_id, m.member_id): {tp.partition for tp in m.assignment.topic_partitions}
               for m in d.members}
        if d.state == ConsumerGroupState.STABLE and len(got) == count and all(got.values()):
            return got
        assert time.monotonic() < deadline, f"group {group}: {d.state}, {got}"
        time.sleep(0.1)


def shared(admin, group, client_id, poll, assignment, timeout=30.0):
    """Poll the Kafka client ``client_id`` until ``group`` is stable with it and the console
    consumer as members, its own assignment (``assignment()``) being what the group describes;
    (its partitions, the console's partitions)."""
    deadline = time.monotonic() + timeout
    while True:
        poll()
        d = admin.describe_consumer_groups([group], request_timeout=10)[group].result(15)
        shares = {m.client_id: {tp.partition for tp in m.assignment.topic_partitions}
                  for m in d.members}
        mine = assignment()
        if d.state == ConsumerGroupState.STABLE and len(shares) == 2 and mine and \
                mine == shares.get(client_id):
            return mine, shares["console-consumer"]
        assert time.monotonic() < deadline, f"not shared: {d.state} {shares} {mine}"


def produce_each(bootstrap, topic, partitions, n) -> set:
    p = producer(bootstrap)
    values = set()
    for part in range(partitions):
        for i in range(n):
            value = f"p{part}-{i}"
            p.produce(topic, value.encode(), partition=part)
            values.add((part, value))
    flush_all(p)
    return values


def test_two_console_consumers_split_the_partitions(broker):
    topic = create_topic(broker.bootstrap, unique_topic("cg-split"), partitions=4)
    group = unique_topic("cg-split-group")
    admin = admin_client(broker.bootstrap)
    a = ConsoleConsumer(broker, topic, group, "--from-beginning", "--timeout-ms", "6000")
    b = ConsoleConsumer(broker, topic, group, "--from-beginning", "--timeout-ms", "6000")
    try:
        shares = list(members(admin, group, 2).values())
        assert sorted(map(len, shares)) == [2, 2] and set.union(*shares) == {0, 1, 2, 3}
        sent = produce_each(broker.bootstrap, topic, 4, 10)
        a.wait()
        b.wait()
    finally:
        a.kill()
        b.kill()
    got_a, got_b = {p for p, _ in a.lines}, {p for p, _ in b.lines}
    # Each printed its own two partitions; together every record exactly once.
    assert {frozenset(got_a), frozenset(got_b)} == {frozenset(s) for s in shares}
    assert len(a.lines) + len(b.lines) == len(sent) and set(a.lines) | set(b.lines) == sent
    # Both left: the group is empty, with every record committed.
    wait_group_state(admin, group, ConsumerGroupState.EMPTY)
    out = josefk_cli(broker, "groups", "describe", "--group", group).stdout
    rows = [line.split() for line in out.splitlines() if line.startswith(group)]
    assert sorted((int(r[2]), r[3], r[5]) for r in rows) == [(p, "10", "0") for p in range(4)]


def test_member_joining_mid_stream_takes_over_at_the_commits(broker):
    """A console consumer joins while another one is printing a stream: the first commits its
    positions before it rejoins, the newcomer starts its partitions there, and every record is
    printed exactly once."""
    topic = create_topic(broker.bootstrap, unique_topic("cg-midstream"), partitions=4)
    group = unique_topic("cg-midstream-group")
    admin = admin_client(broker.bootstrap)
    a = ConsoleConsumer(broker, topic, group, "--timeout-ms", "6000")
    b = None
    sent = set()

    def produce_stream():  # 400 records over about 4 s, spread over the partitions
        p = producer(broker.bootstrap, linger_ms=0)
        for i in range(400):
            value = f"s{i}"
            p.produce(topic, value.encode(), partition=i % 4)
            sent.add((i % 4, value))
            p.poll(0)
            time.sleep(0.01)
        flush_all(p)
    try:
        members(admin, group, 1)
        stream = threading.Thread(target=produce_stream)
        stream.start()
        time.sleep(1.5)
        assert a.lines, "the first member printed nothing before the second joined"
        b = ConsoleConsumer(broker, topic, group, "--timeout-ms", "6000")
        shares = list(members(admin, group, 2).values())
        stream.join(60)
        a.wait()
        b.wait()
    finally:
        a.kill()
        if b is not None:
            b.kill()
    assert sorted(map(len, shares)) == [2, 2]
    printed = a.lines + b.lines
    assert len(printed) == len(sent) == 400 and set(printed) == sent
    # The first member read all four partitions until the newcomer took its share of them.
    assert {p for p, _ in a.lines} == {0, 1, 2, 3} and {p for p, _ in b.lines} in shares


def test_console_and_confluent_consumers_share_a_group(broker):
    topic = create_topic(broker.bootstrap, unique_topic("cg-share"), partitions=4)
    group = unique_topic("cg-share-group")
    admin = admin_client(broker.bootstrap)
    # The console consumer joins first: it leads, and its range assignment covers both.
    console = ConsoleConsumer(broker, topic, group, "--from-beginning", "--consumer-property",
                              "auto.commit.interval.ms=500")
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group,
                  "client.id": "confluent-member", "auto.offset.reset": "earliest",
                  "session.timeout.ms": 45000, "heartbeat.interval.ms": 500,
                  "enable.auto.commit": True, "auto.commit.interval.ms": 500,
                  "fetch.wait.max.ms": 100})
    try:
        members(admin, group, 1)
        c.subscribe([topic])
        mine, theirs = shared(admin, group, "confluent-member",
                              lambda: c.poll(0.1),
                              lambda: {tp.partition for tp in c.assignment()})
        # The confluent consumer's assignment excludes the console's partitions.
        assert len(mine) == len(theirs) == 2 and mine | theirs == {0, 1, 2, 3}
        out = josefk_cli(broker, "groups", "describe", "--group", group).stdout
        owners = {int(r[2]): r[-1] for r in (line.split() for line in out.splitlines()
                                             if line.startswith(group))}
        assert owners == {p: "console-consumer" if p in theirs else "confluent-member"
                          for p in range(4)}

        sent = produce_each(broker.bootstrap, topic, 4, 5)
        consumed = []
        deadline = time.monotonic() + 30
        while len(consumed) < 10 or len(console.lines) < 10:
            m = c.poll(0.1)
            if m is not None and not m.error():
                consumed.append((m.partition(), m.value().decode()))
            assert time.monotonic() < deadline, (consumed, console.lines)
        assert {p for p, _ in consumed} == mine and {p for p, _ in console.lines} == theirs
        assert set(consumed) | set(console.lines) == sent
        # The console's auto-commit, as a member of this generation, reached its positions.
        deadline = time.monotonic() + 15
        while [tp.offset for tp in c.committed([TopicPartition(topic, p) for p in sorted(theirs)],
                                               timeout=10)] != [5, 5]:
            assert time.monotonic() < deadline, "console's offsets not committed"
            time.sleep(0.2)

        # Interrupted, it commits and leaves: the confluent consumer gets its partitions long
        # before the 45 s session timeout, resuming at the console's commits (no record again).
        console.proc.send_signal(signal.SIGINT)
        assert "Processed a total of 10 messages" in console.wait()
        left = time.monotonic()
        while {tp.partition for tp in c.assignment()} != {0, 1, 2, 3}:
            m = c.poll(0.1)
            assert m is None or m.error(), f"{m.partition()}:{m.value()} read again"
            assert time.monotonic() - left < 15, "partitions not handed over after the leave"
        end = time.monotonic() + 1.5
        while time.monotonic() < end:
            m = c.poll(0.1)
            assert m is None or m.error(), f"{m.partition()}:{m.value()} read again"
    finally:
        console.kill()
        c.close()


def test_perf_consumer_group_commits_and_leaves(broker):
    """kafka-consumer-perf-test.sh --group: consumes as a member, commits, leaves; the next run
    in the group finds nothing left."""
    topic = create_topic(broker.bootstrap, unique_topic("cg-perf"), partitions=2)
    group = unique_topic("cg-perf-group")
    produce_each(broker.bootstrap, topic, 2, 500)
    def perf(*args):
        return subprocess.run([BROKER_PYTHON, "-m", "josefk", "perf-consumer", "--bootstrap-server",
                               broker.bootstrap, "--topic", topic, "--group", group, *args],
                              cwd=str(REPO_ROOT), capture_output=True, text=True, timeout=60)
    out = perf("--messages", "1000")
    assert out.returncode == 0, out.stderr
    row = out.stdout.splitlines()[1].split(", ")
    assert row[4] == "1000" and int(row[6]) >= 0 and int(row[7]) >= 0
    wait_group_state(admin_client(broker.bootstrap), group, ConsumerGroupState.EMPTY)
    out = josefk_cli(broker, "groups", "describe", "--group", group).stdout
    rows = [line.split() for line in out.splitlines() if line.startswith(group)]
    assert sorted((int(r[2]), r[3], r[5]) for r in rows) == [(0, "500", "0"), (1, "500", "0")]
    again = perf("--messages", "1", "--timeout", "1500")
    assert again.returncode == 1 and again.stdout.splitlines()[1].split(", ")[4] == "0"


def test_kafka_python_leader_assigns_the_console_consumer(broker):
    """A kafka-python consumer that leads the group reads the console consumer's Subscription
    and sends it a ConsumerProtocolAssignment it consumes by."""
    from kafka import KafkaConsumer

    topic = create_topic(broker.bootstrap, unique_topic("cg-kp"), partitions=4)
    group = unique_topic("cg-kp-group")
    admin = admin_client(broker.bootstrap)
    kp = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=group, client_id="kp-member",
                       auto_offset_reset="earliest", session_timeout_ms=10000,
                       heartbeat_interval_ms=300, fetch_max_wait_ms=100, request_timeout_ms=15000)
    console = None
    try:
        kp.subscribe([topic])
        deadline = time.monotonic() + 30
        while len(kp.assignment()) != 4:  # alone, and so the leader
            kp.poll(100)
            assert time.monotonic() < deadline, kp.assignment()
        console = ConsoleConsumer(broker, topic, group, "--from-beginning")
        mine, theirs = shared(admin, group, "kp-member", lambda: kp.poll(100),
                              lambda: {tp.partition for tp in kp.assignment()})
        assert len(mine) == 2 and theirs == {0, 1, 2, 3} - mine
        sent = produce_each(broker.bootstrap, topic, 4, 5)
        deadline = time.monotonic() + 30
        while len(console.lines) < 10:
            kp.poll(100)
            assert time.monotonic() < deadline, console.lines
        assert set(console.lines) == {(p, v) for p, v in sent if p in theirs}
        console.proc.send_signal(signal.SIGINT)
        console.wait()
    finally:
        if console is not None:
            console.kill()
        kp.close()
