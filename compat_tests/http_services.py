"""``josefk registry`` and ``josefk rest`` as real processes for the tests (the clients under
test reach them over HTTP on 127.0.0.1)."""
from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import httpx

from josefk.faults.processes import BROKER_PYTHON
from josefk.zk.local_server import free_port

START_TIMEOUT = 30.0


class ServiceProcess:
    """``kind`` is ``registry``, ``rest`` or ``connect``; ``props`` are its properties (given
    as overrides), ``args`` more arguments of its command line (a standalone Connect worker's
    ``--standalone`` and connector files); ``root`` another checkout whose code runs (a
    benchmark's before/after), this one's by default."""

    def __init__(self, kind: str, props: dict, log_path: Path, port: int | None = None,
                 env: dict | None = None, root: Path | None = None, args=()):
        self.kind, self.props, self.log_path = kind, dict(props), Path(log_path)
        self.args = list(args)
        self.port = port or free_port()
        self.props.setdefault("listeners", f"http://127.0.0.1:{self.port}")
        self.env = env or {}
        if root is not None:
            self.env = {**self.env, "PYTHONPATH": str(root)}
        self.cwd = str(root) if root is not None else None
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return self.props["listeners"].split(",")[0]

    def start(self) -> "ServiceProcess":
        seen = self.log_path.stat().st_size if self.log_path.exists() else 0
        cmd = [BROKER_PYTHON, "-m", "josefk", self.kind, *self.args]
        for k, v in self.props.items():
            cmd += ["--override", f"{k}={v}"]
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(cmd, stdout=log, stderr=log, stdin=subprocess.DEVNULL,
                                     env={**os.environ, "PYTHONUNBUFFERED": "1", **self.env},
                                     cwd=self.cwd, start_new_session=True)
        log.close()
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"josefk {self.kind} exited: {self.log_tail()}")
            if f"josefk {self.kind} started" in self.log_path.read_bytes()[seen:].decode(
                    errors="replace"):
                return self
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"josefk {self.kind} did not start: {self.log_tail()}")

    def log_tail(self, chars: int = 3000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def stop(self, sig=signal.SIGTERM, timeout: float = 10.0) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(sig)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)

    def kill(self) -> None:
        self.stop(signal.SIGKILL)


def wait_until(fn, timeout: float = 20.0, interval: float = 0.2):
    """``fn()``'s first truthy answer (exceptions count as falsy) within ``timeout``."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            value = fn()
            if value:
                return value
        except (httpx.HTTPError, AssertionError, KeyError) as e:
            last = e
        time.sleep(interval)
    raise AssertionError(f"not within {timeout}s (last error: {last!r})")


def wait_primary(url: str, timeout: float = 30.0) -> None:
    """Until the registry at ``url`` accepts writes (it is or knows the primary)."""
    def writable():
        r = httpx.put(f"{url}/config/_probe", json={"compatibility": "BACKWARD"}, timeout=10)
        return r.status_code == 200

    wait_until(writable, timeout)


SR = "application/vnd.schemaregistry.v1+json"
