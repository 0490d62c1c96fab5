"""The client's share of a SIGSTOP's write gap: ``python -m bench.pause_bound`` (a benchmark,
not a test).

A 3-broker cluster (6 s ZooKeeper sessions, as the fault harness's); one idempotent acks=all
librdkafka producer configured as the harness's writers (5 s request timeout) writes one
record to each of 3 partitions (replication factor 3) every 40 ms. The leader of partition 0 is
paused (SIGSTOP) for ``--pause`` seconds, then resumed, ``--rounds`` times for each producer
setting, alternating: librdkafka's default metadata refresh (every 5 minutes) and a refresh every
second (``topic.metadata.refresh.interval.ms=1000``). Per pause: the longest time without an
acknowledged write on that partition from the pause on, and when a surviving broker named a new
leader. The cluster is the same for both settings; only the client's metadata policy differs.
Every loop is bounded in count and in time.
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import threading
import time
from pathlib import Path

from confluent_kafka import Producer

from bench.cluster import create_topic
from josefk.faults.checker import longest_silence
from josefk.faults.processes import LocalCluster
from josefk.faults.workload import CLIENT_TIMEOUTS, WRITER_CONFIG

TOPIC = "paused"
SETTINGS = {"default refresh (5 min)": {},
            "refresh every 1 s": {"topic.metadata.refresh.interval.ms": 1000}}


class Writer:
    """One record to each partition every 40 ms; the acknowledgement times of partition 0."""

    def __init__(self, bootstrap: str, extra: dict):
        self.p = Producer({"bootstrap.servers": bootstrap, **WRITER_CONFIG, **CLIENT_TIMEOUTS,
                           **extra})
        self.acks: list[float] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _acked(self, err, msg):
        if err is None and msg.partition() == 0:
            self.acks.append(time.time())

    def _run(self):
        deadline = time.monotonic() + 600
        while not self.stop.is_set() and time.monotonic() < deadline:
            tick = time.monotonic()
            for partition in range(3):
                self.p.produce(TOPIC, b"x", partition=partition, on_delivery=self._acked)
            while time.monotonic() < tick + 0.04:
                self.p.poll(0.01)

    def gap_since(self, at: float) -> float:
        return longest_silence(self.acks, at, time.time())

    def close(self):
        self.stop.set()
        self.thread.join(30)
        self.p.flush(60)


def leader(c: LocalCluster, b: int) -> int:
    (t,) = c.metadata_from(b, [TOPIC]).topics
    return next(p.leader_id for p in t.partitions if p.partition_index == 0)


def one_pause(c: LocalCluster, extra: dict, pause: float) -> tuple[float, float | None]:
    """(write gap, seconds until a survivor named a new leader) of one paused leader."""
    w = Writer(c.bootstrap, extra)
    try:
        time.sleep(3)
        victim = leader(c, c.live()[0])
        survivor = next(i for i in c.live() if i != victim)
        at = time.time()
        c.pause(victim)
        failover = None
        while time.time() < at + pause:
            if failover is None:
                try:
                    if leader(c, survivor) not in (victim, -1):
                        failover = time.time() - at
                except (OSError, ConnectionError):
                    pass
            time.sleep(0.1)
        c.resume(victim)
        time.sleep(5)
        return w.gap_since(at), failover
    finally:
        w.close()
        wait_whole(c)


def wait_whole(c: LocalCluster, timeout: float = 60):
    """Until every replica of the topic is back in its ISR."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            (t,) = c.metadata_from(None, [TOPIC]).topics
            if all(len(p.isr_nodes) == 3 and p.leader_id >= 0 for p in t.partitions):
                return
        except (OSError, ConnectionError):
            pass
        time.sleep(0.5)
    raise RuntimeError(f"{TOPIC} did not get its whole ISR back within {timeout:.0f} s")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.pause_bound")
    ap.add_argument("--rounds", type=int, default=5, help="pauses per producer setting")
    ap.add_argument("--pause", type=float, default=9.0, help="seconds each pause lasts")
    args = ap.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="josefk-bench-pause-"))
    results = {name: [] for name in SETTINGS}
    c = LocalCluster(root, 3, overrides={"zookeeper.session.timeout.ms": 6000,
                                         "replica.lag.time.max.ms": 4000,
                                         "auto.leader.rebalance.enable": "false"})
    try:
        c.start()
        create_topic(c.bootstrap, TOPIC, 3, 3)
        wait_whole(c)
        for r in range(args.rounds):
            for name, extra in SETTINGS.items():
                gap, failover = one_pause(c, extra, args.pause)
                results[name].append((gap, failover))
                shown = "-" if failover is None else f"{failover:.2f} s"
                print(f"round {r + 1}, {name}: gap {gap:.2f} s, new leader named after {shown}",
                      flush=True)
    finally:
        c.stop()
        shutil.rmtree(root, ignore_errors=True)
    print(f"\n{args.rounds} pauses of {args.pause:.0f} s per setting; write gap median / worst, "
          "failover worst:")
    for name, rows in results.items():
        gaps = [g for g, _ in rows]
        failovers = [f for _, f in rows if f is not None]
        worst_failover = f"{max(failovers):.2f} s" if failovers else "-"
        print(f"  {name:<24} {statistics.median(gaps):5.2f} / {max(gaps):5.2f} s   "
              f"{worst_failover}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
