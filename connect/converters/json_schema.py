"""``io.confluent.connect.json.JsonSchemaConverter``: Connect data as JSON through a Schema
Registry holding a JSON Schema, translated as Confluent's JsonSchemaData does: a struct is an
object titled with the schema's name whose properties carry ``connect.index``; an optional
schema is ``oneOf`` null and the type; integers and numbers keep their Connect width in
``connect.type``; bytes are base64 strings; maps with string keys are objects (``connect.type``
map), other maps arrays of key/value objects; the logical types keep their name in ``title``
with ``connect.version`` and ``connect.parameters`` (a decimal is a number schema with
``connect.type`` bytes, its value base64 or, with ``decimal.format`` NUMERIC, a number)."""
from __future__ import annotations

import base64
import decimal
import json

import jsonschema

from josefk.connect.api.config import ConfigDef, Importance, ValidString
from josefk.connect.api.config import Type as ConfigType
from josefk.connect.api.errors import DataException
from josefk.connect.api.schema import (Date, Decimal, Schema, SchemaBuilder, Struct, Time,
                                       Timestamp, Type)
from josefk.connect.converters._java import to_float32
from josefk.connect.converters.json import write_tree
from josefk.connect.converters.registry import (Reader, RegisteredSchema,
                                                SchemaRegistryConverter, Translation, map_datum,
                                                or_default, string_keyed)

FAIL_INVALID_SCHEMA_CONFIG = "json.fail.invalid.schema"
DECIMAL_FORMAT_CONFIG = "decimal.format"
OBJECT_ADDITIONAL_PROPERTIES_CONFIG = "object.additional.properties"
USE_OPTIONAL_FOR_NON_REQUIRED_CONFIG = "use.optional.for.nonrequired"
_LOGICAL = {Decimal.LOGICAL_NAME: Decimal, Date.LOGICAL_NAME: Date, Time.LOGICAL_NAME: Time,
            Timestamp.LOGICAL_NAME: Timestamp}
_JSON_TYPES = {Type.INT8: "integer", Type.INT16: "integer", Type.INT32: "integer",
               Type.INT64: "integer", Type.FLOAT32: "number", Type.FLOAT64: "number",
               Type.BOOLEAN: "boolean", Type.STRING: "string", Type.BYTES: "string"}
_CONNECT_TYPED = (Type.INT8, Type.INT16, Type.INT32, Type.INT64, Type.FLOAT32, Type.FLOAT64,
                  Type.BYTES)
_WIDTHS = {"int8": Type.INT8, "int16": Type.INT16, "int32": Type.INT32, "int64": Type.INT64,
           "float32": Type.FLOAT32, "float64": Type.FLOAT64, "bytes": Type.BYTES}


class _ToJsonSchema:
    """Connect schemas as JSON Schema, and Connect values as JSON-ready trees."""

    def __init__(self, numeric_decimals: bool = False, additional_properties: bool = True):
        self.numeric_decimals = numeric_decimals
        self.additional_properties = additional_properties

    def schema(self, schema: Schema, index: int | None = None) -> dict:
        node = self._non_null(schema)
        if schema.optional:
            node = {"oneOf": [{"type": "null"}, node]}
        if index is not None:
            node["connect.index"] = index
        return node

    def _non_null(self, schema: Schema) -> dict:
        t = schema.type
        if schema.name == Decimal.LOGICAL_NAME:
            node = {"type": "number", "connect.type": "bytes"}
        elif t is Type.STRUCT:
            node = {"type": "object", "properties": {
                f.name: self.schema(f.schema, f.index) for f in schema.fields()}}
            if not self.additional_properties:
                node["additionalProperties"] = False
        elif t is Type.ARRAY:
            node = {"type": "array", "items": self.schema(schema.value_schema)}
        elif t is Type.MAP:
            if string_keyed(schema):
                node = {"type": "object",
                        "additionalProperties": self.schema(schema.value_schema),
                        "connect.type": "map"}
            else:
                node = {"type": "array", "items": {"type": "object", "properties": {
                    "key": self.schema(schema.key_schema, 0),
                    "value": self.schema(schema.value_schema, 1)}}, "connect.type": "map"}
        else:
            node = {"type": _JSON_TYPES[t]}
            if t in _CONNECT_TYPED:
                node["connect.type"] = t.value
        if schema.name is not None:
            node["title"] = schema.name
        if schema.version is not None:
            node["connect.version"] = schema.version
        if schema.doc is not None:
            node["description"] = schema.doc
        if schema.parameters:
            node["connect.parameters"] = dict(schema.parameters)
        if schema.default is not None:
            node["default"] = self.datum(schema)(schema.default)
        return node

    def datum(self, schema: Schema):
        """The function from a Connect value of ``schema`` to its JSON-ready form."""
        logical = _LOGICAL.get(schema.name)
        t = schema.type
        if logical is Decimal:
            if self.numeric_decimals:
                def convert(value):
                    return value
            else:
                def convert(value):
                    return base64.b64encode(Decimal.from_logical(schema, value)).decode()
        elif logical is not None:
            def convert(value):
                return logical.from_logical(schema, value)
        elif t is Type.BYTES:
            def convert(value):
                return base64.b64encode(value).decode("ascii")
        elif t is Type.STRUCT:
            fields = [(f, self.datum(f.schema)) for f in schema.fields()]

            def convert(value):
                if not isinstance(value, Struct):
                    raise DataException(f"Invalid value for STRUCT: {type(value).__name__}")
                return {f.name: c(value.get(f)) for f, c in fields}
        elif t is Type.ARRAY:
            item = self.datum(schema.value_schema)

            def convert(value):
                return [item(v) for v in value]
        elif t is Type.MAP:
            convert = map_datum(schema, self.datum(schema.key_schema),
                                self.datum(schema.value_schema))
        else:
            def convert(value):
                return value
        return or_default(schema, convert)


def _nullable(node: dict) -> tuple[dict, bool]:
    """The non-null part of ``node`` and whether null is allowed."""
    for key in ("oneOf", "anyOf"):
        branches = node.get(key)
        if isinstance(branches, list) and {"type": "null"} in branches:
            rest = [b for b in branches if b != {"type": "null"}]
            if len(rest) == 1:
                extra = {k: v for k, v in node.items() if k != key}
                return {**rest[0], **extra}, True
    kind = node.get("type")
    if isinstance(kind, list) and "null" in kind:
        rest = [k for k in kind if k != "null"]
        if len(rest) == 1:
            return {**node, "type": rest[0]}, True
    return node, False


def to_connect(node: dict, optional: bool = False, optional_non_required: bool = False):
    """(Connect schema, function from parsed JSON to Connect value) for a JSON Schema; with
    ``optional_non_required`` an object's properties not in its ``required`` list are
    optional."""
    node, nullable = _nullable(node)
    optional = optional or nullable
    kind, width, title = node.get("type"), node.get("connect.type"), node.get("title")
    if title in _LOGICAL:
        logical = _LOGICAL[title]
        if logical is Decimal:
            builder = Decimal.builder(Decimal.scale(SchemaBuilder.bytes().parameters(
                node.get("connect.parameters") or {}).build()))
            decimal_schema = builder.build()

            def convert(v):
                if isinstance(v, str):
                    return Decimal.to_logical(decimal_schema, base64.b64decode(v, validate=True))
                return decimal.Decimal(v)
        else:
            builder = logical.builder()

            def convert(v):
                return logical.to_logical(None, int(v))
    elif kind == "object" and "properties" in node and width != "map":
        return _struct(node, optional, optional_non_required)
    elif kind == "object" or (kind == "array" and width == "map"):
        if kind == "object":
            key_schema, key = Schema.STRING_SCHEMA, (lambda k: k)
            value_schema, val = to_connect(node.get("additionalProperties") or {},
                                           optional_non_required=optional_non_required)

            def convert(v):
                return {k: val(x) for k, x in v.items()}
        else:
            props = node["items"]["properties"]
            key_schema, key = to_connect(props["key"], False, optional_non_required)
            value_schema, val = to_connect(props["value"], False, optional_non_required)

            def convert(v):
                return {key(e.get("key")): val(e.get("value")) for e in v}
        builder = SchemaBuilder.map(key_schema, value_schema)
    elif kind == "array":
        item_schema, item = to_connect(node.get("items") or {}, False, optional_non_required)
        builder = SchemaBuilder.array(item_schema)

        def convert(v):
            return [item(x) for x in v]
    elif kind in ("integer", "number", "string", "boolean"):
        default_type = {"integer": Type.INT64, "number": Type.FLOAT64, "string": Type.STRING,
                        "boolean": Type.BOOLEAN}[kind]
        t = _WIDTHS.get(width, default_type)
        builder = SchemaBuilder(t)
        convert = {Type.FLOAT32: lambda v: to_float32(float(v)),
                   Type.FLOAT64: float,
                   Type.BYTES: lambda v: base64.b64decode(v, validate=True)}.get(t, lambda v: v)
    else:
        raise DataException(f"unsupported JSON Schema for Connect: {json.dumps(node)[:200]}")
    schema = _finish(builder, node, title, optional)
    if node.get("default") is not None:
        schema = builder.default_value(convert(node["default"])).build()
    return schema, lambda v: None if v is None else convert(v)


def _finish(builder: SchemaBuilder, node: dict, title, optional: bool) -> Schema:
    if title is not None and builder.type is not Type.STRUCT:
        builder.name(title)
    if isinstance(node.get("connect.version"), int):
        builder.version(node["connect.version"])
    if isinstance(node.get("description"), str):
        builder.doc(node["description"])
    for key, value in (node.get("connect.parameters") or {}).items():
        builder.parameter(key, str(value))
    if optional:
        builder.optional()
    return builder.build()


def _struct(node: dict, optional: bool, optional_non_required: bool):
    builder = SchemaBuilder.struct()
    if isinstance(node.get("title"), str):
        builder.name(node["title"])
    required = node.get("required")
    properties = sorted(node["properties"].items(),
                        key=lambda item: item[1].get("connect.index", 1 << 30))
    readers = []
    for name, prop in properties:
        not_required = optional_non_required and name not in (required or ())
        field_schema, read = to_connect(prop, not_required, optional_non_required)
        builder.field(name, field_schema)
        readers.append((builder.field_named(name), read))
    schema = _finish(builder, node, None, optional)

    def convert(v):
        struct = Struct(schema)
        for field, read in readers:
            struct.put(field, read(v.get(field.name)))
        return struct
    return schema, lambda v: None if v is None else convert(v)


class JsonSchemaConverter(SchemaRegistryConverter):
    """Confluent's JsonSchemaConverter."""
    schema_type = "JSON"
    format_name = "JSON"

    def __init__(self):
        super().__init__()
        self.fail_invalid, self.optional_non_required = False, False
        self.translator = _ToJsonSchema()

    def config(self) -> ConfigDef:
        return super().config().define(
            FAIL_INVALID_SCHEMA_CONFIG, ConfigType.BOOLEAN, False, None, Importance.MEDIUM,
            "Whether to fail serialization if the payload is not valid.",
        ).define(
            OBJECT_ADDITIONAL_PROPERTIES_CONFIG, ConfigType.BOOLEAN, True, None,
            Importance.MEDIUM, "Whether to allow additional properties for object schemas.",
        ).define(
            USE_OPTIONAL_FOR_NON_REQUIRED_CONFIG, ConfigType.BOOLEAN, False, None,
            Importance.MEDIUM, "Whether to set non-required properties to be optional.",
        ).define(
            DECIMAL_FORMAT_CONFIG, ConfigType.STRING, "BASE64",
            ValidString.in_ignore_case("BASE64", "NUMERIC"), Importance.LOW,
            "Controls which format this converter will serialize decimals in. This value is "
            "case insensitive and can be either 'BASE64' (default) or 'NUMERIC'")

    def _configure_format(self, settings: dict) -> None:
        self.fail_invalid = settings[FAIL_INVALID_SCHEMA_CONFIG]
        self.optional_non_required = settings[USE_OPTIONAL_FOR_NON_REQUIRED_CONFIG]
        self.translator = _ToJsonSchema(settings[DECIMAL_FORMAT_CONFIG].upper() == "NUMERIC",
                                        settings[OBJECT_ADDITIONAL_PROPERTIES_CONFIG])

    def translate(self, schema: Schema) -> Translation:
        node = self.translator.schema(schema)
        return Translation(json.dumps(node, separators=(",", ":")), node.get("title"),
                           self.translator.datum(schema))

    def writer(self, registered: RegisteredSchema, ours: Translation):
        validator = None
        if self.fail_invalid:
            node = json.loads(registered.schema)
            validator = jsonschema.validators.validator_for(node)(node)

        def write(datum) -> bytes:
            if validator is not None:
                error = jsonschema.exceptions.best_match(validator.iter_errors(datum))
                if error is not None:
                    raise DataException(f"the value does not match its JSON Schema: "
                                        f"{error.message}")
            return write_tree(datum, numeric_decimals=True).encode("utf-8")
        return write

    def reader(self, registered: RegisteredSchema) -> Reader:
        if registered.schema_type != "JSON":
            raise DataException(f"schema {registered.id} is {registered.schema_type}, "
                                "not JSON Schema")
        schema, convert = to_connect(json.loads(registered.schema),
                                     optional_non_required=self.optional_non_required)

        def read(payload: bytes):
            return convert(json.loads(payload, parse_float=decimal.Decimal))
        return Reader(schema, read)
