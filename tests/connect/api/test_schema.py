import datetime
import decimal

import pytest

from josefk.connect.api import (Date, Decimal, DataException, Schema, SchemaBuilder, Struct, Time,
                                Timestamp, Type)
from josefk.connect.api.schema import validate_value

PERSON = (SchemaBuilder.struct().name("com.example.Person").version(2).doc("a person")
          .field("id", Schema.INT64_SCHEMA)
          .field("name", Schema.OPTIONAL_STRING_SCHEMA)
          .field("tags", SchemaBuilder.array(Schema.STRING_SCHEMA).optional().build())
          .field("score", SchemaBuilder.float64().default_value(1.5).build())
          .build())


def test_a_built_struct_schema_has_its_fields_in_order():
    assert [f.name for f in PERSON.fields()] == ["id", "name", "tags", "score"]
    assert PERSON.field("tags").index == 2
    assert PERSON.field("nope") is None
    assert (PERSON.name, PERSON.version, PERSON.doc, PERSON.optional) == (
        "com.example.Person", 2, "a person", False)


def test_schemas_compare_and_hash_by_value():
    again = (SchemaBuilder.struct().name("com.example.Person").version(2).doc("a person")
             .field("id", Schema.INT64_SCHEMA).field("name", Schema.OPTIONAL_STRING_SCHEMA)
             .field("tags", SchemaBuilder.array(Schema.STRING_SCHEMA).optional().build())
             .field("score", SchemaBuilder.float64().default_value(1.5).build()).build())
    assert again == PERSON and hash(again) == hash(PERSON)
    assert SchemaBuilder.int32().build() == Schema.INT32_SCHEMA
    assert SchemaBuilder.int32().optional().build() == Schema.OPTIONAL_INT32_SCHEMA
    assert Schema.INT32_SCHEMA != Schema.OPTIONAL_INT32_SCHEMA


def test_a_struct_checks_values_as_they_are_put_and_answers_defaults():
    s = Struct(PERSON).put("id", 7).put("tags", ["a"])
    assert s.get("id") == 7 and s.get("name") is None and s.get("score") == 1.5
    assert s.get_without_default("score") is None
    s.validate()
    with pytest.raises(DataException):
        s.put("id", "seven")
    with pytest.raises(DataException):
        s.put("tags", [1])
    with pytest.raises(DataException, match="not a valid field name"):
        s.put("nope", 1)
    with pytest.raises(DataException, match="null used for required"):
        Struct(PERSON).validate()


def test_a_struct_of_values_in_field_order_checks_them_as_put_does():
    s = Struct.of(PERSON, [7, None, ["a"], None])
    assert s == Struct(PERSON).put("id", 7).put("tags", ["a"]) and s.get("score") == 1.5
    with pytest.raises(DataException, match="field \"id\""):
        Struct.of(PERSON, ["seven", None, None, None])
    with pytest.raises(DataException, match="3 values for the 4 fields"):
        Struct.of(PERSON, [7, None, None])


def test_validate_checks_again_what_may_have_changed_since_it_was_put():
    tags = ["a"]
    s = Struct(PERSON).put("id", 7).put("tags", tags)
    s.validate()
    tags.append(1)  # a list changed after its put
    with pytest.raises(DataException, match="element of array"):
        s.validate()
    outer_schema = SchemaBuilder.struct().field("p", PERSON).build()
    inner = Struct(PERSON).put("id", 1)
    outer = Struct(outer_schema).put("p", inner)
    inner.put("tags", ["b"]).validate()
    outer.validate()


@pytest.mark.parametrize("schema, value", [
    (Schema.INT8_SCHEMA, 128), (Schema.INT16_SCHEMA, -32769), (Schema.INT32_SCHEMA, 1 << 31),
    (Schema.INT64_SCHEMA, 1 << 63), (Schema.INT32_SCHEMA, True), (Schema.BOOLEAN_SCHEMA, 1),
    (Schema.STRING_SCHEMA, b"x"), (Schema.BYTES_SCHEMA, "x"), (Schema.FLOAT64_SCHEMA, "1"),
    (SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.INT32_SCHEMA).build(), {"a": "b"}),
])
def test_values_of_the_wrong_type_or_range_are_refused(schema, value):
    with pytest.raises(DataException):
        validate_value(schema, value)


def test_builder_refuses_a_second_name_and_duplicate_fields():
    with pytest.raises(DataException, match="already been set"):
        SchemaBuilder.string().name("a").name("b")
    with pytest.raises(DataException, match="duplication"):
        SchemaBuilder.struct().field("a", Schema.INT8_SCHEMA).field("a", Schema.INT8_SCHEMA)
    with pytest.raises(DataException):
        SchemaBuilder.int32().default_value("x").build()


def test_decimal_is_big_endian_twos_complement_with_the_scale_as_parameter():
    schema = Decimal.schema(2)
    assert schema.type is Type.BYTES and schema.parameters == {"scale": "2"}
    assert Decimal.from_logical(schema, decimal.Decimal("1.50")) == b"\x00\x96"
    assert Decimal.from_logical(schema, decimal.Decimal("-1.50")) == b"\xff\x6a"
    assert Decimal.to_logical(schema, b"\xff\x6a") == decimal.Decimal("-1.50")
    with pytest.raises(DataException, match="mismatching scale"):
        Decimal.from_logical(schema, decimal.Decimal("1.5"))
    validate_value(schema, decimal.Decimal("3.14"))


def test_date_time_and_timestamp_are_epoch_days_and_milliseconds():
    assert Date.from_logical(Date.SCHEMA, datetime.date(2020, 1, 1)) == 18262
    assert Date.to_logical(Date.SCHEMA, 18262) == datetime.date(2020, 1, 1)
    assert Time.from_logical(Time.SCHEMA, datetime.time(1, 2, 3, 4000)) == 3723004
    assert Time.to_logical(Time.SCHEMA, 3723004) == datetime.time(1, 2, 3, 4000)
    moment = datetime.datetime(2020, 1, 1, 0, 0, 1, 500000, tzinfo=datetime.timezone.utc)
    assert Timestamp.from_logical(Timestamp.SCHEMA, moment) == 1577836801500
    assert Timestamp.to_logical(Timestamp.SCHEMA, 1577836801500) == moment
    assert Timestamp.from_logical(Timestamp.SCHEMA, datetime.datetime(1969, 12, 31, 23, 59, 59)) == -1000
    with pytest.raises(DataException):
        Time.to_logical(Time.SCHEMA, 86_400_000)
    assert Timestamp.SCHEMA.name == "org.apache.kafka.connect.data.Timestamp"
