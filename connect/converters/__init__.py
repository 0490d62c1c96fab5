"""Converters with Kafka Connect's class names as aliases: a record's key, value or headers
between Connect data and bytes. ``CONVERTERS`` and ``HEADER_CONVERTERS`` map each Java class
name, and its simple name, to the Python class (the worker's plug-in discovery lists them;
pyproject.toml declares the same under the ``josefk.connect.converters`` and
``josefk.connect.header_converters`` entry-point groups)."""
from josefk.connect.converters.header import SimpleHeaderConverter
from josefk.connect.converters.json import JsonConverter
from josefk.connect.converters.avro import AvroConverter
from josefk.connect.converters.json_schema import JsonSchemaConverter
from josefk.connect.converters.protobuf import ProtobufConverter
from josefk.connect.converters.simple import (BooleanConverter, ByteArrayConverter,
                                              DoubleConverter, FloatConverter, IntegerConverter,
                                              LongConverter, ShortConverter, StringConverter)

_KAFKA = "org.apache.kafka.connect."
_PRIMITIVES = {
    _KAFKA + "storage.StringConverter": StringConverter,
    _KAFKA + "converters.ByteArrayConverter": ByteArrayConverter,
    _KAFKA + "converters.ShortConverter": ShortConverter,
    _KAFKA + "converters.IntegerConverter": IntegerConverter,
    _KAFKA + "converters.LongConverter": LongConverter,
    _KAFKA + "converters.FloatConverter": FloatConverter,
    _KAFKA + "converters.DoubleConverter": DoubleConverter,
    _KAFKA + "converters.BooleanConverter": BooleanConverter,
    _KAFKA + "json.JsonConverter": JsonConverter,
}
_BY_JAVA_NAME = {
    **_PRIMITIVES,
    "io.confluent.connect.avro.AvroConverter": AvroConverter,
    "io.confluent.connect.json.JsonSchemaConverter": JsonSchemaConverter,
    "io.confluent.connect.protobuf.ProtobufConverter": ProtobufConverter,
}
_HEADER_BY_JAVA_NAME = {
    **_PRIMITIVES,
    _KAFKA + "storage.SimpleHeaderConverter": SimpleHeaderConverter,
}


def _with_simple_names(by_java_name: dict) -> dict:
    return {**by_java_name, **{name.rsplit(".", 1)[1]: cls for name, cls in by_java_name.items()}}


CONVERTERS = _with_simple_names(_BY_JAVA_NAME)
HEADER_CONVERTERS = _with_simple_names(_HEADER_BY_JAVA_NAME)

__all__ = ["CONVERTERS", "HEADER_CONVERTERS", "AvroConverter", "BooleanConverter",
           "ByteArrayConverter", "DoubleConverter", "FloatConverter", "IntegerConverter",
           "JsonConverter", "JsonSchemaConverter", "LongConverter", "ProtobufConverter",
           "ShortConverter", "SimpleHeaderConverter", "StringConverter"]
