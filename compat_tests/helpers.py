"""Small helpers around the real clients (no mocking: these only drive them)."""

from __future__ import annotations

import re
import subprocess
import time
import uuid

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from josefk.faults.processes import BROKER_PYTHON, REPO_ROOT


def unique_topic(prefix: str = "t") -> str:
    prefix = re.sub(r"[^A-Za-z0-9._-]+", "-", prefix).strip("-.")[:80] or "t"
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def admin_client(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": 10000})


def wait_for_topic(admin: AdminClient, name: str, partitions: int | None = None,
                   timeout: float = 15.0):
    """Wait until metadata shows `name` with every partition led; return its TopicMetadata."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            md = admin.list_topics(timeout=5)
        except KafkaException as e:
            last = e
            time.sleep(0.2)
            continue
        t = md.topics.get(name)
        last = t
        if t is not None and t.error is None and t.partitions:
            if (partitions is None or len(t.partitions) == partitions) and all(
                p.leader >= 0 for p in t.partitions.values()
            ):
                return t
        time.sleep(0.2)
    raise AssertionError(f"topic {name!r} not ready within {timeout}s: last metadata {last!r}")


def wait_for_topic_gone(admin: AdminClient, name: str, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if name not in admin.list_topics(timeout=5).topics:
            return
        time.sleep(0.2)
    raise AssertionError(f"topic {name!r} still listed {timeout}s after deletion")


def create_topic(bootstrap: str, name: str, partitions: int = 1,
                 config: dict | None = None, timeout: float = 15.0,
                 replication_factor: int = 1) -> str:
    admin = admin_client(bootstrap)
    futures = admin.create_topics(
        [NewTopic(name, num_partitions=partitions, replication_factor=replication_factor,
                  config=config or {})],
        operation_timeout=10, request_timeout=15,
    )
    futures[name].result(timeout)
    wait_for_topic(admin, name, partitions, timeout)
    return name


def producer(bootstrap: str, **conf) -> Producer:
    base = {"bootstrap.servers": bootstrap, "message.timeout.ms": 15000,
            "socket.timeout.ms": 10000}
    base.update({k.replace("_", "."): v for k, v in conf.items()})
    return Producer(base)


def consumer(bootstrap: str, **conf) -> Consumer:
    """A consumer meant for assign(): confluent-kafka insists on a group.id,
    but nothing is committed and offsets are always given explicitly."""
    base = {
        "bootstrap.servers": bootstrap,
        "group.id": "compat-" + uuid.uuid4().hex[:8],
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "enable.partition.eof": False,
        "auto.offset.reset": "error",
        "socket.timeout.ms": 10000,
        "fetch.wait.max.ms": 100,
    }
    base.update({k.replace("_", "."): v for k, v in conf.items()})
    return Consumer(base)


class DeliveryLog:
    """on_delivery callback that records results in produce order."""

    def __init__(self):
        self.ok = []      # (partition, offset, key, value)
        self.errors = []  # (KafkaError, key, value)

    def __call__(self, err, msg):
        if err is not None:
            self.errors.append((err, msg.key(), msg.value()))
        else:
            self.ok.append((msg.partition(), msg.offset(), msg.key(), msg.value()))


def flush_all(p: Producer, timeout: float = 20.0) -> None:
    remaining = p.flush(timeout)
    assert remaining == 0, f"{remaining} message(s) still undelivered after {timeout}s"


def consume_n(c: Consumer, n: int, timeout: float = 20.0) -> list:
    """Poll until `n` messages arrived; fail (listing what came) on timeout or on an error."""
    msgs = []
    deadline = time.monotonic() + timeout
    while len(msgs) < n and time.monotonic() < deadline:
        m = c.poll(0.2)
        if m is None:
            continue
        if m.error():
            if m.error().code() == KafkaError._PARTITION_EOF:
                continue
            raise AssertionError(f"consumer error after {len(msgs)} message(s): {m.error()!r}")
        msgs.append(m)
    if len(msgs) < n:
        got = [(m.partition(), m.offset()) for m in msgs][:20]
        raise AssertionError(f"consumed {len(msgs)}/{n} messages within {timeout}s; first: {got}")
    return msgs


def assert_no_more(c: Consumer, seconds: float = 1.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        m = c.poll(0.1)
        if m is None:
            continue
        if m.error():
            if m.error().code() == KafkaError._PARTITION_EOF:
                continue
            raise AssertionError(f"unexpected consumer error: {m.error()!r}")
        raise AssertionError(
            f"unexpected extra message p{m.partition()}@{m.offset()} key={m.key()!r} value={m.value()!r}"
        )


def read_exactly(bootstrap: str, assignment: list, n: int, timeout: float = 20.0,
                 quiet: float = 0.5) -> list:
    """Assign `assignment` (TopicPartitions with start offsets), read exactly n messages,
    check nothing more follows for `quiet` seconds, return them."""
    c = consumer(bootstrap)
    try:
        c.assign(assignment)
        msgs = consume_n(c, n, timeout)
        assert_no_more(c, quiet)
        return msgs
    finally:
        c.close()


def read_partition(bootstrap: str, topic: str, partition: int, n: int,
                   start=None, timeout: float = 20.0) -> list:
    """Read exactly n messages of one partition from `start` (default: beginning)."""
    from confluent_kafka import OFFSET_BEGINNING

    start = OFFSET_BEGINNING if start is None else start
    return read_exactly(bootstrap, [TopicPartition(topic, partition, start)], n, timeout)


def read_from_beginning(bootstrap: str, topic: str, partitions: int, n: int,
                        timeout: float = 20.0, quiet: float = 0.5) -> list:
    """Read exactly n messages from the beginning of partitions 0..partitions-1."""
    from confluent_kafka import OFFSET_BEGINNING

    return read_exactly(bootstrap, [TopicPartition(topic, p, OFFSET_BEGINNING)
                                    for p in range(partitions)], n, timeout, quiet)


def produce_plain(bootstrap, topic, values, partition=0, acks="all"):
    """Produce ``values`` to one partition; the DeliveryLog of their acknowledgements."""
    p = producer(bootstrap, acks=acks)
    log = DeliveryLog()
    for v in values:
        p.produce(topic, value=v, partition=partition, on_delivery=log)
    flush_all(p)
    assert log.errors == []
    return log


def roundtrip_check(bootstrap: str, topic: str, timeout: float = 20.0) -> None:
    """A fresh producer and consumer (new connections) can still produce and consume."""
    marker = uuid.uuid4().hex.encode()
    p = producer(bootstrap, acks="all")
    log = DeliveryLog()
    p.produce(topic, key=b"health", value=marker, partition=0, on_delivery=log)
    flush_all(p, timeout)
    assert not log.errors, f"health produce failed: {log.errors}"
    (part, offset, _, _), = log.ok
    c = consumer(bootstrap)
    try:
        c.assign([TopicPartition(topic, 0, offset)])
        (m,) = consume_n(c, 1, timeout)
        assert (m.offset(), m.key(), m.value()) == (offset, b"health", marker)
    finally:
        c.close()


# ------------------------------------------------------------------ consumer groups
# Shared by the scenarios of compat_tests/groups/: confluent-kafka consumers that subscribe()
# through the broker's group coordinator.  Each member polls in its own thread, as applications do:
# polling several members round-robin from one thread can deadlock the test itself (a
# synchronous commit queued behind the member's own JoinGroup waits for the other members
# to rejoin, which they cannot do while nobody polls them).

# Commits a careful application makes again: the classic group is rebalancing, or (KIP-848) its
# member epoch moved on while the commit was on its way.
RETRIED_COMMIT_ERRORS = (KafkaError.REBALANCE_IN_PROGRESS, KafkaError.STALE_MEMBER_EPOCH)


def produce_values(bootstrap: str, topic: str, partitions: int, start: int, n: int,
                   tag: str = "m") -> dict:
    """Produce values f"{tag}{i}" for i in [start, start+n) to partition i % partitions.
    Returns {(partition, offset): value} for every acknowledged message."""
    p = producer(bootstrap, acks="all", **{"linger.ms": 2})
    log = DeliveryLog()
    for i in range(start, start + n):
        p.produce(topic, value=f"{tag}{i}".encode(), partition=i % partitions, on_delivery=log)
        p.poll(0)
    flush_all(p)
    assert log.errors == [], log.errors
    assert len(log.ok) == n
    return {(pt, off): v for pt, off, _k, v in log.ok}


class GroupMember:
    """A confluent-kafka Consumer in a group (subscribe), polled by its own thread, recording
    its rebalance callbacks and the messages it got.

    `commit_each`: commit every message synchronously (a commit refused with
    REBALANCE_IN_PROGRESS, or STALE_MEMBER_EPOCH under the consumer group protocol, is retried,
    and pending commits are made on revocation, as a careful application does).
    `tolerate_errors`: record consumer errors in `errors` instead of failing.  Other keyword
    arguments are Kafka properties, dotted; with ``group.protocol=consumer`` (KIP-848) the
    session and heartbeat settings are the broker's."""

    def __init__(self, bootstrap: str, group: str, topics, name: str = "member",
                 commit_each: bool = False, tolerate_errors: bool = False, **conf):
        import threading

        self.name = name
        self.group = group
        self.commit_each = commit_each
        self.tolerate_errors = tolerate_errors
        self.errors = []          # consumer errors (tolerate_errors)
        self.failure = None       # what stopped the polling thread
        self.events = []          # (monotonic time, "assign"|"revoke"|"lost", sorted [(t, p)])
        self.messages = []        # confluent Message objects, in poll order
        self.received_at = []     # monotonic time each of them was polled
        self.commit_errors = []   # (partition, offset, KafkaError) of commits given up
        self.commit_retries = []  # (partition, offset, KafkaError) of commits retried later
        self.pending = {}         # (topic, partition) -> next offset, not yet committed
        self._assignment = frozenset()
        base = {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "client.id": name,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "enable.partition.eof": False,
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 300,
            "fetch.wait.max.ms": 100,
            "socket.timeout.ms": 10000,
        }
        base.update(conf)
        if base.get("group.protocol") == "consumer":
            del base["session.timeout.ms"], base["heartbeat.interval.ms"]
        self.conf = base
        self.c = Consumer(base)
        self.closed = False
        self.c.subscribe(list(topics), on_assign=self._on_assign, on_revoke=self._on_revoke,
                         on_lost=self._on_lost)
        self._stop = threading.Event()
        self._calls = []  # (fn, concurrent.futures.Future) to run on the polling thread
        self._thread = threading.Thread(target=self._run, name=f"member-{name}", daemon=True)
        self._thread.start()

    # -------------------------------------------------------- polling thread
    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                self._run_calls()
                self._poll_once(0.05)
            self._run_calls()
        except BaseException as e:  # noqa: BLE001 - reported by poll_until / check()
            self.failure = e

    def _run_calls(self) -> None:
        while self._calls:
            fn, fut = self._calls.pop(0)
            try:
                fut.set_result(fn(self.c))
            except BaseException as e:  # noqa: BLE001 - handed to the caller
                fut.set_exception(e)

    def call(self, fn, timeout: float = 30.0):
        """Run fn(consumer) on the polling thread (librdkafka calls such as a synchronous
        commit are not made from a second thread while another one polls) and return its
        result, or raise what it raised."""
        from concurrent.futures import Future

        if self.closed:
            return fn(self.c)
        fut = Future()
        self._calls.append((fn, fut))
        return fut.result(timeout)

    @staticmethod
    def _tps(partitions):
        return sorted((tp.topic, tp.partition) for tp in partitions)

    def _snapshot(self) -> None:
        self._assignment = frozenset((tp.topic, tp.partition) for tp in self.c.assignment())

    def _on_assign(self, _c, partitions):
        self.events.append((time.monotonic(), "assign", self._tps(partitions)))

    def _on_revoke(self, _c, partitions):
        self.events.append((time.monotonic(), "revoke", self._tps(partitions)))
        self._commit_pending(final=True, only=set(self._tps(partitions)))

    def _on_lost(self, _c, partitions):
        self.events.append((time.monotonic(), "lost", self._tps(partitions)))
        for tp in self._tps(partitions):
            self.pending.pop(tp, None)

    def _commit_pending(self, final: bool = False, only=None) -> None:
        """Commit self.pending synchronously.  A commit refused with REBALANCE_IN_PROGRESS
        (Kafka's answer while the group is CompletingRebalance) stays pending and is retried
        on the next poll or on revocation; any other error, or a final attempt, gives up."""
        todo = {tp: o for tp, o in self.pending.items() if only is None or tp in only}
        if not todo:
            return
        offsets = [TopicPartition(t, p, o) for (t, p), o in sorted(todo.items())]
        try:
            res = self.c.commit(offsets=offsets, asynchronous=False)
            failed = [(tp, tp.error) for tp in res if tp.error is not None]
        except KafkaException as e:
            failed = [(tp, e.args[0]) for tp in offsets]
        bad = {(tp.topic, tp.partition) for tp, _ in failed}
        for tp in todo:
            if tp not in bad:
                self.pending.pop(tp, None)
        for tp, err in failed:
            if err.code() in RETRIED_COMMIT_ERRORS and not final:
                self.commit_retries.append((tp.partition, tp.offset, err))
            else:
                self.commit_errors.append((tp.partition, tp.offset, err))
                self.pending.pop((tp.topic, tp.partition), None)

    def _poll_once(self, timeout: float):
        if self.pending:
            self._commit_pending()
        m = self.c.poll(timeout)
        self._snapshot()
        if m is None:
            return None
        if m.error():
            if m.error().code() == KafkaError._PARTITION_EOF:
                return None
            if self.tolerate_errors:
                self.errors.append(m.error())
                return None
            raise AssertionError(f"{self.name}: consumer error {m.error()!r}")
        self.messages.append(m)
        self.received_at.append(time.monotonic())
        if self.commit_each:
            self.pending[(m.topic(), m.partition())] = m.offset() + 1
            self._commit_pending()
        return m

    # ------------------------------------------------------------ test side
    def check(self) -> None:
        if self.failure is not None:
            raise AssertionError(f"{self.name}: polling stopped: {self.failure!r}")

    def assignment(self) -> set:
        """The partitions assigned as of the last poll (empty once closed)."""
        return set() if self.closed else set(self._assignment)

    def positions(self) -> set:
        """{(partition, offset)} of every message this member got."""
        return {(m.partition(), m.offset()) for m in self.messages}

    def close(self) -> None:
        """Stop polling, commit what is pending, close (LeaveGroup unless static)."""
        if self.closed:
            return
        self._stop.set()
        self._thread.join(30)
        self.closed = True
        if self.pending:
            self._commit_pending(final=True)
        self.c.close()


def poll_until(members, predicate, timeout: float, what: str = "condition") -> float:
    """Wait (the members poll in their threads) until predicate() holds; return the seconds
    it took.  Fails at once if a member's polling thread failed."""
    start = time.monotonic()
    deadline = start + timeout
    while True:
        for m in members:
            m.check()
        if predicate():
            return time.monotonic() - start
        if time.monotonic() >= deadline:
            state = {m.name: sorted(m.assignment()) for m in members if not m.closed}
            raise AssertionError(f"{what} not reached within {timeout}s; assignments: {state}; "
                                 f"events: {[(m.name, [e[1:] for e in m.events]) for m in members]}")
        time.sleep(0.02)


def settle(members, seconds: float = 1.0) -> None:
    """Let the members poll a while longer (e.g. for duplicates to show up)."""
    time.sleep(seconds)
    for m in members:
        m.check()


def balanced(members, partitions: set) -> bool:
    """Every open member owns a share of `partitions` (sizes differ by at most one, none
    empty), the shares are disjoint and together cover all of `partitions`."""
    live = [m for m in members if not m.closed]
    shares = [m.assignment() for m in live]
    union = set().union(*shares) if shares else set()
    sizes = [len(s) for s in shares]
    return (bool(shares) and union == partitions and sum(sizes) == len(partitions)
            and min(sizes) > 0 and max(sizes) - min(sizes) <= 1)


def close_all(members) -> None:
    for m in members:
        try:
            m.close()
        except Exception:  # noqa: BLE001 - best effort in teardown
            pass


def wait_group_state(admin: AdminClient, group: str, state, timeout: float = 15.0):
    """Describe `group` until its state is `state` (a ConsumerGroupState); return the
    description.  A member's close() does not wait for its LeaveGroup to be answered."""
    deadline = time.monotonic() + timeout
    while True:
        d = admin.describe_consumer_groups([group], request_timeout=10)[group].result(15)
        if d.state == state:
            return d
        if time.monotonic() >= deadline:
            raise AssertionError(f"group {group} is {d.state}, not {state}, after {timeout}s")
        time.sleep(0.1)


def josefk_cli(broker, *args, check=True) -> subprocess.CompletedProcess:
    """Run ``python -m josefk ARGS... --bootstrap-server B`` against ``broker``; with ``check``,
    fail the test unless it exits 0."""
    proc = subprocess.run(
        [BROKER_PYTHON, "-m", "josefk", *args, "--bootstrap-server", broker.bootstrap],
        cwd=str(REPO_ROOT), capture_output=True, text=True, timeout=30,
    )
    if check:
        assert proc.returncode == 0, (
            f"{' '.join(args)} exited {proc.returncode}\n"
            f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
        )
    return proc


def scrape(port: int) -> dict:
    """{(sample name, frozenset(labels)): value} of one scrape of the broker's Prometheus
    endpoint (``josefk.metrics.port``)."""
    import urllib.request

    from prometheus_client.parser import text_string_to_metric_families
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        assert r.status == 200
        text = r.read().decode()
    return {(s.name, frozenset(s.labels.items())): s.value
            for fam in text_string_to_metric_families(text) for s in fam.samples}


def requests_by_version(*metrics_ports: int) -> dict[tuple[str, int], int]:
    """{(request name, version): requests served} (``kafka_network_requestmetrics_requestspersec``
    by request and version), summed over the brokers serving metrics on ``metrics_ports``."""
    out: dict[tuple[str, int], int] = {}
    for port in metrics_ports:
        for (name, labels), v in scrape(port).items():
            if name == "kafka_network_requestmetrics_requestspersec_total":
                labels = dict(labels)
                key = labels["request"], int(labels["version"])
                out[key] = out.get(key, 0) + v
    return out


def versions_sent(before: dict, *metrics_ports: int) -> dict[str, list[int]]:
    """{request name: [versions]} served since ``before`` (a ``requests_by_version`` result of
    the same ports)."""
    out: dict[str, list[int]] = {}
    for (name, v), n in sorted(requests_by_version(*metrics_ports).items()):
        if n > before.get((name, v), 0):
            out.setdefault(name, []).append(v)
    return out
