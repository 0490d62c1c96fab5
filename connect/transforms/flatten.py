"""Flatten: nested structs (with schemas) or maps (without) become one level of fields named
by their path joined with ``delimiter``; arrays and primitives are kept as they are."""
from __future__ import annotations

from josefk.connect.api.config import ConfigDef, Importance, Type
from josefk.connect.api.errors import DataException
from josefk.connect.api.schema import Schema, SchemaBuilder, Struct
from josefk.connect.api.schema import Type as SchemaType
from josefk.connect.transforms.util import (SchemaCache, Transform, class_name,
                                            copy_schema_basics, key_and_value, require_map,
                                            require_struct_or_null)

DELIMITER = "delimiter"
PURPOSE = "flattening"
_KEPT = frozenset(t for t in SchemaType if t.is_primitive) | {SchemaType.ARRAY}
_SCHEMALESS_KEPT = (bool, int, float, str, bytes, bytearray, memoryview, list)


@key_and_value
class Flatten(Transform):
    CONFIG_DEF = ConfigDef().define(
        DELIMITER, Type.STRING, ".", importance=Importance.MEDIUM,
        documentation="Delimiter to insert between field names from the input record when "
                      "generating field names for the output record")

    def configure(self, configs: dict) -> None:
        self.delimiter = self.CONFIG_DEF.parse(configs)[DELIMITER]
        self._schemas = SchemaCache()

    def _name(self, prefix: str, name) -> str:
        return str(name) if not prefix else f"{prefix}{self.delimiter}{name}"

    def apply(self, record):
        value = self.operating_value(record)
        if value is None:
            return record
        schema = self.operating_schema(record)
        if schema is None:
            flat: dict = {}
            self._flatten_map(require_map(value, PURPOSE), "", flat)
            return self.new_record(record, None, flat)
        value = require_struct_or_null(value, PURPOSE)
        updated_schema = self._schemas.get(schema, self._updated_schema)
        updated = Struct(updated_schema)
        self._flatten_struct(value, "", updated)
        return self.new_record(record, updated_schema, updated)

    def _flatten_map(self, value: dict, prefix: str, out: dict) -> None:
        for key, item in value.items():
            name = self._name(prefix, key)
            if item is None or isinstance(item, _SCHEMALESS_KEPT):
                out[name] = item
            elif isinstance(item, dict):
                self._flatten_map(item, name, out)
            else:
                raise DataException(f"Flatten transformation does not support "
                                    f"{class_name(item)} for record without schemas (for field "
                                    f"{name}).")

    def _updated_schema(self, schema: Schema) -> Schema:
        builder = copy_schema_basics(schema, SchemaBuilder.struct())
        self._flatten_schema(schema, "", builder, schema.optional)
        return builder.build()

    def _flatten_schema(self, schema: Schema, prefix: str, builder: SchemaBuilder,
                        optional: bool) -> None:
        """Each leaf field under its joined name, optional where it or a struct above it is,
        with its own default (a struct cannot have a default of its own schema here)."""
        for field in schema.fields():
            name = self._name(prefix, field.name)
            field_optional = optional or field.schema.optional
            if field.schema.type in _KEPT:
                flat = copy_schema_basics(field.schema)
                if field_optional:
                    flat.optional()
                if field.schema.default is not None:
                    flat.default_value(field.schema.default)
                builder.field(name, flat.build())
            elif field.schema.type is SchemaType.STRUCT:
                self._flatten_schema(field.schema, name, builder, field_optional)
            else:
                raise DataException(f"Flatten transformation does not support "
                                    f"{field.schema.type.name} for record with schemas (for "
                                    f"field {name}).")

    def _flatten_struct(self, value: Struct | None, prefix: str, out: Struct) -> None:
        if value is None:
            return
        for field in value.schema.fields():
            name = self._name(prefix, field.name)
            if field.schema.type is SchemaType.STRUCT:
                self._flatten_struct(value.get_without_default(field.name), name, out)
            else:
                out.put(name, value.get_without_default(field.name))
