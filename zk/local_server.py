"""Start and stop a real, standalone ZooKeeper server on this machine.

Used by the test harness (``compat_tests/zookeeper.py``) and by ``josefk cluster``, which starts
ZooKeeper plus N brokers for a user. It runs the JVM directly (not ``zkServer.sh``) so that we own
the process, its config and its log:

* the server's jars come from Debian/Ubuntu's ``zookeeper`` package (``libzookeeper-java``:
  ``/usr/share/java/zookeeper.jar``, whose manifest ``Class-Path`` names its dependencies), or from
  an upstream tarball pointed at by ``ZOOKEEPER_HOME`` (``$ZOOKEEPER_HOME/lib/*.jar``);
* everything lives in the caller's ``data_dir``: a generated ``zoo.cfg``, the snapshots and
  transaction logs under ``data/``, and the server's output in ``zookeeper.log``;
* it listens on 127.0.0.1 only, with the admin server off, a 500 ms tick (so session timeouts
  down to 1 s are allowed) and no per-address connection limit (tests open many);
* readiness is a real round trip: the ``srvr`` four-letter word answering ``Mode: standalone``;
* ``stop()`` terminates the server's process group and waits for it.

A missing JVM or missing ZooKeeper jars raise ``ZooKeeperNotInstalled`` with the install command.
"""
from __future__ import annotations

import atexit
import glob
import os
import random
import shutil
import signal
import socket
import subprocess
import time
import weakref
import zipfile
from pathlib import Path

DEBIAN_JAVA_DIR = "/usr/share/java"
MAIN_CLASS = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
INSTALL_HINT = "on Debian/Ubuntu: sudo apt-get install zookeeper"
JAVA_INSTALL_HINT = "on Debian/Ubuntu: sudo apt-get install default-jre-headless"


class ZooKeeperNotInstalled(RuntimeError):
    """Java or the ZooKeeper server jars are not on this machine."""


class ZooKeeperStartError(RuntimeError):
    """The server process exited or did not answer in time; the message has its log's tail."""


def find_java(java: str | None = None) -> str:
    """The ``java`` executable to run: ``java`` if given, else ``$JAVA_HOME/bin/java``, else the
    one on ``PATH``. Raises ``ZooKeeperNotInstalled`` when there is none."""
    candidates = []
    if java:
        candidates.append(java)
    else:
        if os.environ.get("JAVA_HOME"):
            candidates.append(os.path.join(os.environ["JAVA_HOME"], "bin", "java"))
        on_path = shutil.which("java")
        if on_path:
            candidates.append(on_path)
    for c in candidates:
        if os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    where = java or "JAVA_HOME/bin/java or java on PATH"
    raise ZooKeeperNotInstalled(f"Java is not installed (looked for {where}); ZooKeeper needs a "
                                f"Java runtime: {JAVA_INSTALL_HINT}")


def _manifest_class_path(jar: str) -> list[str]:
    try:
        with zipfile.ZipFile(jar) as z:
            text = z.read("META-INF/MANIFEST.MF").decode("utf-8", "replace")
    except (OSError, KeyError, zipfile.BadZipFile):
        return []
    # Manifest lines are wrapped at 72 bytes; a continuation line starts with one space.
    text = text.replace("\r\n", "\n").replace("\n ", "")
    for line in text.split("\n"):
        if line.startswith("Class-Path:"):
            return line[len("Class-Path:"):].split()
    return []


def find_classpath(zookeeper_home: str | None = None, java_dir: str = DEBIAN_JAVA_DIR) -> list[str]:
    """The JVM classpath for a ZooKeeper server.

    ``zookeeper_home`` (default ``$ZOOKEEPER_HOME``): an upstream binary tarball, all jars of its
    ``lib/`` (and top level). Otherwise the Debian layout in ``java_dir``: ``zookeeper.jar`` (its
    manifest lists jute, netty, jetty, slf4j-api... by absolute path) plus an SLF4J binding, which
    Debian does not put on that list, so without one the server would log nothing at all.
    Raises ``ZooKeeperNotInstalled`` when neither is there."""
    home = zookeeper_home if zookeeper_home is not None else os.environ.get("ZOOKEEPER_HOME")
    if home:
        jars = sorted(glob.glob(os.path.join(home, "lib", "*.jar")) + glob.glob(os.path.join(home, "*.jar")))
        if any(os.path.basename(j).startswith("zookeeper-") and "jute" not in j for j in jars):
            return jars
        raise ZooKeeperNotInstalled(f"ZOOKEEPER_HOME={home} holds no ZooKeeper server jar "
                                    f"(expected {home}/lib/zookeeper-<version>.jar)")
    server_jar = os.path.join(java_dir, "zookeeper.jar")
    if not os.path.isfile(server_jar):
        raise ZooKeeperNotInstalled(f"ZooKeeper is not installed (no {server_jar} and ZOOKEEPER_HOME "
                                    f"is not set): {INSTALL_HINT}")
    missing = [p for p in _manifest_class_path(server_jar)
               if os.path.basename(p) in ("zookeeper-jute.jar", "slf4j-api.jar") and not os.path.exists(p)]
    if missing:
        raise ZooKeeperNotInstalled(f"ZooKeeper's installation is incomplete (missing {', '.join(missing)}): "
                                    f"{INSTALL_HINT}")
    classpath = [server_jar]
    for binding in ("slf4j-simple.jar", "slf4j-jdk14.jar"):
        path = os.path.join(java_dir, binding)
        if os.path.isfile(path):
            classpath.append(path)
            break
    return classpath


# -- ports for local servers (ZooKeeper here; brokers of the tests, the fault harness, bench) --
_handed_out: set[int] = set()
# its own generator: a test run that seeds `random` (pytest-randomly does, in every xdist
# worker alike) would otherwise have all its processes try the same ports
_rng = random.Random()


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port on ``host`` that nothing uses now (as `ports_in_a_row` picks them)."""
    return ports_in_a_row(1, host)


def ports_in_a_row(n: int, host: str = "127.0.0.1") -> int:
    """The first of ``n`` free ports in a row, outside the kernel's ephemeral range and never
    handed out before by this process. A port of the ephemeral range, free when a server stops,
    can become any client connection's local port before the server starts again on it (it did:
    "address already in use" at a restart); outside the range only explicit binds take ports.
    Where the range cannot be read (not Linux), the kernel picks a single port."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low, high = map(int, f.read().split())
    except (OSError, ValueError):
        if n == 1:
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                s.bind((host, 0))
                return s.getsockname()[1]
        raise RuntimeError("cannot read the kernel's ephemeral port range") from None
    spans = [(a, b) for a, b in ((10000, low - n), (high + 1, 65536 - n)) if b > a]
    for _ in range(1000 if spans else 0):
        first = _rng.randrange(*_rng.choice(spans))
        ports = range(first, first + n)
        if not _handed_out.intersection(ports) and all(_port_is_free(host, p) for p in ports):
            _handed_out.update(ports)
            return first
    raise RuntimeError(f"no {n} free ports in a row outside the ephemeral range {low}-{high}")


def _port_is_free(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        # As the server binds (SO_REUSEADDR): connections in TIME_WAIT from a previous run don't count.
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
        return True


def four_letter_word(host: str, port: int, word: str, timeout: float = 2.0) -> str:
    """Send a four-letter word (``srvr``, ``ruok``, ``mntr``...) and return the whole answer."""
    with socket.create_connection((host, port), timeout=timeout) as s:
        s.sendall(word.encode("ascii"))
        s.shutdown(socket.SHUT_WR)
        chunks = []
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
    return b"".join(chunks).decode("utf-8", "replace")


_running: "weakref.WeakSet[LocalZooKeeper]" = weakref.WeakSet()


@atexit.register
def _stop_all_at_exit() -> None:
    for zk in list(_running):
        try:
            zk.stop(timeout=5)
        except Exception:  # noqa: BLE001 - best effort at interpreter exit
            pass


class LocalZooKeeper:
    """One standalone ZooKeeper server process on ``host`` (127.0.0.1), data in ``data_dir``.

    ``port=None`` picks a free port at the first ``start()`` and keeps it for later restarts, so a
    connect string handed out stays valid across ``stop()``/``start()``; data persists likewise.
    Usable as a context manager (``with LocalZooKeeper(d) as zk: ...``).
    """

    def __init__(self, data_dir, port: int | None = None, *, host: str = "127.0.0.1",
                 tick_time_ms: int = 500, min_session_timeout_ms: int | None = None,
                 max_session_timeout_ms: int = 60000, fsync: bool = True, heap: str = "256m",
                 java: str | None = None, classpath: list[str] | None = None,
                 extra_config: dict[str, object] | None = None):
        self.data_dir = Path(data_dir).resolve()
        self.host = host
        self.port = port
        self._port_given = port is not None
        self.tick_time_ms = tick_time_ms
        # ZooKeeper's own default minimum is 2 ticks; say it explicitly so a 3 s session is allowed.
        self.min_session_timeout_ms = min_session_timeout_ms or 2 * tick_time_ms
        self.max_session_timeout_ms = max_session_timeout_ms
        self.fsync = fsync
        self.heap = heap
        self._java = java
        self._classpath = classpath
        self.extra_config = dict(extra_config or {})
        self.proc: subprocess.Popen | None = None
        self._log_file = None

    # -- where things are ---------------------------------------------------------------------
    @property
    def connect_string(self) -> str:
        """``host:port`` for clients (append ``/chroot`` for a namespace)."""
        if self.port is None:
            raise RuntimeError("LocalZooKeeper has no port yet: call start() first")
        return f"{self.host}:{self.port}"

    @property
    def config_path(self) -> Path:
        return self.data_dir / "zoo.cfg"

    @property
    def log_path(self) -> Path:
        return self.data_dir / "zookeeper.log"

    @property
    def snapshot_dir(self) -> Path:
        return self.data_dir / "data"

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def is_running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log_tail(self, max_chars: int = 4000) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return text[-max_chars:]

    def __repr__(self) -> str:
        state = "running" if self.is_running() else "stopped"
        return f"LocalZooKeeper({self.host}:{self.port}, {self.data_dir}, {state})"

    # -- lifecycle ------------------------------------------------------------------------------
    def config_text(self) -> str:
        """The ``zoo.cfg`` this server runs with."""
        settings: dict[str, object] = {
            "tickTime": self.tick_time_ms,
            "initLimit": 10,
            "syncLimit": 5,
            "dataDir": self.snapshot_dir,
            "clientPort": self.port,
            "clientPortAddress": self.host,
            "minSessionTimeout": self.min_session_timeout_ms,
            "maxSessionTimeout": self.max_session_timeout_ms,
            "maxClientCnxns": 0,  # the default (60 per address) is too few when all is on 127.0.0.1
            "maxCnxns": 0,  # no overall limit (the default, said so it isn't warned about)
            "admin.enableServer": "false",
            "4lw.commands.whitelist": "*",  # reachable from 127.0.0.1 only
            "forceSync": "yes" if self.fsync else "no",
            "autopurge.snapRetainCount": 3,
            "autopurge.purgeInterval": 1,
        }
        settings.update(self.extra_config)
        lines = ["# Generated by josefk (zk/local_server.py); rewritten at every start."]
        lines += [f"{k}={v}" for k, v in settings.items()]
        return "\n".join(lines) + "\n"

    def command(self) -> list[str]:
        """The JVM command line (raises ``ZooKeeperNotInstalled`` if java or the jars are missing)."""
        java = find_java(self._java)
        classpath = self._classpath if self._classpath is not None else find_classpath()
        cmd = [
            java,
            "-Xms16m", f"-Xmx{self.heap}",
            "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",  # small and quick to start
            "-Djava.awt.headless=true",
            "-Dzookeeper.jmx.log4j.disable=true",
            # slf4j-simple (Debian's binding we add) writes to stderr, i.e. zookeeper.log
            "-Dorg.slf4j.simpleLogger.defaultLogLevel=info",
            "-Dorg.slf4j.simpleLogger.showDateTime=true",
            "-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd HH:mm:ss,SSS",
            "-Dorg.slf4j.simpleLogger.showShortLogName=true",
        ]
        if any("logback-classic" in os.path.basename(j) for j in classpath):
            cmd.append(f"-Dlogback.configurationFile={self._write_logback_config()}")
        cmd += ["-cp", os.pathsep.join(str(j) for j in classpath), MAIN_CLASS, str(self.config_path)]
        return cmd

    def _write_logback_config(self) -> Path:
        # Upstream tarballs bind SLF4J to logback, which logs DEBUG unless told otherwise.
        path = self.data_dir / "logback.xml"
        path.write_text(
            '<configuration>\n'
            '  <appender name="STDERR" class="ch.qos.logback.core.ConsoleAppender">\n'
            '    <target>System.err</target>\n'
            '    <encoder><pattern>%d{ISO8601} %-5level [%thread] %logger{0} - %msg%n</pattern></encoder>\n'
            '  </appender>\n'
            '  <root level="INFO"><appender-ref ref="STDERR"/></root>\n'
            '</configuration>\n')
        return path

    def start(self, timeout: float = 30.0) -> "LocalZooKeeper":
        """Start the server and return once it answers ``srvr`` as a standalone server.

        Raises ``ZooKeeperNotInstalled`` (no java/jars) or ``ZooKeeperStartError`` (the process
        exited, the given port is taken, or no answer within ``timeout`` seconds)."""
        if self.is_running():
            return self
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.snapshot_dir.mkdir(parents=True, exist_ok=True)
        deadline = time.monotonic() + timeout
        attempts = 1 if (self._port_given or self.port is not None) else 3
        for attempt in range(attempts):
            if self.port is None:
                self.port = free_port(self.host)
            elif not _port_is_free(self.host, self.port):
                raise ZooKeeperStartError(f"cannot start ZooKeeper: {self.host}:{self.port} "
                                          f"is already in use")
            try:
                self._launch_and_wait(deadline)
                return self
            except ZooKeeperStartError:
                lost_race = "Address already in use" in self.log_tail(2000)
                if not lost_race or attempt == attempts - 1:
                    raise
                self.port = None  # someone took the free port we picked; pick another
        raise AssertionError("unreachable")

    def _launch_and_wait(self, deadline: float) -> None:
        cmd = self.command()
        self.config_path.write_text(self.config_text())
        self._log_file = open(self.log_path, "ab", buffering=0)
        self._log_file.write(f"\n=== josefk: starting ZooKeeper on {self.host}:{self.port} at "
                             f"{time.strftime('%Y-%m-%d %H:%M:%S')} ===\n{' '.join(cmd)}\n".encode())
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=self._log_file,
                                     stderr=subprocess.STDOUT, cwd=self.data_dir, start_new_session=True)
        _running.add(self)
        last_answer = ""
        while True:
            code = self.proc.poll()
            if code is not None:
                self._close_log()
                raise ZooKeeperStartError(f"ZooKeeper exited with code {code} while starting "
                                          f"(log {self.log_path}):\n{self.log_tail()}")
            try:
                last_answer = four_letter_word(self.host, self.port, "srvr", timeout=1.0)
                if "Mode: standalone" in last_answer:
                    return
            except OSError as e:
                last_answer = repr(e)
            if time.monotonic() >= deadline:
                self.stop()
                raise ZooKeeperStartError(f"ZooKeeper did not answer on {self.host}:{self.port} in time "
                                          f"(last answer: {last_answer.strip()!r}; log {self.log_path}):\n"
                                          f"{self.log_tail()}")
            time.sleep(0.05)

    def stop(self, timeout: float = 10.0) -> None:
        """Terminate the server's process group (SIGTERM, then SIGKILL after ``timeout``) and wait."""
        proc = self.proc
        if proc is None:
            return
        try:
            if proc.poll() is None:
                self._signal_group(proc, signal.SIGTERM)
                try:
                    proc.wait(timeout=timeout)
                except subprocess.TimeoutExpired:
                    self._signal_group(proc, signal.SIGKILL)
                    proc.wait(timeout=timeout)
        finally:
            self.proc = None
            _running.discard(self)
            self._close_log()

    @staticmethod
    def _signal_group(proc: subprocess.Popen, sig: int) -> None:
        try:
            os.killpg(proc.pid, sig)  # start_new_session: the group id is the JVM's pid
        except ProcessLookupError:
            pass
        except PermissionError:
            proc.send_signal(sig)

    def _close_log(self) -> None:
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None

    def __enter__(self) -> "LocalZooKeeper":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
