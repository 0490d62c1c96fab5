"""``python -m bench.omb``: fixed-rate latency in the manner of the OpenMessaging Benchmark.

Workloads are data (bench/workloads/*.json, OMB's field names). For every round, every workload
runs once per broker, alternating (josefk, Tansu, the null broker: A B C A B C), in fresh
producer and consumer processes (bench/omb_worker.py) on fresh topics; workloads with a
replication factor above 1 run on a 3-broker josefk cluster (bench.cluster's launcher) instead,
alternating with the same workload at RF 1 acks=1 on that cluster. Producers send at a fixed
rate; publish and end-to-end latency are histograms (bench/histogram.py) measured from each
message's scheduled send time. Printed: every interval's rates and percentiles as it ends, then
per workload the medians over the rounds beside each other with ratios. ``--soak S`` runs each
workload once for S seconds and prints p99 per minute. See bench/README.md.
"""
from __future__ import annotations

import argparse
import json
import os
import queue
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field, replace
from pathlib import Path

from bench.brokers import REPO_ROOT, BrokerStartError, Josefk, NullBroker, Tansu, cleanup_dir
from bench.group1000 import cpu_seconds
from bench.histogram import Histogram, merged
from bench.run import environment, fmt_ratio, print_table
from bench.worker import Failed, create_topic, delete_topic

WORKLOAD_DIR = Path(__file__).resolve().parent / "workloads"
BROKERS = ("josefk", "tansu", "null")
PERCENTILES = (("p50", 50), ("p99", 99), ("p99.9", 99.9))


# -- workloads --------------------------------------------------------------------------------

@dataclass
class Workload:
    name: str
    topics: int
    partitions: int
    size: int
    rate: float                     # messages per second, all producers together
    duration_s: float
    warmup_s: float = 5.0
    replication_factor: int = 1
    acks: str = "all"
    producers: int = 1              # producersPerTopic: processes, each writing to every topic
    subscriptions: int = 1          # subscriptionsPerTopic: each reads every partition
    consumers: int = 1              # consumerPerSubscription: partitions split between them
    producer_config: dict = field(default_factory=dict)
    consumer_config: dict = field(default_factory=dict)


FIELDS = {"name", "topics", "partitionsPerTopic", "messageSize", "producerRate",
          "replicationFactor", "acks", "testDurationMinutes", "testDurationSeconds",
          "warmupDurationMinutes", "warmupDurationSeconds", "producersPerTopic",
          "subscriptionsPerTopic", "consumerPerSubscription", "producerConfig",
          "consumerConfig", "description"}


def parse_workload(data: dict, name: str) -> Workload:
    """A workload from its JSON; ValueError with one line saying what is wrong."""
    unknown = set(data) - FIELDS
    if unknown:
        raise ValueError(f"workload {name}: unknown field(s) {', '.join(sorted(unknown))}")

    def num(key, default=None, kind=int, low=1):
        v = data.get(key, default)
        if v is None:
            raise ValueError(f"workload {name}: {key} is required")
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v < low:
            raise ValueError(f"workload {name}: {key} must be a number >= {low}, got {v!r}")
        return kind(v)

    def seconds(minutes_key, seconds_key, default):
        if minutes_key in data and seconds_key in data:
            raise ValueError(f"workload {name}: give {minutes_key} or {seconds_key}, not both")
        if minutes_key in data:
            return num(minutes_key, kind=float, low=0) * 60
        return num(seconds_key, default, kind=float, low=0)

    acks = str(data.get("acks", "all"))
    if acks not in ("0", "1", "all", "-1"):
        raise ValueError(f"workload {name}: acks must be 0, 1 or all, got {acks!r}")
    for key in ("producerConfig", "consumerConfig"):
        if not isinstance(data.get(key, {}), dict):
            raise ValueError(f"workload {name}: {key} must be an object of librdkafka settings")
    w = Workload(
        name=str(data.get("name", name)), topics=num("topics"),
        partitions=num("partitionsPerTopic"), size=num("messageSize", low=8),
        rate=num("producerRate", kind=float, low=0.001),
        duration_s=seconds("testDurationMinutes", "testDurationSeconds", None),
        warmup_s=seconds("warmupDurationMinutes", "warmupDurationSeconds", 5.0),
        replication_factor=num("replicationFactor", 1), acks=acks,
        producers=num("producersPerTopic", 1), subscriptions=num("subscriptionsPerTopic", 1),
        consumers=num("consumerPerSubscription", 1),
        producer_config=dict(data.get("producerConfig", {})),
        consumer_config=dict(data.get("consumerConfig", {})))
    if w.duration_s <= 0:
        raise ValueError(f"workload {name}: the test duration must be above 0")
    return w


def load_workload(ref: str) -> Workload:
    """A shipped workload by name (bench/workloads/NAME.json) or a path to a JSON file."""
    path = Path(ref) if ref.endswith(".json") else WORKLOAD_DIR / f"{ref}.json"
    if not path.exists():
        shipped = ", ".join(sorted(p.stem for p in WORKLOAD_DIR.glob("*.json")))
        raise ValueError(f"no workload {ref!r} (shipped: {shipped})")
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise ValueError(f"workload {path}: not JSON: {e}") from None
    if not isinstance(data, dict):
        raise ValueError(f"workload {path}: must be a JSON object")
    return parse_workload(data, path.stem)


def consumer_assignments(w: Workload, topics: list[str]) -> list[list[tuple[str, int]]]:
    """One partition list per consumer process: every subscription reads every partition,
    split round robin between its consumers."""
    tps = [(t, p) for t in topics for p in range(w.partitions)]
    out = []
    for _ in range(w.subscriptions):
        for c in range(w.consumers):
            out.append(tps[c::w.consumers])
    return [a for a in out if a]


# -- one run ----------------------------------------------------------------------------------

class Proc:
    """A worker process; its stdout lines go to a shared queue as (index, kind, payload)."""

    def __init__(self, index: int, spec: dict, out: queue.Queue):
        self.index = index
        self.proc = subprocess.Popen([sys.executable, "-m", "bench.omb_worker", json.dumps(spec)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, cwd=str(REPO_ROOT),
                                     start_new_session=True)
        self.stderr: list[str] = []
        threading.Thread(target=self._read, args=(out,), daemon=True).start()
        threading.Thread(target=self._drain_err, daemon=True).start()

    def _read(self, out: queue.Queue) -> None:
        for line in self.proc.stdout:
            kind, _, rest = line.strip().partition(" ")
            if kind.startswith("OMB_"):
                out.put((self.index, kind, json.loads(rest) if rest else None))
        out.put((self.index, "EOF", None))

    def _drain_err(self) -> None:
        for line in self.proc.stderr:
            self.stderr = (self.stderr + [line.rstrip()])[-5:]

    def send(self, line: str) -> None:
        try:
            self.proc.stdin.write(line + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            pass

    def kill(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(10)


def merge_parts(parts: list[dict]) -> dict[str, Histogram]:
    """One interval's histograms of every process, merged by name."""
    hist: dict[str, Histogram] = {}
    for p in parts:
        for name, h in p["hist"].items():
            hist.setdefault(name, Histogram()).merge(Histogram.from_json(h))
    return hist


def interval_line(prefix: str, index: int, interval_s: float, parts: list[dict]) -> str:
    counts = {k: sum(p["counts"].get(k, 0) for p in parts) for k in ("acked", "received")}
    hist = merge_parts(parts)

    def pcts(h):
        return " ".join(f"{label} {ms(h.percentile(q))}" for label, q in
                        (("p50", 50), ("p99", 99))) if h and h.count else "-"
    return (f"{prefix} {index * interval_s:>5.0f}-{(index + 1) * interval_s:<5.0f}s  "
            f"pub {counts['acked'] / interval_s:>9,.0f} msg/s {pcts(hist.get('publish'))}  |  "
            f"e2e {counts['received'] / interval_s:>9,.0f} msg/s {pcts(hist.get('e2e'))} ms")


def ms(us) -> str:
    return "-" if us is None else f"{us / 1000:.2f}"


def run_once(w: Workload, bootstrap: str, label: str, opts, pids=(), delete=True) -> dict:
    """One workload against one broker: topics, processes, GO, intervals, results."""
    tag = uuid.uuid4().hex[:8]
    topics = [f"omb-{w.name}-{tag}-{k}" for k in range(w.topics)]
    for t in topics:
        create_topic(bootstrap, t, w.partitions, timeout=60,
                     replication_factor=w.replication_factor)
    duration, interval = opts.duration_s or w.duration_s, opts.interval_s
    warmup = w.warmup_s if opts.warmup_s is None else opts.warmup_s
    common = {"bootstrap": bootstrap, "interval_s": interval}
    producer_config = {"acks": w.acks, "linger.ms": 1, "batch.size": 1048576,
                       "enable.idempotence": False, "compression.type": "none",
                       "queue.buffering.max.messages": 1_000_000,
                       "message.timeout.ms": 60000, **w.producer_config}
    specs = [dict(common, role="consumer", assignment=a, consumer_config=w.consumer_config,
                  idle_stop_s=2.0, drain_s=opts.drain_s)
             for a in consumer_assignments(w, topics)]
    n_consumers = len(specs)
    specs += [dict(common, role="producer", topics=topics, size=w.size,
                   rate=w.rate / w.producers, producer_config=producer_config,
                   behind_grace_s=2.0, flush_s=opts.drain_s) for _ in range(w.producers)]
    out: queue.Queue = queue.Queue()
    procs = [Proc(i, s, out) for i, s in enumerate(specs)]
    results: dict[int, dict] = {}
    intervals: dict[int, list] = {}
    try:
        ready, deadline = set(), time.monotonic() + 60
        while len(ready) < len(procs):
            left = deadline - time.monotonic()
            try:
                i, kind, payload = out.get(timeout=max(0.01, left))
            except queue.Empty:
                raise Failed(f"{len(procs) - len(ready)} worker(s) not ready within 60 s") from None
            if kind == "OMB_READY":
                ready.add(i)
            elif kind in ("EOF", "OMB_RESULT"):
                raise Failed(f"worker {i} ended before the start: "
                             f"{(payload or {}).get('error') or ' | '.join(procs[i].stderr)}")
        cpu0 = [cpu_seconds(p) for p in pids]
        start = time.monotonic_ns() + 200_000_000
        measure = start + int(warmup * 1e9)
        end = measure + int(duration * 1e9)
        for p in procs:
            p.send(f"GO {start} {measure} {end}")
        hard = (end - time.monotonic_ns()) / 1e9 + opts.drain_s + 30
        deadline = time.monotonic() + hard
        ended = set()
        while len(ended) < len(procs) and time.monotonic() < deadline:
            try:
                i, kind, payload = out.get(timeout=0.5)
            except queue.Empty:
                continue
            if kind == "OMB_INTERVAL":
                parts = intervals.setdefault(payload["index"], [])
                parts.append(payload)
                if len(parts) == len(procs):
                    print(interval_line(f"  {label}", payload["index"], interval, parts),
                          flush=True)
            elif kind == "OMB_RESULT":
                results[i] = payload
                ended.add(i)
            elif kind == "EOF":
                ended.add(i)
        cpu1 = [cpu_seconds(p) for p in pids]
    finally:
        for p in procs:
            p.kill()
        if delete:
            for t in topics:
                delete_topic(bootstrap, t)
    missing = [i for i in range(len(procs)) if i not in results]
    if missing:
        raise Failed(f"no result from worker(s) {missing}: "
                     + " | ".join(procs[missing[0]].stderr)[-300:])
    failed = [r["error"] for r in results.values() if "error" in r]
    if failed:
        raise Failed(f"a worker failed: {failed[0]}")
    cpu = (sum(b - a for a, b in zip(cpu0, cpu1)) if pids and None not in cpu0 + cpu1
           else None)
    return summarize_run(w, [results[i] for i in range(n_consumers, len(procs))],
                         [results[i] for i in range(n_consumers)], duration, intervals,
                         len(procs), cpu)


def summarize_run(w: Workload, producers: list[dict], consumers: list[dict],
                  window_s: float, intervals: dict, n_procs: int, cpu: float | None) -> dict:
    pub = merged(Histogram.from_json(p["hist"]["publish"]) for p in producers)
    delay = merged(Histogram.from_json(p["hist"]["publish_delay"]) for p in producers)
    e2e = merged(Histogram.from_json(c["hist"]["e2e"]) for c in consumers)
    acked = sum(p["counts"]["acked"] for p in producers)
    received = sum(c["counts"]["received"] for c in consumers) / w.subscriptions
    target = w.rate
    figures = {"target msg/s": target, "achieved msg/s": acked / window_s,
               "consumed msg/s": received / window_s}
    for prefix, h in (("publish", pub), ("e2e", e2e)):
        for label, q in PERCENTILES:
            figures[f"{prefix} {label} ms"] = none_ms(h.percentile(q))
        figures[f"{prefix} max ms"] = none_ms(h.max)
    figures["publish delay p99 ms"] = none_ms(delay.percentile(99))
    if cpu is not None:
        figures["broker CPU s"] = round(cpu, 2)
    notes = []
    unsent = sum(p["unsent"] for p in producers)
    if acked < 0.99 * target * window_s or unsent:
        notes.append(f"could not hold the rate: {acked / window_s:,.0f} of {target:,.0f} msg/s "
                     f"acknowledged in the window, {unsent} scheduled messages never sent, "
                     f"publish delay p99 {ms(delay.percentile(99))} ms")
    errors = sum(p["errors"] for p in producers)
    if errors:
        notes.append(f"{errors} delivery errors (first: {producers[0]['first_error'] or '?'})")
    if received < acked:
        notes.append(f"{acked - received:,.0f} acknowledged messages of the window not consumed")
    per_interval = []
    for k in sorted(intervals):
        parts = intervals[k]
        if len(parts) < n_procs:
            continue
        per_interval.append({"index": k, **{f"{n} p99 ms": none_ms(h.percentile(99))
                                           for n, h in merge_parts(parts).items()}})
    return {"ok": True, "figures": figures, "notes": notes, "intervals": per_interval,
            "hist": {"publish": pub.to_json(), "publish_delay": delay.to_json(),
                     "e2e": e2e.to_json()},
            "producers": [{k: v for k, v in p.items() if k != "hist"} for p in producers]}


def none_ms(us):
    return None if us is None else us / 1000


# -- brokers ----------------------------------------------------------------------------------

class Cluster:
    """bench.cluster's 3-broker josefk cluster (a real ZooKeeper), as one more broker."""

    name = "cluster"

    def __init__(self, workdir: Path):
        from bench.cluster import bench_cluster

        self.cluster = bench_cluster(workdir / "cluster", 6000)

    def start(self) -> None:
        self.cluster.start()

    @property
    def bootstrap(self) -> str:
        return self.cluster.bootstrap

    def pids(self) -> list[int]:
        return [b.pid for b in self.cluster.brokers.values() if b.pid]

    def stop(self) -> None:
        self.cluster.stop()


def brokers_for(w: Workload, brokers: list[str]) -> list[str]:
    """Where a workload runs: replicated ones on the cluster, beside the same workload at
    RF 1 acks=1 on the same cluster (``cluster-rf1``), what replication costs at that rate."""
    return ["cluster", "cluster-rf1"] if w.replication_factor > 1 else brokers


def as_run_on(w: Workload, broker: str) -> Workload:
    return replace(w, replication_factor=1, acks="1") if broker == "cluster-rf1" else w


# -- output -----------------------------------------------------------------------------------

LOWER_BETTER = ("ms", "CPU s")


def fmt(figure: str, v) -> str:
    if v is None:
        return "-"
    return f"{v:,.0f}" if figure.endswith("msg/s") else f"{v:.2f}"


def summary(results: list[dict], workloads: list[Workload], brokers: list[str]) -> list[dict]:
    out = []
    for w in workloads:
        names = brokers_for(w, brokers)
        runs = {b: [r for r in results if r["workload"] == w.name and r["broker"] == b]
                for b in names}
        figures = []
        for rs in runs.values():
            for r in rs:
                for f in r.get("figures", {}):
                    if f not in figures:
                        figures.append(f)
        for f in figures:
            entry = {"workload": w.name, "figure": f, "per_broker": {}, "ratios": {}}
            for b, rs in runs.items():
                vals = [r["figures"].get(f) if r.get("ok") else None for r in rs]
                good = [v for v in vals if v is not None]
                entry["per_broker"][b] = {"values": vals,
                                          "median": statistics.median(good) if good else None}
            first = entry["per_broker"][names[0]]["median"]
            for b in names[1:]:
                other = entry["per_broker"][b]["median"]
                entry["ratios"][b] = first / other if first is not None and other else None
            out.append(entry)
    return out


def print_summary(entries: list[dict], workloads: list[Workload], brokers: list[str]) -> None:
    for w in workloads:
        names = brokers_for(w, brokers)
        rows = [e for e in entries if e["workload"] == w.name]
        print(f"\n== {w.name}: {w.topics} topic(s) x {w.partitions} partitions, "
              f"{w.size} B at {w.rate:,.0f} msg/s ({w.rate * w.size / 1e6:.1f} MB/s), "
              f"RF {w.replication_factor}, acks={w.acks}, {w.producers} producer(s), "
              f"{w.subscriptions} x {w.consumers} consumer(s)")
        if not rows:
            print("  no results")
            continue
        header = (["figure", "better"] + [f"{b} median" for b in names]
                  + [f"{names[0]}/{'ceiling' if b == 'null' else b}" for b in names[1:]]
                  + [f"{b} rounds" for b in names])
        table = []
        for e in rows:
            f = e["figure"]
            better = "lower" if f.endswith(LOWER_BETTER) else "higher"
            table.append([f, "-" if f.startswith("target") else better]
                         + [fmt(f, e["per_broker"][b]["median"]) for b in names]
                         + [fmt_ratio(e["ratios"][b]) if not f.startswith("target") else "-"
                            for b in names[1:]]
                         + [" ".join(fmt(f, v) if v is not None else "x"
                                     for v in e["per_broker"][b]["values"]) for b in names])
        print_table(table, header)


def print_drift(results: list[dict]) -> None:
    print("\n== soak: p99 per minute (ms), publish / end-to-end")
    for r in results:
        if not r.get("ok"):
            continue
        iv = r["intervals"]
        print(f"  {r['workload']} on {r['broker']}:")
        for x in iv:
            print(f"    minute {x['index'] + 1:>3}: {fmt('ms', x.get('publish p99 ms')):>8} / "
                  f"{fmt('ms', x.get('e2e p99 ms')):>8}")
        e2e = [x["e2e p99 ms"] for x in iv if x.get("e2e p99 ms") is not None]
        if len(e2e) >= 2:
            print(f"    e2e p99: first minute {e2e[0]:.2f}, median {statistics.median(e2e):.2f}, "
                  f"worst {max(e2e):.2f}, last {e2e[-1]:.2f} ms (last / first "
                  f"{e2e[-1] / e2e[0]:.2f})" if e2e[0] else "")


# -- main -------------------------------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench.omb", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--workloads", default=",".join(sorted(x.stem for x in
                                                          WORKLOAD_DIR.glob("*.json"))),
                   help="shipped workload names or paths to JSON files, comma separated "
                        "(default: every file in bench/workloads/)")
    p.add_argument("--brokers", default=",".join(BROKERS),
                   help="single brokers, in alternation order (default josefk,tansu,null); "
                        "workloads with replicationFactor > 1 run on a 3-broker josefk "
                        "cluster instead, beside themselves at RF 1 acks=1 there")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--duration", dest="duration_s", type=float, default=None,
                   help="seconds of every workload's measured window (default: the file's)")
    p.add_argument("--warmup", dest="warmup_s", type=float, default=None,
                   help="seconds sent before the window and not recorded (default: the file's)")
    p.add_argument("--interval", dest="interval_s", type=float, default=10.0,
                   help="seconds between the printed interval lines (default 10; 60 in soak)")
    p.add_argument("--drain", dest="drain_s", type=float, default=15.0,
                   help="after the window, at most this long for the last acknowledgements "
                        "and records (default 15)")
    p.add_argument("--soak", type=float, default=None, metavar="SECONDS",
                   help="one round of SECONDS per workload and broker, p99 per minute")
    p.add_argument("--json", dest="json_out", metavar="PATH")
    p.add_argument("--keep", action="store_true", help="keep the work dir (broker logs)")
    return p


def main(argv=None) -> int:
    opts = build_parser().parse_args(argv)
    try:
        workloads = [load_workload(r.strip()) for r in opts.workloads.split(",") if r.strip()]
    except ValueError as e:
        raise SystemExit(str(e)) from None
    brokers = [b.strip() for b in opts.brokers.split(",") if b.strip()]
    if not brokers or set(brokers) - set(BROKERS):
        raise SystemExit(f"--brokers: choose from {', '.join(BROKERS)}")
    if opts.soak:
        opts.duration_s, opts.rounds, opts.interval_s = opts.soak, 1, 60.0
    if opts.rounds < 1:
        raise SystemExit("--rounds must be >= 1")
    env = environment(None)
    print("== environment")
    for k, v in env.items():
        print(f"  {k}: {v}")
    workdir = Path(tempfile.mkdtemp(prefix="josefk-omb-"))
    needed = {b.removesuffix("-rf1") for w in workloads for b in brokers_for(w, brokers)}
    classes = {"josefk": lambda: Josefk(workdir, {}), "tansu": lambda: Tansu(workdir),
               "null": lambda: NullBroker(workdir), "cluster": lambda: Cluster(workdir)}
    instances, start_errors = {}, {}
    results = []

    def on_term(_signum, _frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_term)  # stop as on Ctrl-C: workers and brokers ended
    try:
        for b in [*brokers, "cluster"]:
            if b not in needed:
                continue
            try:
                instances[b] = classes[b]()
                instances[b].start()
                print(f"  {b}: started on {instances[b].bootstrap}")
            except (BrokerStartError, RuntimeError, OSError) as e:
                start_errors[b] = str(e)
                print(f"  {b}: failed to start: {e}")
        print("== runs", flush=True)
        for rnd in range(1, opts.rounds + 1):
            for w in workloads:
                for b in brokers_for(w, brokers):
                    rec = {"round": rnd, "workload": w.name, "broker": b}
                    label = f"r{rnd} {w.name} {b}"
                    server = b.removesuffix("-rf1")
                    if server in start_errors:
                        rec.update(ok=False,
                                   error=f"broker did not start: {start_errors[server]}")
                    else:
                        inst = instances[server]
                        pids = inst.pids() if server == "cluster" else [inst.proc.pid]
                        try:  # the null broker has no DeleteTopics
                            rec.update(run_once(as_run_on(w, b), inst.bootstrap, label, opts,
                                                pids, delete=b != "null"))
                        except Failed as e:
                            rec.update(ok=False, error=str(e))
                    results.append(rec)
                    print(progress(label, rec), flush=True)
    except KeyboardInterrupt:
        print("== interrupted; reporting what ran")
    finally:
        for inst in instances.values():
            inst.stop()
    entries = summary(results, workloads, brokers)
    print(f"\n== results: medians of {opts.rounds} round(s), brokers alternated; ratios = "
          f"the first broker's median over each other's (<1 is better for latencies)")
    print_summary(entries, workloads, brokers)
    if opts.soak:
        print_drift(results)
    if opts.json_out:
        with open(opts.json_out, "w") as fh:
            json.dump({"environment": env, "settings": vars(opts),
                       "workloads": [vars(w) for w in workloads], "results": results,
                       "summary": entries}, fh, indent=1, default=str)
        print(f"  JSON written to {opts.json_out}")
    if opts.keep:
        print(f"  work dir kept: {workdir}")
    else:
        cleanup_dir(workdir)
    return 0


def progress(label: str, rec: dict) -> str:
    if not rec.get("ok"):
        return f"  {label}: failed: {rec.get('error')}"
    f = rec["figures"]
    line = (f"  {label}: {f['achieved msg/s']:,.0f} of {f['target msg/s']:,.0f} msg/s, "
            f"publish p50 / p99 / p99.9 / max {fmt('ms', f['publish p50 ms'])} / "
            f"{fmt('ms', f['publish p99 ms'])} / {fmt('ms', f['publish p99.9 ms'])} / "
            f"{fmt('ms', f['publish max ms'])} ms, e2e {fmt('ms', f['e2e p50 ms'])} / "
            f"{fmt('ms', f['e2e p99 ms'])} / {fmt('ms', f['e2e p99.9 ms'])} / "
            f"{fmt('ms', f['e2e max ms'])} ms")
    return line + "".join(f"\n    note: {n}" for n in rec["notes"])


if __name__ == "__main__":
    sys.exit(main())
