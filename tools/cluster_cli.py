"""`josefk cluster --brokers N`: ZooKeeper and N brokers on 127.0.0.1 for trying things out.

Everything lives under one directory (``--dir``): ``zookeeper/`` and ``broker-<id>/`` with each
process's log. Ctrl-C (or SIGTERM) stops the brokers with a controlled shutdown, then ZooKeeper.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from josefk.zk.local_server import LocalZooKeeper, ZooKeeperNotInstalled, ZooKeeperStartError

CHROOT = "/josefk"


def add_commands(sub):
    c = sub.add_parser("cluster", help="run ZooKeeper and N brokers on 127.0.0.1")
    c.add_argument("--brokers", type=int, default=3)
    c.add_argument("--dir", default="./josefk-cluster", help="data and logs of every process")
    c.add_argument("--port", type=int, default=9092, help="first broker's port (then +1, +2...)")
    c.add_argument("--zookeeper-port", type=int, default=2181)
    c.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                   help="a broker property for every broker (repeatable)")
    c.set_defaults(func=run_cluster)


def broker_command(node_id: int, port: int, log_dir: Path, zk_connect: str, overrides):
    cmd = [sys.executable, "-m", "josefk", "broker",
           "--listeners", f"PLAINTEXT://127.0.0.1:{port}", "--log-dirs", str(log_dir),
           "--node-id", str(node_id), "--zookeeper-connect", zk_connect]
    for kv in overrides:
        cmd += ["--override", kv]
    return cmd


def run_cluster(args) -> int:
    if args.brokers < 1:
        print("josefk cluster: --brokers must be at least 1", file=sys.stderr)
        return 2
    root = Path(args.dir).resolve()
    root.mkdir(parents=True, exist_ok=True)
    zk = LocalZooKeeper(root / "zookeeper", port=args.zookeeper_port)
    try:
        zk.start()
    except (ZooKeeperNotInstalled, ZooKeeperStartError) as e:
        print(f"josefk cluster: {e}", file=sys.stderr)
        return 1
    connect = zk.connect_string + CHROOT
    rf = min(3, args.brokers)
    overrides = [f"default.replication.factor={rf}", f"offsets.topic.replication.factor={rf}",
                 f"min.insync.replicas={max(1, rf - 1)}", *args.override]
    procs = []
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    try:
        for i in range(args.brokers):
            d = root / f"broker-{i + 1}"
            d.mkdir(exist_ok=True)
            log = open(d / "broker.log", "ab")
            procs.append(subprocess.Popen(
                broker_command(i + 1, args.port + i, d / "data", connect, overrides),
                stdout=log, stderr=log, stdin=subprocess.DEVNULL, start_new_session=True,
                env={**os.environ, "PYTHONUNBUFFERED": "1"}))
        bootstrap = ",".join(f"127.0.0.1:{args.port + i}" for i in range(args.brokers))
        print(f"ZooKeeper at {connect}; brokers at {bootstrap}; data and logs in {root}",
              flush=True)
        print("Ctrl-C stops the cluster.", flush=True)
        while not stopping:
            for i, p in enumerate(procs):
                if p.poll() is not None:
                    print(f"broker {i + 1} exited with code {p.returncode} (see "
                          f"{root}/broker-{i + 1}/broker.log)", file=sys.stderr, flush=True)
                    return 1
            time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        print("stopping the cluster...", flush=True)
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(60)
            except subprocess.TimeoutExpired:
                p.kill()
        zk.stop()
    return 0
