"""The transforms that move a key's or value's fields around: ValueToKey (the key made of some
of the value's fields), ExtractField (the key or value replaced by one of its fields; nested
paths with ``field.syntax.version=V2``, KIP-821) and HoistField (the key or value wrapped in a
struct or map of one field)."""
from __future__ import annotations

from josefk.connect.api.config import ConfigDef, ConfigException, Importance, Type, ValidString
from josefk.connect.api.errors import DataException
from josefk.connect.api.schema import Field, Schema, SchemaBuilder, Struct
from josefk.connect.api.schema import Type as SchemaType
from josefk.connect.transforms.util import (REPLACE_NULL_WITH_DEFAULT_CONFIG,
                                            NonEmptyListValidator, SchemaCache, Transform,
                                            define_replace_null_with_default, field_value,
                                            key_and_value, require_map, require_map_or_null,
                                            require_struct, require_struct_or_null)

FIELDS, FIELD = "fields", "field"
FIELD_SYNTAX_VERSION = "field.syntax.version"
FIELD_SYNTAX_VERSION_DOC = (
    "Defines the version of the syntax to access fields. If set to `V1`, then the field paths "
    "are limited to access the elements at the root level of the struct or map. If set to `V2`, "
    "the syntax will support accessing nested elements. To access nested elements, dotted "
    "notation is used. If dots are already included in the field name, then backtick pairs can "
    "be used to wrap field names containing dots. E.g. to access the subfield `baz` from a field "
    "named \"foo.bar\" in a struct/map the following format can be used to access its elements: "
    "\"`foo.bar`.baz\".")


class ValueToKey(Transform):
    PURPOSE = "copying fields from value to key"
    CONFIG_DEF = define_replace_null_with_default(ConfigDef().define(
        FIELDS, Type.LIST, validator=NonEmptyListValidator(), importance=Importance.HIGH,
        documentation="Field names on the record value to extract as the record key."))

    def configure(self, configs: dict) -> None:
        config = self.CONFIG_DEF.parse(configs)
        self.fields = config[FIELDS]
        self.replace_null_with_default = config[REPLACE_NULL_WITH_DEFAULT_CONFIG]
        self._schemas = SchemaCache()

    def apply(self, record):
        if record.value_schema is None:
            value = require_map(record.value, self.PURPOSE)
            key = {name: value.get(name) for name in self.fields}
            return record.new_record(key_schema=None, key=key)
        value = require_struct(record.value, self.PURPOSE)
        key_schema = self._schemas.get(value.schema, self._key_schema)
        key = Struct(key_schema)
        for name in self.fields:
            key.put(name, field_value(value, name, self.replace_null_with_default))
        return record.new_record(key_schema=key_schema, key=key)

    def _key_schema(self, value_schema: Schema) -> Schema:
        builder = SchemaBuilder.struct()
        for name in self.fields:
            field = value_schema.field(name)
            if field is None:
                raise DataException("Field does not exist: " + name)
            builder.field(name, field.schema)
        return builder.build()


def _incomplete_backtick(path: str, at: int):
    return ConfigException(f"Incomplete backtick pair in path: [{path}], consider adding a "
                           f"backslash before backtick at position {at} to escape it")


def field_path_v2(path: str) -> list[str]:
    """KIP-821's steps of a dotted path: a step wrapped in backticks may hold dots, and a
    backtick escaped by a backslash before a dot stays in the name."""
    steps: list[str] = []
    i, n = 0, len(path)
    while 0 <= i < n:
        if path[i] != "`":
            dot = path.find(".", i)
            steps.append(path[i:dot] if dot >= 0 else path[i:])
            i = dot + 1 if dot >= 0 else n
            continue
        opened = i
        i += 1
        start, name = i, []
        while True:
            i = path.find("`", i)
            if i == -1:
                raise _incomplete_backtick(path, opened)
            escaped = path[i - 1] == "\\"
            if i >= n - 1:
                if escaped:
                    raise _incomplete_backtick(path, opened)
                name.append(path[start:i])
                steps.append("".join(name))
                i += 1
                break
            if path[i + 1] != ".":
                i += 1
                continue
            if escaped:
                name.append(path[start:i - 1] + "`")
                i += 1
                start = i
                continue
            name.append(path[start:i])
            steps.append("".join(name))
            i += 2
            break
    if path.endswith("."):
        steps.append("")
    return steps


class SingleFieldPath:
    """A field named by its steps from the top of a struct or map."""

    __slots__ = ("steps",)

    def __init__(self, path: str, version: str):
        self.steps = [path] if version == "V1" else field_path_v2(path)

    def field_from(self, schema: Schema) -> Field | None:
        current = schema
        for step in self.steps[:-1]:
            field = current.field(step) if current.type is SchemaType.STRUCT else None
            if field is None:
                return None
            current = field.schema
        return current.field(self.steps[-1]) if current.type is SchemaType.STRUCT else None

    def value_from_struct(self, struct: Struct, replace_null_with_default: bool = True):
        current = struct
        for step in self.steps[:-1]:
            if current.schema.field(step) is None:
                return None
            current = require_struct_or_null(current.get(step), "nested field access")
            if current is None:
                return None
        if current.schema.field(self.steps[-1]) is None:
            return None
        return field_value(current, self.steps[-1], replace_null_with_default)

    def value_from_map(self, value: dict):
        current = value
        for step in self.steps[:-1]:
            current = require_map_or_null(current.get(step), "nested field access")
            if current is None:
                return None
        return current.get(self.steps[-1])


@key_and_value
class ExtractField(Transform):
    PURPOSE = "field extraction"
    CONFIG_DEF = define_replace_null_with_default(
        ConfigDef()
        .define(FIELD, Type.STRING, importance=Importance.MEDIUM,
                documentation="Field name to extract.")
        .define(FIELD_SYNTAX_VERSION, Type.STRING, "V1",
                ValidString(["V1", "V2"], case_sensitive=False), Importance.HIGH,
                FIELD_SYNTAX_VERSION_DOC))

    def configure(self, configs: dict) -> None:
        config = self.CONFIG_DEF.parse(configs)
        self.original_path = config[FIELD]
        self.field_path = SingleFieldPath(self.original_path, config[FIELD_SYNTAX_VERSION].upper())
        self.replace_null_with_default = config[REPLACE_NULL_WITH_DEFAULT_CONFIG]

    def apply(self, record):
        schema = self.operating_schema(record)
        if schema is None:
            value = require_map_or_null(self.operating_value(record), self.PURPOSE)
            return self.new_record(record, None,
                                   None if value is None else self.field_path.value_from_map(value))
        value = require_struct_or_null(self.operating_value(record), self.PURPOSE)
        field = self.field_path.field_from(schema) if schema.type is SchemaType.STRUCT else None
        if field is None:
            raise DataException("Unknown field: " + self.original_path)
        return self.new_record(record, field.schema, None if value is None else
                               self.field_path.value_from_struct(
                                   value, self.replace_null_with_default))


@key_and_value
class HoistField(Transform):
    CONFIG_DEF = ConfigDef().define(
        FIELD, Type.STRING, importance=Importance.MEDIUM,
        documentation="Field name for the single field that will be created in the resulting "
                      "Struct or Map.")

    def configure(self, configs: dict) -> None:
        self.field_name = self.CONFIG_DEF.parse(configs)[FIELD]
        self._schemas = SchemaCache()

    def apply(self, record):
        schema = self.operating_schema(record)
        value = self.operating_value(record)
        if schema is None:
            return self.new_record(record, None, {self.field_name: value})
        updated_schema = self._schemas.get(
            schema, lambda s: SchemaBuilder.struct().field(self.field_name, s).build())
        return self.new_record(record, updated_schema,
                               Struct(updated_schema).put(self.field_name, value))
