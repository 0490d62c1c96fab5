import pytest

from josefk.connect.api import ConfigException, DataException, Schema, SchemaBuilder, Struct
from josefk.connect.transforms.fields import (ExtractField, HoistField, SingleFieldPath,
                                              ValueToKey, field_path_v2)

from tests.connect.transforms.records import configured, source

SCHEMA = (SchemaBuilder.struct().field("a", Schema.INT32_SCHEMA)
          .field("b", Schema.INT32_SCHEMA).field("c", Schema.INT32_SCHEMA).build())


def row():
    return Struct(SCHEMA).put("a", 1).put("b", 2).put("c", 3)


# ---- ValueToKey ----

def test_value_to_key_schemaless():
    out = configured(ValueToKey, fields="a,b").apply(source({"a": 1, "b": 2, "c": 3}))
    assert out.key == {"a": 1, "b": 2} and out.key_schema is None
    assert out.value == {"a": 1, "b": 2, "c": 3}


def test_value_to_key_with_schema():
    transform = configured(ValueToKey, fields="a,b")
    out = transform.apply(source(row(), SCHEMA))
    assert out.key_schema == SchemaBuilder.struct().field("a", Schema.INT32_SCHEMA).field(
        "b", Schema.INT32_SCHEMA).build()
    assert (out.key.get("a"), out.key.get("b")) == (1, 2)
    assert transform.apply(source(row(), SCHEMA)).key_schema is out.key_schema


def test_value_to_key_errors():
    with pytest.raises(DataException, match="^Field does not exist: not_exist$"):
        configured(ValueToKey, fields="not_exist").apply(source(row(), SCHEMA))
    with pytest.raises(DataException, match=r"\[copying fields from value to key\], found: "
                                            r"null$"):
        configured(ValueToKey, fields="a").apply(source(None))
    with pytest.raises(ConfigException, match="fields: Empty list$"):
        configured(ValueToKey, fields="")


# ---- ExtractField ----

def test_extract_field_schemaless_and_with_schema():
    assert configured(ExtractField.Key, field="magic").apply(
        source("v", key={"magic": 42})).key == 42
    assert configured(ExtractField.Value, field="missing").apply(
        source({"magic": 42})).value is None
    out = configured(ExtractField.Value, field="b").apply(source(row(), SCHEMA))
    assert (out.value, out.value_schema) == (2, Schema.INT32_SCHEMA)


def test_extract_field_nulls():
    assert configured(ExtractField.Value, field="a").apply(source(None)).value is None
    out = configured(ExtractField.Value, field="a").apply(source(None, SCHEMA))
    assert out.value is None and out.value_schema == Schema.INT32_SCHEMA


def test_extract_field_v2_nested_paths():
    inner = SchemaBuilder.struct().field("baz", Schema.STRING_SCHEMA).build()
    outer = SchemaBuilder.struct().field("foo.bar", inner).field("x", inner).build()
    value = (Struct(outer).put("foo.bar", Struct(inner).put("baz", "deep"))
             .put("x", Struct(inner).put("baz", "shallow")))
    nested = configured(ExtractField.Value, field="`foo.bar`.baz", field_syntax_version="v2")
    out = nested.apply(source(value, outer))
    assert (out.value, out.value_schema) == ("deep", Schema.STRING_SCHEMA)
    assert configured(ExtractField.Value, field="x.baz", field_syntax_version="V2").apply(
        source({"x": {"baz": "map"}})).value == "map"
    assert configured(ExtractField.Value, field="x.baz", field_syntax_version="V2").apply(
        source({"x": None})).value is None
    for missing in ("x.nope", "nope.baz", "x.baz.deeper"):
        with pytest.raises(DataException, match=f"^Unknown field: {missing}$"):
            configured(ExtractField.Value, field=missing, field_syntax_version="V2").apply(
                source(value, outer))
    assert SingleFieldPath("x.nope", "V2").value_from_struct(value) is None
    assert SingleFieldPath("nope.baz", "V2").value_from_struct(value) is None
    empty = Struct(SchemaBuilder.struct().field("x", SchemaBuilder.struct().field(
        "baz", Schema.STRING_SCHEMA).optional().build()).build())
    assert SingleFieldPath("x.baz", "V2").value_from_struct(empty) is None
    v1 = configured(ExtractField.Value, field="foo.bar")
    assert v1.apply(source({"foo.bar": 1})).value == 1


@pytest.mark.parametrize("path,steps", [
    ("foo", ["foo"]), ("foo.bar", ["foo", "bar"]), ("`foo.bar`.baz", ["foo.bar", "baz"]),
    ("foo.`bar.baz`", ["foo", "bar.baz"]), ("foo.", ["foo", ""]), ("`a`b`.c", ["a`b", "c"]),
    ("`a\\`.b`.c", ["a`.b", "c"]),
])
def test_field_path_v2(path, steps):
    assert field_path_v2(path) == steps


def test_extract_field_errors():
    with pytest.raises(DataException, match="^Unknown field: nope$"):
        configured(ExtractField.Value, field="nope").apply(source(row(), SCHEMA))
    with pytest.raises(DataException, match=r"\[field extraction\], found: int$"):
        configured(ExtractField.Value, field="a").apply(source(5))
    with pytest.raises(ConfigException, match=r"^Incomplete backtick pair in path: \[`foo\.bar\], "
                                              r"consider adding a backslash before backtick at "
                                              r"position 0 to escape it$"):
        configured(ExtractField.Value, field="`foo.bar", field_syntax_version="V2")
    with pytest.raises(ConfigException, match="field.syntax.version: String must be one of "
                                              r"\(case insensitive\): V1, V2$"):
        configured(ExtractField.Value, field="a", field_syntax_version="V3")


# ---- HoistField ----

def test_hoist_field():
    assert configured(HoistField.Key, field="magic").apply(source("v", key=42)).key == {
        "magic": 42}
    transform = configured(HoistField.Value, field="magic")
    out = transform.apply(source(42, Schema.INT32_SCHEMA))
    assert out.value_schema == SchemaBuilder.struct().field("magic", Schema.INT32_SCHEMA).build()
    assert out.value.get("magic") == 42
    assert transform.apply(source(7, Schema.INT32_SCHEMA)).value_schema is out.value_schema
    with pytest.raises(ConfigException, match='^Missing required configuration "field"'):
        configured(HoistField.Value)
