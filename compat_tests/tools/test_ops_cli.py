"""The operator commands against live brokers, checked through their output and through real
clients: configs (kafka-configs.sh), delete-records, log-dirs, console-producer/-consumer,
perf-producer/-consumer and dump-log."""
from __future__ import annotations

import json
import subprocess
import time

from confluent_kafka import TopicPartition
from confluent_kafka.admin import ConfigResource, ConfigSource, NewTopic

from josefk.faults.processes import BROKER_PYTHON, REPO_ROOT
from compat_tests.helpers import (admin_client, consume_n, consumer, create_topic, flush_all,
                                  producer, unique_topic)
from josefk.wire.records import CONTROL_COMMIT, build_batch, control_record


def josefk(*args, broker=None, input=None, check=True) -> subprocess.CompletedProcess:
    cmd = [BROKER_PYTHON, "-m", "josefk", *args]
    if broker is not None:
        cmd += ["--bootstrap-server", broker.bootstrap]
    proc = subprocess.run(cmd, cwd=str(REPO_ROOT), capture_output=True, text=True, timeout=60,
                          input=input)
    if check:
        assert proc.returncode == 0, f"{args} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc


def describe(admin, rtype, name):
    res = ConfigResource(rtype, name)
    return admin.describe_configs([res], request_timeout=15)[res].result(15)


def test_configs_describe_and_alter_topics_and_brokers(broker_factory):
    b = broker_factory()
    topic = create_topic(b.bootstrap, unique_topic("cfg"))
    out = josefk("configs", "--entity-type", "topics", "--entity-name", topic, "--alter",
                 "--add-config", "retention.ms=60000,cleanup.policy=[delete,compact]", broker=b)
    assert out.stdout.strip() == f"Completed updating config for topic {topic}."
    out = josefk("configs", "--entity-type", "topics", "--entity-name", topic, "--describe",
                 broker=b).stdout.splitlines()
    assert out[0] == f"Dynamic configs for topic {topic} are:"
    assert out[1] == ("  cleanup.policy=delete,compact sensitive=false synonyms={"
                      "DYNAMIC_TOPIC_CONFIG:cleanup.policy=delete,compact, "
                      "DEFAULT_CONFIG:log.cleanup.policy=delete}")
    assert out[2].startswith("  retention.ms=60000 sensitive=false synonyms={"
                             "DYNAMIC_TOPIC_CONFIG:retention.ms=60000")
    josefk("configs", "--entity-type", "topics", "--entity-name", topic, "--alter",
           "--delete-config", "cleanup.policy", broker=b)
    admin = admin_client(b.bootstrap)
    assert describe(admin, "topic", topic)["cleanup.policy"].value == "delete"

    # The cluster-wide default of a broker config, which the AdminClients cannot address.
    out = josefk("configs", "--entity-type", "brokers", "--entity-default", "--alter",
                 "--add-config", "log.segment.bytes=5000000", broker=b)
    assert out.stdout.strip() == "Completed updating default config for brokers in the cluster."
    out = josefk("configs", "--entity-type", "brokers", "--entity-default", "--describe",
                 broker=b).stdout.splitlines()
    assert out == ["Default configs for brokers in the cluster are:",
                   "  log.segment.bytes=5000000 sensitive=false synonyms={"
                   "DYNAMIC_DEFAULT_BROKER_CONFIG:log.segment.bytes=5000000}"]
    seg = describe(admin, "topic", topic)["segment.bytes"]
    assert (seg.value, seg.source) == ("5000000",
                                       ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value)
    josefk("configs", "--entity-type", "brokers", "--entity-name", str(b.node_id), "--alter",
           "--add-config", "log.segment.bytes=6000000", broker=b)
    seg = describe(admin, "topic", topic)["segment.bytes"]
    assert (seg.value, seg.source) == ("6000000", ConfigSource.DYNAMIC_BROKER_CONFIG.value)
    out = josefk("configs", "--entity-type", "brokers", "--entity-name", str(b.node_id),
                 "--describe", broker=b).stdout.splitlines()
    assert out[0] == f"Dynamic configs for broker {b.node_id} are:"
    assert out[1] == ("  log.segment.bytes=6000000 sensitive=false synonyms={"
                      "DYNAMIC_BROKER_CONFIG:log.segment.bytes=6000000, "
                      "DYNAMIC_DEFAULT_BROKER_CONFIG:log.segment.bytes=5000000, "
                      "DEFAULT_CONFIG:log.segment.bytes=1073741824}")
    full = josefk("configs", "--entity-type", "brokers", "--entity-name", str(b.node_id),
                  "--describe", "--all", broker=b).stdout
    assert "All configs for broker 1 are:" in full and "  log.dirs=" in full

    bad = josefk("configs", "--entity-type", "topics", "--entity-name", topic, "--alter",
                 "--add-config", "retention.ms=soon", broker=b, check=False)
    assert bad.returncode == 1 and "retention.ms" in bad.stderr and "40" in bad.stderr


def test_configs_of_users_and_clients_are_scram_credentials_and_quotas(broker):
    """kafka-configs.sh's --entity-type users and clients: a user's SCRAM credentials and
    quotas, a client id's quotas and a user's on a client id, all in one --add-config."""
    user, client = unique_topic("cfg-user"), unique_topic("cfg-client")

    def configs(*args, check=True):
        return josefk("configs", *args, broker=broker, check=check)

    out = configs("--alter", "--entity-type", "users", "--entity-name", user, "--add-config",
                  "SCRAM-SHA-512=[iterations=4096,password=pw],producer_byte_rate=1024").stdout
    assert f"Completed updating config for user {user}." in out.splitlines()
    configs("--alter", "--entity-type", "users", "--entity-name", user, "--entity-type",
            "clients", "--entity-name", client, "--add-config", "consumer_byte_rate=2048")
    configs("--alter", "--entity-type", "clients", "--entity-name", client, "--add-config",
            "request_percentage=50")
    out = configs("--describe", "--entity-type", "users", "--entity-name", user).stdout
    assert out.splitlines() == [
        f"Quota configs for user-principal '{user}' are producer_byte_rate=1024",
        f"SCRAM credential configs for user-principal '{user}' are "
        "SCRAM-SHA-512=iterations=4096"]
    out = configs("--describe", "--entity-type", "users", "--entity-name", user,
                  "--entity-type", "clients", "--entity-name", client).stdout
    assert out.splitlines() == [f"Quota configs for user-principal '{user}' and client-id "
                                f"'{client}' are consumer_byte_rate=2048"]
    out = configs("--describe", "--entity-type", "clients").stdout
    assert f"Quota configs for client-id '{client}' are request_percentage=50" in out
    configs("--alter", "--entity-type", "users", "--entity-name", user, "--delete-config",
            "SCRAM-SHA-512,producer_byte_rate")
    assert configs("--describe", "--entity-type", "users", "--entity-name", user).stdout == ""
    bad = configs("--alter", "--entity-type", "clients", "--entity-name", client,
                  "--add-config", "SCRAM-SHA-256=[password=x]", check=False)
    assert bad.returncode == 1 and "SCRAM credentials are only for" in bad.stderr


def test_delete_records_and_log_dirs(broker, tmp_path):
    topic = create_topic(broker.bootstrap, unique_topic("cli-dr"), partitions=2)
    p = producer(broker.bootstrap)
    for i in range(10):
        p.produce(topic, b"v" * 50, partition=0)
    flush_all(p)
    spec = tmp_path / "offsets.json"
    spec.write_text(json.dumps({"partitions": [{"topic": topic, "partition": 0, "offset": 6},
                                               {"topic": topic, "partition": 1, "offset": 3}],
                                "version": 1}))
    out = josefk("delete-records", "--offset-json-file", str(spec), broker=broker, check=False)
    assert out.returncode == 1  # partition 1 is empty: offset 3 is out of range
    assert out.stdout.splitlines() == [
        "Executing records delete operation", "Records delete operation completed:",
        f"partition: {topic}-0\tlow_watermark: 6", f"partition: {topic}-1\terror: "
        "OFFSET_OUT_OF_RANGE"]
    c = consumer(broker.bootstrap)
    assert c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10) == (6, 10)
    c.close()

    out = josefk("log-dirs", "--describe", "--topic-list", topic, broker=broker)
    lines = out.stdout.splitlines()
    assert lines[:2] == ["Querying brokers for log directories information",
                         f"Received log directory information from brokers {broker.node_id}"]
    report = json.loads(lines[2])
    (node,) = report["brokers"]
    (d,) = node["logDirs"]
    assert d["logDir"] == str(broker.data_dir.resolve()) and d["error"] is None
    sizes = {p["partition"]: p["size"] for p in d["partitions"]}
    assert sizes[f"{topic}-1"] == 0 and sizes[f"{topic}-0"] > 10 * 50
    assert set(sizes) == {f"{topic}-0", f"{topic}-1"}


def test_console_producer_and_consumer(broker):
    topic = create_topic(broker.bootstrap, unique_topic("cli-console"), partitions=3)
    lines = "a:1,b:2\tk1\tfirst\n\tk2\tsecond\nc:3\tk1\tthird\n"
    josefk("console-producer", "--topic", topic, "--property", "parse.key=true",
           "--property", "parse.headers=true", broker=broker, input=lines)
    c = consumer(broker.bootstrap, **{"auto.offset.reset": "earliest"})
    c.assign([TopicPartition(topic, p, -2) for p in range(3)])
    got = {m.value(): m for m in consume_n(c, 3)}
    c.close()
    assert got[b"first"].key() == b"k1" and got[b"first"].headers() == [("a", b"1"), ("b", b"2")]
    assert got[b"second"].key() == b"k2" and not got[b"second"].headers()
    # Same key, same partition (Kafka's murmur2 partitioner): first and third stay in order.
    assert got[b"first"].partition() == got[b"third"].partition()
    assert got[b"third"].offset() == got[b"first"].offset() + 1

    out = josefk("console-consumer", "--topic", topic, "--from-beginning", "--max-messages",
                 "3", "--property", "print.key=true", "--property", "print.headers=true",
                 broker=broker)
    assert sorted(out.stdout.splitlines()) == ["NO_HEADERS\tk2\tsecond", "a:1,b:2\tk1\tfirst",
                                               "c:3\tk1\tthird"]
    assert "Processed a total of 3 messages" in out.stderr

    group = unique_topic("cli-group")
    out = josefk("console-consumer", "--topic", topic, "--from-beginning", "--group", group,
                 "--formatter", "json", "--timeout-ms", "1500", broker=broker)
    records = [json.loads(line) for line in out.stdout.splitlines()]
    assert sorted(r["value"] for r in records) == ["first", "second", "third"]
    assert {r["topic"] for r in records} == {topic}
    # The group's offsets were committed: a real consumer in that group sees them.
    c = consumer(broker.bootstrap, **{"group.id": group})
    committed = c.committed([TopicPartition(topic, p) for p in range(3)], timeout=10)
    ends = [c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in range(3)]
    c.close()
    assert [tp.offset for tp in committed] == ends
    # A second run in the same group has nothing left to print.
    out = josefk("console-consumer", "--topic", topic, "--group", group, "--timeout-ms", "800",
                 broker=broker)
    assert out.stdout == "" and "Processed a total of 0 messages" in out.stderr


def test_console_consumer_group_resumes_from_its_commits(broker):
    """kafka-console-consumer.sh --group: commits what it printed, the next run resumes there,
    and --from-beginning only matters while the group has no committed offset."""
    topic = create_topic(broker.bootstrap, unique_topic("cli-resume"), partitions=1)
    p = producer(broker.bootstrap)
    for i in range(5):
        p.produce(topic, f"m{i}".encode(), partition=0)
    flush_all(p)
    group = unique_topic("cli-resume-group")

    def run(*extra):
        out = josefk("console-consumer", "--topic", topic, "--group", group, "--timeout-ms",
                     "1500", *extra, broker=broker)
        return out.stdout.splitlines()

    assert run("--from-beginning", "--max-messages", "2") == ["m0", "m1"]
    for i in range(5, 7):
        p.produce(topic, f"m{i}".encode(), partition=0)
    flush_all(p)
    # Resumes at the committed offset 2: --from-beginning is ignored now.
    assert run("--from-beginning") == ["m2", "m3", "m4", "m5", "m6"]
    c = consumer(broker.bootstrap, **{"group.id": group})
    assert c.committed([TopicPartition(topic, 0)], timeout=10)[0].offset == 7
    c.close()
    assert run("--from-beginning") == []

    # A new group without --from-beginning starts at the end and, like the Java consumer's
    # close, commits that position although it printed nothing.
    group = unique_topic("cli-latest-group")
    assert run() == []
    p.produce(topic, b"m7", partition=0)
    flush_all(p)
    assert run("--from-beginning") == ["m7"]


def test_console_consumer_isolation_levels_and_aborted_transactions(broker):
    """kafka-console-consumer.sh's --isolation-level: read_uncommitted (its default) prints
    every data record, aborted transactions' too; read_committed leaves out what aborted
    transactions wrote and goes on past them. perf-consumer (read_committed) counts the
    committed records only."""
    topic = create_topic(broker.bootstrap, unique_topic("cli-isolation"), partitions=1)
    p = producer(broker.bootstrap, **{"transactional.id": unique_topic("cli-txn")})
    p.init_transactions(15)
    for values, commit in ((["c1", "c2"], True), (["a1", "a2"], False), (["c3"], True)):
        p.begin_transaction()
        for v in values:
            p.produce(topic, value=v.encode())
        p.flush(10)
        (p.commit_transaction if commit else p.abort_transaction)(15)
    base = ("console-consumer", "--topic", topic, "--from-beginning", "--timeout-ms", "1500")
    out = josefk(*base, "--isolation-level", "read_committed", broker=broker)
    assert out.stdout.splitlines() == ["c1", "c2", "c3"]
    out = josefk(*base, broker=broker)
    assert out.stdout.splitlines() == ["c1", "c2", "a1", "a2", "c3"]
    out = josefk("perf-consumer", "--topic", topic, "--messages", "3", "--timeout", "3000",
                 broker=broker)
    assert out.stdout.splitlines()[1].split(", ")[4] == "3"


def test_perf_producer_and_consumer(broker):
    topic = create_topic(broker.bootstrap, unique_topic("cli-perf"), partitions=2)
    out = josefk("perf-producer", "--topic", topic, "--num-records", "20000", "--record-size",
                 "100", "--reporting-interval", "50", "--throughput", "100000", broker=broker)
    lines = out.stdout.splitlines()
    assert lines[-1].startswith("20000 records sent, ") and "ms 99.9th." in lines[-1]
    assert len(lines) >= 2 and all(" ms max latency." in line for line in lines[:-1])
    c = consumer(broker.bootstrap)
    total = sum(c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
                for p in range(2))
    c.close()
    assert total == 20000
    out = josefk("perf-consumer", "--topic", topic, "--messages", "20000", broker=broker)
    header, row = out.stdout.splitlines()
    assert header.startswith("start.time, end.time, data.consumed.in.MB")
    assert row.split(", ")[4] == "20000"


def test_producer_tools_auto_create_a_missing_topic_as_kafkas_do(broker, broker_factory):
    """As a Kafka producer, console-producer and perf-producer ask for a missing topic with
    auto-creation allowed: the broker creates it (the shared broker's
    auto.create.topics.enable=true, num.partitions=2). With it off they wait max.block.ms for
    the topic and fail in the Java producer's words."""
    admin = admin_client(broker.bootstrap)
    console, perf = unique_topic("cli-auto-console"), unique_topic("cli-auto-perf")
    josefk("console-producer", "--topic", console, broker=broker, input="hello\n")
    josefk("perf-producer", "--topic", perf, "--num-records", "10", "--record-size", "10",
           broker=broker)
    c = consumer(broker.bootstrap)
    for topic, n in ((console, 1), (perf, 10)):
        assert len(admin.list_topics(topic, timeout=10).topics[topic].partitions) == 2
        assert sum(c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
                   for p in range(2)) == n
    c.close()

    off = broker_factory({"auto.create.topics.enable": "false"})
    missing = unique_topic("cli-auto-off")
    for args in (["console-producer", "--topic", missing, "--producer-property",
                  "max.block.ms=1500"],
                 ["perf-producer", "--topic", missing, "--num-records", "1", "--record-size",
                  "1", "--producer-props", "max.block.ms=1500"]):
        t0 = time.monotonic()
        proc = josefk(*args, broker=off, input="x\n", check=False)
        assert proc.returncode == 1 and time.monotonic() - t0 >= 1.5, (args, proc.stderr)
        assert proc.stderr.strip() == \
            f"ERROR Topic {missing} not present in metadata after 1500 ms.", args
    assert missing not in admin_client(off.bootstrap).list_topics(timeout=10).topics


def test_dump_log(broker, tmp_path):
    topic = create_topic(broker.bootstrap, unique_topic("cli-dump"),
                         config={"index.interval.bytes": "1"})
    p = producer(broker.bootstrap)
    for i in range(3):
        p.produce(topic, key=f"k{i}".encode(), value=f"v{i}".encode(), partition=0,
                  headers=[("h", b"x")])
        flush_all(p)  # one batch each, so the index gets an entry per batch
    seg = broker.data_dir / f"{topic}-0" / "00000000000000000000"
    out = josefk("dump-log", "--files", f"{seg}.log", "--print-data-log").stdout.splitlines()
    assert out[:2] == [f"Dumping {seg}.log", "Log starting offset: 0"]
    batches = [line for line in out if line.startswith("baseOffset:")]
    assert [b.split()[1] for b in batches] == ["0", "1", "2"]
    assert all("isvalid: true" in b and "compresscodec: none" in b for b in batches)
    records = [line for line in out if line.startswith("| offset:")]
    assert [r.split(" key: ")[1] for r in records] == ["k0 payload: v0", "k1 payload: v1",
                                                      "k2 payload: v2"]
    assert all("headerKeys: [h]" in r for r in records)
    out = josefk("dump-log", "--files", f"{seg}.index", f"{seg}.timeindex").stdout.splitlines()
    positions = {b.split()[1]: int(b.split(" position: ")[1].split()[0]) for b in batches}
    split = out.index(f"Dumping {seg}.timeindex")
    assert out[0] == f"Dumping {seg}.index"
    # An entry once index.interval.bytes were written since the last one: batches 1 and 2.
    assert out[1:split] == [f"offset: {o} position: {positions[o]}" for o in ("1", "2")]
    # Time index entries where the max timestamp grew, at the same points.
    stamps = [line.split(" offset: ") for line in out[split + 1:]]
    assert stamps and all(ts.startswith("timestamp: 1") and off in ("1", "2")
                          for ts, off in stamps)

    # A transaction marker, written the way a coordinator writes one, shows as a control record.
    marker = tmp_path / "00000000000000000042.log"
    marker.write_bytes(bytes(build_batch([control_record(CONTROL_COMMIT, 7)], base_offset=42,
                                         control=True, transactional=True, producer_id=9,
                                         producer_epoch=1)))
    out = josefk("dump-log", "--files", str(marker), "--deep-iteration").stdout
    assert "isTransactional: true isControl: true" in out
    assert "| offset: 42 " in out and "endTxnMarker: COMMIT coordinatorEpoch: 7" in out


def test_cli_across_a_cluster(cluster, tmp_path):
    topic = unique_topic("cli-cluster")
    admin = cluster.admin()
    admin.create_topics([NewTopic(topic, 3, 3)])[topic].result(30)
    cluster.wait_for_topic(topic, 3)
    p = producer(cluster.bootstrap, acks="all")
    for part in range(3):
        for _ in range(5):
            p.produce(topic, b"c" * 20, partition=part)
    flush_all(p)
    one = cluster.brokers[1]
    out = josefk("log-dirs", "--describe", "--topic-list", topic, broker=one).stdout.splitlines()
    assert out[1] == "Received log directory information from brokers 1,2,3"
    report = json.loads(out[2])
    for node in report["brokers"]:
        parts = {p["partition"] for d in node["logDirs"] for p in d["partitions"]}
        assert parts == {f"{topic}-{i}" for i in range(3)}, node
    # Each partition's request goes to its leader, wherever the tool connected first.
    spec = tmp_path / "offsets.json"
    spec.write_text(json.dumps({"partitions": [{"topic": topic, "partition": i, "offset": 2}
                                               for i in range(3)], "version": 1}))
    out = josefk("delete-records", "--offset-json-file", str(spec), broker=one)
    assert [line.split("\t")[1] for line in out.stdout.splitlines()[2:]] == [
        "low_watermark: 2"] * 3

    # A producer tool's missing topic is created in the cluster, as for a Kafka producer, and
    # the tool waits for its leaders.
    auto = unique_topic("cli-cluster-auto")
    josefk("console-producer", "--topic", auto, "--request-required-acks", "-1", broker=one,
           input="a\nb\nc\n")
    c = consumer(cluster.bootstrap)
    created = c.list_topics(auto, timeout=10).topics[auto].partitions
    assert created and sum(c.get_watermark_offsets(TopicPartition(auto, p), timeout=10)[1]
                           for p in created) == 3
    c.close()

    # A cluster-wide broker default reaches every broker (through /config/brokers/<default>).
    josefk("configs", "--entity-type", "brokers", "--entity-default", "--alter",
           "--add-config", "log.retention.ms=7654321", broker=one)
    try:
        deadline = time.monotonic() + 20
        for i, node in cluster.brokers.items():
            while True:
                got = describe(admin_client(node.bootstrap), "broker", str(i))["log.retention.ms"]
                if got.source == ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value or \
                        time.monotonic() > deadline:
                    break
                time.sleep(0.3)
            assert (got.value, got.source) == (
                "7654321", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value), i
    finally:
        josefk("configs", "--entity-type", "brokers", "--entity-default", "--alter",
               "--delete-config", "log.retention.ms", broker=one)
