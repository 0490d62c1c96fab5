"""Cluster figures: ``python -m bench.cluster`` (a benchmark, not a test).

Against a 3-broker josefk cluster on this machine (a real ZooKeeper, brokers on 127.0.0.1):
- start-up: from ``josefk cluster --brokers 3`` to the first acknowledged produce;
- topic creation latency (100 topics of 3 partitions, RF 3, one CreateTopics each);
- Metadata requests per second from one client;
- produce throughput of 1 KiB records, RF 3 acks=all next to RF 1 acks=1 (rounds alternate);
- end-to-end latency p50/p99 with RF 3 acks=all;
- failover per fault kind (median and worst): the fault harness's longest gap without an
  acknowledged acks=all write after each fault, and how soon a surviving broker named new
  leaders (``faults.harness``, each kind ``--rounds`` times, on a cluster of its own).
Every loop is bounded in count and in time.
"""
from __future__ import annotations

import argparse
import os
import shutil
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
from bench.group1000 import cpu_seconds
from bench.loads import send

from josefk.faults.harness import Options, run
from josefk.faults.processes import LocalCluster, port_accepts
from josefk.zk.local_server import free_port
from josefk.tools.client import Client
from josefk.wire.apis import METADATA

now = time.monotonic
REPO = Path(__file__).resolve().parent.parent


def pct(values, q):
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))] if s else float("nan")


def bench_cluster(root: Path, session_timeout_ms: int) -> LocalCluster:
    return LocalCluster(root, 3, overrides={
        "zookeeper.session.timeout.ms": session_timeout_ms, "default.replication.factor": 3,
        "offsets.topic.replication.factor": 3, "offsets.topic.num.partitions": 6,
        "controlled.shutdown.retry.backoff.ms": 200, "auto.leader.rebalance.enable": "false",
        "log.flush.interval.messages": 9223372036854775807})


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
        wait(lambda: port_accepts("127.0.0.1", port), 60, "first broker")
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


def topic_creation(c: LocalCluster, n=100) -> dict:
    admin = AdminClient({"bootstrap.servers": c.bootstrap})
    lat = []
    t0 = now()
    for i in range(n):
        name = f"create-{uuid.uuid4().hex[:8]}-{i}"
        s = now()
        admin.create_topics([NewTopic(name, 3, 3)], operation_timeout=30)[name].result(30)
        lat.append((now() - s) * 1000)
    return {"topics": n, "total_s": now() - t0, "p50_ms": pct(lat, 0.5), "p99_ms": pct(lat, 0.99)}


def metadata_rate(c: LocalCluster, seconds=5.0) -> dict:
    out = {}
    with Client(c.brokers[1].bootstrap) as client:
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
        send(p, topic, value, sent % 8, on_delivery=cb)
        sent += 1
    p.flush(60)
    return done[0] / (now() - t0)


def replication_cpu(c: LocalCluster, count=100_000) -> dict:
    """CPU per MB of a leader appending and of its followers replicating: a topic of 8
    partitions all led by broker 1 and followed by brokers 2 and 3 (replicas [1, 2, 3]), 1 KiB
    records produced with acks=all; every broker's CPU time (/proc) over the produce."""
    name = f"cpu-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": c.bootstrap})
    admin.create_topics([NewTopic(name, 8, replica_assignment=[[1, 2, 3]] * 8)],
                        operation_timeout=30)[name].result(30)
    wait(lambda: Producer({"bootstrap.servers": c.bootstrap}).list_topics(name, timeout=5)
         .topics[name].partitions[7].leader == 1, 30, "the topic's leaders")
    pids = {i: b.pid for i, b in c.brokers.items()}
    before = {i: cpu_seconds(pid) for i, pid in pids.items()}
    rate = produce_rate(c.bootstrap, name, "all", count=count)
    after = {i: cpu_seconds(pid) for i, pid in pids.items()}
    mb = count * 1024 / 1e6
    leader = (after[1] - before[1]) / mb
    follower = statistics.mean(after[i] - before[i] for i in (2, 3)) / mb
    return {"rate": rate, "leader_ms_per_mb": leader * 1000,
            "follower_ms_per_mb": follower * 1000, "ratio": follower / leader}


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


def failover(rounds: int, seed: int) -> list[tuple[str, str]]:
    """The fault harness, each kind ``rounds`` times: (label, "median / worst s") per kind (its
    run dir is removed unless it found anomalies)."""
    result = run(Options(rounds=rounds, seed=seed),
                 out=lambda line: print(f"  faults: {line}", flush=True))
    rows = []
    for r in result.rows:
        if r.gap_worst is not None:
            rows.append((f"failover after {r.kind}: longest acks=all write gap, median / worst "
                         f"of {r.faults}", f"{r.gap_median:.2f} / {r.gap_worst:.2f} s"))
        if r.failover_worst is not None:
            rows.append((f"failover after {r.kind}: new leaders named, median / worst",
                         f"{r.failover_median:.2f} / {r.failover_worst:.2f} s"))
    anomalies = sum(sum(r.anomalies.values()) for r in result.rows)
    rows.append(("fault harness anomalies (must be 0)", str(anomalies)))
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.cluster")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--session-timeout-ms", type=int, default=6000)
    ap.add_argument("--seed", type=int, default=19, help="of the fault schedule")
    ap.add_argument("--skip-failover", action="store_true")
    args = ap.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="josefk-bench-cluster-"))
    rows = []
    c = bench_cluster(root / "cluster", args.session_timeout_ms)
    try:
        rows.append(("start-up to first produce (josefk cluster --brokers 3)",
                     f"{startup_time(root):.2f} s"))
        c.start()
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
        cpu = replication_cpu(c)
        rows.append(("CPU per MB, RF 3 acks=all: leader appending / follower replicating",
                     f"{cpu['leader_ms_per_mb']:.1f} / {cpu['follower_ms_per_mb']:.1f} ms "
                     f"(follower/leader {cpu['ratio']:.2f})"))
        create_topic(c.bootstrap, "lat", 1, 3)
        p50, p99 = latency(c.bootstrap, "lat")
        rows.append(("end-to-end latency RF 3 acks=all p50 / p99", f"{p50:.2f} / {p99:.2f} ms"))
    finally:
        c.stop()
        shutil.rmtree(root, ignore_errors=True)
    if not args.skip_failover:
        rows += failover(args.rounds, args.seed)
    width = max(len(r[0]) for r in rows)
    for label, value in rows:
        print(f"{label:<{width}}  {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
