"""The plug-in points of a connector's record pipeline, as Connect declares them: converters
(a record's key or value between Connect data and bytes), header converters, transformations
(single message transforms) and the predicates that gate them. Each is configured with its
own settings (the ``key.converter.``/``transforms.<alias>.`` prefixes stripped) and declares
them in ``config()``."""
from __future__ import annotations

from typing import Protocol, TypeVar, runtime_checkable

from josefk.connect.api.config import ConfigDef
from josefk.connect.api.records import ConnectRecord, Headers
from josefk.connect.api.schema import Schema, SchemaAndValue

R = TypeVar("R", bound=ConnectRecord)


@runtime_checkable
class Converter(Protocol):
    def configure(self, configs: dict, is_key: bool) -> None: ...

    def from_connect_data(self, topic: str, schema: Schema | None, value,
                          headers: Headers | None = None) -> bytes | None:
        """Serialize (Connect's ``fromConnectData``); may add headers (Confluent's formats
        do not)."""

    def to_connect_data(self, topic: str, value: bytes | None,
                        headers: Headers | None = None) -> SchemaAndValue:
        """Deserialize (Connect's ``toConnectData``)."""

    def config(self) -> ConfigDef: ...


@runtime_checkable
class HeaderConverter(Protocol):
    def configure(self, configs: dict) -> None: ...

    def from_connect_header(self, topic: str, header_key: str, schema: Schema | None,
                            value) -> bytes | None: ...

    def to_connect_header(self, topic: str, header_key: str,
                          value: bytes | None) -> SchemaAndValue: ...

    def config(self) -> ConfigDef: ...


@runtime_checkable
class Transformation(Protocol[R]):
    def configure(self, configs: dict) -> None: ...

    def apply(self, record: R) -> R | None:
        """The transformed record, or None to drop it."""

    def config(self) -> ConfigDef: ...

    def close(self) -> None: ...


@runtime_checkable
class Predicate(Protocol[R]):
    def configure(self, configs: dict) -> None: ...

    def test(self, record: R) -> bool: ...

    def config(self) -> ConfigDef: ...

    def close(self) -> None: ...
