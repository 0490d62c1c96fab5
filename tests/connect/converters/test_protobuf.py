"""Connect schemas to .proto as the ProtobufConverter writes them, Confluent's message-index
list, and messages back to Connect."""
from __future__ import annotations

import datetime
import decimal

import pytest

from josefk.connect.api.errors import DataException
from josefk.connect.api.schema import Decimal as DecimalType
from josefk.connect.api.schema import Schema, SchemaBuilder, Struct, Timestamp
from josefk.connect.converters.protobuf import (ProtobufConverter, _message_indexes,
                                                _read_varint)
from josefk.connect.converters.registry import RegisteredSchema

ITEM = SchemaBuilder.struct().name("shop.Item").field("sku", Schema.STRING_SCHEMA).build()
ORDER = (SchemaBuilder.struct().name("shop.Order")
         .field("id", Schema.INT64_SCHEMA).field("note", Schema.OPTIONAL_STRING_SCHEMA)
         .field("items", SchemaBuilder.array(ITEM).build())
         .field("qty", SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.INT32_SCHEMA).build())
         .field("at", Timestamp.SCHEMA).build())


def converter(**settings) -> ProtobufConverter:
    c = ProtobufConverter()
    c.configure({"schema.registry.url": "http://127.0.0.1:1",
                 **{k.replace("_", "."): v for k, v in settings.items()}}, False)
    return c


def test_proto_text():
    assert ProtobufConverter().translate(ORDER).text == (
        'syntax = "proto3";\n'
        "package shop;\n"
        'import "google/protobuf/timestamp.proto";\n'
        "message Order {\n"
        "  int64 id = 1;\n"
        "  string note = 2;\n"
        "  repeated Item items = 3;\n"
        "  map<string, int32> qty = 4;\n"
        "  .google.protobuf.Timestamp at = 5;\n"
        "  message Item {\n"
        "    string sku = 1;\n"
        "  }\n"
        "}\n")


def test_nullable_fields():
    labelled = converter(optional_for_nullables="true").translate(ORDER).text
    assert "  optional string note = 2;\n" in labelled
    wrapped = converter(wrapper_for_nullables="true").translate(ORDER).text
    assert 'import "google/protobuf/wrappers.proto";\n' in wrapped
    assert "  .google.protobuf.StringValue note = 2;\n" in wrapped
    for c in (converter(wrapper_for_nullables="true"), ProtobufConverter()):
        translation = c.translate(ORDER)
        registered = RegisteredSchema(1, translation.text, "PROTOBUF", [])
        write, reader = c.writer(registered, translation), c.reader(registered)
        for note in ("hi", None):
            value = (Struct(ORDER).put("id", 1).put("items", []).put("qty", {}).put("note", note)
                     .put("at", datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)))
            expected = note if c.wrappers or note else ""  # a plain field reads its zero value
            assert reader.read(write(translation.to_datum(value))).get("note") == expected


def test_values_round_trip():
    c = converter(optional_for_nullables="true")
    translation = c.translate(ORDER)
    registered = RegisteredSchema(1, translation.text, "PROTOBUF", [])
    at = datetime.datetime(2024, 1, 2, 3, 4, 5, 6000, tzinfo=datetime.timezone.utc)
    value = (Struct(ORDER).put("id", 7).put("items", [Struct(ITEM).put("sku", "a")])
             .put("qty", {"a": 2}).put("at", at))
    data = c.writer(registered, translation)(translation.to_datum(value))
    assert data[:1] == b"\x00"
    reader = c.reader(registered)
    back = reader.read(data)
    assert reader.schema.name == "shop.Order"
    assert reader.schema.field("note").schema == Schema.OPTIONAL_STRING_SCHEMA
    assert (back.get("id"), back.get("note"), back.get("qty"), back.get("at")) == (
        7, None, {"a": 2}, at)
    assert back.get("items")[0].get("sku") == "a"


def test_decimals_as_confluent_decimal_messages():
    schema = SchemaBuilder.struct().name("p.Price").field("amount", DecimalType.schema(2)).build()
    c = ProtobufConverter()
    translation = c.translate(schema)
    assert 'import "confluent/type/decimal.proto";' in translation.text
    assert "  .confluent.type.Decimal amount = 1;" in translation.text
    registered = RegisteredSchema(1, translation.text, "PROTOBUF", [])
    for amount in ("1.50", "-0.01", "0.00", "123456789012345678901234.56"):
        data = c.writer(registered, translation)(
            Struct(schema).put("amount", decimal.Decimal(amount)))
        assert c.reader(registered).read(data).get("amount") == decimal.Decimal(amount)
    # -0.01: unscaled -1 as one byte, precision 1, scale 2 (fields 1, 2, 3)
    assert c.writer(registered, translation)(Struct(schema).put(
        "amount", decimal.Decimal("-0.01"))) == b"\x00\x0a\x07\x0a\x01\xff\x10\x01\x18\x02"


def test_nested_message_by_index_path():
    c = ProtobufConverter()
    translation = c.translate(SchemaBuilder.struct().name("shop.Order").field(
        "items", SchemaBuilder.array(ITEM).build()).build())
    registered = RegisteredSchema(1, translation.text, "PROTOBUF", [])
    reader = c.reader(registered)
    item = reader.read(_message_indexes([0, 0]) + b"\x0a\x01z")
    assert item.get("sku") == "z" and item.schema.name == "shop.Order.Item"


def test_message_indexes():
    assert _message_indexes([0]) == b"\x00"
    assert _message_indexes([1, 2]) == b"\x04\x02\x04"
    count, pos = _read_varint(b"\x04\x02\x04", 0)
    assert (count, _read_varint(b"\x04\x02\x04", pos)) == (2, (1, 2))


def test_unsupported_schemas():
    with pytest.raises(DataException, match="needs a struct schema"):
        ProtobufConverter().translate(Schema.STRING_SCHEMA)
    bad = SchemaBuilder.struct().field("m", SchemaBuilder.map(
        SchemaBuilder.array(Schema.INT8_SCHEMA).build(), Schema.INT8_SCHEMA).build()).build()
    with pytest.raises(DataException, match="Protobuf maps need"):
        ProtobufConverter().translate(bad)
