"""zk.local_server: a real ZooKeeper server started from Debian's package, reached with kazoo."""
import os
import socket

import pytest

from josefk.zk.local_server import (LocalZooKeeper, ZooKeeperNotInstalled, ZooKeeperStartError,
                                    find_classpath, find_java, four_letter_word)


def _installed() -> str | None:
    try:
        find_java()
        find_classpath()
    except ZooKeeperNotInstalled as e:
        return str(e)
    return None


_NOT_INSTALLED = _installed()
needs_zookeeper = pytest.mark.skipif(_NOT_INSTALLED is not None, reason=_NOT_INSTALLED or "")


# -- without a server -------------------------------------------------------------------------

def test_missing_java_is_a_clear_error(tmp_path):
    with pytest.raises(ZooKeeperNotInstalled, match="Java is not installed"):
        find_java(str(tmp_path / "no-java"))
    zk = LocalZooKeeper(tmp_path, java=str(tmp_path / "no-java"))
    with pytest.raises(ZooKeeperNotInstalled, match="apt-get install"):
        zk.start()
    assert not zk.is_running()


def test_missing_zookeeper_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.delenv("ZOOKEEPER_HOME", raising=False)
    with pytest.raises(ZooKeeperNotInstalled, match="apt-get install zookeeper"):
        find_classpath(java_dir=str(tmp_path))
    with pytest.raises(ZooKeeperNotInstalled, match="ZOOKEEPER_HOME"):
        find_classpath(zookeeper_home=str(tmp_path))


def test_upstream_tarball_layout(tmp_path):
    (tmp_path / "lib").mkdir()
    for jar in ("zookeeper-3.8.4.jar", "zookeeper-jute-3.8.4.jar", "netty-handler-4.1.jar"):
        (tmp_path / "lib" / jar).write_bytes(b"")
    cp = find_classpath(zookeeper_home=str(tmp_path))
    assert sorted(os.path.basename(j) for j in cp) == ["netty-handler-4.1.jar", "zookeeper-3.8.4.jar",
                                                      "zookeeper-jute-3.8.4.jar"]


def test_config(tmp_path):
    zk = LocalZooKeeper(tmp_path / "zk", port=2345)
    cfg = dict(line.split("=", 1) for line in zk.config_text().splitlines() if not line.startswith("#"))
    assert cfg["clientPort"] == "2345" and cfg["clientPortAddress"] == "127.0.0.1"
    assert cfg["admin.enableServer"] == "false"
    assert int(cfg["tickTime"]) == 500 and int(cfg["minSessionTimeout"]) <= 3000
    assert cfg["dataDir"] == str((tmp_path / "zk" / "data").resolve())
    assert zk.connect_string == "127.0.0.1:2345"
    with pytest.raises(RuntimeError):
        LocalZooKeeper(tmp_path).connect_string  # no port before start()


# -- with a server ----------------------------------------------------------------------------

@needs_zookeeper
@pytest.mark.slow
def test_start_stop_twice_with_kazoo(tmp_path):
    from kazoo.client import KazooClient

    zk = LocalZooKeeper(tmp_path / "zk")
    zk.start()
    try:
        assert zk.is_running()
        port = zk.port
        assert "Mode: standalone" in four_letter_word("127.0.0.1", port, "srvr")
        client = KazooClient(hosts=zk.connect_string, timeout=3.0)
        client.start(timeout=15)
        try:
            # a 3 s session is allowed (minSessionTimeout), not raised to a bigger minimum
            assert client._session_timeout == 3000
            client.create("/josefk/hello", b"world", makepath=True)
        finally:
            client.stop()
            client.close()
    finally:
        zk.stop()
    assert not zk.is_running()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()

    with zk:  # restarts on the same port with the same data
        assert zk.port == port
        client = KazooClient(hosts=zk.connect_string, timeout=3.0)
        client.start(timeout=15)
        try:
            assert client.get("/josefk/hello")[0] == b"world"
        finally:
            client.stop()
            client.close()
    assert not zk.is_running()
    log = zk.log_path.read_text()
    assert log.count("josefk: starting ZooKeeper") == 2
    assert "binding to port" in log  # the server really logs (Debian gives it no SLF4J binding)


@needs_zookeeper
@pytest.mark.slow
def test_port_in_use_is_a_clear_error(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        zk = LocalZooKeeper(tmp_path / "zk", port=s.getsockname()[1])
        with pytest.raises(ZooKeeperStartError, match="already in use"):
            zk.start()
        assert not zk.is_running()
