"""Network partitions between processes that all listen on 127.0.0.1.

Every broker runs in a cgroup (v2) of its own; a partition is a set of iptables rules, in a
chain of this run's own jumped to from OUTPUT, that drop the TCP packets a cgroup sends to
given ports. Cutting a broker off drops what it sends to the other brokers' and ZooKeeper's
ports and what the other brokers send to its ports; clients (in no cgroup of ours) still reach
it, as in a real partition between the brokers' network and ZooKeeper's.

Needs root, a cgroup2 mount and iptables with the cgroup match (``scripts/debian-deps.sh
iptables=iptables`` installs it). ``unavailable_reason()`` says why not, in one line. Rules and
cgroups are removed by ``close()``; those of a run that died without closing (its pid is gone)
are removed by the next run's ``open()``.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

CHAIN_PREFIX = "JOSEFK-FAULTS-"
CGROUP_PREFIX = "josefk-faults-"


class NetworkUnavailable(RuntimeError):
    """This machine (or user) cannot make network partitions; the message says why."""


def cgroup2_root() -> Path | None:
    """Where the cgroup2 hierarchy is mounted (``/sys/fs/cgroup`` or ``.../unified``)."""
    try:
        with open("/proc/self/mounts") as f:
            for line in f:
                fields = line.split()
                if len(fields) > 2 and fields[2] == "cgroup2":
                    return Path(fields[1])
    except OSError:
        pass
    return None


def unavailable_reason() -> str | None:
    """None if partitions can be made here, else why not (one line)."""
    if os.geteuid() != 0:
        return "network partitions need root (iptables rules and cgroups)"
    if cgroup2_root() is None:
        return "network partitions need a cgroup2 mount (none in /proc/self/mounts)"
    if shutil.which("iptables") is None:
        return ("network partitions need iptables, which is not installed "
                "(scripts/debian-deps.sh iptables=iptables)")
    return None


def install_iptables(repo_root: Path) -> None:
    """Install iptables (Debian) if it is missing and this process may (root), through the
    project's idempotent ``scripts/debian-deps.sh``; quietly nothing otherwise."""
    script = repo_root / "scripts" / "debian-deps.sh"
    if shutil.which("iptables") is None and os.geteuid() == 0 and script.exists():
        subprocess.run([str(script), "iptables=iptables"], capture_output=True, timeout=600)


def _iptables(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(["iptables", "-w", "5", *args], capture_output=True, text=True,
                          timeout=30)
    if check and proc.returncode != 0:
        raise NetworkUnavailable(f"iptables {' '.join(args)}: {proc.stderr.strip()}")
    return proc


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class Partitioner:
    """The cgroups and iptables chain of one run (named after this process's pid)."""

    def __init__(self):
        self.root = cgroup2_root()
        self.tag = f"{os.getpid()}-{id(self) % 100000}"
        self.chain = f"{CHAIN_PREFIX}{self.tag}"[:28]  # iptables' limit on chain names
        self.group = self.root / f"{CGROUP_PREFIX}{self.tag}" if self.root else None
        self.opened = False

    # -- lifecycle -------------------------------------------------------------------------
    def open(self) -> "Partitioner":
        reason = unavailable_reason()
        if reason:
            raise NetworkUnavailable(reason)
        remove_stale()
        self.group.mkdir()
        try:
            _iptables("-N", self.chain)
            self.opened = True
            # the cgroup and multiport matches must exist in this kernel: try one rule
            _iptables("-A", self.chain, "-p", "tcp", "-m", "cgroup", "--path",
                      str(self.group.relative_to(self.root)), "-m", "multiport", "--dports", "1",
                      "-j", "RETURN")
            _iptables("-F", self.chain)
            _iptables("-I", "OUTPUT", "-j", self.chain)
        except NetworkUnavailable:
            self.close()
            raise
        return self

    def close(self) -> None:
        """Remove the rules, the chain and the cgroups (processes still in them move out)."""
        if self.opened:
            _remove_chain(self.chain)
            self.opened = False
        if self.group is not None and self.group.exists():
            _remove_cgroup(self.group, kill=False)

    # -- members -----------------------------------------------------------------------------
    def cgroup(self, member: str) -> Path:
        """The cgroup of ``member`` (created on first use)."""
        path = self.group / member
        path.mkdir(exist_ok=True)
        return path

    def launcher(self, member: str) -> list[str]:
        """A command prefix that runs the command in ``member``'s cgroup from its first
        instruction on (a socket belongs to the cgroup its process was in when it was made)."""
        procs = self.cgroup(member) / "cgroup.procs"
        return ["sh", "-c", f'echo $$ > "{procs}" && exec "$@"', "sh"]

    def adopt(self, member: str, pid: int) -> None:
        """Move process ``pid`` into ``member``'s cgroup (its existing sockets stay where they
        were: for processes that are only tracked, so that a later run can clean them up)."""
        (self.cgroup(member) / "cgroup.procs").write_text(str(pid))

    def _path(self, member: str) -> str:
        return str(self.cgroup(member).relative_to(self.root))

    # -- faults ------------------------------------------------------------------------------
    def cut(self, member: str, own_ports, peers: dict[str, list[int]], servers=()) -> None:
        """Drop everything ``member`` sends to its peers' ports and to ``servers`` (ports of
        processes outside our cgroups, e.g. ZooKeeper), and everything the peers send to
        ``own_ports``."""
        far = [p for ports in peers.values() for p in ports] + list(servers)
        if far:
            _iptables("-A", self.chain, "-p", "tcp", "-m", "cgroup", "--path", self._path(member),
                      "-m", "multiport", "--dports", ",".join(map(str, far)), "-j", "DROP")
        for peer in peers:
            _iptables("-A", self.chain, "-p", "tcp", "-m", "cgroup", "--path", self._path(peer),
                      "-m", "multiport", "--dports", ",".join(map(str, own_ports)), "-j", "DROP")

    def heal(self) -> None:
        if self.opened:
            _iptables("-F", self.chain)

    def rules(self) -> list[str]:
        """The rules in force (``iptables -S`` lines of the chain)."""
        if not self.opened:
            return []
        return [r for r in _iptables("-S", self.chain).stdout.splitlines()
                if r.startswith("-A")]


def _remove_chain(chain: str) -> None:
    while _iptables("-D", "OUTPUT", "-j", chain, check=False).returncode == 0:
        pass
    _iptables("-F", chain, check=False)
    _iptables("-X", chain, check=False)


def _remove_cgroup(group: Path, kill: bool) -> None:
    """Remove ``group`` and its children; processes left in them are killed (``kill``: they
    belong to a run that is gone) or moved to the root cgroup."""
    for child in sorted((p for p in group.rglob("*") if p.is_dir()), reverse=True) + [group]:
        procs = child / "cgroup.procs"
        try:
            pids = [int(x) for x in procs.read_text().split()]
        except OSError:
            pids = []
        for pid in pids:
            try:
                if kill:
                    os.kill(pid, signal.SIGKILL)
                else:
                    (group.parent / "cgroup.procs").write_text(str(pid))
            except OSError:
                pass
        deadline = time.monotonic() + 5
        while True:
            try:
                child.rmdir()
                break
            except OSError:
                if time.monotonic() > deadline:
                    break
                time.sleep(0.05)  # killed processes leave their cgroup when they are reaped


def remove_stale() -> None:
    """Remove the chains and cgroups of runs whose process is gone, killing what is left in
    those cgroups (brokers of a harness that was killed)."""
    rules = _iptables("-S", check=False).stdout.splitlines()
    for line in rules:
        if line.startswith(f"-N {CHAIN_PREFIX}"):
            chain = line.split()[1]
            pid = chain[len(CHAIN_PREFIX):].split("-")[0]
            if pid.isdigit() and not _pid_alive(int(pid)):
                _remove_chain(chain)
    root = cgroup2_root()
    if root is None:
        return
    for group in root.glob(f"{CGROUP_PREFIX}*"):
        pid = group.name[len(CGROUP_PREFIX):].split("-")[0]
        if pid.isdigit() and not _pid_alive(int(pid)):
            _remove_cgroup(group, kill=True)
