"""A bare Fetch reader over a socket, for comparing fetch versions on the same data.

Fetch v3 is what a 0.10.1-era consumer sends: the broker answers with message format v1,
converted down from the stored v2 batches. Fetch v4 is the oldest version answered with the
stored batches as they are, the same path current clients' fetches take. The reader does no
per-record work beyond finding each message's offset (v3) or each batch header (v4), so the
figures measure the broker, not a client library. Uncompressed data only.
"""
from __future__ import annotations

import socket
import struct
import time

_I16, _I32, _I64 = struct.Struct(">h"), struct.Struct(">i"), struct.Struct(">q")
_BATCH = struct.Struct(">qi")       # base offset, batch length
_COUNT_AT, _DELTA_AT = 57, 23       # v2 batch header: records count, last offset delta


def _s(text: str) -> bytes:
    b = text.encode()
    return _I16.pack(len(b)) + b


def _request(version, corr, topic, offsets, max_wait_ms, partition_max_bytes) -> bytes:
    body = _I32.pack(-1) + _I32.pack(max_wait_ms) + _I32.pack(1) + _I32.pack(50 << 20)
    if version >= 4:
        body += b"\x00"  # isolation level: read uncommitted
    body += _I32.pack(1) + _s(topic) + _I32.pack(len(offsets))
    for p, off in enumerate(offsets):
        body += _I32.pack(p) + _I64.pack(off) + _I32.pack(partition_max_bytes)
    head = _I16.pack(1) + _I16.pack(version) + _I32.pack(corr) + _s("bench-raw-fetch")
    return _I32.pack(len(head) + len(body)) + head + body


def _recv(sock, n, buf) -> memoryview:
    view = memoryview(buf)[:n]
    got = 0
    while got < n:
        k = sock.recv_into(view[got:])
        if not k:
            raise ConnectionError("broker closed the connection")
        got += k
    return view


def _count_v1_messages(data, pos, end, next_offset):
    """(messages at or after next_offset, the offset after the last one) in a message set."""
    n = 0
    while end - pos >= 12:
        offset, size = _BATCH.unpack_from(data, pos)
        if pos + 12 + size > end:
            break
        if offset >= next_offset:
            n += 1
            next_offset = offset + 1
        pos += 12 + size
    return n, next_offset


def _count_v2_batches(data, pos, end, next_offset):
    n = 0
    while end - pos >= 61:
        base, length = _BATCH.unpack_from(data, pos)
        if pos + 12 + length > end:
            break
        n += _I32.unpack_from(data, pos + _COUNT_AT)[0]
        next_offset = base + _I32.unpack_from(data, pos + _DELTA_AT)[0] + 1
        pos += 12 + length
    return n, next_offset


def read_all(host, port, topic, partitions, expected, version, cap_s,
             max_wait_ms=100, partition_max_bytes=1 << 20) -> tuple[int, float]:
    """Fetch every partition from offset 0 until ``expected`` records are read or ``cap_s``
    passes. Returns (records read, seconds)."""
    count = _count_v1_messages if version < 4 else _count_v2_batches
    offsets = [0] * partitions
    buf = bytearray(64 << 20)
    n = 0
    corr = 0
    with socket.create_connection((host, port), timeout=30) as sock:
        t0 = time.monotonic()
        deadline = t0 + cap_s
        while n < expected and time.monotonic() < deadline:
            corr += 1
            sock.sendall(_request(version, corr, topic, offsets, max_wait_ms,
                                  partition_max_bytes))
            (size,) = _I32.unpack(_recv(sock, 4, buf))
            if size > len(buf):
                buf = bytearray(size)
            data = _recv(sock, size, buf)
            pos = 4 + 4 + 4  # correlation id, throttle time, topics count
            pos += 2 + _I16.unpack_from(data, pos)[0] + 4  # topic name, partitions count
            for _ in range(partitions):
                p, err = struct.unpack_from(">ih", data, pos)
                pos += 6 + 8 + (8 if version >= 4 else 0)  # high watermark, last stable offset
                if err:
                    raise RuntimeError(f"fetch v{version} partition {p}: error {err}")
                if version >= 4:
                    aborted = _I32.unpack_from(data, pos)[0]
                    pos += 4 + 16 * max(aborted, 0)
                length = _I32.unpack_from(data, pos)[0]
                pos += 4
                got, offsets[p] = count(data, pos, pos + max(length, 0), offsets[p])
                n += got
                pos += max(length, 0)
        return n, time.monotonic() - t0
