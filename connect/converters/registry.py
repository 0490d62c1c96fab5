"""What Confluent's Schema Registry converters share: the settings
(``schema.registry.url``, basic auth, ``auto.register.schemas``, ``use.latest.version``, the
subject name strategies; TLS to an https registry from ``schema.registry.ssl.*`` as Confluent
passes them through: truststore and keystore as PEM or PKCS12), a small HTTP client of the
registry's REST API (urllib), and Confluent's wire format: magic byte 0, the schema id as 4
big-endian bytes, the payload.

A format (Avro, JSON Schema, Protobuf) says how a Connect schema becomes its schema text and
how a Connect value becomes a payload, and back; the converter caches each Connect schema's
translation, each subject's registered id and each id's reader."""
from __future__ import annotations

import base64
import ssl
import urllib.parse
from typing import Callable, NamedTuple

from josefk.broker.config import ConfigError
from josefk.broker.security.listeners import load_keystore, load_truststore
from josefk.connect.api.config import (ConfigDef, ConfigException, Importance, Password,
                                       Range, ValidString)
from josefk.connect.api.config import Type as ConfigType
from josefk.connect.api.errors import DataException
from josefk.connect.api.schema import Schema, SchemaAndValue, Type
from josefk.connect.converters._java import LRUCache, converter_config_def, with_type
from josefk.httpd.client import AnswerError, Unreachable, request_json, split_credentials

MAGIC_BYTE = 0
SCHEMA_REGISTRY_URL_CONFIG = "schema.registry.url"
BASIC_AUTH_CREDENTIALS_SOURCE = "basic.auth.credentials.source"
USER_INFO_CONFIG = "basic.auth.user.info"
AUTO_REGISTER_SCHEMAS = "auto.register.schemas"
USE_LATEST_VERSION = "use.latest.version"
KEY_SUBJECT_NAME_STRATEGY = "key.subject.name.strategy"
VALUE_SUBJECT_NAME_STRATEGY = "value.subject.name.strategy"
MAX_SCHEMAS_PER_SUBJECT_CONFIG = "max.schemas.per.subject"
SCHEMAS_CACHE_SIZE_CONFIG = "schemas.cache.config"

_STRATEGY_PACKAGE = "io.confluent.kafka.serializers.subject."
_SSL_PREFIX = "schema.registry."


def ssl_context(configs: dict) -> ssl.SSLContext | None:
    """The context for an https registry from ``schema.registry.ssl.*`` (None without them:
    the system's CAs then), or ConfigException naming what cannot be loaded."""
    tls = {k[len(_SSL_PREFIX):]: v for k, v in configs.items()
           if k.startswith(_SSL_PREFIX + "ssl.")}
    if not tls:
        return None

    def get(name):
        value = tls.get(name)
        return value.value if isinstance(value, Password) else value
    context = ssl.create_default_context()
    try:
        load_truststore(context, get)
        load_keystore(context, get, required=False)
    except ConfigError as e:
        raise ConfigException(f"{_SSL_PREFIX}{e}") from None
    if get("ssl.endpoint.identification.algorithm") == "":
        context.check_hostname = False
    return context


def _topic_name(topic: str, is_key: bool, record_name: str | None) -> str:
    return topic + ("-key" if is_key else "-value")


def _record_name(topic: str, is_key: bool, record_name: str | None) -> str:
    if not record_name:
        raise DataException("the schema has no record name: RecordNameStrategy needs one "
                            "(a named struct)")
    return record_name


def _topic_record_name(topic: str, is_key: bool, record_name: str | None) -> str:
    return topic + "-" + _record_name(topic, is_key, record_name)


SUBJECT_NAME_STRATEGIES: dict[str, Callable[[str, bool, str | None], str]] = {
    "TopicNameStrategy": _topic_name, "RecordNameStrategy": _record_name,
    "TopicRecordNameStrategy": _topic_record_name}


def _strategy(name: str, setting: str):
    simple = name[len(_STRATEGY_PACKAGE):] if name.startswith(_STRATEGY_PACKAGE) else name
    try:
        return SUBJECT_NAME_STRATEGIES[simple]
    except KeyError:
        raise ConfigException(setting, name, "Unknown subject name strategy; one of "
                              + ", ".join(_STRATEGY_PACKAGE + s
                                          for s in SUBJECT_NAME_STRATEGIES)) from None


def _reason(error: Exception) -> str:
    """An error's message, with its type where that is not a Connect or registry error."""
    if isinstance(error, (DataException, RegistryError)):
        return str(error)
    return f"{type(error).__name__}: {error}"


class RegistryError(Exception):
    """An error answer of the registry: Confluent's ``message; error code: N``."""

    def __init__(self, message: str, error_code: int, status: int):
        super().__init__(f"{message}; error code: {error_code}")
        self.error_code, self.status = error_code, status


class RegisteredSchema(NamedTuple):
    id: int
    schema: str
    schema_type: str
    references: list


class RegistryClient:
    """The few calls a converter makes, over each URL in turn until one answers."""
    CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"

    def __init__(self, urls: list[str], user_info: str | None,
                 context: ssl.SSLContext | None = None, timeout: float = 30.0):
        self.urls, self.timeout, self.context = [], timeout, context
        self.authorization = None
        for url in urls:
            try:
                parts = urllib.parse.urlsplit(url.strip())
                parts.port  # noqa: B018 - raises on a port that is no number
            except ValueError as e:
                raise ConfigException(SCHEMA_REGISTRY_URL_CONFIG, url, str(e)) from None
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise ConfigException(SCHEMA_REGISTRY_URL_CONFIG, url,
                                      "Expected http://host:port or https://host:port")
            bare, from_url = split_credentials(url)
            self.urls.append(bare)
            self.authorization = self.authorization or from_url
        if user_info:
            self.authorization = "Basic " + base64.b64encode(user_info.encode()).decode()

    def _call(self, method: str, path: str, body: dict | None = None):
        headers = {"Accept": self.CONTENT_TYPE, "Content-Type": self.CONTENT_TYPE}
        if self.authorization:
            headers["Authorization"] = self.authorization
        try:
            return request_json(self.urls, path, method=method, body=body, headers=headers,
                                timeout=self.timeout, context=self.context)
        except AnswerError as e:
            if not isinstance(e.body, dict):
                raise RegistryError(e.reason, e.status * 100, e.status) from None
            raise RegistryError(e.body.get("message", e.reason),
                                e.body.get("error_code", e.status), e.status) from None
        except Unreachable as e:
            raise RegistryError(f"no Schema Registry at {', '.join(self.urls)} answers: {e}",
                                50001, 0) from None

    @staticmethod
    def _body(schema: str, schema_type: str) -> dict:
        return {"schema": schema} if schema_type == "AVRO" else \
            {"schema": schema, "schemaType": schema_type}

    def register(self, subject: str, schema: str, schema_type: str) -> int:
        return self._call("POST", f"/subjects/{urllib.parse.quote(subject, safe='')}/versions",
                          self._body(schema, schema_type))["id"]

    def lookup(self, subject: str, schema: str, schema_type: str) -> int:
        return self._call("POST", f"/subjects/{urllib.parse.quote(subject, safe='')}",
                          self._body(schema, schema_type))["id"]

    def latest(self, subject: str) -> RegisteredSchema:
        answer = self._call("GET", f"/subjects/{urllib.parse.quote(subject, safe='')}"
                                   "/versions/latest")
        return RegisteredSchema(answer["id"], answer["schema"],
                                answer.get("schemaType", "AVRO"), answer.get("references", []))

    def version(self, subject: str, version: int) -> RegisteredSchema:
        answer = self._call("GET", f"/subjects/{urllib.parse.quote(subject, safe='')}"
                                   f"/versions/{version}")
        return RegisteredSchema(answer["id"], answer["schema"],
                                answer.get("schemaType", "AVRO"), answer.get("references", []))

    def by_id(self, schema_id: int) -> RegisteredSchema:
        answer = self._call("GET", f"/schemas/ids/{schema_id}")
        return RegisteredSchema(schema_id, answer["schema"], answer.get("schemaType", "AVRO"),
                                answer.get("references", []))


class Translation(NamedTuple):
    """A Connect schema in a format: its schema text, its record name (for the record name
    strategies) and the function from a Connect value to the format's datum."""
    text: str
    record_name: str | None
    to_datum: Callable


class Reader(NamedTuple):
    schema: Schema | None
    read: Callable[[bytes], object]


class SchemaRegistryConverter:
    """The converter of one format through a Schema Registry; a format subclass implements
    ``translate``, ``writer`` and ``reader``."""
    schema_type = "AVRO"
    format_name = "Avro"

    def __init__(self):
        self._client: RegistryClient | None = None
        self._translations = LRUCache(1000)
        self._writers = LRUCache(1000)  # (subject, schema text) -> (id, writer)
        self._readers = LRUCache(1000)  # id -> Reader

    def config(self) -> ConfigDef:
        return converter_config_def().define(
            SCHEMA_REGISTRY_URL_CONFIG, ConfigType.LIST, validator=None,
            importance=Importance.HIGH,
            documentation="Comma-separated list of URLs for Schema Registry instances that can "
                          "be used to register or look up schemas.",
        ).define(
            BASIC_AUTH_CREDENTIALS_SOURCE, ConfigType.STRING, "URL",
            ValidString.in_("URL", "USER_INFO"), Importance.MEDIUM,
            "Specify how to pick the credentials for Basic Auth header. The supported values "
            "are URL and USER_INFO",
        ).define(
            USER_INFO_CONFIG, ConfigType.PASSWORD, "", None, Importance.MEDIUM,
            "Specify the user info for Basic Auth in the form of {username}:{password}",
        ).define(
            AUTO_REGISTER_SCHEMAS, ConfigType.BOOLEAN, True, None, Importance.MEDIUM,
            "Specify if the Serializer should attempt to register the Schema with Schema "
            "Registry",
        ).define(
            USE_LATEST_VERSION, ConfigType.BOOLEAN, False, None, Importance.LOW,
            "Specify if the Serializer should use the latest subject version for "
            "serialization",
        ).define(
            KEY_SUBJECT_NAME_STRATEGY, ConfigType.STRING, _STRATEGY_PACKAGE + "TopicNameStrategy",
            None, Importance.MEDIUM,
            "Determines how to construct the subject name under which the key schema is "
            "registered with the schema registry. By default, <topic>-key is used as subject.",
        ).define(
            VALUE_SUBJECT_NAME_STRATEGY, ConfigType.STRING,
            _STRATEGY_PACKAGE + "TopicNameStrategy", None, Importance.MEDIUM,
            "Determines how to construct the subject name under which the value schema is "
            "registered with the schema registry. By default, <topic>-value is used as "
            "subject.",
        ).define(
            MAX_SCHEMAS_PER_SUBJECT_CONFIG, ConfigType.INT, 1000, Range.at_least(1),
            Importance.LOW, "Maximum number of schemas to create or cache locally.",
        ).define(
            SCHEMAS_CACHE_SIZE_CONFIG, ConfigType.INT, 1000, Range.at_least(1), Importance.LOW,
            "Size of the converted schemas cache")

    def configure(self, configs: dict, is_key: bool | None = None) -> None:
        settings = self.config().parse(with_type(configs, is_key))
        if not settings[SCHEMA_REGISTRY_URL_CONFIG]:
            raise ConfigException(SCHEMA_REGISTRY_URL_CONFIG, "",
                                  "Missing Schema registry url!")
        user_info = None
        if settings[BASIC_AUTH_CREDENTIALS_SOURCE] == "USER_INFO":
            secret = settings[USER_INFO_CONFIG]
            user_info = secret.value if isinstance(secret, Password) else secret
            if not user_info:
                raise ConfigException(USER_INFO_CONFIG, "",
                                      "USER_INFO credentials need basic.auth.user.info")
        self._client = RegistryClient(settings[SCHEMA_REGISTRY_URL_CONFIG], user_info,
                                      ssl_context(configs))
        self._is_key = bool(is_key)
        setting = KEY_SUBJECT_NAME_STRATEGY if self._is_key else VALUE_SUBJECT_NAME_STRATEGY
        self._subject_of = _strategy(settings[setting], setting)
        self._auto_register = settings[AUTO_REGISTER_SCHEMAS]
        self._use_latest = settings[USE_LATEST_VERSION]
        self._translations = LRUCache(settings[SCHEMAS_CACHE_SIZE_CONFIG])
        self._writers = LRUCache(settings[MAX_SCHEMAS_PER_SUBJECT_CONFIG])
        self._readers = LRUCache(settings[MAX_SCHEMAS_PER_SUBJECT_CONFIG])
        self._configure_format(settings)

    def _configure_format(self, settings: dict) -> None:
        """Take the format's own settings."""

    def close(self) -> None:
        """Nothing to release: each registry call is a request of its own."""

    # ---- the format's part ------------------------------------------------------------------

    def translate(self, schema: Schema) -> Translation:
        raise NotImplementedError

    def writer(self, registered: RegisteredSchema, ours: Translation) -> Callable:
        """The function from a datum to the payload, for the schema the subject holds."""
        raise NotImplementedError

    def reader(self, registered: RegisteredSchema) -> Reader:
        raise NotImplementedError

    def references(self, registered: RegisteredSchema) -> list[tuple[str, RegisteredSchema]]:
        """The schemas ``registered`` refers to (its references and theirs, by the names they
        are referred to), each after those it refers to."""
        resolved: list[tuple[str, RegisteredSchema]] = []
        seen: set[tuple[str, int]] = set()

        def visit(references):
            for ref in references:
                key = (ref["subject"], ref["version"])
                if key not in seen:
                    seen.add(key)
                    dependency = self._client.version(ref["subject"], ref["version"])
                    visit(dependency.references)
                    resolved.append((ref["name"], dependency))
        visit(registered.references)
        return resolved

    # ---- the converter ----------------------------------------------------------------------

    def from_connect_data(self, topic: str, schema: Schema | None, value,
                          headers=None) -> bytes | None:
        if value is None:
            return None
        if schema is None:
            raise DataException(f"Failed to serialize {self.format_name} data from topic "
                                f"{topic}: a schema is required")
        try:
            translation = self._translations.get(schema)
            if translation is None:
                translation = self.translate(schema)
                self._translations.put(schema, translation)
            subject = self._subject_of(topic, self._is_key, translation.record_name)
            schema_id, write = self._writer_for(subject, translation)
            return (bytes((MAGIC_BYTE,)) + schema_id.to_bytes(4, "big")
                    + write(translation.to_datum(value)))
        except Exception as e:  # the format libraries raise assorted types on bad data
            raise DataException(f"Failed to serialize {self.format_name} data from topic "
                                f"{topic}: {_reason(e)}") from e

    def _writer_for(self, subject: str, translation: Translation):
        key = (subject, translation.text)
        found = self._writers.get(key)
        if found is None:
            client = self._client
            if self._use_latest:
                registered = client.latest(subject)
            else:
                register = client.register if self._auto_register else client.lookup
                schema_id = register(subject, translation.text, self.schema_type)
                registered = RegisteredSchema(schema_id, translation.text, self.schema_type, [])
            found = (registered.id, self.writer(registered, translation))
            self._writers.put(key, found)
        return found

    def to_connect_data(self, topic: str, value: bytes | None, headers=None) -> SchemaAndValue:
        if value is None:
            return SchemaAndValue.NULL
        try:
            if len(value) < 5 or value[0] != MAGIC_BYTE:
                raise DataException("Unknown magic byte!")
            schema_id = int.from_bytes(value[1:5], "big")
            reader = self._readers.get(schema_id)
            if reader is None:
                reader = self.reader(self._client.by_id(schema_id))
                self._readers.put(schema_id, reader)
            return SchemaAndValue(reader.schema, reader.read(bytes(value[5:])))
        except Exception as e:  # the format libraries raise assorted types on bad data
            raise DataException(f"Failed to deserialize data for topic {topic} to "
                                f"{self.format_name}: {_reason(e)}") from e


def string_keyed(schema: Schema) -> bool:
    """Whether a map's keys are required strings: Confluent's formats write such a map as an
    object, any other as an array of ``{"key", "value"}`` entries."""
    return schema.key_schema.type is Type.STRING and not schema.key_schema.optional


def map_datum(schema: Schema, key, val):
    """A map value's converter, its keys through ``key`` and values through ``val``."""
    if string_keyed(schema):
        def convert(value):
            return {k: val(v) for k, v in value.items()}
    else:
        def convert(value):
            return [{"key": key(k), "value": val(v)} for k, v in value.items()]
    return convert


def or_default(schema: Schema, convert):
    """``convert`` of a value, or of the schema's default where the value is null."""
    default = schema.default

    def present_or_default(value):
        if value is None:
            return None if default is None else convert(default)
        return convert(value)
    return present_or_default

