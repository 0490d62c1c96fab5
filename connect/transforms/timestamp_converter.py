"""TimestampConverter: a timestamp (the whole key or value, or its ``field``) between a
string (``format``, a Java SimpleDateFormat pattern), Unix time (``unix.precision``) and
Connect's Date, Time and Timestamp, in UTC."""
from __future__ import annotations

import datetime

from josefk.connect.api.config import ConfigDef, ConfigException, Importance, Type, ValidString
from josefk.connect.api.errors import ConnectException, DataException
from josefk.connect.api.schema import Date, Schema, SchemaBuilder, Struct, Time, Timestamp
from josefk.connect.api.schema import Type as SchemaType
from josefk.connect.transforms.date_format import PatternError, SimpleDateFormat
from josefk.connect.transforms.util import (REPLACE_NULL_WITH_DEFAULT_CONFIG, SchemaCache,
                                            Transform, class_name, copy_schema_basics,
                                            define_replace_null_with_default, field_value,
                                            key_and_value, require_map, require_struct_or_null)

FIELD, TARGET_TYPE, FORMAT, UNIX_PRECISION = "field", "target.type", "format", "unix.precision"
TYPE_STRING, TYPE_UNIX, TYPE_DATE, TYPE_TIME, TYPE_TIMESTAMP = (
    "string", "unix", "Date", "Time", "Timestamp")
VALID_TYPES = [TYPE_STRING, TYPE_UNIX, TYPE_DATE, TYPE_TIME, TYPE_TIMESTAMP]
PRECISIONS = ["nanoseconds", "microseconds", "milliseconds", "seconds"]
PURPOSE = "converting timestamp formats"
MILLIS_PER_DAY = 86_400_000
# millis = unix * numerator // denominator, truncated toward zero as Java's TimeUnit does
_TO_MILLIS = {"seconds": (1000, 1), "milliseconds": (1, 1), "microseconds": (1, 1000),
              "nanoseconds": (1, 1_000_000)}
_LOGICAL = {Timestamp.LOGICAL_NAME: TYPE_TIMESTAMP, Date.LOGICAL_NAME: TYPE_DATE,
            Time.LOGICAL_NAME: TYPE_TIME}
_SCHEMAS = {TYPE_STRING: (Schema.STRING_SCHEMA, Schema.OPTIONAL_STRING_SCHEMA),
            TYPE_UNIX: (Schema.INT64_SCHEMA, Schema.OPTIONAL_INT64_SCHEMA),
            TYPE_DATE: (Date.SCHEMA, Date.builder().optional().build()),
            TYPE_TIME: (Time.SCHEMA, Time.builder().optional().build()),
            TYPE_TIMESTAMP: (Timestamp.SCHEMA, Timestamp.builder().optional().build())}
_PYTHON = {TYPE_DATE: datetime.date, TYPE_TIME: datetime.time,
           TYPE_TIMESTAMP: datetime.datetime}


def _truncating(numerator: int, value: int, denominator: int) -> int:
    product = value * numerator
    return product // denominator if product >= 0 else -(-product // denominator)


def infer_timestamp_type(value) -> str:
    if isinstance(value, datetime.datetime):
        return TYPE_TIMESTAMP
    if isinstance(value, datetime.date):
        return TYPE_DATE
    if isinstance(value, datetime.time):
        return TYPE_TIME
    if isinstance(value, int) and not isinstance(value, bool):
        return TYPE_UNIX
    if isinstance(value, str):
        return TYPE_STRING
    raise DataException(f"TimestampConverter does not support {class_name(value)} objects as "
                        f"timestamps")


def timestamp_type_from_schema(schema: Schema) -> str:
    logical = _LOGICAL.get(schema.name)
    if logical is not None:
        return logical
    if schema.type is SchemaType.STRING:
        return TYPE_STRING
    if schema.type is SchemaType.INT64:
        return TYPE_UNIX
    raise ConnectException(f"Schema {schema!r} does not correspond to a known timestamp type "
                           f"format")


@key_and_value
class TimestampConverter(Transform):
    CONFIG_DEF = define_replace_null_with_default(
        ConfigDef()
        .define(FIELD, Type.STRING, "", importance=Importance.HIGH,
                documentation="The field containing the timestamp, or empty if the entire "
                              "value is a timestamp")
        .define(TARGET_TYPE, Type.STRING, validator=ValidString(VALID_TYPES),
                importance=Importance.HIGH,
                documentation="The desired timestamp representation: string, unix, Date, Time, "
                              "or Timestamp")
        .define(FORMAT, Type.STRING, "", importance=Importance.MEDIUM,
                documentation="A SimpleDateFormat-compatible format for the timestamp. Used to "
                              "generate the output when type=string or used to parse the input "
                              "if the input is a string.")
        .define(UNIX_PRECISION, Type.STRING, "milliseconds", ValidString(PRECISIONS),
                Importance.LOW,
                "The desired Unix precision for the timestamp: seconds, milliseconds, "
                "microseconds, or nanoseconds. Used to generate the output when type=unix or "
                "used to parse the input if the input is a Long.Note: This SMT will cause "
                "precision loss during conversions from, and to, values with sub-millisecond "
                "components."))

    def configure(self, configs: dict) -> None:
        config = self.CONFIG_DEF.parse(configs)
        self.field = config[FIELD]
        self.target_type = config[TARGET_TYPE]
        self.unix_precision = config[UNIX_PRECISION]
        self.replace_null_with_default = config[REPLACE_NULL_WITH_DEFAULT_CONFIG]
        pattern = config[FORMAT]
        if self.target_type == TYPE_STRING and not pattern.strip():
            raise ConfigException("TimestampConverter requires format option to be specified "
                                  "when using string timestamps")
        self.format = None
        if pattern.strip():
            try:
                self.format = SimpleDateFormat(pattern)
            except PatternError as e:
                raise ConfigException(f"TimestampConverter requires a SimpleDateFormat-compatible "
                                      f"pattern for string timestamps: {pattern} ({e})") from None
        self._schemas = SchemaCache()

    # ---- the representations, each to and from epoch milliseconds ----

    def _to_millis(self, value, kind: str) -> int:
        if kind == TYPE_STRING:
            if not isinstance(value, str):
                raise DataException(f"Expected string timestamp to be a String, but found "
                                    f"{class_name(value)}")
            if self.format is None:
                raise DataException("TimestampConverter requires format option to parse "
                                    "string timestamps")
            try:
                return self.format.parse(value)
            except ValueError:
                raise DataException(f"Could not parse timestamp: value ({value}) does not match "
                                    f"pattern ({self.format.pattern})") from None
        if kind == TYPE_UNIX:
            if not isinstance(value, int) or isinstance(value, bool):
                raise DataException(f"Expected Unix timestamp to be a Long, but found "
                                    f"{class_name(value)}")
            numerator, denominator = _TO_MILLIS[self.unix_precision]
            return _truncating(numerator, value, denominator)
        if not isinstance(value, _PYTHON[kind]):
            raise DataException(f"Expected {kind} to be a {_PYTHON[kind].__module__}."
                                f"{_PYTHON[kind].__name__}, but found {class_name(value)}")
        if isinstance(value, datetime.datetime):
            return Timestamp.from_logical(None, value)
        if isinstance(value, datetime.date):
            return Date.from_logical(None, value) * MILLIS_PER_DAY
        return Time.from_logical(None, value)

    def _from_millis(self, millis: int):
        target = self.target_type
        if target == TYPE_STRING:
            return self.format.format(millis)
        if target == TYPE_UNIX:
            denominator, numerator = _TO_MILLIS[self.unix_precision]
            return _truncating(numerator, millis, denominator)
        if target == TYPE_DATE:
            return Date.to_logical(None, millis // MILLIS_PER_DAY)
        if target == TYPE_TIME:
            return Time.to_logical(None, millis % MILLIS_PER_DAY)
        return Timestamp.to_logical(None, millis)

    def convert(self, value, kind: str | None = None):
        if value is None:
            return None
        return self._from_millis(self._to_millis(value, kind or infer_timestamp_type(value)))

    def _type_schema(self, optional: bool) -> Schema:
        return _SCHEMAS[self.target_type][1 if optional else 0]

    # ---- records ----

    def apply(self, record):
        schema = self.operating_schema(record)
        value = self.operating_value(record)
        if schema is None:
            if value is None or not self.field:
                return self.new_record(record, None, self.convert(value))
            value = require_map(value, PURPOSE)
            updated = dict(value)
            updated[self.field] = self.convert(value.get(self.field))
            return self.new_record(record, None, updated)
        if not self.field:
            return self.new_record(record, self._type_schema(schema.optional),
                                   self.convert(value, timestamp_type_from_schema(schema)))
        value = require_struct_or_null(value, PURPOSE)
        updated_schema = self._schemas.get(schema, self._updated_schema)
        return self.new_record(record, updated_schema,
                               self._updated_struct(value, updated_schema))

    def _updated_schema(self, schema: Schema) -> Schema:
        builder = copy_schema_basics(schema, SchemaBuilder.struct())
        for field in schema.fields():
            builder.field(field.name, self._type_schema(field.schema.optional)
                          if field.name == self.field else field.schema)
        if schema.optional:
            builder.optional()
        return builder.build()

    def _updated_struct(self, value: Struct | None, schema: Schema) -> Struct | None:
        if value is None:
            return None
        updated = Struct(schema)
        for field in value.schema.fields():
            original = field_value(value, field.name, self.replace_null_with_default)
            updated.put(field.name, self.convert(original, timestamp_type_from_schema(field.schema))
                        if field.name == self.field else original)
        return updated
