"""The embedded formats: how a record's key or value travels in JSON (binary as base64, JSON
as itself, Avro / JSON Schema / Protobuf as JSON data with a schema from the Schema Registry)
and becomes bytes on Kafka (Confluent's wire format for the schema formats: magic byte 0,
the schema id, for Protobuf the message indexes, then the encoded data)."""
from __future__ import annotations

import base64
import binascii
import functools
import io
import struct
import threading

import orjson

from josefk.httpd.server import HttpError

BINARY, JSON, AVRO, JSONSCHEMA, PROTOBUF = "binary", "json", "avro", "jsonschema", "protobuf"
SCHEMA_FORMATS = {AVRO: "AVRO", JSONSCHEMA: "JSON", PROTOBUF: "PROTOBUF"}
FORMATS = (BINARY, JSON, AVRO, JSONSCHEMA, PROTOBUF)


def conversion_error(detail) -> HttpError:
    return HttpError(422, 42203, f"Conversion of JSON to Object failed: {detail}")


def schema_error(detail) -> HttpError:
    return HttpError(422, 42205, f"Invalid schema: {detail}")


def encode_binary(data) -> bytes | None:
    if data is None:
        return None
    if not isinstance(data, str):
        raise conversion_error("binary data must be a base64 string")
    try:
        return base64.b64decode(data, validate=True)
    except binascii.Error as e:
        raise conversion_error(f"not base64: {e}") from None


def encode_json(data) -> bytes | None:
    return None if data is None else orjson.dumps(data)


def decode_binary(data: bytes | None):
    return None if data is None else base64.b64encode(data).decode()


def decode_json(data: bytes | None):
    return None if data is None else orjson.loads(data)


class SchemaFormats:
    """Schema-backed encoding and decoding through confluent-kafka's Schema Registry client
    (cached; every call may ask the registry, so callers run these on a worker thread)."""

    def __init__(self, registry_conf: dict | None):
        self.conf = registry_conf
        self._client = None
        self.lock = threading.Lock()

    @property
    def client(self):
        if self.conf is None:
            raise HttpError(500, 50001, "No schema.registry.url is configured: the Avro, JSON "
                                        "Schema and Protobuf formats need a Schema Registry")
        if self._client is None:
            from confluent_kafka.schema_registry import SchemaRegistryClient

            self._client = SchemaRegistryClient(self.conf)
        return self._client

    def schema_id(self, fmt: str, topic: str, is_key: bool, schema: str | None,
                  schema_id: int | None) -> int:
        """The id of the schema a request names: registered under ``<topic>-key|value``
        when given as text, or taken as given."""
        from confluent_kafka.schema_registry import Schema
        from confluent_kafka.schema_registry.error import SchemaRegistryError

        if schema_id is not None:
            return schema_id
        subject = f"{topic}-{'key' if is_key else 'value'}"
        try:
            return self.client.register_schema(subject, Schema(schema, SCHEMA_FORMATS[fmt]))
        except SchemaRegistryError as e:
            if e.http_status_code in (409, 422):
                raise schema_error(e.error_message) from None
            raise HttpError(500, 50001, f"Schema Registry: {e.error_message}") from None
        except Exception as e:  # noqa: BLE001 - the registry unreachable
            raise HttpError(500, 50001, f"Schema Registry: {e}") from None

    def _schema(self, schema_id: int, fmt: str | None = None):
        from confluent_kafka.schema_registry.error import SchemaRegistryError

        try:
            return self.client.get_schema(schema_id, fmt=fmt)
        except SchemaRegistryError as e:
            raise HttpError(404 if e.http_status_code == 404 else 500, 40403 if
                            e.http_status_code == 404 else 50001,
                            f"Schema {schema_id}: {e.error_message}") from None
        except Exception as e:  # noqa: BLE001 - the registry unreachable
            raise HttpError(500, 50001, f"Schema Registry: {e}") from None

    def encode(self, fmt: str, schema_id: int, data) -> bytes | None:
        if data is None:
            return None
        header = b"\0" + struct.pack(">I", schema_id)
        if fmt == AVRO:
            import fastavro

            parsed = self._avro(schema_id)
            out = io.BytesIO()
            out.write(header)
            try:
                record = next(iter(fastavro.json_reader(io.StringIO(orjson.dumps(data).decode()),
                                                        parsed)))
                fastavro.schemaless_writer(out, parsed, record)
            except Exception as e:  # noqa: BLE001 - fastavro's errors on data not of the schema
                raise conversion_error(e) from None
            return out.getvalue()
        if fmt == JSONSCHEMA:
            import jsonschema

            try:
                self._json_validator(schema_id).validate(data)
            except jsonschema.ValidationError as e:
                raise conversion_error(e.message) from None
            return header + orjson.dumps(data)
        from google.protobuf import json_format

        cls, indexes = self._protobuf(schema_id)
        try:
            msg = json_format.ParseDict(data, cls())
        except json_format.ParseError as e:
            raise conversion_error(e) from None
        return header + indexes + msg.SerializeToString()

    def decode(self, fmt: str, data: bytes | None):
        if data is None:
            return None
        if len(data) < 5 or data[0] != 0:
            raise HttpError(500, 50002, "The record is not in the Schema Registry wire format")
        schema_id = struct.unpack(">I", data[1:5])[0]
        body = data[5:]
        if fmt == AVRO:
            import fastavro

            return _jsonable(fastavro.schemaless_reader(io.BytesIO(body), self._avro(schema_id),
                                                        None))
        if fmt == JSONSCHEMA:
            return orjson.loads(body)
        from google.protobuf import json_format

        pool_file = self._protobuf_file(schema_id)
        indexes, pos = _read_indexes(body)
        msg_type = pool_file.message_types_by_name[list(pool_file.message_types_by_name)[
            indexes[0]]]
        for i in indexes[1:]:
            msg_type = msg_type.nested_types[i]
        from google.protobuf import message_factory

        msg = message_factory.GetMessageClass(msg_type)()
        msg.ParseFromString(body[pos:])
        return json_format.MessageToDict(msg, preserving_proto_field_name=True)

    @functools.lru_cache(maxsize=1024)
    def _avro(self, schema_id: int):
        import fastavro

        return fastavro.parse_schema(orjson.loads(self._schema(schema_id).schema_str))

    @functools.lru_cache(maxsize=1024)
    def _json_validator(self, schema_id: int):
        import jsonschema

        schema = orjson.loads(self._schema(schema_id).schema_str)
        return jsonschema.validators.validator_for(schema)(schema)

    @functools.lru_cache(maxsize=1024)
    def _protobuf_file(self, schema_id: int):
        """The schema's file in a pool of its own, with the files it imports: its references
        (fetched from the registry, by the names it imports them by) and the well-known types."""
        from google.protobuf import descriptor_pb2, descriptor_pool

        from josefk.registry.protobuf_schema import builtin_files

        def file(schema, name: str):
            fdp = descriptor_pb2.FileDescriptorProto.FromString(
                base64.b64decode(schema.schema_str))
            fdp.name = name
            return fdp

        schema = self._schema(schema_id, "serialized")
        files, fetched = dict(builtin_files()), set()
        todo = list(schema.references or [])
        while todo:
            ref = todo.pop()
            if ref.name not in fetched:
                fetched.add(ref.name)
                registered = self._registered(ref.subject, ref.version)
                files[ref.name] = file(registered.schema, ref.name)
                todo += registered.schema.references or []
        pool = descriptor_pool.DescriptorPool()
        added: set = set()

        def add(fdp):
            for dep in fdp.dependency:
                if dep not in added:
                    if dep not in files:
                        raise schema_error(f"schema {schema_id} imports {dep!r}, which is "
                                           "neither a reference nor a well-known type")
                    add(files[dep])
            pool.Add(fdp)
            added.add(fdp.name)

        main = file(schema, f"schema-{schema_id}.proto")
        add(main)
        return pool.FindFileByName(main.name)

    def _registered(self, subject: str, version: int):
        from confluent_kafka.schema_registry.error import SchemaRegistryError

        try:
            return self.client.get_version(subject, version, fmt="serialized")
        except SchemaRegistryError as e:
            raise schema_error(f"reference {subject} version {version}: "
                               f"{e.error_message}") from None
        except Exception as e:  # noqa: BLE001 - the registry unreachable
            raise HttpError(500, 50001, f"Schema Registry: {e}") from None

    @functools.lru_cache(maxsize=1024)
    def _protobuf(self, schema_id: int):
        """The schema's first message type and its message-index prefix: what Confluent's
        proxy produces (a request cannot name another message of the schema)."""
        from google.protobuf import message_factory

        f = self._protobuf_file(schema_id)
        first = next(iter(f.message_types_by_name.values()), None)
        if first is None:
            raise schema_error(f"schema {schema_id} defines no message")
        return message_factory.GetMessageClass(first), b"\0"


def _read_indexes(body: bytes) -> tuple[list[int], int]:
    """Confluent's Protobuf message indexes: a zigzag varint count, then that many zigzag
    varints (a count of 0 means [0])."""
    pos = 0

    def varint():
        nonlocal pos
        shift = value = 0
        while True:
            b = body[pos]
            pos += 1
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return (value >> 1) ^ -(value & 1)
            shift += 7

    count = varint()
    return ([varint() for _ in range(count)] if count else [0]), pos


def _jsonable(value):
    """fastavro's Python values made JSON-friendly (bytes as latin-1 text, as Avro's JSON
    encoding writes them)."""
    if isinstance(value, bytes):
        return value.decode("latin-1")
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    return value
