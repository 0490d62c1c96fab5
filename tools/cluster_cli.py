"""`josefk cluster --brokers N`: ZooKeeper and N brokers on 127.0.0.1 for trying things out.

Everything lives under one directory (``--dir``): ``zookeeper/`` and ``broker-<id>/`` with each
broker's data and log. A broker that exits (a crash, a kill -9) is reported in one line and the
others keep serving; lines typed on stdin act on the brokers, to watch a failover:

    kill N      kill -9 broker N (when its ZooKeeper session times out, the controller moves
                its leaderships to the others)
    stop N      stop broker N with a controlled shutdown (SIGTERM)
    restart N   start broker N again (after stopping it, if it runs)
    status      which brokers run

``--restart-after S`` restarts a broker that is down S seconds later by itself. Ctrl-C (or
SIGTERM) stops the brokers with a controlled shutdown, then ZooKeeper.

Once every broker lists the others, one line says so (``cluster ready: bootstrap servers
...``); a process that cannot start fails the command at once (exit code 1), with its own line.
"""
from __future__ import annotations

import queue
import signal
import sys
import threading
import time

from josefk.broker.config import DEFAULTS, EXIT_CONFIG, EXIT_RUNTIME, fail
from josefk.faults.processes import BrokerStartError, LocalCluster, describe_exit
from josefk.zk.local_server import ZooKeeperNotInstalled, ZooKeeperStartError

HELP = ('type "kill N" (kill -9), "stop N" (controlled shutdown), "restart N" or "status"; '
        'Ctrl-C stops the cluster')


def add_commands(sub):
    c = sub.add_parser("cluster", help="run ZooKeeper and N brokers on 127.0.0.1")
    c.add_argument("--brokers", type=int, default=3, help="how many brokers")
    c.add_argument("--dir", default="./josefk-cluster", help="data and logs of every process")
    c.add_argument("--port", type=int, default=9092, help="first broker's port (then +1, +2...)")
    c.add_argument("--zookeeper-port", type=int, default=2181, help="ZooKeeper's client port")
    c.add_argument("--restart-after", type=float, metavar="SECONDS",
                   help="restart a broker that is down after this long (default: only on "
                        "request)")
    c.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                   help="a broker property for every broker (repeatable)")
    c.set_defaults(func=run_cluster)


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def _read_lines(stream, lines: queue.Queue):
    for line in stream:
        lines.put(line)


def run_cluster(args) -> int:
    if args.brokers < 1:
        return fail("cluster", "--brokers must be at least 1", EXIT_CONFIG)
    rf = min(3, args.brokers)
    overrides = {"default.replication.factor": rf, "offsets.topic.replication.factor": rf,
                 "transaction.state.log.replication.factor": rf,
                 "transaction.state.log.min.isr": max(1, rf - 1),
                 "min.insync.replicas": max(1, rf - 1)}
    for kv in args.override:
        key, sep, value = kv.partition("=")
        if not sep:
            return fail("cluster", f"--override expects KEY=VALUE, got {kv!r}", EXIT_CONFIG)
        overrides[key.strip()] = value.strip()
    cluster = LocalCluster(args.dir, args.brokers, zookeeper_port=args.zookeeper_port,
                           first_port=args.port, overrides=overrides)
    # SIGINT said explicitly too: a shell starts a background job with SIGINT ignored, and a
    # Python started so never turns it into KeyboardInterrupt (kill -INT would do nothing).
    # SIGHUP (its terminal closed) stops the cluster too, instead of orphaning the brokers.
    for sig in (signal.SIGINT, signal.SIGTERM, getattr(signal, "SIGHUP", None)):
        if sig is not None:
            signal.signal(sig, _interrupt)
    print(f"starting ZooKeeper and {args.brokers} brokers in {cluster.root}...", flush=True)
    try:
        cluster.start()
    except (ZooKeeperNotInstalled, ZooKeeperStartError, BrokerStartError, AssertionError) as e:
        # the first line names the cause (the rest is the process's log, kept in its file); a
        # broker refusing its configuration (--override) is the command's bad configuration
        bad_config = isinstance(e, BrokerStartError) and e.exit_code == EXIT_CONFIG
        return fail("cluster", str(e).splitlines()[0], EXIT_CONFIG if bad_config else
                    EXIT_RUNTIME)
    except KeyboardInterrupt:
        return 0
    try:
        for i, b in cluster.brokers.items():
            print(f"broker {i}: pid {b.pid}, {b.bootstrap}, log {b.log_path}", flush=True)
        print(f"cluster ready: bootstrap servers {cluster.bootstrap} (ZooKeeper "
              f"{cluster.zk_connect})", flush=True)
        print(HELP, flush=True)
        _serve(cluster, args.restart_after)
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not cut it short
        try:
            print("stopping the cluster...", flush=True)
        except OSError:  # the terminal is gone (SIGHUP): stop all the same
            pass
        cluster.stop(timeout=60)
    return 0


def _serve(cluster: LocalCluster, restart_after: float | None) -> None:
    """Report brokers that go down, restart them (on request, or after ``restart_after``), and
    act on the commands typed on stdin, until interrupted."""
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=_read_lines, args=(sys.stdin, lines), daemon=True).start()
    down: dict[int, float] = {}  # broker id -> since when it is known to be down
    while True:
        for i, b in cluster.brokers.items():
            if i not in down and not b.is_running():
                down[i] = time.monotonic()
                print(f"broker {i} (pid {b.pid}) {describe_exit(b.proc.returncode)}; the others "
                      f"keep serving (\"restart {i}\" starts it again; log {b.log_path})",
                      flush=True)
        if restart_after is not None:
            for i, since in list(down.items()):
                if time.monotonic() - since >= restart_after:
                    _restart(cluster, i, down)
        try:
            line = lines.get(timeout=0.5)
        except queue.Empty:
            continue
        _command(cluster, line.split(), down)


def _command(cluster: LocalCluster, words: list[str], down: dict[int, float]) -> None:
    if words == ["status"]:
        for i, b in cluster.brokers.items():
            state = f"running, pid {b.pid}" if b.is_running() else \
                describe_exit(b.proc.returncode)
            print(f"broker {i} ({b.bootstrap}): {state}", flush=True)
        return
    brokers = ", ".join(map(str, cluster.brokers))
    if len(words) != 2 or words[0] not in ("kill", "stop", "restart") or not words[1].isdigit():
        print(f"unknown command {' '.join(words)!r}: {HELP} (brokers {brokers})", flush=True)
        return
    action, i = words[0], int(words[1])
    if i not in cluster.brokers:
        print(f"no broker {i} (brokers {brokers})", flush=True)
        return
    b = cluster.brokers[i]
    if action == "restart":
        _restart(cluster, i, down)
    elif not b.is_running():
        print(f"broker {i} is not running", flush=True)
    elif action == "kill":
        pid = b.pid
        cluster.kill(i)
        down[i] = time.monotonic()
        session = int(b.overrides.get("zookeeper.session.timeout.ms",
                                      DEFAULTS["zookeeper.session.timeout.ms"])) / 1000
        print(f"broker {i} (pid {pid}) killed with SIGKILL; its ZooKeeper session times out "
              f"after {session:g} s, then the controller moves its leaderships to the other "
              f"brokers", flush=True)
    else:
        print(f"stopping broker {i} (controlled shutdown)...", flush=True)
        code = cluster.shutdown(i)
        down[i] = time.monotonic()
        print(f"broker {i} stopped: it {describe_exit(code)}", flush=True)


def _restart(cluster: LocalCluster, i: int, down: dict[int, float]) -> None:
    try:
        b = cluster.restart(i)
    except BrokerStartError as e:
        down[i] = time.monotonic()
        print(f"broker {i} did not start again: {str(e).splitlines()[0]}", flush=True)
        return
    down.pop(i, None)
    print(f"broker {i} restarted (pid {b.pid})", flush=True)
