"""The ``group-1000`` workloads: one group of consumers reading 10 topics x 100 partitions.

The worker (``bench.worker``, kind ``group-1000``) creates the topics, fills every partition
with ``per_partition`` records of ``size`` bytes (confluent-kafka, not timed), then starts
``members`` consumer processes (``python -m bench.group1000 '<json>'``) of one fresh group,
each ``subscribe()``-ing to the 10 topics and pausing the partitions it is assigned. Once the
group has settled (every partition held, the assignment unchanged for a second), all are told
to go at the same moment: the clock runs from then until the group together has read every
partition to its end. Each consumer reports, every 0.25 s, the next offset it has reached per
partition; the parent takes the furthest per partition, so a record read twice after a
rebalance is not counted twice (the duplicates are reported).

The broker's CPU seconds over that same interval are read from ``/proc/<pid>/stat`` (the
broker's pid is in the spec), so the figure is the consume alone, without the fill and join.

``client`` is ``kafka-python`` (which uses incremental fetch sessions, KIP-227) or
``confluent`` (librdkafka, which does not). Bounded: ``SETTLE_CAP_S`` for the join,
``cap_s`` for the consume, children told to stop (and killed if they do not) at the end.
"""
from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
import time
import uuid
from bench.loads import send

now = time.monotonic
CLK_TCK = os.sysconf("SC_CLK_TCK")
REPORT_EVERY_S = 0.25
SETTLE_CAP_S = 90.0


def cpu_seconds(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLK_TCK
    except (OSError, ValueError, IndexError):
        return None


def topics_of(spec: dict) -> list[str]:
    return [f"{spec['topic']}-{i}" for i in range(int(spec["topics"]))]


# -- the parent (inside bench.worker) -----------------------------------------------------------

def run(spec: dict) -> dict:
    from confluent_kafka import Producer

    from bench.worker import Failed, create_topic, delete_topic

    bootstrap, parts = spec["bootstrap"], int(spec["partitions"])
    topics = topics_of(spec)
    for t in topics:
        create_topic(bootstrap, t, parts, timeout=60)
    per = int(spec["per_partition"])
    value = b"x" * int(spec["size"])
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.size": 1000000,
                  "queue.buffering.max.messages": 2000000, "acks": 1})
    failed = []
    for t in topics:
        for i in range(per * parts):
            send(p, t, value, i % parts,
                 on_delivery=lambda e, _m: e and failed.append(str(e)))
    left = p.flush(120)
    if left or failed:
        raise Failed(f"fill: {left} undelivered, {len(failed)} failed ({failed[:1]})")
    expected = per * parts * len(topics)
    group = "bench-g1000-" + uuid.uuid4().hex[:8]
    result = consume(spec, group, topics, expected)
    for t in topics:
        delete_topic(bootstrap, t)
    return result


def consume(spec: dict, group: str, topics: list[str], expected: int) -> dict:
    from bench.worker import Failed

    members = int(spec["members"])
    partitions = len(topics) * int(spec["partitions"])
    cap = float(spec["cap_s"])
    child = dict(spec, group=group, topic_names=topics)
    procs = [subprocess.Popen([sys.executable, "-m", "bench.group1000", json.dumps(child)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
             for _ in range(members)]
    lines = Lines(procs)
    try:
        settle_s = settle(lines, members, partitions)
        pid = int(spec["broker_pid"])
        cpu0, t0 = cpu_seconds(pid), now()
        for proc in procs:
            proc.stdin.write(b"GO\n")
        reached = {}  # (topic, partition) -> furthest next offset any member reported
        received = [0] * members
        t_end = None
        while sum(reached.values()) < expected and now() < t0 + cap:
            for i, report in lines.read(min(now() + 0.5, t0 + cap)).items():
                received[i] = report["received"]
                for (t, part), offset in report["reached"]:
                    if offset > reached.get((t, part), 0):
                        reached[(t, part)] = offset
                if report["last_record_at"]:
                    t_end = max(t_end or 0, report["last_record_at"])
        cpu1 = cpu_seconds(pid)
        covered = sum(reached.values())
        elapsed = (t_end or now()) - t0
    finally:
        lines.close()
        for proc in procs:
            try:
                proc.stdin.write(b"STOP\n")
            except OSError:
                pass
        for proc in procs:
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
    if covered <= 0:
        raise Failed(f"the group read nothing in {cap:.0f}s")
    info = {"expected": expected, "read": covered, "received": sum(received),
            "elapsed_s": elapsed, "settle_s": settle_s, "client": spec["client"], "notes": []}
    if covered < expected:
        info["notes"].append(f"read {covered} of {expected} in the {cap:.0f}s cap")
    if sum(received) > covered:
        info["notes"].append(f"{sum(received) - covered} records read twice (rebalances)")
    figures = {"msg/s": covered / elapsed}
    if cpu0 is not None and cpu1 is not None:
        figures["broker CPU s"] = cpu1 - cpu0
    return {"ok": True, "figures": figures, "info": info}


def settle(lines, members: int, partitions: int) -> float:
    """Wait until the members together hold every partition (each holding some) for a second;
    returns how long that took."""
    from bench.worker import Failed

    t0 = now()
    assigned = {}
    since = None
    while now() < t0 + SETTLE_CAP_S:
        for i, report in lines.read(now() + 0.5).items():
            assigned[i] = report["assigned"]
        if len(assigned) == members and all(assigned.values()) and \
                sum(assigned.values()) == partitions:
            since = since or now()
            if now() - since >= 1.0:
                return since - t0
        else:
            since = None
    raise Failed(f"the group did not settle in {SETTLE_CAP_S:.0f}s: {assigned}")


class Lines:
    """The latest complete line of each child's stdout, read without blocking past a
    deadline."""

    def __init__(self, procs):
        self.sel = selectors.DefaultSelector()
        self.buffers = {}
        for i, proc in enumerate(procs):
            self.sel.register(proc.stdout, selectors.EVENT_READ, i)
            self.buffers[i] = b""

    def read(self, deadline: float) -> dict:
        """{child: its last report (a JSON line)}, as soon as any arrived (or {} at
        ``deadline``)."""
        from bench.worker import Failed

        got = {}
        while not got and now() < deadline:
            for key, _ in self.sel.select(timeout=max(0.0, deadline - now())):
                data = os.read(key.fileobj.fileno(), 1 << 20)
                if not data:
                    raise Failed(f"consumer process {key.data} exited")
                *complete, self.buffers[key.data] = (self.buffers[key.data] + data).split(b"\n")
                if complete:
                    got[key.data] = json.loads(complete[-1])
        return got

    def close(self):
        self.sel.close()


# -- one consumer process -------------------------------------------------------------------------

def member(spec: dict) -> None:
    """Join the group with every assigned partition paused, reporting the assignment, until
    GO arrives on stdin; then resume and consume, reporting progress, until STOP (or the
    cap)."""
    sel = selectors.DefaultSelector()
    sel.register(sys.stdin, selectors.EVENT_READ)
    client = Client(spec)
    reached: dict = {}
    received = 0
    last_at = None
    next_report = now() + REPORT_EVERY_S
    deadline = now() + SETTLE_CAP_S + float(spec["cap_s"]) + 5
    while now() < deadline:
        for tp, n, next_offset in client.poll():
            received += n
            reached[tp] = next_offset
            last_at = now()
        if now() >= next_report:
            print(json.dumps({"assigned": client.assigned(), "received": received,
                              "last_record_at": last_at, "reached": list(reached.items())}),
                  flush=True)
            next_report = now() + REPORT_EVERY_S
            if sel.select(timeout=0):
                if sys.stdin.readline().strip() != "GO":
                    break  # STOP, or the parent is gone
                client.go()
    client.close()


class Client:
    """A kafka-python or confluent-kafka group member that holds its partitions paused until
    ``go()`` (a partition assigned later, after a rebalance, is read at once)."""

    def __init__(self, spec: dict):
        self.kafka_python = spec["client"] == "kafka-python"
        self.started = False
        topics = spec["topic_names"]
        if self.kafka_python:
            from kafka import ConsumerRebalanceListener, KafkaConsumer

            member = self

            class Listener(ConsumerRebalanceListener):
                def on_partitions_revoked(self, revoked):
                    pass

                def on_partitions_assigned(self, assigned):
                    if not member.started and assigned:
                        member.c.pause(*assigned)

            self.c = KafkaConsumer(bootstrap_servers=spec["bootstrap"], group_id=spec["group"],
                                   enable_auto_commit=False, auto_offset_reset="earliest",
                                   max_poll_records=10000)
            self.c.subscribe(topics, listener=Listener())
        else:
            from confluent_kafka import Consumer

            def on_assign(consumer, partitions):
                consumer.assign(partitions)
                if not self.started and partitions:
                    consumer.pause(partitions)

            self.c = Consumer({"bootstrap.servers": spec["bootstrap"], "group.id": spec["group"],
                               "enable.auto.commit": False, "auto.offset.reset": "earliest",
                               "fetch.queue.backoff.ms": 10})
            self.c.subscribe(topics, on_assign=on_assign)

    def assigned(self) -> int:
        return len(self.c.assignment())

    def go(self) -> None:
        self.started = True
        if self.kafka_python:
            self.c.resume(*self.c.assignment())
        else:
            self.c.resume(self.c.assignment())

    def poll(self):
        """[((topic, partition), records read, next offset)] of one poll."""
        if self.kafka_python:
            return [((tp.topic, tp.partition), len(recs), recs[-1].offset + 1)
                    for tp, recs in self.c.poll(timeout_ms=100).items() if recs]
        out = []
        for m in self.c.consume(10000, 0.1):
            if m.error() is None:
                out.append(((m.topic(), m.partition()), 1, m.offset() + 1))
        return out

    def close(self) -> None:
        self.c.close()


if __name__ == "__main__":
    member(json.loads(sys.argv[1]))
    sys.stdout.flush()
    os._exit(0)
