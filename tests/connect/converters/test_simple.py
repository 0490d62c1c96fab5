"""The primitive converters: Kafka's serializers' byte layouts, their schemas, their errors."""
from __future__ import annotations

import pytest

from josefk.connect.api.config import ConfigException
from josefk.connect.api.errors import DataException
from josefk.connect.api.schema import Schema, SchemaAndValue, SchemaBuilder, Struct
from josefk.connect.converters.simple import (BooleanConverter, ByteArrayConverter,
                                              DoubleConverter, FloatConverter, IntegerConverter,
                                              LongConverter, ShortConverter, StringConverter)


def configured(cls, settings=None, is_key=False):
    c = cls()
    c.configure(settings or {}, is_key)
    return c


@pytest.mark.parametrize("cls, value, data, schema", [
    (ShortConverter, -2, b"\xff\xfe", Schema.OPTIONAL_INT16_SCHEMA),
    (IntegerConverter, 258, b"\x00\x00\x01\x02", Schema.OPTIONAL_INT32_SCHEMA),
    (LongConverter, -1, b"\xff" * 8, Schema.OPTIONAL_INT64_SCHEMA),
    (FloatConverter, 1.5, b"\x3f\xc0\x00\x00", Schema.OPTIONAL_FLOAT32_SCHEMA),
    (DoubleConverter, -2.0, b"\xc0\x00\x00\x00\x00\x00\x00\x00", Schema.OPTIONAL_FLOAT64_SCHEMA),
    (BooleanConverter, True, b"\x01", Schema.OPTIONAL_BOOLEAN_SCHEMA),
    (BooleanConverter, False, b"\x00", Schema.OPTIONAL_BOOLEAN_SCHEMA),
])
def test_layouts(cls, value, data, schema):
    c = configured(cls)
    assert c.from_connect_data("t", schema, value) == data
    assert c.to_connect_data("t", data) == SchemaAndValue(schema, value)
    assert c.from_connect_data("t", schema, None) is None
    assert c.to_connect_data("t", None) == SchemaAndValue(schema, None)
    assert c.from_connect_header("t", "h", schema, value) == data
    assert c.to_connect_header("t", "h", data) == SchemaAndValue(schema, value)


def test_number_errors():
    with pytest.raises(DataException, match="^Failed to deserialize integer: Size of data "
                                            "received by IntegerDeserializer is not 4$"):
        configured(IntegerConverter).to_connect_data("t", b"\x00")
    with pytest.raises(DataException, match="^Failed to serialize to short: 70000 is out of "
                                            "range$"):
        configured(ShortConverter).from_connect_data("t", None, 70000)
    with pytest.raises(DataException, match=r"^Failed to serialize to long \(was str\)$"):
        configured(LongConverter).from_connect_data("t", None, "1")


def test_boolean_errors():
    c = configured(BooleanConverter)
    with pytest.raises(DataException, match="Unexpected byte received by BooleanDeserializer: -1"):
        c.to_connect_data("t", b"\xff")
    with pytest.raises(DataException, match="is not 1"):
        c.to_connect_data("t", b"\x00\x01")
    with pytest.raises(DataException, match="^Invalid schema type for BooleanConverter: INT8$"):
        c.from_connect_data("t", Schema.INT8_SCHEMA, True)
    with pytest.raises(DataException, match="not compatible with objects of type int"):
        c.from_connect_data("t", None, 1)


def test_string_converter():
    c = configured(StringConverter)
    assert c.from_connect_data("t", Schema.STRING_SCHEMA, "héllo") == "héllo".encode()
    assert c.to_connect_data("t", b"abc") == SchemaAndValue(Schema.OPTIONAL_STRING_SCHEMA, "abc")
    assert c.from_connect_data("t", None, True) == b"true"
    assert c.from_connect_data("t", None, 2.0) == b"2.0"
    assert c.from_connect_data("t", None, [1, "a", None]) == b"[1, a, null]"
    assert c.from_connect_data("t", None, {"k": 1}) == b"{k=1}"
    schema = SchemaBuilder.struct().field("a", Schema.INT32_SCHEMA).field(
        "b", Schema.OPTIONAL_STRING_SCHEMA).build()
    assert c.from_connect_data("t", schema, Struct(schema).put("a", 1)) == b"Struct{a=1}"
    latin = configured(StringConverter, {"converter.encoding": "ISO-8859-1"})
    assert latin.from_connect_data("t", None, "é") == b"\xe9"
    assert latin.to_connect_data("t", b"\xe9").value == "é"
    with pytest.raises(ConfigException, match="converter.encoding"):
        configured(StringConverter, {"converter.encoding": "NOPE-1"})
    assert c.to_connect_data("t", b"a\xff").value == "a\ufffd"
    assert latin.from_connect_data("t", None, "€") == b"?"


def test_byte_array_converter():
    c = configured(ByteArrayConverter)
    assert c.from_connect_data("t", Schema.BYTES_SCHEMA, bytearray(b"ab")) == b"ab"
    assert c.to_connect_data("t", b"ab") == SchemaAndValue(Schema.OPTIONAL_BYTES_SCHEMA, b"ab")
    with pytest.raises(DataException, match="^Invalid schema type for ByteArrayConverter: STRING$"):
        c.from_connect_data("t", Schema.STRING_SCHEMA, b"x")
    with pytest.raises(DataException, match="not compatible with objects of type str"):
        c.from_connect_data("t", None, "x")


def test_converter_type_setting():
    assert configured(StringConverter).config().keys["converter.type"].documentation == \
        "How this converter will be used."
    header = StringConverter()
    header.configure({})  # a header converter's configure: converter.type is header
    assert header.from_connect_header("t", "h", None, 5) == b"5"
    with pytest.raises(ConfigException, match="converter.type"):
        StringConverter().configure({"converter.type": "nope"})
