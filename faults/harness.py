"""One fault run: a 3-broker cluster and ZooKeeper on 127.0.0.1, the workload, faults one after
another (each on a whole cluster), the final reads, the checker and the report.

The workload's clients (librdkafka) run in a child process (``python -m faults.workload``), so
that whatever happens to them this process stops the cluster; whatever happens here (an
error, Ctrl-C, SIGTERM), every process, mount, rule and cgroup of the run is gone when
``run()`` returns. ``python -m faults`` is its command line.
"""
from __future__ import annotations

import os
import pickle
import random
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from josefk.faults import checker, network
from josefk.faults.history import History
from josefk.faults.nemesis import KINDS, STORE_KINDS, Nemesis
from josefk.faults.objectstore import SeaweedFS, weed_binary
from josefk.faults.storeproxy import StoreProxy
from josefk.zk.local_server import free_port
from josefk.faults.processes import (QUICK_FAILOVER, REPO_ROOT, BrokerStartError, LocalCluster,
                              describe_exit)

now = time.time
SIZE = 3
OVERRIDES = {
    **QUICK_FAILOVER,
    "min.insync.replicas": 2,
    "transaction.state.log.num.partitions": 6,
    "transaction.state.log.replication.factor": 3,
    "transaction.state.log.min.isr": 2,
    "log.segment.bytes": 8 << 20,
}
GROUP = "faults-group"
# With a fault of the object store, faults-rf3 is tiered (in TIERED_BUCKET, the brokers reaching
# the store through a proxy of the harness): small segments, copied within a second, the
# local log keeping the last two
TIERED_TOPIC = "faults-rf3"
TIERED_BUCKET = "faults-tiered"
TIERED_TOPIC_CONFIG = {"remote.storage.enable": "true", "segment.bytes": "16384",
                       "local.retention.bytes": "32768", "retention.ms": "-1"}
TIERED_OVERRIDES = {"remote.log.manager.task.interval.ms": 500,
                    "remote.log.metadata.topic.num.partitions": 3,
                    "remote.log.metadata.topic.replication.factor": 3,
                    "log.retention.check.interval.ms": 1000}
# (name, partitions, replication factor, min.insync.replicas); topics are "faults-<name>"
TOPICS = (("rf3", 3, 3, 2), ("rf2", 3, 2, 1), ("rf1", 3, 1, 1), ("txn", 3, 3, 2))
WRITE_INTERVAL = 0.04  # each writer sends one record to each of its partitions this often
HEALTHY_TIMEOUT = 60.0
# The workload's own time bound: the faults' time plus this much for the final checks; with
# ``rounds``, FAULT_BOUND per fault (a fault, its heal and the wait for health take about 15 s).
WORKLOAD_SLACK = 900.0
FAULT_BOUND = 90.0
BROKER_FAULT_GAP_GOAL = 8.0  # the session timeout (6 s) + 2 s
SIGTERM_GAP_GOAL = 1.0


def gap_goal(kind: str) -> float | None:
    """The longest write gap a fault of ``kind`` may cause (None: no goal, e.g. ZooKeeper's)."""
    if kind in ("kill-zookeeper", checker.NO_FAULT):
        return None
    return SIGTERM_GAP_GOAL if kind == "sigterm" else BROKER_FAULT_GAP_GOAL


def partitions(*names: str) -> list[tuple[str, int]]:
    """The partitions of the topics ``names`` (e.g. "rf3")."""
    return [(f"faults-{name}", p) for name, n, *_ in TOPICS if name in names for p in range(n)]


@dataclass
class Options:
    minutes: float = 5.0  # time given to faults (ignored with rounds)
    rounds: int | None = None  # each kind this many times, in a shuffled order per round
    kinds: tuple[str, ...] = KINDS
    seed: int | None = None
    dir: Path | None = None  # kept; else a temp dir, kept only on keep, anomalies, gaps > goal
    keep: bool = False
    disk_mb: int = 512
    mirror: bool = False  # a destination cluster mirrors the topics (faults/mirror.py)


@dataclass
class Result:
    history: History
    anomalies: list[checker.Anomaly]
    rows: list[checker.Row]
    skipped: dict[str, str] = field(default_factory=dict)  # kind -> why it was not injected
    problems: list[str] = field(default_factory=list)  # the run's own failures

    @property
    def ok(self) -> bool:
        return not self.anomalies and not self.problems


def _store_available() -> bool:
    """Whether this machine can run a tiered cluster: SeaweedFS and obstore installed."""
    import importlib.util

    return weed_binary() is not None and importlib.util.find_spec("obstore") is not None


def _interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


class Run:
    def __init__(self, opts: Options, out=print):
        self.opts, self.say = opts, out
        self.seed = opts.seed if opts.seed is not None else random.randrange(1 << 31)
        self.rng = random.Random(self.seed)
        self.root = Path(opts.dir or tempfile.mkdtemp(prefix="josefk-faults-")).resolve()
        self.root.mkdir(parents=True, exist_ok=True)
        self.history = History()
        self.store = self.proxy = None  # without them, the nemesis skips the store's kinds
        overrides = dict(OVERRIDES)
        if set(STORE_KINDS) & set(opts.kinds) and _store_available():
            self.store = SeaweedFS(self.root / "objectstore")
            self.proxy = StoreProxy(self.store.endpoint, random.Random(self.seed),
                                    port=free_port())
            overrides.update(TIERED_OVERRIDES, **self.store.overrides(TIERED_BUCKET))
            overrides["remote.log.storage.josefk.s3.endpoint"] = self.proxy.endpoint
        self.cluster = LocalCluster(self.root, SIZE, overrides=overrides, disk_mb=opts.disk_mb,
                                    isolation=True)
        self.metrics_ports = {}
        if self.store is not None:  # the nemesis reads the copy backlog from each broker
            for i, b in self.cluster.brokers.items():
                self.metrics_ports[i] = b.overrides["josefk.metrics.port"] = free_port()
        self.workload: subprocess.Popen | None = None
        self.mirror = None  # faults.mirror.Mirror, with opts.mirror
        self.skipped: dict[str, str] = {}
        self.problems: list[str] = []

    # -- the run -------------------------------------------------------------------------------
    def execute(self) -> Result:
        previous = {s: signal.signal(s, _interrupt) for s in (signal.SIGTERM, signal.SIGHUP)}
        try:
            self._run()
        except KeyboardInterrupt:
            self.problems.append("interrupted")
            self.say("interrupted: stopping everything")
        except Exception as e:  # noqa: BLE001 - reported, after everything is cleaned up
            self.problems.append(f"the harness failed: {e!r}")
            raise
        finally:
            for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
                signal.signal(s, signal.SIG_IGN)  # a second Ctrl-C must not stop the clean-up
            try:
                self._end_workload()
                if self.mirror is not None:
                    self._check_mirror()
                self.cluster.stop()
                if self.store is not None:
                    self.proxy.stop()
                    self.store.stop()
            finally:
                signal.signal(signal.SIGINT, signal.default_int_handler)
                for s, handler in previous.items():
                    signal.signal(s, handler)
        return self._report()

    def _run(self):
        o = self.opts
        self.say(f"josefk fault run: seed {self.seed}, {SIZE} brokers and ZooKeeper on "
                 f"127.0.0.1, faults {', '.join(o.kinds)}; run dir {self.root}")
        network.install_iptables(REPO_ROOT)
        if self.store is not None:
            self.store.start()
            self.proxy.start()
        self.cluster.start()
        if o.mirror:
            from josefk.faults.mirror import Mirror

            self.mirror = Mirror(self.root / "destination", self.cluster)
        self.history.gap_partitions = partitions("rf3", "rf2")
        nemesis = Nemesis(self.cluster, self.rng, self.history.gap_partitions, GROUP,
                          store=self.store, tiered_topic=TIERED_TOPIC,
                          metrics_ports=self.metrics_ports, crashes=self.history.crashes,
                          proxy=self.proxy, bucket=self._bucket(), mirror=self.mirror,
                          truncated=self.history.truncated)
        for kind in o.kinds:
            why = nemesis.unavailable(kind)
            if why:
                self.skipped[kind] = why
                self.say(f"skipping {kind}: {why}")
        kinds = [k for k in o.kinds if k not in self.skipped]
        faults_time = (o.rounds * len(kinds) * FAULT_BOUND if o.rounds else o.minutes * 60)
        self._start_workload(faults_time + WORKLOAD_SLACK)
        if self.mirror is not None:  # the workload made the topics
            self.mirror.start()
            self.say(f"mirror: {self.mirror.dest.bootstrap} mirrors "
                     + ", ".join(f"{t} (link {link})" for link, t in self.mirror.topics))
        time.sleep(5)  # the workload under way before the first fault
        for kind in self._schedule(kinds, now(), faults_time):
            self._wait_healthy(self.history.faults[-1] if self.history.faults else None)
            if self.workload.poll() is not None:
                return  # reported by _end_workload
            time.sleep(self.rng.uniform(1, 3))  # the whole cluster at work before the fault
            self._fault(nemesis, kind)
        self._wait_healthy(self.history.faults[-1] if self.history.faults else None)

    def _bucket(self):
        """The brokers' bucket, straight from the store (not through the proxy)."""
        if self.store is None:
            return None
        from josefk.tiered.store import S3Store

        return S3Store(TIERED_BUCKET, endpoint=self.store.endpoint,
                       access_key=self.store.access_key, secret_key=self.store.secret_key)

    def _schedule(self, kinds: list[str], started: float, faults_time: float):
        """The kinds to inject, shuffled in each round, for the run's rounds or minutes, and
        never past the ``faults_time`` the workload was given (it stops writing then)."""
        o = self.opts
        rounds = 0
        while kinds and (not o.rounds or rounds < o.rounds):
            order = list(kinds)
            self.rng.shuffle(order)
            for kind in order:
                if not o.rounds and now() - started >= o.minutes * 60:
                    return
                if now() - started > faults_time:
                    self.problems.append(f"the faults took longer than the {faults_time:.0f} s "
                                         "the workload was given; stopped injecting")
                    return
                yield kind
            rounds += 1

    def _fault(self, nemesis: Nemesis, kind: str):
        try:
            f = nemesis.inject(kind)
        except BrokerStartError as e:
            at = now()
            self.history.crashes.append((at, f"a broker did not start again after {kind}: "
                                             f"{str(e).splitlines()[0]}"))
            self.say(f"{_clock(at)} {kind}: a broker did not start again:\n{e}")
            return
        self.history.faults.append(f)
        self.say(f"{_clock(f.injected)} {kind:<16} {f.target}: healed after "
                 f"{f.healed - f.injected:.1f} s" + "".join(f"; {n}" for n in f.notes))

    def _wait_healthy(self, fault):
        """Until every broker is up and registered, with a controller, and every partition has
        a leader and its whole ISR (restarting brokers that exited by themselves)."""
        deadline = now() + HEALTHY_TIMEOUT
        last = None
        while now() < deadline:
            for i, b in self.cluster.brokers.items():
                if b.proc is not None and not b.is_running():
                    what = f"broker {i} {describe_exit(b.proc.returncode)} by itself"
                    self.history.crashes.append((now(), what))
                    self.say(f"{_clock(now())} {what}; restarting it\n{b.log_tail(2000)}")
                    try:
                        b.start()
                    except BrokerStartError as e:
                        self.say(str(e))
            last = self._unhealthy()
            if last is None:
                if fault is not None:
                    fault.recovered = now()
                return
            time.sleep(0.5)
        what = f"the cluster was not whole {HEALTHY_TIMEOUT:.0f} s after the fault: {last}"
        if fault is not None:
            fault.notes.append(what)
        self.history.crashes.append((now(), what))
        self.say(f"{_clock(now())} {what}")

    def _unhealthy(self) -> str | None:
        """What is not whole yet (None: everything)."""
        for i in self.cluster.brokers:
            try:
                md = self.cluster.metadata_from(i)
            except (OSError, ConnectionError) as e:
                return f"broker {i} does not answer Metadata ({e})"
            if len(md.brokers) != SIZE or md.controller_id < 0:
                return f"broker {i} lists brokers {sorted(b.node_id for b in md.brokers)}, " \
                       f"controller {md.controller_id}"
            for t in md.topics:
                for p in t.partitions:
                    if p.leader_id < 0 or sorted(p.isr_nodes) != sorted(p.replica_nodes):
                        return f"broker {i}: {t.name}-{p.partition_index} leader " \
                               f"{p.leader_id}, replicas {p.replica_nodes}, isr {p.isr_nodes}"
        return None

    # -- the workload process ------------------------------------------------------------------
    def _start_workload(self, seconds: float):
        launcher = (self.cluster.partitioner.launcher("workload")
                    if self.cluster.partitioner else [])
        log = open(self.root / "workload.log", "ab")
        try:
            self.workload = subprocess.Popen(
                [*launcher, sys.executable, "-m", "josefk.faults.workload", self.cluster.bootstrap,
                 str(self.root), str(self.rng.randrange(1 << 31)), str(seconds),
                 *(["tiered"] if self.store is not None else [])],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True,
                start_new_session=True, cwd=str(REPO_ROOT),
                env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
        finally:
            log.close()
        if _says(self.workload, 120) != "ready":
            raise RuntimeError(f"the workload did not start:\n{self._workload_log()}")

    def _workload_log(self) -> str:
        try:
            return (self.root / "workload.log").read_text(errors="replace")[-3000:]
        except OSError:
            return ""

    def _end_workload(self):
        """Tell the workload to stop and read everything back; take its history."""
        w, self.workload = self.workload, None
        if w is None:
            return
        try:
            if w.poll() is None and not self.problems:
                w.stdin.write("stop\n")
                w.stdin.flush()
                if _says(w, 600) == "done":
                    w.wait(30)
        except (OSError, subprocess.TimeoutExpired):
            pass
        if w.poll() is None:
            w.terminate()
            try:
                w.wait(10)
            except subprocess.TimeoutExpired:
                w.kill()
                w.wait(10)
        path = self.root / "workload.pickle"
        if w.returncode == 0 and path.exists():
            with open(path, "rb") as f:
                history, problems = pickle.load(f)
            path.unlink()
            self.problems += problems
            history.faults, history.crashes = self.history.faults, self.history.crashes
            history.gap_partitions = self.history.gap_partitions
            history.truncated = self.history.truncated
            self.history = history
        elif not self.problems:
            self.problems.append(f"the workload process {describe_exit(w.returncode)}; its "
                                 f"log:\n{self._workload_log()}")

    def _check_mirror(self):
        """The destination caught up and equal to the source (`Mirror.final_check`), then
        stopped."""
        try:
            if not self.problems:
                anomalies, notes = self.mirror.final_check(self.history.writes)
                self.history.mirror += anomalies
                self.say(f"mirror: {len(notes)} partitions compared with the source, "
                         f"{len(anomalies)} anomalies")
        except Exception as e:  # noqa: BLE001 - reported, the clean-up goes on
            self.problems.append(f"the mirror check failed: {e!r}")
        finally:
            self.mirror.stop()

    # -- the report ----------------------------------------------------------------------------
    def _report(self) -> Result:
        h = self.history
        h.end = h.end or now()
        anomalies = checker.check(h)
        gaps = checker.write_gaps(h.writes, h.faults, h.gap_partitions, h.end)
        rows = checker.summarize(h, anomalies, gaps, self.opts.kinds)
        say = self.say
        say("")
        say(f"{len(h.faults)} faults; {sum(w.acked is not None for w in h.writes)} of "
            f"{len(h.writes)} idempotent records acknowledged; {len(h.txns)} transactions "
            f"({', '.join(f'{n} {k}' for k, n in Counter(t.outcome for t in h.txns).items())}); "
            f"{sum(c.ok for c in h.commits)} of {len(h.commits)} offset commits acknowledged; "
            f"{len(h.resumes)} partition assignments; {len(h.offset_reads)} OffsetFetch answers")
        for what, errors in (("write", [w.error for w in h.writes if w.error]),
                             ("commit", [c.error for c in h.commits if not c.ok])):
            if errors:
                say(f"{what} errors (outcome unknown): " + "; ".join(
                    f"{n} x {e}" for e, n in Counter(errors).most_common(4)))
        say("")
        say(checker.format_table(rows))
        say("(gap: the longest time without an acknowledged acks=all write on a partition with "
            "replicas, from a fault's injection until the cluster was whole again; failover: "
            "from the injection until a surviving broker named new leaders for the watched "
            "partitions the victim led; p50 and max over the faults of the kind)")
        self._goals(rows)
        over_goal = self._over_goal(gaps)
        if anomalies:
            say("")
            say("Anomalies (at most 5 per class):")
            shown = Counter()
            for a in anomalies:
                shown[a.kind] += 1
                if shown[a.kind] <= 5:
                    say(f"  {_clock(a.at)} [{a.kind}] during {checker.kind_at(a.at, h.faults)}: "
                        f"{a.detail}")
        self._broker_errors()
        for p in self.problems:
            say(f"problem: {p}")
        if self.opts.keep or anomalies or self.problems or over_goal:
            with open(self.root / "history.pickle", "wb") as f:
                pickle.dump(h, f)  # with the faults: faults.history.History
            say(f"run dir kept: {self.root} (broker logs in broker-<id>/, clients.log, "
                f"workload.log, history.pickle); seed {self.seed}")
        elif self.opts.dir is None:
            shutil.rmtree(self.root, ignore_errors=True)
        return Result(h, anomalies, rows, self.skipped, self.problems)

    def _goals(self, rows):
        broker_rows = [r for r in rows if gap_goal(r.kind) == BROKER_FAULT_GAP_GOAL
                       and r.gap_worst is not None]
        sigterm = next((r for r in rows if r.kind == "sigterm" and r.gap_worst is not None), None)
        if broker_rows:
            worst = max(broker_rows, key=lambda r: r.gap_worst)
            self.say(f"write gap after a broker fault: worst {worst.gap_worst:.2f} s "
                     f"({worst.kind}); goal at most {BROKER_FAULT_GAP_GOAL:.0f} s")
        if sigterm:
            self.say(f"write gap after SIGTERM: worst {sigterm.gap_worst:.2f} s; goal under "
                     f"{SIGTERM_GAP_GOAL:.0f} s")

    def _over_goal(self, gaps):
        """Each broker fault whose write gap passed the goal, with how soon the cluster had
        named new leaders: the difference is the clients' time to find them. Returns how many
        (their evidence is worth keeping the run dir for)."""
        over = 0
        for f, g in zip(self.history.faults, gaps):
            goal = gap_goal(f.kind)
            if g is None or goal is None or g[0] <= goal:
                continue
            failover = "-" if f.failover is None else f"{f.failover:.2f} s"
            self.say(f"  over the goal: {_clock(f.injected)} {f.kind} {f.target}: gap "
                     f"{g[0]:.2f} s on {g[1][0]}-{g[1][1]}, new leaders named after {failover}")
            over += 1
        return over

    def _broker_errors(self):
        """Errors the brokers logged (for the report; not anomalies by themselves)."""
        for i, b in self.cluster.brokers.items():
            try:
                text = b.log_path.read_text(errors="replace")
            except OSError:
                continue
            errors = Counter(re.sub(r"^\d{4}-\d\d-\d\d [\d:,]+ ", "", line)[:200]
                             for line in text.splitlines()
                             if " ERROR " in line or "Task exception was never retrieved" in line
                             or re.match(r"^\w+(\.\w+)*(Error|Exception): ", line))
            if errors:
                self.say(f"broker {i} logged {sum(errors.values())} errors ({b.log_path}); "
                         f"most frequent:")
                for line, n in errors.most_common(5):
                    self.say(f"  {n:>5} x {line}")


def _says(proc: subprocess.Popen, timeout: float) -> str | None:
    """The next line ``proc`` prints within ``timeout`` seconds (None: nothing)."""
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    return proc.stdout.readline().strip() if ready else None


def _clock(t: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(t)) + f".{int(t * 1000) % 1000:03d}"


def run(opts: Options, out=print) -> Result:
    return Run(opts, out).execute()
