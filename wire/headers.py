"""Request header v1/v2 and response header v0/v1.

The client id stays a classic (non-compact) nullable string even in header v2.
"""
from __future__ import annotations

from josefk.wire import types as T

_hdr = T.struct.Struct(">hhi")


class RequestHeader:
    __slots__ = ("api_key", "api_version", "correlation_id", "client_id")

    def __init__(self, api_key, api_version, correlation_id, client_id=None):
        self.api_key = api_key
        self.api_version = api_version
        self.correlation_id = correlation_id
        self.client_id = client_id

    def __repr__(self):
        return (f"RequestHeader(api_key={self.api_key}, api_version={self.api_version}, "
                f"correlation_id={self.correlation_id}, client_id={self.client_id!r})")


def peek_request_header(buf) -> RequestHeader:
    """Read api key, version and correlation id (enough to answer even an unknown API)."""
    if len(buf) < 8:
        raise T.DecodeError("request header truncated")
    key, version, corr = _hdr.unpack_from(buf, 0)
    return RequestHeader(key, version, corr)


def read_request_header(buf, header_version: int, peeked: RequestHeader | None = None):
    """Decode the whole header; returns ``(header, body_pos)``. ``peeked``: what
    `peek_request_header` returned for ``buf``, completed rather than read again."""
    h = peek_request_header(buf) if peeked is None else peeked
    if header_version == 0:
        return h, 8
    try:
        h.client_id, p = T.read_string(buf, 8)
        if header_version >= 2:
            p = T.skip_tagged_fields(buf, p)
    except (T.struct.error, IndexError, UnicodeDecodeError) as e:
        raise T.DecodeError(f"bad request header: {e}") from None
    return h, p


def write_request_header(out: bytearray, h: RequestHeader, header_version: int) -> None:
    out += _hdr.pack(h.api_key, h.api_version, h.correlation_id)
    if header_version == 0:
        return
    T.write_string(out, h.client_id)
    if header_version >= 2:
        out.append(0)


def response_header(correlation_id: int, header_version: int) -> bytearray:
    out = bytearray(T.i32.pack(correlation_id))
    if header_version >= 1:
        out.append(0)
    return out


def read_response_header(buf, header_version: int):
    (corr,) = T.i32.unpack_from(buf, 0)
    p = 4
    if header_version >= 1:
        p = T.skip_tagged_fields(buf, p)
    return corr, p
