"""AlterConfigs, IncrementalAlterConfigs and DescribeConfigs sources/synonyms, DeleteRecords and
DescribeLogDirs, through confluent-kafka's and kafka-python's AdminClients, on a single broker
(changes applied at once and kept across a restart) and in a ZooKeeper cluster."""
from __future__ import annotations

import time

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import (AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource,
                                  NewTopic)
from kafka.admin import ConfigResource as KpResource
from kafka.admin import ConfigResourceType, KafkaAdminClient
from kafka.structs import TopicPartition as KpPartition

from compat_tests.helpers import (admin_client, consume_n, consumer, flush_all, producer,
                                  unique_topic)

SET, DELETE, APPEND, SUBTRACT = (AlterConfigOpType.SET, AlterConfigOpType.DELETE,
                                 AlterConfigOpType.APPEND, AlterConfigOpType.SUBTRACT)


def incremental(admin, rtype, name, *ops, validate_only=False):
    res = ConfigResource(rtype, name, incremental_configs=[
        ConfigEntry(k, v, incremental_operation=op) for k, v, op in ops])
    return admin.incremental_alter_configs([res], validate_only=validate_only,
                                           request_timeout=15)[res].result(15)


def describe(admin, rtype, name) -> dict:
    res = ConfigResource(rtype, name)
    return admin.describe_configs([res], request_timeout=15)[res].result(15)


def synonyms(entry) -> list:
    """(name, value, source) of an entry's synonyms (confluent keys them by name, so a name that
    occurs twice, e.g. a static and a default log.retention.hours, shows once)."""
    return [(s.name, s.value, s.source) for s in entry.synonyms.values()]


def produce_one(bootstrap, topic, size):
    """Deliver one ``size``-byte message; return its delivery error code (None when stored)."""
    p = producer(bootstrap, **{"message.max.bytes": 10_000_000, "retries": 0})
    out = []
    p.produce(topic, b"x" * size, key=b"k", partition=0,  # keyed: some topics are compacted
              on_delivery=lambda err, msg: out.append(err.code() if err else None))
    flush_all(p)
    return out[0]


def alter_error(fn) -> KafkaError:
    with pytest.raises(KafkaException) as exc:
        fn()
    return exc.value.args[0]


def test_incremental_alter_topic_applies_at_once(target):
    admin = admin_client(target.bootstrap)
    topic = target.create_topic(unique_topic("iac"))
    assert produce_one(target.bootstrap, topic, 2000) is None

    incremental(admin, "topic", topic, ("max.message.bytes", "500", SET),
                ("cleanup.policy", "compact", APPEND))
    got = describe(admin, "topic", topic)
    assert got["max.message.bytes"].value == "500"
    assert got["max.message.bytes"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert synonyms(got["max.message.bytes"]) == [
        ("max.message.bytes", "500", ConfigSource.DYNAMIC_TOPIC_CONFIG.value),
        ("message.max.bytes", "1048588", ConfigSource.DEFAULT_CONFIG.value)]
    assert got["cleanup.policy"].value == "delete,compact"
    # The running partition took the new limit: no restart, no re-creation (in a cluster once
    # the change notification reached its leader).
    _eventually(lambda: _produced(target, topic, 2000, KafkaError.MSG_SIZE_TOO_LARGE))

    incremental(admin, "topic", topic, ("cleanup.policy", "delete", SUBTRACT),
                ("max.message.bytes", None, DELETE))
    got = describe(admin, "topic", topic)
    assert got["cleanup.policy"].value == "compact"
    assert got["max.message.bytes"].value == "1048588"
    assert got["max.message.bytes"].source == ConfigSource.DEFAULT_CONFIG.value
    _eventually(lambda: _produced(target, topic, 2000, None))


def _produced(target, topic, size, code):
    assert produce_one(target.bootstrap, topic, size) == code


def test_alter_configs_replaces_the_whole_override_set(target):
    admin = admin_client(target.bootstrap)
    topic = target.create_topic(unique_topic("ac"),
                         config={"retention.ms": "3600000", "segment.ms": "7200000"})
    res = ConfigResource("topic", topic, set_config={"retention.ms": "60000"})
    admin.alter_configs([res], request_timeout=15)[res].result(15)
    got = describe(admin, "topic", topic)
    assert got["retention.ms"].value == "60000"
    assert got["retention.ms"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    # segment.ms was not in the request: AlterConfigs removes it (back to the broker default).
    assert got["segment.ms"].source == ConfigSource.DEFAULT_CONFIG.value
    assert got["segment.ms"].value == str(168 * 3600 * 1000)


def test_deprecated_message_format_version_is_accepted(target):
    """Kafka 3.x keeps message.format.version as a deprecated topic config it ignores: tools
    that read all configs and write them back with AlterConfigs (librdkafka's test 0092)
    must not be refused; a string that is no Kafka version is."""
    admin = admin_client(target.bootstrap)
    topic = target.create_topic(unique_topic("mfv"))
    got = describe(admin, "topic", topic)["message.format.version"]
    assert (got.value, got.source) == ("3.0-IV1", ConfigSource.DEFAULT_CONFIG.value)
    res = ConfigResource("topic", topic, set_config={"message.format.version": "0.10.0",
                                                     "retention.ms": "60000"})
    admin.alter_configs([res], request_timeout=15)[res].result(15)
    assert describe(admin, "topic", topic)["message.format.version"].value == "0.10.0"
    err = alter_error(lambda: incremental(admin, "topic", topic,
                                          ("message.format.version", "newest", SET)))
    assert err.code() == KafkaError.INVALID_CONFIG and "message.format.version" in err.str()


def test_message_format_version_takes_kafkas_version_strings(target):
    """Kafka reads a version from its leading segments (three for 0.x, two after), so the long
    forms tools write are versions too: librdkafka's test 0092 sets 0.10.0.0. A release Kafka
    never had is refused."""
    admin = admin_client(target.bootstrap)
    topic = target.create_topic(unique_topic("mfv-long"))
    for value in ("0.10.0.0", "0.8.2.2", "0.11.0-IV2", "2.8.1", "3.9.0", "1.0-IV0"):
        incremental(admin, "topic", topic, ("message.format.version", value, SET))
        assert describe(admin, "topic", topic)["message.format.version"].value == value
    for value in ("0.10.5", "1.5", "4.0", "3", "0.10", ""):
        err = alter_error(lambda: incremental(admin, "topic", topic,
                                              ("message.format.version", value, SET)))
        assert err.code() == KafkaError.INVALID_CONFIG, value


def test_validation_errors_name_the_key_and_change_nothing(target):
    admin = admin_client(target.bootstrap)
    topic = target.create_topic(unique_topic("bad"))
    err = alter_error(lambda: incremental(admin, "topic", topic, ("retention.ms", "soon", SET)))
    assert err.code() == KafkaError.INVALID_CONFIG and "retention.ms" in err.str()
    err = alter_error(lambda: incremental(admin, "topic", topic, ("no.such.config", "1", SET)))
    assert err.code() == KafkaError.INVALID_CONFIG and "no.such.config" in err.str()
    err = alter_error(lambda: incremental(admin, "topic", topic, ("retention.ms", "5", APPEND)))
    assert err.code() == KafkaError.INVALID_CONFIG and "retention.ms" in err.str()
    err = alter_error(lambda: incremental(admin, "topic", topic,
                                          ("cleanup.policy", "delete,shred", SET)))
    assert err.code() == KafkaError.INVALID_CONFIG and "cleanup.policy" in err.str()
    # A valid change with validate_only is checked, not applied.
    incremental(admin, "topic", topic, ("retention.ms", "1234", SET), validate_only=True)
    assert describe(admin, "topic", topic)["retention.ms"].source == \
        ConfigSource.DEFAULT_CONFIG.value
    err = alter_error(lambda: incremental(admin, "topic", unique_topic("missing"),
                                          ("retention.ms", "1", SET)))
    assert err.code() == KafkaError.UNKNOWN_TOPIC_OR_PART
    err = alter_error(lambda: incremental(admin, "broker", "1", ("log.dirs", "/elsewhere", SET)))
    assert err.code() == KafkaError.INVALID_CONFIG and "log.dirs" in err.str()


def test_kafka_python_alter_and_describe_with_synonyms(target):
    topic = target.create_topic(unique_topic("kpac"))
    k = KafkaAdminClient(bootstrap_servers=target.bootstrap)
    try:
        out = k.alter_configs([KpResource(ConfigResourceType.TOPIC, topic,
                                          configs={"retention.ms": "90000"})])
        assert out == {"topic": {topic: "OK"}}
        got = k.describe_configs([KpResource(ConfigResourceType.TOPIC, topic)],
                                 include_synonyms=True)["topic"][topic]["retention.ms"]
        assert got["value"] == "90000" and got["config_source"] == "DYNAMIC_TOPIC_CONFIG"
        assert [s["source"] for s in got["synonyms"]] == ["DYNAMIC_TOPIC_CONFIG",
                                                          "DEFAULT_CONFIG"]
        assert got["synonyms"][1]["name"] == "log.retention.hours"
        out = k.alter_configs([KpResource(ConfigResourceType.TOPIC, topic,
                                          configs={"retention.ms": "x"})])
        assert "InvalidConfigurationError" in out["topic"][topic]
        assert "retention.ms" in out["topic"][topic]
        # APPEND and DELETE ops (IncrementalAlterConfigs), then the legacy AlterConfigs, which
        # kafka-python fills with the other dynamic configs so nothing else is lost.
        k.alter_configs([KpResource(ConfigResourceType.TOPIC, topic, configs={
            "cleanup.policy": ("APPEND", "compact"), "retention.ms": ("DELETE", None)})])
        got = k.describe_configs([KpResource(ConfigResourceType.TOPIC, topic)],
                                 config_filter="all")["topic"][topic]
        assert got["cleanup.policy"]["value"] == "delete,compact"
        assert got["retention.ms"]["config_source"] == "DEFAULT_CONFIG"
        out = k.alter_configs([KpResource(ConfigResourceType.TOPIC, topic,
                                          configs={"segment.ms": "3600000"})], incremental=False)
        assert out == {"topic": {topic: "OK"}}
        got = k.describe_configs([KpResource(ConfigResourceType.TOPIC, topic)],
                                 config_filter="all")["topic"][topic]
        assert got["segment.ms"]["value"] == "3600000"
        assert got["cleanup.policy"]["value"] == "delete,compact"
    finally:
        k.close()


def test_every_topic_config_names_its_broker_synonym(target):
    """As Kafka's DescribeConfigs: a topic config's synonyms end in the broker config that
    gives its default (log.preallocate for preallocate...); topic-only configs have none."""
    admin = admin_client(target.bootstrap)
    got = describe(admin, "topic", target.create_topic(unique_topic("syn")))
    D = ConfigSource.DEFAULT_CONFIG.value
    for name, broker_key, value in (
            ("preallocate", "log.preallocate", "false"),
            ("compression.type", "compression.type", "producer"),
            ("min.cleanable.dirty.ratio", "log.cleaner.min.cleanable.ratio", "0.5"),
            ("max.compaction.lag.ms", "log.cleaner.max.compaction.lag.ms", "9223372036854775807"),
            ("file.delete.delay.ms", "log.segment.delete.delay.ms", "60000"),
            ("segment.index.bytes", "log.index.size.max.bytes", "10485760"),
            ("message.downconversion.enable", "log.message.downconversion.enable", "true"),
            ("segment.jitter.ms", "log.roll.jitter.hours", "0"),
            ("flush.ms", "log.flush.scheduler.interval.ms", "9223372036854775807"),
            ("cleanup.policy", "log.cleanup.policy", "delete")):
        assert synonyms(got[name]) == [(broker_key, value, D)], name
        assert (got[name].value, got[name].source) == (value, D), name
    for topic_only in ("remote.storage.enable", "leader.replication.throttled.replicas"):
        assert synonyms(got[topic_only]) == [] and got[topic_only].source == D, topic_only
    mine = describe(admin, "broker", str(min(target.brokers)))
    assert mine["log.preallocate"].value == "false" and not mine["log.preallocate"].is_read_only


def test_delete_records_moves_the_log_start(target):
    admin = admin_client(target.bootstrap)
    topic = target.create_topic(unique_topic("dr"), partitions=2)
    p = producer(target.bootstrap)
    for i in range(10):
        p.produce(topic, f"v{i}".encode(), partition=0)
    flush_all(p)
    tp = TopicPartition(topic, 0, 4)
    assert admin.delete_records([tp], request_timeout=15)[tp].result(15).low_watermark == 4
    c = consumer(target.bootstrap)
    assert c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10) == (4, 10)
    c.assign([TopicPartition(topic, 0, -2)])  # from the beginning: the new log start
    assert [m.offset() for m in consume_n(c, 6)] == list(range(4, 10))
    c.close()
    past = TopicPartition(topic, 0, 11)
    err = alter_error(lambda: admin.delete_records([past], request_timeout=15)[past].result(15))
    assert err.code() == KafkaError.OFFSET_OUT_OF_RANGE
    # -1 (OFFSET_END) deletes up to the high watermark.
    everything = TopicPartition(topic, 0, -1)
    assert admin.delete_records([everything], request_timeout=15)[everything].result(
        15).low_watermark == 10


def test_kafka_python_delete_records_and_describe_log_dirs(target):
    topic = target.create_topic(unique_topic("ld"), partitions=2)
    p = producer(target.bootstrap)
    for i in range(20):
        p.produce(topic, b"y" * 100, partition=1)
    flush_all(p)
    k = KafkaAdminClient(bootstrap_servers=target.bootstrap)
    try:
        out = k.delete_records({KpPartition(topic, 1): 5})
        assert out[KpPartition(topic, 1)]["low_watermark"] == 5
        # every broker describes its log dir with the replicas it holds
        replicas = {p: set(pm.replicas) for p, pm in target.partitions(topic).items()}
        dirs = k.describe_log_dirs()
        assert sorted(n["broker"] for n in dirs) == sorted(target.brokers)
        for node in dirs:
            me = node["broker"]
            (d,) = node["log_dirs"]
            assert d["error_code"] == 0
            assert d["log_dir"] == str(target.brokers[me].data_dir.resolve())
            assert 0 < d["usable_bytes"] <= d["total_bytes"]
            parts = {p["partition_index"]: p for t in d["topics"] if t["name"] == topic
                     for p in t["partitions"]}
            assert sorted(parts) == sorted(p for p, r in replicas.items() if me in r), me
            assert parts.get(0, {"partition_size": 0})["partition_size"] == 0
            if 1 in parts:  # acks=all: every replica holds the records
                assert parts[1]["partition_size"] > 20 * 100
                assert parts[1]["offset_lag"] == 0 and parts[1]["is_future_key"] is False
        # Asking for one partition answers only that one.
        only = {n["broker"]: [(t["name"], [p["partition_index"] for p in t["partitions"]])
                              for t in n["log_dirs"][0]["topics"]]
                for n in k.describe_log_dirs({topic: [1]})}
        assert only == {me: [(topic, [1])] if me in replicas[1] else []
                        for me in target.brokers}
    finally:
        k.close()


def test_dynamic_broker_configs_apply_and_survive_restart(target_factory):
    """Per-broker dynamic configs (set on every broker of the target alike) apply at once to
    the broker and to the topics without an override, and survive a restart of every broker."""
    t = target_factory({"log.retention.hours": "100"})
    admin = t.admin()
    topic = t.create_topic(unique_topic("dyn"))
    kept = t.create_topic(unique_topic("dynkept"), config={"retention.ms": "5000"})
    nodes = [str(i) for i in t.brokers]
    for me in nodes:
        got = describe(admin, "broker", me)
        assert got["log.retention.hours"].source == ConfigSource.STATIC_BROKER_CONFIG.value
        assert got["message.max.bytes"].source == ConfigSource.DEFAULT_CONFIG.value
        assert got["log.dirs"].is_read_only and not got["message.max.bytes"].is_read_only

    for me in nodes:
        incremental(admin, "broker", me, ("message.max.bytes", "600", SET),
                    ("log.retention.ms", "7000", SET), ("log.cleaner.threads", "2", SET))
    for me in nodes:
        got = describe(admin, "broker", me)
        assert got["message.max.bytes"].value == "600"
        assert got["message.max.bytes"].source == ConfigSource.DYNAMIC_BROKER_CONFIG.value
        assert got["log.cleaner.threads"].value == "2"
    retention = describe(admin, "topic", topic)["retention.ms"]
    assert retention.value == "7000"
    assert retention.source == ConfigSource.DYNAMIC_BROKER_CONFIG.value
    assert [s[2] for s in synonyms(retention)] == [ConfigSource.DYNAMIC_BROKER_CONFIG.value,
                                                   ConfigSource.DEFAULT_CONFIG.value]
    assert produce_one(t.bootstrap, topic, 2000) == KafkaError.MSG_SIZE_TOO_LARGE
    incremental(admin, "topic", kept, ("max.message.bytes", "5000", SET))

    t.restart_all()
    admin = t.admin()
    for me in nodes:
        got = describe(admin, "broker", me)
        assert got["message.max.bytes"].value == "600"
        assert got["message.max.bytes"].source == ConfigSource.DYNAMIC_BROKER_CONFIG.value
    assert describe(admin, "topic", kept)["max.message.bytes"].value == "5000"
    assert describe(admin, "topic", kept)["retention.ms"].value == "5000"
    assert produce_one(t.bootstrap, topic, 2000) == KafkaError.MSG_SIZE_TOO_LARGE
    assert produce_one(t.bootstrap, kept, 2000) is None

    for me in nodes:
        incremental(admin, "broker", me, ("message.max.bytes", None, DELETE))
    for me in nodes:
        assert describe(admin, "broker", me)["message.max.bytes"].source == \
            ConfigSource.DEFAULT_CONFIG.value
    assert produce_one(t.bootstrap, topic, 2000) is None


def test_kerberos_login_configs_are_dynamic_broker_configs(broker):
    """Kafka's SASL/Kerberos login settings are dynamic broker configs (its listener configs):
    an AlterConfigs that sets one on a broker succeeds (librdkafka's test 0081 sets
    sasl.kerberos.min.time.before.relogin) and DescribeConfigs shows it; a malformed one is
    refused."""
    admin = admin_client(broker.bootstrap)
    me = str(broker.node_id)
    got = describe(admin, "broker", me)["sasl.kerberos.min.time.before.relogin"]
    assert (got.value, got.source) == ("60000", ConfigSource.DEFAULT_CONFIG.value)
    res = ConfigResource("broker", me, set_config={"sasl.kerberos.min.time.before.relogin":
                                                   "58000"})
    admin.alter_configs([res], request_timeout=15)[res].result(15)
    try:
        got = describe(admin, "broker", me)
        assert got["sasl.kerberos.min.time.before.relogin"].value == "58000"
        assert got["sasl.kerberos.min.time.before.relogin"].source == \
            ConfigSource.DYNAMIC_BROKER_CONFIG.value
        assert not got["sasl.kerberos.min.time.before.relogin"].is_read_only
        incremental(admin, "broker", me, ("sasl.kerberos.ticket.renew.window.factor", "0.9", SET))
        for name, bad in (("sasl.kerberos.min.time.before.relogin", "soon"),
                          ("sasl.kerberos.ticket.renew.jitter", "a little")):
            err = alter_error(lambda: incremental(admin, "broker", me, (name, bad, SET)))
            assert err.code() == KafkaError.INVALID_CONFIG and name in err.str()
    finally:
        incremental(admin, "broker", me, ("sasl.kerberos.min.time.before.relogin", None, DELETE),
                    ("sasl.kerberos.ticket.renew.window.factor", None, DELETE))


def test_log_cleaner_threads_change_at_run_time(target_factory):
    """log.cleaner.threads and list broker configs changed at run time (on every broker of the
    target alike); compacted topics are then cleaned on every replica."""
    t = target_factory({"log.cleaner.backoff.ms": "200"})
    admin = t.admin()
    nodes = [str(i) for i in t.brokers]
    for me in nodes:
        incremental(admin, "broker", me, ("log.cleaner.threads", "2", SET))
        got = describe(admin, "broker", me)["log.cleaner.threads"]
        assert (got.value, got.source) == ("2", ConfigSource.DYNAMIC_BROKER_CONFIG.value)
        # Kafka's bounds: at most double, at least half the threads running now.
        err = alter_error(lambda: incremental(admin, "broker", me,
                                              ("log.cleaner.threads", "5", SET)))
        assert err.code() == KafkaError.INVALID_CONFIG
        assert "more than double the current value 2" in err.str()
        incremental(admin, "broker", me, ("log.cleaner.threads", "4", SET))
        # List broker configs take APPEND and SUBTRACT; topics without an override follow.
        incremental(admin, "broker", me, ("log.cleanup.policy", "compact", APPEND))
        assert describe(admin, "broker", me)["log.cleanup.policy"].value == "delete,compact"
    plain = t.create_topic(unique_topic("plain"))
    got = describe(admin, "topic", plain)["cleanup.policy"]
    assert (got.value, got.source) == ("delete,compact",
                                       ConfigSource.DYNAMIC_BROKER_CONFIG.value)
    for me in nodes:
        incremental(admin, "broker", me, ("log.cleanup.policy", "delete", SUBTRACT),
                    ("log.preallocate", "true", SET))
    got = describe(admin, "topic", plain)
    assert got["cleanup.policy"].value == "compact"
    assert (got["preallocate"].value, got["preallocate"].source) == (
        "true", ConfigSource.DYNAMIC_BROKER_CONFIG.value)

    # Two compacted topics, each one key rewritten in many small segments: cleaned by the
    # threads now running.
    topics = [t.create_topic(unique_topic("cleaned"), 1, {
        "cleanup.policy": "compact", "segment.bytes": "2048",
        "min.cleanable.dirty.ratio": "0.01"}) for _ in range(2)]
    p = producer(t.bootstrap, acks="all")
    for topic in topics:
        for _ in range(8):
            for _ in range(10):
                p.produce(topic, b"v" * 200, key=b"same", partition=0)
            flush_all(p)
    written = 8 * 10 * 200

    def sizes():
        """{(broker, topic): size of partition 0} of every replica."""
        k = KafkaAdminClient(bootstrap_servers=t.bootstrap)
        try:
            return {(n["broker"], d["name"]): d["partitions"][0]["partition_size"]
                    for n in k.describe_log_dirs({topic: [0] for topic in topics})
                    for d in n["log_dirs"][0]["topics"]}
        finally:
            k.close()

    replicas = sum(len(t.partitions(topic)[0].replicas) for topic in topics)

    def compacted():
        got = sizes()
        assert len(got) == replicas and max(got.values()) < written / 2, got
    _eventually(compacted, 30)


def _eventually(check, timeout=20.0):
    deadline = time.monotonic() + timeout
    while True:
        try:
            return check()
        except AssertionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.3)


@pytest.mark.slow
def test_cluster_config_changes_reach_every_broker(cluster):
    topic = unique_topic("czk")
    admin = cluster.admin()
    admin.create_topics([NewTopic(topic, 1, 3)])[topic].result(30)
    cluster.wait_for_topic(topic, 1)
    incremental(cluster.admin(1), "topic", topic, ("max.message.bytes", "700", SET))

    def seen_everywhere():
        for i in cluster.brokers:
            got = describe(cluster.admin(i), "topic", topic)["max.message.bytes"]
            assert (got.value, got.source) == ("700", ConfigSource.DYNAMIC_TOPIC_CONFIG.value), i
    _eventually(seen_everywhere)
    # Whichever broker leads the partition enforces the new limit.
    assert produce_one(cluster.bootstrap, topic, 2000) == KafkaError.MSG_SIZE_TOO_LARGE

    # A per-broker dynamic config on broker 2 shows there only.
    incremental(cluster.admin(2), "broker", "2", ("log.retention.ms", "99000", SET))
    got = describe(cluster.admin(2), "broker", "2")["log.retention.ms"]
    assert (got.value, got.source) == ("99000", ConfigSource.DYNAMIC_BROKER_CONFIG.value)
    assert describe(cluster.admin(3), "broker", "3")["log.retention.ms"].source != \
        ConfigSource.DYNAMIC_BROKER_CONFIG.value
    incremental(cluster.admin(2), "broker", "2", ("log.retention.ms", None, DELETE))

    # Small segments, so deleting records drops whole segment files, on followers too.
    incremental(cluster.admin(1), "topic", topic, ("segment.bytes", "300", SET))
    time.sleep(1)  # the change notification reaches every broker
    p = producer(cluster.bootstrap, acks="all")
    for i in range(12):
        p.produce(topic, b"z" * 50, partition=0)
        flush_all(p)  # one batch each
    def sizes():
        k = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
        try:
            return sorted(n["log_dirs"][0]["topics"][0]["partitions"][0]["partition_size"]
                          for n in k.describe_log_dirs({topic: [0]}))
        finally:
            k.close()

    assert min(sizes()) > 12 * 100
    tp = TopicPartition(topic, 0, 9)
    assert admin.delete_records([tp], request_timeout=15)[tp].result(15).low_watermark == 9

    def followers_follow():
        got = sizes()
        assert len(got) == 3 and max(got) < 12 * 100, got  # segments below offset 9 are gone
    _eventually(followers_follow)


def test_every_broker_describes_a_new_topic_s_configs_at_once(target, topic_name):
    """DescribeConfigs answers from the store, as Kafka reads ZooKeeper: a topic created a
    moment ago through one broker has its configs on every broker as soon as that broker
    knows the topic, not the defaults of a cache that has not caught up (Kafka Connect checks
    its internal topics are compacted right after creating them)."""
    admins = {node: target.admin(node) for node in target.brokers}
    creator = target.admin()
    for i in range(5):
        name = f"{topic_name}-{i}"
        rf = target.replication_factor()
        creator.create_topics([NewTopic(name, 1, rf, config={
            "cleanup.policy": "compact"})])[name].result(15)
        for node, admin in admins.items():
            deadline = time.monotonic() + 15
            while True:  # until this broker knows the topic: then its configs are the topic's
                try:
                    policy = describe(admin, ConfigResource.Type.TOPIC, name)
                    break
                except KafkaException as e:
                    assert e.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART, e
                    assert time.monotonic() < deadline, f"broker {node} never knew {name}"
            assert policy["cleanup.policy"].value == "compact", (name, node)
