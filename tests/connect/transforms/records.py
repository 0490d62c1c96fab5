"""Records for the transforms' tests: a source record and a sink record with a given key and
value (and their schemas), and a transform configured in one call."""
from josefk.connect.api.records import Headers, SinkRecord, SourceRecord


def source(value=None, value_schema=None, key=None, key_schema=None, topic="test",
           partition=0, timestamp=None, headers=None):
    return SourceRecord({"p": 1}, {"o": 2}, topic, partition, key_schema, key, value_schema,
                        value, timestamp, Headers(headers or ()))


def sink(value=None, value_schema=None, key=None, key_schema=None, topic="test", partition=0,
         offset=42, timestamp=None, headers=None):
    return SinkRecord(topic, partition, key_schema, key, value_schema, value, offset, timestamp,
                      "CreateTime", Headers(headers or ()))


def configured(cls, **settings):
    transform = cls()
    transform.configure({k.replace("_", "."): v for k, v in settings.items()})
    return transform
