"""Restart time with big logs and many committed offsets (issue 11, defect 9).

Fills one broker with ``--gb`` of records (topic ``data``, 50 partitions) and ``--offsets``
committed offsets (``--groups`` groups each committing every partition of ``data``, round after
round), stops it cleanly, then times restarts: from starting the process until the broker
answers Metadata and the last group's committed offsets come back as last committed (the group
coordinator has loaded ``__consumer_offsets``). With ``--before DIR`` (another checkout, e.g.
``git archive main | tar -x -C DIR`` and ``scripts/setup.sh`` there: it runs with its own
.venv) it alternates that code's restarts with this one's over the same data. Also ``--kill``: one more
round each after kill -9 (unclean shutdown, recovery from the recovery point).

    python -m bench.restart [--gb 1] [--offsets 1000000] [--rounds 3] [--before DIR]
"""
from __future__ import annotations

import argparse
import os
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

from confluent_kafka import ConsumerGroupTopicPartitions, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from bench import loads
from bench.brokers import REPO_ROOT, Josefk, cleanup_dir

PARTITIONS = 50
VALUE = 64 << 10
IN_FLIGHT = 200
READY_TIMEOUT = 600.0


class SameDataJosefk(Josefk):
    """A josefk broker from source tree ``root`` that keeps its data dir across restarts."""

    def __init__(self, workdir: Path, data_dir: Path, root: Path, name: str):
        super().__init__(workdir, {"offsets.topic.num.partitions": 50,
                                   "offsets.topic.replication.factor": 1,
                                   "group.initial.rebalance.delay.ms": 0},
                         start_timeout=READY_TIMEOUT, name=name, root=root)
        self.data_dir = data_dir

    def prepare(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)

    def cwd(self) -> str:
        return str(self.root)

    def env(self) -> dict:
        env = dict(os.environ)
        env["PYTHONPATH"] = str(self.root)
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        return env


def fill(bootstrap: str, gb: float, offsets: int, groups: int) -> tuple[str, int]:
    """Write the records and commits; returns (the last group, the offset it committed last)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic("data", PARTITIONS, 1)])["data"].result(60)
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.size": 1 << 20,
                  "message.max.bytes": 2 << 20, "queue.buffering.max.kbytes": 512 << 10})
    value = os.urandom(VALUE)
    n = int(gb * (1 << 30)) // VALUE
    loads.fill(p, "data", n, value, PARTITIONS, timeout=300)
    rounds = max(1, offsets // (groups * PARTITIONS))
    pending = []
    for r in range(rounds):
        for g in range(groups):
            tps = [TopicPartition("data", part, r + 1) for part in range(PARTITIONS)]
            pending += admin.alter_consumer_group_offsets(
                [ConsumerGroupTopicPartitions(f"group-{g}", tps)]).values()
            if len(pending) >= IN_FLIGHT:
                for f in pending:
                    f.result(60)
                pending = []
    for f in pending:
        f.result(60)
    print(f"filled: {n} records of {VALUE} bytes ({n * VALUE / 1e9:.2f} GB), "
          f"{rounds * groups * PARTITIONS} committed offsets ({groups} groups x {PARTITIONS} "
          f"partitions x {rounds} rounds)", flush=True)
    return f"group-{groups - 1}", rounds


def offsets_back(bootstrap: str, group: str, expected: int) -> bool:
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    try:
        res = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)],
                                                request_timeout=5)[group].result(10)
    except Exception:  # noqa: BLE001 - still loading: the coordinator answers with a retriable error
        return False
    got = [tp.offset for tp in res.topic_partitions]
    return len(got) == PARTITIONS and all(o == expected for o in got)


def timed_restart(b: SameDataJosefk, group: str, expected: int, kill: bool) -> float:
    if kill:
        os.killpg(b.proc.pid, signal.SIGKILL)
        b.proc.wait(10)
    b.stop(timeout=600)
    started = time.monotonic()
    b.start()
    deadline = started + READY_TIMEOUT
    while not offsets_back(b.bootstrap, group, expected):
        if time.monotonic() > deadline:
            raise RuntimeError(f"{b.name}: offsets not back within {READY_TIMEOUT:.0f}s")
        time.sleep(0.05)
    return time.monotonic() - started


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gb", type=float, default=1.0)
    ap.add_argument("--offsets", type=int, default=1_000_000)
    ap.add_argument("--groups", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--before", type=Path, help="another source tree to compare with")
    ap.add_argument("--kill", action="store_true", help="also time restarts after kill -9")
    args = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="josefk-restart-"))
    data = work / "data"
    brokers = [SameDataJosefk(work, data, REPO_ROOT, "after")]
    if args.before:
        brokers.append(SameDataJosefk(work, data, args.before.resolve(), "before"))
    try:
        first = brokers[0]
        first.start()
        group, expected = fill(first.bootstrap, args.gb, args.offsets, args.groups)
        print(f"data dir: {first.disk_mb() / 1e3:.2f} GB", flush=True)
        times: dict[str, list[float]] = {b.name: [] for b in brokers}
        running = first
        for r in range(args.rounds):
            for b in brokers:
                running.stop(timeout=600)
                t = timed_restart(b, group, expected, kill=False)
                times[b.name].append(t)
                running = b
                print(f"round {r + 1}: {b.name} clean restart {t:.2f}s", flush=True)
        if args.kill:
            for b in brokers:
                running.stop(timeout=600)
                b.start()
                t = timed_restart(b, group, expected, kill=True)
                running = b
                print(f"{b.name} restart after kill -9: {t:.2f}s", flush=True)
        for name, ts in times.items():
            print(f"{name}: clean restart median {statistics.median(ts):.2f}s "
                  f"(min {min(ts):.2f}, max {max(ts):.2f}, n={len(ts)})")
        running.stop(timeout=600)
    finally:
        for b in brokers:
            b.stop(timeout=30)
        cleanup_dir(work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
