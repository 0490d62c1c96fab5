"""``io.confluent.connect.avro.AvroConverter``: Connect data as Avro through a Schema
Registry, the schemas translated as Confluent's AvroData translates them: a struct is a record
named after the schema (``io.confluent.connect.avro.ConnectDefault`` when unnamed), an
optional schema a union with null first (last when it has a default), INT8/INT16 an int with
``connect.type``, a map with non-string keys an array of ``MapEntry`` records, the logical
types Avro's decimal, date, time-millis and timestamp-millis, and the Connect name, version,
doc, parameters and default kept in ``connect.name`` / ``connect.version`` / ``connect.doc`` /
``connect.parameters`` / ``connect.default``."""
from __future__ import annotations

import datetime
import decimal
import io
import json

import fastavro

from josefk.connect.api.config import ConfigDef, Importance
from josefk.connect.api.config import Type as ConfigType
from josefk.connect.api.errors import DataException
from josefk.connect.api.schema import (Date, Decimal, Schema, SchemaBuilder, Struct, Time,
                                       Timestamp, Type)
from josefk.connect.converters.registry import (Reader, RegisteredSchema,
                                                SchemaRegistryConverter, Translation, map_datum,
                                                or_default)

NAMESPACE = "io.confluent.connect.avro"
UNION = NAMESPACE + ".Union"
DEFAULT_RECORD = "ConnectDefault"
MAP_ENTRY = "MapEntry"
CONNECT_META_DATA_CONFIG = "connect.meta.data"
PRECISION_PARAMETER = "connect.decimal.precision"

_PRIMITIVES = {Type.INT32: "int", Type.INT64: "long", Type.FLOAT32: "float",
               Type.FLOAT64: "double", Type.BOOLEAN: "boolean", Type.STRING: "string",
               Type.BYTES: "bytes", Type.INT8: "int", Type.INT16: "int"}
_FROM_PRIMITIVE = {"int": Type.INT32, "long": Type.INT64, "float": Type.FLOAT32,
                   "double": Type.FLOAT64, "boolean": Type.BOOLEAN, "string": Type.STRING,
                   "bytes": Type.BYTES, "enum": Type.STRING, "fixed": Type.BYTES}
_LOGICAL = {Date.LOGICAL_NAME: "date", Time.LOGICAL_NAME: "time-millis",
            Timestamp.LOGICAL_NAME: "timestamp-millis", Decimal.LOGICAL_NAME: "decimal"}
_FROM_LOGICAL = {"date": Date.builder, "time-millis": Time.builder, "time-micros": Time.builder,
                 "timestamp-millis": Timestamp.builder, "timestamp-micros": Timestamp.builder}


class _ToAvro:
    """One Connect schema's Avro schema; records named once, referenced after."""

    def __init__(self, meta: bool):
        self.meta, self.named, self.unnamed = meta, {}, {}

    def _record_name(self, schema: Schema, default: str) -> tuple[str, str | None]:
        if schema.name:
            namespace, _, name = schema.name.rpartition(".")
            return name, namespace or None
        count = self.unnamed[default] = self.unnamed.get(default, 0) + 1
        return (default if count == 1 else f"{default}{count}"), NAMESPACE

    def schema(self, schema: Schema):
        if schema.type is Type.STRUCT and schema.name == UNION:
            members = [self.schema(_required(f.schema)) for f in schema.fields()]
            return ["null", *members] if schema.optional else members
        avro = self._non_null(schema)
        if not schema.optional:
            return avro
        return [avro, "null"] if schema.default is not None else ["null", avro]

    def _props(self, schema: Schema, avro: dict) -> dict:
        """Confluent's metadata properties, in its order."""
        if not self.meta:
            return avro
        if schema.doc is not None:
            avro["connect.doc"] = schema.doc
        if schema.version is not None:
            avro["connect.version"] = schema.version
        if schema.parameters:
            avro["connect.parameters"] = dict(schema.parameters)
        if schema.default is not None:
            avro["connect.default"] = _json_default(schema, schema.default)
        if schema.name is not None:
            avro["connect.name"] = schema.name
        if schema.type in (Type.INT8, Type.INT16):
            avro["connect.type"] = schema.type.value
        return avro

    def _non_null(self, schema: Schema):
        t = schema.type
        if t is Type.STRUCT:
            return self._record(schema)
        if t is Type.ARRAY:
            return self._props(schema, {"type": "array", "items": self.schema(schema.value_schema)})
        if t is Type.MAP:
            if schema.key_schema.type is Type.STRING and not schema.key_schema.optional:
                return self._props(schema, {"type": "map",
                                            "values": self.schema(schema.value_schema)})
            name, namespace = self._record_name(SchemaBuilder.struct().build(), MAP_ENTRY)
            entry = {"type": "record", "name": name, "namespace": namespace, "fields": [
                {"name": "key", "type": self.schema(schema.key_schema)},
                {"name": "value", "type": self.schema(schema.value_schema)}]}
            return self._props(schema, {"type": "array", "items": entry})
        avro = {"type": _PRIMITIVES[t]}
        if schema.name == Decimal.LOGICAL_NAME:
            avro["scale"] = Decimal.scale(schema)
            avro["precision"] = int((schema.parameters or {}).get(PRECISION_PARAMETER, 64))
        avro = self._props(schema, avro)
        if schema.name in _LOGICAL:
            avro["logicalType"] = _LOGICAL[schema.name]
        return avro if len(avro) > 1 else avro["type"]

    def _record(self, schema: Schema):
        name, namespace = self._record_name(schema, DEFAULT_RECORD)
        full = f"{namespace}.{name}" if namespace else name
        if schema.name and full in self.named:
            if self.named[full] != schema:
                raise DataException(f"two different structs are both named {full}")
            return full
        self.named[full] = schema
        record = {"type": "record", "name": name}
        if namespace:
            record["namespace"] = namespace
        record["fields"] = [self._field(f.name, f.schema) for f in schema.fields()]
        return self._props(schema, record)

    def _field(self, name: str, schema: Schema) -> dict:
        field = {"name": name, "type": self.schema(schema)}
        if schema.default is not None:
            field["default"] = _json_default(schema, schema.default)
        elif schema.optional:
            field["default"] = None
        return field


def _json_default(schema: Schema, value):
    """A default as Avro's schema JSON holds it (bytes as ISO-8859-1 text)."""
    if schema.name in LOGICAL_UNDERLYING:
        value = LOGICAL_UNDERLYING[schema.name].from_logical(schema, value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).decode("latin-1")
    if isinstance(value, Struct):
        return {f.name: _json_default(f.schema, value.get(f)) for f in value.schema.fields()}
    if isinstance(value, list):
        return [_json_default(schema.value_schema, v) for v in value]
    if isinstance(value, dict):
        return {k: _json_default(schema.value_schema, v) for k, v in value.items()}
    return value


LOGICAL_UNDERLYING = {Decimal.LOGICAL_NAME: Decimal, Date.LOGICAL_NAME: Date,
                      Time.LOGICAL_NAME: Time, Timestamp.LOGICAL_NAME: Timestamp}


def _required(schema: Schema) -> Schema:
    """``schema`` made required (a union member: the union holds the null)."""
    if not schema.optional:
        return schema
    return Schema(schema.type, False, schema.default, schema.name, schema.version, schema.doc,
                  schema.parameters, list(schema.fields()) if schema.type is Type.STRUCT else None,
                  schema.key_schema, schema.value_schema)


def _to_datum(schema: Schema):
    """The function from a Connect value of ``schema`` to the datum fastavro writes."""
    t = schema.type
    if t is Type.STRUCT and schema.name == UNION:
        members = [(f, _to_datum(f.schema)) for f in schema.fields()]

        def convert(value):
            for f, c in members:
                member = value.get(f)
                if member is not None:
                    return c(member)
            return None
    elif t is Type.STRUCT:
        fields = [(f, _to_datum(f.schema)) for f in schema.fields()]

        def convert(value):
            if not isinstance(value, Struct):
                raise DataException(f"Invalid value for STRUCT: {type(value).__name__}")
            return {f.name: c(value.get(f)) for f, c in fields}
    elif t is Type.ARRAY:
        item = _to_datum(schema.value_schema)

        def convert(value):
            return [item(v) for v in value]
    elif t is Type.MAP:
        convert = map_datum(schema, _to_datum(schema.key_schema),
                            _to_datum(schema.value_schema))
    elif t is Type.BYTES and schema.name is None:
        convert = bytes
    else:
        def convert(value):
            return value
    return or_default(schema, convert)


class _ToConnect:
    """An Avro schema (parsed JSON) as a Connect schema, and its datum reader."""

    def __init__(self):
        self.named: dict[str, tuple[dict, str | None]] = {}
        self.building: set[str] = set()

    def _define(self, avro: dict, namespace: str | None) -> tuple[str, str | None]:
        """Remember a named type's definition (for later references by name); its full name
        and namespace."""
        name = avro["name"]
        if "." in name:
            namespace = name.rpartition(".")[0]
        else:
            namespace = avro.get("namespace", namespace)
        full = name if "." in name else (f"{namespace}.{name}" if namespace else name)
        self.named[full] = (avro, namespace)
        return full, namespace

    def schema(self, avro, namespace: str | None = None, optional: bool = False,
               default=None):
        """(Connect schema, function from datum to Connect value)."""
        if isinstance(avro, list):
            branches = [b for b in avro if b != "null"]
            if len(branches) == 1 and len(avro) == 2:
                return self.schema(branches[0], namespace, optional=True, default=default)
            return self._union(avro, branches, namespace)
        if isinstance(avro, str):
            if avro in _FROM_PRIMITIVE:
                avro = {"type": avro}
            else:
                full = avro if "." in avro or not namespace else f"{namespace}.{avro}"
                if full in self.building:
                    raise DataException(f"the recursive Avro type {full} has no Connect schema")
                definition, defined_in = self.named[full]
                return self.schema(definition, defined_in, optional, default)
        kind = avro["type"]
        if isinstance(kind, (dict, list)) or (isinstance(kind, str) and kind not in
                                              _FROM_PRIMITIVE and kind not in
                                              ("record", "array", "map")):
            return self.schema(kind, namespace, optional, default)
        if kind == "record":
            return self._record(avro, namespace, optional, default)
        if kind in ("enum", "fixed"):
            self._define(avro, namespace)
        if kind == "array":
            items = avro["items"]
            item_def = items if isinstance(items, dict) else {}
            if item_def.get("type") == "record" and item_def.get("namespace") == NAMESPACE \
                    and str(item_def.get("name", "")).startswith(MAP_ENTRY):
                return self._entries(avro, item_def, namespace, optional, default)
            item_schema, item = self.schema(items, namespace)
            builder = SchemaBuilder.array(item_schema)
            convert = (lambda d: [item(v) for v in d])
        elif kind == "map":
            value_schema, val = self.schema(avro["values"], namespace)
            builder = SchemaBuilder.map(Schema.STRING_SCHEMA, value_schema)
            convert = (lambda d: {k: val(v) for k, v in d.items()})
        else:
            builder = self._primitive(avro)
            convert = bytes if builder.type is Type.BYTES and avro.get(
                "logicalType") != "decimal" else (lambda d: d)
        return self._finish(builder, avro, optional, default, convert)

    @staticmethod
    def _primitive(avro: dict) -> SchemaBuilder:
        logical = avro.get("logicalType")
        if logical == "decimal":
            builder = Decimal.builder(int(avro.get("scale", 0)))
            if avro.get("precision", 64) != 64:
                builder.parameter(PRECISION_PARAMETER, str(avro["precision"]))
            return builder
        if logical in _FROM_LOGICAL:
            return _FROM_LOGICAL[logical]()
        connect_type = avro.get("connect.type")
        if connect_type in ("int8", "int16"):
            return SchemaBuilder(Type(connect_type))
        return SchemaBuilder(_FROM_PRIMITIVE[avro["type"]])

    def _finish(self, builder: SchemaBuilder, avro: dict, optional: bool, default, convert):
        if isinstance(avro.get("connect.name"), str):
            builder.name(avro["connect.name"])
        if isinstance(avro.get("connect.version"), int):
            builder.version(avro["connect.version"])
        if isinstance(avro.get("connect.doc"), str):
            builder.doc(avro["connect.doc"])
        for key, value in (avro.get("connect.parameters") or {}).items():
            builder.parameter(key, str(value))
        if optional:
            builder.optional()
        schema = builder.build()
        if default is None:
            default = avro.get("connect.default")
        if default is not None:
            default_value = _from_json_default(schema, default)
            builder.default_value(default_value)
            schema = builder.build()

        def read(datum):
            return None if datum is None else convert(datum)
        return schema, read

    def _record(self, avro: dict, namespace: str | None, optional: bool, default):
        full, namespace = self._define(avro, namespace)
        name = avro["name"].rpartition(".")[2]
        builder = SchemaBuilder.struct()
        if avro.get("connect.name") is None and not (
                namespace == NAMESPACE and name.startswith(DEFAULT_RECORD)):
            builder.name(full)
        readers = []
        self.building.add(full)
        for field in avro["fields"]:
            field_schema, read = self.schema(field["type"], namespace,
                                             default=field.get("default"))
            builder.field(field["name"], field_schema)
            readers.append((builder.field_named(field["name"]), read))
        self.building.discard(full)
        built: list[Schema] = []

        def convert(datum):
            struct = Struct(built[0])
            for field, read in readers:
                struct.put(field, read(datum.get(field.name)))
            return struct
        schema, read = self._finish(builder, avro, optional, None, convert)
        built.append(schema)
        return schema, read

    def _member_name(self, branch, namespace: str | None) -> str:
        """The Connect field of a union member: a named type's name, else its type's."""
        if isinstance(branch, str):
            if branch in _FROM_PRIMITIVE:
                return branch
            return self._member_name(self.named[branch if "." in branch or not namespace
                                                else f"{namespace}.{branch}"][0], namespace)
        if isinstance(branch, dict):
            return branch["name"].rpartition(".")[2] if "name" in branch else branch["type"]
        raise DataException("an Avro union cannot hold another union")

    def _union(self, avro: list, branches: list, namespace: str | None):
        """Confluent's union struct: one optional field per member, the one set that holds
        the value (fastavro names the record when more than one is possible)."""
        builder = SchemaBuilder.struct().name(UNION)
        if "null" in avro:
            builder.optional()
        members = []
        for branch in branches:
            name = self._member_name(branch, namespace)
            if builder.field_named(name) is not None:
                raise DataException(f"Multiple union schemas map to the Connect union field "
                                    f"name {name}")
            member_schema, read = self.schema(branch, namespace, optional=True)
            builder.field(name, member_schema)
            members.append((name, member_schema, read))
        schema = builder.build()

        def convert(datum):
            record_name = None
            if isinstance(datum, tuple):
                record_name, datum = datum
            for name, member_schema, read in members:
                if _matches(member_schema, datum, name, record_name):
                    return Struct(schema).put(name, read(datum))
            raise DataException(f"no member of the union {UNION} holds a "
                                f"{type(datum).__name__}")
        return schema, (lambda d: None if d is None else convert(d))

    def _entries(self, avro, entry, namespace, optional, default):
        fields = {f["name"]: f["type"] for f in entry["fields"]}
        key_schema, key = self.schema(fields["key"], namespace)
        value_schema, val = self.schema(fields["value"], namespace)
        builder = SchemaBuilder.map(key_schema, value_schema)
        return self._finish(builder, avro, optional, default,
                            lambda d: {key(e["key"]): val(e["value"]) for e in d})


_PYTHON_KINDS = {Type.INT8: int, Type.INT16: int, Type.INT32: int, Type.INT64: int,
                 Type.FLOAT32: float, Type.FLOAT64: float, Type.BOOLEAN: bool, Type.STRING: str,
                 Type.BYTES: bytes, Type.ARRAY: list, Type.MAP: dict, Type.STRUCT: dict}
_LOGICAL_KINDS = {Decimal.LOGICAL_NAME: decimal.Decimal, Date.LOGICAL_NAME: datetime.date,
                  Time.LOGICAL_NAME: datetime.time, Timestamp.LOGICAL_NAME: datetime.datetime}


def _matches(schema: Schema, datum, member: str, record_name: str | None) -> bool:
    """Whether fastavro's ``datum`` is of the union member ``schema``."""
    if record_name is not None:
        return schema.type is Type.STRUCT and record_name.rpartition(".")[2] == member
    kind = _LOGICAL_KINDS.get(schema.name) or _PYTHON_KINDS[schema.type]
    if kind is datetime.date and isinstance(datum, datetime.datetime):
        return False
    return isinstance(datum, kind) and (kind is bool or not isinstance(datum, bool))


def _from_json_default(schema: Schema, value):
    if value is None:
        return None
    if schema.type is Type.BYTES and isinstance(value, str):
        value = value.encode("latin-1")
    if schema.name in LOGICAL_UNDERLYING:
        return LOGICAL_UNDERLYING[schema.name].to_logical(schema, value)
    if schema.type is Type.FLOAT32 or schema.type is Type.FLOAT64:
        return float(value)
    if schema.type is Type.ARRAY:
        return [_from_json_default(schema.value_schema, v) for v in value]
    if schema.type is Type.MAP and isinstance(value, dict):
        return {k: _from_json_default(schema.value_schema, v) for k, v in value.items()}
    if schema.type is Type.STRUCT:
        struct = Struct(schema)
        for f in schema.fields():
            struct.put(f, _from_json_default(f.schema, value.get(f.name)))
        return struct
    return value


class AvroConverter(SchemaRegistryConverter):
    """Confluent's AvroConverter."""
    schema_type = "AVRO"
    format_name = "Avro"
    meta = True

    def config(self) -> ConfigDef:
        return super().config().define(
            CONNECT_META_DATA_CONFIG, ConfigType.BOOLEAN, True, None, Importance.LOW,
            "Allow the Connect converter to add its metadata to the output schema")

    def _configure_format(self, settings: dict) -> None:
        self.meta = settings[CONNECT_META_DATA_CONFIG]

    def translate(self, schema: Schema) -> Translation:
        avro = _ToAvro(self.meta).schema(schema)
        record_name = None
        if isinstance(avro, dict) and avro.get("type") == "record":
            record_name = f"{avro['namespace']}.{avro['name']}" if avro.get("namespace") \
                else avro["name"]
        return Translation(json.dumps(avro, separators=(",", ":")), record_name,
                           _to_datum(schema))

    def _parsed(self, registered: RegisteredSchema):
        """(schema JSON, fastavro's parsed schema, its Connect translator) of a registered
        schema, the named types of the schemas it refers to defined first."""
        named: dict = {}
        to_connect = _ToConnect()
        for _name, dependency in self.references(registered):
            definition = json.loads(dependency.schema)
            fastavro.parse_schema(definition, named_schemas=named)
            to_connect.schema(definition)
        avro = json.loads(registered.schema)
        return avro, fastavro.parse_schema(avro, named_schemas=named), to_connect

    def writer(self, registered: RegisteredSchema, ours: Translation):
        _avro, parsed, _to_connect = self._parsed(registered)

        def write(datum) -> bytes:
            out = io.BytesIO()
            fastavro.schemaless_writer(out, parsed, datum)
            return out.getvalue()
        return write

    def reader(self, registered: RegisteredSchema) -> Reader:
        if registered.schema_type != "AVRO":
            raise DataException(f"schema {registered.id} is {registered.schema_type}, not Avro")
        avro, parsed, to_connect = self._parsed(registered)
        schema, convert = to_connect.schema(avro)

        def read(payload: bytes):
            return convert(fastavro.schemaless_reader(
                io.BytesIO(payload), parsed, None, return_record_name=True,
                return_record_name_override=True))
        return Reader(schema, read)
