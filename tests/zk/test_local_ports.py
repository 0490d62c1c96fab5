"""The ports handed out to local servers (zk/local_server.py: ZooKeeper, the brokers of the
tests, the fault harness and bench): outside the kernel's ephemeral range, where no client
connection takes them as its local port, and never the same one twice."""
from __future__ import annotations

import builtins

from josefk.zk import local_server


def test_ports_are_outside_the_ephemeral_range_and_never_twice():
    with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
        low, high = map(int, f.read().split())
    ports = [local_server.free_port() for _ in range(200)]
    first = local_server.ports_in_a_row(4)
    ports += range(first, first + 4)
    assert len(set(ports)) == len(ports)
    assert all(not low <= p <= high and 10000 <= p < 65536 for p in ports)


def test_without_the_kernels_range_the_kernel_picks(monkeypatch):
    real_open = builtins.open

    def no_proc(path, *args, **kwargs):
        if "ip_local_port_range" in str(path):
            raise FileNotFoundError(path)
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", no_proc)
    assert 0 < local_server.free_port() < 65536
