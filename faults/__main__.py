"""``python -m faults``: a fault run against a local 3-broker josefk cluster (see README.md,
"Fault injection"). Exits 1 if the checker found any anomaly (or the run itself failed)."""
from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

from josefk.faults.harness import Options, run
from josefk.faults.nemesis import DESCRIPTIONS, KINDS


def parse_kinds(text: str) -> tuple[str, ...]:
    kinds = tuple(k.strip() for k in text.split(",") if k.strip())
    unknown = [k for k in kinds if k not in KINDS]
    if unknown or not kinds:
        raise argparse.ArgumentTypeError(f"unknown fault kind {', '.join(unknown) or text!r} "
                                         f"(known: {', '.join(KINDS)})")
    return kinds


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m faults",
        description="Inject faults into a local josefk cluster (ZooKeeper and 3 brokers on "
                    "127.0.0.1) under a workload of real clients, then check the history.",
        epilog="fault kinds:\n" + "\n".join(f"  {k:<17} {d}" for k, d in DESCRIPTIONS.items()),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=5.0,
                    help="inject faults for this long (default 5)")
    ap.add_argument("--rounds", type=int,
                    help="instead: inject each fault kind this many times")
    ap.add_argument("--faults", type=parse_kinds, default=KINDS, metavar="KIND[,KIND...]",
                    help="fault kinds to inject (default: all)")
    ap.add_argument("--seed", type=int, help="seed of the fault schedule (default: random, "
                                             "printed)")
    ap.add_argument("--dir", type=Path, help="run directory (default: a temp dir, removed "
                                             "unless there are anomalies or a write gap over "
                                             "the goal)")
    ap.add_argument("--keep", action="store_true", help="keep the run directory")
    ap.add_argument("--disk-mb", type=int, default=512,
                    help="size of each broker's log dir filesystem (default 512)")
    ap.add_argument("--mirror", action="store_true",
                    help="a second cluster of 3 brokers mirrors the workload's topics over two "
                         "cluster links; the link kinds (link-cut, source-truncate, "
                         "kill-dest-leader) need it")
    args = ap.parse_args(argv)
    if importlib.util.find_spec("confluent_kafka") is None:  # the workload's clients
        print("python -m faults: the workload needs confluent-kafka: scripts/setup.sh faults "
              "(or pip install 'josefk[faults]')", file=sys.stderr)
        return 2
    if args.rounds is not None and args.rounds < 1:
        ap.error("--rounds must be at least 1")
    result = run(Options(minutes=args.minutes, rounds=args.rounds, kinds=args.faults,
                         seed=args.seed, dir=args.dir, keep=args.keep, disk_mb=args.disk_mb,
                         mirror=args.mirror),
                 out=lambda line: print(line, flush=True))
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
