"""Fixtures for the compatibility tests: real broker subprocesses, real clients."""

from __future__ import annotations

import pytest

from josefk.faults.processes import BrokerProcess
from josefk.zk.local_server import free_port
from compat_tests.clients import ADAPTERS, CLIENTS
from compat_tests.cluster import CONSUMER_GROUP_TIMING, Cluster
from compat_tests.helpers import create_topic, unique_topic
from compat_tests.targets import CLUSTER_SHAPES, FAST_FAILOVER, TARGETS, Target
from testkit.postgres import pg_database, postgres  # noqa: F401
from testkit.zookeeper import new_chroot, zk_chroot, zk_connect, zookeeper  # noqa: F401

# Settings every test broker gets: a single node, so internal topics have one replica,
# and no rebalance delay so group tests don't sit idle (nor, with the consumer group protocol,
# 45 s sessions and 5 s heartbeats).
BASE_OVERRIDES = {
    "group.initial.rebalance.delay.ms": 0,
    **CONSUMER_GROUP_TIMING,
    "offsets.topic.replication.factor": 1,
    "offsets.topic.num.partitions": 3,
    "transaction.state.log.replication.factor": 1,
    "transaction.state.log.min.isr": 1,
}

# The shared broker auto-creates topics with 2 partitions (asserted by a test).
SHARED_OVERRIDES = {
    **BASE_OVERRIDES,
    "auto.create.topics.enable": "true",
    "num.partitions": 2,
}

# A tool's action as josefk's subcommand word (``topics list``) and as Kafka's flag (``--list``).
ACTION_SPELLINGS = {"subcommand": lambda action: action, "kafka-flag": lambda action: f"--{action}"}


@pytest.fixture(params=sorted(ACTION_SPELLINGS))
def spell(request):
    """Spells a CLI action both ways: the tests that take it run once with each."""
    return ACTION_SPELLINGS[request.param]


_brokers: list[BrokerProcess] = []
_all_logs: list = []  # every broker log of the session, for the end-of-run summary
_log_sizes: dict = {}  # the size of each broker's log when the running test began


@pytest.fixture(scope="session")
def broker(tmp_path_factory):
    """One broker for most tests. Tests isolate themselves by unique topic names."""
    root = tmp_path_factory.mktemp("shared-broker")
    b = BrokerProcess(data_dir=root / "data", overrides=SHARED_OVERRIDES, log_dir=root)
    b.start()
    _brokers.append(b)
    _all_logs.append(b.log_path)
    yield b
    b.stop()
    _brokers.remove(b)


@pytest.fixture(autouse=True)
def _shared_brokers_survive(request):
    """Fail the test during which a shared broker process died (it would otherwise show up
    only as connection errors in every later test). A shared target starts each test with no
    topics of its own, for the failure report's layout."""
    shared = [request.getfixturevalue(n) for n in ("broker", "target")
              if n in request.fixturenames]
    _log_sizes.clear()
    _log_sizes.update({b.log_path: b.log_size() for b in _brokers})
    for t in shared:
        if isinstance(t, Target):
            t.created.clear()
    yield
    for b in [b for t in shared for b in (t.brokers.values() if isinstance(t, Target) else [t])]:
        if not b.is_running():
            pytest.fail(f"shared broker process {b.bootstrap} exited (code {b.proc.returncode}) "
                        f"during this test\n{b.log_tail()}", pytrace=False)


@pytest.fixture
def broker_factory(tmp_path):
    """Start brokers of one's own (for restarts and crashes). All are stopped afterwards."""
    mine: list[BrokerProcess] = []

    def make(overrides: dict | None = None, data_dir=None, start: bool = True,
             **process_kw) -> BrokerProcess:
        n = len(mine)
        b = BrokerProcess(
            data_dir=data_dir or tmp_path / f"broker{n}" / "data",
            overrides={**BASE_OVERRIDES, **(overrides or {})},
            log_dir=tmp_path / f"broker{n}",
            **process_kw,
        )
        mine.append(b)
        _brokers.append(b)
        _all_logs.append(b.log_path)
        if start:
            b.start()
        return b

    yield make
    for b in mine:
        b.stop(timeout=5)
        _brokers.remove(b)


@pytest.fixture(scope="session")
def cluster(zookeeper, tmp_path_factory):
    """One 3-broker ZooKeeper cluster shared by the tests that leave it as they found it."""
    c = Cluster(new_chroot(zookeeper, "shared-cluster"), tmp_path_factory.mktemp("cluster"))
    _track_cluster(c)
    c.start()
    yield c
    c.stop()
    _untrack_cluster(c)


@pytest.fixture
def cluster_factory(zookeeper, tmp_path, request):
    """Clusters of one's own, for tests that kill, stop or partition brokers."""
    mine: list[Cluster] = []

    def make(size: int = 3, overrides: dict | None = None, racks=None,
             start: bool = True) -> Cluster:
        c = Cluster(new_chroot(zookeeper, request.node.name), tmp_path / f"cluster{len(mine)}",
                    size, overrides, racks)
        mine.append(c)
        _track_cluster(c)
        if start:
            c.start()
        return c

    yield make
    for c in mine:
        c.stop(timeout=10)
        _untrack_cluster(c)


def _track_cluster(c):
    for b in c.brokers.values():
        _brokers.append(b)
        _all_logs.append(b.log_path)


def _untrack_cluster(c):
    for b in c.brokers.values():
        if b in _brokers:
            _brokers.remove(b)


@pytest.fixture(scope="session")
def schema_registry(broker, tmp_path_factory):
    """One ``josefk registry`` on the shared broker (its own _schemas topic)."""
    from compat_tests.http_services import ServiceProcess, wait_primary

    root = tmp_path_factory.mktemp("registry")
    sr = ServiceProcess("registry", {"kafkastore.bootstrap.servers": broker.bootstrap,
                                     "kafkastore.topic": "_schemas_shared",
                                     "schema.registry.group.id": "registry-shared",
                                     "kafkastore.topic.replication.factor": 1},
                        root / "registry.log").start()
    wait_primary(sr.url)
    yield sr
    sr.stop()


@pytest.fixture(scope="session")
def spark():
    """One local SparkSession for the session's Spark scenarios (a JVM each would cost
    seconds and a gigabyte), with the project's Kafka source."""
    from josefk.pipelines.kafka_source import NAME, kafka_format
    from josefk.pipelines.session import local_session

    session = local_session("josefk-compat")
    assert kafka_format(session) == NAME  # no JVM connector here: the Python source answers
    yield session
    session.stop()


@pytest.fixture(scope="session")
def rest_proxy(broker, schema_registry, tmp_path_factory):
    """One ``josefk rest`` on the shared broker, using the shared registry."""
    from compat_tests.http_services import ServiceProcess

    root = tmp_path_factory.mktemp("rest")
    proxy = ServiceProcess("rest", {"bootstrap.servers": broker.bootstrap,
                                    "schema.registry.url": schema_registry.url,
                                    "request.max.bytes": 1 << 20},
                           root / "rest.log").start()
    yield proxy
    proxy.stop()


@pytest.fixture(scope="session")
def pki(tmp_path_factory):
    """Test certificates (compat_tests/security_setup.py): a CA, server and client ones."""
    from compat_tests.security_setup import Pki

    return Pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture
def topic_name(request):
    """A topic name no other test uses (nothing is created)."""
    return unique_topic(request.node.name)


@pytest.fixture
def new_topic(request):
    """Factory: create a uniquely named topic via the admin API on the test's target, or on the
    shared broker for tests without one."""

    def make(partitions: int = 1, config: dict | None = None, name: str | None = None) -> str:
        name = name or unique_topic(request.node.name)
        if "target" in request.fixturenames:
            return request.getfixturevalue("target").create_topic(name, partitions, config)
        return create_topic(request.getfixturevalue("broker").bootstrap, name, partitions,
                            config)

    return make


@pytest.fixture(params=CLIENTS)
def client(request):
    """The client a scenario every client should pass runs with (compat_tests/clients.py)."""
    return ADAPTERS[request.param]()


@pytest.fixture(scope="session", params=TARGETS)
def target(request, tmp_path_factory):
    """Where a real-client scenario runs (compat_tests/targets.py): the shared broker, or a
    3-broker cluster of the session in the shape the param names. pytest runs the tests of one
    target together, so each cluster starts once and stops before the next one starts."""
    name = request.param
    if name == "single":
        yield Target(name, {1: request.getfixturevalue("broker")})
        return
    c = Cluster(new_chroot(request.getfixturevalue("zookeeper"), f"target-{name}"),
                tmp_path_factory.mktemp(f"target-{name}"), overrides=CLUSTER_SHAPES[name])
    _track_cluster(c)
    c.start()
    yield Target(name, c.brokers, c)
    c.stop()
    _untrack_cluster(c)


@pytest.fixture(params=[pytest.param(t, marks=pytest.mark.slow) if t == "rf3" else t
                        for t in TARGETS])
def target_factory(request):
    """Targets of one's own in the shape the param names (a new broker, or a new cluster that
    fails over in seconds), for scenarios that restart brokers or need other settings:
    ``target_factory(overrides, metrics=True)``; with ``metrics`` every broker serves
    Prometheus metrics on a port of its own (``Target.metrics_ports``). These scenarios are
    the costly ones: on ``rf3`` they are marked slow, ``spread`` stands for the clusters in a
    short run (``-m "not slow"``)."""
    name = request.param

    def make(overrides: dict | None = None, metrics: bool = False) -> Target:
        if name == "single":
            b = request.getfixturevalue("broker_factory")(overrides, start=False)
            t, start = Target(name, {1: b}), b.start
        else:
            c = request.getfixturevalue("cluster_factory")(
                overrides={**CLUSTER_SHAPES[name], **FAST_FAILOVER, **(overrides or {})},
                start=False)
            # Thrown away with kill -9 when the test ends, before cluster_factory's
            # controlled shutdowns (seconds each where no other replica can take over).
            request.node.addfinalizer(lambda: [b.kill() for b in c.brokers.values()])
            t, start = Target(name, c.brokers, c), c.start
        if metrics:
            t.metrics_ports = [free_port() for _ in t.brokers]
            for b, port in zip(t.brokers.values(), t.metrics_ports):
                b.overrides["josefk.metrics.port"] = port
        start()
        return t

    return make


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """On failure, attach the tail of what every live broker logged during the test to the
    report: the newest first, so the test's own brokers lead (CI shows only the start of a long
    report), and of the shared brokers only this test's part."""
    outcome = yield
    report = outcome.get_result()
    if report.failed and _brokers:
        target = item.funcargs.get("target") if hasattr(item, "funcargs") else None
        if isinstance(target, Target) and target.cluster is not None:
            report.sections.append((f"layout of {target.name}", target.layout()))
        for b in reversed(_brokers):
            report.sections.append((f"broker log {b.bootstrap} ({b.log_path}), this test's part",
                                    b.log_tail(4000, since=_log_sizes.get(b.log_path, 0))))


def pytest_configure(config):
    # kafka-python loads its protocol schemas with a deprecated importlib API.
    config.addinivalue_line("filterwarnings", "ignore:.*is deprecated. Use files:DeprecationWarning")


def pytest_terminal_summary(terminalreporter):
    """Surface unhandled exceptions the brokers logged, even when clients retried past them."""
    for path in _all_logs:
        try:
            text = path.read_text(errors="replace")
        except OSError:
            continue
        count = text.count("Traceback (most recent call last)")
        if count:
            first = text.index("Traceback (most recent call last)")
            terminalreporter.write_sep("-", f"{count} traceback(s) in broker log {path}")
            terminalreporter.write_line(text[max(0, first - 300):first + 3000])
