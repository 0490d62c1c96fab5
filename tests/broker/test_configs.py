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
