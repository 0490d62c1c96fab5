"""The fault harness's short run (issue 19): `python -m faults --rounds 1` injects every fault
kind once into a 3-broker cluster under its real-client workload. The test fails on any anomaly
the checker finds, and checks that the run left no process, mount, iptables rule or cgroup
behind."""
from __future__ import annotations

import os
import random
import re
import subprocess
from pathlib import Path

import pytest

from josefk.faults.nemesis import KINDS
from josefk.faults.network import CGROUP_PREFIX, CHAIN_PREFIX, cgroup2_root
from josefk.faults.processes import BROKER_PYTHON, REPO_ROOT

pytestmark = pytest.mark.timeout(900)


def leftovers(run_dir: Path, pid: int) -> list[str]:
    """What a run in ``run_dir`` by process ``pid`` left behind."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if entry.name.isdigit() and str(run_dir) in cmdline:
            found.append(f"process {entry.name}: {cmdline[:200]}")
    with open("/proc/self/mounts") as f:
        found += [f"mount {line.strip()}" for line in f if str(run_dir) in line]
    if os.geteuid() == 0:
        rules = subprocess.run(["iptables", "-S"], capture_output=True, text=True).stdout
        found += [f"iptables {line}" for line in rules.splitlines()
                  if f"{CHAIN_PREFIX}{pid}-" in line]
    root = cgroup2_root()
    if root is not None:
        found += [f"cgroup {p}" for p in root.glob(f"{CGROUP_PREFIX}{pid}-*")]
    return found


def test_every_fault_kind_once_without_anomalies(tmp_path):
    seed = random.randrange(1 << 31)
    run_dir = tmp_path / "run"
    proc = subprocess.Popen([BROKER_PYTHON, "-m", "josefk.faults", "--rounds", "1", "--seed", str(seed),
                             "--dir", str(run_dir)], cwd=str(REPO_ROOT),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
    try:
        out, _ = proc.communicate(timeout=840)  # 13 kinds, each about 40-60 s
    finally:
        if proc.poll() is None:
            proc.terminate()  # it cleans up before it exits
            proc.communicate(timeout=60)
    print(out)
    for kind in KINDS:
        assert re.search(rf"^{kind}\s+1\s", out, re.M) or f"skipping {kind}:" in out, \
            f"{kind} was neither injected nor skipped with a reason (seed {seed}):\n{out}"
    assert proc.returncode == 0, f"anomalies or a failed run (seed {seed}): see its output above"
    assert leftovers(run_dir, proc.pid) == []
