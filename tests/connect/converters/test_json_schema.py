"""Connect schemas to JSON Schema as Confluent's JsonSchemaData writes them, and back."""
from __future__ import annotations

import datetime
import decimal
import json

import pytest

from josefk.connect.api.errors import DataException
from josefk.connect.api.schema import Date, Decimal, Schema, SchemaBuilder, Struct
from josefk.connect.converters.json_schema import JsonSchemaConverter, to_connect
from josefk.connect.converters.registry import RegisteredSchema


def test_schema_text_and_round_trip():
    schema = (SchemaBuilder.struct().name("com.example.User")
              .field("id", Schema.INT64_SCHEMA).field("name", Schema.OPTIONAL_STRING_SCHEMA)
              .field("raw", Schema.BYTES_SCHEMA).field("day", Date.SCHEMA)
              .field("m", SchemaBuilder.map(Schema.INT8_SCHEMA, Schema.STRING_SCHEMA).build())
              .build())
    c = JsonSchemaConverter()
    translation = c.translate(schema)
    assert translation.text == (
        '{"type":"object","properties":{'
        '"id":{"type":"integer","connect.type":"int64","connect.index":0},'
        '"name":{"oneOf":[{"type":"null"},{"type":"string"}],"connect.index":1},'
        '"raw":{"type":"string","connect.type":"bytes","connect.index":2},'
        '"day":{"type":"integer","connect.type":"int32","title":'
        '"org.apache.kafka.connect.data.Date","connect.version":1,"connect.index":3},'
        '"m":{"type":"array","items":{"type":"object","properties":{'
        '"key":{"type":"integer","connect.type":"int8","connect.index":0},'
        '"value":{"type":"string","connect.index":1}}},'
        '"connect.type":"map","connect.index":4}},"title":"com.example.User"}')
    value = (Struct(schema).put("id", 1).put("raw", b"\x00\xff")
             .put("day", datetime.date(1970, 1, 11)).put("m", {1: "a"}))
    registered = RegisteredSchema(1, translation.text, "JSON", [])
    data = c.writer(registered, translation)(translation.to_datum(value))
    assert data == b'{"id":1,"name":null,"raw":"AP8=","day":10,"m":[{"key":1,"value":"a"}]}'
    reader = c.reader(registered)
    assert reader.schema == schema and reader.read(data) == value


def test_decimals():
    schema = SchemaBuilder.struct().field("price", Decimal.schema(2)).build()
    value = Struct(schema).put("price", decimal.Decimal("1.56"))
    for settings, payload in (({}, b'{"price":"AJw="}'),
                              ({"decimal.format": "numeric"}, b'{"price":1.56}')):
        c = JsonSchemaConverter()
        c.configure({"schema.registry.url": "http://127.0.0.1:1", **settings}, False)
        translation = c.translate(schema)
        assert json.loads(translation.text)["properties"]["price"] == {
            "type": "number", "connect.type": "bytes", "title": Decimal.LOGICAL_NAME,
            "connect.version": 1, "connect.parameters": {"scale": "2"}, "connect.index": 0}
        registered = RegisteredSchema(1, translation.text, "JSON", [])
        data = c.writer(registered, translation)(translation.to_datum(value))
        assert data == payload
        assert c.reader(registered).read(data) == value


def test_foreign_schema():
    schema, read = to_connect({"type": "object", "title": "Order", "required": ["id"],
                               "properties": {"id": {"type": "integer"},
                                              "tags": {"type": "array",
                                                       "items": {"type": "string"}},
                                              "meta": {"type": "object",
                                                       "additionalProperties":
                                                           {"type": "number"}},
                                              "note": {"type": ["null", "string"]}}},
                              optional_non_required=True)
    assert schema.field("id").schema == Schema.INT64_SCHEMA
    assert schema.field("note").schema == Schema.OPTIONAL_STRING_SCHEMA
    value = read({"id": 3, "tags": ["a"], "meta": {"x": 1.5}})
    assert (value.get("id"), value.get("tags"), value.get("meta"), value.get("note")) == (
        3, ["a"], {"x": 1.5}, None)
    required_only, _ = to_connect({"type": "object", "properties": {"a": {"type": "string"}}})
    assert required_only.field("a").schema == Schema.STRING_SCHEMA
    with pytest.raises(DataException, match="unsupported JSON Schema"):
        to_connect({"type": "null"})


def test_fail_invalid_schema():
    c = JsonSchemaConverter()
    c.configure({"schema.registry.url": "http://127.0.0.1:1",
                 "json.fail.invalid.schema": "true"}, False)
    schema = SchemaBuilder.struct().field("n", Schema.INT32_SCHEMA).build()
    translation = c.translate(schema)
    strict = json.dumps({"type": "object", "properties": {"n": {"type": "integer",
                                                                "maximum": 5}}})
    write = c.writer(RegisteredSchema(2, strict, "JSON", []), translation)
    assert write({"n": 5}) == b'{"n":5}'
    with pytest.raises(DataException, match="does not match its JSON Schema"):
        write({"n": 6})
