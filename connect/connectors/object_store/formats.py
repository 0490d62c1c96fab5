"""The file formats of Confluent's storage sinks (``format.class``): JSON (a record's value per
line, as JsonConverter writes it with schemas.enable=false), Avro (an object container file,
its schema from the records' Connect schema, as Confluent's AvroData makes it) and Parquet
(pyarrow, its schema from the Connect schema). A format turns a view of a batch of records
(their values, keys or headers: Confluent's RecordViews) into the bytes of one file; the
Connect-to-Python value conversion is built once per schema."""
from __future__ import annotations

import base64
import decimal
import gzip
import io
from functools import lru_cache

import orjson

from josefk.connect.api.errors import ConnectException, DataException
from josefk.connect.api.records import SinkRecord
from josefk.connect.api.schema import (Date, Decimal, Schema, SchemaBuilder, Struct, Time,
                                       Timestamp, Type)

AVRO_NAMESPACE = "io.confluent.connect.avro"


class Format:
    """Writes a view of a batch of records to the bytes of one file."""
    extension: str

    def __init__(self, props: dict):
        pass

    def write(self, records: list[SinkRecord], view: "View") -> bytes:
        raise NotImplementedError


def _schema_of(records: list[SinkRecord], view: "View", format_name: str) -> Schema:
    schema = view.schema(records[0])
    if schema is None:
        first = records[0]
        raise DataException(f"{format_name} needs records with a {view.name} schema: record "
                            f"{first.topic}-{first.kafka_partition}@{first.kafka_offset} "
                            f"has none")
    return schema


# ---- what of a record a file holds (Confluent's RecordViews) ----------------------------

HEADER_SCHEMA = (SchemaBuilder.struct().field("key", Schema.STRING_SCHEMA)
                 .field("value", Schema.OPTIONAL_STRING_SCHEMA).build())
HEADERS_SCHEMA = SchemaBuilder.array(HEADER_SCHEMA).build()


def _header_string(value) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode()
    return orjson.dumps(schemaless_plain(value), default=_json_default).decode() \
        if isinstance(value, (dict, list, Struct)) else str(value)


class View:
    """A record's value (the file itself), key (``.keys``) or headers (``.headers``, each
    a key and its value as a string)."""

    def __init__(self, name: str, extension: str, schema, value):
        self.name, self.extension = name, extension
        self.schema, self.value = schema, value


VALUE = View("value", "", lambda r: r.value_schema, lambda r: r.value)
KEY = View("key", ".keys", lambda r: r.key_schema, lambda r: r.key)
HEADERS = View("headers", ".headers", lambda r: HEADERS_SCHEMA, lambda r: [
    Struct(HEADER_SCHEMA).put("key", h.key).put("value", _header_string(h.value))
    for h in r.headers])


# ---- Connect values as Python, one converter per schema and style ---------------------

_JSON_LOGICAL = {
    Date.LOGICAL_NAME: Date.from_logical, Time.LOGICAL_NAME: Time.from_logical,
    Timestamp.LOGICAL_NAME: Timestamp.from_logical,
    Decimal.LOGICAL_NAME: lambda s, v: base64.b64encode(Decimal.from_logical(s, v)).decode(),
}


@lru_cache(maxsize=512)
def converter(schema: Schema, style: str = "plain"):
    """A function from a value of ``schema`` to dicts, lists and primitives, made once per
    schema. ``style``: ``plain`` (logical types as their Python objects), ``json`` (logical
    types as JsonConverter writes them without schemas: days, milliseconds, base64 decimals),
    ``avro`` (maps with other than string keys as key/value records), ``arrow`` (maps as
    key/value pairs)."""
    if schema.name in _JSON_LOGICAL:
        if style != "json":
            return _identity
        encode = _JSON_LOGICAL[schema.name]
        return _nullable(lambda v: encode(schema, v))
    if schema.type is Type.STRUCT:
        fields = [(f.name, f, converter(f.schema, style)) for f in schema.fields()]
        return _nullable(lambda v: {n: conv(v.get(f)) for n, f, conv in fields})
    if schema.type is Type.ARRAY:
        item = converter(schema.value_schema, style)
        return _nullable(lambda value: [item(v) for v in value])
    if schema.type is Type.MAP:
        key, val = converter(schema.key_schema, style), converter(schema.value_schema, style)
        if style == "arrow":
            return _nullable(lambda value: [(key(k), val(v)) for k, v in value.items()])
        if style == "avro" and not _string_keys(schema):
            return _nullable(lambda value: [{"key": key(k), "value": val(v)}
                                            for k, v in value.items()])
        return _nullable(lambda value: {key(k): val(v) for k, v in value.items()})
    if schema.type is Type.BYTES:
        return _nullable(bytes)
    return _identity


def _string_keys(map_schema: Schema) -> bool:
    return map_schema.key_schema.type is Type.STRING and not map_schema.key_schema.optional


def _identity(value):
    return value


def _nullable(convert):
    return lambda value: None if value is None else convert(value)


def schemaless_plain(value):
    """A value without a schema (maps and lists of JSON-able values, Structs inside them)."""
    if isinstance(value, Struct):
        return converter(value.schema)(value)
    if isinstance(value, dict):
        return {k: schemaless_plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [schemaless_plain(v) for v in value]
    return value


def _json_default(value):
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode()
    if isinstance(value, decimal.Decimal):
        return float(value)
    raise TypeError(type(value).__name__)


# ---- JSON ------------------------------------------------------------------------------

class JsonFormat(Format):
    """Each record's value as one line of JSON. Logical types are written as JsonConverter
    writes them without schemas: dates as days, times and timestamps as milliseconds.
    ``s3.compression.type=gzip``: the file gzipped (``.json.gz``)."""

    def __init__(self, props):
        self.gzip = props.get("s3.compression.type", "none") == "gzip"
        level = props.get("s3.compression.level", -1)
        self.level = 6 if level is None or level < 0 else level  # -1: zlib's default
        self.extension = ".json.gz" if self.gzip else ".json"

    def write(self, records, view):
        lines = []
        schema_of, value_of = view.schema, view.value
        last, convert = None, schemaless_plain
        for record in records:
            schema = schema_of(record)
            if schema is not last:
                last = schema
                convert = schemaless_plain if schema is None else converter(schema, "json")
            lines.append(orjson.dumps(convert(value_of(record)), default=_json_default))
        data = b"\n".join(lines) + b"\n" if lines else b""
        return gzip.compress(data, self.level, mtime=0) if self.gzip else data


# ---- Avro ------------------------------------------------------------------------------

_AVRO_PRIMITIVES = {Type.INT8: "int", Type.INT16: "int", Type.INT32: "int", Type.INT64: "long",
                    Type.FLOAT32: "float", Type.FLOAT64: "double", Type.BOOLEAN: "boolean",
                    Type.STRING: "string", Type.BYTES: "bytes"}


def avro_schema(schema: Schema, names: dict | None = None) -> dict | str | list:
    """Connect schema -> Avro schema as Confluent's AvroData makes it: structs are records
    (unnamed ones ``ConnectDefault<n>`` in ``io.confluent.connect.avro``), optional schemas a
    union with null first (default null), maps with non-string keys arrays of key/value."""
    names = {} if names is None else names
    out = _avro_type(schema, names)
    if schema.optional:
        return ["null", out]
    return out


def _avro_type(schema: Schema, names: dict):
    name = schema.name
    if name == Decimal.LOGICAL_NAME:
        return {"type": "bytes", "logicalType": "decimal", "precision": 64,
                "scale": Decimal.scale(schema)}
    if name == Date.LOGICAL_NAME:
        return {"type": "int", "logicalType": "date"}
    if name == Time.LOGICAL_NAME:
        return {"type": "int", "logicalType": "time-millis"}
    if name == Timestamp.LOGICAL_NAME:
        return {"type": "long", "logicalType": "timestamp-millis"}
    if schema.type in _AVRO_PRIMITIVES:
        return _AVRO_PRIMITIVES[schema.type]
    if schema.type is Type.ARRAY:
        return {"type": "array", "items": avro_schema(schema.value_schema, names)}
    if schema.type is Type.MAP:
        if _string_keys(schema):
            return {"type": "map", "values": avro_schema(schema.value_schema, names)}
        names["map"] = names.get("map", 0) + 1
        return {"type": "array", "items": {
            "type": "record", "name": f"MapEntry{names['map']}" if names["map"] > 1
            else "MapEntry", "namespace": AVRO_NAMESPACE,
            "fields": [{"name": "key", "type": avro_schema(schema.key_schema, names)},
                       {"name": "value", "type": avro_schema(schema.value_schema, names)}]}}
    if name:
        namespace, _, simple = name.rpartition(".")
    else:
        names["struct"] = names.get("struct", 0) + 1
        namespace = AVRO_NAMESPACE
        simple = "ConnectDefault" + str(names["struct"])
    fields = []
    for f in schema.fields():
        field = {"name": f.name, "type": avro_schema(f.schema, names)}
        if f.schema.optional:
            field["default"] = None
        fields.append(field)
    record = {"type": "record", "name": simple, "fields": fields}
    if namespace:
        record["namespace"] = namespace
    return record


class AvroFormat(Format):
    """An Avro object container file (``avro.codec``: null, deflate, snappy, bzip2, xz,
    zstandard)."""
    extension = ".avro"

    def __init__(self, props):
        self.codec = props.get("avro.codec") or "null"

    def write(self, records, view):
        import fastavro

        schema = _schema_of(records, view, "AvroFormat")
        parsed = _parsed_avro(schema)
        convert, value_of = converter(schema, "avro"), view.value
        out = io.BytesIO()
        try:
            fastavro.writer(out, parsed, [convert(value_of(r)) for r in records],
                            codec=self.codec)
        except (ValueError, TypeError) as e:
            raise DataException(f"cannot write Avro: {e}") from e
        return out.getvalue()


@lru_cache(maxsize=64)
def _parsed_avro(schema: Schema):
    import fastavro

    return fastavro.parse_schema(avro_schema(schema))


# ---- Parquet ---------------------------------------------------------------------------

PARQUET_CODECS = {"none": "", "uncompressed": "", "snappy": ".snappy", "gzip": ".gz",
                  "lzo": ".lzo", "brotli": ".brotli", "lz4": ".lz4", "zstd": ".zstd"}


def arrow_type(schema: Schema):
    import pyarrow as pa

    name = schema.name
    if name == Decimal.LOGICAL_NAME:
        return pa.decimal128(38, Decimal.scale(schema))
    if name == Date.LOGICAL_NAME:
        return pa.date32()
    if name == Time.LOGICAL_NAME:
        return pa.time32("ms")
    if name == Timestamp.LOGICAL_NAME:
        return pa.timestamp("ms", tz="UTC")
    simple = {Type.INT8: pa.int8(), Type.INT16: pa.int16(), Type.INT32: pa.int32(),
              Type.INT64: pa.int64(), Type.FLOAT32: pa.float32(), Type.FLOAT64: pa.float64(),
              Type.BOOLEAN: pa.bool_(), Type.STRING: pa.string(), Type.BYTES: pa.binary()}
    if schema.type in simple:
        return simple[schema.type]
    if schema.type is Type.ARRAY:
        return pa.list_(arrow_field("element", schema.value_schema))
    if schema.type is Type.MAP:
        return pa.map_(arrow_type(schema.key_schema), arrow_field("value", schema.value_schema))
    return pa.struct([arrow_field(f.name, f.schema) for f in schema.fields()])


def arrow_field(name: str, schema: Schema):
    import pyarrow as pa

    return pa.field(name, arrow_type(schema), nullable=schema.optional)


@lru_cache(maxsize=64)
def arrow_schema(schema: Schema, column: str):
    """A struct schema's fields as the Parquet file's columns; any other schema as one
    column named after the view (``value``, ``key``, ``headers``), as Confluent's envelope."""
    import pyarrow as pa

    if schema.type is Type.STRUCT:
        return pa.schema([arrow_field(f.name, f.schema) for f in schema.fields()])
    return pa.schema([arrow_field(column, schema)])


class ParquetFormat(Format):
    """A Parquet file (``parquet.codec``, snappy by default: ``.snappy.parquet``)."""

    def __init__(self, props):
        self.codec = (props.get("parquet.codec") or "snappy").lower()
        if self.codec not in PARQUET_CODECS:
            raise ConnectException(f"parquet.codec {self.codec!r} is not one of "
                                   f"{', '.join(PARQUET_CODECS)}")
        self.extension = PARQUET_CODECS[self.codec] + ".parquet"

    def write(self, records, view):
        import pyarrow as pa
        import pyarrow.parquet as pq

        schema = _schema_of(records, view, "ParquetFormat")
        values = [view.value(r) for r in records]
        target = arrow_schema(schema, view.name)
        try:
            if schema.type is Type.STRUCT:  # column by column: a field's values, converted
                columns = {}
                for f in schema.fields():
                    column = [v.get(f) for v in values]
                    convert = converter(f.schema, "arrow")
                    columns[f.name] = (column if convert is _identity
                                       else [convert(x) for x in column])
                table = pa.Table.from_pydict(columns, schema=target)
            else:
                convert = converter(schema, "arrow")
                table = pa.Table.from_pydict({view.name: [convert(v) for v in values]},
                                             schema=target)
        except (pa.ArrowException, ValueError, TypeError) as e:
            raise DataException(f"cannot write Parquet: {e}") from e
        out = io.BytesIO()
        pq.write_table(table, out, compression="none" if not PARQUET_CODECS[self.codec]
                       else self.codec)
        return out.getvalue()


FORMATS = {
    "io.confluent.connect.s3.format.json.JsonFormat": JsonFormat,
    "io.confluent.connect.s3.format.avro.AvroFormat": AvroFormat,
    "io.confluent.connect.s3.format.parquet.ParquetFormat": ParquetFormat,
}
FORMATS.update({name.rsplit(".", 1)[1]: cls for name, cls in list(FORMATS.items())})
