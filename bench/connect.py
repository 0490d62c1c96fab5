"""``python -m bench.connect``: Kafka Connect on one josefk broker (issue 28's benchmark). The
broker and every worker are processes (``josefk connect``, as users run it); per round,
alternating with a bare confluent-kafka loop on the same machine:

- **source**: the generator source (``max.messages`` 100-byte String values,
  ByteArray/String converters) in a ``josefk connect --standalone`` worker, against a bare
  producer loop with the worker's own producer settings writing the same records; records/s
  from the first record in the topic to its end offset reaching N (polled every 20 ms);
- **sink**: the discarding sink reading that topic from the start, against a bare consumer
  loop; records/s from the first records the worker's ``/metrics`` counts
  (``sink_record_send``) to N;
- the worker process's user+sys CPU (``/proc``) over each window, per million records.

Then, once each: end-to-end **latency** at ``--rate`` records/s (the generator's
``throughput``): the source leaves the timestamp to the producer, so a record's CreateTime is
when the worker handed it to librdkafka; a consumer on the topic takes its wall clock at
arrival minus that (same host, same clock); nearest-rank p50/p99. And **rebalance** in a group
of two distributed workers: a generator connector with two throttled tasks on worker A; worker
B joins (time from B's REST answering until the status API shows a task RUNNING on B), and is
then killed with SIGKILL (``scheduled.rebalance.max.delay.ms`` small: time until both tasks run
on A); across the join, the longest stretch without growth of the write counter of the task
that stays on A (scraped every 50 ms) and whether the status API ever showed it not RUNNING.

``--only floor`` (not in the default run): the bare loops with the records made as a worker
makes them (the generator's poll; a SinkRecord per consumed message): a Python worker's floor.
``--record-batch false``: the generator's polls are lists of SourceRecords, not one
SourceRecordBatch (josefk's columnar extension of the API) each.
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from bench.brokers import REPO_ROOT, Josefk, cleanup_dir, port_accepts
from josefk.connect.api.records import SinkRecord
from josefk.connect.connectors.generator import GeneratorSourceTask
from josefk.connect.main import GC_YOUNG_THRESHOLD
from josefk.connect.runtime.source_task import producer_defaults
from josefk.zk.local_server import free_port

GENERATOR = "josefk.connect.connectors.generator.GeneratorSourceConnector"
DISCARD = "josefk.connect.connectors.generator.DiscardSinkConnector"
CONVERTERS = {"key.converter": "org.apache.kafka.connect.converters.ByteArrayConverter",
              "value.converter": "org.apache.kafka.connect.storage.StringConverter"}
VALUE = b"x" * 100


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def http(port: int, path: str, method: str = "GET", body: dict | None = None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        text = r.read().decode()
    return json.loads(text) if text and path != "/metrics" else text


def counter(port: int, name: str, task: str | None = None) -> float:
    """The sum of a ``kafka_connect_*`` counter over its tasks (or one task's value)."""
    total = 0.0
    for line in http(port, "/metrics").splitlines():
        if line.startswith(name + "_total{") and (task is None or f'task="{task}"' in line):
            total += float(line.rsplit(" ", 1)[1])
    return total


class Worker:
    """One ``josefk connect`` process; REST on its own free port; killed by its group."""

    def __init__(self, root: Path, name: str, props: dict, connectors: list[dict] = (),
                 standalone: bool = True):
        self.root, self.name, self.port = root, name, free_port()
        props = {**props, "listeners": f"http://127.0.0.1:{self.port}"}
        (root / f"{name}.properties").write_text(
            "".join(f"{k}={v}\n" for k, v in props.items()))
        cmd = [sys.executable, "-m", "josefk", "connect", "--log-level", "WARNING",
               *(["--standalone"] if standalone else []), str(root / f"{name}.properties")]
        for i, c in enumerate(connectors):
            path = root / f"{name}-connector-{i}.json"
            path.write_text(json.dumps(c))
            cmd.append(str(path))
        self.log = open(root / f"{name}.log", "wb")
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=self.log,
                                     stderr=subprocess.STDOUT, cwd=REPO_ROOT,
                                     start_new_session=True)
        deadline = time.monotonic() + 60
        while not port_accepts(self.port):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"worker {name} did not start: "
                                   f"{(root / f'{name}.log').read_text()[-1500:]}")
            time.sleep(0.05)

    def cpu(self) -> float:
        return cpu_seconds(self.proc.pid)

    def tasks(self, connector: str) -> list[dict]:
        try:
            return http(self.port, f"/connectors/{connector}/status")["tasks"]
        except (OSError, ValueError):
            return []

    def stop(self, sig=signal.SIGTERM) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, sig)
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)
            except ProcessLookupError:
                pass
        self.log.close()


def standalone_props(bootstrap: str, root: Path, name: str) -> dict:
    return {"bootstrap.servers": bootstrap, **CONVERTERS,
            "offset.storage.file.filename": str(root / f"{name}.offsets"),
            "offset.flush.interval.ms": 1000}


def create_topic(bootstrap: str, topic: str, partitions: int = 1) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)


def end_offset(consumer: Consumer, topic: str) -> int:
    return consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=5, cached=False)[1]


def window(measure, done: int, seconds: float, interval: float, cpu=None):
    """Polls ``measure()`` (a count) until it reaches ``done``: (records/s from the first
    non-zero reading to ``done``, CPU seconds over that window, the window's records)."""
    first = None
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        count, now = measure(), time.monotonic()
        if count and first is None:
            first = (now, count, cpu() if cpu else 0.0)
        if count >= done:
            moved = count - first[1]
            if not moved:
                raise RuntimeError(f"{measure.__name__}: all {done} records before the first "
                                   "reading; use more records")
            return moved / (now - first[0]), (cpu() - first[2] if cpu else 0.0), moved
        time.sleep(interval)
    raise RuntimeError(f"{measure.__name__}: {count} of {done} within {seconds:.0f}s")


def source_worker(bootstrap: str, root: Path, topic: str, n: int,
                  batch: str) -> tuple[float, float, int]:
    name = f"source-{topic}"
    probe = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-probe",
                      "log_level": 0})
    w = Worker(root, name, standalone_props(bootstrap, root, name), [{
        "name": name, "connector.class": GENERATOR, "tasks.max": "1", "topic": topic,
        "max.messages": str(n), "message.size": "100", "record.batch": batch}])
    try:
        def end():
            return end_offset(probe, topic)
        return window(end, n, 300, 0.02, w.cpu)
    finally:
        w.stop()
        probe.close()


def source_bare(bootstrap: str, topic: str, n: int) -> float:
    settings = {k: v for k, v in producer_defaults("bench").items() if k != "partitioner"}
    p = Producer({"bootstrap.servers": bootstrap, **settings})
    start = time.monotonic()
    for i in range(n):
        while True:
            try:
                p.produce(topic, VALUE, partition=0)
                break
            except BufferError:
                p.poll(0.01)
        if i % 1000 == 0:
            p.poll(0)
    assert p.flush(120) == 0, "records left undelivered"
    return n / (time.monotonic() - start)


def source_floor(bootstrap: str, topic: str, n: int, batch: str) -> float:
    """The bare producer loop, its records first made as the worker gets them: the generator
    task's ``poll`` (a SourceRecordBatch, or a SourceRecord each when ``batch`` is "false"),
    then one ``produce()`` per record."""
    task = GeneratorSourceTask()
    task.initialize(FloorContext())
    task.start({"task.index": "0", "topic": topic, "max.messages": str(n),
                "message.size": str(len(VALUE)), "record.batch": batch})
    settings = {k: v for k, v in producer_defaults("bench").items() if k != "partitioner"}
    p = Producer({"bootstrap.servers": bootstrap, **settings})
    start = time.monotonic()
    while polled := task.poll():
        for value in (polled.values if batch == "true" else (r.value for r in polled)):
            while True:
                try:
                    p.produce(topic, value.encode(), partition=0)
                    break
                except BufferError:
                    p.poll(0.01)
        p.poll(0)
    assert p.flush(120) == 0, "records left undelivered"
    return n / (time.monotonic() - start)


class FloorContext:
    def offset_storage_reader(self):
        return self

    def offset(self, partition):
        return None


def sink_floor(bootstrap: str, topic: str, n: int) -> float:
    """The bare consumer loop making a SinkRecord of each message (no converter)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-floor",
                  "enable.auto.commit": False, "fetch.queue.backoff.ms": 10})
    c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    got, first = 0, None
    deadline = time.monotonic() + 300
    while got < n and time.monotonic() < deadline:
        batch = [SinkRecord(m.topic(), m.partition(), None, m.key(), None, m.value(),
                            m.offset(), m.timestamp()[1], "CreateTime")
                 for m in c.consume(500, 1.0) if not m.error()]
        got += len(batch)
        if got and first is None:
            first = (time.monotonic(), got)
    elapsed = time.monotonic() - first[0]
    c.close()
    assert got >= n, f"read {got} of {n}"
    return (got - first[1]) / elapsed


def sink_worker(bootstrap: str, root: Path, topic: str, n: int) -> tuple[float, float, int]:
    name = f"sink-{topic}"
    w = Worker(root, name, standalone_props(bootstrap, root, name), [{
        "name": name, "connector.class": DISCARD, "tasks.max": "1", "topics": topic}])
    try:
        def sent():
            return counter(w.port, "kafka_connect_sink_task_sink_record_send")
        return window(sent, n, 300, 0.02, w.cpu)
    finally:
        w.stop()


def sink_bare(bootstrap: str, topic: str, n: int) -> float:
    """Records/s from the first record to the n-th, as the sink's window."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-bare",
                  "enable.auto.commit": False, "fetch.queue.backoff.ms": 10})
    c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    got, first = 0, None
    deadline = time.monotonic() + 300
    while got < n and time.monotonic() < deadline:
        for m in c.consume(10000, 1.0):
            if not m.error():
                got += 1
        if got and first is None:
            first = (time.monotonic(), got)
    elapsed = time.monotonic() - first[0]
    c.close()
    assert got >= n, f"read {got} of {n}"
    return (got - first[1]) / elapsed


def latency(bootstrap: str, root: Path, rate: int, seconds: int) -> tuple[float, float, int]:
    topic, name = "bench-latency", "latency"
    create_topic(bootstrap, topic)
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-latency",
                  "enable.auto.commit": False, "fetch.wait.max.ms": 100})
    c.assign([TopicPartition(topic, 0, OFFSET_END)])
    c.consume(1, 2.0)  # joined, positioned at the end before the source starts
    n = rate * seconds
    w = Worker(root, name, standalone_props(bootstrap, root, name), [{
        "name": name, "connector.class": GENERATOR, "tasks.max": "1", "topic": topic,
        "max.messages": str(n), "message.size": "100", "throughput": str(rate)}])
    delays = []
    try:
        deadline = time.monotonic() + seconds + 60
        while len(delays) < n and time.monotonic() < deadline:
            m = c.poll(0.5)  # one at a time: a batch consume() would wait for its batch
            if m is not None and not m.error():
                delays.append(time.time() * 1000 - m.timestamp()[1])
    finally:
        w.stop()
        c.close()
    delays.sort()

    def rank(q):
        return delays[max(0, int(q * len(delays) + 0.999999) - 1)]
    return rank(0.50), rank(0.99), len(delays)


def rebalance(bootstrap: str, root: Path, delay_ms: int) -> dict:
    props = {"bootstrap.servers": bootstrap, **CONVERTERS, "group.id": "bench-connect",
             "config.storage.topic": "bench-configs", "offset.storage.topic": "bench-offsets",
             "status.storage.topic": "bench-status", "config.storage.replication.factor": 1,
             "offset.storage.replication.factor": 1, "status.storage.replication.factor": 1,
             "scheduled.rebalance.max.delay.ms": delay_ms, "offset.flush.interval.ms": 1000}
    create_topic(bootstrap, "bench-rebalance", 2)
    a = Worker(root, "dist-a", props, standalone=False)
    b = None
    result = {}
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                http(a.port, "/connectors", "POST", {"name": "gen", "config": {
                    "connector.class": GENERATOR, "tasks.max": "2", "topic": "bench-rebalance",
                    "throughput": "2000"}})
                break
            except OSError:
                time.sleep(0.2)  # the worker is still joining its group
        wait_for(a, lambda ts: len(ts) == 2 and all(t["state"] == "RUNNING" for t in ts), 60)
        b = Worker(root, "dist-b", props, standalone=False)
        joined = time.monotonic()
        b_id = f"127.0.0.1:{b.port}"
        samples = []  # (time, {task: (state, worker)}, {task: records written on A})
        deadline = joined + 60
        while time.monotonic() < deadline:
            ts = {str(t["id"]): (t["state"], t["worker_id"]) for t in a.tasks("gen")}
            written = {t: counter(a.port, "kafka_connect_source_task_source_record_write", t)
                       for t in ("0", "1")}
            now = time.monotonic()
            samples.append((now, ts, written))
            on_b = [t for t, (state, wid) in ts.items() if wid == b_id and state == "RUNNING"]
            if on_b and "join" not in result:
                result["join"], stay = now - joined, ({"0", "1"} - set(on_b)).pop()
                settle_until = now + 2  # keep watching the task that stays a little longer
            if "join" in result and now >= settle_until:
                break
            time.sleep(0.05)
        if "join" not in result:
            raise RuntimeError(f"no task moved to the joining worker within 60 s: {ts}")
        changes = [t for i, (t, _, w) in enumerate(samples)
                   if i == 0 or w[stay] != samples[i - 1][2][stay]]
        result["stay_gap"] = max(b - a_ for a_, b in zip(changes, changes[1:]))
        result["stay_states"] = sorted({ts[stay][0] for _, ts, _ in samples if stay in ts})
        b.stop(signal.SIGKILL)
        killed = time.monotonic()
        wait_for(a, lambda ts: len(ts) == 2 and all(
            t["state"] == "RUNNING" and t["worker_id"] == f"127.0.0.1:{a.port}" for t in ts),
            60 + delay_ms / 1000)
        result["kill"] = time.monotonic() - killed
    finally:
        if b is not None:
            b.stop()
        a.stop()
    return result


def wait_for(w: Worker, ok, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if ok(w.tasks("gen")):
            return
        time.sleep(0.05)
    raise RuntimeError(f"tasks not as expected within {seconds:.0f}s: {w.tasks('gen')}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=300_000, help="records per measurement")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--rate", type=int, default=2000, help="records/s of the latency run")
    ap.add_argument("--latency-seconds", type=int, default=15)
    ap.add_argument("--rebalance-delay-ms", type=int, default=1000,
                    help="the workers' scheduled.rebalance.max.delay.ms")
    ap.add_argument("--record-batch", default="true", choices=("true", "false"),
                    help="the generator's record.batch: a poll's records as one "
                         "SourceRecordBatch, or a list of SourceRecords")
    ap.add_argument("--only", default="throughput,latency,rebalance",
                    help="of throughput,floor,latency,rebalance")
    args = ap.parse_args(argv)
    only = set(args.only.split(","))
    root = Path(tempfile.mkdtemp(prefix="bench-connect-"))
    broker = Josefk(root, {"offsets.topic.replication.factor": 1,
                           "group.initial.rebalance.delay.ms": 0})
    rows = []
    try:
        broker.start()
        bs, n = broker.bootstrap, args.records
        for r in range(args.rounds if "throughput" in only else 0):
            row = {}
            for who in ("worker", "bare"):
                topic = f"bench-{who}-{r}"
                create_topic(bs, topic)
                if who == "worker":
                    row["source"], cpu, moved = source_worker(bs, root, topic, n,
                                                                  args.record_batch)
                    row["source cpu"] = cpu / moved * 1e6
                    row["sink"], cpu, moved = sink_worker(bs, root, topic, n)
                    row["sink cpu"] = cpu / moved * 1e6
                else:
                    row["bare producer"] = source_bare(bs, topic, n)
                    row["bare consumer"] = sink_bare(bs, topic, n)
            rows.append(row)
            print(f"round {r + 1}: source {row['source']:,.0f} rec/s (bare producer "
                  f"{row['bare producer']:,.0f}), sink {row['sink']:,.0f} rec/s (bare consumer "
                  f"{row['bare consumer']:,.0f}); worker CPU s per million: source "
                  f"{row['source cpu']:.1f}, sink {row['sink cpu']:.1f}", flush=True)
        if rows:
            def med(key):
                return statistics.median(row[key] for row in rows)
            print(f"\n| figure (median of {len(rows)}, {n:,} x 100 B) | worker | bare loop | "
                  "worker / bare |\n|---|---:|---:|---:|")
            for label, key, bare in (("source records/s", "source", "bare producer"),
                                     ("sink records/s", "sink", "bare consumer")):
                print(f"| {label} | {med(key):,.0f} | {med(bare):,.0f} | "
                      f"{med(key) / med(bare):.2f} |")
            print(f"| worker CPU s per million records, source / sink | {med('source cpu'):.1f}"
                  f" / {med('sink cpu'):.1f} | | |")
        if "floor" in only:  # records made as the worker makes them, nothing else
            gc.set_threshold(GC_YOUNG_THRESHOLD, 10, 10)  # the worker's collector settings
            floor = {"source": [], "sink": [], "bare producer": [], "bare consumer": []}
            for r in range(args.rounds):
                topic = f"bench-floor-{r}"
                create_topic(bs, topic)
                floor["source"].append(source_floor(bs, topic, n, args.record_batch))
                floor["sink"].append(sink_floor(bs, topic, n))
                topic = f"bench-floor-bare-{r}"
                create_topic(bs, topic)
                floor["bare producer"].append(source_bare(bs, topic, n))
                floor["bare consumer"].append(sink_bare(bs, topic, n))
            f = {k: statistics.median(v) for k, v in floor.items()}
            print(f"floor (median of {args.rounds}): poll's records + produce "
                  f"{f['source']:,.0f} rec/s ({f['source'] / f['bare producer']:.2f} of the bare "
                  f"producer's {f['bare producer']:,.0f}); consume + SinkRecords "
                  f"{f['sink']:,.0f} rec/s ({f['sink'] / f['bare consumer']:.2f} of the bare "
                  f"consumer's {f['bare consumer']:,.0f})", flush=True)
        if "latency" in only:
            p50, p99, count = latency(bs, root, args.rate, args.latency_seconds)
            print(f"latency at {args.rate} rec/s ({count} records): p50 {p50:.1f} ms, "
                  f"p99 {p99:.1f} ms", flush=True)
        if "rebalance" in only:
            res = rebalance(bs, root, args.rebalance_delay_ms)
            print(f"rebalance: join {res['join']:.2f} s, kill -9 {res['kill']:.2f} s "
                  f"(scheduled.rebalance.max.delay.ms={args.rebalance_delay_ms}); the task "
                  f"that stayed: longest write gap {res['stay_gap'] * 1000:.0f} ms, states "
                  f"seen {', '.join(res['stay_states'])}", flush=True)
    finally:
        broker.stop()
        cleanup_dir(root)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
