"""MaskField: replace the named fields' values with their type's null-equivalent (0, false,
"", an empty list or map, the epoch for dates and times), or with ``replacement`` (numbers and
strings only)."""
from __future__ import annotations

import datetime
import decimal
import re

from josefk.connect.api.config import ConfigDef, ConfigException, Importance, Type, Validator
from josefk.connect.api.errors import DataException
from josefk.connect.api.schema import Decimal, Schema, Struct
from josefk.connect.api.schema import Type as SchemaType
from josefk.connect.transforms.util import (REPLACE_NULL_WITH_DEFAULT_CONFIG,
                                            NonEmptyListValidator, Transform, class_name,
                                            define_replace_null_with_default, field_value,
                                            key_and_value, require_map, require_struct)

FIELDS, REPLACEMENT = "fields", "replacement"
PURPOSE = "mask fields"
_INTEGER = re.compile(r"[+-]?\d+")
_INT_BITS = {SchemaType.INT8: 8, SchemaType.INT16: 16, SchemaType.INT32: 32,
             SchemaType.INT64: 64}
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


class _NonEmptyStringOrNull(Validator):
    def __call__(self, name, value):
        if value is not None and not value:
            raise ConfigException(name, value, "String must be non-empty")

    def __str__(self):
        return "non-empty string"


def _null_equivalent(value, schema: Schema | None):
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return 0
    if isinstance(value, float):
        return 0.0
    if isinstance(value, str):
        return ""
    if isinstance(value, decimal.Decimal):
        zero = decimal.Decimal(0)
        return zero.scaleb(-Decimal.scale(schema)) if schema is not None else zero
    if isinstance(value, datetime.datetime):
        return _EPOCH
    if isinstance(value, datetime.date):
        return _EPOCH.date()
    if isinstance(value, datetime.time):
        return datetime.time(0)
    if isinstance(value, list):
        return []
    if isinstance(value, dict):
        return {}
    raise DataException(f"Cannot mask value of type: {class_name(value)}")


def _replacement_for(value, replacement: str, schema: Schema | None):
    if isinstance(value, str):
        return replacement
    try:
        if isinstance(value, int) and not isinstance(value, bool):
            bits = _INT_BITS.get(schema.type, 64) if schema is not None else 64
            if not _INTEGER.fullmatch(replacement):
                raise ValueError
            number = int(replacement)
            if not -(1 << (bits - 1)) <= number < (1 << (bits - 1)):
                raise ValueError
            return number
        if isinstance(value, float):
            return float(replacement)
        if isinstance(value, decimal.Decimal):
            return decimal.Decimal(replacement)
    except (ValueError, decimal.InvalidOperation):
        raise DataException(f"Unable to convert {replacement} (str) to number") from None
    raise DataException(f"Cannot mask value of type {class_name(value)} with custom replacement.")


@key_and_value
class MaskField(Transform):
    CONFIG_DEF = define_replace_null_with_default(
        ConfigDef()
        .define(FIELDS, Type.LIST, validator=NonEmptyListValidator(), importance=Importance.HIGH,
                documentation="Names of fields to mask.")
        .define(REPLACEMENT, Type.STRING, None, _NonEmptyStringOrNull(), Importance.LOW,
                "Custom value replacement, that will be applied to all 'fields' values "
                "(numeric or non-empty string values only)."))

    def configure(self, configs: dict) -> None:
        config = self.CONFIG_DEF.parse(configs)
        self.fields = list(dict.fromkeys(config[FIELDS]))
        self.masked_fields = frozenset(self.fields)
        self.replacement = config[REPLACEMENT]
        self.replace_null_with_default = config[REPLACE_NULL_WITH_DEFAULT_CONFIG]

    def masked(self, value, schema: Schema | None = None):
        if value is None:
            return None
        if self.replacement is None:
            return _null_equivalent(value, schema)
        return _replacement_for(value, self.replacement, schema)

    def apply(self, record):
        value = self.operating_value(record)
        if value is None:
            return record
        schema = self.operating_schema(record)
        if schema is None:
            value = require_map(value, PURPOSE)
            updated = dict(value)
            for name in self.fields:
                updated[name] = self.masked(value.get(name))
            return self.new_record(record, None, updated)
        value = require_struct(value, PURPOSE)
        updated = Struct(value.schema)
        for field in value.schema.fields():
            original = field_value(value, field.name, self.replace_null_with_default)
            updated.put(field, self.masked(original, field.schema)
                        if field.name in self.masked_fields else original)
        return self.new_record(record, value.schema, updated)
