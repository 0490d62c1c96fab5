"""Cluster figures: ``python -m bench.cluster`` (a benchmark, not a test).

Against a 3-broker josefk cluster on this machine (a real ZooKeeper, brokers on 127.0.0.1):
- start-up: from ``josefk cluster --brokers 3`` to the first acknowledged produce;
- topic creation latency (100 topics of 3 partitions, RF 3, one CreateTopics each);
- Metadata requests per second from one client;
- produce throughput of 1 KiB records, RF 3 acks=all next to RF 1 acks=1 (rounds alternate);
- end-to-end latency p50/p99 with RF 3 acks=all;
- failover: from kill -9 (and from SIGTERM) of a partition's leader to the first acks=all
  produce acknowledged on that partition.
Every loop is bounded in count and in time.
"""
from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from bench.brokers import free_port, port_accepts
from josefk.tools.client import Client
from josefk.tools.cluster_cli import broker_command
from josefk.wire.apis import METADATA
from josefk.zk.local_server import LocalZooKeeper

now = time.monotonic
REPO = Path(__file__).resolve().parent.parent


def pct(values, q):
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))] if s else float("nan")


class BenchCluster:
    """ZooKeeper plus brokers started the way `josefk cluster` starts them, with their PIDs."""

    def __init__(self, root: Path, size=3, session_timeout_ms=6000):
        self.root = root
        self.zk = LocalZooKeeper(root / "zk", fsync=False)
        self.size = size
        self.ports = {i: free_port() for i in range(1, size + 1)}
        self.procs: dict[int, subprocess.Popen] = {}
        self.overrides = [f"zookeeper.session.timeout.ms={session_timeout_ms}",
                          "default.replication.factor=3", "offsets.topic.replication.factor=3",
                          "offsets.topic.num.partitions=6", "controlled.shutdown.retry.backoff.ms=200",
                          "auto.leader.rebalance.enable=false", "log.flush.interval.messages=9223372036854775807"]

    @property
    def bootstrap(self):
        return ",".join(f"127.0.0.1:{p}" for i, p in self.ports.items()
                        if i in self.procs and self.procs[i].poll() is None)

    def start(self):
        self.zk.start()
        for i in self.ports:
            self.start_broker(i)
        wait(lambda: len(AdminClient({"bootstrap.servers": self.bootstrap})
                         .list_topics(timeout=5).brokers) == self.size, 60, "brokers")

    def start_broker(self, i):
        d = self.root / f"broker-{i}"
        d.mkdir(exist_ok=True)
        log = open(d / "broker.log", "ab")
        self.procs[i] = subprocess.Popen(
            broker_command(i, self.ports[i], d / "data", self.zk.connect_string + "/josefk",
                           self.overrides), stdout=log, stderr=log, cwd=REPO,
            env={**os.environ, "PYTHONPATH": str(REPO)}, start_new_session=True)
        wait(lambda: port_accepts(self.ports[i]), 30, f"broker {i} port")

    def stop(self):
        for p in self.procs.values():
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.procs.values():
            try:
                p.wait(60)
            except subprocess.TimeoutExpired:
                p.kill()
        self.zk.stop()


def wait(predicate, timeout, what):
    deadline = now() + timeout
    while now() < deadline:
        try:
            if predicate():
                return
        except Exception:  # noqa: BLE001 - still starting
            pass
        time.sleep(0.05)
    raise RuntimeError(f"timed out waiting for {what}")


def create_topic(bootstrap, name, partitions, rf):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, rf)], operation_timeout=30)[name].result(30)


def startup_time(root: Path) -> float:
    """`josefk cluster --brokers 3` to the first acknowledged produce."""
    port, zk_port = free_port(), free_port()
    t0 = now()
    proc = subprocess.Popen([sys.executable, "-m", "josefk", "cluster", "--brokers", "3",
                             "--dir", str(root / "cli-cluster"), "--port", str(port),
                             "--zookeeper-port", str(zk_port)], cwd=REPO,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        wait(lambda: port_accepts(port), 60, "first broker")
        delivered = []
        p = Producer({"bootstrap.servers": f"127.0.0.1:{port}", "acks": "all",
                      "message.timeout.ms": 60000})
        p.produce("startup-probe", b"x", on_delivery=lambda e, m: delivered.append(e))
        deadline = now() + 60
        while not delivered and now() < deadline:
            p.poll(0.05)
        if not delivered or delivered[0] is not None:
            raise RuntimeError(f"first produce failed: {delivered}")
        return now() - t0
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(90)
        except subprocess.TimeoutExpired:
            proc.kill()


def topic_creation(c: BenchCluster, n=100) -> dict:
    admin = AdminClient({"bootstrap.servers": c.bootstrap})
    lat = []
    t0 = now()
    for i in range(n):
        name = f"create-{uuid.uuid4().hex[:8]}-{i}"
        s = now()
        admin.create_topics([NewTopic(name, 3, 3)], operation_timeout=30)[name].result(30)
        lat.append((now() - s) * 1000)
    return {"topics": n, "total_s": now() - t0, "p50_ms": pct(lat, 0.5), "p99_ms": pct(lat, 0.99)}


def metadata_rate(c: BenchCluster, seconds=5.0) -> dict:
    out = {}
    with Client(f"127.0.0.1:{c.ports[1]}") as client:
        for label, topics in (("all topics", None), ("one topic", ["bench-one"])):
            req = [METADATA.Request.MetadataRequestTopic(name=t) for t in topics] if topics \
                else None
            n, t0 = 0, now()
            while now() - t0 < seconds and n < 1_000_000:
                client.request(METADATA, topics=req, allow_auto_topic_creation=False)
                n += 1
            out[label] = n / (now() - t0)
    return out


def produce_rate(bootstrap, topic, acks, count=100_000, seconds=30.0) -> float:
    p = Producer({"bootstrap.servers": bootstrap, "acks": acks, "linger.ms": 5,
                  "batch.size": 1_000_000, "queue.buffering.max.messages": 500_000})
    value = b"x" * 1024
    done = [0]

    def cb(err, _msg):
        if err is None:
            done[0] += 1
    t0 = now()
    sent = 0
    while sent < count and now() - t0 < seconds:
        try:
            p.produce(topic, value, partition=sent % 8, on_delivery=cb)
            sent += 1
        except BufferError:
            p.poll(0.01)
    p.flush(60)
    return done[0] / (now() - t0)


def latency(bootstrap, topic, n=2000, seconds=30.0) -> tuple[float, float]:
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0})
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": uuid.uuid4().hex,
                  "fetch.wait.max.ms": 100, "enable.auto.commit": False})
    c.assign([TopicPartition(topic, 0, 0)])
    lat = []
    t_end = now() + seconds
    while len(lat) < n and now() < t_end:
        s = time.perf_counter()
        p.produce(topic, str(s).encode(), partition=0)
        p.poll(0)
        while now() < t_end:
            m = c.poll(1.0)
            if m is not None and not m.error() and m.value() == str(s).encode():
                lat.append((time.perf_counter() - s) * 1000)
                break
    c.close()
    return pct(lat, 0.5), pct(lat, 0.99)


def failover(c: BenchCluster, topic, sig) -> tuple[float, float]:
    """Seconds from the signal to a new leader in a surviving broker's metadata, and to the
    first acks=all produce acknowledged on partition 0."""
    admin = AdminClient({"bootstrap.servers": c.bootstrap})
    leader = admin.list_topics(topic, timeout=10).topics[topic].partitions[0].leader
    survivor = AdminClient({"bootstrap.servers": f"127.0.0.1:{c.ports[leader % c.size + 1]}"})
    moved = []
    p = Producer({"bootstrap.servers": c.bootstrap, "acks": "all", "linger.ms": 0,
                  "message.timeout.ms": 60000, "retry.backoff.ms": 20,
                  "topic.metadata.refresh.fast.interval.ms": 50})
    ok = []
    p.produce(topic, b"warm", partition=0)
    p.flush(20)
    t0 = now()
    if sig == signal.SIGKILL:
        c.procs[leader].kill()
    else:
        c.procs[leader].send_signal(sig)
    while not (ok and moved) and now() - t0 < 60:
        if not ok:
            p.produce(topic, b"probe", partition=0,
                      on_delivery=lambda e, m: e is None and ok.append(now()))
        p.poll(0.02)
        if not moved and survivor.list_topics(topic, timeout=5).topics[topic].partitions[0] \
                .leader not in (-1, leader):
            moved.append(now())
    elapsed = (moved[0] - t0 if moved else float("nan"), ok[0] - t0 if ok else float("nan"))
    p.flush(60)
    c.procs[leader].wait(60)
    c.start_broker(leader)
    wait(lambda: len(admin.list_topics(topic, timeout=5).topics[topic].partitions[0].isrs) == 3,
         60, "ISR back to 3")
    return elapsed


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.cluster")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--session-timeout-ms", type=int, default=6000)
    args = ap.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="josefk-bench-cluster-"))
    rows = []
    rows.append(("start-up to first produce (josefk cluster --brokers 3)",
                 f"{startup_time(root):.2f} s"))
    c = BenchCluster(root, session_timeout_ms=args.session_timeout_ms)
    c.start()
    try:
        tc = topic_creation(c)
        rows.append(("create 100 topics x 3 partitions RF 3, one request each",
                     f"total {tc['total_s']:.1f} s, p50 {tc['p50_ms']:.0f} ms, "
                     f"p99 {tc['p99_ms']:.0f} ms"))
        create_topic(c.bootstrap, "bench-one", 1, 3)
        for label, rate in metadata_rate(c).items():
            rows.append((f"Metadata requests/s, one client ({label})", f"{rate:,.0f}"))
        create_topic(c.bootstrap, "rf3", 8, 3)
        create_topic(c.bootstrap, "rf1", 8, 1)
        rf3, rf1 = [], []
        for _ in range(args.rounds):
            rf3.append(produce_rate(c.bootstrap, "rf3", "all"))
            rf1.append(produce_rate(c.bootstrap, "rf1", 1))
        m3, m1 = statistics.median(rf3), statistics.median(rf1)
        rows.append(("produce 1 KiB, RF 3 acks=all (median msg/s)", f"{m3:,.0f} ({m3 / 1024:,.0f} MB/s)"))
        rows.append(("produce 1 KiB, RF 1 acks=1 (median msg/s)", f"{m1:,.0f} ({m1 / 1024:,.0f} MB/s)"))
        rows.append(("RF 3 acks=all / RF 1 acks=1", f"{m3 / m1:.2f}"))
        create_topic(c.bootstrap, "lat", 1, 3)
        p50, p99 = latency(c.bootstrap, "lat")
        rows.append(("end-to-end latency RF 3 acks=all p50 / p99", f"{p50:.2f} / {p99:.2f} ms"))
        create_topic(c.bootstrap, "failover", 1, 3)
        kill = [failover(c, "failover", signal.SIGKILL) for _ in range(args.rounds)]
        term = [failover(c, "failover", signal.SIGTERM) for _ in range(args.rounds)]
        for what, runs in ((f"kill -9 (session timeout {args.session_timeout_ms} ms)", kill),
                           ("SIGTERM (controlled shutdown)", term)):
            for i, event in enumerate(("new leader in metadata", "first acks=all produce")):
                xs = [r[i] for r in runs]
                rows.append((f"failover after {what}: {event}, median",
                             f"{statistics.median(xs):.2f} s ({', '.join(f'{x:.2f}' for x in xs)})"))
    finally:
        c.stop()
    width = max(len(r[0]) for r in rows)
    for label, value in rows:
        print(f"{label:<{width}}  {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
