"""InsertField: the record's topic, partition, offset (sink records), timestamp or a static
string as fields of its key or value (``InsertField$Key`` / ``InsertField$Value``). A field
name ending in ``!`` makes the inserted field required, ``?`` (the default) optional."""
from __future__ import annotations

from typing import NamedTuple

from josefk.connect.api.config import ConfigDef, ConfigException, Importance, Type
from josefk.connect.api.schema import Schema, SchemaBuilder, Struct, Timestamp
from josefk.connect.transforms.util import (REPLACE_NULL_WITH_DEFAULT_CONFIG, SchemaCache,
                                            Transform, copy_schema_basics,
                                            define_replace_null_with_default, field_value,
                                            key_and_value, require_map, require_sink_record,
                                            require_struct)

TOPIC_FIELD, PARTITION_FIELD, OFFSET_FIELD = "topic.field", "partition.field", "offset.field"
TIMESTAMP_FIELD, STATIC_FIELD, STATIC_VALUE = "timestamp.field", "static.field", "static.value"
_OPTIONALITY_DOC = ("Suffix with <code>!</code> to make this a required field, or "
                    "<code>?</code> to keep it optional (the default).")
PURPOSE = "field insertion"
_OPTIONAL_TIMESTAMP = Timestamp.builder().optional().build()


class InsertionSpec(NamedTuple):
    name: str
    optional: bool

    @classmethod
    def parse(cls, spec: str | None) -> "InsertionSpec | None":
        if spec is None:
            return None
        if spec.endswith("?"):
            return cls(spec[:-1], True)
        if spec.endswith("!"):
            return cls(spec[:-1], False)
        return cls(spec, True)


@key_and_value
class InsertField(Transform):
    CONFIG_DEF = define_replace_null_with_default(
        ConfigDef()
        .define(TOPIC_FIELD, Type.STRING, None, importance=Importance.MEDIUM,
                documentation="Field name for Kafka topic. " + _OPTIONALITY_DOC)
        .define(PARTITION_FIELD, Type.STRING, None, importance=Importance.MEDIUM,
                documentation="Field name for Kafka partition. " + _OPTIONALITY_DOC)
        .define(OFFSET_FIELD, Type.STRING, None, importance=Importance.MEDIUM,
                documentation="Field name for Kafka offset - only applicable to sink "
                              "connectors.<br/>" + _OPTIONALITY_DOC)
        .define(TIMESTAMP_FIELD, Type.STRING, None, importance=Importance.MEDIUM,
                documentation="Field name for record timestamp. " + _OPTIONALITY_DOC)
        .define(STATIC_FIELD, Type.STRING, None, importance=Importance.MEDIUM,
                documentation="Field name for static data field. " + _OPTIONALITY_DOC)
        .define(STATIC_VALUE, Type.STRING, None, importance=Importance.MEDIUM,
                documentation="Static field value, if field name configured."))

    def configure(self, configs: dict) -> None:
        config = self.CONFIG_DEF.parse(configs)
        self.topic_field = InsertionSpec.parse(config[TOPIC_FIELD])
        self.partition_field = InsertionSpec.parse(config[PARTITION_FIELD])
        self.offset_field = InsertionSpec.parse(config[OFFSET_FIELD])
        self.timestamp_field = InsertionSpec.parse(config[TIMESTAMP_FIELD])
        self.static_field = InsertionSpec.parse(config[STATIC_FIELD])
        self.static_value = config[STATIC_VALUE]
        self.replace_null_with_default = config[REPLACE_NULL_WITH_DEFAULT_CONFIG]
        if not any((self.topic_field, self.partition_field, self.offset_field,
                    self.timestamp_field, self.static_field)):
            raise ConfigException("No field insertion configured")
        if self.static_field is not None and self.static_value is None:
            raise ConfigException(STATIC_VALUE, None, "No value specified for static field: "
                                  + self.static_field.name)
        self._schemas = SchemaCache()

    def _insertions(self, record, timestamp_as_date: bool) -> list[tuple[str, object]]:
        out = []
        if self.topic_field is not None:
            out.append((self.topic_field.name, record.topic))
        if self.partition_field is not None and record.kafka_partition is not None:
            out.append((self.partition_field.name, record.kafka_partition))
        if self.offset_field is not None:
            out.append((self.offset_field.name,
                        require_sink_record(record, PURPOSE).kafka_offset))
        if self.timestamp_field is not None and record.timestamp is not None:
            out.append((self.timestamp_field.name,
                        Timestamp.to_logical(None, record.timestamp) if timestamp_as_date
                        else record.timestamp))
        if self.static_field is not None:
            out.append((self.static_field.name, self.static_value))
        return out

    def apply(self, record):
        if self.operating_schema(record) is None:
            value = dict(require_map(self.operating_value(record), PURPOSE))
            value.update(self._insertions(record, timestamp_as_date=False))
            return self.new_record(record, None, value)
        value = require_struct(self.operating_value(record), PURPOSE)
        schema = self._schemas.get(value.schema, self._updated_schema)
        updated = Struct(schema)
        for field in value.schema.fields():
            updated.put(field.name, field_value(value, field.name,
                                                self.replace_null_with_default))
        for name, inserted in self._insertions(record, timestamp_as_date=True):
            updated.put(name, inserted)
        return self.new_record(record, schema, updated)

    def _updated_schema(self, schema: Schema) -> Schema:
        builder = copy_schema_basics(schema, SchemaBuilder.struct())
        for field in schema.fields():
            builder.field(field.name, field.schema)
        for spec, optional, required in (
                (self.topic_field, Schema.OPTIONAL_STRING_SCHEMA, Schema.STRING_SCHEMA),
                (self.partition_field, Schema.OPTIONAL_INT32_SCHEMA, Schema.INT32_SCHEMA),
                (self.offset_field, Schema.OPTIONAL_INT64_SCHEMA, Schema.INT64_SCHEMA),
                (self.timestamp_field, _OPTIONAL_TIMESTAMP, Timestamp.SCHEMA),
                (self.static_field, Schema.OPTIONAL_STRING_SCHEMA, Schema.STRING_SCHEMA)):
            if spec is not None:
                builder.field(spec.name, optional if spec.optional else required)
        return builder.build()
