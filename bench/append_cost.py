"""``python -m bench.append_cost``: in process, the time of one ``Partition.append`` (validation,
conversion, timestamps, offsets, the write to the segment file) on a leader with acks=1, per
kind of record set: 1,000 records of 100 bytes in one v2 batch uncompressed, lz4 and on a
LogAppendTime topic, a v2 batch of 5 such records, and 1,000 such records as a message set of
format v1 (Produce v2: converted), also keyed on a compacted topic (records checked). No socket, no client: the least noisy view of the append path.

``--before DIR`` names another checkout (e.g. ``git archive`` of main, set up with
``scripts/setup.sh``) whose code runs in alternation with this one's, a process per code and
round (after, before, after, ...). Printed per round and code: us per append, the best of
``--repeats`` blocks of ``--appends`` appends; the summary gives per code the median and min-max
of the rounds and the ratio of the medians.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

WORKLOADS = ["v2 1000x100B", "v2 lz4 1000x100B", "v2 1000x100B LogAppendTime", "v2 5x100B",
             "v1 1000x100B", "v1 1000x100B compacted"]


def _worker(appends: int, repeats: int) -> dict:
    """Runs in the interpreter of the code measured: imports only what both codes have."""
    import gc
    import random
    import tempfile
    import time
    from types import SimpleNamespace

    from josefk.broker.replication.replica import Partition, PartitionState
    from josefk.storage.config import LogConfig
    from josefk.storage.log import Log
    from josefk.wire import legacy
    from josefk.wire.records import LZ4, build_batch

    rng = random.Random(33)
    values = [rng.randbytes(50) * 2 for _ in range(1000)]
    now = int(time.time() * 1000)
    rows = [(None, v, None, now + i % 7) for i, v in enumerate(values)]

    def v1_set(key=None):
        out = bytearray()
        for i, v in enumerate(values):
            legacy.write_message(out, i, 1, 0, now, key, v)
        return out

    kinds = {
        "v2 1000x100B": ({}, lambda: build_batch(rows), False),
        "v2 lz4 1000x100B": ({}, lambda: build_batch(rows, compression=LZ4), False),
        "v2 1000x100B LogAppendTime": ({"message.timestamp.type": "LogAppendTime"},
                                       lambda: build_batch(rows), False),
        "v2 5x100B": ({}, lambda: build_batch(rows[:5]), False),
        "v1 1000x100B": ({}, v1_set, True),
        "v1 1000x100B compacted": ({"cleanup.policy": "compact"}, lambda: v1_set(b"k"), True),
    }
    manager = SimpleNamespace(node_id=1, isr_changes=None)
    out = {}
    for name, (props, make, old_formats) in kinds.items():
        with tempfile.TemporaryDirectory(prefix="append-cost-") as d:
            cfg = LogConfig.from_props(props, {})
            part = Partition(manager, "t", 0, Log(Path(d) / "t-0", cfg), cfg)
            part.make_leader(PartitionState("t", 0, 1, 5, [1], [1]))
            buf = make()
            for _ in range(3):  # the segment file's first writes
                part.append(buf, 1, old_formats)
            best = None
            for _ in range(repeats):
                gc.collect()
                gc.disable()
                t0 = time.perf_counter()
                for _ in range(appends):
                    res = part.append(buf, 1, old_formats)
                elapsed = time.perf_counter() - t0
                gc.enable()
                if res.error:
                    raise SystemExit(f"{name}: append failed with error {res.error}")
                best = elapsed if best is None else min(best, elapsed)
            out[name] = best / appends * 1e6
            part.log.close()
    return out


def _run(root: Path, appends: int, repeats: int) -> dict:
    from bench.brokers import _python_of

    proc = subprocess.run([_python_of(root), __file__, "--worker", str(appends), str(repeats)],
                          cwd=root, capture_output=True, text=True, timeout=600, check=False)
    if proc.returncode:
        raise SystemExit(f"worker of {root} failed:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout)


def main(argv=None) -> None:
    from bench.brokers import REPO_ROOT

    ap = argparse.ArgumentParser(prog="python -m bench.append_cost", description=__doc__)
    ap.add_argument("--before", type=Path, help="another checkout, run in alternation")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--appends", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args(argv)
    codes = [("after", REPO_ROOT)] + ([("before", args.before.resolve())] if args.before else [])
    results = {name: [] for name, _ in codes}
    for r in range(args.rounds):
        for name, root in codes:
            res = _run(root, args.appends, args.repeats)
            results[name].append(res)
            print(f"round {r + 1} {name}: " + ", ".join(f"{w} {res[w]:.1f} us"
                                                      for w in WORKLOADS), flush=True)
    print("\nus per append: median (min-max) over the rounds")
    print("| workload | " + " | ".join(name for name, _ in codes)
          + (" | after/before |" if args.before else " |"))
    for w in WORKLOADS:
        cells, medians = [], {}
        for name, _ in codes:
            xs = [res[w] for res in results[name]]
            medians[name] = statistics.median(xs)
            cells.append(f"{medians[name]:.1f} ({min(xs):.1f}-{max(xs):.1f})")
        ratio = f" | {medians['after'] / medians['before']:.3f}" if args.before else ""
        print(f"| {w} | " + " | ".join(cells) + ratio + " |")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--worker":
        print(json.dumps(_worker(int(sys.argv[2]), int(sys.argv[3]))))
    else:
        main()
