import datetime
import decimal

import pytest

from josefk.connect.api import ConfigException, DataException, Decimal, Schema, SchemaBuilder
from josefk.connect.api import Struct
from josefk.connect.api.records import Header, Headers
from josefk.connect.api.schema import Date, Time, Timestamp
from josefk.connect.transforms.headers import (DropHeaders, HeaderFrom, InsertHeader,
                                               parse_literal)

from tests.connect.transforms.records import configured, source

SCHEMA = (SchemaBuilder.struct().name("row").field("id", Schema.INT64_SCHEMA)
          .field("name", Schema.STRING_SCHEMA)
          .field("opt", SchemaBuilder.string().optional().default_value("d").build()).build())


def row():
    return Struct(SCHEMA).put("id", 1).put("name", "n")


def test_header_from_copy_schemaless():
    record = source({"id": 1, "name": "n"}, headers=[("old", None, "x")])
    out = configured(HeaderFrom.Value, fields="id,name,missing", headers="h_id,h_name,h_m",
                     operation="copy").apply(record)
    assert out.value == {"id": 1, "name": "n"}
    assert list(out.headers) == [Header("old", None, "x"), Header("h_id", None, 1),
                                 Header("h_name", None, "n"), Header("h_m", None, None)]
    assert list(record.headers) == [Header("old", None, "x")]


def test_header_from_move_schemaless_key():
    out = configured(HeaderFrom.Key, fields="id", headers="h", operation="move").apply(
        source("v", key={"id": 1, "k": 2}))
    assert out.key == {"k": 2} and out.value == "v"
    assert list(out.headers) == [Header("h", None, 1)]


def test_header_from_with_schema():
    copy = configured(HeaderFrom.Value, fields="id,opt", headers="h_id,h_opt", operation="copy")
    out = copy.apply(source(row(), SCHEMA))
    assert out.value_schema is SCHEMA and out.value == row()
    assert list(out.headers) == [Header("h_id", Schema.INT64_SCHEMA, 1),
                                 Header("h_opt", SCHEMA.field("opt").schema, "d")]
    move = configured(HeaderFrom.Value, fields="id,opt", headers="h_id,h_opt", operation="move",
                      replace_null_with_default="false")
    out = move.apply(source(row(), SCHEMA))
    assert [f.name for f in out.value_schema.fields()] == ["name"]
    assert out.value_schema.name == "row" and out.value.get("name") == "n"
    assert list(out.headers)[1] == Header("h_opt", SCHEMA.field("opt").schema, None)
    assert move.apply(source(row(), SCHEMA)).value_schema is out.value_schema


def test_header_from_errors():
    with pytest.raises(ConfigException, match="^'fields' config must have the same number of "
                                              "elements as 'headers' config.$"):
        configured(HeaderFrom.Value, fields="a,b", headers="h", operation="copy")
    with pytest.raises(ConfigException, match="^Invalid value steal for configuration operation: "
                                              "String must be one of: move, copy$"):
        configured(HeaderFrom.Value, fields="a", headers="h", operation="steal")
    with pytest.raises(ConfigException, match="headers: Empty list$"):
        configured(HeaderFrom.Value, fields="a", headers="", operation="copy")
    transform = configured(HeaderFrom.Value, fields="nope", headers="h", operation="move")
    with pytest.raises(DataException, match="^Field does not exist: nope$"):
        transform.apply(source(row(), SCHEMA))
    with pytest.raises(DataException, match=r"^Only Map objects supported in absence of schema for "
                                            r"\[header move\], found: int$"):
        transform.apply(source(5))


@pytest.mark.parametrize("text,schema,value", [
    ("hello", Schema.STRING_SCHEMA, "hello"), ("", Schema.STRING_SCHEMA, ""),
    ("true", Schema.BOOLEAN_SCHEMA, True), ("FALSE", Schema.BOOLEAN_SCHEMA, False),
    ("null", None, None), ("42", Schema.INT8_SCHEMA, 42), ("-129", Schema.INT16_SCHEMA, -129),
    ("70000", Schema.INT32_SCHEMA, 70000), ("3000000000", Schema.INT64_SCHEMA, 3_000_000_000),
    ("1.5", Schema.FLOAT32_SCHEMA, 1.5), ("0.1", Schema.FLOAT32_SCHEMA, 0.10000000149011612),
    ("1.0", Schema.INT8_SCHEMA, 1), ("1e3", Schema.INT16_SCHEMA, 1000),
    ("1e39", Schema.FLOAT64_SCHEMA, 1e39), ("1.5e39", Schema.FLOAT64_SCHEMA, 1.5e39),
    ("99999999999999999999", Decimal.schema(0), decimal.Decimal("99999999999999999999")),
    ("2024-03-01", Date.SCHEMA, datetime.date(2024, 3, 1)),
    ("01:02:03.004Z", Time.SCHEMA, datetime.time(1, 2, 3, 4000)),
    ("2024-03-01T01:02:03.004Z", Timestamp.SCHEMA,
     datetime.datetime(2024, 3, 1, 1, 2, 3, 4000, tzinfo=datetime.timezone.utc)),
    ("2024-99-01", Schema.STRING_SCHEMA, "2024-99-01"),
    ("[1, 2]", Schema.STRING_SCHEMA, "[1, 2]"),
])
def test_literals(text, schema, value):
    assert parse_literal(text) == (schema, value)


def test_insert_header():
    record = source({"a": 1}, headers=[("h", None, "old")])
    out = configured(InsertHeader, header="h", value_literal="42").apply(record)
    assert list(out.headers) == [Header("h", None, "old"), Header("h", Schema.INT8_SCHEMA, 42)]
    assert out.value == {"a": 1} and len(record.headers) == 1
    with pytest.raises(ConfigException, match='^Missing required configuration "value.literal"'):
        configured(InsertHeader, header="h")


def test_drop_headers():
    record = source({"a": 1}, headers=[("a", None, 1), ("b", None, 2), ("a", None, 3),
                                       ("c", None, 4)])
    out = configured(DropHeaders, headers="a,c").apply(record)
    assert out.headers == Headers([("b", None, 2)])
    assert len(record.headers) == 4
    with pytest.raises(ConfigException, match="^Invalid value \\[\\] for configuration headers: "
                                              "Empty list$"):
        configured(DropHeaders, headers="")
