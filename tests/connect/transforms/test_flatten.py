import pytest

from josefk.connect.api import DataException, Schema, SchemaBuilder, Struct

from josefk.connect.transforms.flatten import Flatten

from tests.connect.transforms.records import configured, source


def test_schemaless_nested_maps():
    value = {"A": {"B": {"int8": 8, "string": "s", "bytes": b"b", "array": [1, {"x": 1}],
                         "nothing": None}}, "top": True}
    out = configured(Flatten.Value).apply(source(value))
    assert out.value == {"A.B.int8": 8, "A.B.string": "s", "A.B.bytes": b"b",
                         "A.B.array": [1, {"x": 1}], "A.B.nothing": None, "top": True}
    assert configured(Flatten.Key, delimiter="#").apply(
        source("v", key={"a": {"b": 1}})).key == {"a#b": 1}
    assert configured(Flatten.Value).apply(source({1: {2: "x"}})).value == {"1.2": "x"}


def test_with_schema_nested_structs():
    inner = (SchemaBuilder.struct().name("inner").field("int8", Schema.INT8_SCHEMA)
             .field("opt", Schema.OPTIONAL_STRING_SCHEMA)
             .field("array", SchemaBuilder.array(Schema.INT32_SCHEMA).build()).build())
    middle = SchemaBuilder.struct().field("B", inner).build()
    outer = (SchemaBuilder.struct().name("outer").field("A", middle)
             .field("opt_struct", SchemaBuilder.struct().field(
                 "x", Schema.INT32_SCHEMA).optional().build())
             .field("d", SchemaBuilder.string().default_value("dflt").build()).build())
    value = (Struct(outer).put("A", Struct(middle).put("B", Struct(inner).put("int8", 8)
                                                        .put("array", [1, 2])))
             .put("d", "given"))
    transform = configured(Flatten.Value, delimiter="_")
    out = transform.apply(source(value, outer))
    flat = out.value_schema
    assert flat.name == "outer"
    assert [(f.name, f.schema) for f in flat.fields()] == [
        ("A_B_int8", Schema.INT8_SCHEMA), ("A_B_opt", Schema.OPTIONAL_STRING_SCHEMA),
        ("A_B_array", SchemaBuilder.array(Schema.INT32_SCHEMA).build()),
        ("opt_struct_x", Schema.OPTIONAL_INT32_SCHEMA),
        ("d", SchemaBuilder.string().default_value("dflt").build())]
    assert out.value.get("A_B_int8") == 8 and out.value.get("A_B_array") == [1, 2]
    assert out.value.get("opt_struct_x") is None and out.value.get("d") == "given"
    out.value.validate()
    assert transform.apply(source(value, outer)).value_schema is flat


def test_tombstones_pass():
    record = source(None)
    assert configured(Flatten.Value).apply(record) is record


def test_errors():
    schema = SchemaBuilder.struct().field(
        "m", SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.STRING_SCHEMA).build()).build()
    with pytest.raises(DataException, match=r"^Flatten transformation does not support MAP for "
                                            r"record with schemas \(for field m\)\.$"):
        configured(Flatten.Value).apply(source(Struct(schema).put("m", {}), schema))
    with pytest.raises(DataException, match=r"^Flatten transformation does not support set for "
                                            r"record without schemas \(for field a\.b\)\.$"):
        configured(Flatten.Value).apply(source({"a": {"b": {1}}}))
    with pytest.raises(DataException, match=r"\[flattening\], found: str$"):
        configured(Flatten.Value).apply(source("x"))
