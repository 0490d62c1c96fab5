import datetime

import pytest

from josefk.connect.api import ConfigException, DataException, Schema, SchemaBuilder, Struct
from josefk.connect.api.schema import Timestamp
from josefk.connect.transforms.insert_field import InsertField

from tests.connect.transforms.records import configured, sink, source

ALL = {"topic.field": "topic_field!", "partition.field": "partition_field",
       "offset.field": "offset_field!", "timestamp.field": "timestamp_field?",
       "static.field": "instance_id", "static.value": "my-instance-id"}


def insert(side=InsertField.Value, **settings):
    transform = side()
    transform.configure(settings)
    return transform


def test_schemaless_value_gets_every_field():
    record = sink({"magic": 42}, timestamp=1_700_000_000_000, partition=3, offset=7)
    out = insert(**ALL).apply(record)
    assert out.value == {"magic": 42, "topic_field": "test", "partition_field": 3,
                         "offset_field": 7, "timestamp_field": 1_700_000_000_000,
                         "instance_id": "my-instance-id"}
    assert out.key == record.key and out.value_schema is None
    assert record.value == {"magic": 42}  # the input is left as it was


def test_with_schema_fields_appended_with_their_optionality():
    schema = SchemaBuilder.struct().name("name").version(1).doc("doc").field(
        "magic", Schema.OPTIONAL_INT64_SCHEMA).build()
    value = Struct(schema).put("magic", 42)
    out = insert(**ALL).apply(sink(value, schema, timestamp=1_700_000_000_000, offset=7))
    updated = out.value_schema
    assert (updated.name, updated.version, updated.doc) == ("name", 1, "doc")
    assert [f.name for f in updated.fields()] == ["magic", "topic_field", "partition_field",
                                                  "offset_field", "timestamp_field",
                                                  "instance_id"]
    assert updated.field("topic_field").schema == Schema.STRING_SCHEMA
    assert updated.field("partition_field").schema == Schema.OPTIONAL_INT32_SCHEMA
    assert updated.field("offset_field").schema == Schema.INT64_SCHEMA
    assert updated.field("timestamp_field").schema == Timestamp.builder().optional().build()
    assert updated.field("instance_id").schema == Schema.OPTIONAL_STRING_SCHEMA
    assert out.value.get("magic") == 42
    assert out.value.get("offset_field") == 7
    assert out.value.get("timestamp_field") == datetime.datetime(
        2023, 11, 14, 22, 13, 20, tzinfo=datetime.timezone.utc)
    assert out.value.get("instance_id") == "my-instance-id"


def test_the_updated_schema_is_computed_once_per_input_schema():
    schema = SchemaBuilder.struct().field("a", Schema.INT32_SCHEMA).build()
    transform = insert(**{"topic.field": "t"})
    first = transform.apply(source(Struct(schema).put("a", 1), schema))
    equal_schema = SchemaBuilder.struct().field("a", Schema.INT32_SCHEMA).build()
    second = transform.apply(source(Struct(equal_schema).put("a", 2), equal_schema))
    assert second.value_schema is first.value_schema
    assert len(transform._schemas) == 1


def test_key_variant_changes_only_the_key():
    out = insert(InsertField.Key, **{"topic.field": "t"}).apply(
        source({"v": 1}, key={"k": 1}))
    assert out.key == {"k": 1, "t": "test"} and out.value == {"v": 1}


def test_missing_partition_and_timestamp_are_left_out():
    out = insert(**{"partition.field": "p", "timestamp.field": "ts"}).apply(
        source({"a": 1}, partition=None))
    assert out.value == {"a": 1}


def test_replace_null_with_default():
    schema = SchemaBuilder.struct().field(
        "opt", SchemaBuilder.int32().optional().default_value(5).build()).build()
    value = Struct(schema)
    replaced = insert(**{"topic.field": "t"}).apply(source(value, schema)).value
    assert replaced.get_without_default("opt") == 5
    kept = insert(**{"topic.field": "t", "replace.null.with.default": "false"}).apply(
        source(value, schema)).value
    assert kept.get_without_default("opt") is None


def test_offset_needs_a_sink_record():
    with pytest.raises(DataException, match=r"^Only SinkRecord supported for \[field insertion\]"
                                            r", found: josefk.connect.api.records.SourceRecord$"):
        insert(**{"offset.field": "o"}).apply(source({"a": 1}))


def test_errors_for_values_of_the_wrong_shape():
    with pytest.raises(DataException, match=r"^Only Map objects supported in absence of schema "
                                            r"for \[field insertion\], found: null$"):
        insert(**{"topic.field": "t"}).apply(source(None))
    with pytest.raises(DataException, match=r"^Only Struct objects supported for \[field "
                                            r"insertion\], found: str$"):
        insert(**{"topic.field": "t"}).apply(source("text", Schema.STRING_SCHEMA))


def test_configuration_errors():
    with pytest.raises(ConfigException, match="^No field insertion configured$"):
        insert()
    with pytest.raises(ConfigException, match="^Invalid value null for configuration "
                                              "static.value: No value specified for static "
                                              "field: s$"):
        insert(**{"static.field": "s"})
    with pytest.raises(ConfigException, match="replace.null.with.default"):
        configured(InsertField.Value, topic_field="t", replace_null_with_default="maybe")
