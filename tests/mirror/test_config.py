import pytest

from josefk.connect.api.config import ConfigException
from josefk.connect.api.connector import ExactlyOnceSupport
from josefk.connect.api.errors import ConnectException
from josefk.connect.runtime.abstract_herder import SourcePartition
from josefk.mirror.config import Filter, MirrorConfig, split, validate_offsets
from josefk.mirror.policy import IdentityReplicationPolicy
from josefk.mirror.source import MirrorSourceConnector, should_replicate, source_config

FLOW = {"source.cluster.alias": "a", "target.cluster.alias": "b",
        "source.cluster.bootstrap.servers": "s:9092", "target.cluster.bootstrap.servers": "t:9092"}


def test_clients_take_the_cluster_settings_then_the_role_overrides():
    config = MirrorConfig(source_config(), {
        **FLOW, "source.cluster.client.id": "mm2", "source.consumer.client.id": "mm2-consumer",
        "source.cluster.fetch.max.wait.ms": "100", "target.producer.linger.ms": "5",
        "source.cluster.producer.linger.ms": "7"})
    plain = {"security.protocol": "PLAINTEXT"}
    assert config.client("source", "consumer") == {
        "bootstrap.servers": "s:9092", "client.id": "mm2-consumer", "fetch.wait.max.ms": "100",
        **plain}
    assert config.client("source", "admin") == {
        "bootstrap.servers": "s:9092", "client.id": "mm2", "fetch.wait.max.ms": "100", **plain}
    assert config.client("target", "producer") == {"bootstrap.servers": "t:9092",
                                                   "linger.ms": "5", **plain}


def test_settings_errors_are_one_line_config_errors():
    with pytest.raises(ConfigException, match="source.cluster.alias"):
        MirrorConfig(source_config(), {"target.cluster.alias": "b"})
    config = MirrorConfig(source_config(), {"source.cluster.alias": "a"})
    with pytest.raises(ConfigException, match='"target.cluster.bootstrap.servers" which has no'):
        config.client("target", "admin")
    with pytest.raises(ConfigException, match="offset-syncs.topic.location"):
        MirrorConfig(source_config(), {**FLOW, "offset-syncs.topic.location": "elsewhere"})
    with pytest.raises(ConfigException, match="replication.policy.class: unknown policy"):
        MirrorConfig(source_config(), {**FLOW, "replication.policy.class": "x.Y"})


def test_the_policy_is_configured_from_the_flow():
    config = MirrorConfig(source_config(), {
        **FLOW, "replication.policy.class":
            "org.apache.kafka.connect.mirror.IdentityReplicationPolicy"})
    assert isinstance(config.policy, IdentityReplicationPolicy)
    assert config.policy.topic_source("orders") == "a"
    sep = MirrorConfig(source_config(), {**FLOW, "replication.policy.separator": "_"})
    assert sep.policy.format_remote_topic("a", "t") == "a_t"


def test_topics_the_source_connector_replicates():
    config = MirrorConfig(source_config(), {**FLOW, "topics": "orders.*, payments",
                                            "topics.exclude": "orders\\.test"})
    accepted = Filter(config["topics"], config["topics.exclude"], "topics")

    def replicated(topic):
        return should_replicate(config.policy, accepted, "b", topic)
    assert replicated("orders") and replicated("orders.eu") and replicated("payments")
    assert not replicated("orders.test")          # excluded
    assert not replicated("payments2")            # patterns match whole names
    everything = Filter([".*"], MirrorConfig(source_config(), FLOW)["topics.exclude"],
                        "topics")

    def default(topic):
        return should_replicate(config.policy, everything, "b", topic)
    assert default("c.orders")                    # replicated from a third cluster
    assert not default("b.orders")                # from the target: a cycle
    assert not default("c.b.orders")
    for internal in ("__consumer_offsets", "mm2-offset-syncs.b.internal", "a.checkpoints.internal",
                     "connect-status-internal", "x.replica", ".hidden"):
        assert not default(internal), internal


def test_bad_regexes_are_config_errors():
    with pytest.raises(ConfigException, match="topics.exclude.*not a regex"):
        Filter(["orders"], ["orders("], "topics")


def test_split_deals_round_robin():
    assert split(["t-0", "t-1", "u-0"], 2) == ["t-0,u-0", "t-1"]
    assert split(["t-0"], 4) == ["t-0"]
    assert split([], 4) == []


def test_offsets_an_operator_may_set():
    partition = {"cluster": "a", "topic": "t", "partition": 0}
    keys = {"cluster": str, "topic": str, "partition": int}
    validate_offsets({SourcePartition(partition): None}, keys, only_zero=False)  # a reset
    validate_offsets({SourcePartition(partition): {"offset": 7}}, keys, only_zero=False)
    with pytest.raises(ConnectException, match="must be .\"offset\": a non-negative integer"):
        validate_offsets({SourcePartition(partition): {"offset": -1}}, keys, only_zero=False)
    with pytest.raises(ConnectException, match="must have a int 'partition'"):
        validate_offsets({SourcePartition({**partition, "partition": "0"}): {"offset": 1}}, keys,
                         only_zero=False)
    with pytest.raises(ConnectException, match="must be .\"offset\": 0"):
        validate_offsets({SourcePartition(partition): {"offset": 3}}, keys, only_zero=True)


def test_exactly_once_needs_a_read_committed_source():
    connector = MirrorSourceConnector()
    assert connector.exactly_once_support(FLOW) is ExactlyOnceSupport.UNSUPPORTED
    assert connector.exactly_once_support(
        {**FLOW, "source.consumer.isolation.level": "read_committed"}) is \
        ExactlyOnceSupport.SUPPORTED
