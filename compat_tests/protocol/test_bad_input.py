"""Hostile and malformed input over raw sockets.

Requests are built by hand with `struct` (compat_tests/rawkafka.py), not with the
broker's own wire/ package, so these tests check the bytes independently.
After each one, a normal confluent-kafka producer and consumer on fresh
connections must still work: a bad connection never takes the broker down.
"""

from __future__ import annotations

import random
import socket
import struct
import time

import pytest

from compat_tests import rawkafka as rk
from compat_tests.helpers import roundtrip_check

pytestmark = pytest.mark.timeout(60)

CLOSE_TIMEOUT = 10.0


@pytest.fixture
def topic(new_topic):
    """A 1-partition topic; also used for the after-the-fact health check."""
    return new_topic(partitions=1)


def _assert_closed(conn: rk.RawConnection, what: str) -> None:
    assert conn.wait_closed(CLOSE_TIMEOUT), (
        f"broker kept the connection open {CLOSE_TIMEOUT}s after {what}"
    )


def _healthy(broker, topic):
    assert broker.is_running(), "broker process died"
    roundtrip_check(broker.bootstrap, topic)


# ------------------------------------------------------------ (a) oversized frame
def test_size_above_socket_request_max_bytes_closes(broker, topic):
    with rk.RawConnection(broker.bootstrap) as conn:
        conn.send(struct.pack(">i", rk.SOCKET_REQUEST_MAX_BYTES + 1) + b"\x00\x12\x00\x00")
        _assert_closed(conn, "a size prefix of socket.request.max.bytes + 1")
    _healthy(broker, topic)


def test_negative_size_closes(broker, topic):
    with rk.RawConnection(broker.bootstrap) as conn:
        conn.send(struct.pack(">i", -5) + b"\x00" * 16)
        _assert_closed(conn, "a negative size prefix")
    _healthy(broker, topic)


# ------------------------------------------------------------ (b) garbage
def test_http_request_closes(broker, topic):
    # "GET " read as a size is 1195725856 > socket.request.max.bytes.
    with rk.RawConnection(broker.bootstrap) as conn:
        conn.send(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
        _assert_closed(conn, "an HTTP request")
    _healthy(broker, topic)


def test_random_garbage_closes(broker, topic):
    rng = random.Random(20240607)
    for _ in range(3):
        # Unframed noise whose first 4 bytes read as an impossible size.
        while True:
            noise = rng.randbytes(4096)
            (size,) = struct.unpack(">i", noise[:4])
            if size < 0 or size > rk.SOCKET_REQUEST_MAX_BYTES:
                break
        with rk.RawConnection(broker.bootstrap) as conn:
            conn.send(noise)
            _assert_closed(conn, f"random bytes (size prefix {size})")
        # Well-framed noise: a plausible size, then a body that is not a request
        # (its api key is not one Kafka has).
        while True:
            body = rng.randbytes(rng.randrange(8, 300))
            (api_key,) = struct.unpack(">h", body[:2])
            if api_key < 0 or api_key > 200:
                break
        with rk.RawConnection(broker.bootstrap) as conn:
            conn.send(rk.frame(body))
            _assert_closed(conn, f"a framed random body (api key {api_key})")
    _healthy(broker, topic)


# ------------------------------------------------------------ (c) truncated frame
def test_truncated_frame_then_close(broker, topic):
    conn = rk.RawConnection(broker.bootstrap)
    try:
        header = rk.request_header(rk.METADATA, 1, 7)
        conn.send(struct.pack(">i", 100) + header)  # promises 100 bytes, sends ~20
        conn.sock.shutdown(socket.SHUT_WR)           # ... and then no more
        _assert_closed(conn, "a truncated frame followed by EOF")
    finally:
        conn.close()
    # And a peer that vanishes mid-frame without a FIN handshake.
    conn = rk.RawConnection(broker.bootstrap)
    conn.send(struct.pack(">i", 1000) + b"\x00\x03\x00\x01")
    conn.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    conn.close()  # RST
    time.sleep(0.2)
    _healthy(broker, topic)


# ------------------------------------------------------------ (d) undecodable body
def test_undecodable_metadata_body_closes(broker, topic):
    # Metadata v9 (flexible): topics = 1 entry whose compact string says 126 bytes
    # but only 3 follow, then the frame ends.
    body = rk.uvarint(2) + rk.uvarint(127) + b"abc"
    with rk.RawConnection(broker.bootstrap) as conn:
        conn.send(rk.frame(rk.request_header(rk.METADATA, 9, 1, flexible=True) + body))
        _assert_closed(conn, "a Metadata v9 request with a broken compact string length")
    _healthy(broker, topic)


def test_undecodable_produce_array_length_closes(broker, topic):
    # Produce v9 with a topic_data compact array claiming ~2^28 entries.
    body = rk.compact_string(None) + rk.int16(-1) + rk.int32(1000) + rk.uvarint(1 << 28)
    with rk.RawConnection(broker.bootstrap) as conn:
        conn.send(rk.frame(rk.request_header(rk.PRODUCE, 9, 1, flexible=True) + body))
        _assert_closed(conn, "a Produce v9 request with an absurd array length")
    _healthy(broker, topic)


# ------------------------------------------------------------ (e) ApiVersions v99
def test_api_versions_unsupported_version(broker, topic):
    with rk.RawConnection(broker.bootstrap) as conn:
        # A future client: header v2, a v3-style body.
        body = rk.compact_string("future-client") + rk.compact_string("99.0") + rk.EMPTY_TAGS
        conn.send(rk.frame(rk.request_header(rk.API_VERSIONS, 99, 4242, flexible=True) + body))
        resp = conn.recv_frame()
        r = rk.Reader(resp)
        assert r.int32() == 4242                      # response header v0: no tagged fields
        assert r.int16() == rk.UNSUPPORTED_VERSION    # error_code
        n = r.int32()                                 # v0 array (int32 length)
        apis = {}
        for _ in range(n):
            k, lo, hi = r.int16(), r.int16(), r.int16()
            apis[k] = (lo, hi)
        assert r.pos == len(resp), f"{len(resp) - r.pos} trailing bytes after a v0 body"
        assert n > 0
        for key in (rk.PRODUCE, rk.FETCH, rk.LIST_OFFSETS, rk.METADATA, rk.API_VERSIONS):
            assert key in apis, f"api {key} missing from {sorted(apis)}"
        for k, (lo, hi) in apis.items():
            assert 0 <= lo <= hi, (k, lo, hi)
        assert apis[rk.API_VERSIONS][0] == 0 and apis[rk.API_VERSIONS][1] >= 3

        # The connection stays usable: a proper ApiVersions v3 on it.
        body = rk.compact_string("compat") + rk.compact_string("1.0") + rk.EMPTY_TAGS
        conn.send(rk.frame(rk.request_header(rk.API_VERSIONS, 3, 4243, flexible=True) + body))
        r = rk.Reader(conn.recv_frame())
        assert r.int32() == 4243                      # ApiVersions response header stays v0
        assert r.int16() == 0
        v3 = {}
        for _ in range(r.uvarint() - 1):
            k, lo, hi = r.int16(), r.int16(), r.int16()
            r.skip_tags()
            v3[k] = (lo, hi)
        r.int32()  # throttle
        r.skip_tags()
        assert v3 == apis
    _healthy(broker, topic)


# ------------------------------------------------------------ (f) unknown api key
def test_unknown_api_key_closes(broker, topic):
    with rk.RawConnection(broker.bootstrap) as conn:
        conn.send(rk.frame(rk.request_header(999, 0, 1) + b"\x00\x00\x00\x00"))
        _assert_closed(conn, "a request with api key 999")
    _healthy(broker, topic)


def test_unsupported_version_of_known_api_closes(broker, topic):
    with rk.RawConnection(broker.bootstrap) as conn:
        conn.send(rk.frame(rk.request_header(rk.METADATA, 999, 1) + b"\x00\x00\x00\x00"))
        _assert_closed(conn, "a Metadata request with version 999")
    _healthy(broker, topic)


# ------------------------------------------------------------ (g) bad CRC
def test_produce_v9_valid_then_corrupt_crc(broker, topic):
    now = int(time.time() * 1000)
    with rk.RawConnection(broker.bootstrap) as conn:
        # First a valid hand-built batch, to show the builder is right.
        good = rk.record_batch([(b"k0", b"hand-built-0"), (None, b"hand-built-1")], now)
        res = rk.produce_v9(conn, topic, 0, good)
        p = res[(topic, 0)]
        assert p["error_code"] == rk.NONE, p
        assert p["base_offset"] == 0, p
        assert p["log_start_offset"] == 0, p

        bad = rk.record_batch([(b"k", b"corrupted")], now, corrupt_crc=True)
        res = rk.produce_v9(conn, topic, 0, bad)
        p = res[(topic, 0)]
        assert p["error_code"] == rk.CORRUPT_MESSAGE, p
        assert p["base_offset"] == -1, p

        # A batch whose declared length runs past the bytes sent: Kafka finds no
        # complete batch and answers INVALID_RECORD (87); CORRUPT_MESSAGE is fine too.
        short = good[:-3]
        res = rk.produce_v9(conn, topic, 0, short)
        assert res[(topic, 0)]["error_code"] in (rk.CORRUPT_MESSAGE, rk.INVALID_RECORD), res

        # Nothing of the bad batches was stored: the next good one is offset 2.
        res = rk.produce_v9(conn, topic, 0, rk.record_batch([(b"k2", b"hand-built-2")], now))
        assert res[(topic, 0)]["error_code"] == rk.NONE
        assert res[(topic, 0)]["base_offset"] == 2

    from compat_tests.helpers import read_partition

    msgs = read_partition(broker.bootstrap, topic, 0, 3)
    assert [(m.offset(), m.key(), m.value()) for m in msgs] == [
        (0, b"k0", b"hand-built-0"), (1, None, b"hand-built-1"), (2, b"k2", b"hand-built-2"),
    ]
    _healthy(broker, topic)


# ------------------------------------------------------------ (h) error codes
def test_metadata_invalid_topic_name(broker, topic):
    with rk.RawConnection(broker.bootstrap) as conn:
        md = rk.metadata_v9(conn, ["bad name!", topic], allow_auto_create=True)
        assert md["topics"]["bad name!"]["error_code"] == rk.INVALID_TOPIC_EXCEPTION, md
        assert md["topics"]["bad name!"]["partitions"] == {}
        assert md["topics"][topic]["error_code"] == rk.NONE
        assert md["topics"][topic]["partitions"][0]["leader"] == 1
        assert [b["node_id"] for b in md["brokers"]] == [1]
        assert md["brokers"][0]["port"] == broker.port
    _healthy(broker, topic)


def test_produce_invalid_topic_name(broker, topic):
    with rk.RawConnection(broker.bootstrap) as conn:
        res = rk.produce_v9(conn, "bad name!", 0, rk.record_batch([(None, b"x")], 0))
        # Kafka answers a produce to a topic it doesn't have (a name it could never
        # have included) with UNKNOWN_TOPIC_OR_PARTITION; INVALID_TOPIC_EXCEPTION is
        # the more specific answer.  Either way: an error, and no topic appears.
        assert res[("bad name!", 0)]["error_code"] in (
            rk.UNKNOWN_TOPIC_OR_PARTITION, rk.INVALID_TOPIC_EXCEPTION), res
        md = rk.metadata_v9(conn, ["bad name!"], allow_auto_create=False)
        assert md["topics"]["bad name!"]["error_code"] in (
            rk.UNKNOWN_TOPIC_OR_PARTITION, rk.INVALID_TOPIC_EXCEPTION), md
        all_md = rk.metadata_v9(conn, None)
        assert "bad name!" not in all_md["topics"]
    _healthy(broker, topic)


def test_produce_to_missing_partition(broker, topic):
    with rk.RawConnection(broker.bootstrap) as conn:
        res = rk.produce_v9(conn, topic, 99, rk.record_batch([(None, b"x")], 0))
        assert res[(topic, 99)]["error_code"] == rk.UNKNOWN_TOPIC_OR_PARTITION, res
        assert res[(topic, 99)]["base_offset"] == -1
    _healthy(broker, topic)


def test_fetch_past_the_end_is_out_of_range(broker, topic):
    now = int(time.time() * 1000)
    with rk.RawConnection(broker.bootstrap) as conn:
        version = rk.pick_version(rk.api_versions(conn), rk.FETCH, rk.FETCH_VERSIONS)
        if version is None:
            pytest.skip("broker offers no Fetch version between 4 and 12")
        res = rk.produce_v9(conn, topic, 0, rk.record_batch(
            [(None, f"r{i}".encode()) for i in range(5)], now))
        assert res[(topic, 0)]["error_code"] == rk.NONE

        f = rk.fetch(conn, version, topic, 0, 5)          # exactly at the end: fine, empty
        p = f["partitions"][(topic, 0)]
        assert (p["error_code"], p["high_watermark"], p["records"]) == (rk.NONE, 5, b"")

        f = rk.fetch(conn, version, topic, 0, 1000)       # past the end
        p = f["partitions"][(topic, 0)]
        assert p["error_code"] == rk.OFFSET_OUT_OF_RANGE, p
        assert p["high_watermark"] in (5, -1), p

        f = rk.fetch(conn, version, topic, 0, 0)          # and the data is all there
        p = f["partitions"][(topic, 0)]
        assert p["error_code"] == rk.NONE
        batches = list(rk.parse_batches(p["records"]))
        assert [(b["base_offset"], b["count"]) for b in batches] == [(0, 5)]

        f = rk.fetch(conn, version, topic, 7, 0)          # a partition that doesn't exist
        assert f["partitions"][(topic, 7)]["error_code"] == rk.UNKNOWN_TOPIC_OR_PARTITION
    _healthy(broker, topic)


def test_many_bad_connections_at_once(broker, topic):
    """A burst of misbehaving connections, some left open, doesn't stall good ones."""
    conns = []
    try:
        for i in range(30):
            c = rk.RawConnection(broker.bootstrap)
            if i % 3 == 0:
                c.send(struct.pack(">i", 500) + b"\x00" * 10)   # stalls mid-frame, left open
            elif i % 3 == 1:
                c.send(b"\xff" * 64)                            # nonsense
            conns.append(c)
        t0 = time.monotonic()
        _healthy(broker, topic)
        assert time.monotonic() - t0 < 20
    finally:
        for c in conns:
            c.close()
