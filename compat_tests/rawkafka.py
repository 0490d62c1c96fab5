"""A deliberately small, hand-written Kafka protocol client for the compat tests.

Built only from `struct` and the published protocol (kafka.apache.org/protocol),
independently of the broker's own wire/ package, so that tests using it are an
independent check of the bytes on the wire.  It encodes exactly the few
requests the tests need and decodes only what they look at.
"""

from __future__ import annotations

import socket
import struct
import time
import zlib

# ---------------------------------------------------------------- error codes
NONE = 0
OFFSET_OUT_OF_RANGE = 1
CORRUPT_MESSAGE = 2
UNKNOWN_TOPIC_OR_PARTITION = 3
INVALID_TOPIC_EXCEPTION = 17
NOT_COORDINATOR = 16
UNSUPPORTED_VERSION = 35
INVALID_RECORD = 87

# ---------------------------------------------------------------- api keys
PRODUCE = 0
FETCH = 1
LIST_OFFSETS = 2
METADATA = 3
OFFSET_FETCH = 9
API_VERSIONS = 18

SOCKET_REQUEST_MAX_BYTES = 104857600

# ---------------------------------------------------------------- CRC32C
_CRC32C_TABLE = []
for _n in range(256):
    _c = _n
    for _ in range(8):
        _c = (_c >> 1) ^ 0x82F63B78 if _c & 1 else _c >> 1
    _CRC32C_TABLE.append(_c)


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    table = _CRC32C_TABLE
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


assert crc32c(b"123456789") == 0xE3069283  # the standard CRC-32C check value


# ---------------------------------------------------------------- primitives
def int8(v): return struct.pack(">b", v)
def int16(v): return struct.pack(">h", v)
def int32(v): return struct.pack(">i", v)
def int64(v): return struct.pack(">q", v)
def uint32(v): return struct.pack(">I", v)


def uvarint(v: int) -> bytes:
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def varint(v: int) -> bytes:  # zigzag
    return uvarint((v << 1) ^ (v >> 63))


def string(s: str | None) -> bytes:
    if s is None:
        return int16(-1)
    b = s.encode()
    return int16(len(b)) + b


def compact_string(s: str | None) -> bytes:
    if s is None:
        return uvarint(0)
    b = s.encode()
    return uvarint(len(b) + 1) + b


def compact_bytes(b: bytes | None) -> bytes:
    if b is None:
        return uvarint(0)
    return uvarint(len(b) + 1) + b


def nbytes(b: bytes | None) -> bytes:
    if b is None:
        return int32(-1)
    return int32(len(b)) + b


EMPTY_TAGS = uvarint(0)


class Reader:
    """Sequential decoder over a response body."""

    def __init__(self, data: bytes, pos: int = 0):
        self.data = data
        self.pos = pos

    def _take(self, fmt: str):
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.data):
            raise ValueError(f"short response: need {size} bytes at {self.pos}, have {len(self.data)}")
        (v,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += size
        return v

    def int8(self): return self._take(">b")
    def int16(self): return self._take(">h")
    def int32(self): return self._take(">i")
    def int64(self): return self._take(">q")
    def uint32(self): return self._take(">I")
    def bool(self): return self._take(">b") != 0

    def uvarint(self) -> int:
        shift = 0
        result = 0
        while True:
            b = self.data[self.pos]
            self.pos += 1
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return result
            shift += 7

    def varint(self) -> int:
        v = self.uvarint()
        return (v >> 1) ^ -(v & 1)

    def raw(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise ValueError("short response")
        b = self.data[self.pos:self.pos + n]
        self.pos += n
        return b

    def string(self):
        n = self.int16()
        return None if n < 0 else self.raw(n).decode()

    def compact_string(self):
        n = self.uvarint()
        return None if n == 0 else self.raw(n - 1).decode()

    def nbytes(self):
        n = self.int32()
        return None if n < 0 else self.raw(n)

    def compact_bytes(self):
        n = self.uvarint()
        return None if n == 0 else self.raw(n - 1)

    def array_len(self, flexible: bool) -> int:
        if flexible:
            return self.uvarint() - 1
        return self.int32()

    def skip_tags(self):
        for _ in range(self.uvarint()):
            self.uvarint()  # tag
            self.raw(self.uvarint())

    def str_(self, flexible):
        return self.compact_string() if flexible else self.string()

    def bytes_(self, flexible):
        return self.compact_bytes() if flexible else self.nbytes()


# ---------------------------------------------------------------- framing
def request_header(api_key: int, api_version: int, correlation_id: int,
                   client_id: str | None = "compat-raw", flexible: bool = False) -> bytes:
    h = int16(api_key) + int16(api_version) + int32(correlation_id) + string(client_id)
    if flexible:
        h += EMPTY_TAGS
    return h


def frame(payload: bytes) -> bytes:
    return int32(len(payload)) + payload


class ConnectionClosed(Exception):
    pass


class RawConnection:
    def __init__(self, bootstrap: str, timeout: float = 10.0):
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self.sock.settimeout(timeout)
        self._corr = 0

    def next_corr(self) -> int:
        self._corr += 1
        return self._corr

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def _recv_exact(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionClosed(f"connection closed after {len(buf)}/{n} bytes")
            buf += chunk
        return bytes(buf)

    def recv_frame(self) -> bytes:
        (size,) = struct.unpack(">i", self._recv_exact(4))
        return self._recv_exact(size)

    def request(self, api_key: int, api_version: int, body: bytes, *,
                flexible_request: bool, flexible_response: bool) -> Reader:
        """Send one request, return a Reader positioned after the response header."""
        corr = self.next_corr()
        self.send(frame(request_header(api_key, api_version, corr, flexible=flexible_request) + body))
        resp = self.recv_frame()
        r = Reader(resp)
        got = r.int32()
        if got != corr:
            raise AssertionError(f"correlation id {got} != {corr}")
        if flexible_response:
            r.skip_tags()
        return r

    def wait_closed(self, timeout: float = 10.0) -> bool:
        """True if the peer closes the connection within `timeout` (reading and
        discarding anything it sends first); False if it stays open."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            self.sock.settimeout(left)
            try:
                chunk = self.sock.recv(65536)
            except socket.timeout:
                return False
            except (ConnectionResetError, BrokenPipeError):
                return True
            if not chunk:
                return True

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# ---------------------------------------------------------------- ApiVersions
def api_versions(conn: RawConnection) -> dict[int, tuple[int, int]]:
    """ApiVersions v0 (works on every broker): {api_key: (min, max)}."""
    r = conn.request(API_VERSIONS, 0, b"", flexible_request=False, flexible_response=False)
    err = r.int16()
    if err:
        raise AssertionError(f"ApiVersions v0 error {err}")
    out = {}
    for _ in range(r.int32()):
        k, lo, hi = r.int16(), r.int16(), r.int16()
        out[k] = (lo, hi)
    return out


def pick_version(ranges: dict, api_key: int, candidates) -> int | None:
    lo, hi = ranges.get(api_key, (None, None))
    if lo is None:
        return None
    for v in sorted(candidates, reverse=True):
        if lo <= v <= hi:
            return v
    return None


# ---------------------------------------------------------------- message formats v0 / v1
def legacy_message(offset: int, magic: int, key: bytes | None, value: bytes | None,
                   timestamp: int = -1, attributes: int = 0) -> bytes:
    """One message of format v0 (magic 0) or v1 (magic 1, with a timestamp), CRC-32 included."""
    body = int8(magic) + int8(attributes) + (int64(timestamp) if magic else b"")
    body += nbytes(key) + nbytes(value)
    return int64(offset) + int32(4 + len(body)) + uint32(zlib.crc32(body)) + body


# ---------------------------------------------------------------- record batch v2
def record(offset_delta: int, key: bytes | None, value: bytes | None,
           headers=(), timestamp_delta: int = 0) -> bytes:
    body = int8(0) + varint(timestamp_delta) + varint(offset_delta)
    body += varint(-1) if key is None else varint(len(key)) + key
    body += varint(-1) if value is None else varint(len(value)) + value
    body += varint(len(headers))
    for hk, hv in headers:
        hkb = hk.encode()
        body += varint(len(hkb)) + hkb
        body += varint(-1) if hv is None else varint(len(hv)) + hv
    return varint(len(body)) + body


def record_batch(records: list[tuple[bytes | None, bytes | None]], base_timestamp: int,
                 corrupt_crc: bool = False, producer_id: int = -1, producer_epoch: int = -1,
                 base_sequence: int = -1, transactional: bool = False) -> bytes:
    """An uncompressed magic-2 batch of (key, value) records (attribute bit 4: transactional)."""
    recs = b"".join(record(i, k, v) for i, (k, v) in enumerate(records))
    after_crc = (
        int16(0x10 if transactional else 0)   # attributes: no compression, CreateTime
        + int32(len(records) - 1)             # lastOffsetDelta
        + int64(base_timestamp)               # baseTimestamp
        + int64(base_timestamp)               # maxTimestamp
        + int64(producer_id)
        + int16(producer_epoch)
        + int32(base_sequence)
        + int32(len(records))
        + recs
    )
    crc = crc32c(after_crc)
    if corrupt_crc:
        crc ^= 0xDEADBEEF
    after_length = int32(0) + int8(2) + uint32(crc) + after_crc  # leader epoch, magic, crc
    return int64(0) + int32(len(after_length)) + after_length


def parse_batches(data: bytes):
    """Yield (base_offset, attributes, records_count, last_offset_delta) per batch header."""
    pos = 0
    while pos + 61 <= len(data):
        base_offset, batch_len = struct.unpack_from(">qi", data, pos)
        if pos + 12 + batch_len > len(data):
            break  # partial trailing batch (allowed in fetch responses)
        magic = data[pos + 16]
        attributes, last_delta = struct.unpack_from(">hi", data, pos + 21)
        (count,) = struct.unpack_from(">i", data, pos + 57)
        yield {"base_offset": base_offset, "magic": magic, "attributes": attributes,
               "last_offset_delta": last_delta, "count": count}
        pos += 12 + batch_len


# ---------------------------------------------------------------- Produce v9
def produce_v9_body(topic: str, partition: int, records_bytes: bytes | None,
                    acks: int = -1, timeout_ms: int = 10000) -> bytes:
    return (
        compact_string(None)                  # transactional_id
        + int16(acks) + int32(timeout_ms)
        + uvarint(1 + 1)                      # topic_data: 1 topic
        + compact_string(topic)
        + uvarint(1 + 1)                      # partition_data: 1 partition
        + int32(partition)
        + compact_bytes(records_bytes)
        + EMPTY_TAGS                          # partition tags
        + EMPTY_TAGS                          # topic tags
        + EMPTY_TAGS                          # request tags
    )


def produce_v9(conn: RawConnection, topic: str, partition: int, records_bytes: bytes | None,
               acks: int = -1) -> dict:
    r = conn.request(PRODUCE, 9, produce_v9_body(topic, partition, records_bytes, acks),
                     flexible_request=True, flexible_response=True)
    out = {}
    for _ in range(r.array_len(True)):
        name = r.compact_string()
        for _ in range(r.array_len(True)):
            p = {"partition": r.int32(), "error_code": r.int16(), "base_offset": r.int64(),
                 "log_append_time_ms": r.int64(), "log_start_offset": r.int64()}
            p["record_errors"] = []
            for _ in range(r.array_len(True)):
                p["record_errors"].append((r.int32(), r.compact_string()))
                r.skip_tags()
            p["error_message"] = r.compact_string()
            r.skip_tags()
            out[(name, p["partition"])] = p
        r.skip_tags()
    r.int32()  # throttle_time_ms
    r.skip_tags()
    return out


# ---------------------------------------------------------------- ListOffsets v1
def list_offsets_v1(conn: RawConnection, topic: str, partition: int, timestamp: int,
                    replica_id: int = -1) -> tuple[int, int]:
    """One partition's (error code, offset) for ``timestamp`` (-2 earliest, -1 latest).
    ``replica_id`` -2 is Kafka's debugging id: any replica answers, not only the leader."""
    body = (int32(replica_id) + int32(1) + string(topic) + int32(1) + int32(partition)
            + int64(timestamp))
    r = conn.request(LIST_OFFSETS, 1, body, flexible_request=False, flexible_response=False)
    assert r.int32() == 1 and r.string() == topic and r.int32() == 1
    assert r.int32() == partition
    err = r.int16()
    r.int64()  # timestamp
    return err, r.int64()


def offset_fetch_v1(conn: RawConnection, group: str, topic: str,
                    partitions: list[int]) -> dict[int, tuple[int, int]]:
    """A group's committed offsets as this broker answers them: {partition: (error, offset)}."""
    body = (string(group) + int32(1) + string(topic) + int32(len(partitions))
            + b"".join(int32(p) for p in partitions))
    r = conn.request(OFFSET_FETCH, 1, body, flexible_request=False, flexible_response=False)
    out = {}
    for _t in range(r.int32()):
        r.string()
        for _p in range(r.int32()):
            partition, offset = r.int32(), r.int64()
            r.string()  # metadata
            out[partition] = (r.int16(), offset)
    return out


# ---------------------------------------------------------------- Metadata v9
def metadata_v9_body(topics: list[str] | None, allow_auto_create: bool = True) -> bytes:
    if topics is None:
        body = uvarint(0)
    else:
        body = uvarint(len(topics) + 1)
        for t in topics:
            body += compact_string(t) + EMPTY_TAGS
    body += int8(1 if allow_auto_create else 0)   # allow_auto_topic_creation
    body += int8(0) + int8(0)                      # include cluster/topic authorized ops
    body += EMPTY_TAGS
    return body


def metadata_v9(conn: RawConnection, topics: list[str] | None, allow_auto_create: bool = True) -> dict:
    r = conn.request(METADATA, 9, metadata_v9_body(topics, allow_auto_create),
                     flexible_request=True, flexible_response=True)
    r.int32()  # throttle
    brokers = []
    for _ in range(r.array_len(True)):
        brokers.append({"node_id": r.int32(), "host": r.compact_string(), "port": r.int32(),
                        "rack": r.compact_string()})
        r.skip_tags()
    cluster_id = r.compact_string()
    controller_id = r.int32()
    topics_out = {}
    for _ in range(r.array_len(True)):
        err = r.int16()
        name = r.compact_string()
        internal = r.bool()
        parts = {}
        for _ in range(r.array_len(True)):
            perr = r.int16()
            idx = r.int32()
            leader = r.int32()
            r.int32()  # leader epoch
            reps = [r.int32() for _ in range(r.array_len(True))]
            isr = [r.int32() for _ in range(r.array_len(True))]
            [r.int32() for _ in range(r.array_len(True))]  # offline
            r.skip_tags()
            parts[idx] = {"error_code": perr, "leader": leader, "replicas": reps, "isr": isr}
        r.int32()  # topic authorized operations
        r.skip_tags()
        topics_out[name] = {"error_code": err, "is_internal": internal, "partitions": parts}
    r.int32()  # cluster authorized operations
    r.skip_tags()
    return {"brokers": brokers, "cluster_id": cluster_id, "controller_id": controller_id,
            "topics": topics_out}


# ---------------------------------------------------------------- Fetch v4..v12
FETCH_VERSIONS = range(4, 13)  # versions that still name topics (v13+ use topic ids)


def fetch_body(version: int, topic: str, partition: int, offset: int,
               max_wait_ms: int = 100, partition_max_bytes: int = 1 << 20) -> bytes:
    flex = version >= 12
    arr = (lambda n: uvarint(n + 1)) if flex else int32
    s = compact_string if flex else string
    tags = EMPTY_TAGS if flex else b""
    body = int32(-1) + int32(max_wait_ms) + int32(1) + int32(50 << 20)  # replica, wait, min, max bytes
    body += int8(0)                                                      # isolation: read uncommitted
    if version >= 7:
        body += int32(0) + int32(-1)                                     # session id / epoch: no session
    body += arr(1) + s(topic) + arr(1) + int32(partition)
    if version >= 9:
        body += int32(-1)                                                # current leader epoch
    body += int64(offset)
    if version >= 12:
        body += int32(-1)                                                # last fetched epoch
    if version >= 5:
        body += int64(-1)                                                # log start offset
    body += int32(partition_max_bytes) + tags + tags                    # partition, topic tags
    if version >= 7:
        body += arr(0)                                                   # forgotten topics
    if version >= 11:
        body += s("")                                                    # rack id
    body += tags
    return body


def fetch(conn: RawConnection, version: int, topic: str, partition: int, offset: int,
          max_wait_ms: int = 100) -> dict:
    flex = version >= 12
    r = conn.request(FETCH, version, fetch_body(version, topic, partition, offset, max_wait_ms),
                     flexible_request=flex, flexible_response=flex)
    r.int32()  # throttle
    top_error = 0
    if version >= 7:
        top_error = r.int16()
        r.int32()  # session id
    out = {"error_code": top_error, "partitions": {}}
    for _ in range(r.array_len(flex)):
        name = r.str_(flex)
        for _ in range(r.array_len(flex)):
            p = {"partition": r.int32(), "error_code": r.int16(), "high_watermark": r.int64(),
                 "last_stable_offset": r.int64()}
            if version >= 5:
                p["log_start_offset"] = r.int64()
            n = r.array_len(flex)
            for _ in range(max(n, 0)):
                r.int64(); r.int64()
                if flex:
                    r.skip_tags()
            if version >= 11:
                r.int32()  # preferred read replica
            p["records"] = r.bytes_(flex) or b""
            if flex:
                r.skip_tags()
            out["partitions"][(name, p["partition"])] = p
        if flex:
            r.skip_tags()
    return out


# ---------------------------------------------------------------- InitProducerId v0
def init_producer_id(conn: RawConnection, transaction_timeout_ms: int = 60000) -> tuple[int, int]:
    r = conn.request(22, 0, string(None) + int32(transaction_timeout_ms),
                     flexible_request=False, flexible_response=False)
    r.int32()  # throttle
    err = r.int16()
    if err:
        raise AssertionError(f"InitProducerId error {err}")
    return r.int64(), r.int16()


# ---------------------------------------------------------------- pipelining helpers
def metadata_v9_request(corr: int, topics: list[str] | None) -> bytes:
    return frame(request_header(METADATA, 9, corr, flexible=True) + metadata_v9_body(topics))


def api_versions_v0_request(corr: int) -> bytes:
    return frame(request_header(API_VERSIONS, 0, corr))


def fetch_request(version: int, corr: int, topic: str, partition: int, offset: int,
                  max_wait_ms: int) -> bytes:
    return frame(request_header(FETCH, version, corr, flexible=version >= 12)
                 + fetch_body(version, topic, partition, offset, max_wait_ms))


def produce_v9_request(corr: int, topic: str, partition: int, records_bytes: bytes,
                       acks: int) -> bytes:
    return frame(request_header(PRODUCE, 9, corr, flexible=True)
                 + produce_v9_body(topic, partition, records_bytes, acks))
