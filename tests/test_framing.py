import struct

import pytest

from wire.framing import FrameReader, FrameTooLarge, frame


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


def test_frame_prefixes_total_size():
    chunks = frame([b"ab", bytearray(b"cde")])
    assert b"".join(bytes(c) for c in chunks) == struct.pack(">i", 5) + b"abcde"


def test_controlled_shutdown_v0_request_header_has_no_client_id():
    from wire import headers
    from wire.apis import CONTROLLED_SHUTDOWN

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
