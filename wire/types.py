"""Primitive wire types of the Kafka protocol.

Readers take ``(buf, pos)`` and return ``(value, new_pos)``; writers append to a ``bytearray``.
``buf`` may be ``bytes``, ``bytearray`` or ``memoryview``. Running past the end of ``buf``
raises ``DecodeError`` (callers treat it as a malformed request).
"""
from __future__ import annotations

import base64
import struct
import uuid as _uuid


class DecodeError(ValueError):
    """The bytes do not form a valid message of the expected layout."""


_i8 = struct.Struct(">b")
_i16 = struct.Struct(">h")
_u16 = struct.Struct(">H")
_i32 = struct.Struct(">i")
_u32 = struct.Struct(">I")
_i64 = struct.Struct(">q")
_f64 = struct.Struct(">d")

ZERO_UUID = _uuid.UUID(int=0)


def read_uvarint(buf, p):
    b = buf[p]
    if b < 0x80:
        return b, p + 1
    result = b & 0x7F
    shift = 7
    while True:
        p += 1
        b = buf[p]
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, p + 1
        shift += 7
        if shift > 63:
            raise DecodeError("varint too long")


def write_uvarint(out: bytearray, v: int) -> None:
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


def write_varint(out: bytearray, v: int) -> None:
    write_uvarint(out, (v << 1) ^ (v >> 63))


def _check(buf, end):
    if end > len(buf):
        raise DecodeError("message truncated")


def read_string(buf, p):
    (n,) = _i16.unpack_from(buf, p)
    p += 2
    if n < 0:
        return None, p
    _check(buf, p + n)
    return str(buf[p:p + n], "utf-8"), p + n


def read_compact_string(buf, p):
    n, p = read_uvarint(buf, p)
    if n == 0:
        return None, p
    n -= 1
    _check(buf, p + n)
    return str(buf[p:p + n], "utf-8"), p + n


def write_string(out: bytearray, s) -> None:
    if s is None:
        out += b"\xff\xff"
        return
    b = s.encode()
    out += _i16.pack(len(b))
    out += b


def write_compact_string(out: bytearray, s) -> None:
    if s is None:
        out.append(0)
        return
    b = s.encode()
    write_uvarint(out, len(b) + 1)
    out += b


def read_bytes(buf, p):
    (n,) = _i32.unpack_from(buf, p)
    p += 4
    if n < 0:
        return None, p
    _check(buf, p + n)
    return bytes(buf[p:p + n]), p + n


def read_compact_bytes(buf, p):
    n, p = read_uvarint(buf, p)
    if n == 0:
        return None, p
    n -= 1
    _check(buf, p + n)
    return bytes(buf[p:p + n]), p + n


def write_bytes(out: bytearray, b) -> None:
    if b is None:
        out += b"\xff\xff\xff\xff"
        return
    out += _i32.pack(len(b))
    out += b


def write_compact_bytes(out: bytearray, b) -> None:
    if b is None:
        out.append(0)
        return
    write_uvarint(out, len(b) + 1)
    out += b


def read_records(buf, p):
    """Record data is returned as a zero-copy view of the request buffer."""
    (n,) = _i32.unpack_from(buf, p)
    p += 4
    if n < 0:
        return None, p
    _check(buf, p + n)
    return memoryview(buf)[p:p + n], p + n


def read_compact_records(buf, p):
    n, p = read_uvarint(buf, p)
    if n == 0:
        return None, p
    n -= 1
    _check(buf, p + n)
    return memoryview(buf)[p:p + n], p + n


def records_size(r) -> int:
    """Records on the encode side are None, one buffer, or a list/tuple of buffers."""
    if isinstance(r, (list, tuple)):
        return sum(len(c) for c in r)
    return len(r)


def read_uuid(buf, p):
    _check(buf, p + 16)
    return _uuid.UUID(bytes=bytes(buf[p:p + 16])), p + 16


def skip_tagged_fields(buf, p):
    n, p = read_uvarint(buf, p)
    for _ in range(n):
        _tag, p = read_uvarint(buf, p)
        size, p = read_uvarint(buf, p)
        p += size
    _check(buf, p)
    return p


i8, i16, u16, i32, u32, i64, f64 = _i8, _i16, _u16, _i32, _u32, _i64, _f64


def uuid_to_base64(u) -> str:
    """Kafka's text form of a Uuid (topic ids, cluster ids): URL-safe base64, no padding."""
    return base64.urlsafe_b64encode(u.bytes).decode().rstrip("=")


def uuid_from_base64(text: str):
    """The reverse of ``uuid_to_base64``: Kafka's text form of a Uuid (22 characters of URL-safe
    base64, optionally padded with "==") back to a ``uuid.UUID``; ``ValueError`` otherwise."""
    if not isinstance(text, str) or not (len(text) == 22 or (len(text) == 24 and text.endswith("=="))):
        raise ValueError(f"not a Kafka uuid string: {text!r}")
    body = text[:22]
    if not all(c.isascii() and (c.isalnum() or c in "-_") for c in body):
        raise ValueError(f"not a Kafka uuid string: {text!r}")
    return _uuid.UUID(bytes=base64.urlsafe_b64decode(body + "=="))
