"""Debezium's schemas for PostgreSQL change events: each column's Connect schema from its type
(Debezium's defaults: ``decimal.handling.mode=precise``, ``time.precision.mode=adaptive``,
``binary.handling.mode=bytes``) and the parser of its text form (what pgoutput sends and a
snapshot selects), the key and value structs of a table, the ``source`` block and the
envelope."""
from __future__ import annotations

import datetime
import decimal
import re
from typing import Any, Callable, NamedTuple

from josefk.connect.api.schema import (Date, Schema, SchemaBuilder, Struct, Time, Timestamp,
                                       Type)
from josefk.connect.connectors.epoch import epoch_micros
from josefk.connect.connectors.postgres_cdc.pgoutput import UNCHANGED

DEBEZIUM_VERSION = "2.7.3.Final"
SOURCE_SCHEMA_NAME = "io.debezium.connector.postgresql.Source"
SNAPSHOT_VALUES = "true,first,first_in_data_collection,last_in_data_collection,last,false," \
                  "incremental"
# what Debezium puts for a TOASTed value the server did not send (unavailable.value.placeholder)
UNAVAILABLE = "__debezium_unavailable_value"
_EPOCH_DATE = datetime.date(1970, 1, 1)
UTC = datetime.timezone.utc


def _named(builder: SchemaBuilder, name: str) -> SchemaBuilder:
    return builder.name(name).version(1)


def _bool(text: str) -> bool:
    return text in ("t", "true")


def _bytes(text: str) -> bytes:
    return bytes.fromhex(text[2:]) if text.startswith("\\x") else text.encode("latin-1")


def _days(text: str) -> int:
    return (datetime.date.fromisoformat(text) - _EPOCH_DATE).days


def _time_micros(text: str) -> int:
    t = datetime.time.fromisoformat(text)
    return ((t.hour * 60 + t.minute) * 60 + t.second) * 1_000_000 + t.microsecond


def _timestamp_micros(text: str) -> int:
    return epoch_micros(datetime.datetime.fromisoformat(text).replace(tzinfo=UTC))


def _iso_utc(value: datetime.datetime) -> str:
    """Java's ISO_OFFSET_DATE_TIME at UTC: the fraction only as long as it needs."""
    text = value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S")
    if value.microsecond:
        text += f".{value.microsecond:06d}".rstrip("0")
    return text + "Z"


def _zoned_timestamp(text: str) -> str:
    return _iso_utc(datetime.datetime.fromisoformat(text))


def _zoned_time(text: str) -> str:
    t = datetime.datetime.fromisoformat("1970-01-01T" + text).astimezone(UTC)
    out = t.strftime("%H:%M:%S")
    if t.microsecond:
        out += f".{t.microsecond:06d}".rstrip("0")
    return out + "Z"


def _variable_scale_schema() -> Schema:
    return (SchemaBuilder.struct().name("io.debezium.data.VariableScaleDecimal").version(1)
            .doc("Variable scaled decimal").field("scale", Schema.INT32_SCHEMA)
            .field("value", Schema.BYTES_SCHEMA))


def _unscaled(value: decimal.Decimal) -> tuple[int, bytes]:
    sign, digits, exponent = value.as_tuple()
    scale = max(0, -exponent)
    unscaled = int("".join(map(str, digits)) or "0") * (10 ** max(0, exponent))
    unscaled = -unscaled if sign else unscaled
    return scale, unscaled.to_bytes(max(1, (unscaled.bit_length() + 8) // 8), "big", signed=True)


class ColumnType(NamedTuple):
    """A column's schema (before optional-ness), its text parser and Debezium's fallback
    for a required column whose value is not sent (a delete under REPLICA IDENTITY DEFAULT)."""
    builder: Callable[[], SchemaBuilder]
    parse: Callable[[str], Any]
    fallback: Any


def _numeric(typmod: int) -> ColumnType:
    if typmod < 0:  # unconstrained: Debezium's VariableScaleDecimal, (scale, value) here
        return ColumnType(_variable_scale_schema, lambda text: _unscaled(decimal.Decimal(text)),
                          (0, b"\x00"))
    precision, scale = ((typmod - 4) >> 16) & 0xFFFF, (typmod - 4) & 0xFFFF
    quantum = decimal.Decimal(1).scaleb(-scale)
    return ColumnType(
        lambda: SchemaBuilder.bytes().name("org.apache.kafka.connect.data.Decimal").version(1)
        .parameter("scale", str(scale)).parameter("connect.decimal.precision", str(precision)),
        lambda text: decimal.Decimal(text).quantize(quantum), decimal.Decimal(0).quantize(quantum))


# ISO 8601, as the server writes intervals with IntervalStyle=iso_8601 (the session's setting)
_INTERVAL = re.compile(r"P(?:(-?\d+)Y)?(?:(-?\d+)M)?(?:(-?\d+)D)?"
                       r"(?:T(?:(-?\d+)H)?(?:(-?\d+)M)?(?:(-?[\d.]+)S)?)?")
DAYS_PER_MONTH_AVG = 365.25 / 12  # Debezium's approximation of a month in a MicroDuration


def _interval_parts(text: str) -> tuple[int, int, int, int, int, decimal.Decimal]:
    m = _INTERVAL.fullmatch(text)
    if m is None:
        raise ValueError(f"not an ISO 8601 interval: {text!r}")
    *whole, seconds = m.groups()
    return (*(int(g or 0) for g in whole), decimal.Decimal(seconds or 0))


def _micro_duration(text: str) -> int:
    """Debezium's MicroDuration: the interval in microseconds, a month 365.25 / 12 days."""
    years, months, days, hours, minutes, seconds = _interval_parts(text)
    day_count = (years * 12 + months) * DAYS_PER_MONTH_AVG + days
    return int((((day_count * 24 + hours) * 60 + minutes) * 60 + float(seconds)) * 1e6)


def _iso_interval(text: str) -> str:
    """Debezium's Interval string: every unit written, the seconds without trailing zeros."""
    years, months, days, hours, minutes, seconds = _interval_parts(text)
    plain = format(seconds.normalize(), "f") if seconds else "0"
    return f"P{years}Y{months}M{days}DT{hours}H{minutes}M{plain}S"


def _array_items(text: str) -> list[str | None]:
    """A one-dimensional array's text form (``{1,NULL,"a b","x\\"y"}``) as item texts."""
    if text[:1] != "{" or text[-1:] != "}":
        raise ValueError(f"not an array: {text!r}")
    items: list[str | None] = []
    at, end = 1, len(text) - 1
    while at < end:
        if text[at] == '"':
            at += 1
            chars = []
            while text[at] != '"':
                if text[at] == "\\":
                    at += 1
                chars.append(text[at])
                at += 1
            items.append("".join(chars))
            at += 1
        else:
            stop = text.find(",", at)
            stop = end if stop < 0 else stop
            item = text[at:stop]
            items.append(None if item == "NULL" else item)
            at = stop
        at += 1  # the comma
    return items


# Debezium's array columns: the array type's oid -> its elements' type
ARRAY_ELEMENTS = {1000: 16, 1005: 21, 1007: 23, 1016: 20, 1002: 18, 1015: 1043, 1009: 25,
                  1014: 1042, 1231: 1700, 1021: 700, 1022: 701, 1182: 1082}
INTERVAL_MODES = ("numeric", "string")


def _enum(labels: tuple[str, ...]) -> ColumnType:
    allowed = ",".join(labels)
    return ColumnType(lambda: _named(SchemaBuilder.string(), "io.debezium.data.Enum")
                      .parameter("allowed", allowed), str, labels[0] if labels else "")


def _array(element: ColumnType) -> ColumnType:
    def parse(text: str) -> list:
        return [None if item is None else element.parse(item) for item in _array_items(text)]
    return ColumnType(lambda: SchemaBuilder.array(element.builder().optional().build()),
                      parse, [])


def _precision(typmod: int) -> int:
    return 6 if typmod < 0 else typmod


DECIMAL_MODES = ("precise", "double", "string")
TIME_MODES = ("adaptive", "adaptive_time_microseconds", "connect")
_CONNECT_DATE = ColumnType(Date.builder, datetime.date.fromisoformat, _EPOCH_DATE)
_CONNECT_TIME = ColumnType(Time.builder, datetime.time.fromisoformat, datetime.time(0))
_CONNECT_TIMESTAMP = ColumnType(
    Timestamp.builder, lambda t: datetime.datetime.fromisoformat(t).replace(tzinfo=UTC),
    datetime.datetime(1970, 1, 1, tzinfo=UTC))


def column_type(type_oid: int, typmod: int, decimal_mode: str = "precise",
                time_mode: str = "adaptive", interval_mode: str = "numeric",
                enum_labels: tuple[str, ...] | None = None) -> ColumnType:
    """A column's ColumnType under Debezium's decimal.handling.mode, time.precision.mode and
    interval.handling.mode (``enum_labels``: the column is of an enum type)."""
    if enum_labels is not None:
        return _enum(enum_labels)
    if type_oid in ARRAY_ELEMENTS:
        return _array(column_type(ARRAY_ELEMENTS[type_oid], typmod, decimal_mode, time_mode))
    if type_oid == 1186:
        return (ColumnType(lambda: _named(SchemaBuilder.int64(), "io.debezium.time.MicroDuration"),
                           _micro_duration, 0) if interval_mode == "numeric" else
                ColumnType(lambda: _named(SchemaBuilder.string(), "io.debezium.time.Interval"),
                           _iso_interval, "P0Y0M0DT0H0M0S"))
    if type_oid == 1700 and decimal_mode == "double":
        return ColumnType(SchemaBuilder.float64, float, 0.0)
    if type_oid == 1700 and decimal_mode == "string":
        return ColumnType(SchemaBuilder.string, str, "")
    if time_mode == "connect" and type_oid in (1082, 1083, 1114):
        return {1082: _CONNECT_DATE, 1083: _CONNECT_TIME, 1114: _CONNECT_TIMESTAMP}[type_oid]
    simple = _SIMPLE.get(type_oid)
    if simple is not None:
        return simple
    if type_oid == 1700:
        return _numeric(typmod)
    if type_oid == 1083:  # time
        if _precision(typmod) <= 3 and time_mode == "adaptive":
            return ColumnType(lambda: _named(SchemaBuilder.int32(), "io.debezium.time.Time"),
                              lambda t: _time_micros(t) // 1000, 0)
        return ColumnType(lambda: _named(SchemaBuilder.int64(), "io.debezium.time.MicroTime"),
                          _time_micros, 0)
    if type_oid == 1114:  # timestamp
        if _precision(typmod) <= 3:
            return ColumnType(lambda: _named(SchemaBuilder.int64(),
                                             "io.debezium.time.Timestamp"),
                              lambda t: _timestamp_micros(t) // 1000, 0)
        return ColumnType(lambda: _named(SchemaBuilder.int64(),
                                         "io.debezium.time.MicroTimestamp"),
                          _timestamp_micros, 0)
    return ColumnType(SchemaBuilder.string, str, "")


_SIMPLE = {
    16: ColumnType(SchemaBuilder.bool, _bool, False),
    17: ColumnType(SchemaBuilder.bytes, _bytes, b""),
    20: ColumnType(SchemaBuilder.int64, int, 0),
    21: ColumnType(SchemaBuilder.int16, int, 0),
    23: ColumnType(SchemaBuilder.int32, int, 0),
    26: ColumnType(SchemaBuilder.int64, int, 0),
    700: ColumnType(SchemaBuilder.float32, float, 0.0),
    701: ColumnType(SchemaBuilder.float64, float, 0.0),
    1082: ColumnType(lambda: _named(SchemaBuilder.int32(), "io.debezium.time.Date"), _days, 0),
    1184: ColumnType(lambda: _named(SchemaBuilder.string(), "io.debezium.time.ZonedTimestamp"),
                     _zoned_timestamp, ""),
    1266: ColumnType(lambda: _named(SchemaBuilder.string(), "io.debezium.time.ZonedTime"),
                     _zoned_time, ""),
    2950: ColumnType(lambda: _named(SchemaBuilder.string(), "io.debezium.data.Uuid"), str, ""),
    114: ColumnType(lambda: _named(SchemaBuilder.string(), "io.debezium.data.Json"), str, ""),
    3802: ColumnType(lambda: _named(SchemaBuilder.string(), "io.debezium.data.Json"), str, ""),
    142: ColumnType(lambda: _named(SchemaBuilder.string(), "io.debezium.data.Xml"), str, ""),
}


def is_known_type(type_oid: int) -> bool:
    """A type with a mapping of its own (others, domains and enums among them, are looked up
    in the catalog)."""
    return type_oid in _SIMPLE or type_oid in ARRAY_ELEMENTS or type_oid in (1700, 1083, 1114,
                                                                             1186)


class TableColumn(NamedTuple):
    name: str
    type_oid: int
    typmod: int
    not_null: bool
    pk_position: int | None  # place in the primary key, None outside it
    enum_labels: tuple[str, ...] | None = None  # of an enum type: its labels in order


def source_schema() -> Schema:
    snapshot = (SchemaBuilder.string().name("io.debezium.data.Enum").version(1)
                .parameter("allowed", SNAPSHOT_VALUES).default_value("false").optional()
                .build())
    return (SchemaBuilder.struct().name(SOURCE_SCHEMA_NAME).version(1)
            .field("version", Schema.STRING_SCHEMA).field("connector", Schema.STRING_SCHEMA)
            .field("name", Schema.STRING_SCHEMA).field("ts_ms", Schema.INT64_SCHEMA)
            .field("snapshot", snapshot).field("db", Schema.STRING_SCHEMA)
            .field("sequence", Schema.OPTIONAL_STRING_SCHEMA)
            .field("ts_us", Schema.OPTIONAL_INT64_SCHEMA)
            .field("ts_ns", Schema.OPTIONAL_INT64_SCHEMA)
            .field("schema", Schema.STRING_SCHEMA).field("table", Schema.STRING_SCHEMA)
            .field("txId", Schema.OPTIONAL_INT64_SCHEMA).field("lsn", Schema.OPTIONAL_INT64_SCHEMA)
            .field("xmin", Schema.OPTIONAL_INT64_SCHEMA).build())


SOURCE = source_schema()
TRANSACTION_BLOCK = (SchemaBuilder.struct().optional().name("event.block").version(1)
                     .field("id", Schema.STRING_SCHEMA)
                     .field("total_order", Schema.INT64_SCHEMA)
                     .field("data_collection_order", Schema.INT64_SCHEMA).build())
HEARTBEAT_KEY = (SchemaBuilder.struct().name("io.debezium.connector.common.ServerNameKey")
                 .version(1).field("serverName", Schema.STRING_SCHEMA).build())
HEARTBEAT_VALUE = (SchemaBuilder.struct().name("io.debezium.connector.common.Heartbeat")
                   .version(1).field("ts_ms", Schema.INT64_SCHEMA).build())


class TableSchema:
    """One table's key, value and envelope schemas and how a row (text values in column
    order) becomes its key and value structs."""

    def __init__(self, prefix: str, schema: str, table: str, columns: list[TableColumn],
                 decimal_mode: str = "precise", time_mode: str = "adaptive",
                 interval_mode: str = "numeric"):
        self.schema_name, self.table = schema, table
        self.topic = f"{prefix}.{schema}.{table}"
        self.columns = columns
        self.types = [column_type(c.type_oid, c.typmod, decimal_mode, time_mode, interval_mode,
                                  c.enum_labels) for c in columns]
        value = SchemaBuilder.struct().name(f"{self.topic}.Value").optional()
        for column, ctype in zip(columns, self.types):
            field = ctype.builder()
            value.field(column.name, field if column.not_null else field.optional())
        self.value = value.build()
        keys = sorted((c.pk_position, i) for i, c in enumerate(columns)
                      if c.pk_position is not None)
        self.key_indexes = [i for _, i in keys]
        if self.key_indexes:
            key = SchemaBuilder.struct().name(f"{self.topic}.Key")
            for i in self.key_indexes:
                key.field(columns[i].name, self.types[i].builder())
            self.key = key.build()
        else:
            self.key = None
        self.envelope = (SchemaBuilder.struct().name(f"{self.topic}.Envelope").version(1)
                         .field("before", self.value).field("after", self.value)
                         .field("source", SOURCE).field("op", Schema.STRING_SCHEMA)
                         .field("ts_ms", Schema.OPTIONAL_INT64_SCHEMA)
                         .field("ts_us", Schema.OPTIONAL_INT64_SCHEMA)
                         .field("ts_ns", Schema.OPTIONAL_INT64_SCHEMA)
                         .field("transaction", TRANSACTION_BLOCK).build())
        self._fields = self.value.fields()

    def parse(self, texts: list) -> list:
        """Text values to Connect values (None stays None, and so do missing trailing
        values; an unchanged TOASTed value is Debezium's placeholder where it can be)."""
        values = []
        for i, (ctype, field) in enumerate(zip(self.types, self._fields)):
            text = texts[i] if i < len(texts) else None
            if text is UNCHANGED:
                kind = field.schema.type
                values.append(UNAVAILABLE if kind is Type.STRING else
                              UNAVAILABLE.encode() if kind is Type.BYTES else None)
            else:
                values.append(None if text is None else ctype.parse(text))
        return values

    def value_struct(self, values: list) -> Struct:
        return Struct.of(self.value, [
            _variable_scale(field.schema, ctype.fallback if value is None and column.not_null
                            else value)
            for field, ctype, value, column in zip(self._fields, self.types, values,
                                                   self.columns)])

    def key_struct(self, values: list) -> Struct | None:
        if self.key is None:
            return None
        struct = Struct(self.key)
        for field, i in zip(self.key.fields(), self.key_indexes):
            value = values[i]
            value = self.types[i].fallback if value is None else value
            struct.put(field, _variable_scale(field.schema, value))
        return struct


def _variable_scale(schema: Schema, value):
    """A VariableScaleDecimal's (scale, unscaled bytes) as a struct of the field's schema."""
    if isinstance(value, tuple):
        return Struct(schema).put("scale", value[0]).put("value", value[1])
    return value
