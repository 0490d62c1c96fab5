import datetime
import decimal
import re

import pytest

from josefk.connect.api import (ConfigException, DataException, Decimal, Schema, SchemaBuilder,
                                Struct)
from josefk.connect.api.schema import Date, Time, Timestamp
from josefk.connect.transforms.cast import Cast

from tests.connect.transforms.records import configured, source

SUPPORTED = "[INT8, INT16, INT32, INT64, FLOAT32, FLOAT64, BOOLEAN, STRING]"


def cast(spec, side=Cast.Value):
    return configured(side, spec=spec)


@pytest.mark.parametrize("spec,value,expected", [
    ("int8", 42, 42), ("int8", 300, 44), ("int16", -40000, 25536), ("int32", 42.9, 42),
    ("int32", -42.9, -42), ("int64", 1e30, 2**63 - 1), ("int32", float("nan"), 0),
    ("int8", True, 1), ("int64", "-12", -12), ("float64", "1.5", 1.5), ("float64", 3, 3.0),
    ("float32", 0.1, 0.10000000149011612), ("boolean", "TRUE", True), ("boolean", "yes", False),
    ("boolean", 0, False), ("boolean", 2.0, True), ("string", True, "true"),
    ("string", 42, "42"), ("string", b"\x00\x01", "AAE="),
])
def test_schemaless_whole_value(spec, value, expected):
    assert cast(spec).apply(source(value)).value == expected


def test_schemaless_fields():
    out = cast("a:int16,b:string,missing:int8").apply(source({"a": "7", "b": 1.5, "c": "x"}))
    assert out.value == {"a": 7, "b": "1.5", "c": "x", "missing": None}
    assert out.value_schema is None


def test_with_schema_fields_change_type_keep_optionality_and_cast_defaults():
    schema = (SchemaBuilder.struct().name("row").field("int8", Schema.OPTIONAL_INT8_SCHEMA)
              .field("int64", SchemaBuilder.int64().default_value(5).build())
              .field("string", Schema.STRING_SCHEMA).field("other", Schema.FLOAT64_SCHEMA)
              .build())
    value = (Struct(schema).put("int8", 8).put("int64", 64).put("string", "42")
             .put("other", 1.0))
    out = cast("int8:int32,int64:string,string:int64").apply(source(value, schema))
    updated = out.value_schema
    assert updated.name == "row"
    assert updated.field("int8").schema == Schema.OPTIONAL_INT32_SCHEMA
    assert updated.field("int64").schema == SchemaBuilder.string().default_value("5").build()
    assert updated.field("string").schema == Schema.INT64_SCHEMA
    assert updated.field("other").schema == Schema.FLOAT64_SCHEMA
    assert (out.value.get("int8"), out.value.get("int64"), out.value.get("string"),
            out.value.get("other")) == (8, "64", 42, 1.0)


def test_with_schema_whole_value():
    schema = SchemaBuilder.int64().name("id").optional().build()
    out = cast("int32", Cast.Key).apply(source("v", key=2**32 + 5, key_schema=schema))
    assert out.key == 5
    assert out.key_schema == SchemaBuilder.int32().name("id").optional().build()
    assert out.value == "v"


def test_logical_types():
    schema = (SchemaBuilder.struct().field("decimal", Decimal.schema(2))
              .field("decimal2", Decimal.schema(2)).field("decimal3", Decimal.schema(2))
              .field("date", Date.SCHEMA).field("time", Time.SCHEMA)
              .field("timestamp", Timestamp.SCHEMA).build())
    value = (Struct(schema).put("decimal", decimal.Decimal("-12.75"))
             .put("decimal2", decimal.Decimal("12.75")).put("decimal3", decimal.Decimal("1.25"))
             .put("date", datetime.date(2024, 3, 1)).put("time", datetime.time(1, 2, 3, 4000))
             .put("timestamp", datetime.datetime(2024, 3, 1, 1, 2, 3, 4000,
                                                 tzinfo=datetime.timezone.utc)))
    out = cast("decimal:float64,decimal2:string,decimal3:int32,date:string,time:string,"
               "timestamp:string").apply(source(value, schema)).value
    assert out.get("decimal") == -12.75
    assert out.get("decimal2") == "12.75"
    assert out.get("decimal3") == 1
    assert out.get("date") == "2024-03-01"
    assert out.get("time") == "01:02:03.004Z"
    assert out.get("timestamp") == "2024-03-01T01:02:03.004Z"


def test_whole_value_cast_of_a_logical_type_drops_its_name():
    out = cast("string").apply(source(decimal.Decimal("1.50"), Decimal.schema(2)))
    assert out.value == "1.50" and out.value_schema == Schema.STRING_SCHEMA


def test_dates_and_times_cast_to_numbers_as_they_are_stored():
    schema = (SchemaBuilder.struct().field("date", Date.SCHEMA).field("time", Time.SCHEMA)
              .field("timestamp", Timestamp.SCHEMA).build())
    value = (Struct(schema).put("date", datetime.date(1970, 1, 3))
             .put("time", datetime.time(0, 0, 1, 500000))
             .put("timestamp", datetime.datetime(1970, 1, 1, 0, 0, 2,
                                                 tzinfo=datetime.timezone.utc)))
    out = cast("date:int32,time:float64,timestamp:int64").apply(source(value, schema)).value
    assert (out.get("date"), out.get("time"), out.get("timestamp")) == (2, 1500.0, 2000)


def test_data_errors():
    with pytest.raises(DataException, match="^Unexpected type in Cast transformation: "
                                            "datetime.date$"):
        cast("int8").apply(source(datetime.date(2024, 1, 1), SchemaBuilder.int32().build()))
    with pytest.raises(DataException, match="^Cast transformation does not support casting "
                                            "from STRUCT; supported types are "
                                            + re.escape(SUPPORTED[:-1] + ", BYTES]") + "$"):
        inner = SchemaBuilder.struct().field("x", Schema.INT32_SCHEMA).build()
        outer = SchemaBuilder.struct().field("s", inner).build()
        cast("s:string").apply(source(Struct(outer).put("s", Struct(inner).put("x", 1)), outer))
    with pytest.raises(DataException, match=r"^Value \(300\) was out of range for requested "
                                            r"data type$"):
        cast("int8").apply(source("300"))
    with pytest.raises(DataException, match=r"^Value \(abc\) was out of range"):
        cast("float32").apply(source("abc"))
    with pytest.raises(DataException, match="^Cast transformation was passed a value of type "
                                            "decimal.Decimal which is not supported by Connect's "
                                            "data API$"):
        cast("string").apply(source(decimal.Decimal(1)))
    with pytest.raises(DataException, match=r"\[cast types\], found: list$"):
        cast("a:int8").apply(source([1]))


def test_configuration_errors():
    with pytest.raises(ConfigException, match="^Must specify at least one field to cast.$"):
        cast("")
    with pytest.raises(ConfigException, match="^Invalid type found in casting spec: faketype$"):
        cast("foo:faketype")
    with pytest.raises(ConfigException, match="^Cast transformations that specify a type to cast "
                                              "the entire value to may ony specify a single cast "
                                              "in their spec$"):
        cast("int8,foo:int16")
    with pytest.raises(ConfigException, match="^Cast transformation does not support casting "
                                              "to ARRAY; supported types are "
                                              + re.escape(SUPPORTED) + "$"):
        cast("a:array")
    with pytest.raises(ConfigException, match="Invalid rename mapping: a:b:c$"):
        cast("a:b:c")
    with pytest.raises(ConfigException, match='^Missing required configuration "spec"'):
        configured(Cast.Value)
