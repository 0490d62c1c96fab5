"""The web console's Schema Registry: a client of Confluent's REST API (what never changes, a
schema by id and the versions a schema references, is cached), and the decoding of records in
Confluent's wire format: magic byte 0, the 4-byte schema id, for Protobuf the message indexes,
then the Avro (fastavro), JSON or Protobuf (protobuf) encoding.

fastavro and protobuf come with the ``http`` extra; they are imported when a record is decoded,
so the console runs without them (and without a registry)."""
from __future__ import annotations

import base64
import datetime
import decimal
import io
import json
import ssl
import struct
import uuid
from dataclasses import dataclass
from urllib.parse import urlencode

from josefk.httpd.client import AnswerError, Unreachable, request_json
from josefk.registry.client import registry_client_settings
from josefk.tools.web_html import q

ACCEPT = "application/vnd.schemaregistry.v1+json, application/json"
TIMEOUT = 5.0
AVRO, JSON, PROTOBUF = "AVRO", "JSON", "PROTOBUF"


def schema_type(answer: dict) -> str:
    """The type of a schema in a registry answer (Confluent leaves it out for Avro)."""
    return answer.get("schemaType", AVRO)


class RegistryError(Exception):
    """The registry's error answer (HTTP ``status``, Confluent's ``code``), or no answer
    (``status`` None)."""

    def __init__(self, message: str, status: int | None = None, code: int | None = None):
        super().__init__(message)
        self.status, self.code = status, code


def registry_settings(url: str | None, props: dict) -> dict | None:
    """The registry's client settings: ``url`` (``--schema-registry``) or Confluent's
    ``schema.registry.url`` with ``schema.registry.basic.auth.user.info`` and
    ``schema.registry.ssl.*`` from the console's client properties; None without a URL."""
    if url:
        props = {**props, "schema.registry.url": url}
    return registry_client_settings(props)


class RegistryClient:
    """Blocking GETs to the registry (``conf`` as confluent-kafka's SchemaRegistryClient takes
    it: ``url``, a comma-separated list tried in order, ``basic.auth.user.info``,
    ``ssl.ca.location``, ``ssl.certificate.location``, ``ssl.key.location``)."""

    def __init__(self, conf: dict, timeout: float = TIMEOUT):
        self.urls = [u.strip().rstrip("/") for u in conf["url"].split(",") if u.strip()]
        self.url = self.urls[0]
        self.timeout = timeout
        self.headers = {"Accept": ACCEPT}
        if conf.get("basic.auth.user.info"):
            token = base64.b64encode(conf["basic.auth.user.info"].encode()).decode()
            self.headers["Authorization"] = f"Basic {token}"
        self.ssl = None
        if any(u.startswith("https:") for u in self.urls):
            self.ssl = ssl.create_default_context(cafile=conf.get("ssl.ca.location"))
            if conf.get("ssl.certificate.location"):
                self.ssl.load_cert_chain(conf["ssl.certificate.location"],
                                         conf.get("ssl.key.location"))
        self._cache: dict[tuple, object] = {}

    def get(self, path: str, **query):
        """The JSON answer to GET ``path`` (segments already quoted) from the first registry
        that answers."""
        target = path + ("?" + urlencode(query) if query else "")
        try:
            return request_json(self.urls, target, headers=self.headers, timeout=self.timeout,
                                context=self.ssl)
        except AnswerError as err:
            if not isinstance(err.body, dict):
                raise RegistryError(f"Schema Registry answered {err.status} {err.reason}",
                                    err.status) from None
            raise RegistryError(err.body.get("message") or err.reason, err.status,
                                err.body.get("error_code")) from None
        except Unreachable as err:
            raise RegistryError(f"Schema Registry at {self.url} unreachable: {err}") from None

    def _cached(self, key: tuple, path: str, **query):
        if key not in self._cache:
            self._cache[key] = self.get(path, **query)
        return self._cache[key]

    # -- what the pages show (asked every time) ------------------------------------------
    def subjects(self) -> list[str]:
        return self.get("/subjects")

    def latest_schemas(self) -> list[dict]:
        return self.get("/schemas", latestOnly="true")

    def global_level(self) -> str:
        return self.get("/config")["compatibilityLevel"]

    def subject_level(self, subject: str) -> str | None:
        """The compatibility level ``subject`` sets itself (None: the global one holds)."""
        try:
            return self.get(f"/config/{q(subject)}")["compatibilityLevel"]
        except RegistryError as err:
            if err.code == 40408:
                return None
            raise

    def mode(self) -> str:
        return self.get("/mode")["mode"]

    def versions(self, subject: str) -> list[int]:
        return self.get(f"/subjects/{q(subject)}/versions")

    def version(self, subject: str, version) -> dict:
        return self.get(f"/subjects/{q(subject)}/versions/{q(version)}")

    def referenced_by(self, subject: str, version) -> list[int]:
        return self.get(f"/subjects/{q(subject)}/versions/{q(version)}/referencedby")

    def uses(self, schema_id: int) -> list[dict]:
        """The (subject, version) pairs registered with ``schema_id``."""
        return self.get(f"/schemas/ids/{schema_id}/versions")

    # -- what decoding needs (cached: ids and referenced versions never change) -----------
    def schema(self, schema_id: int, fmt: str | None = None) -> dict:
        query = {"format": fmt} if fmt else {}
        return self._cached(("id", schema_id, fmt), f"/schemas/ids/{schema_id}", **query)

    def referenced(self, subject: str, version: int, fmt: str | None = None) -> dict:
        query = {"format": fmt} if fmt else {}
        return self._cached(("version", subject, version, fmt),
                            f"/subjects/{q(subject)}/versions/{version}", **query)

    def uses_cached(self, schema_id: int) -> list[dict]:
        return self._cached(("uses", schema_id), f"/schemas/ids/{schema_id}/versions")


@dataclass
class Decoded:
    """A record's key or value in the wire format: what decoded it and to what, or why not."""
    schema_id: int
    schema_type: str = ""
    subject: str | None = None
    version: int | None = None
    value: object = None
    message_type: str = ""  # Protobuf: the message the indexes name
    error: str | None = None


class Decoder:
    """Decodes wire-format data with the schemas of ``client``, keeping one reader per id."""

    def __init__(self, client: RegistryClient):
        self.client = client
        self._readers: dict[int, tuple] = {}

    def decode(self, data: bytes | None, topic: str, is_key: bool,
               failures: dict) -> Decoded | None:
        """None when ``data`` is not in the wire format. ``failures`` (kept by the caller for
        one page) remembers ids that could not be read, and whether the registry is down, so
        a page asks about each at most once."""
        if data is None or len(data) < 5 or data[0] != 0:
            return None
        data = bytes(data)
        schema_id = struct.unpack_from(">I", data, 1)[0]
        if "unreachable" in failures or schema_id in failures:
            return Decoded(schema_id, error=failures.get(schema_id) or failures["unreachable"])
        try:
            kind, read = self._reader(schema_id)
            uses = self.client.uses_cached(schema_id)
        except RegistryError as err:
            failures["unreachable" if err.status is None else schema_id] = str(err)
            return Decoded(schema_id, error=str(err))
        except Exception as err:  # noqa: BLE001 - a schema the libraries refuse
            failures[schema_id] = f"schema {schema_id} unusable: {err}"
            return Decoded(schema_id, error=failures[schema_id])
        subject, version = _subject_of(uses, topic, is_key)
        out = Decoded(schema_id, kind, subject, version)
        try:
            out.value, out.message_type = read(data[5:])
        except Exception as err:  # noqa: BLE001 - data not of its schema
            out.error = f"not decodable as {kind} schema {schema_id}: {err}"
        return out

    def _reader(self, schema_id: int):
        """(schema type, function: the bytes after the id -> (JSON value, message type))."""
        if schema_id not in self._readers:
            schema = self.client.schema(schema_id)
            kind = schema_type(schema)
            if kind == AVRO:
                reader = self._avro(schema)
            elif kind == JSON:
                reader = _read_json
            elif kind == PROTOBUF:
                reader = self._protobuf(schema_id)
            else:
                raise ValueError(f"schema type {kind}")
            self._readers[schema_id] = kind, reader
        return self._readers[schema_id]

    def _avro(self, schema: dict):
        import fastavro

        named: dict = {}
        self._avro_references(schema.get("references", []), named)
        parsed = fastavro.parse_schema(json.loads(schema["schema"]), named_schemas=named)

        def read(body: bytes):
            value = fastavro.schemaless_reader(io.BytesIO(body), parsed, None)
            return json.loads(json.dumps(value, default=_avro_json)), ""
        return read

    def _avro_references(self, references: list, named: dict) -> None:
        import fastavro

        for ref in references:
            referenced = self.client.referenced(ref["subject"], ref["version"])
            self._avro_references(referenced.get("references", []), named)
            fastavro.parse_schema(json.loads(referenced["schema"]), named_schemas=named)

    def _protobuf(self, schema_id: int):
        from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory

        from josefk.registry.protobuf_schema import builtin_files

        schema = self.client.schema(schema_id, "serialized")
        files = builtin_files().copy()
        self._protobuf_references(schema.get("references", []), files)
        main = descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(schema["schema"]))
        main.name = f"schema-{schema_id}.proto"
        pool, added = descriptor_pool.DescriptorPool(), set()

        def add(fdp):
            for dep in fdp.dependency:
                if dep not in added:
                    added.add(dep)
                    add(files[dep])
            pool.Add(fdp)
        add(main)

        def read(body: bytes):
            indexes, pos = message_indexes(body)
            name = message_name(main, indexes)
            cls = message_factory.GetMessageClass(pool.FindMessageTypeByName(name))
            msg = cls.FromString(body[pos:])
            return json_format.MessageToDict(msg, always_print_fields_with_no_presence=True,
                                             preserving_proto_field_name=True), name
        return read

    def _protobuf_references(self, references: list, files: dict) -> None:
        from google.protobuf import descriptor_pb2

        for ref in references:
            if ref["name"] in files:
                continue
            referenced = self.client.referenced(ref["subject"], ref["version"], "serialized")
            self._protobuf_references(referenced.get("references", []), files)
            fdp = descriptor_pb2.FileDescriptorProto.FromString(
                base64.b64decode(referenced["schema"]))
            fdp.name = ref["name"]
            files[ref["name"]] = fdp


def message_indexes(body: bytes) -> tuple[list[int], int]:
    """Confluent's Protobuf message indexes at the start of ``body`` (zigzag varints: a count,
    then the path of the message through the file's nesting; a count of 0 stands for [0]),
    and where the message itself starts."""
    values, pos = [], 0
    while not values or len(values) <= values[0]:
        shift = raw = 0
        while True:
            byte = body[pos]
            pos += 1
            raw |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                break
        values.append((raw >> 1) ^ -(raw & 1))
        if values[0] <= 0:
            if values[0] < 0:
                raise ValueError("negative message index count")
            return [0], pos
    return values[1:], pos


def message_name(fdp, indexes: list[int]) -> str:
    """The full name of the message at ``indexes`` in the file ``fdp``."""
    messages, name = fdp.message_type, fdp.package
    for i in indexes:
        if not 0 <= i < len(messages):
            raise ValueError(f"message index {i} out of range")
        name = f"{name}.{messages[i].name}" if name else messages[i].name
        messages = messages[i].nested_type
    return name


def _read_json(body: bytes):
    return json.loads(body), ""


def _avro_json(value):
    """fastavro's values beyond JSON: logical types as text, bytes as Avro's JSON encoding
    writes them (one character per byte)."""
    if isinstance(value, bytes):
        return value.decode("latin-1")
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, (decimal.Decimal, uuid.UUID)):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not JSON")


def _subject_of(uses: list[dict], topic: str, is_key: bool) -> tuple[str | None, int | None]:
    """The subject and version a record's schema is registered under: the topic's own
    (TopicNameStrategy) when there is one, else the first."""
    if not uses:
        return None, None
    own = f"{topic}-{'key' if is_key else 'value'}"
    use = next((u for u in uses if u["subject"] == own), uses[0])
    return use["subject"], use["version"]
