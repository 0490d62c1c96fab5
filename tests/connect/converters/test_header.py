"""SimpleHeaderConverter: values written as Kafka's Values.convertToString writes them, read
back with the types Values.parseString infers."""
from __future__ import annotations

import datetime
import decimal

import pytest

from josefk.connect.api.errors import DataException
from josefk.connect.api.schema import (Date, Decimal, Schema, SchemaAndValue, SchemaBuilder,
                                       Struct, Time, Timestamp, Type)
from josefk.connect.converters.header import (SimpleHeaderConverter, convert_to_string,
                                              parse_string)

UTC = datetime.timezone.utc


@pytest.mark.parametrize("text, schema, value", [
    ("true", Schema.BOOLEAN_SCHEMA, True),
    ("false", Schema.BOOLEAN_SCHEMA, False),
    ("42", Schema.INT8_SCHEMA, 42),
    ("-129", Schema.INT16_SCHEMA, -129),
    ("40000", Schema.INT32_SCHEMA, 40000),
    ("12345678901", Schema.INT64_SCHEMA, 12345678901),
    ("1.5", Schema.FLOAT32_SCHEMA, 1.5),
    ("+3", Schema.INT8_SCHEMA, 3),
    ("1e400", Decimal.schema(-400), decimal.Decimal("1e400")),
    ("hello world", Schema.STRING_SCHEMA, "hello world"),
    ("true}", Schema.STRING_SCHEMA, "true}"),
    ("{a:1}", Schema.STRING_SCHEMA, "{a:1}"),
    ("[1,", Schema.STRING_SCHEMA, "[1,"),
    ("", Schema.STRING_SCHEMA, ""),
    ("2024-02-29", Date.SCHEMA, datetime.date(2024, 2, 29)),
    ("12:34:56.789Z", Time.SCHEMA, datetime.time(12, 34, 56, 789000)),
    ("2024-02-29T12:34:56.789Z", Timestamp.SCHEMA,
     datetime.datetime(2024, 2, 29, 12, 34, 56, 789000, tzinfo=UTC)),
    ("2024-02-30", Schema.STRING_SCHEMA, "2024-02-30"),
])
def test_parse_primitives(text, schema, value):
    assert parse_string(text) == SchemaAndValue(schema, value)


def test_parse_arrays_and_maps():
    parsed = parse_string("[1, 2, 300]")
    assert parsed.schema.type is Type.ARRAY and parsed.schema.value_schema == Schema.INT16_SCHEMA
    assert parsed.value == [1, 2, 300]
    widened = parse_string("[1,2.5]")
    assert widened.schema.value_schema == Schema.FLOAT32_SCHEMA and widened.value == [1.0, 2.5]
    parsed = parse_string('{"a":[true,false],"b":[]}')
    assert parsed.schema.key_schema == Schema.STRING_SCHEMA and parsed.value == {
        "a": [True, False], "b": []}
    # a quoted element that reads as a date is a date (and the elements share no schema)
    quoted = parse_string('["x","2024-01-01"]')
    assert quoted.value == ["x", datetime.date(2024, 1, 1)] and quoted.schema.value_schema is None
    assert parse_string("null") == SchemaAndValue.NULL
    mixed = parse_string('[1,"x"]')
    assert mixed.schema.value_schema is None and mixed.value == [1, "x"]


def test_convert_to_string():
    assert convert_to_string(None, None) is None
    assert convert_to_string(None, [1, "a\"b", None, True]) == '[1,"a\\"b",null,true]'
    assert convert_to_string(None, {"k": b"\x00\x01"}) == '{"k":"AAE="}'
    assert convert_to_string(None, 1e20) == "1.0E20"
    assert convert_to_string(Schema.FLOAT32_SCHEMA, 0.1) == "0.1"
    assert convert_to_string(None, decimal.Decimal("1.20")) == "1.20"
    assert convert_to_string(None, datetime.date(2024, 1, 2)) == "2024-01-02"
    assert convert_to_string(None, datetime.time(1, 2, 3, 4000)) == "01:02:03.004Z"
    schema = SchemaBuilder.struct().field("id", Schema.INT32_SCHEMA).field(
        "n", Schema.OPTIONAL_STRING_SCHEMA).build()
    assert convert_to_string(schema, Struct(schema).put("id", 1).put("n", "x")) == \
        '{"id":1,"n":"x"}'


@pytest.mark.parametrize("value", [
    True, 7, 70000, 1.5, "plain text", [1, 2, 3], {"a": 1, "b": 2}, ["x", "y"],
    datetime.datetime(2020, 1, 2, 3, 4, 5, 6000, tzinfo=UTC), datetime.date(2020, 1, 2),
])
def test_round_trip(value):
    c = SimpleHeaderConverter()
    c.configure({})
    data = c.from_connect_header("t", "h", None, value)
    assert c.to_connect_header("t", "h", data).value == value


def test_header_converter_edges():
    c = SimpleHeaderConverter()
    assert c.from_connect_header("t", "h", None, None) is None
    assert c.to_connect_header("t", "h", None) == SchemaAndValue.NULL
    assert c.to_connect_header("t", "h", b"\xff\xfe") == SchemaAndValue(Schema.BYTES_SCHEMA,
                                                                       b"\xff\xfe")
    assert c.config().keys == {}
    cycle = []
    cycle.append(cycle)
    with pytest.raises(DataException, match="^Failed to serialize value for header 'h' on "
                                            "topic 't': RecursionError"):
        c.from_connect_header("t", "h", None, cycle)
