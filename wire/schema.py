"""The vocabulary in which every API's request and response layout is declared, and the records
of the coordinators' internal topics (``CoordinatorRecord``, ``CoordinatorTopic``).

A declaration mirrors the meaning of Kafka's JSON message schemas: fields with ``versions``,
``nullable`` (nullableVersions), ``tag`` (a tagged field; its taggedVersions are its versions),
defaults, and per-API ``flexible`` versions. ``wire.compiler`` turns them into codecs.
"""
from __future__ import annotations

import re
import uuid

from josefk.wire.types import DecodeError

MAX_VERSION = 0x7FFF


class Versions:
    """A version range such as ``"0+"``, ``"3-7"``, ``"5"`` or ``"none"``."""

    __slots__ = ("lo", "hi")

    def __init__(self, spec: str | None = "0+"):
        if spec is None or spec == "0+":
            self.lo, self.hi = 0, MAX_VERSION
        elif spec == "none":
            self.lo, self.hi = 1, 0
        elif spec.endswith("+"):
            self.lo, self.hi = int(spec[:-1]), MAX_VERSION
        elif "-" in spec:
            lo, hi = spec.split("-")
            self.lo, self.hi = int(lo), int(hi)
        else:
            self.lo = self.hi = int(spec)

    def __contains__(self, v: int) -> bool:
        return self.lo <= v <= self.hi

    def __repr__(self):
        return f"Versions({self.lo}-{self.hi})"


class Prim:
    """A primitive type; ``width`` is its fixed size (0 if variable) and ``fmt`` its struct code."""

    __slots__ = ("name", "width", "fmt", "default")

    def __init__(self, name, width=0, fmt="", default=None):
        self.name, self.width, self.fmt, self.default = name, width, fmt, default

    def __repr__(self):
        return self.name


INT8 = Prim("int8", 1, "b", 0)
INT16 = Prim("int16", 2, "h", 0)
UINT16 = Prim("uint16", 2, "H", 0)
INT32 = Prim("int32", 4, "i", 0)
INT64 = Prim("int64", 8, "q", 0)
FLOAT64 = Prim("float64", 8, "d", 0.0)
BOOL = Prim("bool", 1, "?", False)
UUID = Prim("uuid", default=uuid.UUID(int=0))
STRING = Prim("string", default="")
BYTES = Prim("bytes", default=b"")
RECORDS = Prim("records", default=None)


class Array:
    """An array of a primitive type, e.g. ``Array(INT32)``."""

    __slots__ = ("item",)

    def __init__(self, item: Prim):
        self.item = item


class Struct:
    """A nested struct. A field whose type is a plain list of Fields is an array of such structs."""

    __slots__ = ("fields", "name")

    def __init__(self, fields, name=None):
        self.fields, self.name = fields, name


class Field:
    __slots__ = ("name", "type", "versions", "nullable", "tag", "default", "struct_name")

    def __init__(self, name, type, versions="0+", *, nullable="none", tag=None, default=...,
                 struct=None):
        self.name = name
        self.type = type
        self.versions = Versions(versions)
        self.nullable = Versions(nullable)
        self.tag = tag
        self.default = default
        self.struct_name = struct


class Data:
    """A versioned struct that is not an API body (Kafka's ``"type": "data"`` messages, such as
    the consumer protocol's Subscription carried in JoinGroup metadata): an INT16 version, then
    the fields at that version, never flexible. A newer version than declared is read with the
    newest layout, as Kafka does (later versions only append fields)."""

    def __init__(self, name: str, versions: str, fields):
        self.name = name
        self.versions = Versions(versions)
        from josefk.wire.compiler import Message  # local: the compiler depends on this module

        self.Struct = Message.build(self, name, fields)

    def is_flexible(self, version: int) -> bool:
        return False

    def to_bytes(self, version: int, **fields) -> bytes:
        return version.to_bytes(2, "big") + self.Struct(**fields).to_bytes(version)

    def from_bytes(self, data: bytes):
        version = int.from_bytes(data[:2], "big", signed=True)
        if version < 0:
            raise ValueError(f"{self.name}: bad version {version}")
        return self.Struct.decode(data, min(version, self.versions.hi), 2)[0]


class CoordinatorRecord:
    """One record type of a coordinator's compacted topic, declared as Kafka declares it in a
    pair of JSON schemas (``"type": "coordinator-key"`` / ``"coordinator-value"`` with the same
    ``apiKey``, e.g. OffsetCommitKey.json and OffsetCommitValue.json).

    The key is an INT16 record type, then the key's fields (one layout: version 0, never
    flexible). The value is an INT16 version, then the value's fields at that version, flexible
    from ``flexible``. A null value (a tombstone) deletes the key. ``Key`` and ``Value`` are
    the compiled struct classes."""

    def __init__(self, record_type: int, name: str, key, versions: str, flexible: str, value):
        from josefk.wire.compiler import Message  # local: the compiler depends on this module

        self.type = record_type
        self.name = name
        self.versions = Versions(versions)
        self.flexible = Versions(flexible)
        self._key_head = record_type.to_bytes(2, "big")
        # the INT16 that starts a value of each declared version
        self._value_heads = {v: v.to_bytes(2, "big")
                             for v in range(self.versions.lo, self.versions.hi + 1)}
        self.Key = Message.build(_KeyLayout(name + "Key"), name + "Key", key)
        self.Value = Message.build(self, name + "Value", value)

    def is_flexible(self, version: int) -> bool:
        return version in self.flexible

    def key(self, **fields) -> bytes:
        """The key's bytes: this record type, then ``fields``."""
        out = bytearray(self._key_head)
        self.Key(**fields).encode(0, out)  # no records fields: everything lands in ``out``
        return bytes(out)

    def value(self, version: int, **fields) -> bytes:
        """The value's bytes at ``version``."""
        head = self._value_heads.get(version)
        if head is None:
            raise ValueError(f"{self.name}Value v{version} is not declared")
        out = bytearray(head)
        self.Value(**fields).encode(version, out)
        return bytes(out)

    def read_value(self, data):
        """``(version, Value)`` from a value's bytes; DecodeError for an undeclared version or
        bytes that do not hold the value (bytes after the fields are ignored, as Kafka does)."""
        version = int.from_bytes(data[:2], "big", signed=True)
        if len(data) < 2 or version not in self._value_heads:
            raise DecodeError(f"unknown {self.name}Value version {version}")
        return version, self.Value.decode(data, version, 2)[0]

    def __repr__(self):
        return f"CoordinatorRecord({self.name}, {self.type})"


class _KeyLayout:
    """What the compiler asks of a key's layout: one version, 0, never flexible."""

    versions = Versions("0")

    def __init__(self, name: str):
        self.name = name

    def is_flexible(self, version: int) -> bool:
        return False


class CoordinatorTopic:
    """The record types of one coordinator's compacted topic (``__consumer_offsets``,
    ``__transaction_state``, ...), by the record type that starts each key. ``aliases`` maps
    further record types to a declared record whose layout they share."""

    def __init__(self, name: str, records, aliases=None):
        self.name = name
        self.records = {r.type: r for r in records}
        for record_type, record in (aliases or {}).items():
            self.records[record_type] = record

    def read_key(self, data):
        """``(CoordinatorRecord, Key)`` from a key's bytes; DecodeError for an unknown record
        type or bytes that do not hold its key."""
        if data is None or len(data) < 2:
            raise DecodeError(f"{self.name} record without a key")
        record = self.records.get(data[0] << 8 | data[1])
        if record is None:
            record_type = int.from_bytes(data[:2], "big", signed=True)
            raise DecodeError(f"unknown {self.name} record type {record_type}")
        return record, record.Key.decode(data, 0, 2)[0]


def camel(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in re.split(r"_", name))


class Api:
    """One API: its key, supported versions, flexible versions and both layouts."""

    def __init__(self, key: int, name: str, versions: str, flexible: str, request, response):
        self.key = key
        self.name = name
        self.versions = Versions(versions)
        self.flexible = Versions(flexible)
        self.request_fields = request
        self.response_fields = response
        from josefk.wire.compiler import Message  # local: the compiler depends on this module

        self.Request = Message.build(self, camel(name) + "Request", request)
        self.Response = Message.build(self, camel(name) + "Response", response)

    @property
    def min_version(self):
        return self.versions.lo

    @property
    def max_version(self):
        return self.versions.hi

    def is_flexible(self, version: int) -> bool:
        return version in self.flexible

    def request_header_version(self, version: int) -> int:
        if self.key == 7 and version == 0:  # ControlledShutdown v0 predates the client id
            return 0
        return 2 if version in self.flexible else 1

    def response_header_version(self, version: int) -> int:
        # ApiVersions responses keep header v0 so any client can read the supported versions.
        if self.key == 18:
            return 0
        return 1 if version in self.flexible else 0

    def __repr__(self):
        return f"Api({self.name}, {self.key})"
