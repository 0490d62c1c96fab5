"""Local josefk processes: one broker (``BrokerProcess``) and a ZooKeeper cluster of them
(``LocalCluster``), on 127.0.0.1, with the faults an operator meets on demand.

The one launcher of the project: the compatibility tests, ``josefk cluster`` and the fault
harness (``python -m faults``) all start brokers through it. It knows the broker only through
its command line, its sockets, its signals and ZooKeeper; readiness is asked with Metadata
requests of josefk's own client.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from josefk.faults import disk, network
from josefk.zk.local_server import LocalZooKeeper, free_port

REPO_ROOT = Path(__file__).resolve().parent.parent
# A source checkout runs its brokers from its root (its packages on PYTHONPATH); an installed
# josefk runs them as any installed package, so that its subpackages (storage, broker...) never
# stand on sys.path as top-level modules.
CHECKOUT = REPO_ROOT if (REPO_ROOT / "setup.py").exists() else None

# The interpreter that runs the broker: the one running the caller (the venv's), unless
# overridden.
BROKER_PYTHON = os.environ.get("JOSEFK_PYTHON", sys.executable)

DEFAULT_START_TIMEOUT = 20.0
DEFAULT_STOP_TIMEOUT = 15.0

# Short timeouts so that failures are detected in seconds, not Kafka's default 18-30 s (the
# compatibility tests' clusters and the fault harness run with these).
QUICK_FAILOVER = {
    "zookeeper.session.timeout.ms": 6000,
    "replica.lag.time.max.ms": 4000,
    "replica.fetch.backoff.ms": 200,
    "replica.fetch.wait.max.ms": 200,
    "controlled.shutdown.retry.backoff.ms": 500,
    "group.initial.rebalance.delay.ms": 0,
    "offsets.topic.num.partitions": 6,
    "offsets.topic.replication.factor": 3,
    "default.replication.factor": 3,
    "num.partitions": 3,
    "auto.leader.rebalance.enable": "false",
}


def port_accepts(host: str, port: int, timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def describe_exit(code: int | None) -> str:
    """``-9`` -> "was killed by SIGKILL", ``0`` -> "exited normally", ``1`` -> "exited with
    code 1"."""
    if code is None:
        return "is running"
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return "exited normally" if code == 0 else f"exited with code {code}"


class BrokerStartError(RuntimeError):
    """A broker that did not start; ``exit_code`` is its own when it exited."""

    def __init__(self, message: str, exit_code: int | None = None):
        super().__init__(message)
        self.exit_code = exit_code


class BrokerProcess:
    """One broker subprocess on 127.0.0.1.

    `data_dir` is created (in a fresh temp dir) unless given; it survives
    `stop()`/`kill()` so that `restart()` brings the broker back on the same
    port with the same data.  stderr (and stdout) go to `log_path`.
    `launcher` is a command prefix (e.g. one that puts the process in a cgroup).
    """

    def __init__(
        self,
        data_dir: str | os.PathLike | None = None,
        overrides: dict[str, object] | None = None,
        port: int | None = None,
        node_id: int = 1,
        log_dir: str | os.PathLike | None = None,
        start_timeout: float = DEFAULT_START_TIMEOUT,
        preexec_fn=None,
        launcher: list[str] | None = None,
    ):
        self._owns_tmp = None
        if data_dir is None:
            self._owns_tmp = tempfile.mkdtemp(prefix="josefk-compat-")
            data_dir = os.path.join(self._owns_tmp, "data")
        self.data_dir = Path(data_dir)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        log_root = Path(log_dir) if log_dir is not None else self.data_dir.parent
        log_root.mkdir(parents=True, exist_ok=True)
        self.overrides = dict(overrides or {})
        # A broker with several listeners: overrides["listeners"]; the first one is probed.
        if "listeners" in self.overrides:
            port = int(str(self.overrides["listeners"]).split(",")[0].rsplit(":", 1)[1])
        self.port = port if port is not None else free_port()
        self.host = "127.0.0.1"
        self.node_id = node_id
        self.start_timeout = start_timeout
        self.preexec_fn = preexec_fn  # run in the child before exec (e.g. to set rlimits)
        self.launcher = list(launcher or [])
        self.log_path = log_root / f"broker-{self.port}.log"
        self.proc: subprocess.Popen | None = None
        self._log_file = None
        self._start_offset = 0  # where the log of the last start begins
        self.starts = 0
        self.last_returncode: int | None = None
        self.needed_sigkill = False
        self.paused = False

    # ------------------------------------------------------------------ info
    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    @property
    def ports(self) -> list[int]:
        """Every port the broker listens on (one per listener)."""
        listeners = str(self.overrides.get("listeners", f"PLAINTEXT://{self.bootstrap}"))
        return [int(x.rsplit(":", 1)[1]) for x in listeners.split(",")]

    def command(self) -> list[str]:
        cmd = [
            BROKER_PYTHON, "-m", "josefk", "broker",
            "--listeners", self.overrides.get("listeners", f"PLAINTEXT://{self.host}:{self.port}"),
            "--log-dirs", str(self.data_dir),
            "--node-id", str(self.node_id),
        ]
        for key, value in self.overrides.items():
            if isinstance(value, bool):
                value = "true" if value else "false"
            cmd += ["--override", f"{key}={value}"]
        return cmd

    def is_running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log_size(self) -> int:
        try:
            return self.log_path.stat().st_size
        except OSError:
            return 0

    def log_tail(self, max_chars: int = 6000, since: int = 0) -> str:
        """The end of the broker's log, of what it wrote after its first ``since`` bytes."""
        try:
            with open(self.log_path, "rb") as f:
                f.seek(since)
                text = f.read().decode(errors="replace")
        except OSError:
            return "<no broker log>"
        return text[-max_chars:]

    # ------------------------------------------------------------- lifecycle
    def start(self, wait: bool = True) -> "BrokerProcess":
        """Start the broker; with ``wait``, return once it accepts connections."""
        if self.is_running():
            raise RuntimeError("broker already running")
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._log_file = open(self.log_path, "ab", buffering=0)
        self._start_offset = self.log_size()
        self._log_file.write(
            f"\n===== start #{self.starts + 1}: {' '.join(self.command())}\n".encode()
        )
        env = dict(os.environ)
        env["PYTHONUNBUFFERED"] = "1"
        if CHECKOUT:
            env["PYTHONPATH"] = str(CHECKOUT) + (
                os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else ""
            )
        self.proc = subprocess.Popen(
            self.launcher + self.command(),
            cwd=str(CHECKOUT or self.data_dir.parent),
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=self._log_file,
            stderr=self._log_file,
            start_new_session=True,
            preexec_fn=self.preexec_fn,
        )
        self.paused = False
        self.starts += 1
        if wait:
            self.wait_listening()
        return self

    def exited_while_starting(self) -> BrokerStartError:
        """The broker exited before it served: its exit and its own last line, then its log."""
        self._close_log()
        last = next((line for line in reversed(self.log_tail(since=self._start_offset)
                                               .splitlines()) if line.strip()), "no output")
        return BrokerStartError(
            f"broker {self.node_id} {describe_exit(self.proc.returncode)} while starting on "
            f"{self.bootstrap}: {last.strip()}\n"
            f"--- broker log ({self.log_path}) ---\n{self.log_tail()}", self.proc.returncode)

    def wait_listening(self) -> None:
        """Until the broker accepts connections; raises BrokerStartError (and kills it) if it
        exits first or does not within ``start_timeout``."""
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise self.exited_while_starting()
            if port_accepts(self.host, self.port, timeout=0.3):
                return
            time.sleep(0.05)
        # Did not come up in time: do not leave it behind.
        self._signal(signal.SIGKILL)
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            pass
        self._close_log()
        raise BrokerStartError(
            f"broker did not accept connections on {self.bootstrap} within "
            f"{self.start_timeout:.0f}s\n--- broker log ({self.log_path}) ---\n{self.log_tail()}"
        )

    def _signal(self, sig: int) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        try:
            # Own session: signal the whole group in case the broker forks helpers.
            os.killpg(self.proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            try:
                self.proc.send_signal(sig)
            except ProcessLookupError:
                pass

    def _close_log(self) -> None:
        if self._log_file is not None:
            try:
                self._log_file.close()
            finally:
                self._log_file = None

    def terminate(self) -> None:
        """SIGTERM (a controlled shutdown), without waiting; a paused broker is resumed so
        that it can act on it."""
        self._signal(signal.SIGTERM)
        self.resume()

    def stop(self, timeout: float = DEFAULT_STOP_TIMEOUT) -> int | None:
        """SIGTERM, wait up to `timeout`, then SIGKILL. Returns the exit code.

        `needed_sigkill` tells whether the graceful shutdown timed out.
        """
        if self.proc is None:
            return None
        self.needed_sigkill = False
        if self.proc.poll() is None:
            self.terminate()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.needed_sigkill = True
                self._signal(signal.SIGKILL)
                self.proc.wait(10)
        self.last_returncode = self.proc.returncode
        self._close_log()
        return self.last_returncode

    def kill(self) -> int | None:
        """SIGKILL without warning (crash test)."""
        if self.proc is None:
            return None
        self._signal(signal.SIGKILL)
        self.proc.wait(10)
        self.paused = False
        self.last_returncode = self.proc.returncode
        self._close_log()
        return self.last_returncode

    def pause(self) -> None:
        """SIGSTOP: the process stays, silent (ZooKeeper expires its session after the
        session timeout)."""
        self._signal(signal.SIGSTOP)
        self.paused = self.is_running()

    def resume(self) -> None:
        """SIGCONT after ``pause()``."""
        if self.paused:
            self._signal(signal.SIGCONT)
            self.paused = False

    def restart(self) -> "BrokerProcess":
        """Stop if running, then start again on the same port and data dir."""
        if self.is_running():
            self.stop()
        return self.start()

    def cleanup(self) -> None:
        """Stop the broker and remove the temp dir this object created."""
        self.stop(timeout=5)
        if self._owns_tmp:
            shutil.rmtree(self._owns_tmp, ignore_errors=True)
            self._owns_tmp = None

    def __enter__(self) -> "BrokerProcess":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.cleanup()

    def __repr__(self) -> str:
        state = "running" if self.is_running() else "stopped"
        return f"<BrokerProcess {self.bootstrap} {state} data={self.data_dir}>"


class FaultUnavailable(RuntimeError):
    """This cluster cannot inject that fault here; the message says why (one line)."""


class LocalCluster:
    """ZooKeeper and ``size`` josefk brokers (node ids 1..size) on 127.0.0.1, under ``root``
    (``broker-<id>/`` holds a broker's data and log, ``zookeeper/`` ZooKeeper's).

    ZooKeeper is the cluster's own (a ``zk.local_server.LocalZooKeeper`` on
    ``zookeeper_port``, or a free one; the brokers use the chroot ``/josefk``), or, with
    ``zk_connect``, a running one (a connect string with its chroot). Brokers listen on
    ``first_port``, +1, +2... (or free ports) and get ``overrides`` (Kafka broker properties).

    Faults, by node id ``b``:

    - ``kill(b)``: SIGKILL (a crash); ``shutdown(b)``: SIGTERM, a controlled shutdown, and
      wait for the exit; ``restart(b)``: start it again (stopping it first if it runs);
    - ``pause(b)`` / ``resume(b)``: SIGSTOP / SIGCONT (past the ZooKeeper session timeout,
      the others take over while the process still holds its sockets);
    - ``isolate(b)`` / ``heal()``: cut ``b`` off from the other brokers and from ZooKeeper
      (clients still reach it), and end every such cut (``isolation=True``: needs root;
      see ``faults.network``);
    - ``fill_disk(b)`` / ``free_disk(b)``: take all free space of ``b``'s log dir, and give it
      back (``disk_mb``: each log dir is then a tmpfs of that size; needs root);
    - ``kill_zookeeper()`` / ``restart_zookeeper()``: SIGKILL ZooKeeper, start it again (on the
      same port, with its data).

    A fault this machine cannot make raises ``FaultUnavailable`` saying why. ``stop()`` ends
    everything (every cut healed, every disk unmounted, every process gone), also after a
    failure; the cluster is a context manager.
    """

    def __init__(self, root, size: int = 3, *, zk_connect: str | None = None,
                 zookeeper_port: int | None = None, chroot: str = "/josefk",
                 overrides: dict | None = None, racks=None, first_port: int | None = None,
                 disk_mb: int | None = None, isolation: bool = False,
                 start_timeout: float = 40.0):
        self.root = Path(root).resolve()
        self.root.mkdir(parents=True, exist_ok=True)
        self._zk_connect = zk_connect
        self.chroot = chroot
        self.zookeeper = None if zk_connect else LocalZooKeeper(
            self.root / "zookeeper", port=zookeeper_port)
        self.disks: dict[int, disk.SmallDisk] = {}
        self.disk_unavailable = None if disk_mb else "the cluster was made without disk_mb"
        self.partitioner: network.Partitioner | None = None
        self.isolation_unavailable = (None if isolation
                                      else "the cluster was made without isolation=True")
        self.brokers: dict[int, BrokerProcess] = {}
        for i in range(1, size + 1):
            extra = dict(overrides or {})
            if racks:
                extra["broker.rack"] = racks[i - 1]
            home = self.root / f"broker-{i}"
            data = home / "data"
            if disk_mb:
                self.disks[i] = disk.SmallDisk(home / "disk", disk_mb)
                data = home / "disk" / "data"
            self.brokers[i] = BrokerProcess(
                data_dir=data, overrides=extra, node_id=i, log_dir=home,
                port=first_port + i - 1 if first_port else None, start_timeout=start_timeout)

    # -- where things are --------------------------------------------------------------------
    @property
    def zk_connect(self) -> str:
        """The brokers' ``zookeeper.connect`` (with its chroot)."""
        if self._zk_connect:
            return self._zk_connect
        return self.zookeeper.connect_string + self.chroot

    @property
    def bootstrap(self) -> str:
        return ",".join(b.bootstrap for b in self.brokers.values() if b.is_running())

    def live(self) -> list[int]:
        """Node ids of the brokers that run and are not paused."""
        return [i for i, b in self.brokers.items() if b.is_running() and not b.paused]

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self, timeout: float = 60) -> "LocalCluster":
        """Start ZooKeeper (if the cluster's own), mount the disks, start every broker, and
        wait until each lists them all and a controller. On failure everything is stopped."""
        try:
            self._open_isolation()
            if self.zookeeper is not None:
                self.restart_zookeeper()
            self._mount_disks()
            for b in self.brokers.values():
                b.overrides["zookeeper.connect"] = self.zk_connect
                b.start(wait=False)
            for b in self.brokers.values():
                b.wait_listening()
            self.wait_for_brokers(len(self.brokers), timeout, starting=True)
        except BaseException:
            self.stop()
            raise
        return self

    def _open_isolation(self) -> None:
        if self.isolation_unavailable or self.partitioner is not None:
            return
        try:
            self.partitioner = network.Partitioner().open()
        except network.NetworkUnavailable as e:
            self.isolation_unavailable = str(e)
            return
        for i, b in self.brokers.items():
            b.launcher = self.partitioner.launcher(f"broker-{i}")

    def _mount_disks(self) -> None:
        if self.disk_unavailable:
            return
        try:
            for d in self.disks.values():
                if not d.mounted:
                    d.mount()
        except disk.DiskUnavailable as e:
            self.disk_unavailable = str(e)
            for d in self.disks.values():
                d.unmount()

    def stop(self, timeout: float = 30) -> None:
        """Stop every broker (SIGTERM to all at once, SIGKILL after ``timeout``), then
        ZooKeeper; heal every cut, unmount every disk."""
        try:
            if self.partitioner is not None:
                self.partitioner.heal()
            for b in self.brokers.values():
                b.terminate()
            for b in self.brokers.values():
                b.stop(timeout)
        finally:
            if self.zookeeper is not None:
                self.zookeeper.stop()
            for d in self.disks.values():
                d.unmount()
            if self.partitioner is not None:
                self.partitioner.close()
                self.partitioner = None

    def __enter__(self) -> "LocalCluster":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- faults --------------------------------------------------------------------------------
    def kill(self, b: int) -> int | None:
        """SIGKILL broker ``b``; returns its exit code."""
        return self.brokers[b].kill()

    def shutdown(self, b: int, timeout: float = 60) -> int | None:
        """SIGTERM broker ``b`` (a controlled shutdown) and wait for it to exit."""
        return self.brokers[b].stop(timeout)

    def restart(self, b: int) -> BrokerProcess:
        """Start broker ``b`` again (after stopping it if it runs) on its port and data."""
        return self.brokers[b].restart()

    def pause(self, b: int) -> None:
        self.brokers[b].pause()

    def resume(self, b: int) -> None:
        self.brokers[b].resume()

    def isolate(self, b: int) -> None:
        """Cut broker ``b`` off from the other brokers and from ZooKeeper until ``heal()``."""
        if self.partitioner is None:
            raise FaultUnavailable(self.isolation_unavailable or "the cluster is not started")
        zk_ports = [int(self.zk_connect.split("/")[0].split(",")[0].rsplit(":", 1)[1])]
        self.partitioner.cut(f"broker-{b}", self.brokers[b].ports,
                             {f"broker-{i}": o.ports for i, o in self.brokers.items() if i != b},
                             zk_ports)

    def heal(self) -> None:
        """End every network cut."""
        if self.partitioner is not None:
            self.partitioner.heal()

    def fill_disk(self, b: int) -> None:
        """Take all free space of broker ``b``'s log dir."""
        d = self.disks.get(b)
        if d is None or not d.mounted:
            raise FaultUnavailable(self.disk_unavailable or "the cluster is not started")
        d.fill()

    def free_disk(self, b: int) -> None:
        if b in self.disks:
            self.disks[b].free()

    def kill_zookeeper(self) -> None:
        """SIGKILL the cluster's own ZooKeeper (its port and data are kept for the restart)."""
        zk = self._own_zookeeper()
        if zk.proc is not None:
            try:
                os.killpg(zk.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        zk.stop()

    def restart_zookeeper(self) -> None:
        """Start the cluster's own ZooKeeper (again)."""
        zk = self._own_zookeeper()
        zk.start()
        if self.partitioner is not None:  # tracked, so that a later run cleans up after a crash
            self.partitioner.adopt("zookeeper", zk.pid)

    def _own_zookeeper(self) -> LocalZooKeeper:
        if self.zookeeper is None:
            raise FaultUnavailable("ZooKeeper is not this cluster's own (zk_connect was given)")
        return self.zookeeper

    # -- asking the cluster (josefk's own client) ------------------------------------------------
    def client(self, b: int | None = None, timeout: float = 5.0):
        """A ``broker.client.Client`` to broker ``b`` (or to a live one)."""
        from josefk.tools.client import Client

        if b is None:
            live = self.live()
            if not live:
                raise ConnectionError("no broker of the cluster is running")
            b = live[0]
        return Client(self.brokers[b].bootstrap, "josefk-local-cluster", timeout=timeout)

    def metadata_from(self, b: int | None = None, topics=None, timeout: float = 5.0):
        """What broker ``b`` (or a live one) answers to Metadata (``topics``: None for all)."""
        from josefk.wire.apis import METADATA

        request = None if topics is None else [METADATA.Request.MetadataRequestTopic(name=t)
                                               for t in topics]
        with self.client(b, timeout) as c:
            return c.request(METADATA, topics=request, allow_auto_topic_creation=False)

    def controller(self) -> int:
        """The controller's node id, from the ``/controller`` znode (-1 if there is none)."""
        from kazoo.client import KazooClient
        from kazoo.exceptions import NoNodeError

        k = KazooClient(hosts=self.zk_connect, timeout=5.0)
        k.start(timeout=10)
        try:
            data, _ = k.get("/controller")
        except NoNodeError:
            return -1
        finally:
            k.stop()
            k.close()
        return int(json.loads(data)["brokerid"])

    def coordinator(self, key: str, key_type: int = 0) -> int:
        """The node id of the coordinator of group ``key`` (``key_type`` 1: of transactional
        id ``key``), as FindCoordinator answers it."""
        from josefk.wire.apis import FIND_COORDINATOR

        with self.client() as c:
            resp = c.request(FIND_COORDINATOR, key=key, key_type=key_type,
                             coordinator_keys=[key])
        node = resp.coordinators[0] if resp.coordinators else resp
        if node.error_code:
            raise ConnectionError(f"FindCoordinator {key!r}: error code {node.error_code}")
        return node.node_id

    def wait_for_brokers(self, n: int, timeout: float = 60, starting: bool = False) -> None:
        """Until every live broker lists ``n`` live brokers and a controller. ``starting``: a
        broker that exits meanwhile raises its BrokerStartError at once (it listened on a port
        another process held, it lost its registration to a broker of the same id...)."""
        deadline = time.monotonic() + timeout
        last = None
        while True:
            exited = [b for b in self.brokers.values() if starting and not b.is_running()]
            if exited:
                raise exited[0].exited_while_starting()
            try:
                answers = [self.metadata_from(i, topics=[]) for i in self.live()]
                if answers and all(len(md.brokers) == n and md.controller_id >= 0
                                   for md in answers):
                    return
                last = [(len(md.brokers), md.controller_id) for md in answers]
            except (OSError, ConnectionError) as e:  # still starting
                last = e
            if time.monotonic() > deadline:
                raise AssertionError(f"cluster did not show {n} brokers within {timeout}s "
                                     f"(last: {last})")
            time.sleep(0.3)
