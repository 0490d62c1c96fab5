"""A seeded request fuzzer for every API and version the broker declares.

Two kinds of input, both framed like a client's:

- *generated* requests: a random object of the API's declared request layout (random integers,
  names from small pools that hit real topics, groups and configs, nulls wherever the schema
  allows them, real and broken record batches), encoded with our own encoders, so that every
  handler gets well-formed but hostile requests;
- *mutated* frames: a generated request, or a frame the Java client recorded
  (``testkit/vectors``), with bytes flipped, overwritten by boundary values (``ff ff ff ff`` is
  a null length), inserted or cut, so that the decoder gets what the schema forbids.

`FuzzRun` sends them over real sockets to a broker: per connection a run of generated requests
and then one mutated frame (which may be refused by closing the connection, so nothing is sent
after it). `check_broker_log` reads the broker's log for handler failures and tracebacks.
"""
from __future__ import annotations

import errno
import random
import socket
import struct
import time
import uuid

from josefk.storage.config import PROPS
from josefk.wire import headers
from josefk.wire.apis import API_BY_KEY
from josefk.wire.records import build_batch
from josefk.wire.schema import BOOL, BYTES, FLOAT64, RECORDS, STRING, UUID, Array, Prim, Struct
from testkit import JAVA_VECTORS


_INT_BITS = {"int8": 8, "int16": 16, "uint16": 16, "int32": 32, "int64": 64}
_LONG_NAME = "fuzz-" + "n" * 244  # the longest legal topic name (249 characters)
# Text of a log's "this request made a handler fail" lines and of unhandled exceptions.
# What a fuzzed broker runs with beyond the shared overrides: random CreateTopics and
# CreatePartitions counts would otherwise spend the run making tens of thousands of partition
# directories (a limit refused with INVALID_PARTITIONS is fuzzed all the same)
BROKER_OVERRIDES = {"max.broker.partitions": 2000}

FAILURE_MARKERS = ("handler failed", "Traceback (most recent call last)", "cannot encode")


def _interesting(bits: int) -> list[int]:
    top = 1 << (bits - 1)
    return [v for v in (0, 1, -1, 2, top - 1, -top, top // 2, 255, 256, 65535, 0x7FFF, -0x8000)
            if -top <= v < top]


class RequestGenerator:
    """Random request objects for ``(api, version)`` from the declared layout."""

    def __init__(self, rng: random.Random, topics: list[str], groups: list[str]):
        self.rng = rng
        self.topics = topics + ["__consumer_offsets", "__transaction_state", _LONG_NAME,
                                "bad/name", "", "."]
        self.groups = groups + [""]
        self.config_names = sorted(PROPS) + ["no.such.config"]
        self.config_values = ["0", "-1", "1", "99999999999999", "2147483648", "abc", "",
                              "compact", "delete", "zstd", "LogAppendTime", "0.5", "true"]

    def request(self, api, version: int):
        return self._struct(api.Request, version, "")

    def _struct(self, klass, version, path):
        obj = klass()
        for f in klass._fields:
            if version in f.versions:
                setattr(obj, f.name, self._value(klass, f, version, f"{path}.{f.name}"))
        return obj

    def _value(self, klass, f, version, path):
        rng = self.rng
        t = f.type
        nullable = version in f.nullable
        if nullable and rng.random() < 0.1:
            return None
        if isinstance(t, list) or isinstance(t, Struct):
            sub = klass._nested[f.name]
            if isinstance(t, Struct):
                return self._struct(sub, version, path)
            return [self._struct(sub, version, path) for _ in range(self._count())]
        if isinstance(t, Array):
            return [self._prim(t.item, path) for _ in range(self._count())]
        return self._prim(t, path)

    def _count(self) -> int:
        return self.rng.choice((0, 1, 1, 1, 2, 3))

    def _prim(self, t: Prim, path: str):
        rng = self.rng
        if t.name in _INT_BITS:
            bits = _INT_BITS[t.name]
            r = rng.random()
            if t.name == "uint16":
                return rng.randrange(1 << 16)
            if r < 0.55:
                return rng.randrange(0, 4)
            if r < 0.85:
                return rng.choice(_interesting(bits))
            return rng.randrange(-(1 << (bits - 1)), 1 << (bits - 1))
        if t is BOOL:
            return rng.random() < 0.5
        if t is FLOAT64:
            return rng.choice((0.0, -1.0, 1e308, float("nan")))
        if t is UUID:
            return None if rng.random() < 0.5 else uuid.UUID(int=rng.getrandbits(128))
        if t is STRING:
            return self._string(path)
        if t is BYTES:
            return rng.randbytes(rng.choice((0, 1, 8, 64)))
        if t is RECORDS:
            return self._records()
        raise AssertionError(t)

    def _string(self, path: str) -> str:
        rng = self.rng
        leaf = path.rsplit(".", 1)[-1]
        if "configs" in path or leaf in ("configuration_keys",):
            pool = self.config_names if leaf in ("name", "configuration_keys") else self.config_values
            return rng.choice(pool)
        if "group" in leaf or leaf == "key" or "groups" in path:
            return rng.choice(self.groups)
        if "topic" in path or leaf == "name" or leaf == "resource_name":
            return rng.choice(self.topics)
        return rng.choice(("", "x", "fuzz", "\u00e9", "a" * rng.randrange(1, 300)))

    def _records(self):
        rng = self.rng
        n = rng.randrange(1, 4)
        recs = [(rng.choice((None, b"k")), rng.randbytes(rng.randrange(0, 40)), None, None)
                for _ in range(n)]
        batch = build_batch(recs, compression=rng.randrange(0, 5))
        kind = rng.random()
        if kind < 0.6:
            return batch
        if kind < 0.8:  # claim more records than the batch holds, or fewer
            struct.pack_into(">i", batch, 57, rng.choice((0, n + 1, 0x7FFFFFFF, -1)))
            return batch
        return rng.randbytes(rng.randrange(0, 120))


def encode_frame(api, version: int, obj, correlation_id: int) -> bytes:
    hdr = bytearray()
    headers.write_request_header(hdr, headers.RequestHeader(api.key, version, correlation_id,
                                                            "fuzz"),
                                 api.request_header_version(version))
    body = b"".join(bytes(c) for c in obj.encode(version, hdr))
    return struct.pack(">i", len(body)) + body


def mutate(frame: bytes, rng: random.Random) -> bytes:
    """A few byte-level edits of a frame's body; the size prefix is refitted (usually)."""
    body = bytearray(frame[4:])
    for _ in range(rng.randrange(1, 4)):
        if not body:
            break
        op = rng.random()
        pos = rng.randrange(8, len(body)) if len(body) > 8 else rng.randrange(len(body))
        if op < 0.3:
            body[pos] ^= 1 << rng.randrange(8)
        elif op < 0.6:  # a boundary value (a null or huge length, a negative count)
            val = rng.choice((b"\xff\xff\xff\xff", b"\xff\xff", b"\x00\x00", b"\x7f\xff\xff\xff",
                              b"\x80\x00\x00\x00", b"\x00", b"\xff", b"\x01"))
            body[pos:pos + len(val)] = val
        elif op < 0.8:
            body[pos:pos] = rng.randbytes(rng.randrange(1, 8))
        else:
            del body[pos:pos + rng.randrange(1, 16)]
    size = len(body) if rng.random() < 0.95 else rng.randrange(0, len(body) + 8)
    return struct.pack(">i", size) + bytes(body)


def recorded_frames() -> list[bytes]:
    """The Java client's recorded request frames."""
    return [p.read_bytes() for p in sorted(JAVA_VECTORS.rglob("*.bin"))]


def api_versions() -> list[tuple[object, int]]:
    """Every declared (api, version)."""
    return [(api, v) for _k, api in sorted(API_BY_KEY.items())
            for v in range(api.min_version, api.max_version + 1)]


def null_in_non_nullable(obj, version: int, path: str = "") -> str | None:
    """The path of a field that holds None although the schema forbids null in ``version``
    (what a handler must never see), or None."""
    for f in obj._fields:
        if version not in f.versions or f.tag is not None:
            continue
        value = getattr(obj, f.name)
        where = f"{path}.{f.name}"
        if value is None:
            if version not in f.nullable and (not isinstance(f.type, Prim) or
                                              (not f.type.width and f.type is not UUID)):
                return where
            continue
        items = value if isinstance(value, list) else [value]
        for item in items:
            if item is None and isinstance(f.type, Array) and f.type.item is not UUID:
                return where + "[]"
            if hasattr(item, "_fields"):
                bad = null_in_non_nullable(item, version, where)
                if bad:
                    return bad
    return None


def _api_versions_frame(correlation_id: int) -> bytes:
    api = API_BY_KEY[18]
    return encode_frame(api, 3, api.Request(client_software_name="fuzz",
                                            client_software_version="1"), correlation_id)


def answers_api_versions(bootstrap: str, timeout: float = 10.0) -> bool:
    """A fresh connection gets an ApiVersions answer within ``timeout``."""
    host, port = bootstrap.rsplit(":", 1)
    try:
        with socket.create_connection((host, int(port)), timeout=timeout) as s:
            s.sendall(_api_versions_frame(7))
            head = _recv_exactly(s, 8)
            return head is not None and struct.unpack(">ii", head)[1] == 7
    except OSError:
        return False


def _count_frames(buf) -> int:
    n = pos = 0
    while len(buf) - pos >= 4:
        pos += 4 + struct.unpack_from(">i", buf, pos)[0]
        n += 1 if pos <= len(buf) else 0
    return n


def _recv_exactly(s, n):
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


class FuzzRun:
    """Sends fuzz inputs to the broker at ``bootstrap`` and keeps count."""

    def __init__(self, bootstrap: str, seed: int, topics: list[str], groups: list[str],
                 per_connection: int = 16, close_timeout: float = 10.0):
        host, port = bootstrap.rsplit(":", 1)
        self.addr = (host, int(port))
        self.bootstrap = bootstrap
        self.rng = random.Random(seed)
        self.gen = RequestGenerator(self.rng, topics, groups)
        self.apis = [api for _k, api in sorted(API_BY_KEY.items())]
        self.recorded = recorded_frames()
        self.per_connection = per_connection
        self.close_timeout = close_timeout
        self.sent = self.generated = self.mutated = self.connections = self.responses = 0
        self.per_api: dict[str, int] = {}
        self.hangs: list[str] = []

    def _generated(self, corr: int) -> bytes:
        api = self.rng.choice(self.apis)
        v = self.rng.randint(api.min_version, api.max_version)
        key = f"{api.name} v{v}"
        self.per_api[key] = self.per_api.get(key, 0) + 1
        return encode_frame(api, v, self.gen.request(api, v), corr)

    def _mutated(self) -> bytes:
        if self.recorded and self.rng.random() < 0.2:
            return mutate(self.rng.choice(self.recorded), self.rng)
        return mutate(self._generated(0), self.rng)

    def connection(self) -> None:
        """One connection: generated requests, then one mutated frame, then half-close and
        wait for the broker to finish with it (answer and close, or close at once)."""
        frames = [self._generated(i) for i in range(self.per_connection)]
        frames.append(self._mutated())
        s = socket.create_connection(self.addr, timeout=self.close_timeout)
        received = b""
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        try:
            try:
                s.sendall(b"".join(frames))
                s.shutdown(socket.SHUT_WR)
                deadline = time.monotonic() + self.close_timeout
                received = bytearray()
                while chunk := s.recv(1 << 16):
                    received += chunk
                    if time.monotonic() > deadline:
                        raise socket.timeout
            except socket.timeout:
                self.hangs.append(f"connection {self.connections} not closed "
                                  f"{self.close_timeout}s after its last request")
            except (ConnectionResetError, BrokenPipeError):
                pass  # the broker closed it while we were still sending
            except OSError as e:
                if e.errno != errno.ENOTCONN:  # closed (reset) before our half-close
                    raise
        finally:
            s.close()
        self.responses += _count_frames(received)
        self.connections += 1
        self.sent += len(frames)
        self.generated += len(frames) - 1
        self.mutated += 1

    def run(self, inputs: int, max_seconds: float, health_every: int = 200,
            progress=None) -> float:
        """Send about ``inputs`` inputs (bounded by ``max_seconds``); returns the seconds taken.
        Every ``health_every`` connections a fresh connection must get ApiVersions answered
        (and ``progress(summary)`` is called, if given)."""
        start = time.monotonic()
        while self.sent < inputs and time.monotonic() - start < max_seconds:
            self.connection()
            if self.connections % health_every == 0:
                if not answers_api_versions(self.bootstrap):
                    self.hangs.append(f"no ApiVersions answer after {self.sent} inputs")
                    break
                if progress is not None:
                    progress(self.summary(time.monotonic() - start))
        return time.monotonic() - start

    def summary(self, seconds: float) -> str:
        return (f"{self.sent} inputs ({self.generated} generated, {self.mutated} mutated) over "
                f"{self.connections} connections in {seconds:.1f}s "
                f"({self.sent / max(seconds, 1e-9):.0f}/s); {self.responses} responses; "
                f"{len(self.per_api)} api versions hit; hangs: {len(self.hangs)}")


def check_broker_log(text: str) -> list[str]:
    """Lines of a broker log that show a handler failure or an unhandled exception."""
    return [line for line in text.splitlines() if any(m in line for m in FAILURE_MARKERS)]
