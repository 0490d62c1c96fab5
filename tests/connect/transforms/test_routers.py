import pytest

from josefk.connect.api import ConfigException, DataException
from josefk.connect.transforms.routers import RegexRouter, TimestampRouter

from tests.connect.transforms.records import configured, sink, source


def route(regex, replacement, topic):
    record = source({"a": 1}, topic=topic, partition=2)
    out = configured(RegexRouter, regex=regex, replacement=replacement).apply(record)
    assert (out.value, out.kafka_partition) == (record.value, 2)
    return out.topic


@pytest.mark.parametrize("regex,replacement,topic,expected", [
    ("(.*)", "prefix-$1", "orig", "prefix-orig"),
    ("(.*)-(\\d\\d)", "$2-$1", "orders-42", "42-orders"),
    ("(?<name>[a-z]+)_raw", "${name}_clean", "users_raw", "users_clean"),
    ("(.*)", "costs \\$1", "x", "costs $1"),
    ("foo", "bar", "foo", "bar"),
    ("foo", "bar", "foofoo", "foofoo"),  # the whole name must match
    ("foo", "bar", "a-foo-b", "a-foo-b"),
    ("(a)|(b)", "[$2]", "a", "[]"),  # a group that took no part is empty
])
def test_regex_router(regex, replacement, topic, expected):
    assert route(regex, replacement, topic) == expected


def test_regex_router_errors():
    with pytest.raises(ConfigException, match=r"^Invalid value \(unclosed for configuration "
                                              r"regex: Invalid regex: "):
        configured(RegexRouter, regex="(unclosed", replacement="x")
    with pytest.raises(ConfigException, match='^Missing required configuration "replacement"'):
        configured(RegexRouter, regex="x")
    with pytest.raises(ConfigException, match="Illegal group reference"):
        configured(RegexRouter, regex="x", replacement="a$")
    with pytest.raises(ConfigException, match=r"^Invalid value \$3 for configuration replacement: "
                                              r"No group 3$"):
        configured(RegexRouter, regex="(a)", replacement="$3")


def test_timestamp_router():
    record = sink({"a": 1}, topic="index", timestamp=1_700_000_000_000)
    assert configured(TimestampRouter).apply(record).topic == "index-20231114"
    custom = configured(TimestampRouter, topic_format="${timestamp}/${topic}/${topic}",
                        timestamp_format="yyyy-MM-dd'T'HH")
    out = custom.apply(record)
    assert out.topic == "2023-11-14T22/index/index"
    assert out.kafka_offset == record.kafka_offset and out.original_topic == "index"


def test_timestamp_router_errors():
    with pytest.raises(DataException, match="^Timestamp missing on record: SinkRecord"):
        configured(TimestampRouter).apply(sink({"a": 1}))
    with pytest.raises(ConfigException, match="^Invalid value yyyy G for configuration "
                                              "timestamp.format: pattern letter 'G'"):
        configured(TimestampRouter, timestamp_format="yyyy G")
