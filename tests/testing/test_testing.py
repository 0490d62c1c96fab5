"""josefk.testing.broker(): a broker in the test's own process that behaves as a guest there
(no signal handler, no logging set up, no process limit changed, nothing left behind), takes
Kafka's properties and topics, reports a failed start in the caller, and takes faults."""
from __future__ import annotations

import logging
import os
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

import josefk.testing
from josefk.broker.config import ConfigError
from josefk.tools.client import KafkaError
from josefk.wire import errors


def _state():
    root = logging.getLogger()
    return ({s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)},
            list(root.handlers), root.level, resource.getrlimit(resource.RLIMIT_NOFILE))


def processes_naming(path) -> list[str]:
    """Command lines of the processes that name ``path`` (brokers and ZooKeeper left behind)."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            text = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # gone meanwhile
            continue
        if str(path) in text:
            found.append(text)
    return found


def _threads():
    return {t for t in threading.enumerate() if t.is_alive()}


def test_a_guest_in_the_process_that_leaves_nothing_behind():
    before, threads = _state(), _threads()
    with josefk.testing.broker(topics=["guest"]) as b:
        assert _state() == before
        log_dir = b.log_dir
        assert os.path.isdir(log_dir)
        host, port = b.bootstrap_servers.split(":")
        assert host == "127.0.0.1" and int(port) > 0
        md = AdminClient({"bootstrap.servers": b.bootstrap_servers}).list_topics(timeout=10)
        # clients are told the port the broker got (its listener asked for port 0)
        assert [(m.host, m.port) for m in md.brokers.values()] == [(host, int(port))]
        assert "guest" in md.topics
    assert _state() == before
    assert not os.path.exists(log_dir)
    assert {t.name for t in _threads() - threads if t.name.startswith("josefk")} == set()
    b.close()  # a second close does nothing


def test_properties_as_a_dict_or_as_keywords_and_topics_with_configs():
    with josefk.testing.broker({"auto.create.topics.enable": False}, num_partitions=4, topics={
            "plain": 2, "compacted": {"partitions": 3, "config": {"cleanup.policy": "compact"}}},
            ) as b:
        admin = AdminClient({"bootstrap.servers": b.bootstrap_servers})
        topics = admin.list_topics(timeout=10).topics
        assert (len(topics["plain"].partitions), len(topics["compacted"].partitions)) == (2, 3)
        assert b.config.get("auto.create.topics.enable") == "false"
        b.create_topic("defaulted", partitions=-1)  # num.partitions reached the broker
        assert len(admin.list_topics("defaulted", timeout=10).topics["defaulted"].partitions) == 4
        with pytest.raises(KafkaError, match="already exists"):
            b.create_topic("plain")


def test_a_start_that_fails_is_raised_in_the_caller(monkeypatch):
    made = []
    monkeypatch.setattr(tempfile, "mkdtemp", lambda mkdtemp=tempfile.mkdtemp, **kw: made.append(
        mkdtemp(**kw)) or made[-1])
    with pytest.raises(ConfigError):
        josefk.testing.broker(num_partitions="many")
    assert len(made) == 1 and not os.path.exists(made[0])  # its log dir is gone
    monkeypatch.undo()
    with josefk.testing.broker() as b:
        port = b.bootstrap_servers.rsplit(":", 1)[1]
        threads = _threads()
        with pytest.raises(OSError):
            josefk.testing.broker(listeners=f"PLAINTEXT://127.0.0.1:{port}")
        assert {t.name for t in _threads() - threads if t.name.startswith("josefk")} == set()


def test_injected_errors_and_delays_reach_a_client():
    with josefk.testing.broker(topics=["t"]) as b:
        b.inject("Produce", "NOT_ENOUGH_REPLICAS", count=50)
        reports = []
        producer = Producer({"bootstrap.servers": b.bootstrap_servers, "retries": 0,
                             "enable.idempotence": False})
        producer.produce("t", b"x", on_delivery=lambda err, msg: reports.append(err))
        producer.flush(15)
        assert reports[0].code() == errors.NOT_ENOUGH_REPLICAS
        b.clear_faults()
        b.delay("Fetch", 300)
        producer.produce("t", b"y")
        assert producer.flush(15) == 0
        consumer = Consumer({"bootstrap.servers": b.bootstrap_servers, "group.id": "g",
                             "fetch.wait.max.ms": 10})
        start = time.monotonic()
        consumer.assign([TopicPartition("t", 0, 0)])
        msg = consumer.poll(15)
        waited = time.monotonic() - start
        consumer.close()
        assert msg.value() == b"y" and msg.offset() == 0  # the refused record never landed
        assert waited >= 0.3
        with pytest.raises(josefk.testing.FaultError, match="not a Kafka error"):
            b.inject("Fetch", "NO_SUCH_ERROR")


def test_a_cluster_with_its_topics_is_gone_after_a_failing_block(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)  # a user who is not root
    with pytest.raises(RuntimeError, match="the test failed"):
        with josefk.testing.cluster(brokers=2, topics={"orders": {
                "partitions": 2, "config": {"min.insync.replicas": 2}}}, root=tmp_path) as c:
            assert processes_naming(tmp_path)  # ZooKeeper and the brokers
            admin = AdminClient({"bootstrap.servers": c.bootstrap_servers})
            (orders,) = admin.list_topics("orders", timeout=10).topics.values()
            assert [len(p.replicas) for p in orders.partitions.values()] == [2, 2]
            with pytest.raises(josefk.testing.Unavailable,
                               match="^cannot isolate a broker here: .*need root"):
                c.isolate(2)
            raise RuntimeError("the test failed")
    assert processes_naming(tmp_path) == []


def test_a_cluster_that_cannot_start_is_raised_and_leaves_nothing(tmp_path):
    with pytest.raises(Exception, match="num.partitions"):
        josefk.testing.cluster(brokers=2, root=tmp_path, num_partitions="many")
    assert processes_naming(tmp_path) == []


NEVER_CLOSED = """
import sys
import josefk.testing

b = josefk.testing.broker()
c = josefk.testing.cluster(brokers=1, root=sys.argv[1])
print(b.log_dir)
"""


def test_a_broker_and_a_cluster_never_closed_are_stopped_at_exit(tmp_path):
    out = subprocess.run([sys.executable, "-c", NEVER_CLOSED, str(tmp_path)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert processes_naming(tmp_path) == []
    assert not os.path.exists(out.stdout.strip())
