import pytest

from josefk.mirror.policy import (DefaultReplicationPolicy, IdentityReplicationPolicy,
                                  replication_policy)


def test_default_policy_names_remote_topics_and_reads_them_back():
    policy = DefaultReplicationPolicy()
    assert policy.format_remote_topic("us-west", "orders") == "us-west.orders"
    assert policy.topic_source("us-west.orders") == "us-west"
    assert policy.upstream_topic("us-west.orders") == "orders"
    assert policy.topic_source("orders") is None
    assert policy.upstream_topic("orders") is None
    assert policy.topic_source("us-west.") is None  # trailing empty parts, as Java's split
    assert policy.upstream_topic("b.a.orders") == "a.orders"
    assert policy.original_topic("b.a.orders") == "orders"


def test_default_policy_internal_topics():
    policy = DefaultReplicationPolicy()
    assert policy.offset_syncs_topic("target") == "mm2-offset-syncs.target.internal"
    assert policy.checkpoints_topic("primary") == "primary.checkpoints.internal"
    assert policy.heartbeats_topic() == "heartbeats"
    assert policy.is_checkpoints_topic("primary.checkpoints.internal")
    assert policy.is_heartbeats_topic("a.b.heartbeats")
    for topic in ("mm2-offset-syncs.target.internal", "__consumer_offsets", ".hidden",
                  "connect-offsets-internal", "connect.status.internal"):
        assert policy.is_internal_topic(topic), topic
    assert not policy.is_internal_topic("orders")


def test_custom_separator_and_internal_topics():
    policy = DefaultReplicationPolicy({"replication.policy.separator": "_"})
    assert policy.format_remote_topic("a", "orders") == "a_orders"
    assert policy.topic_source("a_orders") == "a"
    assert policy.offset_syncs_topic("b") == "mm2-offset-syncs_b_internal"
    assert policy.checkpoints_topic("a") == "a_checkpoints_internal"
    legacy = DefaultReplicationPolicy({"replication.policy.separator": "_",
                                       "replication.policy.internal.topic.separator.enabled":
                                           "false"})
    assert legacy.offset_syncs_topic("b") == "mm2-offset-syncs.b.internal"
    assert legacy.checkpoints_topic("a") == "a.checkpoints.internal"


def test_identity_policy_keeps_names_but_heartbeats():
    policy = IdentityReplicationPolicy({"source.cluster.alias": "primary"})
    assert policy.format_remote_topic("primary", "orders") == "orders"
    assert policy.topic_source("orders") == "primary"
    assert policy.upstream_topic("orders") == "orders"
    assert policy.format_remote_topic("primary", "heartbeats") == "primary.heartbeats"
    assert policy.topic_source("primary.heartbeats") == "primary"
    assert policy.upstream_topic("primary.heartbeats") == "heartbeats"


def test_policies_by_java_class_name():
    assert isinstance(replication_policy(
        "org.apache.kafka.connect.mirror.IdentityReplicationPolicy", {}),
        IdentityReplicationPolicy)
    with pytest.raises(ValueError, match="replication.policy.class: unknown policy 'Nope'"):
        replication_policy("Nope", {})
