"""``org.apache.kafka.connect.json.JsonConverter``: Connect data as JSON, byte for byte as
Kafka's Jackson writes it (compact, its key order, ``Double.toString`` numbers, base64
bytes), with the ``{"schema":...,"payload":...}`` envelope when ``schemas.enable`` is on.

Each Connect schema is compiled once into its JSON text and a writer of its values (cached,
``schemas.cache.size`` of them); each schema JSON read is turned into a Connect schema once."""
from __future__ import annotations

import base64
import binascii
import datetime
import decimal
import json
import re

from josefk.connect.api.config import (ConfigDef, ConfigException, Importance, ValidString,
                                       Width)
from josefk.connect.api.config import Type as ConfigType
from josefk.connect.api.errors import DataException
from josefk.connect.api.schema import (Date, Decimal, Schema, SchemaAndValue, SchemaBuilder,
                                       Struct, Time, Timestamp, Type)
from josefk.connect.converters._java import (LRUCache, converter_config_def, java_double,
                                             java_float, to_float32, with_type)

SCHEMAS_ENABLE_CONFIG = "schemas.enable"
SCHEMAS_CACHE_SIZE_CONFIG = "schemas.cache.size"
DECIMAL_FORMAT_CONFIG = "decimal.format"
REPLACE_NULL_WITH_DEFAULT_CONFIG = "replace.null.with.default"

ENVELOPE_ERROR = ("JsonConverter with schemas.enable requires \"schema\" and \"payload\" fields "
                  "and may not contain additional fields. If you are trying to deserialize "
                  "plain JSON data, set schemas.enable=false in your converter configuration.")

TYPE_NAMES = {Type.BOOLEAN: "boolean", Type.INT8: "int8", Type.INT16: "int16",
              Type.INT32: "int32", Type.INT64: "int64", Type.FLOAT32: "float",
              Type.FLOAT64: "double", Type.BYTES: "bytes", Type.STRING: "string",
              Type.ARRAY: "array", Type.MAP: "map", Type.STRUCT: "struct"}
_BY_NAME = {name: t for t, name in TYPE_NAMES.items()}
_BITS = {Type.INT8: 8, Type.INT16: 16, Type.INT32: 32, Type.INT64: 64}
_UNEXPECTED = (TypeError, ValueError, RecursionError, OverflowError, AttributeError)

# ---- writing JSON text as Jackson does -----------------------------------------------------

_NEEDS_ESCAPE = re.compile(r'[\x00-\x1f"\\]')
_SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n",
                  "\f": "\\f", "\r": "\\r"}


def _escape(match) -> str:
    char = match.group()
    return _SHORT_ESCAPES.get(char) or f"\\u{ord(char):04X}"


def json_string(text: str) -> str:
    """A JSON string literal as Jackson writes one (control characters as upper-case
    ``\\u00XX``, non-ASCII as it is)."""
    if _NEEDS_ESCAPE.search(text) is None:
        return f'"{text}"'
    return '"' + _NEEDS_ESCAPE.sub(_escape, text) + '"'


def _b64(value) -> str:
    return '"' + base64.b64encode(value).decode("ascii") + '"'


def _bad_type(schema: Schema | None, value) -> DataException:
    where = schema.type.name if schema is not None else "unknown schema"
    return DataException(f"Invalid type for {where}: {type(value)}")


def _int_writer(schema: Schema):
    half = 1 << (_BITS[schema.type] - 1)

    def write(value):
        if isinstance(value, bool) or not isinstance(value, int) or not -half <= value < half:
            raise _bad_type(schema, value)
        return str(value)
    return write


def _typed(schema: Schema, kinds, to_text):
    def write(value):
        if not isinstance(value, kinds):
            raise _bad_type(schema, value)
        return to_text(value)
    return write


def write_tree(value, numeric_decimals: bool = False) -> str:
    """A value without a schema as JSON text, typed by its Python type as Connect types Java
    values (bytes as base64, maps with other than string keys as pairs); ``decimal.Decimal``
    numbers are written exactly where ``numeric_decimals`` allows them."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        if not -(1 << 63) <= value < (1 << 63):
            raise DataException(f"Invalid type for INT64: {value} is out of range")
        return str(value)
    if isinstance(value, float):
        return java_double(value)
    if isinstance(value, str):
        return json_string(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return _b64(value)
    if isinstance(value, decimal.Decimal) and numeric_decimals:
        return str(value)
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(write_tree(v, numeric_decimals) for v in value) + "]"
    if isinstance(value, dict):
        if all(isinstance(k, str) for k in value):
            return "{" + ",".join(json_string(k) + ":" + write_tree(v, numeric_decimals)
                                  for k, v in value.items()) + "}"
        return "[" + ",".join(f"[{write_tree(k, numeric_decimals)},"
                              f"{write_tree(v, numeric_decimals)}]"
                              for k, v in value.items()) + "]"
    if isinstance(value, Struct):
        raise DataException("Mismatching schema.")
    raise DataException(f"Python class {type(value)} does not have corresponding schema type.")


# ---- reading parsed JSON as Connect data ----------------------------------------------------

def _reject_constant(name):
    raise ValueError(f"Non-standard token '{name}'")


_DECODER = json.JSONDecoder(parse_float=decimal.Decimal, parse_constant=_reject_constant)


def _node_type(node) -> str:
    if node is None:
        return "NULL"
    if isinstance(node, bool):
        return "BOOLEAN"
    if isinstance(node, (int, decimal.Decimal)):
        return "NUMBER"
    return {str: "STRING", list: "ARRAY", dict: "OBJECT"}[type(node)]


def _is_number(node) -> bool:
    return isinstance(node, (int, decimal.Decimal)) and not isinstance(node, bool)


def _is_int32(node) -> bool:
    return isinstance(node, int) and not isinstance(node, bool) and -(1 << 31) <= node < (1 << 31)


def _expect(schema: Schema, node, ok: bool, what: str):
    if not ok:
        raise DataException(f"Invalid value for {schema.type.name}: expected {what} but found "
                            f"{_node_type(node)}")


def _read_int(schema: Schema, node):
    _expect(schema, node, _is_number(node), "a number")
    bits = _BITS[schema.type]
    half = 1 << (bits - 1)
    return (int(node) + half) % (1 << bits) - half


def _read_bytes(schema, node):
    _expect(schema, node, isinstance(node, str), "a base64 string")
    try:
        return base64.b64decode(node, validate=True)
    except binascii.Error:
        raise DataException("Invalid bytes field") from None


def _schemaless(node):
    if isinstance(node, decimal.Decimal):
        return float(node)
    if isinstance(node, list):
        return [_schemaless(item) for item in node]
    if isinstance(node, dict):
        return {k: _schemaless(v) for k, v in node.items()}
    return node


def _read_decimal(schema, node):
    if _is_number(node):
        return decimal.Decimal(node)
    if isinstance(node, str):
        try:
            return Decimal.to_logical(schema, base64.b64decode(node, validate=True))
        except (binascii.Error, DataException):
            raise DataException("Invalid bytes for Decimal field") from None
    raise DataException("Invalid type for Decimal, underlying representation should be numeric "
                        f"or bytes but was {_node_type(node)}")


def _read_days_or_millis(logical):
    def read(schema, node):
        if not _is_int32(node):
            raise DataException(f"Invalid type for {logical.__name__}, underlying representation "
                                f"should be integer but was {_node_type(node)}")
        return logical.to_logical(schema, node)
    return read


def _read_timestamp(schema, node):
    if isinstance(node, bool) or not isinstance(node, int):
        raise DataException("Invalid type for Timestamp, underlying representation should be "
                            f"integral but was {_node_type(node)}")
    return Timestamp.to_logical(schema, node)


_LOGICAL_READERS = {Decimal.LOGICAL_NAME: _read_decimal,
                    Date.LOGICAL_NAME: _read_days_or_millis(Date),
                    Time.LOGICAL_NAME: _read_days_or_millis(Time),
                    Timestamp.LOGICAL_NAME: _read_timestamp}


class JsonConverter:
    """Kafka's JsonConverter (also a header converter)."""

    def __init__(self):
        self._schemas_enabled, self._numeric_decimals, self._replace_null = True, False, True
        self._from_connect = LRUCache(1000)
        self._to_connect = LRUCache(1000)

    def config(self) -> ConfigDef:
        return converter_config_def().define(
            SCHEMAS_ENABLE_CONFIG, ConfigType.BOOLEAN, True, None, Importance.HIGH,
            "Include schemas within each of the serialized values and keys.",
            "Schemas", 0, Width.MEDIUM, "Enable Schemas",
        ).define(
            SCHEMAS_CACHE_SIZE_CONFIG, ConfigType.INT, 1000, None, Importance.HIGH,
            "The maximum number of schemas that can be cached in this converter instance.",
            "Schemas", 1, Width.MEDIUM, "Schema Cache Size",
        ).define(
            DECIMAL_FORMAT_CONFIG, ConfigType.STRING, "BASE64",
            ValidString.in_ignore_case("BASE64", "NUMERIC"), Importance.LOW,
            "Controls which format this converter will serialize decimals in. This value is "
            "case insensitive and can be either 'BASE64' (default) or 'NUMERIC'",
            "Serialization", 0, Width.MEDIUM, "Decimal Format",
        ).define(
            REPLACE_NULL_WITH_DEFAULT_CONFIG, ConfigType.BOOLEAN, True, None, Importance.LOW,
            "Whether to replace fields that have a default value and that are null to the "
            "default value. When set to true, the default value is used, otherwise null is "
            "used.", "Serialization", 1, Width.MEDIUM, "Replace null with default")

    def configure(self, configs: dict, is_key: bool | None = None) -> None:
        settings = self.config().parse(with_type(configs, is_key))
        size = settings[SCHEMAS_CACHE_SIZE_CONFIG]
        if size < 1:
            raise ConfigException(SCHEMAS_CACHE_SIZE_CONFIG, size, "Value must be at least 1")
        self._schemas_enabled = settings[SCHEMAS_ENABLE_CONFIG]
        self._numeric_decimals = settings[DECIMAL_FORMAT_CONFIG].upper() == "NUMERIC"
        self._replace_null = settings[REPLACE_NULL_WITH_DEFAULT_CONFIG]
        self._from_connect, self._to_connect = LRUCache(size), LRUCache(size)

    def close(self) -> None:
        """Nothing to release."""

    # ---- Connect data to bytes -------------------------------------------------------------

    def from_connect_data(self, topic: str, schema: Schema | None, value,
                          headers=None) -> bytes | None:
        if schema is None and value is None:
            return None
        if schema is None:
            schema_text, write = "null", write_tree
        else:
            schema_text, write = self._compiled(schema)
        try:
            payload = write(value)
        except _UNEXPECTED as e:  # e.g. a list holding itself
            raise DataException("Converting Kafka Connect data to byte[] failed: "
                                f"{type(e).__name__}: {e}") from e
        text = f'{{"schema":{schema_text},"payload":{payload}}}' if self._schemas_enabled \
            else payload
        try:
            return text.encode("utf-8")
        except UnicodeEncodeError as e:
            raise DataException("Converting Kafka Connect data to byte[] failed due to "
                                f"serialization error: {e}") from e

    def from_connect_header(self, topic, header_key, schema, value):
        return self.from_connect_data(topic, schema, value)

    def as_json_schema(self, schema: Schema | None) -> str:
        """The schema's JSON text as Kafka's ``asJsonSchema`` writes it."""
        return "null" if schema is None else self._compiled(schema)[0]

    def _compiled(self, schema: Schema):
        compiled = self._from_connect.get(schema)
        if compiled is None:
            compiled = (self._schema_json(schema), self._writer(schema))
            self._from_connect.put(schema, compiled)
        return compiled

    def _schema_json(self, schema: Schema, field_name: str | None = None) -> str:
        members = [f'"type":"{TYPE_NAMES[schema.type]}"']
        if schema.type is Type.ARRAY:
            members.append('"items":' + self._schema_json(schema.value_schema))
        elif schema.type is Type.MAP:
            members.append('"keys":' + self._schema_json(schema.key_schema))
            members.append('"values":' + self._schema_json(schema.value_schema))
        elif schema.type is Type.STRUCT:
            members.append('"fields":[' + ",".join(self._schema_json(f.schema, f.name)
                                                   for f in schema.fields()) + "]")
        members.append('"optional":' + ("true" if schema.optional else "false"))
        if schema.name is not None:
            members.append('"name":' + json_string(schema.name))
        if schema.version is not None:
            members.append(f'"version":{schema.version}')
        if schema.doc is not None:
            members.append('"doc":' + json_string(schema.doc))
        if schema.parameters is not None:
            members.append('"parameters":{' + ",".join(
                json_string(k) + ":" + json_string(v) for k, v in schema.parameters.items())
                + "}")
        if schema.default is not None:
            members.append('"default":' + self._writer(schema)(schema.default))
        if field_name is not None:
            members.append('"field":' + json_string(field_name))
        return "{" + ",".join(members) + "}"

    def _writer(self, schema: Schema | None):
        """A function from a value of ``schema`` (None included) to its JSON text."""
        if schema is None:
            return write_tree
        write = self._present_writer(schema)
        if schema.default is not None and self._replace_null:
            default_text = write(schema.default)
            return lambda value: default_text if value is None else write(value)
        if schema.optional:
            return lambda value: "null" if value is None else write(value)

        def required(value):
            if value is None:
                raise DataException("Conversion error: null value for field that is required "
                                    "and has no default value")
            return write(value)
        return required

    def _present_writer(self, schema: Schema):
        if schema.name == Decimal.LOGICAL_NAME:
            if self._numeric_decimals:
                return _typed(schema, decimal.Decimal, str)
            return _typed(schema, decimal.Decimal,
                          lambda v: _b64(Decimal.from_logical(schema, v)))
        logical = {Date.LOGICAL_NAME: (Date, datetime.date),
                   Time.LOGICAL_NAME: (Time, (datetime.time, datetime.datetime)),
                   Timestamp.LOGICAL_NAME: (Timestamp, datetime.datetime)}.get(schema.name)
        if logical is not None:
            kind, accepted = logical
            return _typed(schema, accepted, lambda v: str(kind.from_logical(schema, v)))
        t = schema.type
        if t in _BITS:
            return _int_writer(schema)
        if t is Type.FLOAT32:
            return _typed(schema, float, java_float)
        if t is Type.FLOAT64:
            return _typed(schema, float, java_double)
        if t is Type.BOOLEAN:
            return _typed(schema, bool, lambda v: "true" if v else "false")
        if t is Type.STRING:
            return _typed(schema, str, json_string)
        if t is Type.BYTES:
            return _typed(schema, (bytes, bytearray, memoryview), _b64)
        if t is Type.ARRAY:
            item = self._writer(schema.value_schema)
            return _typed(schema, (list, tuple), lambda v: "[" + ",".join(map(item, v)) + "]")
        if t is Type.MAP:
            return self._map_writer(schema)
        return self._struct_writer(schema)

    def _map_writer(self, schema: Schema):
        key, value = self._writer(schema.key_schema), self._writer(schema.value_schema)
        if schema.key_schema.type is Type.STRING:
            def entry(k, v):
                text = key(k)
                return (text if text[0] == '"' else json_string(text)) + ":" + value(v)
            return _typed(schema, dict, lambda m: "{" + ",".join(
                entry(k, v) for k, v in m.items()) + "}")
        return _typed(schema, dict, lambda m: "[" + ",".join(
            f"[{key(k)},{value(v)}]" for k, v in m.items()) + "]")

    def _struct_writer(self, schema: Schema):
        fields = [(f.name, json_string(f.name) + ":", self._writer(f.schema))
                  for f in schema.fields()]
        replace = self._replace_null

        def write(struct):
            if not isinstance(struct, Struct):
                raise _bad_type(schema, struct)
            if struct.schema is not schema and struct.schema != schema:
                raise DataException("Mismatching schema.")
            get = struct.get if replace else struct.get_without_default
            return "{" + ",".join(prefix + w(get(name)) for name, prefix, w in fields) + "}"
        return write

    # ---- bytes to Connect data -------------------------------------------------------------

    def to_connect_data(self, topic: str, value: bytes | None, headers=None) -> SchemaAndValue:
        if value is None:
            return SchemaAndValue.NULL
        try:
            return self._to_connect_data(value)
        except _UNEXPECTED as e:  # e.g. an array as a map key, nesting past the stack
            raise DataException("Converting byte[] to Kafka Connect data failed: "
                                f"{type(e).__name__}: {e}") from e

    def _to_connect_data(self, value) -> SchemaAndValue:
        try:
            text = bytes(value).decode("utf-8")
        except UnicodeDecodeError as e:
            raise DataException("Converting byte[] to Kafka Connect data failed due to "
                                f"serialization error: {e}") from e
        if not self._schemas_enabled:
            return SchemaAndValue(None, _schemaless(self._parse(text)))
        key, schema_node, payload = self._envelope(text)
        if schema_node is None:
            return SchemaAndValue(None, _schemaless(payload))
        compiled = self._to_connect.get(key)
        if compiled is None:
            schema = self.as_connect_schema(schema_node)
            compiled = (schema, self._reader(schema))
            self._to_connect.put(key, compiled)
        schema, read = compiled
        return SchemaAndValue(schema, read(payload))

    def to_connect_header(self, topic, header_key, value):
        return self.to_connect_data(topic, value)

    @staticmethod
    def _parse(text: str):
        if not text.strip():
            return None  # Jackson's missing node: no content
        try:
            return _DECODER.decode(text)
        except ValueError as e:
            raise DataException("Converting byte[] to Kafka Connect data failed due to "
                                f"serialization error: {e}") from e

    def _envelope(self, text: str):
        """The schema's JSON text (the cache key), its parsed form, and the payload. Kafka's
        own compact layout is sliced without re-serializing the schema; other layouts are
        parsed whole."""
        if text.startswith('{"schema":'):
            try:
                schema_node, end = _DECODER.raw_decode(text, 10)
                if text.startswith(',"payload":', end):
                    payload, last = _DECODER.raw_decode(text, end + 11)
                    if text[last:].strip() == "}":
                        return text[10:end], schema_node, payload
            except ValueError:
                pass  # not Kafka's layout: the whole parse below says what is wrong
        document = self._parse(text)
        if not isinstance(document, dict) or len(document) != 2 \
                or "schema" not in document or "payload" not in document:
            raise DataException(ENVELOPE_ERROR)
        schema_node = document["schema"]
        return (json.dumps(schema_node, separators=(",", ":"), default=str), schema_node,
                document["payload"])

    def as_connect_schema(self, node) -> Schema | None:
        """A Connect schema from its JSON form (parsed), as Kafka's ``asConnectSchema``."""
        if node is None:
            return None
        type_name = node.get("type") if isinstance(node, dict) else None
        if not isinstance(type_name, str):
            raise DataException("Schema must contain 'type' field")
        t = _BY_NAME.get(type_name)
        if t is None:
            raise DataException("Unknown schema type: " + type_name)
        if t is Type.ARRAY:
            items = node.get("items")
            if items is None:
                raise DataException("Array schema did not specify the element type")
            builder = SchemaBuilder.array(self.as_connect_schema(items))
        elif t is Type.MAP:
            if "keys" not in node:
                raise DataException("Map schema did not specify the key type")
            if "values" not in node:
                raise DataException("Map schema did not specify the value type")
            builder = SchemaBuilder.map(self.as_connect_schema(node["keys"]),
                                        self.as_connect_schema(node["values"]))
        elif t is Type.STRUCT:
            builder = SchemaBuilder.struct()
            fields = node.get("fields")
            if not isinstance(fields, list):
                raise DataException("Struct schema's \"fields\" argument is not an array.")
            for field in fields:
                name = field.get("field") if isinstance(field, dict) else None
                if not isinstance(name, str):
                    raise DataException("Struct schema's field name not specified properly")
                builder.field(name, self.as_connect_schema(field))
        else:
            builder = SchemaBuilder(t)
        if node.get("optional") is True:
            builder.optional()
        if isinstance(node.get("name"), str):
            builder.name(node["name"])
        version = node.get("version")
        if isinstance(version, int) and not isinstance(version, bool):
            builder.version(version)
        if isinstance(node.get("doc"), str):
            builder.doc(node["doc"])
        parameters = node.get("parameters")
        if isinstance(parameters, dict):
            for key, value in parameters.items():
                if not isinstance(value, str):
                    raise DataException("Schema parameters must have string values.")
                builder.parameter(key, value)
        if "default" in node:
            builder.default_value(self._reader(builder.build())(node["default"]))
        return builder.build()

    def _reader(self, schema: Schema):
        """Kafka's ``convertToConnect`` for ``schema``, compiled: a function from a parsed JSON
        value (None for null or missing) to the Connect value."""
        read = self._present_reader(schema)
        default = schema.default if self._replace_null else None
        optional, type_name = schema.optional, schema.type.name

        def read_or_null(node):
            if node is None:
                if default is not None:
                    return default
                if optional:
                    return None
                raise DataException(f"Invalid null value for required {type_name} field")
            return read(node)
        return read_or_null

    def _present_reader(self, schema: Schema):
        logical = _LOGICAL_READERS.get(schema.name)
        if logical is not None:
            return lambda node: logical(schema, node)
        t = schema.type
        if t in _BITS:
            return lambda node: _read_int(schema, node)
        if t is Type.FLOAT32 or t is Type.FLOAT64:
            narrow = to_float32 if t is Type.FLOAT32 else float

            def read_float(node):
                _expect(schema, node, _is_number(node), "a number")
                return narrow(float(node))
            return read_float
        if t is Type.BOOLEAN or t is Type.STRING:
            kind, what = (bool, "a boolean") if t is Type.BOOLEAN else (str, "a string")

            def read_same(node):
                _expect(schema, node, isinstance(node, kind), what)
                return node
            return read_same
        if t is Type.BYTES:
            return lambda node: _read_bytes(schema, node)
        if t is Type.ARRAY:
            item = self._reader(schema.value_schema)

            def read_array(node):
                _expect(schema, node, isinstance(node, list), "an array")
                return [item(element) for element in node]
            return read_array
        if t is Type.MAP:
            return self._map_reader(schema)
        fields = [(field, field.name, self._reader(field.schema)) for field in schema.fields()]

        def read_struct(node):
            if not isinstance(node, dict):
                raise DataException("Structs should be encoded as JSON objects, but found "
                                    + _node_type(node))
            struct = Struct(schema)
            for field, name, read in fields:
                struct.put(field, read(node.get(name)))
            return struct
        return read_struct

    def _map_reader(self, schema: Schema):
        key, value = self._reader(schema.key_schema), self._reader(schema.value_schema)
        if schema.key_schema.type is Type.STRING:
            def read_object(node):
                if not isinstance(node, dict):
                    raise DataException("Maps with string fields should be encoded as JSON "
                                        "objects, but found " + _node_type(node))
                return {k: value(v) for k, v in node.items()}
            return read_object

        def read_pairs(node):
            if not isinstance(node, list):
                raise DataException("Maps with non-string fields should be encoded as JSON "
                                    "array of tuples, but found " + _node_type(node))
            result = {}
            for entry in node:
                if not isinstance(entry, list):
                    raise DataException("Found invalid map entry instead of array tuple: "
                                        + _node_type(entry))
                if len(entry) != 2:
                    raise DataException("Found invalid map entry, expected length 2 but "
                                        "found :" + str(len(entry)))
                result[key(entry[0])] = value(entry[1])
            return result
        return read_pairs
