"""JsonConverter against fixed vectors: the JSON Kafka's JsonConverter (Jackson) writes for
each schema and value, byte for byte, and what it reads with and without the envelope."""
from __future__ import annotations

import datetime
import decimal
import json

import pytest

from josefk.connect.api.config import ConfigException
from josefk.connect.api.errors import DataException
from josefk.connect.api.schema import (Date, Decimal, Schema, SchemaAndValue, SchemaBuilder,
                                       Struct, Time, Timestamp)
from josefk.connect.converters.json import ENVELOPE_ERROR, JsonConverter

UTC = datetime.timezone.utc


def converter(**settings) -> JsonConverter:
    c = JsonConverter()
    c.configure({k.replace("_", "."): v for k, v in settings.items()}, False)
    return c


@pytest.mark.parametrize("schema, value, payload", [
    (Schema.BOOLEAN_SCHEMA, True, "true"),
    (Schema.INT8_SCHEMA, 12, "12"),
    (Schema.INT16_SCHEMA, -12, "-12"),
    (Schema.INT32_SCHEMA, 12, "12"),
    (Schema.INT64_SCHEMA, 4398046511104, "4398046511104"),
    (Schema.FLOAT32_SCHEMA, 12.34, "12.34"),
    (Schema.FLOAT64_SCHEMA, 12.34, "12.34"),
    (Schema.FLOAT64_SCHEMA, 1e20, "1.0E20"),
    (Schema.FLOAT64_SCHEMA, 1e7, "1.0E7"),
    (Schema.FLOAT64_SCHEMA, 1234567.5, "1234567.5"),
    (Schema.FLOAT64_SCHEMA, 0.001, "0.001"),
    (Schema.FLOAT64_SCHEMA, 0.0001, "1.0E-4"),
    (Schema.FLOAT64_SCHEMA, -0.0, "-0.0"),
    (Schema.FLOAT64_SCHEMA, 3.0, "3.0"),
    (Schema.FLOAT32_SCHEMA, 0.1, "0.1"),
    (Schema.FLOAT32_SCHEMA, 1e10, "1.0E10"),
    (Schema.STRING_SCHEMA, "foo-bar-baz", '"foo-bar-baz"'),
    (Schema.STRING_SCHEMA, 'a"\\\n\x01\x1fé', '"a\\"\\\\\\n\\u0001\\u001Fé"'),
    (Schema.BYTES_SCHEMA, b"test-string", '"dGVzdC1zdHJpbmc="'),
    (Schema.OPTIONAL_STRING_SCHEMA, None, "null"),
])
def test_primitives_with_envelope(schema, value, payload):
    optional = "true" if schema.optional else "false"
    type_name = {"FLOAT32": "float", "FLOAT64": "double"}.get(schema.type.name,
                                                              schema.type.value)
    expected = f'{{"schema":{{"type":"{type_name}","optional":{optional}}},"payload":{payload}}}'
    c = converter()
    assert c.from_connect_data("t", schema, value) == expected.encode()
    back = c.to_connect_data("t", expected.encode())
    assert back.schema == schema
    assert back.value == (pytest.approx(value, rel=1e-7) if isinstance(value, float) else value)


def test_struct_schema_json_as_kafka_writes_it():
    schema = SchemaBuilder.struct().name("x").field("id", Schema.INT64_SCHEMA).build()
    data = converter().from_connect_data("t", schema, Struct(schema).put("id", 1))
    assert data == (b'{"schema":{"type":"struct","fields":[{"type":"int64","optional":false,'
                    b'"field":"id"}],"optional":false,"name":"x"},"payload":{"id":1}}')


def test_schema_metadata_array_map_and_defaults():
    schema = (SchemaBuilder.struct().name("com.example.Rec").version(3).doc("a record")
              .parameter("k1", "v1").parameter("a", "b")
              .field("tags", SchemaBuilder.array(Schema.STRING_SCHEMA).optional().build())
              .field("counts", SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.INT32_SCHEMA).build())
              .field("pairs", SchemaBuilder.map(Schema.INT32_SCHEMA, Schema.BOOLEAN_SCHEMA).build())
              .field("level", SchemaBuilder.int16().default_value(7).build())
              .build())
    value = (Struct(schema).put("counts", {"a": 1, "b": 2}).put("pairs", {1: True, 2: False}))
    assert converter().from_connect_data("t", schema, value) == (
        b'{"schema":{"type":"struct","fields":['
        b'{"type":"array","items":{"type":"string","optional":false},"optional":true,'
        b'"field":"tags"},'
        b'{"type":"map","keys":{"type":"string","optional":false},'
        b'"values":{"type":"int32","optional":false},"optional":false,"field":"counts"},'
        b'{"type":"map","keys":{"type":"int32","optional":false},'
        b'"values":{"type":"boolean","optional":false},"optional":false,"field":"pairs"},'
        b'{"type":"int16","optional":false,"default":7,"field":"level"}],'
        b'"optional":false,"name":"com.example.Rec","version":3,"doc":"a record",'
        b'"parameters":{"k1":"v1","a":"b"}},'
        b'"payload":{"tags":null,"counts":{"a":1,"b":2},"pairs":[[1,true],[2,false]],'
        b'"level":7}}')


def test_logical_types():
    schema = (SchemaBuilder.struct()
              .field("dec", Decimal.schema(2)).field("day", Date.SCHEMA)
              .field("time", Time.SCHEMA).field("ts", Timestamp.SCHEMA).build())
    value = (Struct(schema).put("dec", decimal.Decimal("1.56"))
             .put("day", datetime.date(1997, 5, 19))
             .put("time", datetime.time(0, 0, 14, 400000))
             .put("ts", datetime.datetime(2096, 10, 2, 7, 6, 40, tzinfo=UTC)))
    data = converter().from_connect_data("t", schema, value)
    assert data.endswith(b'"payload":{"dec":"AJw=","day":10000,"time":14400,"ts":4000000000000}}')
    assert (b'{"type":"bytes","optional":false,"name":"org.apache.kafka.connect.data.Decimal",'
            b'"version":1,"parameters":{"scale":"2"},"field":"dec"}') in data
    assert (b'{"type":"int32","optional":false,"name":"org.apache.kafka.connect.data.Date",'
            b'"version":1,"field":"day"}') in data
    assert converter().to_connect_data("t", data) == (schema, value)
    numeric = converter(decimal_format="numeric").from_connect_data("t", schema, value)
    assert b'"payload":{"dec":1.56,' in numeric
    assert converter().to_connect_data("t", numeric).value.get("dec") == decimal.Decimal("1.56")


def test_without_envelope_and_schemaless():
    plain = converter(schemas_enable="false")
    schema = SchemaBuilder.struct().field("a", Schema.INT32_SCHEMA).build()
    assert plain.from_connect_data("t", schema, Struct(schema).put("a", 1)) == b'{"a":1}'
    assert plain.from_connect_data("t", None, {"k": [1, 2.5, None, True, "s"]}) == \
        b'{"k":[1,2.5,null,true,"s"]}'
    assert plain.from_connect_data("t", None, {1: "x"}) == b'[[1,"x"]]'
    assert plain.from_connect_data("t", None, None) is None
    assert plain.to_connect_data("t", b'{"a":1,"b":[2.5,"x",false,null],"c":{}}') == \
        SchemaAndValue(None, {"a": 1, "b": [2.5, "x", False, None], "c": {}})
    assert plain.to_connect_data("t", b"") == SchemaAndValue(None, None)
    assert plain.to_connect_data("t", None) == SchemaAndValue.NULL
    assert converter().from_connect_data("t", None, [1]) == b'{"schema":null,"payload":[1]}'
    assert converter().to_connect_data("t", b'{"schema":null,"payload":{"x":1.0}}') == \
        SchemaAndValue(None, {"x": 1.0})


def test_envelope_in_another_layout_reads_the_same():
    spaced = b' { "payload" : 5 , "schema" : { "optional" : false, "type" : "int32" } } '
    assert converter().to_connect_data("t", spaced) == (Schema.INT32_SCHEMA, 5)


@pytest.mark.parametrize("data", [b'{"a":1}', b'[1]', b'{"schema":null}',
                                  b'{"schema":null,"payload":1,"x":2}'])
def test_envelope_required(data):
    with pytest.raises(DataException) as e:
        converter().to_connect_data("t", data)
    assert str(e.value) == ENVELOPE_ERROR


@pytest.mark.parametrize("data, message", [
    (b'{"schema":{"optional":false},"payload":1}', "Schema must contain 'type' field"),
    (b'{"schema":{"type":"foo"},"payload":1}', "Unknown schema type: foo"),
    (b'{"schema":{"type":"array"},"payload":[]}', "Array schema did not specify the element type"),
    (b'{"schema":{"type":"map","values":{"type":"int8"}},"payload":{}}',
     "Map schema did not specify the key type"),
    (b'{"schema":{"type":"struct","fields":{}},"payload":{}}',
     "Struct schema's \"fields\" argument is not an array."),
    (b'{"schema":{"type":"struct","fields":[{"type":"int8"}]},"payload":{}}',
     "Struct schema's field name not specified properly"),
    (b'{"schema":{"type":"int8","parameters":{"a":1}},"payload":1}',
     "Schema parameters must have string values."),
    (b'{"schema":{"type":"int8"},"payload":null}', "Invalid null value for required INT8 field"),
    (b'{"schema":{"type":"map","keys":{"type":"int8"},"values":{"type":"int8"}},"payload":{}}',
     "Maps with non-string fields should be encoded as JSON array of tuples, but found OBJECT"),
    (b'{"schema":{"type":"struct","fields":[]},"payload":[]}',
     "Structs should be encoded as JSON objects, but found ARRAY"),
    (b'{"schema":{"type":"int32","name":"org.apache.kafka.connect.data.Date"},"payload":"x"}',
     "Invalid type for Date, underlying representation should be integer but was STRING"),
    (b'{"schema":', "Converting byte[] to Kafka Connect data failed due to serialization error: "),
])
def test_read_errors(data, message):
    with pytest.raises(DataException) as e:
        converter().to_connect_data("t", data)
    assert str(e.value).startswith(message)


def test_write_errors():
    c = converter()
    with pytest.raises(DataException, match="^Conversion error: null value for field that is "
                                            "required and has no default value$"):
        c.from_connect_data("t", Schema.INT32_SCHEMA, None)
    with pytest.raises(DataException, match="^Invalid type for INT32: <class 'str'>$"):
        c.from_connect_data("t", Schema.INT32_SCHEMA, "x")
    other = SchemaBuilder.struct().field("b", Schema.INT8_SCHEMA).build()
    schema = SchemaBuilder.struct().field("a", Schema.INT8_SCHEMA).build()
    with pytest.raises(DataException, match="^Mismatching schema.$"):
        c.from_connect_data("t", schema, Struct(other).put("b", 1))
    with pytest.raises(DataException, match="does not have corresponding schema type"):
        c.from_connect_data("t", None, object())


def test_replace_null_with_default():
    schema = (SchemaBuilder.struct()
              .field("n", SchemaBuilder.int32().optional().default_value(5).build()).build())
    value = Struct(schema)
    assert converter().from_connect_data("t", schema, value).endswith(b'"payload":{"n":5}}')
    keep = converter(replace_null_with_default="false")
    data = keep.from_connect_data("t", schema, value)
    assert data.endswith(b'"payload":{"n":null}}')
    assert keep.to_connect_data("t", data).value.get_without_default("n") is None
    assert converter().to_connect_data("t", data).value.get_without_default("n") == 5


def test_schema_caches_are_bounded_and_reused():
    c = converter(schemas_cache_size="2")
    schemas = [SchemaBuilder.int32().name(f"n{i}").build() for i in range(4)]
    for schema in schemas:
        c.to_connect_data("t", c.from_connect_data("t", schema, 1))
    assert len(c._from_connect) == 2 and len(c._to_connect) == 2
    data = c.from_connect_data("t", schemas[-1], 2)
    assert c.to_connect_data("t", data).schema is c.to_connect_data("t", data).schema


def test_settings_and_headers():
    with pytest.raises(ConfigException):
        converter(decimal_format="HEX")
    keys = {key.name for key in JsonConverter().config().keys.values()}
    assert keys == {"converter.type", "schemas.enable", "schemas.cache.size", "decimal.format",
                    "replace.null.with.default"}
    header = JsonConverter()
    header.configure({"schemas.enable": "false"})
    assert header.from_connect_header("t", "h", Schema.STRING_SCHEMA, "v") == b'"v"'
    assert header.to_connect_header("t", "h", b'"v"') == SchemaAndValue(None, "v")


def test_unexpected_shapes_are_data_exceptions():
    c = converter()
    pairs = (b'{"schema":{"type":"map","keys":{"type":"array","items":{"type":"int8"}},'
             b'"values":{"type":"int8"}},"payload":[[[1],2]]}')
    with pytest.raises(DataException, match="^Converting byte\\[\\] to Kafka Connect data "
                                            "failed: TypeError: unhashable type"):
        c.to_connect_data("t", pairs)
    with pytest.raises(DataException, match="RecursionError"):
        converter(schemas_enable="false").to_connect_data("t", b"[" * 100_000)
    cycle = []
    cycle.append(cycle)
    with pytest.raises(DataException, match="^Converting Kafka Connect data to byte\\[\\] "
                                            "failed: RecursionError"):
        c.from_connect_data("t", None, cycle)


def test_schema_json_both_ways():
    schema = (SchemaBuilder.struct().name("n.S").version(2).doc("d")
              .field("opt", SchemaBuilder.string().optional().default_value("x").build())
              .field("day", Date.SCHEMA)
              .field("m", SchemaBuilder.map(Schema.STRING_SCHEMA,
                                            SchemaBuilder.array(Schema.FLOAT32_SCHEMA).build())
                     .build())
              .build())
    c = converter()
    text = c.as_json_schema(schema)
    assert text.startswith('{"type":"struct","fields":[{"type":"string","optional":true,'
                           '"default":"x","field":"opt"},')
    assert c.as_connect_schema(json.loads(text)) == schema
    assert c.as_json_schema(None) == "null" and c.as_connect_schema(None) is None
