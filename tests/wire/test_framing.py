import struct

import pytest

from josefk.wire.framing import FrameReader, FrameTooLarge, frame


def test_frames_split_across_reads():
    r = FrameReader()
    data = b"".join(struct.pack(">i", len(p)) + p for p in (b"hello", b"", b"x" * 1000))
    out = []
    for i in range(0, len(data), 7):
        out += r.feed(data[i:i + 7])
    assert [bytes(f) for f in out] == [b"hello", b"", b"x" * 1000]
    assert r.buffered == 0


def test_many_frames_in_one_read_and_partial_tail():
    r = FrameReader()
    data = struct.pack(">i", 3) + b"abc" + struct.pack(">i", 4) + b"de"
    assert [bytes(f) for f in r.feed(data)] == [b"abc"]
    assert [bytes(f) for f in r.feed(b"fg")] == [b"defg"]


def test_frames_are_writable():
    r = FrameReader()
    (f,) = r.feed(struct.pack(">i", 2) + b"ab")
    f[0] = ord("z")
    assert bytes(f) == b"zb"


@pytest.mark.parametrize("size", [-1, 101])
def test_size_out_of_range_is_rejected(size):
    r = FrameReader(max_size=100)
    with pytest.raises(FrameTooLarge):
        r.feed(struct.pack(">i", size))


def read_into(reader, data: bytes, chunk: int) -> list:
    """What the server's BufferedProtocol does: each read lands in reader.get_buffer()."""
    out, pos = [], 0
    while pos < len(data):
        buf = reader.get_buffer()
        assert len(buf) > 0
        n = min(len(buf), chunk, len(data) - pos)
        buf[:n] = data[pos:pos + n]
        pos += n
        out += reader.buffer_updated(n)
    return out


@pytest.mark.parametrize("chunk", [1, 3, 4096, 16 * 1024, 1 << 20])
def test_reads_into_the_reader_buffers_give_the_same_frames(chunk):
    payloads = [b"a", b"", b"x" * 100, bytes(range(256)) * 400, b"y" * 70000, b"z" * 5]
    data = b"".join(struct.pack(">i", len(p)) + p for p in payloads)
    r = FrameReader()
    assert [bytes(f) for f in read_into(r, data, chunk)] == payloads
    assert r.buffered == 0 and r.pending_size == 0


def test_a_large_frame_is_read_straight_into_its_own_buffer():
    r = FrameReader()
    body = b"p" * 100_000
    assert r.feed(struct.pack(">i", len(body)) + body[:10]) == []
    assert r.pending_size == len(body) and r.buffered == 10
    buf = r.get_buffer()
    assert len(buf) == len(body) - 10  # the rest of the frame, nothing more
    buf[:] = body[10:]
    (f,) = r.buffer_updated(len(buf))
    assert f == body and isinstance(f, bytearray)
    assert r.buffered == 0 and r.pending_size == 0


def test_frame_prefixes_total_size():
    chunks = frame([b"ab", bytearray(b"cde")])
    assert b"".join(bytes(c) for c in chunks) == struct.pack(">i", 5) + b"abcde"


def test_controlled_shutdown_v0_request_header_has_no_client_id():
    from josefk.wire import headers
    from josefk.wire.apis import CONTROLLED_SHUTDOWN

    assert CONTROLLED_SHUTDOWN.request_header_version(0) == 0
    assert CONTROLLED_SHUTDOWN.request_header_version(1) == 1
    out = bytearray()
    headers.write_request_header(out, headers.RequestHeader(7, 0, 42, "ignored"), 0)
    body = CONTROLLED_SHUTDOWN.Request(broker_id=3).encode(0, out)
    frame = b"".join(bytes(c) for c in body)
    assert frame == bytes.fromhex("00070000" "0000002a" "00000003")
    h, pos = headers.read_request_header(frame, 0)
    assert (h.api_key, h.api_version, h.correlation_id, pos) == (7, 0, 42, 8)
    req, _ = CONTROLLED_SHUTDOWN.Request.decode(frame, 0, pos)
    assert req.broker_id == 3
