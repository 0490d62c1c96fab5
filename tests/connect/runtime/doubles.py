"""Test doubles of the plug-in protocols the worker calls (the real converters are the conv
branch's): UTF-8 text converters, one that refuses a poison value, one that fails retriably
a few times, and a sink task whose put fails retriably a few times."""
from __future__ import annotations

from josefk.connect.api.config import ConfigDef
from josefk.connect.api.errors import DataException, RetriableException
from josefk.connect.api.schema import Schema, SchemaAndValue
from josefk.connect.connectors.file_stream import FileStreamSinkConnector, FileStreamSinkTask


class Utf8Converter:
    def configure(self, configs, is_key):
        self.configs, self.is_key = configs, is_key

    def from_connect_data(self, topic, schema, value, headers=None):
        return None if value is None else str(value).encode()

    def to_connect_data(self, topic, value, headers=None):
        if value is None:
            return SchemaAndValue(Schema.OPTIONAL_STRING_SCHEMA, None)
        return SchemaAndValue(Schema.OPTIONAL_STRING_SCHEMA, value.decode())

    def config(self):
        return ConfigDef()


class Utf8HeaderConverter:
    def configure(self, configs):
        self.configs = configs

    def from_connect_header(self, topic, header_key, schema, value):
        return None if value is None else str(value).encode()

    def to_connect_header(self, topic, header_key, value):
        return SchemaAndValue(Schema.OPTIONAL_STRING_SCHEMA,
                              None if value is None else value.decode())

    def config(self):
        return ConfigDef()


class PoisonRefusingConverter(Utf8Converter):
    """Refuses the value ``poison`` (a DataException, as a converter meeting bad bytes)."""

    def to_connect_data(self, topic, value, headers=None):
        if value == b"poison":
            raise DataException("Converting byte[] to Kafka Connect data failed: poison")
        return super().to_connect_data(topic, value, headers)


class FlakyConverter(Utf8Converter):
    """Fails retriably the first ``failures`` calls of the whole test (class-wide)."""
    failures = 0

    def to_connect_data(self, topic, value, headers=None):
        if FlakyConverter.failures > 0:
            FlakyConverter.failures -= 1
            raise RetriableException("the schema store is unreachable for now")
        return super().to_connect_data(topic, value, headers)


class FlakySinkTask(FileStreamSinkTask):
    """FileStreamSink whose put fails retriably ``failures`` times (class-wide) first."""
    failures = 0
    attempts = 0

    def put(self, records):
        FlakySinkTask.attempts += 1
        if FlakySinkTask.failures > 0:
            FlakySinkTask.failures -= 1
            self.context.timeout(100)
            raise RetriableException("the file system is busy")
        super().put(records)


class FlakySinkConnector(FileStreamSinkConnector):
    def task_class(self):
        return FlakySinkTask


PLUGINS = {"converter": {"tests.Utf8Converter": Utf8Converter,
                         "tests.PoisonRefusingConverter": PoisonRefusingConverter,
                         "tests.FlakyConverter": FlakyConverter},
           "header_converter": {"tests.Utf8HeaderConverter": Utf8HeaderConverter},
           "connector": {"tests.FlakySinkConnector": FlakySinkConnector}}
