import pytest

from josefk.connect.api import ConfigException, DataException, Schema, SchemaBuilder, Struct
from josefk.connect.transforms.replace_field import ReplaceField

from tests.connect.transforms.records import configured, source

SCHEMA = (SchemaBuilder.struct().name("row").field("dont", Schema.STRING_SCHEMA)
          .field("abc", Schema.INT32_SCHEMA).field("foo", Schema.BOOLEAN_SCHEMA)
          .field("etc", Schema.STRING_SCHEMA).build())


def row():
    return (Struct(SCHEMA).put("dont", "whatever").put("abc", 42).put("foo", True)
            .put("etc", "etc"))


def test_schemaless_exclude_and_rename():
    transform = configured(ReplaceField.Value, exclude="dont", renames="abc:xyz,foo:bar")
    out = transform.apply(source({"dont": "whatever", "abc": 42, "foo": True, "etc": "etc"}))
    assert out.value == {"xyz": 42, "bar": True, "etc": "etc"}


def test_schemaless_include_takes_only_those_and_exclude_wins():
    transform = configured(ReplaceField.Value, include="abc,foo", exclude="foo")
    assert transform.apply(source({"abc": 1, "foo": 2, "etc": 3})).value == {"abc": 1}


def test_with_schema_include_and_rename():
    transform = configured(ReplaceField.Value, include="abc,foo", renames="abc:xyz,foo:bar")
    out = transform.apply(source(row(), SCHEMA))
    assert out.value_schema.name == "row"
    assert [(f.name, f.schema) for f in out.value_schema.fields()] == [
        ("xyz", Schema.INT32_SCHEMA), ("bar", Schema.BOOLEAN_SCHEMA)]
    assert out.value.get("xyz") == 42 and out.value.get("bar") is True


def test_key_side_and_tombstones():
    transform = configured(ReplaceField.Key, exclude="dont")
    out = transform.apply(source("v", key=row(), key_schema=SCHEMA))
    assert [f.name for f in out.key_schema.fields()] == ["abc", "foo", "etc"]
    assert out.value == "v"
    tombstone = source(None, key={"dont": 1})
    assert configured(ReplaceField.Value, exclude="dont").apply(tombstone) is tombstone


def test_old_names_whitelist_and_blacklist():
    transform = configured(ReplaceField.Value, whitelist="abc,foo", blacklist="foo")
    assert transform.apply(source({"abc": 1, "foo": 2, "etc": 3})).value == {"abc": 1}
    newer_wins = configured(ReplaceField.Value, include="etc", whitelist="abc")
    assert newer_wins.apply(source({"abc": 1, "etc": 3})).value == {"etc": 3}


def test_replace_null_with_default():
    schema = SchemaBuilder.struct().field(
        "a", SchemaBuilder.string().optional().default_value("dflt").build()).build()
    value = Struct(schema)
    assert configured(ReplaceField.Value, exclude="x").apply(
        source(value, schema)).value.get_without_default("a") == "dflt"
    assert configured(ReplaceField.Value, exclude="x", replace_null_with_default="false").apply(
        source(value, schema)).value.get_without_default("a") is None


def test_invalid_rename_mapping():
    with pytest.raises(ConfigException, match=r"^Invalid value \[foo:bar:baz\] for configuration "
                                              r"renames: Invalid rename mapping: foo:bar:baz$"):
        configured(ReplaceField.Value, renames="foo:bar:baz")
    with pytest.raises(ConfigException, match="Invalid rename mapping: foo$"):
        configured(ReplaceField.Value, renames="foo")


def test_wrong_shape():
    with pytest.raises(DataException, match=r"^Only Map objects supported in absence of schema "
                                            r"for \[field replacement\], found: list$"):
        configured(ReplaceField.Value, exclude="a").apply(source([1]))
