"""Cast: a key's or value's fields (``spec`` of ``field:type`` pairs), or the whole key or
value (``spec`` of one type), to int8, int16, int32, int64, float32, float64, boolean or string,
as Java casts them: integers narrow by wrapping, floats truncate, strings parse strictly, a
boolean is true where the string is "true" in any case. Bytes cast to a string in base64,
Decimal values as numbers (or their plain text); Date, Time and Timestamp values cast to their
ISO 8601 text, and to numbers as what they are stored as (days since the epoch, milliseconds
since midnight, milliseconds since the epoch). Arrays, maps and structs are refused."""
from __future__ import annotations

import base64
import datetime
import decimal
import math
import re
import struct

from josefk.connect.api.config import ConfigDef, ConfigException, Importance, LambdaValidator, Type
from josefk.connect.api.errors import DataException
from josefk.connect.api.schema import (LOGICAL_TYPES, Date, Schema, SchemaBuilder, Struct, Time,
                                       Timestamp)
from josefk.connect.api.schema import Type as SchemaType
from josefk.connect.transforms.date_format import SimpleDateFormat
from josefk.connect.transforms.util import (REPLACE_NULL_WITH_DEFAULT_CONFIG, SchemaCache,
                                            Transform, class_name, copy_schema_basics,
                                            define_replace_null_with_default, field_value,
                                            key_and_value, require_map, require_struct)

SPEC = "spec"
PURPOSE = "cast types"
_ST = SchemaType
SUPPORTED_INPUT = [_ST.INT8, _ST.INT16, _ST.INT32, _ST.INT64, _ST.FLOAT32, _ST.FLOAT64,
                   _ST.BOOLEAN, _ST.STRING, _ST.BYTES]
SUPPORTED_OUTPUT = SUPPORTED_INPUT[:-1]
WHOLE_VALUE = None  # the spec's key for a cast of the whole key or value
_INTEGER = re.compile(r"[+-]?\d+")
_BITS = {_ST.INT8: 8, _ST.INT16: 16, _ST.INT32: 32, _ST.INT64: 64}
_ISO_TIME = SimpleDateFormat("HH:mm:ss.SSS'Z'")
_ISO_DATE = SimpleDateFormat("yyyy-MM-dd")
_ISO_TIMESTAMP = SimpleDateFormat("yyyy-MM-dd'T'HH:mm:ss.SSS'Z'")
_MILLIS_PER_DAY = 86_400_000
_TEMPORAL = (Date.LOGICAL_NAME, Time.LOGICAL_NAME, Timestamp.LOGICAL_NAME)


def _names(types) -> str:
    return "[" + ", ".join(t.name for t in types) + "]"


def _valid_cast_type(schema_type: SchemaType, output: bool) -> SchemaType:
    if output and schema_type not in SUPPORTED_OUTPUT:
        raise ConfigException(f"Cast transformation does not support casting to "
                              f"{schema_type.name}; supported types are "
                              f"{_names(SUPPORTED_OUTPUT)}")
    if not output and schema_type not in SUPPORTED_INPUT:
        raise DataException(f"Cast transformation does not support casting from "
                            f"{schema_type.name}; supported types are {_names(SUPPORTED_INPUT)}")
    return schema_type


def _schema_type(name: str) -> SchemaType:
    try:
        return SchemaType[name.strip().upper()]
    except KeyError:
        raise ConfigException(f"Invalid type found in casting spec: {name.strip()}") from None


def parse_field_types(mappings: list[str]) -> dict:
    casts = {}
    whole_value = False
    for mapping in mappings:
        parts = mapping.split(":")
        if len(parts) > 2:
            raise ConfigException("renames", mappings, "Invalid rename mapping: " + mapping)
        if len(parts) == 1:
            casts[WHOLE_VALUE] = _valid_cast_type(_schema_type(parts[0]), output=True)
            whole_value = True
        else:
            casts[parts[0].strip()] = _valid_cast_type(_schema_type(parts[1]), output=True)
    if whole_value and len(mappings) > 1:
        raise ConfigException("Cast transformations that specify a type to cast the entire value "
                              "to may ony specify a single cast in their spec")
    return casts


def _check_spec(name, value):
    if not value:
        raise ConfigException("Must specify at least one field to cast.")
    parse_field_types(value)


def _inferred_type(value) -> SchemaType | None:
    """Connect's type of a schemaless value (ConnectSchema.schemaType): None for the Python
    types of the logical types, which have no schemaless form."""
    for python_type, schema_type in ((bool, _ST.BOOLEAN), (int, _ST.INT64),
                                     (float, _ST.FLOAT64), (str, _ST.STRING),
                                     ((bytes, bytearray, memoryview), _ST.BYTES),
                                     (list, _ST.ARRAY), (dict, _ST.MAP), (Struct, _ST.STRUCT)):
        if isinstance(value, python_type):
            return schema_type
    return None


def _millis(value) -> int:
    if isinstance(value, datetime.datetime):
        return Timestamp.from_logical(None, value)
    if isinstance(value, datetime.date):
        return Date.from_logical(None, value) * _MILLIS_PER_DAY
    return Time.from_logical(None, value)


def _java_int(value, bits: int) -> int:
    """Java's narrowing of a Number: floats truncate and saturate at int (long for 64 bits),
    then every integer keeps its low ``bits`` bits."""
    if isinstance(value, float):
        if math.isnan(value):
            return 0
        limit = 64 if bits == 64 else 32
        if math.isinf(value):
            value = (1 << (limit - 1)) - 1 if value > 0 else -(1 << (limit - 1))
        else:
            value = max(-(1 << (limit - 1)), min((1 << (limit - 1)) - 1, int(value)))
    elif isinstance(value, decimal.Decimal):
        value = int(value)
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


def _float32(value: float) -> float:
    try:
        return struct.unpack("f", struct.pack("f", value))[0]
    except OverflowError:
        return math.copysign(math.inf, value)


def _cast(value, target: SchemaType):
    if target in _BITS:
        if isinstance(value, bool):
            return int(value)
        if isinstance(value, (int, float, decimal.Decimal)):
            return _java_int(value, _BITS[target])
        if isinstance(value, str):
            bits = _BITS[target]
            if _INTEGER.fullmatch(value) and -(1 << (bits - 1)) <= int(value) < 1 << (bits - 1):
                return int(value)
            raise DataException(f"Value ({value}) was out of range for requested data type")
    elif target in (_ST.FLOAT32, _ST.FLOAT64):
        if isinstance(value, (bool, int, float, decimal.Decimal)):
            number = float(value)
        elif isinstance(value, str):
            try:
                number = float(value)
            except ValueError:
                raise DataException(f"Value ({value}) was out of range for requested data "
                                    f"type") from None
        else:
            number = None
        if number is not None:
            return _float32(number) if target is _ST.FLOAT32 else number
    elif target is _ST.BOOLEAN:
        if isinstance(value, bool):
            return value
        if isinstance(value, (int, float, decimal.Decimal)):
            return _java_int(value, 64) != 0
        if isinstance(value, str):
            return value.lower() == "true"
    elif target is _ST.STRING:
        return _to_string(value)
    raise DataException(f"Unexpected type in Cast transformation: {class_name(value)}")


def _to_string(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (datetime.date, datetime.time)):
        millis = _millis(value)
        form = (_ISO_TIME if millis < _MILLIS_PER_DAY else
                _ISO_DATE if millis % _MILLIS_PER_DAY == 0 else _ISO_TIMESTAMP)
        return form.format(millis)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    return str(value)


def cast_value(schema: Schema | None, value, target: SchemaType):
    if value is None:
        return None
    inferred = schema.type if schema is not None else _inferred_type(value)
    if inferred is None:
        raise DataException(f"Cast transformation was passed a value of type "
                            f"{class_name(value)} which is not supported by Connect's data API")
    _valid_cast_type(inferred, output=False)
    if target is not _ST.STRING and schema is not None and schema.name in _TEMPORAL:
        value = LOGICAL_TYPES[schema.name].from_logical(schema, value)
    return _cast(value, target)


@key_and_value
class Cast(Transform):
    CONFIG_DEF = define_replace_null_with_default(ConfigDef().define(
        SPEC, Type.LIST, validator=LambdaValidator(
            _check_spec, "list of colon-delimited pairs, e.g. <code>foo:bar,abc:xyz</code>"),
        importance=Importance.HIGH,
        documentation="List of fields and the type to cast them to of the form "
                      "field1:type,field2:type to cast fields of Maps or Structs. A single type "
                      "to cast the entire value. Valid types are int8, int16, int32, int64, "
                      "float32, float64, boolean, and string. Note that binary fields can only "
                      "be cast to string."))

    def configure(self, configs: dict) -> None:
        config = self.CONFIG_DEF.parse(configs)
        self.casts = parse_field_types(config[SPEC])
        self.whole_value_type = self.casts.get(WHOLE_VALUE)
        self.replace_null_with_default = config[REPLACE_NULL_WITH_DEFAULT_CONFIG]
        self._schemas = SchemaCache()

    def apply(self, record):
        schema = self.operating_schema(record)
        value = self.operating_value(record)
        if schema is None:
            if self.whole_value_type is not None:
                return self.new_record(record, None,
                                       cast_value(None, value, self.whole_value_type))
            value = require_map(value, PURPOSE)
            updated = dict(value)
            for name, target in self.casts.items():
                updated[name] = cast_value(None, value.get(name), target)
            return self.new_record(record, None, updated)
        updated_schema = self._schemas.get(schema, self._updated_schema)
        if self.whole_value_type is not None:
            return self.new_record(record, updated_schema,
                                   cast_value(schema, value, self.whole_value_type))
        value = require_struct(value, PURPOSE)
        updated = Struct(updated_schema)
        for field in value.schema.fields():
            original = field_value(value, field.name, self.replace_null_with_default)
            target = self.casts.get(field.name)
            updated.put(field.name, original if target is None
                        else cast_value(field.schema, original, target))
        return self.new_record(record, updated_schema, updated)

    def _updated_schema(self, schema: Schema) -> Schema:
        if self.whole_value_type is not None:
            builder = SchemaBuilder(self.whole_value_type)
            if schema.name not in LOGICAL_TYPES:
                copy_schema_basics(schema, builder)
        else:
            builder = copy_schema_basics(schema, SchemaBuilder.struct())
            for field in schema.fields():
                target = self.casts.get(field.name)
                if target is None:
                    builder.field(field.name, field.schema)
                    continue
                field_builder = SchemaBuilder(target)
                if field.schema.optional:
                    field_builder.optional()
                if field.schema.default is not None:
                    field_builder.default_value(
                        cast_value(field.schema, field.schema.default, target))
                builder.field(field.name, field_builder.build())
        if schema.optional:
            builder.optional()
        if schema.default is not None and self.whole_value_type is not None:
            builder.default_value(cast_value(schema, schema.default, self.whole_value_type))
        return builder.build()
