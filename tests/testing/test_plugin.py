"""josefk.testing as a user meets it: pytest runs in subprocesses (pytester) over a small
project made of the examples of docs/testing.md (taken from the page itself, so the page shows
what runs) and of tests of what the fixtures promise; then the same project against a cluster
given with --kafka-bootstrap-servers, and on a machine without Java."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from josefk.faults import network
from tests.testing.test_testing import processes_naming

pytest_plugins = ["pytester"]

DOC = Path(__file__).resolve().parents[2] / "docs" / "testing.md"
FAULTS_SKIPPED = "faults need brokers started by josefk.testing"

PROMISES = '''
import socket
import time
import uuid

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient, ConfigResource

import josefk.testing
from josefk.testing.admin import metadata
from josefk.tools.client import Client

SEEN = []


def _admin(b):
    return AdminClient({"bootstrap.servers": b.bootstrap_servers})


def _wait_for_brokers(broker, node_ids, timeout=30):
    """Until ``broker`` itself lists the brokers ``node_ids``."""
    deadline = time.monotonic() + timeout
    with Client(broker.bootstrap_servers) as client:
        while (listed := sorted(b.node_id for b in metadata(client, []).brokers)) != node_ids:
            assert time.monotonic() < deadline, f"{broker} lists {listed} after {timeout} s"
            time.sleep(0.2)


def test_a_fault_is_set(josefk_broker):
    josefk_broker.inject("Metadata", "LEADER_NOT_AVAILABLE", 5)
    josefk_broker.delay("Fetch", 100)
    assert josefk_broker.faults() == {"errors": {"Metadata": ["LEADER_NOT_AVAILABLE", 5]},
                                      "delays": {"Fetch": 100}}


def test_the_faults_ended_with_the_test_that_set_them(josefk_broker):
    assert josefk_broker.faults() == {"errors": {}, "delays": {}}


@pytest.mark.josefk_topic(partitions=3, config={"cleanup.policy": "compact"})
def test_the_marker_shapes_the_topic(josefk_broker, josefk_topic):
    admin = _admin(josefk_broker)
    assert len(admin.list_topics(josefk_topic, timeout=10).topics[josefk_topic].partitions) == 3
    resource = ConfigResource(ConfigResource.Type.TOPIC, josefk_topic)
    configs = admin.describe_configs([resource])[resource].result(10)
    assert configs["cleanup.policy"].value == "compact"
    SEEN.append(josefk_topic)


def test_each_test_has_a_fresh_topic_and_the_last_one_is_gone(josefk_broker, josefk_topic):
    assert josefk_topic != SEEN[0]
    assert SEEN[0] not in _admin(josefk_broker).list_topics(timeout=10).topics


def test_what_the_machine_lacks_skips_the_test():
    raise josefk.testing.Unavailable("no such thing on this machine")


def test_brokers_are_killed_and_paused(josefk_cluster):
    josefk_cluster.kill(2)
    # two replicas: once ZooKeeper has noticed the kill, two brokers are left to hold them
    josefk_cluster.create_topic(f"after-a-kill-{uuid.uuid4().hex[:8]}", partitions=3,
                                replication_factor=2)
    josefk_cluster.pause(3)
    start = time.monotonic()
    josefk_cluster.create_topic(f"after-a-pause-{uuid.uuid4().hex[:8]}", replication_factor=1)
    assert time.monotonic() - start < 10  # the paused broker is not waited for
    assert not josefk_cluster.brokers[2].running


def test_the_cluster_is_whole_for_the_next_test(josefk_cluster):
    assert all(b.running for b in josefk_cluster.brokers.values())
    brokers = _admin(josefk_cluster).list_topics(timeout=10).brokers
    assert sorted(brokers) == [1, 2, 3]


def test_brokers_are_restarted_and_resumed(josefk_cluster):
    josefk_cluster.kill(1)
    josefk_cluster.pause(2)
    josefk_cluster.restart(1)
    josefk_cluster.resume(2)
    for node_id in (1, 2):
        _wait_for_brokers(josefk_cluster.brokers[node_id], [1, 2, 3])


def test_a_cluster_broker_answers_with_the_injected_error(josefk_cluster):
    topic = josefk_cluster.create_topic(f"injected-{uuid.uuid4().hex[:8]}")
    leader = josefk_cluster.brokers[josefk_cluster.leader(topic)]
    leader.inject("Produce", "NOT_ENOUGH_REPLICAS", count=50)
    reports = []
    producer = Producer({"bootstrap.servers": josefk_cluster.bootstrap_servers, "retries": 0,
                         "enable.idempotence": False})
    producer.produce(topic, b"x", on_delivery=lambda err, msg: reports.append(err))
    producer.flush(15)
    assert reports[0].code() == KafkaError.NOT_ENOUGH_REPLICAS
    leader.delay("Fetch", 50)
    assert leader.faults() == {"errors": {"Produce": ["NOT_ENOUGH_REPLICAS", 49]},
                               "delays": {"Fetch": 50}}


def test_faults_of_a_paused_or_stopped_broker_are_refused_at_once(josefk_cluster):
    josefk_cluster.pause(2)
    josefk_cluster.kill(3)
    start = time.monotonic()
    with pytest.raises(josefk.testing.FaultError, match="broker 2 is paused: resume it"):
        josefk_cluster.brokers[2].inject("Produce", "NOT_ENOUGH_REPLICAS")
    with pytest.raises(josefk.testing.FaultError, match="broker 3 is not running: restart it"):
        josefk_cluster.brokers[3].delay("Fetch", 10)
    assert time.monotonic() - start < 1


def test_an_isolated_broker_leaves_the_cluster_until_healed(josefk_cluster):
    josefk_cluster.isolate(3)
    # clients still reach it; the others drop it once its ZooKeeper session (6 s) expires
    socket.create_connection(("127.0.0.1", josefk_cluster.brokers[3].process.port), 5).close()
    _wait_for_brokers(josefk_cluster.brokers[1], [1, 2])
    josefk_cluster.heal()


def test_a_failing_test(josefk_broker, josefk_cluster):
    josefk_broker.inject("Fetch", "NOT_LEADER_OR_FOLLOWER", 5)
    josefk_cluster.kill(1)
    assert False, "this test fails on purpose"


def test_after_a_failing_test_everything_is_whole_again(josefk_broker, josefk_cluster):
    assert josefk_broker.faults() == {"errors": {}, "delays": {}}
    assert all(b.running for b in josefk_cluster.brokers.values())
    assert sorted(_admin(josefk_cluster).list_topics(timeout=10).brokers) == [1, 2, 3]
'''


def doc_examples() -> dict[str, str]:
    """The complete test files of docs/testing.md: Python blocks starting ``# test_<x>.py``."""
    return {name: code for code, name in
            re.findall(r"```python\n(# (test_\w+\.py)\n.*?)```", DOC.read_text(), re.S)}


def _outcomes(result) -> dict[str, str]:
    """test id -> PASSED / FAILED / SKIPPED / ERROR, from a ``-v`` run."""
    return dict(re.findall(r"^(\S+::\S+) (PASSED|FAILED|SKIPPED|ERROR)",
                           result.stdout.str(), re.M))


def test_the_page_has_its_examples():
    assert set(doc_examples()) == {"test_orders_confluent.py", "test_orders_kafka_python.py",
                                   "test_orders_aiokafka.py", "test_retries.py",
                                   "test_failover.py"}


def test_the_examples_and_the_fixtures_promises(pytester):
    pytester.makepyfile(test_promises=PROMISES, **{
        name[:-3]: code for name, code in doc_examples().items()})
    result = pytester.runpytest_subprocess("-v", "-rs", "-p", "no:cacheprovider", timeout=600)
    outcomes = _outcomes(result)
    out = result.stdout.str()
    isolation = network.unavailable_reason()
    assert {t for t, o in outcomes.items() if o == "SKIPPED"} == {
        "test_promises.py::test_what_the_machine_lacks_skips_the_test",
        *(["test_promises.py::test_an_isolated_broker_leaves_the_cluster_until_healed"]
          if isolation else [])}, out
    assert "no such thing on this machine" in out
    if isolation:  # e.g. "cannot isolate a broker here: network partitions need root (...)"
        assert f"cannot isolate a broker here: {isolation}" in out
    assert {t for t, o in outcomes.items() if o in ("FAILED", "ERROR")} == {
        "test_promises.py::test_a_failing_test"}, out
    assert len(outcomes) == 18, out
    assert processes_naming(pytester.path) == []


def test_the_examples_against_a_cluster_given_on_the_command_line(pytester, josefk_broker):
    """Our own session broker stands in for an Apache Kafka cluster that a CI job runs."""
    pytester.makepyfile(**{name[:-3]: code for name, code in doc_examples().items()})
    result = pytester.runpytest_subprocess(
        "-v", "-rs", "-p", "no:cacheprovider",
        f"--kafka-bootstrap-servers={josefk_broker.bootstrap_servers}", timeout=300)
    outcomes = _outcomes(result)
    assert {t.split("::")[0] for t, o in outcomes.items() if o == "PASSED"} == {
        "test_orders_confluent.py", "test_orders_kafka_python.py", "test_orders_aiokafka.py"}, \
        result.stdout.str()
    assert {t.split("::")[0] for t, o in outcomes.items() if o == "SKIPPED"} == {
        "test_retries.py", "test_failover.py"}, result.stdout.str()
    assert FAULTS_SKIPPED in result.stdout.str()


def test_without_java_the_cluster_tests_are_skipped_with_the_reason(pytester, monkeypatch):
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.delenv("ZOOKEEPER_HOME", raising=False)
    pytester.makepyfile(test_cluster="""
def test_one(josefk_cluster):
    pass


def test_two(josefk_cluster):
    pass


def test_the_broker_needs_no_java(josefk_broker, josefk_topic):
    pass
""")
    result = pytester.runpytest_subprocess("-rs", "-p", "no:cacheprovider", timeout=120)
    result.assert_outcomes(passed=1, skipped=2)
    result.stdout.fnmatch_lines(["*a josefk cluster needs ZooKeeper: Java is not installed*"])
