"""``python -m bench.consumer_protocol``: a consumer group through membership changes, with the
consumer group protocol (KIP-848) and with the classic one.

One josefk broker per mode, alternating modes round after round (A B C D A B C D ...):

* ``consumer 5s``: ``group.protocol=consumer``, Kafka's default heartbeat interval (5 s);
* ``consumer 1s``: the same with ``group.consumer.heartbeat.interval.ms=1000``;
* ``classic 3000``: the classic protocol, ``group.initial.rebalance.delay.ms=3000`` (Kafka's
  default), librdkafka's default (eager) assignors, ``session.timeout.ms=10000``,
  ``heartbeat.interval.ms=1000``;
* ``classic 0``: the same with no initial rebalance delay.

A round: a fresh 6-partition topic filled with 100-byte records (not timed), then three member
processes (confluent-kafka) subscribe at once; each processes at most ``--rate`` records a
second (an application's work), so the group's throughput is what its members may process,
not what the machine can read. Each member reports every 100 ms the records it got and the
partitions it holds. Three events are timed:

* *form*: from the first of three ``subscribe()`` calls (0.37 s apart, so that the members'
  heartbeats are not in step) until the group holds the 6 partitions, each once, spread evenly
  (sizes differ by at most one);
* *join*: a fourth member subscribes; until the four hold them so;
* *leave*: one member closes (it leaves the group); until the three left hold them so.

and for *join* and *leave*: how many partitions changed owner (at least 1 and 1 here; the
assignors' stickiness), the records the group consumed per second in the 3 s before and in
the 5 s from the event, and *idle*: the member-seconds the members that were there before and
stay consumed nothing (100 ms reports without a record), from the event until 1 s after it
settled: a stop-the-world rebalance shows there. Medians over the rounds. Every wait is capped (``--cap-seconds``); members are told to stop and killed if they
do not.
"""
from __future__ import annotations

import argparse
import json
import os
import selectors
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from bench import loads
from bench.brokers import Josefk, cleanup_dir

PARTITIONS = 6
BUCKET_S = 0.1
STAGGER_S = 0.37
CLASSIC_CLIENT = {"session.timeout.ms": 10000, "heartbeat.interval.ms": 1000}
MODES = {
    "consumer 5s": ({}, {"group.protocol": "consumer"}),
    "consumer 1s": ({"group.consumer.heartbeat.interval.ms": 1000,
                     "group.consumer.min.heartbeat.interval.ms": 1000},
                    {"group.protocol": "consumer"}),
    "classic 3000": ({"group.initial.rebalance.delay.ms": 3000}, CLASSIC_CLIENT),
    "classic 0": ({"group.initial.rebalance.delay.ms": 0}, CLASSIC_CLIENT),
}


# -- a member (its own process) -----------------------------------------------------------------

def member(spec: dict) -> None:
    """Consume, at most ``rate`` records a second (in 50 ms ticks: the application's own pace,
    never a burst to catch up), reporting [time, records, partitions] every 100 ms on stdout
    until SIGTERM, then close (leaving the group)."""
    from confluent_kafka import Consumer

    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    c = Consumer({"bootstrap.servers": spec["bootstrap"], "group.id": spec["group"],
                  "auto.offset.reset": "earliest", "enable.auto.commit": True,
                  "fetch.queue.backoff.ms": 10, **spec["client"]})
    c.subscribe([spec["topic"]])
    tick = 0.05
    per_tick = max(1, int(spec["rate"] * tick))
    got, since = 0, time.monotonic()
    next_tick = since + tick
    while not stop:
        got += sum(1 for m in c.consume(per_tick, tick) if m.error() is None)
        now = time.monotonic()
        if next_tick > now:
            time.sleep(next_tick - now)
            now = next_tick
        next_tick = max(next_tick + tick, now)
        if now - since >= BUCKET_S:
            parts = sorted(tp.partition for tp in c.assignment())
            print(json.dumps([now, got, parts]), flush=True)
            got, since = 0, now
    c.close()


# -- the parent ---------------------------------------------------------------------------------

class Member:
    def __init__(self, spec: dict):
        self.proc = subprocess.Popen([sys.executable, "-m", "bench.consumer_protocol",
                                      "--member", json.dumps(spec)],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     cwd=str(Path(__file__).parent.parent))
        self.reports: list = []    # [time, records, partitions]
        self.gone = False
        self._partial = b""

    def read(self) -> bool:
        """Take the reports that arrived; False once the member closed its output."""
        data = os.read(self.proc.stdout.fileno(), 1 << 16)
        lines = (self._partial + data).split(b"\n")
        self._partial = lines.pop()
        self.reports += [json.loads(line) for line in lines if line]
        return bool(data)

    @property
    def partitions(self) -> set:
        return set(self.reports[-1][2]) if self.reports else set()

    def leave(self) -> None:
        self.gone = True
        self.proc.send_signal(signal.SIGTERM)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


class Round:
    """The members of one round and everything they reported."""

    def __init__(self, spec: dict):
        self.spec = spec
        self.members: list[Member] = []
        self.sel = selectors.DefaultSelector()

    def add(self) -> None:
        m = Member(self.spec)
        self.members.append(m)
        self.sel.register(m.proc.stdout, selectors.EVENT_READ, m)

    def pump(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while (left := end - time.monotonic()) > 0:
            for key, _ in self.sel.select(min(left, 0.05)):
                if not key.data.read():
                    self.sel.unregister(key.fileobj)

    def settled(self) -> bool:
        live = [m for m in self.members if not m.gone]
        shares = [m.partitions for m in live]
        sizes = [len(s) for s in shares]
        return (bool(shares) and sum(sizes) == PARTITIONS and min(sizes) > 0
                and max(sizes) - min(sizes) <= 1
                and set().union(*shares) == set(range(PARTITIONS)))

    def until_settled(self, cap_s: float) -> float | None:
        start = time.monotonic()
        while time.monotonic() - start < cap_s:
            self.pump(0.05)
            if self.settled():
                return time.monotonic() - start
        return None

    def owners(self) -> dict:
        """{partition: member} as the live members last reported."""
        return {p: m for m in self.members if not m.gone for p in m.partitions}

    def rate(self, t0: float, t1: float) -> float:
        n = sum(r[1] for m in self.members for r in m.reports if t0 <= r[0] < t1)
        return n / (t1 - t0)

    def idle(self, members, t0: float, t1: float) -> float:
        """Member-seconds ``members`` spent without a record between t0 and t1 (100 ms
        reports that carry none)."""
        return sum(BUCKET_S for m in members for r in m.reports if t0 <= r[0] < t1 and not r[1])

    def stop(self) -> None:
        for m in self.members:
            m.stop()


def fill(bootstrap: str, topic: str, per_partition: int) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(30)
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.size": 1_000_000,
                  "queue.buffering.max.messages": 1_000_000})
    loads.fill(p, topic, per_partition * PARTITIONS, b"x" * 100, PARTITIONS)


def one_round(broker: Josefk, client: dict, args) -> dict:
    topic = f"bench-k848-{uuid.uuid4().hex[:8]}"
    fill(broker.bootstrap, topic, args.records)
    r = Round({"bootstrap": broker.bootstrap, "group": f"bench-k848-{uuid.uuid4().hex[:8]}",
               "topic": topic, "client": client, "rate": args.rate})
    out = {}
    try:
        start = time.monotonic()
        for _ in range(3):   # a little apart, so their heartbeats are not in step
            r.add()
            r.pump(STAGGER_S)
        settled = r.until_settled(args.cap_seconds)
        out["form"] = None if settled is None else time.monotonic() - start
        r.pump(3)
        for event in ("join", "leave"):
            t = time.monotonic()
            live = [m for m in r.members if not m.gone]
            leaving = live[0] if event == "leave" else None
            staying = [m for m in live if m is not leaving]
            before = r.owners()
            r.add() if leaving is None else leaving.leave()
            took = out[event] = r.until_settled(args.cap_seconds)
            out[f"{event} moved"] = sum(before.get(p) is not m for p, m in r.owners().items())
            r.pump(max(6 - (time.monotonic() - t), 0) + 1)
            out[f"{event} before"] = r.rate(t - 3, t)
            out[f"{event} after"] = r.rate(t, t + 5)
            out[f"{event} idle"] = r.idle(staying, t, t + (took or args.cap_seconds) + 1)
    finally:
        r.stop()
    return out


FIGURES = [("form", "s"), ("join", "s"), ("leave", "s"), ("join moved", "partitions"),
           ("leave moved", "partitions"), ("join before", "rec/s"), ("join after", "rec/s"),
           ("join idle", "member-s"), ("leave before", "rec/s"), ("leave after", "rec/s"),
           ("leave idle", "member-s")]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--member", help=argparse.SUPPRESS)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--modes", default=",".join(MODES), help="comma-separated, of: " +
                    ", ".join(MODES))
    ap.add_argument("--rate", type=int, default=3000, help="records/s a member processes")
    ap.add_argument("--records", type=int, default=40_000, help="records per partition")
    ap.add_argument("--cap-seconds", type=float, default=40)
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    if args.member:
        member(json.loads(args.member))
        return 0
    modes = [m.strip() for m in args.modes.split(",")]
    work = Path(tempfile.mkdtemp(prefix="bench-k848-"))
    brokers = {}
    results: dict[str, list[dict]] = {m: [] for m in modes}
    try:
        for i, mode in enumerate(modes):
            brokers[mode] = Josefk(work, {"offsets.topic.replication.factor": 1,
                                          **MODES[mode][0]}, name=f"josefk-{i}")
            brokers[mode].start()
        for n in range(args.rounds):
            for mode in modes:
                res = one_round(brokers[mode], MODES[mode][1], args)
                results[mode].append(res)
                print(f"round {n + 1} {mode:13s} " + "  ".join(
                    f"{k}={_fmt(res.get(k))}" for k, _ in FIGURES), flush=True)
    finally:
        for b in brokers.values():
            b.stop()
        if not args.keep:
            cleanup_dir(work)
    print(f"\nmedians of {args.rounds} rounds; members process at most {args.rate} records/s "
          "each (3 members, then 4, then 3)")
    print("| mode | " + " | ".join(f"{k} ({u})" for k, u in FIGURES) + " |")
    print("|---" * (len(FIGURES) + 1) + "|")
    for mode in modes:
        row = []
        for k, _ in FIGURES:
            vals = [r[k] for r in results[mode] if r.get(k) is not None]
            row.append(_fmt(statistics.median(vals)) if vals else "capped")
        print(f"| {mode} | " + " | ".join(row) + " |")
    return 0


def _fmt(v) -> str:
    if v is None:
        return "capped"
    return f"{v:.0f}" if v >= 100 or float(v).is_integer() else f"{v:.2f}"


if __name__ == "__main__":
    sys.exit(main())
