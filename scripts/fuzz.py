#!/usr/bin/env python3
"""The long request fuzz run: ``.venv/bin/python scripts/fuzz.py --inputs 1000000``.

Starts a broker subprocess on a free 127.0.0.1 port, sends it generated and mutated requests of
every API and version (testkit/fuzzer.py), then checks that the broker is alive, that its
log shows no handler failure or traceback, and that a real client can still produce and consume.
Prints the figures; exits non-zero on any failure.
"""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from josefk.faults.processes import BrokerProcess  # noqa: E402
from compat_tests.conftest import SHARED_OVERRIDES  # noqa: E402
from testkit.fuzzer import BROKER_OVERRIDES, FuzzRun, check_broker_log  # noqa: E402
from compat_tests.helpers import create_topic, roundtrip_check  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--inputs", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--max-seconds", type=float, default=3600)
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="josefk-fuzz-")
    broker = BrokerProcess(data_dir=Path(tmp) / "data", log_dir=tmp,
                           overrides={**SHARED_OVERRIDES, **BROKER_OVERRIDES})
    broker.start()
    try:
        topics = [create_topic(broker.bootstrap, f"fuzz-{i}", 2) for i in range(3)]
        health = create_topic(broker.bootstrap, "health", 1)
        run = FuzzRun(broker.bootstrap, args.seed, topics, ["fuzz-g1", "fuzz-g2"])
        seconds = run.run(args.inputs, args.max_seconds, health_every=2000,
                          progress=lambda line: print(line, flush=True))
        print(run.summary(seconds))
        problems = list(run.hangs)
        if not broker.is_running():
            problems.append("broker process died")
        else:
            try:
                roundtrip_check(broker.bootstrap, health)
            except AssertionError as e:
                problems.append(f"a real client cannot produce and consume: {e}")
        problems += check_broker_log(broker.log_path.read_text(errors="replace"))
    finally:
        broker.stop()
    for p in problems[:20]:
        print("PROBLEM:", p)
    print(f"{len(problems)} problems")
    if problems:
        print(broker.log_tail(4000))
        print(f"broker log and data kept in {tmp}")
        return 1
    shutil.rmtree(tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
