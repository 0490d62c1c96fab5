"""The converters of one primitive each, as Kafka ships them; every one is a header converter
too (a header's value converted as a record's key or value would be):
``StringConverter``, ``ByteArrayConverter``, ``Short/Integer/Long/Float/DoubleConverter``
(Kafka's serializers' big-endian layouts) and ``BooleanConverter`` (one byte, 1 or 0)."""
from __future__ import annotations

import codecs
import struct

from josefk.connect.api.config import ConfigDef, ConfigException, Importance, Width
from josefk.connect.api.config import Type as ConfigType
from josefk.connect.api.errors import DataException
from josefk.connect.api.schema import Schema, SchemaAndValue, Type
from josefk.connect.converters._java import converter_config_def, java_string, with_type


class _DataAsHeader:
    """A converter whose header form is its key/value form."""

    def configure(self, configs: dict, is_key: bool | None = None) -> None:
        self._configure(self.config().parse(with_type(configs, is_key)))

    def _configure(self, settings: dict) -> None:
        """Take the parsed settings (nothing to take by default)."""

    def config(self) -> ConfigDef:
        return converter_config_def()

    def from_connect_header(self, topic, header_key, schema, value):
        return self.from_connect_data(topic, schema, value)

    def to_connect_header(self, topic, header_key, value):
        return self.to_connect_data(topic, value)

    def close(self) -> None:
        """Nothing to release."""


ENCODING_CONFIG = "converter.encoding"
# what null converts to (tuples: one for every keyless record)
_NULL_STRING = SchemaAndValue(Schema.OPTIONAL_STRING_SCHEMA, None)
_NULL_BYTES = SchemaAndValue(Schema.OPTIONAL_BYTES_SCHEMA, None)
# SchemaAndValue built as the tuple it is, without NamedTuple's generated __new__ (half the
# cost of a sink record's conversion for the String and ByteArray converters)
_tuple = tuple.__new__


class StringConverter(_DataAsHeader):
    """``org.apache.kafka.connect.storage.StringConverter``: any value as its string form in
    ``converter.encoding``; bytes read back as an optional STRING."""

    encoding = "UTF-8"

    def config(self) -> ConfigDef:
        return converter_config_def().define(
            ENCODING_CONFIG, ConfigType.STRING, "UTF-8", None, Importance.HIGH,
            "The name of the Java character set to use for encoding strings as byte arrays.",
            width=Width.MEDIUM, display_name="Encoding")

    def _configure(self, settings: dict) -> None:
        try:
            self.encoding = codecs.lookup(settings[ENCODING_CONFIG]).name
        except LookupError:
            raise ConfigException(ENCODING_CONFIG, settings[ENCODING_CONFIG],
                                  "Unknown character set") from None

    # Java's String(bytes, charset) and getBytes(charset) replace what the charset cannot
    # hold (U+FFFD when decoding, '?' when encoding) rather than fail; so do these.
    def from_connect_data(self, topic, schema, value, headers=None):
        if value is None:
            return None
        if type(value) is str:  # most values: no java_string dispatch
            return value.encode(self.encoding, "replace")
        try:
            return java_string(value).encode(self.encoding, errors="replace")
        except RecursionError as e:  # a list holding itself
            raise DataException(f"Failed to serialize to a string: {e}") from e

    def to_connect_data(self, topic, value, headers=None):
        if value is None:
            return _NULL_STRING
        if type(value) is not bytes:  # a bytearray or memoryview
            value = bytes(value)
        return _tuple(SchemaAndValue, (Schema.OPTIONAL_STRING_SCHEMA,
                                       value.decode(self.encoding, "replace")))


class ByteArrayConverter(_DataAsHeader):
    """``org.apache.kafka.connect.converters.ByteArrayConverter``: bytes through unchanged."""

    def from_connect_data(self, topic, schema, value, headers=None):
        if schema is not None and schema.type is not Type.BYTES:
            raise DataException("Invalid schema type for ByteArrayConverter: " + schema.type.name)
        if value is not None and not isinstance(value, (bytes, bytearray, memoryview)):
            raise DataException("ByteArrayConverter is not compatible with objects of type "
                                + type(value).__name__)
        return None if value is None else bytes(value)

    def to_connect_data(self, topic, value, headers=None):
        return _NULL_BYTES if value is None else _tuple(SchemaAndValue,
                                                        (Schema.OPTIONAL_BYTES_SCHEMA, value))


class _NumberConverter(_DataAsHeader):
    """Kafka's ``NumberConverter``: one number in its serializer's big-endian layout."""
    schema: Schema
    type_name: str
    deserializer: str
    layout: struct.Struct

    def _check(self, value):
        if isinstance(value, bool) or not isinstance(value, int):
            raise DataException(f"Failed to serialize to {self.type_name} "
                                f"(was {type(value).__name__})")
        return value

    def from_connect_data(self, topic, schema, value, headers=None):
        if value is None:
            return None
        try:
            return self.layout.pack(self._check(value))
        except struct.error:
            raise DataException(f"Failed to serialize to {self.type_name}: {value} is out of "
                                f"range") from None

    def to_connect_data(self, topic, value, headers=None):
        if value is None:
            return SchemaAndValue(self.schema, None)
        if len(value) != self.layout.size:
            raise DataException(f"Failed to deserialize {self.type_name}: Size of data received "
                                f"by {self.deserializer} is not {self.layout.size}")
        return SchemaAndValue(self.schema, self.layout.unpack(value)[0])


class _FloatingConverter(_NumberConverter):
    def _check(self, value):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise DataException(f"Failed to serialize to {self.type_name} "
                                f"(was {type(value).__name__})")
        return value


def _number(name: str, base: type, schema: Schema, type_name: str, fmt: str) -> type:
    doc = f"``org.apache.kafka.connect.converters.{name}``: a {type_name} in Kafka's layout."
    return type(name, (base,), {"__doc__": doc, "schema": schema, "type_name": type_name,
                                "deserializer": name.replace("Converter", "Deserializer"),
                                "layout": struct.Struct(fmt), "__module__": __name__})


ShortConverter = _number("ShortConverter", _NumberConverter, Schema.OPTIONAL_INT16_SCHEMA,
                         "short", ">h")
IntegerConverter = _number("IntegerConverter", _NumberConverter, Schema.OPTIONAL_INT32_SCHEMA,
                           "integer", ">i")
LongConverter = _number("LongConverter", _NumberConverter, Schema.OPTIONAL_INT64_SCHEMA,
                        "long", ">q")
FloatConverter = _number("FloatConverter", _FloatingConverter, Schema.OPTIONAL_FLOAT32_SCHEMA,
                         "float", ">f")
DoubleConverter = _number("DoubleConverter", _FloatingConverter, Schema.OPTIONAL_FLOAT64_SCHEMA,
                          "double", ">d")


class BooleanConverter(_DataAsHeader):
    """``org.apache.kafka.connect.converters.BooleanConverter``: one byte, 1 for true and 0
    for false (Kafka's BooleanSerializer)."""

    def from_connect_data(self, topic, schema, value, headers=None):
        if schema is not None and schema.type is not Type.BOOLEAN:
            raise DataException("Invalid schema type for BooleanConverter: " + schema.type.name)
        if value is None:
            return None
        if not isinstance(value, bool):
            raise DataException("BooleanConverter is not compatible with objects of type "
                                + type(value).__name__)
        return b"\x01" if value else b"\x00"

    def to_connect_data(self, topic, value, headers=None):
        if value is None:
            return SchemaAndValue(Schema.OPTIONAL_BOOLEAN_SCHEMA, None)
        if len(value) != 1:
            raise DataException("Failed to deserialize boolean: Size of data received by "
                                "BooleanDeserializer is not 1")
        if value[0] not in (0, 1):
            signed = value[0] - 256 if value[0] > 127 else value[0]  # as Java prints a byte
            raise DataException("Failed to deserialize boolean: Unexpected byte received by "
                                f"BooleanDeserializer: {signed}")
        return SchemaAndValue(Schema.OPTIONAL_BOOLEAN_SCHEMA, value[0] == 1)


def as_is(converter, schema) -> bool:
    """Whether ``converter`` writes values of ``schema`` as they are (Kafka's
    ByteArrayConverter, bytes): a source's batch of rows skips calling it."""
    return type(converter) is ByteArrayConverter and (schema is None
                                                      or schema.type is Type.BYTES)


def inline_encoding(converter) -> str | None:
    """The encoding a source writes a str value in without calling ``converter``, for Kafka's
    StringConverter (not a subclass); None for any other."""
    return converter.encoding if type(converter) is StringConverter else None


def inline_reader(converter) -> tuple[Schema, str | None] | None:
    """How a sink reads a message's bytes without calling ``converter``, for Kafka's
    ByteArray and String converters (not subclasses, which may do more): (the schema, the
    encoding to decode with or None for the bytes as they are); None for any other."""
    if type(converter) is ByteArrayConverter:
        return Schema.OPTIONAL_BYTES_SCHEMA, None
    if type(converter) is StringConverter:
        return Schema.OPTIONAL_STRING_SCHEMA, converter.encoding
    return None
