import pytest

from josefk.broker.config import BrokerConfig, ConfigError, parse_properties


def test_parse_properties_forms():
    text = "# comment\n! also\nlog.dirs=/a,/b\nnum.partitions : 3\nlong=one\\\n  two\nempty\n"
    assert parse_properties(text) == {"log.dirs": "/a,/b", "num.partitions": "3",
                                      "long": "onetwo", "empty": ""}


def test_defaults_and_overrides():
    c = BrokerConfig({"num.partitions": "4", "log.retention.hours": "1", "broker.id": "7"})
    assert c.int("num.partitions") == 4
    assert c.node_id == 7
    assert c.retention_ms() == 3_600_000
    assert c.topic_defaults()["retention.ms"] == "3600000"
    assert c.bool("auto.create.topics.enable") is True


def test_listeners():
    c = BrokerConfig({"listeners": "PLAINTEXT://127.0.0.1:19092",
                      "advertised.listeners": "PLAINTEXT://localhost:29092"})
    assert c.listener() == ("127.0.0.1", 19092)


def test_bad_values_are_rejected():
    with pytest.raises(ConfigError):
        BrokerConfig({"num.partitions": "many"})
    with pytest.raises(ConfigError):
        BrokerConfig({"listeners": "PLAINTEXT://127.0.0.1"})
