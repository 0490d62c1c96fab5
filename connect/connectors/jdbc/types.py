"""Column types to Connect schemas and back, as Confluent's GenericDatabaseDialect maps them:
a column's schema (and the converter of its values) for the source, a field's SQL type for the
sink's ``auto.create`` / ``auto.evolve``."""
from __future__ import annotations

import datetime
import decimal
import json
from typing import Any, Callable

import sqlalchemy as sa

from josefk.connect.api.errors import ConnectException
from josefk.connect.api.schema import Date, Decimal, Schema, SchemaBuilder, Time, Timestamp, Type
from josefk.connect.connectors.epoch import epoch_micros

NUMERIC_MAPPINGS = ("none", "precision_only", "best_fit", "best_fit_eager_double")
UTC = datetime.timezone.utc


def _int_schema(precision: int) -> SchemaBuilder:
    if precision > 9:
        return SchemaBuilder.int64()
    if precision > 4:
        return SchemaBuilder.int32()
    if precision > 2:
        return SchemaBuilder.int16()
    return SchemaBuilder.int8()


_WIDE = decimal.Context(prec=1000)
SCALE_UNSET = 127  # an unconstrained NUMERIC: Confluent's NUMERIC_TYPE_SCALE_HIGH


def _numeric(precision: int | None, scale: int | None, mapping: str):
    """Confluent's numeric.mapping for NUMERIC/DECIMAL columns: integers of the precision's
    width (scale 0, precision up to 18), FLOAT64 for fractions under best_fit, else Decimal."""
    constrained = precision is not None and precision > 0
    scale = scale if scale is not None else (0 if constrained else SCALE_UNSET)
    small = constrained and precision <= 18
    if mapping == "best_fit_eager_double" and scale > 0 and scale != SCALE_UNSET:
        return SchemaBuilder.float64(), float
    if small and scale == 0 and mapping != "none":
        return _int_schema(precision), int
    if small and scale > 0 and mapping == "best_fit":
        return SchemaBuilder.float64(), float
    quantum = decimal.Decimal(1).scaleb(-scale)
    return Decimal.builder(scale), lambda v: decimal.Decimal(v).quantize(quantum, context=_WIDE)


def _to_text(value) -> str:
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


def timestamp_converter(zone: datetime.tzinfo) -> Callable[[Any], datetime.datetime]:
    """A datetime as an aware UTC instant: naive ones are in ``db.timezone``; text (SQLite)
    parsed as ISO."""
    def convert(value):
        if isinstance(value, str):
            value = datetime.datetime.fromisoformat(value)
        elif not isinstance(value, datetime.datetime):  # a date in a timestamp column
            value = datetime.datetime(value.year, value.month, value.day)
        if value.tzinfo is None:
            value = value.replace(tzinfo=zone)
        return value.astimezone(UTC)
    return convert


TIMESTAMP_GRANULARITIES = ("connect_logical", "nanos_long", "nanos_string",
                           "nanos_iso_datetime_string")


def _epoch_nanos(instant: datetime.datetime) -> int:
    return epoch_micros(instant) * 1000


def _timestamp(granularity: str, zone: datetime.tzinfo):
    """Confluent's timestamp.granularity: the schema of a TIMESTAMP column and its values."""
    instant = timestamp_converter(zone)
    if granularity == "nanos_long":
        return SchemaBuilder.int64(), lambda v: _epoch_nanos(instant(v))
    if granularity == "nanos_string":
        return SchemaBuilder.string(), lambda v: str(_epoch_nanos(instant(v)))
    if granularity == "nanos_iso_datetime_string":
        return SchemaBuilder.string(), lambda v: instant(v).astimezone(zone).strftime(
            "%Y-%m-%dT%H:%M:%S.%f") + "000"
    return Timestamp.builder(), instant


def _date(value):
    if isinstance(value, str):
        return datetime.date.fromisoformat(value[:10])
    return value.date() if isinstance(value, datetime.datetime) else value


def _time(value):
    if isinstance(value, str):
        return datetime.time.fromisoformat(value)
    if isinstance(value, datetime.timedelta):  # some drivers give TIME as a duration
        return (datetime.datetime.min + value).time()
    return value.replace(tzinfo=None)


def column_schema(sql_type: sa.types.TypeEngine, numeric_mapping: str, zone: datetime.tzinfo,
                  granularity: str = "connect_logical") -> tuple[SchemaBuilder, Callable | None]:
    """The Connect schema of a column of ``sql_type`` and how its values become that schema's
    Python values (None: as they are)."""
    t = sql_type
    if isinstance(t, sa.Boolean):
        return SchemaBuilder.bool(), bool
    if isinstance(t, sa.SmallInteger):
        return SchemaBuilder.int16(), None
    if isinstance(t, sa.BigInteger):
        return SchemaBuilder.int64(), None
    if isinstance(t, sa.Integer):
        return SchemaBuilder.int32(), None
    if isinstance(t, sa.REAL):
        return SchemaBuilder.float32(), float
    if isinstance(t, (sa.Float, sa.Double)):
        return SchemaBuilder.float64(), float
    if isinstance(t, sa.Numeric):
        return _numeric(t.precision, t.scale, numeric_mapping)
    if isinstance(t, sa.DateTime):
        return _timestamp(granularity, zone)
    if isinstance(t, sa.Date):
        return Date.builder(), _date
    if isinstance(t, sa.Time):
        return Time.builder(), _time
    if isinstance(t, (sa.LargeBinary, sa.types._Binary)):
        return SchemaBuilder.bytes(), bytes
    if isinstance(t, (sa.String, sa.JSON, sa.Uuid, sa.Enum)):
        return SchemaBuilder.string(), _to_text
    return SchemaBuilder.string(), _to_text


# PostgreSQL type OIDs of a query's result columns (psycopg's cursor description)
_PG_OIDS = {16: sa.Boolean(), 20: sa.BigInteger(), 21: sa.SmallInteger(), 23: sa.Integer(),
            700: sa.REAL(), 701: sa.Double(), 17: sa.LargeBinary(), 1082: sa.Date(),
            1083: sa.Time(), 1114: sa.DateTime(), 1184: sa.DateTime(timezone=True)}


def described_type(column) -> sa.types.TypeEngine | None:
    """A query result column's SQL type from the driver's description, where it says one."""
    code = getattr(column, "type_code", None)
    if code == 1700:
        return sa.Numeric(column.precision, column.scale)
    return _PG_OIDS.get(code) if isinstance(code, int) else None


def value_type(value) -> sa.types.TypeEngine:
    """A SQL type for a value of a driver that describes no types (SQLite)."""
    for python, sql in ((bool, sa.Boolean()), (int, sa.BigInteger()), (float, sa.Double()),
                        (bytes, sa.LargeBinary()), (decimal.Decimal, sa.Numeric(38, 10)),
                        (datetime.datetime, sa.DateTime()), (datetime.date, sa.Date()),
                        (datetime.time, sa.Time())):
        if isinstance(value, python):
            return sql
    return sa.String()


# ---- the sink: Connect schemas to SQL types -----------------------------------------------

def sql_type(schema: Schema, dialect: str) -> sa.types.TypeEngine:
    """The column type ``auto.create`` and ``auto.evolve`` give a field (Confluent's
    PostgreSqlDatabaseDialect / SqliteDatabaseDialect getSqlType)."""
    name = schema.name
    sqlite = dialect == "sqlite"
    if name == Decimal.LOGICAL_NAME:
        return sa.Numeric() if sqlite else sa.Numeric(asdecimal=True)
    if name == Date.LOGICAL_NAME:
        return sa.Date()
    if name == Time.LOGICAL_NAME:
        return sa.Time()
    if name == Timestamp.LOGICAL_NAME:
        return sa.DateTime()
    simple = {Type.INT8: sa.SmallInteger(), Type.INT16: sa.SmallInteger(),
              Type.INT32: sa.Integer(), Type.INT64: sa.BigInteger(), Type.FLOAT32: sa.REAL(),
              Type.FLOAT64: sa.Double(), Type.BOOLEAN: sa.Boolean(), Type.STRING: sa.Text(),
              Type.BYTES: sa.LargeBinary()}
    if schema.type in simple:
        if sqlite and schema.type in (Type.INT8, Type.INT16, Type.INT32, Type.INT64):
            return sa.Integer()
        return simple[schema.type]
    raise ConnectException(f"{dialect} does not support the sink's {schema.type.name} type "
                           f"(field schema {schema!r})")


def sql_value(schema: Schema, value, zone: datetime.tzinfo):
    """A field's value as the driver takes it: Timestamps as naive datetimes in
    ``db.timezone``; the other logical types are the driver's Python values already."""
    if value is not None and schema.name == Timestamp.LOGICAL_NAME:
        return value.astimezone(zone).replace(tzinfo=None)
    return value
