"""``python -m bench.commit_cost``: the broker CPU one synchronous OffsetCommit costs.

A josefk broker subprocess (fresh data dir), one confluent-kafka group member that
``subscribe()``s to a 1-partition topic and waits for its assignment, then N synchronous
commits of increasing offsets (capped in time). Printed per measurement: the broker's CPU
(user+system from ``/proc/<pid>/stat``, all threads) per commit in us, and commits/s; the
heartbeats the member sends meanwhile are in the broker's figure, as they are in the bench's.

``--before DIR`` names another checkout (e.g. ``git archive`` of main) whose broker runs in
alternation with this one's, each round A B, so both see the same machine; the summary gives
per code the median and the min-max of the rounds. ``--py-spy FILE`` records the broker of
this checkout under ``py-spy record --format raw`` during its commits (one file per round;
``--native`` adds C frames).
"""
from __future__ import annotations

import argparse
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

from confluent_kafka import Consumer, KafkaException, TopicPartition

from bench.brokers import REPO_ROOT, Josefk
from bench.worker import Failed, create_topic

now = time.monotonic


def _member(bootstrap: str, topic: str, cap_s: float) -> Consumer:
    assigned = threading.Event()
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "commit-cost-" + uuid.uuid4().hex,
                  "session.timeout.ms": 10000, "heartbeat.interval.ms": 1000,
                  "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    c.subscribe([topic], on_assign=lambda _c, tps: assigned.set() if tps else None)
    deadline = now() + cap_s
    while not assigned.is_set() and now() < deadline:
        c.poll(0.05)
    if not assigned.is_set():
        c.close()
        raise Failed(f"no assignment within {cap_s}s")
    return c


def _commits(c: Consumer, topic: str, n: int, cap_s: float) -> tuple[int, int]:
    """Up to ``n`` synchronous commits within ``cap_s``; (ok, failed)."""
    ok = failed = 0
    end = now() + cap_s
    while ok + failed < n and now() < end and failed <= 100:
        try:
            res = c.commit(offsets=[TopicPartition(topic, 0, ok + failed + 1)],
                           asynchronous=False)
            if res and res[0].error is not None:
                failed += 1
            else:
                ok += 1
        except KafkaException:
            failed += 1
    return ok, failed


def measure(broker: Josefk, n: int, cap_s: float, spy: str | None, native: bool) -> dict:
    broker.start()
    recorder = None
    try:
        topic = "commit-cost"
        create_topic(broker.bootstrap, topic, 1)
        c = _member(broker.bootstrap, topic, 30.0)
        try:
            if spy:
                recorder = subprocess.Popen(
                    [str(Path(sys.executable).with_name("py-spy")), "record", "--pid",
                     str(broker.proc.pid), "--format", "raw", "--rate", "1000", "--output", spy]
                    # --nonblocking keeps the broker's timing (a few stacks come out torn);
                    # py-spy reads C frames only from a stopped process
                    + (["--native"] if native else ["--nonblocking"]),
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                time.sleep(1.0)  # attached before the commits start
            cpu0, t0 = broker.cpu_seconds(), now()
            ok, failed = _commits(c, topic, n, cap_s)
            elapsed, cpu = now() - t0, broker.cpu_seconds() - cpu0
            committed = c.committed([TopicPartition(topic, 0)], timeout=10)[0].offset
        finally:
            c.close()
        if recorder is not None:
            recorder.send_signal(signal.SIGINT)  # py-spy writes its file then
            recorder.wait(30)
    finally:
        broker.stop()
    if not ok:
        raise Failed(f"no commit succeeded ({failed} failed)")
    return {"us_per_commit": cpu / ok * 1e6, "commits_per_s": ok / elapsed, "commits": ok,
            "failed": failed, "committed_ok": committed == ok + failed}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--commits", type=int, default=20000)
    ap.add_argument("--cap-seconds", type=float, default=60.0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--before", type=Path, help="another checkout, run in alternation")
    ap.add_argument("--py-spy", dest="spy", help="raw py-spy profile of this checkout's broker")
    ap.add_argument("--native", action="store_true", help="py-spy with native (C) frames")
    args = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="josefk-commit-cost-"))
    codes = [("after", REPO_ROOT)] + ([("before", args.before.resolve())] if args.before else [])
    # one broker object per code: each start gets a fresh data dir of its own
    brokers = {name: Josefk(work, {}, name=f"josefk-{name}", root=root) for name, root in codes}
    results = {name: [] for name, _ in codes}
    try:
        for r in range(args.rounds):
            for name, broker in brokers.items():
                spy = f"{args.spy}.{r}" if args.spy and name == "after" else None
                res = measure(broker, args.commits, args.cap_seconds, spy, args.native)
                results[name].append(res)
                print(f"round {r + 1} {name:>6}: {res['us_per_commit']:6.1f} us broker CPU per "
                      f"commit, {res['commits_per_s']:7.0f} commits/s ({res['commits']} ok, "
                      f"{res['failed']} failed, last offset fetched back: "
                      f"{'yes' if res['committed_ok'] else 'NO'})", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for name, rs in results.items():
        us = [x["us_per_commit"] for x in rs]
        cps = [x["commits_per_s"] for x in rs]
        print(f"{name:>6}: {statistics.median(us):6.1f} us/commit (min {min(us):.1f}, max "
              f"{max(us):.1f}), {statistics.median(cps):7.0f} commits/s (min {min(cps):.0f}, "
              f"max {max(cps):.0f})")


if __name__ == "__main__":
    main()
