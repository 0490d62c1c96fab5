"""The vocabulary in which every API's request and response layout is declared.

A declaration mirrors the meaning of Kafka's JSON message schemas: fields with ``versions``,
``nullable`` (nullableVersions), ``tag`` (a tagged field; its taggedVersions are its versions),
defaults, and per-API ``flexible`` versions. ``wire.compiler`` turns them into codecs.
"""
from __future__ import annotations

import re
import uuid

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
