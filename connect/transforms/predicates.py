"""Kafka's predicates (``org.apache.kafka.connect.transforms.predicates``), which gate a
transform configured with ``predicate`` (and ``negate``): TopicNameMatches, HasHeaderKey,
RecordIsTombstone."""
from __future__ import annotations

from josefk.connect.api.config import ConfigDef, Importance, LambdaValidator, NonEmptyString, Type
from josefk.connect.transforms.util import RegexValidator, Transform, java_regex

PATTERN, NAME = "pattern", "name"


def _non_empty_regex(name, value):
    NonEmptyString()(name, value)
    RegexValidator()(name, value)


class TopicNameMatches(Transform):
    """True for records whose topic name matches the Java regular expression ``pattern`` as a
    whole."""
    CONFIG_DEF = ConfigDef().define(
        PATTERN, Type.STRING, validator=LambdaValidator(
            _non_empty_regex, "non-empty string, valid regex"),
        importance=Importance.MEDIUM,
        documentation="A Java regular expression for matching against the name of a topic.")

    def configure(self, configs: dict) -> None:
        self.pattern = java_regex(self.CONFIG_DEF.parse(configs)[PATTERN])

    def test(self, record) -> bool:
        return record.topic is not None and self.pattern.fullmatch(record.topic) is not None


class HasHeaderKey(Transform):
    """True for records with at least one header named ``name``."""
    CONFIG_DEF = ConfigDef().define(NAME, Type.STRING, validator=NonEmptyString(),
                                    importance=Importance.MEDIUM,
                                    documentation="The header name.")

    def configure(self, configs: dict) -> None:
        self.name = self.CONFIG_DEF.parse(configs)[NAME]

    def test(self, record) -> bool:
        return record.headers.last_with_name(self.name) is not None


class RecordIsTombstone(Transform):
    """True for tombstones: records whose value is null."""

    def configure(self, configs: dict) -> None:
        self.CONFIG_DEF.parse(configs)

    def test(self, record) -> bool:
        return record.value is None
