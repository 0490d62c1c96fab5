"""`josefk cluster` (broker/cluster_cli.py): the playground keeps serving when one of its brokers
dies, says so, and brings it back on request (a line on stdin) or by itself
(``--restart-after``); Ctrl-C stops everything (issue 19, defect 6)."""
from __future__ import annotations

import os
import queue
import re
import signal
import socket
import subprocess
import threading
import time

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from josefk.faults.processes import BROKER_PYTHON, REPO_ROOT, port_accepts
from josefk.zk.local_server import ports_in_a_row

pytestmark = pytest.mark.timeout(240)


class ClusterCli:
    """``josefk cluster`` as a user runs it, its output read line by line."""

    def __init__(self, tmp_path, *args):
        self.dir = tmp_path / "cluster"
        self.port = ports_in_a_row(4)  # three brokers, then ZooKeeper
        self.zk_port = self.port + 3
        self.proc = subprocess.Popen(
            [BROKER_PYTHON, "-m", "josefk", "cluster", "--brokers", "3", "--dir",
             str(self.dir), "--port", str(self.port), "--zookeeper-port",
             str(self.zk_port), "--override", "zookeeper.session.timeout.ms=6000", *args],
            cwd=str(REPO_ROOT), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
        self.lines: queue.Queue = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        self.bootstrap = ",".join(f"127.0.0.1:{self.port + i}" for i in range(3))
        self.expect(rf"^cluster ready: bootstrap servers {self.bootstrap} ", 90)
        self.pids = {int(m[1]): int(m[2]) for line in self.seen
                     if (m := re.match(r"broker (\d+): pid (\d+)", line))}

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))

    def expect(self, pattern: str, timeout: float = 60) -> re.Match:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.5)
            except queue.Empty:
                continue
            self.seen.append(line)
            m = re.search(pattern, line)
            if m:
                return m
        raise AssertionError(f"no line matching {pattern!r} within {timeout}s; output:\n"
                             + "\n".join(self.seen))

    def type(self, line: str):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def close(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(120)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self._kill_orphans()

    def orphans(self) -> list[int]:
        """Its brokers and ZooKeeper run in sessions of their own: if it died without stopping
        them, they are found by the directory on their command lines."""
        mark = str(self.dir).encode()
        found = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    if mark in f.read():
                        found.append(int(pid))
            except OSError:  # gone meanwhile, or not ours to read
                continue
        return found

    def _kill_orphans(self):
        for pid in self.orphans():
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                continue


@pytest.fixture
def cli_cluster(tmp_path, request):
    clusters = []

    def start(*args) -> ClusterCli:
        c = ClusterCli(tmp_path, *args)
        clusters.append(c)
        return c

    yield start
    for c in clusters:
        c.close()


def leader_of(bootstrap: str, topic: str) -> int:
    md = AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=10)
    return md.topics[topic].partitions[0].leader


def isr(bootstrap: str, topic: str) -> list[int]:
    """Partition 0's ISR; none where the broker asked does not know the partition yet (a
    restarted one answers UNKNOWN_TOPIC_OR_PARTITION until the controller has told it)."""
    md = AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=10)
    partition = md.topics[topic].partitions.get(0)
    return partition.isrs if partition is not None else []


def acked_write(bootstrap: str, topic: str, timeout: float = 60) -> float:
    """Seconds until one acks=all record is acknowledged."""
    t0 = time.monotonic()
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "message.timeout.ms": 60000})
    errors = []
    p.produce(topic, b"x", partition=0, on_delivery=lambda e, m: errors.append(e))
    p.flush(timeout)
    assert errors == [None], errors
    return time.monotonic() - t0


def test_kill_9_of_a_broker_keeps_the_others_serving_until_restart(cli_cluster):
    c = cli_cluster()
    admin = AdminClient({"bootstrap.servers": c.bootstrap})
    admin.create_topics([NewTopic("failover", 1, 3)])["failover"].result(30)
    acked_write(c.bootstrap, "failover")
    victim = leader_of(c.bootstrap, "failover")
    os.kill(c.pids[victim], signal.SIGKILL)
    line = c.expect(rf"broker {victim} \(pid {c.pids[victim]}\) was killed by SIGKILL; the "
                    r"others keep serving").string
    assert f'"restart {victim}"' in line
    # a follower takes over; writes go on with the two others
    survivors = ",".join(f"127.0.0.1:{c.port + i - 1}" for i in (1, 2, 3) if i != victim)
    acked_write(survivors, "failover")
    assert leader_of(survivors, "failover") not in (victim, -1)
    c.type("status")
    c.expect(rf"broker {victim} \(127.0.0.1:\d+\): was killed by SIGKILL")
    c.type(f"restart {victim}")
    c.expect(rf"broker {victim} restarted \(pid \d+\)")
    deadline = time.monotonic() + 60
    while len(isr(c.bootstrap, "failover")) < 3:
        assert time.monotonic() < deadline, "the restarted broker did not rejoin the ISR"
        time.sleep(0.5)
    c.type("restart")
    c.expect(r"unknown command 'restart'")
    c.proc.send_signal(signal.SIGINT)
    assert c.proc.wait(120) == 0
    c.expect("stopping the cluster")
    assert not any(port_accepts("127.0.0.1", c.port + i) for i in range(3))
    assert not port_accepts("127.0.0.1", c.zk_port)


def test_a_closed_terminal_stops_the_cluster_it_started(cli_cluster):
    """SIGHUP (the terminal running `josefk cluster` closed) stops the brokers and ZooKeeper
    as Ctrl-C does; it orphaned them, still running on their ports."""
    c = cli_cluster()
    c.proc.send_signal(signal.SIGHUP)
    c.expect(r"^stopping the cluster", 30)
    assert c.proc.wait(90) == 0
    assert c.orphans() == []
    assert not any(port_accepts("127.0.0.1", c.port + i) for i in range(4))


def test_kill_command_and_restart_after(cli_cluster):
    c = cli_cluster("--restart-after", "2")
    c.type("kill 9")
    c.expect(r"^no broker 9 \(brokers 1, 2, 3\)$")
    c.type("kill 2")
    c.expect(r"broker 2 \(pid \d+\) killed with SIGKILL; its ZooKeeper session times out "
             r"after 6 s, then the controller moves its leaderships to the other brokers$")
    c.expect(r"broker 2 restarted \(pid \d+\)", 60)
    c.type("stop 3")
    c.expect(r"broker 3 stopped: it exited normally", 90)
    c.expect(r"broker 3 restarted", 60)


def test_a_port_in_use_fails_the_cluster_at_once_with_the_brokers_own_line(tmp_path):
    """Broker 3's port is taken: the command ends as soon as that broker exits (not after the
    60 s wait for three brokers), quoting the broker's one line, and leaves nothing running."""
    port = ports_in_a_row(4)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", port + 2))
        taken.listen()
        t0 = time.monotonic()
        p = subprocess.run(
            [BROKER_PYTHON, "-m", "josefk", "cluster", "--dir", str(tmp_path / "cluster"),
             "--port", str(port), "--zookeeper-port", str(port + 3)],
            cwd=str(REPO_ROOT), stdin=subprocess.DEVNULL, capture_output=True, text=True,
            timeout=120, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
        took = time.monotonic() - t0
    assert p.returncode == 1, p
    assert p.stderr.splitlines() == [
        f"josefk cluster: broker 3 exited with code 1 while starting on 127.0.0.1:{port + 2}: "
        f"josefk broker: cannot start: Socket server failed to bind to 127.0.0.1:{port + 2}: "
        "Address already in use."], p.stderr
    assert "cluster ready" not in p.stdout
    assert took < 40, f"{took:.0f}s"
    assert not any(port_accepts("127.0.0.1", port + i) for i in (0, 1, 3))


def test_a_bad_override_is_the_brokers_line_and_exit_code_2(tmp_path):
    port = ports_in_a_row(4)
    p = subprocess.run(
        [BROKER_PYTHON, "-m", "josefk", "cluster", "--dir", str(tmp_path / "cluster"),
         "--port", str(port), "--zookeeper-port", str(port + 3),
         "--override", "log.retention.ms=abc"],
        cwd=str(REPO_ROOT), stdin=subprocess.DEVNULL, capture_output=True, text=True,
        timeout=120, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
    assert p.returncode == 2, p
    assert re.fullmatch(
        r"josefk cluster: broker \d exited with code 2 while starting on 127\.0\.0\.1:\d+: "
        r"josefk broker: Invalid value abc for configuration log\.retention\.ms: Not a number "
        r"of type LONG\n", p.stderr), p.stderr
    assert not any(port_accepts("127.0.0.1", port + i) for i in range(4))
