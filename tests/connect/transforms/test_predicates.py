import pytest

from josefk.connect.api import ConfigException
from josefk.connect.transforms.predicates import HasHeaderKey, RecordIsTombstone, TopicNameMatches

from tests.connect.transforms.records import configured, source


def test_topic_name_matches_the_whole_name():
    predicate = configured(TopicNameMatches, pattern="my-prefix-.*")
    assert predicate.test(source(topic="my-prefix-orders"))
    assert not predicate.test(source(topic="x-my-prefix-orders"))
    assert configured(TopicNameMatches, pattern="(?<n>a)b").test(source(topic="ab"))


def test_topic_name_matches_errors():
    with pytest.raises(ConfigException, match="^Invalid value  for configuration pattern: String "
                                              "must be non-empty$"):
        configured(TopicNameMatches, pattern="")
    with pytest.raises(ConfigException, match=r"^Invalid value \[ for configuration pattern: "
                                              r"Invalid regex: "):
        configured(TopicNameMatches, pattern="[")
    with pytest.raises(ConfigException, match='^Missing required configuration "pattern"'):
        configured(TopicNameMatches)


def test_has_header_key():
    predicate = configured(HasHeaderKey, name="trace")
    assert predicate.test(source(headers=[("a", None, 1), ("trace", None, None)]))
    assert not predicate.test(source(headers=[("a", None, 1)]))
    with pytest.raises(ConfigException, match="^Invalid value  for configuration name: String "
                                              "must be non-empty$"):
        configured(HasHeaderKey, name="")


def test_record_is_tombstone():
    predicate = configured(RecordIsTombstone)
    assert predicate.test(source(None, key="k"))
    assert not predicate.test(source({"a": 1}))
