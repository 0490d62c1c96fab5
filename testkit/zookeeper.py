"""ZooKeeper for the cluster tests: one real server per test session, a namespace (chroot) per test.

Import the fixtures into ``compat_tests/conftest.py``::

    from testkit.zookeeper import zk_chroot, zk_connect, zookeeper  # noqa: F401  (fixtures)

``zookeeper`` is a started ``zk.local_server.LocalZooKeeper`` shared by the whole session (it is
skipped, with the install command as the reason, where Java or ZooKeeper is missing).
``zk_connect`` gives each test its own ``host:port/josefk-<test>-<id>`` connect string, the chroot
already created, so brokers of different tests never see each other's znodes; ``zk_chroot`` does
the same on demand (several clusters in one test).
"""
from __future__ import annotations

import re
import uuid

import pytest

from josefk.zk.local_server import LocalZooKeeper, ZooKeeperNotInstalled


def new_chroot(zk: LocalZooKeeper, name: str | None = None, create: bool = True) -> str:
    """A fresh ``host:port/josefk-<name>-<8 hex>`` connect string on ``zk``; with ``create`` the
    chroot node is made first (Kafka brokers create theirs, but plain kazoo clients need it)."""
    label = re.sub(r"[^A-Za-z0-9_.-]+", "-", name or "test").strip("-.")[:60] or "test"
    path = f"/josefk-{label}-{uuid.uuid4().hex[:8]}"
    if create:
        from kazoo.client import KazooClient

        client = KazooClient(hosts=zk.connect_string, timeout=10.0)
        client.start(timeout=15)
        try:
            client.ensure_path(path)
        finally:
            client.stop()
            client.close()
    return f"{zk.connect_string}{path}"


@pytest.fixture(scope="session")
def zookeeper(tmp_path_factory):
    """One ZooKeeper server for the session (data in a tmp dir; no fsync, it is throwaway)."""
    zk = LocalZooKeeper(tmp_path_factory.mktemp("zookeeper"), fsync=False)
    try:
        zk.start(timeout=60)
    except ZooKeeperNotInstalled as e:
        pytest.skip(str(e))
    yield zk
    zk.stop()


@pytest.fixture
def zk_connect(zookeeper, request) -> str:
    """This test's own ZooKeeper namespace: ``127.0.0.1:<port>/josefk-<test>-<id>`` (created)."""
    return new_chroot(zookeeper, request.node.name)


@pytest.fixture
def zk_chroot(zookeeper, request):
    """Factory for more namespaces in one test: ``zk_chroot()`` -> a new created connect string."""

    def make(create: bool = True) -> str:
        return new_chroot(zookeeper, request.node.name, create=create)

    return make
