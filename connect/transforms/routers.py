"""The transforms that change a record's topic: RegexRouter (a Java regular expression matched
against the whole topic name, replaced with ``$1``-style group references) and TimestampRouter
(``${topic}`` and ``${timestamp}`` in ``topic.format``, the timestamp as a SimpleDateFormat
pattern)."""
from __future__ import annotations

from josefk.connect.api.config import ConfigDef, ConfigException, Importance, Type
from josefk.connect.api.errors import DataException
from josefk.connect.transforms.date_format import PatternError, SimpleDateFormat
from josefk.connect.transforms.util import (RegexValidator, Transform, java_regex,
                                            java_replacement)

REGEX, REPLACEMENT = "regex", "replacement"
TOPIC_FORMAT, TIMESTAMP_FORMAT = "topic.format", "timestamp.format"


class RegexRouter(Transform):
    CONFIG_DEF = (ConfigDef()
                  .define(REGEX, Type.STRING, validator=RegexValidator(),
                          importance=Importance.HIGH,
                          documentation="Regular expression to use for matching.")
                  .define(REPLACEMENT, Type.STRING, importance=Importance.HIGH,
                          documentation="Replacement string."))

    def configure(self, configs: dict) -> None:
        config = self.CONFIG_DEF.parse(configs)
        self.regex = java_regex(config[REGEX])
        self.replacement = java_replacement(config[REPLACEMENT], self.regex)

    def apply(self, record):
        match = self.regex.fullmatch(record.topic)
        if match is None:
            return record
        return record.new_record(topic=self.replacement(match))


class TimestampRouter(Transform):
    CONFIG_DEF = (ConfigDef()
                  .define(TOPIC_FORMAT, Type.STRING, "${topic}-${timestamp}",
                          importance=Importance.HIGH,
                          documentation="Format string which can contain <code>${topic}</code> "
                                        "and <code>${timestamp}</code> as placeholders for the "
                                        "topic and timestamp, respectively.")
                  .define(TIMESTAMP_FORMAT, Type.STRING, "yyyyMMdd", importance=Importance.HIGH,
                          documentation="Format string for the timestamp that is compatible "
                                        "with <code>java.text.SimpleDateFormat</code>."))

    def configure(self, configs: dict) -> None:
        config = self.CONFIG_DEF.parse(configs)
        self.topic_format = config[TOPIC_FORMAT]
        try:
            self.timestamp_format = SimpleDateFormat(config[TIMESTAMP_FORMAT])
        except PatternError as e:
            raise ConfigException(TIMESTAMP_FORMAT, config[TIMESTAMP_FORMAT], str(e)) from None

    def apply(self, record):
        if record.timestamp is None:
            raise DataException(f"Timestamp missing on record: {record!r}")
        topic = (self.topic_format.replace("${topic}", record.topic)
                 .replace("${timestamp}", self.timestamp_format.format(record.timestamp)))
        return record.new_record(topic=topic)
