"""The pytest plugin of ``josefk.testing``, registered as ``pytest11``: wherever josefk is
installed, every pytest run has these fixtures (nothing of josefk is imported until one is used):

- ``josefk_broker``: a broker in the test process, shared by the whole session (tests keep apart
  by their topics); faults a test injects on it end with the test;
- ``josefk_topic``: a fresh topic on it for each test, its name (one partition, or what
  ``@pytest.mark.josefk_topic(partitions=3, config={...})`` asks), deleted after the test;
- ``josefk_cluster``: ZooKeeper and three broker processes, shared by the session; what a test
  did to them (killed, paused or cut off brokers, faults) is repaired after it.

``--kafka-bootstrap-servers HOST:PORT`` points the three at a running cluster instead (Apache
Kafka in CI, say). A test that then asks for a fault is skipped with the reason, as is one that
needs what this machine lacks (a JVM for ZooKeeper): both raise `josefk.testing.Unavailable`.
"""
from __future__ import annotations

import re
import uuid

import pytest

from josefk.testing.faults import Unavailable

CLUSTER_SIZE = 3


def pytest_addoption(parser):
    group = parser.getgroup("josefk", "josefk.testing: Kafka for tests")
    group.addoption("--kafka-bootstrap-servers", metavar="HOST:PORT[,...]",
                    help="run the josefk_broker, josefk_topic and josefk_cluster fixtures "
                         "against this Kafka cluster instead of brokers started for the tests "
                         "(tests that inject faults are then skipped)")


def pytest_configure(config):
    config.addinivalue_line("markers", "josefk_topic(partitions=1, config=None): the topic "
                                       "that the josefk_topic fixture makes for this test")


def _external(config):
    bootstrap = config.getoption("kafka_bootstrap_servers")
    if not bootstrap:
        return None
    from josefk.testing.external import ExternalCluster

    return ExternalCluster(bootstrap)


@pytest.fixture(scope="session")
def josefk_broker(pytestconfig):
    """A Kafka broker for the session: josefk's, in this process (or the cluster given with
    ``--kafka-bootstrap-servers``); ``.bootstrap_servers`` is its address."""
    external = _external(pytestconfig)
    if external is not None:
        yield external
        return
    from josefk.testing.local import broker

    with broker() as b:
        yield b


@pytest.fixture
def josefk_topic(josefk_broker, request) -> str:
    """A topic of this test's own on ``josefk_broker``: its name."""
    marker = request.node.get_closest_marker("josefk_topic")
    options = dict(marker.kwargs) if marker else {}
    label = re.sub(r"[^A-Za-z0-9._-]+", "-", request.node.name).strip("-.")[:200]
    name = f"{label or 'test'}-{uuid.uuid4().hex[:8]}"
    josefk_broker.create_topic(name, options.get("partitions", 1), options.get("config"))
    yield name
    josefk_broker.delete_topic(name)


@pytest.fixture(scope="session")
def josefk_cluster(pytestconfig, tmp_path_factory):
    """ZooKeeper and three josefk broker processes for the session (or the cluster given with
    ``--kafka-bootstrap-servers``), with ``kill``, ``restart``, ``pause``, ``resume``,
    ``isolate`` and ``heal``; skipped where ZooKeeper cannot run."""
    external = _external(pytestconfig)
    if external is not None:
        yield external
        return
    from josefk.testing.clusters import cluster

    with cluster(brokers=CLUSTER_SIZE, root=tmp_path_factory.mktemp("josefk-cluster")) as c:
        yield c


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_teardown(item):
    """Before the test's fixtures are torn down: end the faults it put on the shared broker
    and repair the shared cluster (so that the next test finds them whole)."""
    if item.config.getoption("kafka_bootstrap_servers"):
        return
    values = getattr(item, "funcargs", {})
    if "josefk_broker" in values:
        values["josefk_broker"].clear_faults()
    if "josefk_cluster" in values:
        values["josefk_cluster"].repair()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item):
    """A test whose fixtures (setup) or body (call) meet `Unavailable` is skipped with it."""
    try:
        return (yield)
    except Unavailable as e:
        pytest.skip(str(e))


pytest_runtest_call = pytest_runtest_setup
