"""PostgreSQL's ``pgoutput`` logical replication messages (protocol version 1), decoded from
the CopyData payloads of a replication stream: Begin, Commit, Relation, Insert, Update and
Delete (the others are passed over). Column values stay in text form (``None`` for NULL,
``UNCHANGED`` for an unchanged TOASTed value)."""
from __future__ import annotations

import struct
from typing import NamedTuple

UNCHANGED = object()
# PostgreSQL's epoch for timestamps in the protocol
PG_EPOCH_MICROS = 946_684_800_000_000


class Begin(NamedTuple):
    final_lsn: int
    commit_micros: int  # since the Unix epoch
    xid: int


class Commit(NamedTuple):
    commit_lsn: int
    end_lsn: int
    commit_micros: int


class Column(NamedTuple):
    key: bool
    name: str
    type_oid: int
    type_modifier: int


class Relation(NamedTuple):
    oid: int
    namespace: str
    name: str
    replica_identity: str
    columns: tuple[Column, ...]


class Change(NamedTuple):
    """An insert (``c``), update (``u``) or delete (``d``): the old tuple where the replica
    identity sends one (``old_is_key``: only the key columns'), the new one but for deletes."""
    op: str
    relation_oid: int
    old: list | None
    old_is_key: bool
    new: list | None


class Skipped(NamedTuple):
    """A message the connector passes over: Origin, Type, Truncate (Debezium's default
    skipped.operations=t), logical decoding messages."""
    kind: str


_Q = struct.Struct(">Q")
_I = struct.Struct(">I")
_H = struct.Struct(">H")


class _Reader:
    __slots__ = ("data", "pos")

    def __init__(self, data: bytes):
        self.data, self.pos = data, 0

    def byte(self) -> str:
        b = self.data[self.pos:self.pos + 1].decode("ascii")
        self.pos += 1
        return b

    def int8(self) -> int:
        self.pos += 1
        return self.data[self.pos - 1]

    def int16(self) -> int:
        (v,) = _H.unpack_from(self.data, self.pos)
        self.pos += 2
        return v

    def int32(self) -> int:
        (v,) = _I.unpack_from(self.data, self.pos)
        self.pos += 4
        return v

    def int64(self) -> int:
        (v,) = _Q.unpack_from(self.data, self.pos)
        self.pos += 8
        return v

    def string(self) -> str:
        end = self.data.index(b"\0", self.pos)
        s = self.data[self.pos:end].decode("utf-8")
        self.pos = end + 1
        return s

    def tuple_data(self) -> list:
        values = []
        for _ in range(self.int16()):
            kind = self.byte()
            if kind == "n":
                values.append(None)
            elif kind == "u":
                values.append(UNCHANGED)
            else:  # 't' text (protocol 1 sends no binary values)
                length = self.int32()
                values.append(self.data[self.pos:self.pos + length].decode("utf-8"))
                self.pos += length
        return values


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def decode(payload: bytes):
    """One pgoutput message."""
    r = _Reader(payload)
    kind = r.byte()
    if kind == "B":
        lsn, ts, xid = r.int64(), _signed(r.int64()), r.int32()
        return Begin(lsn, ts + PG_EPOCH_MICROS, xid)
    if kind == "C":
        r.int8()
        commit_lsn, end_lsn, ts = r.int64(), r.int64(), _signed(r.int64())
        return Commit(commit_lsn, end_lsn, ts + PG_EPOCH_MICROS)
    if kind == "R":
        oid, namespace, name = r.int32(), r.string(), r.string()
        identity = chr(r.int8())
        columns = tuple(Column(bool(r.int8() & 1), r.string(), r.int32(), _i32(r.int32()))
                        for _ in range(r.int16()))
        return Relation(oid, namespace, name, identity, columns)
    if kind == "I":
        oid = r.int32()
        r.byte()  # 'N'
        return Change("c", oid, None, False, r.tuple_data())
    if kind == "U":
        oid = r.int32()
        marker = r.byte()
        old, old_is_key = None, False
        if marker in ("K", "O"):
            old, old_is_key = r.tuple_data(), marker == "K"
            r.byte()  # 'N'
        return Change("u", oid, old, old_is_key, r.tuple_data())
    if kind == "D":
        oid = r.int32()
        marker = r.byte()
        return Change("d", oid, r.tuple_data(), marker == "K", None)
    return Skipped(kind)


def _i32(value: int) -> int:
    return value - (1 << 32) if value >= 1 << 31 else value


def parse_lsn(text: str) -> int:
    high, low = text.split("/")
    return (int(high, 16) << 32) | int(low, 16)
