"""Bounded resources per connection and per broker (issue 11, defect 8), over raw sockets:
``connections.max.idle.ms``, ``max.connections.per.ip``, ``max.connections`` and the
``queued.max.request.bytes`` memory pool. After each, a real client still works."""
from __future__ import annotations

import struct
import time

import pytest

from compat_tests import rawkafka as rk
from compat_tests.helpers import create_topic, roundtrip_check, unique_topic

pytestmark = pytest.mark.timeout(90)


def _answers(conn: rk.RawConnection) -> bool:
    try:
        return bool(rk.api_versions(conn))
    except (rk.ConnectionClosed, OSError):
        return False


def test_idle_connections_are_closed(broker_factory):
    b = broker_factory({"connections.max.idle.ms": 1000})
    with rk.RawConnection(b.bootstrap) as idle, rk.RawConnection(b.bootstrap) as busy:
        assert _answers(idle) and _answers(busy)
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            assert _answers(busy)  # activity every 0.3 s keeps it open
            time.sleep(0.3)
        assert idle.wait_closed(5), "an idle connection outlived connections.max.idle.ms"
        assert _answers(busy)
    # a half-sent request is idle too (a slowloris), once no byte comes for the idle time
    with rk.RawConnection(b.bootstrap) as slow:
        slow.send(struct.pack(">i", 1000) + b"\x00\x12")
        assert slow.wait_closed(5)


@pytest.mark.parametrize("setting", ["max.connections.per.ip", "max.connections"])
def test_connection_count_limits(broker_factory, setting):
    b = broker_factory({setting: 3})
    conns = [rk.RawConnection(b.bootstrap) for _ in range(3)]
    try:
        assert all(_answers(c) for c in conns)
        with rk.RawConnection(b.bootstrap) as extra:
            assert not _answers(extra)
        conns.pop().close()
        deadline = time.monotonic() + 5
        while True:  # the freed slot is reusable once the broker saw the close
            with rk.RawConnection(b.bootstrap) as again:
                if _answers(again):
                    break
            assert time.monotonic() < deadline, "a freed connection slot was not reusable"
            time.sleep(0.1)
    finally:
        for c in conns:
            c.close()


def test_queued_max_request_bytes_bounds_half_sent_requests(broker_factory):
    """Two connections each hold half of a 900 kB request, which exhausts a 1 MB pool: a third
    one's 900 kB Produce is not read until the pool has room, then it is answered."""
    b = broker_factory({"queued.max.request.bytes": 1_000_000,
                        "message.max.bytes": 2_000_000})
    topic = create_topic(b.bootstrap, unique_topic("pool"), 1)
    big = rk.record_batch([(b"k", b"x" * 900_000)], base_timestamp=int(time.time() * 1000))
    request = rk.frame(rk.request_header(rk.PRODUCE, 9, 1, flexible=True)
                       + rk.produce_v9_body(topic, 0, big))
    holders = [rk.RawConnection(b.bootstrap) for _ in range(2)]
    try:
        for h in holders:
            h.send(request[:len(request) // 2])
        time.sleep(0.5)
        with rk.RawConnection(b.bootstrap, timeout=2) as third:
            third.send(request)
            with pytest.raises(OSError):  # socket.timeout: not answered while the pool is full
                third.recv_frame()
            holders.pop().close()  # frees its reservation
            third.sock.settimeout(15)
            resp = rk.Reader(third.recv_frame())
            assert resp.int32() == 1
        # small requests never wait for the pool
        with rk.RawConnection(b.bootstrap) as small:
            assert _answers(small)
    finally:
        for h in holders:
            h.close()
    roundtrip_check(b.bootstrap, topic)
