"""``python -m bench.share``: share-group throughput (KIP-932) on one partition with 1, 2 and 4
share consumers, against a consumer group's single consumer reading the same partition.

One josefk broker (a subprocess, data on disk, Kafka's share-group defaults); per round and
workload a fresh topic of one partition filled with ``--messages`` records of ``--size`` bytes
(not timed), then ``N`` consumer processes of a fresh group (confluent-kafka: ``ShareConsumer``
with implicit acknowledgement, or ``Consumer`` with auto commit for ``group-1``), each counting
what it receives. They subscribe first; once every share consumer has the partition assigned
(ShareGroupDescribe) they start polling together. Producer batches are 16 KiB (the Java
client's default), so a fetch (500 records at most, whole batches) leaves the rest of the
partition to the others. The clock runs from the first record any of them received to the last
(each record is received exactly once: a share group delivers a record again only when it is
released or its lock expires, neither of which happens here); the broker's CPU seconds are read
from /proc over the same run. Workloads alternate within a round (A B C D A B C D ...); the
table quotes the median of ``--rounds``, and each share workload's split among its consumers.
"""
from __future__ import annotations

import argparse
import json
import selectors
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from bench.brokers import Josefk
from bench.group1000 import cpu_seconds
from bench.loads import fill

CAP_S = 120.0
REPORT_EVERY_S = 0.25

_CHILD = r"""
import json, sys, time
kind, bootstrap, group, topic = sys.argv[1:5]
if kind == "share":  # joins now (in the background) and fetches only when polled
    from confluent_kafka import ShareConsumer
    c = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group})
    c.subscribe([topic])
    poll = lambda: c.poll(0.2)
else:  # subscribes at "go": it fetches ahead in the background from its assignment on
    # (with librdkafka's 1 s fetch.queue.backoff.ms, one full local queue stalls it a second)
    from confluent_kafka import Consumer
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                  "auto.offset.reset": "earliest", "enable.auto.commit": True,
                  "fetch.queue.backoff.ms": 10})
    poll = lambda: c.consume(1000, 0.2)
print(json.dumps({"ready": True}), flush=True)
sys.stdin.readline()  # "go"
if kind == "group":
    c.subscribe([topic])
n, first, last, last_report = 0, None, None, 0.0
while True:
    msgs = poll()
    got = sum(1 for m in msgs if not m.error())
    now = time.time()
    if got:
        first = first or now
        last = now
    n += got
    if now - last_report >= %(every)s:
        print(json.dumps({"n": n, "first": first, "last": last}), flush=True)
        last_report = now
""" % {"every": REPORT_EVERY_S}


def _fill(bootstrap: str, topic: str, messages: int, size: int) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.size": 16384})
    fill(p, topic, messages, b"x" * size)


def _group_configs(bootstrap: str, group: str) -> None:
    from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry,
                                       ConfigResource)

    res = ConfigResource("GROUP", group, incremental_configs=[ConfigEntry(
        "share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)])
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for fut in admin.incremental_alter_configs([res]).values():
        fut.result(30)


def _wait_assigned(bootstrap: str, group: str, members: int, timeout: float = 60.0) -> None:
    """Until the group's ``members`` all know its current assignment and have the partition
    (a partition is assigned once its share state is initialized, told at the members' next
    heartbeat), so every consumer can fetch from the start."""
    from josefk.tools.client import Client
    from josefk.wire.apis import SHARE_GROUP_DESCRIBE

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with Client(bootstrap) as c:
            d = c.request(SHARE_GROUP_DESCRIBE, group_ids=[group],
                          include_authorized_operations=False).groups[0]
        if sum(1 for m in d.members if m.assignment.topic_partitions
               and m.member_epoch == d.group_epoch) == members:
            return
        time.sleep(0.2)
    raise RuntimeError(f"{group}: {members} members not assigned after {timeout:.0f} s")


def run_once(broker, kind: str, consumers: int, messages: int, size: int) -> dict:
    topic = f"share-bench-{uuid.uuid4().hex[:8]}"
    group = f"{topic}-g"
    _fill(broker.bootstrap, topic, messages, size)
    if kind == "share":
        _group_configs(broker.bootstrap, group)
    cpu0 = cpu_seconds(broker.proc.pid)
    children = [subprocess.Popen([sys.executable, "-c", _CHILD, kind, broker.bootstrap, group,
                                  topic], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL, text=True)
                for _ in range(consumers)]
    sel = selectors.DefaultSelector()
    for i, ch in enumerate(children):
        sel.register(ch.stdout, selectors.EVENT_READ, i)
    latest = [{"n": 0, "first": None, "last": None} for _ in children]
    for ch in children:  # every one joined before any reads: they start together
        json.loads(ch.stdout.readline())
    if kind == "share":
        _wait_assigned(broker.bootstrap, group, consumers)
    for ch in children:
        ch.stdin.write("go\n")
        ch.stdin.flush()
    deadline = time.monotonic() + CAP_S
    try:
        while sum(r["n"] for r in latest) < messages and time.monotonic() < deadline:
            for key, _ in sel.select(0.5):
                line = key.fileobj.readline()
                if line:
                    latest[key.data] = json.loads(line)
    finally:
        cpu1 = cpu_seconds(broker.proc.pid)
        for ch in children:
            ch.kill()
            ch.wait(10)
    got = sum(r["n"] for r in latest)
    firsts = [r["first"] for r in latest if r["first"] is not None]
    end = max((r["last"] for r in latest if r["last"] is not None), default=float("nan"))
    seconds = end - min(firsts) if firsts else float("nan")
    return {"records": got, "seconds": seconds, "rate": got / seconds if seconds else 0.0,
            "share": [r["n"] for r in latest],
            "cpu_us_per_record": (cpu1 - cpu0) * 1e6 / got if got and cpu0 is not None else None,
            "capped": got < messages}


WORKLOADS = [("group-1", "group", 1), ("share-1", "share", 1), ("share-2", "share", 2),
             ("share-4", "share", 4)]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--messages", type=int, default=500_000)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    results = {name: [] for name, _k, _n in WORKLOADS}
    with tempfile.TemporaryDirectory(prefix="share-bench-") as d:
        broker = Josefk(Path(d), {"offsets.topic.num.partitions": 3,
                                  "group.initial.rebalance.delay.ms": 0,
                                  "share.coordinator.state.topic.num.partitions": 3})
        broker.start()
        try:
            for r in range(args.rounds):
                for name, kind, n in WORKLOADS:
                    res = run_once(broker, kind, n, args.messages, args.size)
                    results[name].append(res)
                    print(f"round {r + 1} {name}: {res['rate']:,.0f} records/s over "
                          f"{res['seconds']:.2f} s, per consumer {res['share']}, broker "
                          f"{res['cpu_us_per_record'] or 0:.1f} us CPU/record"
                          f"{' (CAPPED)' if res['capped'] else ''}", flush=True)
        finally:
            broker.stop()
    base = statistics.median(r["rate"] for r in results["group-1"])
    print(f"\n{args.messages:,} records of {args.size} B on one partition, median of "
          f"{args.rounds} rounds\n")
    print("| workload | records/s | vs group-1 | broker CPU us/record | split (median round) |")
    print("|---|---:|---:|---:|---|")
    for name, _k, _n in WORKLOADS:
        rate = statistics.median(r["rate"] for r in results[name])
        cpu = statistics.median(r["cpu_us_per_record"] or 0 for r in results[name])
        mid = sorted(results[name], key=lambda r: r["rate"])[len(results[name]) // 2]
        split = " / ".join(f"{100 * n / max(mid['records'], 1):.0f}%" for n in mid["share"])
        print(f"| {name} | {rate:,.0f} | {rate / base:.2f} | {cpu:.1f} | {split} |")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
