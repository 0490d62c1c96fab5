"""Many partitions and many connections (issue 12 point 4), with real clients:

- 2,000 idle connections cost the broker no CPU while idle, and it serves a client meanwhile;
  the broker raises its soft open-file limit itself (started here with a soft limit of 1,024);
- Metadata for thousands of partitions asked in a loop on one connection does not stall
  another connection's ApiVersions and Produce round trips;
- one group of 4 kafka-python consumers (fetch sessions) subscribed to 10 topics x 100
  partitions reads every record exactly once.
"""
from __future__ import annotations

import os
import resource
import statistics
import threading
import time

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import ConsumerRebalanceListener, KafkaConsumer

from compat_tests import rawkafka as rk
from compat_tests.helpers import flush_all, producer, unique_topic

pytestmark = pytest.mark.timeout(240)

CLK_TCK = os.sysconf("SC_CLK_TCK")
FDS_PER_PARTITION = 3  # the broker keeps a partition's .log, .index and .timeindex open
CONNECTIONS = 2000


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process (all threads), from /proc/<pid>/stat."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def soft_nofile(pid: int) -> int:
    with open(f"/proc/{pid}/limits") as f:
        for line in f:
            if line.startswith("Max open files"):
                return int(line.split()[3])
    raise AssertionError("no open-file limit in /proc/<pid>/limits")


def raise_own_nofile(need: int) -> None:
    """This test process holds one socket per connection: soft limit up to the hard one."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    assert hard >= need, f"the hard open-file limit ({hard}) is below the {need} this test needs"


def low_soft_limit():
    """In the broker's child process before exec: a soft limit of 1,024, as many systems have."""
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(1024, hard), hard))


def create_topics(bootstrap: str, names, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for i in range(0, len(names), 10):
        futures = admin.create_topics([NewTopic(n, partitions, 1) for n in names[i:i + 10]],
                                      operation_timeout=60, request_timeout=60)
        for f in futures.values():
            f.result(timeout=60)


# -- idle connections ------------------------------------------------------------------------------

def test_idle_connections_cost_no_cpu(broker_factory):
    raise_own_nofile(CONNECTIONS + 200)
    b = broker_factory(preexec_fn=low_soft_limit)
    assert soft_nofile(b.proc.pid) == resource.getrlimit(resource.RLIMIT_NOFILE)[1], \
        "the broker did not raise its soft open-file limit to the hard limit"
    conns = []
    try:
        for _ in range(CONNECTIONS):
            c = rk.RawConnection(b.bootstrap, timeout=20)
            conns.append(c)
            assert 18 in rk.api_versions(c)
        time.sleep(1.0)  # whatever the connections set off is over
        pid = b.proc.pid
        t0, cpu0 = time.monotonic(), cpu_seconds(pid)
        time.sleep(5.0)
        busy = (cpu_seconds(pid) - cpu0) / (time.monotonic() - t0)
        print(f"broker CPU with {CONNECTIONS} idle connections: {busy * 100:.2f}% of one core")
        assert busy < 0.02, f"{CONNECTIONS} idle connections cost {busy * 100:.1f}% of a core"

        # A normal client is served meanwhile, and every idle connection is still open.
        topic = unique_topic("idle")
        create_topics(b.bootstrap, [topic], 1)
        p = producer(b.bootstrap)
        p.produce(topic, b"served")
        flush_all(p)
        with rk.RawConnection(b.bootstrap) as c:
            got = rk.fetch(c, 4, topic, 0, 0, max_wait_ms=0)["partitions"][(topic, 0)]
            assert b"served" in got["records"]
        for c in conns:
            assert 18 in rk.api_versions(c)
    finally:
        for c in conns:
            c.close()


# -- Metadata for many partitions ------------------------------------------------------------------

def metadata_partitions(limit: int) -> int:
    """10,000 partitions, or as many as the broker can keep open under this machine's hard
    open-file limit (eagerly opened segment files), in whole topics of 100."""
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    fits = (hard - 1024) // FDS_PER_PARTITION
    return min(limit, fits // 100 * 100)


@pytest.fixture(scope="module")
def many_partitions(tmp_path_factory):
    from josefk.faults.processes import BrokerProcess
    from compat_tests.conftest import BASE_OVERRIDES

    root = tmp_path_factory.mktemp("many-partitions")
    b = BrokerProcess(data_dir=root / "data", log_dir=root,
                      overrides={**BASE_OVERRIDES, "max.broker.partitions": 20000})
    b.start()
    total = metadata_partitions(10000)
    names = [f"many-{i}" for i in range(total // 100)]
    create_topics(b.bootstrap, names, 100)
    yield b, names
    b.stop()


def test_metadata_of_many_partitions_does_not_stall_others(many_partitions):
    b, names = many_partitions
    with rk.RawConnection(b.bootstrap, timeout=30) as c:
        md = rk.metadata_v9(c, None)
    listed = sum(len(md["topics"][n]["partitions"]) for n in names)
    assert listed == 100 * len(names) >= 5000

    stop = threading.Event()
    metadata_ms = []
    errors = []

    def ask_metadata():
        try:
            with rk.RawConnection(b.bootstrap, timeout=30) as c:
                deadline = time.monotonic() + 30
                while not stop.is_set() and time.monotonic() < deadline:
                    t = time.perf_counter()
                    c.send(rk.metadata_v9_request(c.next_corr(), None))
                    c.recv_frame()
                    metadata_ms.append((time.perf_counter() - t) * 1000)
        except Exception as e:  # noqa: BLE001 - reported by the test
            errors.append(e)

    topic = unique_topic("rtt")
    create_topics(b.bootstrap, [topic], 1)
    batch = rk.record_batch([(None, b"x" * 100)], int(time.time() * 1000))
    asker = threading.Thread(target=ask_metadata, daemon=True)
    rtt = {"ApiVersions": [], "Produce": []}
    with rk.RawConnection(b.bootstrap, timeout=10) as c:
        asker.start()
        try:
            while len(metadata_ms) < 3 and asker.is_alive():
                time.sleep(0.01)
            for _ in range(300):
                t = time.perf_counter()
                rk.api_versions(c)
                rtt["ApiVersions"].append((time.perf_counter() - t) * 1000)
                t = time.perf_counter()
                assert rk.produce_v9(c, topic, 0, batch)[(topic, 0)]["error_code"] == 0
                rtt["Produce"].append((time.perf_counter() - t) * 1000)
        finally:
            stop.set()
            asker.join(35)
    assert not errors, errors
    answered = len(metadata_ms)
    assert answered >= 10, f"only {answered} Metadata answers during the measurement"
    print(f"Metadata of {listed} partitions: median {statistics.median(metadata_ms):.2f} ms, "
          f"{answered} answers")
    for name, ms in rtt.items():
        ms.sort()
        p99 = ms[int(len(ms) * 0.99) - 1]
        print(f"{name} round trip meanwhile: median {statistics.median(ms):.2f} ms, "
              f"p99 {p99:.2f} ms, max {ms[-1]:.2f} ms")
        assert p99 < 50, f"{name} p99 {p99:.1f} ms while Metadata of {listed} partitions ran"


# -- a group of 4 consumers over 1,000 partitions --------------------------------------------------

class Member(ConsumerRebalanceListener):
    def __init__(self, bootstrap, group, topics, name):
        self.rebalances = 0
        self.seen = []
        self.c = KafkaConsumer(
            bootstrap_servers=bootstrap, group_id=group, client_id=name,
            enable_auto_commit=False, auto_offset_reset="earliest", session_timeout_ms=30000,
            heartbeat_interval_ms=1000, fetch_max_wait_ms=100, request_timeout_ms=40000,
            max_poll_records=5000)
        self.c.subscribe(topics, listener=self)

    def on_partitions_revoked(self, revoked):
        self.rebalances += 1

    def on_partitions_assigned(self, assigned):
        pass

    def assignment(self):
        return {(tp.topic, tp.partition) for tp in self.c.assignment()}

    def poll(self):
        # 500 ms: see Member.poll in test_groups_kafka_python.py (kafka-python loses a rejoin
        # its metadata change started if poll() returns mid-join).
        for tp, recs in self.c.poll(timeout_ms=500).items():
            self.seen.extend((tp.topic, tp.partition, r.offset, r.value) for r in recs)


def test_group_of_four_reads_1000_partitions_exactly_once(many_partitions):
    b, names = many_partitions
    topics = names[:10]
    everything = {(t, p) for t in topics for p in range(100)}
    group = unique_topic("g1000")
    members = [Member(b.bootstrap, group, topics, f"m{i}") for i in range(4)]
    try:
        # Settle first (empty topics), so no record is read before a rebalance moves it.
        deadline = time.monotonic() + 90
        while True:
            for m in members:
                m.poll()
            held = [m.assignment() for m in members]
            if all(held) and sum(map(len, held)) == 1000 and set().union(*held) == everything:
                break
            assert time.monotonic() < deadline, f"group did not settle: {list(map(len, held))}"
        per_partition = 10
        p = producer(b.bootstrap, linger_ms=5)
        for t in topics:
            for part in range(100):
                for i in range(per_partition):
                    p.produce(t, f"{t}/{part}/{i}".encode(), partition=part)
        flush_all(p, 60)
        want = len(everything) * per_partition
        rebalances = [m.rebalances for m in members]
        deadline = time.monotonic() + 90
        while sum(len(m.seen) for m in members) < want and time.monotonic() < deadline:
            for m in members:
                m.poll()
        for m in members:  # nothing more arrives
            m.poll()
        assert [m.rebalances for m in members] == rebalances, "the group rebalanced meanwhile"
        seen = [s for m in members for s in m.seen]
        assert len(seen) == want, f"{len(seen)} records read, {want} produced"
        assert len(set(seen)) == want, "some record was read twice"
        assert {s[3] for s in seen} == {f"{t}/{part}/{i}".encode() for t, part in everything
                                         for i in range(per_partition)}
        for m in members:  # each member read only its own partitions
            assert {(s[0], s[1]) for s in m.seen} <= m.assignment()
    finally:
        for m in members:
            m.c.close(autocommit=False)
