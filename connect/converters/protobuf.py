"""``io.confluent.connect.protobuf.ProtobufConverter``: Connect data as Protobuf through a
Schema Registry, in Confluent's wire format with the message-index list after the schema id.

A struct is a proto3 message (its name's last part; the rest the package; unnamed
``ConnectDefault1``), nested structs nested messages, field numbers the field index plus one;
INT8/INT16/INT32 are int32, a decimal a confluent.type.Decimal; an optional primitive is a
plain field (its zero value for null), or with ``optional.for.nullables`` a proto3
``optional`` field, or with ``wrapper.for.nullables`` a google.protobuf wrapper message; an
array is a repeated field, a map a ``map<K, V>`` (string, integer or boolean keys); Timestamp, Date and
Time are google.protobuf.Timestamp, google.type.Date and google.type.TimeOfDay. Read back,
message fields are optional structs and enums strings."""
from __future__ import annotations

import datetime
import decimal

from google.protobuf import descriptor_pool, message_factory
from google.protobuf.descriptor import FieldDescriptor as FD

from josefk.connect.api.config import ConfigDef, Importance
from josefk.connect.api.config import Type as ConfigType
from josefk.connect.api.errors import DataException
from josefk.connect.api.schema import (Date, Decimal, Schema, SchemaBuilder, Struct, Time,
                                       Timestamp, Type)
from josefk.connect.converters.registry import (Reader, RegisteredSchema,
                                                SchemaRegistryConverter, Translation)
from josefk.registry.protobuf_schema import ProtobufSchema
from josefk.registry.schema import InvalidSchema

DEFAULT_MESSAGE = "ConnectDefault"
_SCALARS = {Type.INT8: "int32", Type.INT16: "int32", Type.INT32: "int32", Type.INT64: "int64",
            Type.FLOAT32: "float", Type.FLOAT64: "double", Type.BOOLEAN: "bool",
            Type.STRING: "string", Type.BYTES: "bytes"}
_MAP_KEYS = (Type.INT8, Type.INT16, Type.INT32, Type.INT64, Type.BOOLEAN, Type.STRING)
_WELL_KNOWN = {Timestamp.LOGICAL_NAME: ("google.protobuf.Timestamp",
                                        "google/protobuf/timestamp.proto"),
               Date.LOGICAL_NAME: ("google.type.Date", "google/type/date.proto"),
               Time.LOGICAL_NAME: ("google.type.TimeOfDay", "google/type/timeofday.proto"),
               Decimal.LOGICAL_NAME: ("confluent.type.Decimal", "confluent/type/decimal.proto")}
_WRAPPERS = {Type.INT8: "Int32Value", Type.INT16: "Int32Value", Type.INT32: "Int32Value",
             Type.INT64: "Int64Value", Type.FLOAT32: "FloatValue", Type.FLOAT64: "DoubleValue",
             Type.BOOLEAN: "BoolValue", Type.STRING: "StringValue", Type.BYTES: "BytesValue"}
WRAPPERS_FILE = "google/protobuf/wrappers.proto"
OPTIONAL_FOR_NULLABLES_CONFIG = "optional.for.nullables"
WRAPPER_FOR_NULLABLES_CONFIG = "wrapper.for.nullables"
_UTC = datetime.timezone.utc


def _set_timestamp(msg, value):
    msg.FromDatetime(value if value.tzinfo else value.replace(tzinfo=_UTC))


def _set_date(msg, value):
    msg.year, msg.month, msg.day = value.year, value.month, value.day


def _set_time(msg, value):
    msg.hours, msg.minutes, msg.seconds = value.hour, value.minute, value.second
    msg.nanos = value.microsecond * 1000


def _set_decimal(msg, value):
    sign, digits, exponent = value.as_tuple()
    unscaled = int("".join(map(str, digits)) or "0") * (-1 if sign else 1)
    msg.value = unscaled.to_bytes(max(1, (unscaled.bit_length() + 8) // 8), "big", signed=True)
    msg.precision, msg.scale = len(digits), -exponent


def _read_decimal(msg):
    return decimal.Decimal(int.from_bytes(msg.value, "big", signed=True)).scaleb(-msg.scale)


def _set_wrapped(msg, value):
    msg.value = bytes(value) if isinstance(value, (bytearray, memoryview)) else value


# The message types that stand for one Connect value: (schema builder, reader, setter).
_WELL_KNOWN_TYPES = {
    "google.protobuf.Timestamp": (Timestamp.builder, lambda m: datetime.datetime.fromtimestamp(
        m.seconds, _UTC) + datetime.timedelta(microseconds=m.nanos // 1000), _set_timestamp),
    "google.type.Date": (Date.builder, lambda m: datetime.date(m.year, m.month, m.day),
                         _set_date),
    "google.type.TimeOfDay": (Time.builder, lambda m: datetime.time(
        m.hours, m.minutes, m.seconds, m.nanos // 1000), _set_time),
    # the scale of a decimal's schema is in field options .proto text may not keep: 0 here,
    # as Confluent reads a decimal without them (each value keeps its own scale)
    "confluent.type.Decimal": ((lambda: Decimal.builder(0)), _read_decimal, _set_decimal),
    **{f"google.protobuf.{name}": ((lambda t=t: SchemaBuilder(t)), (lambda m: m.value),
                                   _set_wrapped)
       for name, t in (("Int32Value", Type.INT32), ("UInt32Value", Type.INT64),
                       ("Int64Value", Type.INT64), ("UInt64Value", Type.INT64),
                       ("FloatValue", Type.FLOAT32), ("DoubleValue", Type.FLOAT64),
                       ("BoolValue", Type.BOOLEAN), ("StringValue", Type.STRING),
                       ("BytesValue", Type.BYTES))},
}
class _ToProto:
    """One Connect struct schema as .proto text."""

    def __init__(self, optional_label: bool = False, wrappers: bool = False):
        self.optional_label, self.wrappers = optional_label, wrappers
        self.imports: list[str] = []
        self.unnamed = 0

    def _import(self, path: str) -> None:
        if path not in self.imports:
            self.imports.append(path)

    def _message_name(self, schema: Schema) -> str:
        if schema.name:
            return schema.name.rpartition(".")[2]
        self.unnamed += 1
        return f"{DEFAULT_MESSAGE}{self.unnamed}"

    def _type(self, schema: Schema, nested: dict) -> str:
        if schema.name in _WELL_KNOWN:
            full, path = _WELL_KNOWN[schema.name]
            self._import(path)
            return "." + full
        if schema.type is Type.STRUCT:
            name = self._message_name(schema)
            if nested.setdefault(name, (schema, None))[0] != schema:
                raise DataException(f"two different structs are both named {name}")
            if nested[name][1] is None:
                nested[name] = (schema, self.message(name, schema, "  "))
            return name
        if schema.type in _SCALARS:
            return _SCALARS[schema.type]
        raise DataException(f"Protobuf has no {schema.type.name} inside an array or a map "
                            f"value here")

    def message(self, name: str, schema: Schema, indent: str = "") -> list[str]:
        nested: dict = {}
        lines = []
        for f in schema.fields():
            fs = f.schema
            if fs.type is Type.ARRAY:
                line = f"repeated {self._type(fs.value_schema, nested)}"
            elif fs.type is Type.MAP:
                if fs.key_schema.type not in _MAP_KEYS:
                    raise DataException(f"Protobuf maps need string, integer or boolean keys, "
                                        f"not {fs.key_schema.type.name} (field {f.name})")
                line = (f"map<{_SCALARS[fs.key_schema.type]}, "
                        f"{self._type(fs.value_schema, nested)}>")
            elif fs.optional and fs.type in _SCALARS and fs.name not in _WELL_KNOWN \
                    and (self.wrappers or self.optional_label):
                if self.wrappers:
                    self._import(WRAPPERS_FILE)
                    line = f".google.protobuf.{_WRAPPERS[fs.type]}"
                else:
                    line = "optional " + self._type(fs, nested)
            else:
                line = self._type(fs, nested)
            lines.append(f"{indent}  {line} {f.name} = {f.index + 1};")
        for _schema, body in nested.values():
            lines += [indent + text for text in body]
        return [f"{indent}message {name} {{", *lines, f"{indent}}}"]

    def file(self, schema: Schema) -> str:
        if schema.type is not Type.STRUCT:
            raise DataException("ProtobufConverter needs a struct schema, not "
                                + schema.type.name)
        body = self.message(self._message_name(schema), schema)
        head = ['syntax = "proto3";']
        package = (schema.name or "").rpartition(".")[0]
        if package:
            head.append(f"package {package};")
        head += [f'import "{path}";' for path in self.imports]
        return "\n".join(head + body) + "\n"


def _file(registered: RegisteredSchema, references: list[tuple[str, RegisteredSchema]]):
    """The registered schema's file descriptor, built with the files it imports: the
    well-known types and the schemas it refers to (``references``, each after its own)."""
    try:
        schemas: dict[str, ProtobufSchema] = {}
        for name, dependency in references:
            schemas[name] = ProtobufSchema(
                dependency.schema, {r["name"]: schemas[r["name"]] for r in dependency.references},
                name=name)
        parsed = ProtobufSchema(registered.schema,
                                {r["name"]: schemas[r["name"]] for r in registered.references})
    except InvalidSchema as e:
        raise DataException(str(e)) from None
    pool = descriptor_pool.DescriptorPool()
    added: set[str] = set()

    def add(fdp):
        for dep in fdp.dependency:
            if dep not in added:
                added.add(dep)
                add(parsed.files[dep])
        pool.Add(fdp)
    add(parsed.fdp)
    return pool.FindFileByName(parsed.fdp.name)


def _message_indexes(indexes: list[int]) -> bytes:
    """Confluent's message-index list: zigzag varints, count first; [0] as one 0 byte."""
    if indexes == [0]:
        return b"\x00"
    out = bytearray()
    for n in [len(indexes), *indexes]:
        n = (n << 1) ^ (n >> 63)
        while n > 0x7F:
            out.append((n & 0x7F) | 0x80)
            n >>= 7
        out.append(n)
    return bytes(out)


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        if pos >= len(data):
            raise DataException("truncated message-index list")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7


# ---- Connect values into messages ----------------------------------------------------------

def _filler(descriptor):
    """The function filling a message of ``descriptor`` from a Struct (by field name)."""
    if descriptor.full_name in _WELL_KNOWN_TYPES:
        return _WELL_KNOWN_TYPES[descriptor.full_name][2]
    steps = []
    for fd in descriptor.fields:
        name = fd.name
        if fd.message_type is not None and fd.message_type.GetOptions().map_entry:
            value_fd = fd.message_type.fields_by_name["value"]
            if value_fd.message_type is not None:
                fill_value = _filler(value_fd.message_type)

                def step(msg, v, name=name, fill_value=fill_value):
                    target = getattr(msg, name)
                    for key, item in v.items():
                        fill_value(target[key], item)
            else:
                def step(msg, v, name=name):
                    getattr(msg, name).update(v)
        elif fd.is_repeated:
            if fd.message_type is not None:
                fill_item = _filler(fd.message_type)

                def step(msg, v, name=name, fill_item=fill_item):
                    target = getattr(msg, name)
                    for item in v:
                        fill_item(target.add(), item)
            else:
                def step(msg, v, name=name):
                    getattr(msg, name).extend(bytes(x) if isinstance(x, memoryview) else x
                                              for x in v)
        elif fd.message_type is not None:
            fill = _filler(fd.message_type)

            def step(msg, v, name=name, fill=fill):
                target = getattr(msg, name)
                target.SetInParent()
                fill(target, v)
        else:
            def step(msg, v, name=name):
                setattr(msg, name, bytes(v) if isinstance(v, (bytearray, memoryview)) else v)
        steps.append((name, step))

    def fill(msg, struct):
        if not isinstance(struct, Struct):
            raise DataException(f"Invalid value for a message: {type(struct).__name__}")
        for name, step in steps:
            if struct.schema.field(name) is None:
                continue
            value = struct.get(name)
            if value is not None:
                step(msg, value)
    return fill


# ---- messages into Connect ----------------------------------------------------------------

_INT32 = (FD.TYPE_INT32, FD.TYPE_SINT32, FD.TYPE_SFIXED32, FD.TYPE_UINT32, FD.TYPE_FIXED32)
_INT64 = (FD.TYPE_INT64, FD.TYPE_SINT64, FD.TYPE_SFIXED64, FD.TYPE_UINT64, FD.TYPE_FIXED64)
_FROM_FIELD = {**{t: Type.INT32 for t in _INT32}, **{t: Type.INT64 for t in _INT64},
               FD.TYPE_FLOAT: Type.FLOAT32, FD.TYPE_DOUBLE: Type.FLOAT64,
               FD.TYPE_BOOL: Type.BOOLEAN, FD.TYPE_STRING: Type.STRING,
               FD.TYPE_BYTES: Type.BYTES, FD.TYPE_ENUM: Type.STRING}


def _value_reader(fd, optional: bool = False):
    """(schema, reader of one value) of a singular field's type."""
    if fd.message_type is not None:
        return _message_reader(fd.message_type, optional)
    if fd.type == FD.TYPE_ENUM:
        enum = fd.enum_type
        builder = SchemaBuilder.string()

        def read(v):
            value = enum.values_by_number.get(v)
            return value.name if value is not None else str(v)
    else:
        builder, read = SchemaBuilder(_FROM_FIELD[fd.type]), (lambda v: v)
    return (builder.optional() if optional else builder).build(), read


def _message_reader(descriptor, optional: bool = False):
    """(STRUCT schema, reader of a message) for ``descriptor``."""
    if descriptor.full_name in _WELL_KNOWN_TYPES:
        builder_of, read, _set = _WELL_KNOWN_TYPES[descriptor.full_name]
        builder = builder_of()
        return (builder.optional() if optional else builder).build(), read
    builder = SchemaBuilder.struct()
    if not descriptor.name.startswith(DEFAULT_MESSAGE):
        builder.name(descriptor.full_name)
    readers = []
    for fd in descriptor.fields:
        name = fd.name
        if fd.message_type is not None and fd.message_type.GetOptions().map_entry:
            key_schema, _ = _value_reader(fd.message_type.fields_by_name["key"])
            value_fd = fd.message_type.fields_by_name["value"]
            value_schema, read_value = _value_reader(value_fd, value_fd.message_type is not None)
            field_schema = SchemaBuilder.map(key_schema, value_schema).build()

            def read(msg, name=name, read_value=read_value):
                return {k: read_value(v) for k, v in getattr(msg, name).items()}
        elif fd.is_repeated:
            item_schema, read_item = _value_reader(fd)
            field_schema = SchemaBuilder.array(item_schema).build()

            def read(msg, name=name, read_item=read_item):
                return [read_item(v) for v in getattr(msg, name)]
        else:
            present = fd.message_type is not None or fd.has_presence
            field_schema, read_value = _value_reader(fd, present)

            def read(msg, name=name, read_value=read_value, present=present):
                if present and not msg.HasField(name):
                    return None
                return read_value(getattr(msg, name))
        builder.field(name, field_schema)
        readers.append((builder.field_named(name), read))
    schema = (builder.optional() if optional else builder).build()

    def read_message(msg):
        struct = Struct(schema)
        for field, read in readers:
            struct.put(field, read(msg))
        return struct
    return schema, read_message


class ProtobufConverter(SchemaRegistryConverter):
    """Confluent's ProtobufConverter."""
    schema_type = "PROTOBUF"
    format_name = "Protobuf"

    optional_label = wrappers = False

    def config(self) -> ConfigDef:
        return super().config().define(
            OPTIONAL_FOR_NULLABLES_CONFIG, ConfigType.BOOLEAN, False, None, Importance.LOW,
            "Whether nullable fields should be specified with an optional label",
        ).define(
            WRAPPER_FOR_NULLABLES_CONFIG, ConfigType.BOOLEAN, False, None, Importance.LOW,
            "Whether nullable fields should use primitive wrapper messages")

    def _configure_format(self, settings: dict) -> None:
        self.optional_label = settings[OPTIONAL_FOR_NULLABLES_CONFIG]
        self.wrappers = settings[WRAPPER_FOR_NULLABLES_CONFIG]

    def translate(self, schema: Schema) -> Translation:
        text = _ToProto(self.optional_label, self.wrappers).file(schema)
        return Translation(text, schema.name, lambda value: value)

    def writer(self, registered: RegisteredSchema, ours: Translation):
        file = _file(registered, self.references(registered))
        descriptor = next(iter(file.message_types_by_name.values()))
        cls = message_factory.GetMessageClass(descriptor)
        fill = _filler(descriptor)
        indexes = _message_indexes([0])

        def write(struct) -> bytes:
            msg = cls()
            fill(msg, struct)
            return indexes + msg.SerializeToString()
        return write

    def reader(self, registered: RegisteredSchema) -> Reader:
        if registered.schema_type != "PROTOBUF":
            raise DataException(f"schema {registered.id} is {registered.schema_type}, "
                                "not Protobuf")
        file = _file(registered, self.references(registered))
        top = list(file.message_types_by_name.values())
        by_path: dict[tuple, tuple] = {}

        def reader_for(path: tuple):
            if path not in by_path:
                descriptor = top[path[0]]
                for index in path[1:]:
                    descriptor = descriptor.nested_types[index]
                schema, read = _message_reader(descriptor)
                by_path[path] = (schema, message_factory.GetMessageClass(descriptor), read)
            return by_path[path]
        schema = reader_for((0,))[0]

        def read(payload: bytes):
            count, pos = _read_varint(payload, 0)
            path = [0]
            if count:
                path = []
                for _ in range(count):
                    index, pos = _read_varint(payload, pos)
                    path.append(index)
            _schema, cls, read_message = reader_for(tuple(path))
            return read_message(cls.FromString(payload[pos:]))
        return Reader(schema, read)
