"""Thousands of partitions (issue 35, item 3): ``python -m bench.partitions`` (a benchmark, not a
test). Each figure is printed beside its goal.

``cluster`` (a 3-broker cluster on this machine, a real ZooKeeper):
- ``--partitions`` partitions at RF 3 created: CreateTopics answered, then every partition led
  with its full ISR in every broker's Metadata;
- memory per partition replica: the brokers' RSS growth over the creation / the replicas;
- idle CPU of each broker holding them (``/proc/<pid>/stat`` over ``--idle-s`` seconds);
- controller failover: the controller killed (SIGKILL) until a survivor's Metadata names a live
  leader for every partition;
- that broker restarted until it is back in every ISR (serving its replicas).

``throughput`` (one broker): produce 100 B keyed records (acks=1) spread over N partitions, then
consume them all (one consumer assigned every partition), josefk and the null broker alternating
(A B A B, medians), josefk's figure as a ratio of the null broker's at the same N.
Every loop is bounded in count and in time.
"""
from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from bench.brokers import Josefk, NullBroker, cleanup_dir
from bench.loads import send
from josefk.faults.processes import LocalCluster

now = time.monotonic
TICK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")


def cpu_s(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def rss_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/statm") as f:
        return int(f.read().split()[1]) * PAGE


def wait_until(predicate, timeout: float, what: str, pause: float = 0.1) -> float:
    """Seconds until ``predicate()`` is true (errors while the cluster moves count as false)."""
    t0 = now()
    last = None
    while now() - t0 < timeout:
        try:
            got = predicate()
            if got is True:
                return now() - t0
            last = got
        except Exception as e:  # noqa: BLE001 - a broker still starting or just killed
            last = e
        time.sleep(pause)
    raise RuntimeError(f"timed out after {timeout:.0f} s waiting for {what} (last: {last})")


def partition_state(c: LocalCluster, b: int, topic: str, n: int, dead=(), rf: int = 3):
    """True when broker ``b`` answers a live leader for each of the ``n`` partitions and (with
    ``rf``) a full ISR; else a short description of what is missing."""
    md = c.metadata_from(b, topics=[topic], timeout=30)
    t = md.topics[0]
    if t.error_code or len(t.partitions) != n:
        return f"error {t.error_code}, {len(t.partitions)} partitions"
    leaderless = sum(1 for p in t.partitions if p.leader_id < 0 or p.leader_id in dead)
    short = sum(1 for p in t.partitions if len(p.isr_nodes) < rf) if rf else 0
    return True if not leaderless and not short else f"{leaderless} leaderless, {short} short ISR"


def idle_cpu(pids: list[int], seconds: float) -> list[float]:
    before = [cpu_s(p) for p in pids]
    t0 = now()
    time.sleep(seconds)
    took = now() - t0
    return [(cpu_s(p) - b) / took for p, b in zip(pids, before)]


class Rows(list):
    """The figures, each printed as it is measured (a step that times out keeps the others)."""

    def append(self, row) -> None:
        print(f"  {row[0]}: {row[1]} (goal {row[2]})", flush=True)
        super().append(row)


def cluster_figures(root: Path, partitions: int, idle_s: float, timeout: float, rows) -> None:
    c = LocalCluster(root / "cluster", 3, start_timeout=120, overrides={
        "zookeeper.session.timeout.ms": 6000, "default.replication.factor": 3,
        "offsets.topic.replication.factor": 3, "auto.leader.rebalance.enable": "false",
        "log.flush.interval.messages": 9223372036854775807})
    try:
        c.start()
        topic = f"scale-{uuid.uuid4().hex[:6]}"
        pids = [c.brokers[i].pid for i in (1, 2, 3)]
        time.sleep(2)
        rss0 = [rss_bytes(p) for p in pids]
        admin = AdminClient({"bootstrap.servers": c.bootstrap, "socket.timeout.ms": 300_000})
        t0 = now()
        admin.create_topics([NewTopic(topic, partitions, 3)], operation_timeout=timeout,
                            request_timeout=timeout)[topic].result(timeout)
        answered = now() - t0
        for b in (1, 2, 3):
            wait_until(lambda: partition_state(c, b, topic, partitions), timeout,
                       f"broker {b}: every partition led, full ISR", pause=0.2)
        settled = now() - t0
        rows.append((f"create {partitions:,} partitions RF 3: CreateTopics answered / all led, "
                     f"full ISR on every broker", f"{answered:.1f} / {settled:.1f} s", "< 10 s"))
        time.sleep(2)
        rss1 = [rss_bytes(p) for p in pids]
        per = (sum(rss1) - sum(rss0)) / (partitions * 3)
        rss = ", ".join(f"{r / 2**20:.0f}" for r in rss1)
        rows.append((f"memory per partition replica (RSS growth / {partitions * 3:,} replicas)",
                     f"{per / 1024:.1f} KB (brokers' RSS {rss} MB)", "< 20 KB"))
        cpu = idle_cpu(pids, idle_s)
        rows.append((f"idle CPU per broker holding them ({idle_s:.0f} s)",
                     ", ".join(f"{x * 100:.1f}%" for x in cpu), "~0"))
        ctl = c.controller()
        survivor = next(b for b in (1, 2, 3) if b != ctl)
        t0 = now()
        c.kill(ctl)
        took = wait_until(lambda: partition_state(c, survivor, topic, partitions, dead=(ctl,),
                                                  rf=0), timeout, "every leader re-elected")
        rows.append((f"controller (broker {ctl}) killed: every partition led by a live broker",
                     f"{took:.1f} s", "< 10 s"))
        t0 = now()
        c.restart(ctl)
        listening = now() - t0
        took = wait_until(lambda: partition_state(c, survivor, topic, partitions), timeout,
                          f"broker {ctl} back in every ISR", pause=0.2) + listening
        rows.append((f"broker {ctl} restarted after the kill: listening / back in all "
                     f"{partitions:,} ISRs", f"{listening:.1f} / {took:.1f} s", "< 10 s"))
    finally:
        c.stop()


def produce(bootstrap: str, topic: str, count: int, cap_s: float) -> float:
    p = Producer({"bootstrap.servers": bootstrap, "acks": 1, "linger.ms": 5,
                  "batch.size": 1_000_000, "queue.buffering.max.messages": 1_000_000,
                  "message.timeout.ms": 120_000})
    value = b"v" * 100
    done = [0]

    def cb(err, _msg):
        if err is None:
            done[0] += 1
    t0 = now()
    for i in range(count):
        send(p, topic, value, key=b"%d" % i, on_delivery=cb)
        if i % 10_000 == 0:
            p.poll(0)
            if now() - t0 > cap_s:
                break
    p.flush(120)
    return done[0] / (now() - t0)


def consume(bootstrap: str, topic: str, partitions: int, count: int, cap_s: float) -> float:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": uuid.uuid4().hex,
                  "enable.auto.commit": False, "fetch.wait.max.ms": 100,
                  "queued.min.messages": 100_000})
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got = 0
    t0 = now()
    while got < count and now() - t0 < cap_s:
        for m in c.consume(10_000, 1.0):
            if not m.error():
                got += 1
    took = now() - t0
    c.close()
    return got / took


def throughput_round(broker, n: int, count: int, cap_s: float) -> tuple[float, float]:
    broker.start()
    try:
        topic = f"spread-{n}"
        admin = AdminClient({"bootstrap.servers": broker.bootstrap, "socket.timeout.ms": 300_000})
        admin.create_topics([NewTopic(topic, n, 1)], operation_timeout=300,
                            request_timeout=300)[topic].result(300)
        wait_until(lambda: len(admin.list_topics(topic, timeout=30).topics[topic].partitions)
                   == n, 120, f"{topic} in Metadata")
        return produce(broker.bootstrap, topic, count, cap_s), \
            consume(broker.bootstrap, topic, n, count, cap_s)
    finally:
        broker.stop(60)


def throughput_figures(root: Path, counts: list[int], records: int, rounds: int,
                       cap_s: float, rows) -> None:
    brokers = {"josefk": Josefk(root, {"log.segment.bytes": 8 * 2**20}, start_timeout=120),
               "null": NullBroker(root)}
    for n in counts:
        got = {name: ([], []) for name in brokers}
        for r in range(rounds):
            for name, b in brokers.items():
                p, c = throughput_round(b, n, records, cap_s)
                got[name][0].append(p)
                got[name][1].append(c)
                print(f"  {n:,} partitions, round {r + 1}, {name}: produce {p:,.0f} msg/s, "
                      f"consume {c:,.0f} msg/s", flush=True)
            cleanup_dir(root / f"josefk-data-{brokers['josefk'].starts}")
        for i, what in enumerate(("produce 100 B keyed acks=1", "consume")):
            j, z = statistics.median(got["josefk"][i]), statistics.median(got["null"][i])
            rows.append((f"{what}, {n:,} partitions, one broker: josefk / null (msg/s)",
                         f"{j:,.0f} / {z:,.0f} = {j / z:.2f}", ">= 0.8"))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.partitions")
    ap.add_argument("mode", nargs="?", choices=("all", "cluster", "throughput"), default="all")
    ap.add_argument("--partitions", type=int, default=10_000, help="of the cluster's topic")
    ap.add_argument("--idle-s", type=float, default=10.0)
    ap.add_argument("--timeout", type=float, default=180.0, help="of each cluster step")
    ap.add_argument("--counts", default="1000,5000,10000", help="partition counts (throughput)")
    ap.add_argument("--records", type=int, default=500_000, help="per throughput round")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--cap-s", type=float, default=60.0, help="of each produce / consume")
    args = ap.parse_args(argv)
    # SIGTERM unwinds like Ctrl-C, so the brokers and ZooKeeper are stopped
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    root = Path(tempfile.mkdtemp(prefix="josefk-bench-partitions-"))
    rows = Rows()
    try:
        if args.mode in ("all", "cluster"):
            cluster_figures(root, args.partitions, args.idle_s, args.timeout, rows)
        if args.mode in ("all", "throughput"):
            throughput_figures(root, [int(x) for x in args.counts.split(",")],
                               args.records, args.rounds, args.cap_s, rows)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    width = max(len(r[0]) for r in rows)
    vwidth = max(len(r[1]) for r in rows)
    print(f"machine: {os.cpu_count()} cores, Python {sys.version.split()[0]}")
    for label, value, goal in rows:
        print(f"{label:<{width}}  {value:<{vwidth}}  goal {goal}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
