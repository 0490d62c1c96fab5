import datetime
import decimal

import pytest

from josefk.connect.api import (ConfigException, DataException, Decimal, Schema, SchemaBuilder,
                                Struct)
from josefk.connect.api.schema import Date, Time, Timestamp
from josefk.connect.transforms.mask_field import MaskField

from tests.connect.transforms.records import configured, source

VALUES = {"magic": 42, "bool": True, "byte": 42, "short": 42, "int": 42, "long": 42,
          "float": 42.0, "double": 42.0, "string": "55.121.20.20",
          "date": datetime.date(2024, 1, 2), "time": datetime.time(10, 11, 12),
          "timestamp": datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc),
          "decimal": decimal.Decimal("42.00"), "array": [1, 2, 3], "map": {"what": "what"}}
SCHEMA = (SchemaBuilder.struct().field("magic", Schema.INT32_SCHEMA)
          .field("bool", Schema.BOOLEAN_SCHEMA).field("byte", Schema.INT8_SCHEMA)
          .field("short", Schema.INT16_SCHEMA).field("int", Schema.INT32_SCHEMA)
          .field("long", Schema.INT64_SCHEMA).field("float", Schema.FLOAT32_SCHEMA)
          .field("double", Schema.FLOAT64_SCHEMA).field("string", Schema.STRING_SCHEMA)
          .field("date", Date.SCHEMA).field("time", Time.SCHEMA)
          .field("timestamp", Timestamp.SCHEMA).field("decimal", Decimal.schema(2))
          .field("array", SchemaBuilder.array(Schema.INT32_SCHEMA).build())
          .field("map", SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.STRING_SCHEMA).build())
          .field("withDefault", SchemaBuilder.string().optional().default_value("x").build())
          .build())
MASKED = ["bool", "byte", "short", "int", "long", "float", "double", "string", "date", "time",
          "timestamp", "decimal", "array", "map"]
EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
NULLS = {"magic": 42, "bool": False, "byte": 0, "short": 0, "int": 0, "long": 0, "float": 0.0,
         "double": 0.0, "string": "", "date": EPOCH.date(), "time": datetime.time(0),
         "timestamp": EPOCH, "array": [], "map": {}}


def test_schemaless_null_equivalents():
    out = configured(MaskField.Value, fields=",".join(MASKED)).apply(source(dict(VALUES)))
    assert {k: v for k, v in out.value.items() if k != "decimal"} == NULLS
    assert out.value["decimal"] == 0


def test_with_schema_null_equivalents_keep_the_schema():
    value = Struct(SCHEMA)
    for name, v in VALUES.items():
        value.put(name, v)
    out = configured(MaskField.Value, fields=",".join(MASKED + ["withDefault"])).apply(
        source(value, SCHEMA))
    assert out.value_schema is SCHEMA
    for name, expected in NULLS.items():
        assert out.value.get(name) == expected, name
    assert str(out.value.get("decimal")) == "0.00"  # the schema's scale
    assert out.value.get_without_default("withDefault") == ""
    out.value.validate()


def test_replace_null_with_default_false_keeps_nulls():
    value = Struct(SCHEMA)
    for name, v in VALUES.items():
        value.put(name, v)
    out = configured(MaskField.Value, fields="int", replace_null_with_default="false").apply(
        source(value, SCHEMA))
    assert out.value.get_without_default("withDefault") is None


def test_custom_replacement():
    transform = configured(MaskField.Value, fields="int,double,string,decimal,missing",
                           replacement="123")
    out = transform.apply(source({"int": 1, "double": 2.5, "string": "s",
                                  "decimal": decimal.Decimal("1.5"), "other": 9}))
    assert out.value == {"int": 123, "double": 123.0, "string": "123",
                         "decimal": decimal.Decimal("123"), "other": 9, "missing": None}


def test_custom_replacement_of_a_typed_field_fits_its_width():
    schema = SchemaBuilder.struct().field("b", Schema.INT8_SCHEMA).build()
    transform = configured(MaskField.Value, fields="b", replacement="1000")
    with pytest.raises(DataException, match=r"^Unable to convert 1000 \(str\) to number$"):
        transform.apply(source(Struct(schema).put("b", 1), schema))


@pytest.mark.parametrize("value", [True, datetime.date(2024, 1, 1), [1], {"a": 1}])
def test_custom_replacement_refused_for_other_types(value):
    with pytest.raises(DataException, match=r"^Cannot mask value of type [\w.]+ with custom "
                                            r"replacement\.$"):
        configured(MaskField.Value, fields="f", replacement="1").apply(source({"f": value}))


def test_unmaskable_value():
    with pytest.raises(DataException, match="^Cannot mask value of type: bytes$"):
        configured(MaskField.Value, fields="f").apply(source({"f": b"x"}))


def test_tombstones_pass():
    record = source(None)
    assert configured(MaskField.Value, fields="a").apply(record) is record


def test_key_side():
    out = configured(MaskField.Key, fields="id").apply(source("v", key={"id": 5}))
    assert out.key == {"id": 0} and out.value == "v"


def test_configuration_errors():
    with pytest.raises(ConfigException, match='^Missing required configuration "fields"'):
        configured(MaskField.Value)
    with pytest.raises(ConfigException, match=r"^Invalid value \[\] for configuration fields: "
                                              r"Empty list$"):
        configured(MaskField.Value, fields="")
    with pytest.raises(ConfigException, match="^Invalid value  for configuration replacement: "
                                              "String must be non-empty$"):
        configured(MaskField.Value, fields="a", replacement="")


def test_wrong_shape():
    with pytest.raises(DataException, match=r"\[mask fields\], found: str$"):
        configured(MaskField.Value, fields="a").apply(source("text", Schema.STRING_SCHEMA))
