"""The transforms on a record's headers: HeaderFrom (fields of the key or value copied or
moved to headers), InsertHeader (a header with a literal value on every record) and
DropHeaders (headers removed by name)."""
from __future__ import annotations

import decimal
import math
import re
import struct

from josefk.connect.api.config import (ConfigDef, ConfigException, Importance, NonNull, Type,
                                       ValidString)
from josefk.connect.api.errors import DataException
from josefk.connect.api.records import Headers
from josefk.connect.api.schema import (MILLIS_PER_DAY, Date, Decimal, Schema, SchemaAndValue,
                                       SchemaBuilder, Struct, Time, Timestamp)
from josefk.connect.transforms.date_format import SimpleDateFormat
from josefk.connect.transforms.util import (REPLACE_NULL_WITH_DEFAULT_CONFIG,
                                            NonEmptyListValidator, SchemaCache, Transform,
                                            copy_schema_basics, define_replace_null_with_default,
                                            field_value, key_and_value, require_map,
                                            require_struct)

FIELDS, HEADERS, OPERATION = "fields", "headers", "operation"
MOVE, COPY = "move", "copy"
HEADER, VALUE_LITERAL = "header", "value.literal"
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


@key_and_value
class HeaderFrom(Transform):
    CONFIG_DEF = define_replace_null_with_default(
        ConfigDef()
        .define(FIELDS, Type.LIST, validator=NonEmptyListValidator(), importance=Importance.HIGH,
                documentation="Field names in the record whose values are to be copied or moved "
                              "to headers.")
        .define(HEADERS, Type.LIST, validator=NonEmptyListValidator(),
                importance=Importance.HIGH,
                documentation="Header names, in the same order as the field names listed in the "
                              "fields configuration property.")
        .define(OPERATION, Type.STRING, validator=ValidString([MOVE, COPY]),
                importance=Importance.HIGH,
                documentation="Either <code>move</code> if the fields are to be moved to the "
                              "headers (removed from the key/value), or <code>copy</code> if the "
                              "fields are to be copied to the headers (retained in the "
                              "key/value)."))

    def configure(self, configs: dict) -> None:
        config = self.CONFIG_DEF.parse(configs)
        self.fields, self.headers = config[FIELDS], config[HEADERS]
        if len(self.fields) != len(self.headers):
            raise ConfigException(f"'{FIELDS}' config must have the same number of elements as "
                                  f"'{HEADERS}' config.")
        self.move = config[OPERATION] == MOVE
        self.purpose = "header " + config[OPERATION]
        self.replace_null_with_default = config[REPLACE_NULL_WITH_DEFAULT_CONFIG]
        self._moved_fields = frozenset(self.fields)
        self._schemas = SchemaCache()

    def apply(self, record):
        value = self.operating_value(record)
        schema = self.operating_schema(record)
        headers = record.headers.copy()
        if schema is None:
            value = require_map(value, self.purpose)
            for field, header in zip(self.fields, self.headers):
                headers.add(header, value.get(field))
            if self.move:
                value = {k: v for k, v in value.items() if k not in self._moved_fields}
            return self.new_record(record, None, value, headers)
        value = require_struct(value, self.purpose)
        for field, header in zip(self.fields, self.headers):
            found = value.schema.field(field)
            if found is None:
                raise DataException(f"Field does not exist: {field}")
            headers.add(header, field_value(value, field, self.replace_null_with_default),
                        found.schema)
        if not self.move:
            return self.new_record(record, schema, value, headers)
        moved_schema = self._schemas.get(value.schema, self._moved_schema)
        updated = Struct(moved_schema)
        for field in moved_schema.fields():
            updated.put(field, field_value(value, field.name, self.replace_null_with_default))
        return self.new_record(record, moved_schema, updated, headers)

    def _moved_schema(self, schema: Schema) -> Schema:
        builder = copy_schema_basics(schema, SchemaBuilder.struct())
        for field in schema.fields():
            if field.name not in self._moved_fields:
                builder.field(field.name, field.schema)
        return builder.build()


_BIGGER_THAN_LONG = decimal.Decimal("1e19")
_TEMPORAL = {13: (SimpleDateFormat("HH:mm:ss.SSS'Z'"), Time),
             24: (SimpleDateFormat("yyyy-MM-dd'T'HH:mm:ss.SSS'Z'"), Timestamp),
             10: (SimpleDateFormat("yyyy-MM-dd"), Date)}


def _finite(number: decimal.Decimal, single: bool) -> float | None:
    try:
        value = float(number)
        if single:
            value = struct.unpack("f", struct.pack("f", value))[0]
    except OverflowError:
        return None
    return value if math.isfinite(value) else None


def _parse_number(text: str) -> SchemaAndValue:
    number = decimal.Decimal(text)
    if number == number.to_integral_value() and abs(number) < _BIGGER_THAN_LONG:
        integral = int(number)
        for bits, schema in ((8, Schema.INT8_SCHEMA), (16, Schema.INT16_SCHEMA),
                             (32, Schema.INT32_SCHEMA), (64, Schema.INT64_SCHEMA)):
            if -(1 << (bits - 1)) <= integral < 1 << (bits - 1):
                return SchemaAndValue(schema, integral)
    scale = -number.as_tuple().exponent
    if scale != 0:
        for single, schema in ((True, Schema.FLOAT32_SCHEMA), (False, Schema.FLOAT64_SCHEMA)):
            value = _finite(number, single)
            if value is not None:
                return SchemaAndValue(schema, value)
    return SchemaAndValue(Decimal.schema(scale), number)


def parse_literal(text: str) -> SchemaAndValue:
    """A literal's schema and value as Connect's Values.parseString infers them for a single
    value: a boolean, null, a whole number as the narrowest integer type that holds it (a
    Decimal beyond INT64), a fraction as FLOAT32 where it is finite there (FLOAT64, then
    Decimal, otherwise), an ISO 8601 date, time (``HH:mm:ss.SSSZ``) or timestamp as Date, Time
    or Timestamp; any other text (arrays and maps included) a string."""
    lowered = text.strip().lower()
    if lowered in ("true", "false"):
        return SchemaAndValue(Schema.BOOLEAN_SCHEMA, lowered == "true")
    if lowered == "null":
        return SchemaAndValue.NULL
    if _NUMBER.fullmatch(text):
        return _parse_number(text)
    temporal = _TEMPORAL.get(len(text))
    if temporal is not None:
        form, logical = temporal
        try:
            millis = form.parse(text)
        except ValueError:
            return SchemaAndValue(Schema.STRING_SCHEMA, text)
        value = (Timestamp.to_logical(None, millis) if logical is Timestamp else
                 Date.to_logical(None, millis // MILLIS_PER_DAY) if logical is Date else
                 Time.to_logical(None, millis % MILLIS_PER_DAY))
        return SchemaAndValue(logical.SCHEMA, value)
    return SchemaAndValue(Schema.STRING_SCHEMA, text)


class InsertHeader(Transform):
    CONFIG_DEF = (ConfigDef()
                  .define(HEADER, Type.STRING, validator=NonNull(), importance=Importance.HIGH,
                          documentation="The name of the header.")
                  .define(VALUE_LITERAL, Type.STRING, validator=NonNull(),
                          importance=Importance.HIGH,
                          documentation="The literal value that is to be set as the header value "
                                        "on all records."))

    def configure(self, configs: dict) -> None:
        config = self.CONFIG_DEF.parse(configs)
        self.header = config[HEADER]
        self.literal = parse_literal(config[VALUE_LITERAL])

    def apply(self, record):
        headers = record.headers.copy()
        headers.add(self.header, self.literal.value, self.literal.schema)
        return record.new_record(headers=headers)


class DropHeaders(Transform):
    CONFIG_DEF = ConfigDef().define(
        HEADERS, Type.LIST, validator=NonEmptyListValidator(), importance=Importance.HIGH,
        documentation="The name of the headers to be removed.")

    def configure(self, configs: dict) -> None:
        self.headers = frozenset(self.CONFIG_DEF.parse(configs)[HEADERS])

    def apply(self, record):
        return record.new_record(headers=Headers(
            h for h in record.headers if h.key not in self.headers))
