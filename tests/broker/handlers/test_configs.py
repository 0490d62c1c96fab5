"""DescribeConfigs on the handler harness: a topic's overrides and defaults with their sources and
synonyms, the keys asked for only, broker configs from the static file, and Kafka's errors for a
topic that does not exist and for another broker's id."""
from josefk.broker.configs import ConfigSource
from josefk.broker.handlers.configs import BROKER, TOPIC
from josefk.wire import errors
from josefk.wire.apis import DESCRIBE_CONFIGS
from testkit.handlers import Services, call

R = DESCRIBE_CONFIGS.Request


def describe(services, resource_type, name, keys=None, synonyms=False, version=None):
    req = R(resources=[R.DescribeConfigsResource(resource_type=resource_type, resource_name=name,
                                                 configuration_keys=keys)],
            include_synonyms=synonyms)
    return call(services, DESCRIBE_CONFIGS, req, version=version).results[0]


def test_a_topics_override_and_defaults_with_their_sources(services):
    services.create_topic("t", configs={"retention.ms": "1000"})
    result = describe(services, TOPIC, "t", keys=["retention.ms", "cleanup.policy"],
                      synonyms=True)
    assert (result.error_code, result.error_message) == (0, None)
    found = {c.name: c for c in result.configs}
    assert set(found) == {"retention.ms", "cleanup.policy"}
    retention, policy = found["retention.ms"], found["cleanup.policy"]
    assert (retention.value, retention.config_source, retention.read_only) == (
        "1000", ConfigSource.TOPIC_CONFIG, False)
    assert (retention.synonyms[0].name, retention.synonyms[0].source) == (
        "retention.ms", ConfigSource.TOPIC_CONFIG)
    assert (policy.value, policy.config_source) == ("delete", ConfigSource.DEFAULT_CONFIG)


def test_version_0_reports_is_default_instead_of_the_source(services):
    services.create_topic("t", configs={"retention.ms": "1000"})
    found = {c.name: c.is_default for c in describe(services, TOPIC, "t", version=0).configs}
    assert found["retention.ms"] is False and found["cleanup.policy"] is True


def test_static_broker_settings_with_their_source_read_only_unless_dynamic(tmp_path):
    services = Services(tmp_path, {"log.retention.hours": "5", "num.partitions": "3"})
    try:
        result = describe(services, BROKER, "1",
                          keys=["log.retention.hours", "num.partitions", "log.segment.bytes"])
    finally:
        services.close()
    found = {c.name: (c.value, c.config_source, c.read_only) for c in result.configs}
    assert found == {"log.retention.hours": ("5", ConfigSource.STATIC_BROKER_CONFIG, False),
                     "num.partitions": ("3", ConfigSource.STATIC_BROKER_CONFIG, True),
                     "log.segment.bytes": ("1073741824", ConfigSource.DEFAULT_CONFIG, False)}


def test_an_unknown_topic_and_another_brokers_id_are_kafkas_errors(services):
    missing = describe(services, TOPIC, "no-such-topic")
    assert (missing.error_code, missing.error_message, missing.configs) == (
        errors.UNKNOWN_TOPIC_OR_PARTITION, "Topic no-such-topic does not exist", [])
    other = describe(services, BROKER, "7")
    assert (other.error_code, other.error_message) == (
        errors.INVALID_REQUEST, "Unexpected broker id, expected 1")
