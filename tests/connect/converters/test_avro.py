"""Connect schemas to Avro as Confluent's AvroData writes them, and Avro schemas (Connect's
own and foreign ones) back to Connect, with values both ways through fastavro."""
from __future__ import annotations

import datetime
import decimal
import io
import json

import fastavro
import pytest

from josefk.connect.api.errors import DataException
from josefk.connect.api.schema import (Date, Decimal, Schema, SchemaBuilder, Struct, Time,
                                       Timestamp)
from josefk.connect.converters.avro import AvroConverter
from josefk.connect.converters.registry import RegisteredSchema


def round_trip(schema, value, converter=None):
    c = converter or AvroConverter()
    translation = c.translate(schema)
    registered = RegisteredSchema(1, translation.text, "AVRO", [])
    data = c.writer(registered, translation)(translation.to_datum(value))
    reader = c.reader(registered)
    return translation, reader.schema, reader.read(data)


def test_record_schema_text():
    schema = (SchemaBuilder.struct().name("com.example.User").version(2)
              .field("id", Schema.INT64_SCHEMA)
              .field("small", Schema.INT8_SCHEMA)
              .field("name", Schema.OPTIONAL_STRING_SCHEMA)
              .field("price", Decimal.schema(2))
              .field("level", SchemaBuilder.int32().default_value(3).build())
              .build())
    assert AvroConverter().translate(schema).text == (
        '{"type":"record","name":"User","namespace":"com.example","fields":['
        '{"name":"id","type":"long"},'
        '{"name":"small","type":{"type":"int","connect.type":"int8"}},'
        '{"name":"name","type":["null","string"],"default":null},'
        '{"name":"price","type":{"type":"bytes","scale":2,"precision":64,"connect.version":1,'
        '"connect.parameters":{"scale":"2"},"connect.name":"org.apache.kafka.connect.data.Decimal",'
        '"logicalType":"decimal"}},'
        '{"name":"level","type":{"type":"int","connect.default":3},"default":3}],'
        '"connect.version":2,"connect.name":"com.example.User"}')


def test_unnamed_structs_and_maps():
    inner = SchemaBuilder.struct().field("a", Schema.STRING_SCHEMA).build()
    schema = (SchemaBuilder.struct().field("inner", inner)
              .field("byid", SchemaBuilder.map(Schema.INT32_SCHEMA, inner).build())
              .field("byname", SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.BYTES_SCHEMA).build())
              .build())
    value = (Struct(schema).put("inner", Struct(inner).put("a", "x"))
             .put("byid", {7: Struct(inner).put("a", "y")}).put("byname", {"k": b"\x01"}))
    translation, back_schema, back = round_trip(schema, value)
    avro = json.loads(translation.text)
    assert (avro["name"], avro["namespace"]) == ("ConnectDefault", "io.confluent.connect.avro")
    assert avro["fields"][0]["type"]["name"] == "ConnectDefault2"
    assert avro["fields"][1]["type"]["items"]["name"] == "MapEntry"
    assert avro["fields"][2]["type"] == {"type": "map", "values": "bytes"}
    assert translation.record_name == "io.confluent.connect.avro.ConnectDefault"
    assert back_schema == schema and back == value


def test_logical_types_and_metadata_round_trip():
    schema = (SchemaBuilder.struct().name("r.Rec").doc("doc").parameter("p", "v")
              .field("price", Decimal.schema(3)).field("day", Date.SCHEMA)
              .field("at", Time.SCHEMA).field("ts", Timestamp.SCHEMA)
              .field("tiny", Schema.INT16_SCHEMA).field("f", Schema.FLOAT32_SCHEMA)
              .field("opt", SchemaBuilder.int64().optional().default_value(9).build())
              .build())
    value = (Struct(schema).put("price", decimal.Decimal("1.250"))
             .put("day", datetime.date(2024, 3, 1)).put("at", datetime.time(1, 2, 3, 4000))
             .put("ts", datetime.datetime(2024, 3, 1, 1, 2, 3, 4000,
                                          tzinfo=datetime.timezone.utc))
             .put("tiny", -5).put("f", 1.5))
    _translation, back_schema, back = round_trip(schema, value)
    assert back_schema == schema
    assert back == value.put("opt", 9)


def test_without_connect_meta_data():
    c = AvroConverter()
    c.configure({"schema.registry.url": "http://127.0.0.1:1", "connect.meta.data": "false"},
                False)
    schema = SchemaBuilder.struct().name("a.B").version(1).field("x", Schema.INT8_SCHEMA).build()
    assert AvroConverter().translate(SchemaBuilder.int16().name("n").doc("d").build()).text == \
        '{"type":"int","connect.doc":"d","connect.name":"n","connect.type":"int16"}'
    assert c.translate(schema).text == \
        '{"type":"record","name":"B","namespace":"a","fields":[{"name":"x","type":"int"}]}'


def test_foreign_schema_to_connect():
    avro = {"type": "record", "name": "Ev", "namespace": "x", "fields": [
        {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["A", "B"]}},
        {"name": "raw", "type": {"type": "fixed", "name": "Raw", "size": 2}},
        {"name": "opt", "type": ["null", "Kind"], "default": None},
        {"name": "m", "type": {"type": "map", "values": "double"}}]}
    registered = RegisteredSchema(3, json.dumps(avro), "AVRO", [])
    reader = AvroConverter().reader(registered)
    assert reader.schema.name == "x.Ev"
    assert reader.schema.field("opt").schema == Schema.OPTIONAL_STRING_SCHEMA
    assert reader.schema.field("raw").schema == Schema.BYTES_SCHEMA
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(avro),
                               {"kind": "B", "raw": b"ab", "opt": "A", "m": {"z": 0.5}})
    value = reader.read(out.getvalue())
    assert (value.get("kind"), value.get("raw"), value.get("opt"), value.get("m")) == (
        "B", b"ab", "A", {"z": 0.5})
    with pytest.raises(DataException, match="Multiple union schemas map to the Connect union "
                                            "field name int"):
        AvroConverter().reader(RegisteredSchema(4, '["int",{"type":"int"}]', "AVRO", []))


def test_general_unions_as_confluent_union_structs():
    avro = {"type": "record", "name": "E", "namespace": "x", "fields": [
        {"name": "u", "type": ["null", "int", "string",
                               {"type": "record", "name": "A", "fields": [
                                   {"name": "a", "type": "int"}]},
                               {"type": "record", "name": "B", "fields": [
                                   {"name": "b", "type": "string"}]}]}]}
    c = AvroConverter()
    reader = c.reader(RegisteredSchema(1, json.dumps(avro), "AVRO", []))
    union = reader.schema.field("u").schema
    assert (union.name, union.optional, [f.name for f in union.fields()]) == (
        "io.confluent.connect.avro.Union", True, ["int", "string", "A", "B"])
    parsed = fastavro.parse_schema(avro)
    seen = []
    for datum in (5, "s", ("x.A", {"a": 1}), ("x.B", {"b": "q"}), None):
        out = io.BytesIO()
        fastavro.schemaless_writer(out, parsed, {"u": datum})
        value = reader.read(out.getvalue()).get("u")
        seen.append(None if value is None else
                    [(f.name, value.get(f)) for f in union.fields() if value.get(f) is not None])
    assert seen[:2] == [[("int", 5)], [("string", "s")]]
    assert seen[2][0][0] == "A" and seen[2][0][1].get("a") == 1
    assert seen[3][0][0] == "B" and seen[3][0][1].get("b") == "q"
    assert seen[4] is None
    translation = c.translate(reader.schema)
    assert json.loads(translation.text)["fields"][0]["type"][:3] == ["null", "int", "string"]
    value = reader.read(b"\x02\x0a")  # branch 1 (int), 5
    registered = RegisteredSchema(2, translation.text, "AVRO", [])
    data = c.writer(registered, translation)(translation.to_datum(value))
    assert data == b"\x02\x0a" and c.reader(registered).read(data) == value
