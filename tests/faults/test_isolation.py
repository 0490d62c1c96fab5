"""The fault harness's network partitions (faults/network.py) and small disks (faults/disk.py) on
this machine: they do what they say, and leave no rule, cgroup or mount behind."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading

import pytest

from josefk.faults import disk, network


def _serve(srv: socket.socket):
    while True:
        try:
            conn, _ = srv.accept()
        except OSError:
            return
        conn.sendall(b"hi")
        conn.close()


def _connects(launcher: list[str], port: int) -> bool:
    probe = (f"import socket; s = socket.create_connection(('127.0.0.1', {port}), timeout=1); "
             f"assert s.recv(2) == b'hi'")
    return subprocess.run([*launcher, sys.executable, "-c", probe], capture_output=True,
                          timeout=30).returncode == 0


@pytest.mark.skipif(network.unavailable_reason() is not None,
                    reason=network.unavailable_reason() or "")
def test_a_cut_drops_what_a_member_sends_to_the_ports_and_heals():
    srv = socket.create_server(("127.0.0.1", 0))
    port = srv.getsockname()[1]
    threading.Thread(target=_serve, args=(srv,), daemon=True).start()
    p = network.Partitioner().open()
    try:
        cut_off, other = p.launcher("cut-off"), p.launcher("other")
        assert _connects(cut_off, port)
        p.cut("cut-off", own_ports=[], peers={}, servers=[port])
        assert len(p.rules()) == 1
        assert not _connects(cut_off, port)
        assert _connects(other, port) and _connects([], port)  # only that member is cut
        p.heal()
        assert p.rules() == [] and _connects(cut_off, port)
    finally:
        p.close()
        srv.close()
    rules = subprocess.run(["iptables", "-S"], capture_output=True, text=True).stdout
    assert p.chain not in rules
    assert not p.group.exists()


@pytest.mark.skipif(disk.unavailable_reason() is not None,
                    reason=disk.unavailable_reason() or "")
def test_a_small_disk_fills_frees_and_unmounts(tmp_path):
    d = disk.SmallDisk(tmp_path / "disk", 8).mount()
    try:
        (d.path / "data").write_bytes(b"x" * 1000)
        d.fill()
        assert d.free_bytes() < 4096
        with pytest.raises(OSError):
            with open(d.path / "more", "wb", buffering=0) as f:
                f.write(b"y" * 8192)
        d.free()
        assert d.free_bytes() > 7 << 20
        (d.path / "more").write_bytes(b"y" * 8192)
    finally:
        d.unmount()
    with open("/proc/self/mounts") as f:
        assert str(tmp_path) not in f.read()
    assert os.listdir(tmp_path / "disk") == []
