"""`python -m josefk topics ...` (kafka-topics.sh style) against the running broker, in both
spellings of an action (``topics list`` and Kafka's ``topics --list``); the command's
--version and --help.

Results are cross-checked with confluent-kafka's AdminClient, an independent client.
"""

from __future__ import annotations

import argparse
import re
import socket
import subprocess
import time
from importlib.metadata import version

import pytest
from confluent_kafka import TopicPartition
from confluent_kafka.admin import ConfigResource, ResourceType

from compat_tests.helpers import (BROKER_PYTHON, REPO_ROOT, admin_client, consumer, josefk_cli,
                                  unique_topic, wait_for_topic, wait_for_topic_gone)

pytestmark = pytest.mark.timeout(90)


def cli(broker, *args, check=True) -> subprocess.CompletedProcess:
    return josefk_cli(broker, "topics", *args, check=check)


def test_topics_create_list_describe_delete(broker, spell):
    name = unique_topic("cli")
    out = cli(broker, spell("create"), "--topic", name, "--partitions", "3",
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

    listed = cli(broker, spell("list")).stdout.splitlines()
    assert name in listed
    assert all(line == line.strip() and line for line in listed), listed

    out = cli(broker, spell("describe"), "--topic", name).stdout
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

    dup = cli(broker, spell("create"), "--topic", name, "--partitions", "1", check=False)
    assert dup.returncode != 0
    assert "already exists" in (dup.stdout + dup.stderr).lower()
    # --if-not-exists makes it a no-op.
    cli(broker, spell("create"), "--topic", name, "--partitions", "1", "--if-not-exists")
    assert len(wait_for_topic(admin, name, 3).partitions) == 3

    cli(broker, spell("delete"), "--topic", name)
    wait_for_topic_gone(admin, name)
    deadline = time.monotonic() + 10
    while name in cli(broker, spell("list")).stdout.splitlines() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert name not in cli(broker, spell("list")).stdout.splitlines()


def test_topics_errors(broker, spell):
    missing = unique_topic("cli-missing")
    proc = cli(broker, spell("delete"), "--topic", missing, check=False)
    assert proc.returncode == 1
    assert proc.stderr.strip() == ("Error while executing topic command : "
                                   f"Topic '{missing}' does not exist as expected")
    cli(broker, spell("delete"), "--topic", missing, "--if-exists")

    proc = cli(broker, spell("describe"), "--topic", missing, check=False)
    assert proc.returncode != 0
    assert f"Topic '{missing}' does not exist as expected" in proc.stderr

    proc = cli(broker, spell("create"), "--topic", "bad name!", "--partitions", "1", check=False)
    assert proc.returncode != 0
    assert "bad name!" not in admin_client(broker.bootstrap).list_topics(timeout=10).topics


def test_topics_alter_adds_partitions(broker, spell):
    name = unique_topic("cli-alter")
    cli(broker, spell("create"), "--topic", name, "--partitions", "1")
    assert cli(broker, spell("alter"), "--topic", name, "--partitions", "3").stdout == ""
    assert sorted(wait_for_topic(admin_client(broker.bootstrap), name, 3).partitions) == [0, 1, 2]
    fewer = cli(broker, spell("alter"), "--topic", name, "--partitions", "2", check=False)
    assert fewer.returncode == 1
    assert fewer.stderr.strip() == ("Error while executing topic command : error code 37: Topic "
                                    "currently has 3 partitions, which is higher than the "
                                    "requested 2.")
    missing = unique_topic("cli-alter-missing")
    proc = cli(broker, spell("alter"), "--topic", missing, "--partitions", "2", check=False)
    assert proc.stderr.strip() == ("Error while executing topic command : "
                                   f"Topic '{missing}' does not exist as expected")
    proc = cli(broker, spell("alter"), "--topic", name, check=False)
    assert proc.returncode == 2 and 'Missing required argument "[partitions]"' in proc.stderr


def test_topics_list_takes_a_pattern_and_leaves_out_internal_topics(broker, spell):
    prefix = unique_topic("cli-pattern")
    for suffix in ("a", "b"):
        cli(broker, spell("create"), "--topic", f"{prefix}-{suffix}", "--partitions", "1")
    assert cli(broker, spell("list"), "--topic", f"{prefix}-.*").stdout.split() == [
        f"{prefix}-a", f"{prefix}-b"]
    assert cli(broker, spell("list"), "--topic", f"{prefix}-b").stdout.split() == [
        f"{prefix}-b"]
    c = consumer(broker.bootstrap)  # a group's commit: __consumer_offsets exists
    c.commit(offsets=[TopicPartition(f"{prefix}-a", 0, 0)], asynchronous=False)
    c.close()
    assert "__consumer_offsets" in cli(broker, spell("list")).stdout.split()
    listed = cli(broker, spell("list"), "--exclude-internal").stdout.split()
    assert f"{prefix}-a" in listed and "__consumer_offsets" not in listed


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


def test_every_action_takes_one_spelling_at_a_time(broker):
    for args in (["topics"], ["topics", "list", "--delete"], ["groups", "--list", "--describe"],
                 ["configs", "--entity-type", "topics"]):
        proc = josefk_cli(broker, *args, check=False)
        assert proc.returncode == 2, (args, proc.stderr)
        assert "Command must include exactly one action: --" in proc.stderr, (args, proc.stderr)
    proc = cli(broker, "--create", "--partitions", "1", check=False)
    assert proc.returncode == 2 and 'Missing required argument "[topic]"' in proc.stderr
    proc = josefk_cli(broker, "groups", "--reset-offsets", "--group", "g", "--topic", "t",
                      check=False)
    assert proc.returncode == 2
    assert 'Missing required argument "[to-earliest|to-latest|to-offset|shift-by]"' in \
        proc.stderr
    proc = josefk_cli(broker, "groups", "--reset-offsets", "--group", "g", "--to-earliest",
                      check=False)
    assert proc.returncode == 2 and 'Missing required argument "[topic|all-topics]"' in proc.stderr


def _josefk(*args) -> subprocess.CompletedProcess:
    return subprocess.run([BROKER_PYTHON, "-m", "josefk", *args], cwd=str(REPO_ROOT),
                          capture_output=True, text=True, timeout=30)


def test_version():
    for args in (["--version"], ["topics", "--version"], ["broker", "--version"]):
        proc = _josefk(*args)
        assert proc.returncode == 0 and proc.stdout == f"josefk {version('josefk')}\n", args


def test_help_shows_every_option_with_its_default():
    """Every option of every command has its help, and --help shows its default."""
    from josefk.cli import build_parser

    parser, _ = build_parser(["--help"])
    commands = next(a for a in parser._actions
                    if isinstance(a, argparse._SubParsersAction)).choices
    def parsers(named):  # every command's parser, and those of its subcommands
        for name, p in named.items():
            yield name, p
            for a in p._actions:
                if isinstance(a, argparse._SubParsersAction):
                    yield from parsers({f"{name} {sub}": sp for sub, sp in a.choices.items()})

    every = dict(parsers(commands))
    assert "transactions find-hanging" in every
    bare = [(name, a.option_strings) for name, p in every.items() for a in p._actions
            if not a.help and not isinstance(a, argparse._SubParsersAction)]
    assert bare == []
    assert all("usage: josefk" in p.format_help() for p in every.values())  # no stray %
    assert set(commands) >= {"broker", "topics", "groups", "configs", "cluster", "registry"}
    shown = {
        "broker": ["--listeners PROTOCOL://HOST:PORT[,...]",
                   "(default: PLAINTEXT://127.0.0.1:9092)", "(default: /tmp/josefk-logs)",
                   "(default: INFO)"],
        "topics": ["(default: the broker's num.partitions)",
                   "(default: the broker's default.replication.factor)",
                   "(default: 127.0.0.1:9092)", "--list", "--create"],
        "groups": ["--reset-offsets", "--describe", "(default: 127.0.0.1:9092)"],
        "cluster": ["--brokers BROKERS", "(default: 3)", "(default: ./josefk-cluster)"],
        "console-producer": ["(default: -1)", "(default: 60000)"],
        "perf-producer": ["(default: 500)", "(default: 60000)"],
    }
    for command, texts in shown.items():
        out = _josefk(command, "--help").stdout
        flat = "".join(out.split())  # argparse wraps help lines at the terminal's width
        for text in texts:
            assert "".join(text.split()) in flat, (command, text, out)


def test_users_and_quotas_in_both_spellings(broker, spell):
    user, client = unique_topic("cli-user"), unique_topic("cli-client")
    out = josefk_cli(broker, "users", spell("alter"), "--user", user, "--add-config",
                     "SCRAM-SHA-256=[iterations=8192,password=pw]").stdout
    assert out.strip() == f"Completed updating config for user {user}."
    out = josefk_cli(broker, "users", spell("describe"), "--user", user).stdout
    assert out.strip() == (f"SCRAM credential configs for user-principal '{user}' are "
                           "SCRAM-SHA-256=iterations=8192")
    out = josefk_cli(broker, "quotas", spell("alter"), "--client-id", client, "--add-config",
                     "producer_byte_rate=1024").stdout
    assert out.strip() == f"Completed updating config for client-id '{client}'."
    out = josefk_cli(broker, "quotas", spell("describe"), "--client-id", client).stdout
    assert out.strip() == f"Quota configs for client-id '{client}' are producer_byte_rate=1024"
