"""MirrorMaker's records on the wire, byte for byte as Kafka's: structs of Kafka's protocol
types (INT16, INT32, INT64 big-endian; STRING as an INT16 length and UTF-8 bytes).
OffsetSync (key: topic, partition; value: upstreamOffset, offset), Checkpoint (key: group,
topic, partition; value: an INT16 version header, then upstreamOffset, offset, metadata) and
Heartbeat (key: sourceClusterAlias, targetClusterAlias; value: the version header, then
timestamp)."""
from __future__ import annotations

import struct
from typing import NamedTuple

VERSION = 0
_VERSION = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")
_TWO_LONGS = struct.Struct(">qq")


class FormatError(ValueError):
    """A record that is not one of MirrorMaker's."""


def _string(value: str) -> bytes:
    data = value.encode()
    if len(data) > 0x7FFF:
        raise FormatError(f"string of {len(data)} bytes is longer than a STRING can be")
    return _VERSION.pack(len(data)) + data


class _Reader:
    __slots__ = ("data", "pos", "what")

    def __init__(self, data: bytes | None, what: str):
        if data is None:
            raise FormatError(f"{what} is null")
        self.data, self.pos, self.what = memoryview(data), 0, what

    def _take(self, size: int) -> memoryview:
        end = self.pos + size
        if size < 0 or end > len(self.data):
            raise FormatError(f"{self.what} ends after {len(self.data)} bytes, short of its "
                              f"fields")
        chunk, self.pos = self.data[self.pos:end], end
        return chunk

    def int16(self) -> int:
        return _VERSION.unpack(self._take(2))[0]

    def int32(self) -> int:
        return _INT32.unpack(self._take(4))[0]

    def int64(self) -> int:
        return _INT64.unpack(self._take(8))[0]

    def string(self) -> str:
        size = self.int16()
        if size < 0:
            raise FormatError(f"{self.what} has a null string")
        try:
            return bytes(self._take(size)).decode()
        except UnicodeDecodeError:
            raise FormatError(f"{self.what} has a string that is not UTF-8") from None

    def version(self) -> None:
        version = self.int16()
        if version != VERSION:
            raise FormatError(f"{self.what} has version {version}; only {VERSION} is known")


class OffsetSync(NamedTuple):
    """Upstream offset ``upstream_offset`` of ``topic``-``partition`` (on the source) was
    written at ``downstream_offset`` of its remote topic."""
    topic: str
    partition: int
    upstream_offset: int
    downstream_offset: int

    def record_key(self) -> bytes:
        return _string(self.topic) + _INT32.pack(self.partition)

    def record_value(self) -> bytes:
        return _TWO_LONGS.pack(self.upstream_offset, self.downstream_offset)

    @classmethod
    def from_record(cls, key: bytes | None, value: bytes | None) -> "OffsetSync":
        k, v = _Reader(key, "offset sync key"), _Reader(value, "offset sync value")
        return cls(k.string(), k.int32(), v.int64(), v.int64())


class Checkpoint(NamedTuple):
    """Group ``group``'s committed offset ``upstream_offset`` of a source partition,
    translated to ``downstream_offset`` of ``topic`` (the remote topic) on the target."""
    group: str
    topic: str
    partition: int
    upstream_offset: int
    downstream_offset: int
    metadata: str

    def record_key(self) -> bytes:
        return _string(self.group) + _string(self.topic) + _INT32.pack(self.partition)

    def record_value(self) -> bytes:
        return (_VERSION.pack(VERSION) + _TWO_LONGS.pack(self.upstream_offset,
                                                        self.downstream_offset)
                + _string(self.metadata))

    def connect_partition(self) -> dict:
        return {"group": self.group, "topic": self.topic, "partition": self.partition}

    @classmethod
    def from_record(cls, key: bytes | None, value: bytes | None) -> "Checkpoint":
        k, v = _Reader(key, "checkpoint key"), _Reader(value, "checkpoint value")
        v.version()
        group, topic, partition = k.string(), k.string(), k.int32()
        return cls(group, topic, partition, v.int64(), v.int64(), v.string())


class Heartbeat(NamedTuple):
    source_cluster_alias: str
    target_cluster_alias: str
    timestamp: int

    def record_key(self) -> bytes:
        return _string(self.source_cluster_alias) + _string(self.target_cluster_alias)

    def record_value(self) -> bytes:
        return _VERSION.pack(VERSION) + _INT64.pack(self.timestamp)

    def connect_partition(self) -> dict:
        return {"sourceClusterAlias": self.source_cluster_alias,
                "targetClusterAlias": self.target_cluster_alias}

    @classmethod
    def from_record(cls, key: bytes | None, value: bytes | None) -> "Heartbeat":
        k, v = _Reader(key, "heartbeat key"), _Reader(value, "heartbeat value")
        v.version()
        return cls(k.string(), k.string(), v.int64())
