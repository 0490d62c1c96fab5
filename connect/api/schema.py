"""Connect's data model (``org.apache.kafka.connect.data``): schemas of the twelve types,
optional or not, with defaults, names, versions, docs and parameters; structs; the logical
types Decimal, Date, Time and Timestamp.

A value's Python type per schema type: INT8..INT64 ``int``, FLOAT32/FLOAT64 ``float``,
BOOLEAN ``bool``, STRING ``str``, BYTES ``bytes`` (``bytearray``/``memoryview`` accepted),
ARRAY ``list``, MAP ``dict``, STRUCT ``Struct``; the logical types ``decimal.Decimal``,
``datetime.date``, ``datetime.time`` and ``datetime.datetime`` (UTC), as Java's BigDecimal and
java.util.Date. A schema is immutable once built, and compares by value."""
from __future__ import annotations

import datetime
import decimal
import enum
from typing import Any, NamedTuple

from josefk.connect.api.errors import DataException


class Type(enum.Enum):
    INT8 = "int8"
    INT16 = "int16"
    INT32 = "int32"
    INT64 = "int64"
    FLOAT32 = "float32"
    FLOAT64 = "float64"
    BOOLEAN = "boolean"
    STRING = "string"
    BYTES = "bytes"
    ARRAY = "array"
    MAP = "map"
    STRUCT = "struct"

    @property
    def is_primitive(self) -> bool:
        return self not in (Type.ARRAY, Type.MAP, Type.STRUCT)


_INT_RANGES = {Type.INT8: 8, Type.INT16: 16, Type.INT32: 32, Type.INT64: 64}


class Field(NamedTuple):
    name: str
    index: int
    schema: "Schema"


class Schema:
    """An immutable schema; build one with ``SchemaBuilder`` or use the constants
    (``Schema.STRING_SCHEMA``, ``Schema.OPTIONAL_INT64_SCHEMA``, ...)."""

    __slots__ = ("type", "optional", "default", "name", "version", "doc", "parameters",
                 "_fields", "_by_name", "key_schema", "value_schema", "_hash", "_check")

    def __init__(self, type: Type, optional: bool = False, default: Any = None,
                 name: str | None = None, version: int | None = None, doc: str | None = None,
                 parameters: dict[str, str] | None = None,
                 fields: list[Field] | None = None, key_schema: "Schema | None" = None,
                 value_schema: "Schema | None" = None):
        self.type, self.optional, self.name, self.version, self.doc = (
            type, optional, name, version, doc)
        self.parameters = dict(parameters) if parameters else None
        self._fields = tuple(fields) if fields is not None else None
        self._by_name = {f.name: f for f in self._fields} if self._fields is not None else None
        self.key_schema, self.value_schema = key_schema, value_schema
        self._hash = self._check = None
        if default is not None:
            validate_value(self, default, "default value")
        self.default = default

    def fields(self) -> tuple[Field, ...]:
        if self.type is not Type.STRUCT:
            raise DataException("Cannot list fields on non-struct type")
        return self._fields

    def field(self, name: str) -> Field | None:
        if self.type is not Type.STRUCT:
            raise DataException("Cannot look up fields on non-struct type")
        return self._by_name.get(name)

    def schema(self) -> "Schema":
        return self

    def _key(self):
        return (self.type, self.optional, _hashable(self.default), self.name, self.version,
                self.doc, tuple(sorted(self.parameters.items())) if self.parameters else None,
                self._fields, self.key_schema, self.value_schema)

    def __eq__(self, other):
        # the same object first: a Struct's schema is checked against its field's on each put
        return self is other or (isinstance(other, Schema) and self._key() == other._key())

    def __hash__(self):
        if self._hash is None:
            self._hash = hash(self._key())
        return self._hash

    def __repr__(self):
        return f"Schema{{{self.name + ':' if self.name else ''}{self.type.name}}}"


def _hashable(value):
    if isinstance(value, list):
        return tuple(_hashable(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((repr(k), _hashable(v)) for k, v in value.items()))
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    return value


for _t in Type:
    if _t.is_primitive:
        setattr(Schema, f"{_t.name}_SCHEMA", Schema(_t))
        setattr(Schema, f"OPTIONAL_{_t.name}_SCHEMA", Schema(_t, optional=True))


class SchemaBuilder:
    """Connect's fluent builder: ``SchemaBuilder.struct().name("x").field("id",
    Schema.INT64_SCHEMA).optional().build()``."""

    def __init__(self, type: Type):
        self.type = type
        self._optional, self._default, self._name, self._version = False, None, None, None
        self._doc, self._parameters = None, None
        self._fields: dict[str, Field] | None = {} if type is Type.STRUCT else None
        self._key_schema = self._value_schema = None

    # one constructor per type, as Java's
    @classmethod
    def int8(cls): return cls(Type.INT8)
    @classmethod
    def int16(cls): return cls(Type.INT16)
    @classmethod
    def int32(cls): return cls(Type.INT32)
    @classmethod
    def int64(cls): return cls(Type.INT64)
    @classmethod
    def float32(cls): return cls(Type.FLOAT32)
    @classmethod
    def float64(cls): return cls(Type.FLOAT64)
    @classmethod
    def bool(cls): return cls(Type.BOOLEAN)
    @classmethod
    def string(cls): return cls(Type.STRING)
    @classmethod
    def bytes(cls): return cls(Type.BYTES)
    @classmethod
    def struct(cls): return cls(Type.STRUCT)

    @classmethod
    def array(cls, value_schema: Schema) -> "SchemaBuilder":
        b = cls(Type.ARRAY)
        b._value_schema = value_schema
        return b

    @classmethod
    def map(cls, key_schema: Schema, value_schema: Schema) -> "SchemaBuilder":
        b = cls(Type.MAP)
        b._key_schema, b._value_schema = key_schema, value_schema
        return b

    @classmethod
    def type_of(cls, type: Type) -> "SchemaBuilder":
        return cls(type)

    def _once(self, attr: str, value, what: str):
        if getattr(self, attr) is not None and getattr(self, attr) != value:
            raise DataException(f"Invalid SchemaBuilder call: {what} has already been set.")
        setattr(self, attr, value)
        return self

    def optional(self) -> "SchemaBuilder":
        self._optional = True
        return self

    def required(self) -> "SchemaBuilder":
        self._optional = False
        return self

    def default_value(self, value) -> "SchemaBuilder":
        # checked against the finished schema in build(), where the fields are known
        return self._once("_default", value, "default")

    def name(self, name: str) -> "SchemaBuilder":
        return self._once("_name", name, "name")

    def version(self, version: int) -> "SchemaBuilder":
        return self._once("_version", version, "version")

    def doc(self, doc: str) -> "SchemaBuilder":
        return self._once("_doc", doc, "doc")

    def parameter(self, name: str, value: str) -> "SchemaBuilder":
        self._parameters = {**(self._parameters or {}), name: value}
        return self

    def parameters(self, params: dict[str, str]) -> "SchemaBuilder":
        self._parameters = {**(self._parameters or {}), **params}
        return self

    def field(self, name: str, schema: "Schema | SchemaBuilder") -> "SchemaBuilder":
        if self.type is not Type.STRUCT:
            raise DataException("Cannot create fields on type " + self.type.name)
        if not name:
            raise DataException("fieldName cannot be null.")
        if name in self._fields:
            raise DataException("Cannot create field because of field name duplication " + name)
        if isinstance(schema, SchemaBuilder):
            schema = schema.build()
        self._fields[name] = Field(name, len(self._fields), schema)
        return self

    def fields(self) -> tuple[Field, ...]:
        if self.type is not Type.STRUCT:
            raise DataException("Cannot list fields on non-struct type")
        return tuple(self._fields.values())

    def field_named(self, name: str) -> Field | None:
        return self._fields.get(name) if self._fields is not None else None

    @property
    def is_optional(self) -> bool:
        return self._optional

    def build(self) -> Schema:
        return Schema(self.type, self._optional, self._default, self._name, self._version,
                      self._doc, self._parameters,
                      list(self._fields.values()) if self._fields is not None else None,
                      self._key_schema, self._value_schema)

    def schema(self) -> Schema:
        return self.build()


class SchemaAndValue(NamedTuple):
    schema: Schema | None
    value: Any


SchemaAndValue.NULL = SchemaAndValue(None, None)


class Struct:
    """A record of a STRUCT schema: values by field name, checked as they are put."""

    __slots__ = ("schema", "_values")

    def __init__(self, schema: Schema):
        if schema.type is not Type.STRUCT:
            raise DataException("Not a struct schema: " + repr(schema))
        self.schema = schema
        self._values: list = [None] * len(schema.fields())

    def _field(self, name: str) -> Field:
        field = self.schema.field(name)
        if field is None:
            raise DataException(f"{name} is not a valid field name")
        return field

    def put(self, name: str | Field, value) -> "Struct":
        field = name if isinstance(name, Field) else self._field(name)
        validate_value(field.schema, value, f'field "{field.name}"')
        self._values[field.index] = value
        return self

    def get(self, name: str | Field):
        """The field's value, or its schema's default where none was put."""
        field = name if isinstance(name, Field) else self._field(name)
        value = self._values[field.index]
        return field.schema.default if value is None else value

    def get_without_default(self, name: str):
        return self._values[self._field(name).index]

    @classmethod
    def of(cls, schema: Schema, values: list) -> "Struct":
        """A struct of ``values`` in field order, each checked as ``put`` checks it."""
        struct = cls(schema)
        fields = schema.fields()
        if len(values) != len(fields):
            raise DataException(f"{len(values)} values for the {len(fields)} fields of "
                                f"{schema!r}")
        for field, value in zip(fields, values):
            validate_value(field.schema, value, f'field "{field.name}"')
        struct._values = list(values)
        return struct

    def validate(self) -> None:
        """Connect's Struct.validate. What ``put`` checked stays valid, but for containers,
        which may have changed since: a required field not put, and arrays, maps and structs
        are checked again."""
        for field, value in zip(self.schema.fields(), self._values):
            if value is None or isinstance(value, _MUTABLE):
                validate_value(field.schema, value, f'field "{field.name}"')

    def __eq__(self, other):
        return (isinstance(other, Struct) and self.schema == other.schema
                and self._values == other._values)

    def __hash__(self):
        return hash((self.schema, _hashable(self._values)))

    def __repr__(self):
        body = ",".join(f"{f.name}={self._values[f.index]!r}" for f in self.schema.fields())
        return f"Struct{{{body}}}"


# ---- logical types -----------------------------------------------------------------------

class Decimal:
    """Arbitrary-precision decimals as BYTES: the unscaled value's big-endian two's
    complement, the scale in the ``scale`` parameter."""
    LOGICAL_NAME = "org.apache.kafka.connect.data.Decimal"
    SCALE_FIELD = "scale"

    @staticmethod
    def builder(scale: int) -> SchemaBuilder:
        return SchemaBuilder.bytes().name(Decimal.LOGICAL_NAME).parameter(
            Decimal.SCALE_FIELD, str(scale)).version(1)

    @staticmethod
    def schema(scale: int) -> Schema:
        return Decimal.builder(scale).build()

    @staticmethod
    def scale(schema: Schema) -> int:
        try:
            return int((schema.parameters or {})[Decimal.SCALE_FIELD])
        except (KeyError, ValueError):
            raise DataException("Invalid Decimal schema: scale parameter not found.") from None

    @staticmethod
    def from_logical(schema: Schema, value: decimal.Decimal) -> bytes:
        scale = Decimal.scale(schema)
        sign, digits, exponent = value.as_tuple()
        if -exponent != scale:
            raise DataException(
                f"Decimal value has mismatching scale for given Decimal schema: "
                f"schema scale {scale}, value scale {-exponent}")
        unscaled = int("".join(map(str, digits)) or "0") * (-1 if sign else 1)
        length = max(1, (unscaled.bit_length() + 8) // 8)
        return unscaled.to_bytes(length, "big", signed=True)

    @staticmethod
    def to_logical(schema: Schema, value: bytes) -> decimal.Decimal:
        unscaled = int.from_bytes(value, "big", signed=True)
        return decimal.Decimal(unscaled).scaleb(-Decimal.scale(schema))


_EPOCH_DATE = datetime.date(1970, 1, 1)
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
MILLIS_PER_DAY = 86_400_000


class Date:
    """A date as INT32: days since the Unix epoch."""
    LOGICAL_NAME = "org.apache.kafka.connect.data.Date"

    @staticmethod
    def builder() -> SchemaBuilder:
        return SchemaBuilder.int32().name(Date.LOGICAL_NAME).version(1)

    @staticmethod
    def from_logical(schema: Schema, value: datetime.date) -> int:
        if isinstance(value, datetime.datetime):
            if value.time() != datetime.time(0) or value.utcoffset():
                raise DataException("Kafka Connect Date type should not have any time fields "
                                    "set to non-zero values.")
            value = value.date()
        return (value - _EPOCH_DATE).days

    @staticmethod
    def to_logical(schema: Schema, value: int) -> datetime.date:
        return _EPOCH_DATE + datetime.timedelta(days=value)


class Time:
    """A time of day as INT32: milliseconds since midnight."""
    LOGICAL_NAME = "org.apache.kafka.connect.data.Time"

    @staticmethod
    def builder() -> SchemaBuilder:
        return SchemaBuilder.int32().name(Time.LOGICAL_NAME).version(1)

    @staticmethod
    def from_logical(schema: Schema, value: datetime.time) -> int:
        if isinstance(value, datetime.datetime):
            value = value.astimezone(datetime.timezone.utc).time() if value.tzinfo else value.time()
        millis = ((value.hour * 60 + value.minute) * 60 + value.second) * 1000 \
            + value.microsecond // 1000
        return millis

    @staticmethod
    def to_logical(schema: Schema, value: int) -> datetime.time:
        if not 0 <= value < MILLIS_PER_DAY:
            raise DataException("Time values must use number of milliseconds greater than 0 "
                                "and less than 86400000")
        seconds, millis = divmod(value, 1000)
        minutes, second = divmod(seconds, 60)
        hour, minute = divmod(minutes, 60)
        return datetime.time(hour, minute, second, millis * 1000)


class Timestamp:
    """An instant as INT64: milliseconds since the Unix epoch (UTC)."""
    LOGICAL_NAME = "org.apache.kafka.connect.data.Timestamp"

    @staticmethod
    def builder() -> SchemaBuilder:
        return SchemaBuilder.int64().name(Timestamp.LOGICAL_NAME).version(1)

    @staticmethod
    def from_logical(schema: Schema, value: datetime.datetime) -> int:
        if value.tzinfo is None:
            value = value.replace(tzinfo=datetime.timezone.utc)
        delta = value - _EPOCH
        return (delta.days * MILLIS_PER_DAY + delta.seconds * 1000
                + delta.microseconds // 1000)

    @staticmethod
    def to_logical(schema: Schema, value: int) -> datetime.datetime:
        return _EPOCH + datetime.timedelta(milliseconds=value)


for _logical in (Date, Time, Timestamp):
    _logical.SCHEMA = _logical.builder().build()

LOGICAL_TYPES = {Decimal.LOGICAL_NAME: Decimal, Date.LOGICAL_NAME: Date,
                 Time.LOGICAL_NAME: Time, Timestamp.LOGICAL_NAME: Timestamp}
_LOGICAL_PYTHON = {Decimal.LOGICAL_NAME: (decimal.Decimal,), Date.LOGICAL_NAME: (datetime.date,),
                   Time.LOGICAL_NAME: (datetime.time,),
                   Timestamp.LOGICAL_NAME: (datetime.datetime,)}
_PYTHON = {Type.INT8: (int,), Type.INT16: (int,), Type.INT32: (int,), Type.INT64: (int,),
           Type.FLOAT32: (float,), Type.FLOAT64: (float,), Type.BOOLEAN: (bool,),
           Type.STRING: (str,), Type.BYTES: (bytes, bytearray, memoryview),
           Type.ARRAY: (list,), Type.MAP: (dict,), Type.STRUCT: (Struct,)}


_MUTABLE = (list, dict, Struct, bytearray)


def validate_value(schema: Schema, value, where: str = "value") -> None:
    """Raise DataException unless ``value`` fits ``schema`` (Connect's
    ConnectSchema.validateValue): None only where optional or defaulted, the Python type of
    the schema's type (or of its logical type), integers in their width, every element, entry
    and field recursively."""
    if value is None:
        if not schema.optional and schema.default is None:
            raise DataException(f"Invalid value: null used for required {where}, schema type: "
                                f"{schema.type.name}")
        return
    check = schema._check
    if check is None:  # once per schema: the Python types it takes, an integer's width
        logical = _LOGICAL_PYTHON.get(schema.name)
        check = schema._check = (logical or _PYTHON[schema.type], logical is not None,
                                 _INT_RANGES.get(schema.type))
    expected, logical, bits = check
    if not isinstance(value, expected) or (isinstance(value, bool)
                                           and schema.type is not Type.BOOLEAN):
        raise DataException(f"Invalid value for schema \"{schema!r}\" with type "
                            f"{schema.type.name}: {type(value).__name__} for {where}")
    if logical:
        return
    if bits and not -(1 << (bits - 1)) <= value < (1 << (bits - 1)):
        raise DataException(f"Invalid value {value} for {where}: out of range for "
                            f"{schema.type.name}")
    if schema.type is Type.ARRAY:
        for item in value:
            validate_value(schema.value_schema, item, "element of array")
    elif schema.type is Type.MAP:
        for k, v in value.items():
            validate_value(schema.key_schema, k, "key of map")
            validate_value(schema.value_schema, v, "value of map")
    elif schema.type is Type.STRUCT:
        if value.schema != schema:
            raise DataException("Struct schemas do not match.")
        value.validate()
