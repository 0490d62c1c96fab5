"""`python -m josefk topics ...` (kafka-topics.sh style) against the running broker.

Results are cross-checked with confluent-kafka's AdminClient, an independent client.
"""

from __future__ import annotations

import re
import socket
import subprocess
import time

import pytest
from confluent_kafka.admin import ConfigResource, ResourceType

from compat_tests.helpers import (BROKER_PYTHON, REPO_ROOT, admin_client, josefk_cli,
                                  unique_topic, wait_for_topic, wait_for_topic_gone)

pytestmark = pytest.mark.timeout(90)


def cli(broker, *args, check=True) -> subprocess.CompletedProcess:
    return josefk_cli(broker, "topics", *args, check=check)


def test_topics_create_list_describe_delete(broker):
    name = unique_topic("cli")
    out = cli(broker, "create", "--topic", name, "--partitions", "3",
              "--replication-factor", "1", "--config", "retention.ms=3600000",
              "--config", "cleanup.policy=compact").stdout
    assert out.strip() == f"Created topic {name}."

    # Independent check with confluent-kafka.
    admin = admin_client(broker.bootstrap)
    t = wait_for_topic(admin, name, 3)
    assert sorted(t.partitions) == [0, 1, 2]
    res = ConfigResource(ResourceType.TOPIC, name)
    configs = admin.describe_configs([res])[res].result(15)
    assert configs["retention.ms"].value == "3600000"
    assert configs["cleanup.policy"].value == "compact"

    listed = cli(broker, "list").stdout.splitlines()
    assert name in listed
    assert all(line == line.strip() and line for line in listed), listed

    out = cli(broker, "describe", "--topic", name).stdout
    lines = out.strip().splitlines()
    assert len(lines) == 4, out
    head = lines[0]
    assert re.match(rf"Topic:\s*{re.escape(name)}\s", head), out
    assert re.search(r"PartitionCount:\s*3\b", head), out
    assert re.search(r"ReplicationFactor:\s*1\b", head), out
    m = re.search(r"Configs:\s*(\S*)", head)
    assert m, out
    assert set(m.group(1).split(",")) == {"retention.ms=3600000", "cleanup.policy=compact"}, out
    for p, line in enumerate(lines[1:]):
        assert re.match(
            rf"\s*Topic:\s*{re.escape(name)}\s+Partition:\s*{p}\s+Leader:\s*1\s+"
            r"Replicas:\s*1\s+Isr:\s*1\s*$", line), out

    dup = cli(broker, "create", "--topic", name, "--partitions", "1", check=False)
    assert dup.returncode != 0
    assert "already exists" in (dup.stdout + dup.stderr).lower()
    # --if-not-exists makes it a no-op.
    cli(broker, "create", "--topic", name, "--partitions", "1", "--if-not-exists")
    assert len(wait_for_topic(admin, name, 3).partitions) == 3

    cli(broker, "delete", "--topic", name)
    wait_for_topic_gone(admin, name)
    deadline = time.monotonic() + 10
    while name in cli(broker, "list").stdout.splitlines() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert name not in cli(broker, "list").stdout.splitlines()


def test_topics_errors(broker):
    missing = unique_topic("cli-missing")
    proc = cli(broker, "delete", "--topic", missing, check=False)
    assert proc.returncode != 0
    cli(broker, "delete", "--topic", missing, "--if-exists")

    proc = cli(broker, "describe", "--topic", missing, check=False)
    assert proc.returncode != 0
    assert "does not exist" in (proc.stdout + proc.stderr)

    proc = cli(broker, "create", "--topic", "bad name!", "--partitions", "1", check=False)
    assert proc.returncode != 0
    assert "bad name!" not in admin_client(broker.bootstrap).list_topics(timeout=10).topics


def test_a_bootstrap_list_is_tried_in_order(broker):
    """As Kafka's clients do, a tool goes through its bootstrap list until one answers."""
    name = unique_topic("cli-boot")
    cli(broker, "create", "--topic", name, "--partitions", "1")
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        closed = f"127.0.0.1:{s.getsockname()[1]}"
    proc = subprocess.run([BROKER_PYTHON, "-m", "josefk", "topics", "list", "--bootstrap-server",
                           f"{closed},{broker.bootstrap}"], cwd=str(REPO_ROOT),
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0 and name in proc.stdout.split(), proc.stderr


def test_topics_create_uses_broker_default_partitions(broker):
    name = unique_topic("cli-default")
    cli(broker, "create", "--topic", name)
    # The shared broker runs with num.partitions=2.
    t = wait_for_topic(admin_client(broker.bootstrap), name, 2)
    assert sorted(t.partitions) == [0, 1]


def test_a_missing_topic_or_group_is_one_line_for_every_tool(broker):
    missing = unique_topic("cli-missing")
    for args in (["topics", "describe", "--topic", missing],
                 ["configs", "--entity-type", "topics", "--entity-name", missing, "--describe"],
                 ["log-dirs", "--describe", "--topic-list", missing],
                 ["console-consumer", "--topic", missing, "--timeout-ms", "2000"],
                 ["perf-consumer", "--topic", missing, "--messages", "1"],
                 ["groups", "describe", "--group", missing]):
        proc = josefk_cli(broker, *args, check=False)
        assert proc.returncode == 1, (args, proc.stderr)
        assert len(proc.stderr.strip().splitlines()) == 1, (args, proc.stderr)
        assert missing in proc.stderr, (args, proc.stderr)
