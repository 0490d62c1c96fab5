"""broker/configs.py: topic config validation as Kafka does it."""
import pytest

from josefk.broker.control.metadata import MetadataError
from josefk.wire import errors


def test_throttled_replicas_lists_are_validated_as_kafka_does():
    from josefk.broker.config import BrokerConfig
    from josefk.broker.configs import validate_topic_configs

    defaults = BrokerConfig({}).topic_defaults()
    for ok in ("*", "", "0:1,1:2", " 0:1 , 3:3"):
        validate_topic_configs({"leader.replication.throttled.replicas": ok}, defaults)
    for bad in ("all", "0:x", "0-1", "*,0:1"):
        with pytest.raises(MetadataError) as e:
            validate_topic_configs({"follower.replication.throttled.replicas": bad}, defaults)
        assert e.value.code == errors.INVALID_CONFIG
        assert "must be the literal '*' or a list of replicas" in e.value.message


@pytest.mark.parametrize("configs, system, message", [
    ({"remote.storage.enable": "true"}, False,
     "Tiered Storage functionality is disabled in the broker. Topic cannot be configured with "
     "remote log storage."),
    ({"remote.storage.enable": "true", "retention.bytes": "1000",
      "local.retention.bytes": "2000"}, True,
     "Invalid value 2000 for configuration local.retention.bytes: Value must not be more than "
     "retention.bytes property value: 1000"),
    ({"remote.storage.enable": "true", "retention.ms": "1000", "local.retention.ms": "-1"},
     True, "Invalid value -1 for configuration local.retention.ms: Value must not be -1 as "
           "retention.ms value is set as 1000."),
])
def test_remote_storage_topics_are_checked_as_kafka_does(configs, system, message):
    from josefk.broker.config import BrokerConfig
    from josefk.broker.configs import validate_topic_configs

    defaults = BrokerConfig({}).topic_defaults()
    with pytest.raises(MetadataError) as e:
        validate_topic_configs(configs, defaults, tiered_storage=system)
    assert (e.value.code, e.value.message) == (errors.INVALID_CONFIG, message)


def test_remote_storage_topics_that_kafka_accepts_and_past_kafka():
    from josefk.broker.config import BrokerConfig
    from josefk.broker.configs import validate_topic_configs

    defaults = BrokerConfig({}).topic_defaults()
    for configs in ({"remote.storage.enable": "true"},
                    {"remote.storage.enable": "true", "retention.ms": "-1",
                     "local.retention.ms": "-1"},
                    {"remote.storage.enable": "true", "retention.bytes": "1000",
                     "local.retention.bytes": "1000", "local.retention.ms": "60000"},
                    {"remote.storage.enable": "false", "cleanup.policy": "compact"},
                    # past Kafka: compacted topics tiered (tiered/compacted.py)
                    {"remote.storage.enable": "true", "cleanup.policy": "compact"},
                    {"remote.storage.enable": "true", "cleanup.policy": "compact,delete"}):
        validate_topic_configs(configs, defaults, tiered_storage=True)
    validate_topic_configs({"remote.storage.enable": "false"}, defaults, tiered_storage=False)
