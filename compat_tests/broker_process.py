"""Run a josefk broker as a real subprocess for the compatibility tests.

The clients under test (confluent-kafka, kafka-python, kcat) talk to it over
real sockets; nothing here knows the broker's internals, only its CLI.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent

# The interpreter that runs the broker: the one running the tests (the venv's),
# unless overridden.
BROKER_PYTHON = os.environ.get("JOSEFK_PYTHON", sys.executable)

DEFAULT_START_TIMEOUT = 20.0
DEFAULT_STOP_TIMEOUT = 15.0


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_accepts(host: str, port: int, timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


class BrokerStartError(RuntimeError):
    pass


class BrokerProcess:
    """One broker subprocess on 127.0.0.1.

    `data_dir` is created (in a fresh temp dir) unless given; it survives
    `stop()`/`kill()` so that `restart()` brings the broker back on the same
    port with the same data.  stderr (and stdout) go to `log_path`.
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
        self.log_path = log_root / f"broker-{self.port}.log"
        self.proc: subprocess.Popen | None = None
        self._log_file = None
        self.starts = 0
        self.last_returncode: int | None = None
        self.needed_sigkill = False

    # ------------------------------------------------------------------ info
    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

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

    def log_tail(self, max_chars: int = 6000) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "<no broker log>"
        return text[-max_chars:]

    # ------------------------------------------------------------- lifecycle
    def start(self) -> "BrokerProcess":
        if self.is_running():
            raise RuntimeError("broker already running")
        self._log_file = open(self.log_path, "ab", buffering=0)
        self._log_file.write(
            f"\n===== start #{self.starts + 1}: {' '.join(self.command())}\n".encode()
        )
        env = dict(os.environ)
        env["PYTHONUNBUFFERED"] = "1"
        env["PYTHONPATH"] = str(REPO_ROOT) + (
            os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else ""
        )
        self.proc = subprocess.Popen(
            self.command(),
            cwd=str(REPO_ROOT),
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=self._log_file,
            stderr=self._log_file,
            start_new_session=True,
            preexec_fn=self.preexec_fn,
        )
        self.starts += 1
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                rc = self.proc.returncode
                self._close_log()
                raise BrokerStartError(
                    f"broker exited with code {rc} before listening on {self.bootstrap}\n"
                    f"--- broker log ({self.log_path}) ---\n{self.log_tail()}"
                )
            if port_accepts(self.host, self.port, timeout=0.3):
                return self
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

    def stop(self, timeout: float = DEFAULT_STOP_TIMEOUT) -> int | None:
        """SIGTERM, wait up to `timeout`, then SIGKILL. Returns the exit code.

        `needed_sigkill` tells whether the graceful shutdown timed out.
        """
        if self.proc is None:
            return None
        self.needed_sigkill = False
        if self.proc.poll() is None:
            self._signal(signal.SIGTERM)
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
        self.last_returncode = self.proc.returncode
        self._close_log()
        return self.last_returncode

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
