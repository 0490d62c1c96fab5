"""Protocol behaviour that clients rely on but rarely exercise on purpose, checked with
hand-built requests (compat_tests/rawkafka.py, independent of the broker's wire/)."""

from __future__ import annotations

import struct
import threading
import time

import pytest

from compat_tests import rawkafka as rk
from compat_tests.helpers import read_partition

pytestmark = pytest.mark.timeout(60)

DUPLICATE_SEQUENCE_NUMBER = 46
OUT_OF_ORDER_SEQUENCE_NUMBER = 45
INVALID_PRODUCER_EPOCH = 47


@pytest.fixture
def topic(new_topic):
    return new_topic(partitions=1)


@pytest.fixture
def fetch_version(broker):
    with rk.RawConnection(broker.bootstrap) as conn:
        v = rk.pick_version(rk.api_versions(conn), rk.FETCH, rk.FETCH_VERSIONS)
    if v is None:
        pytest.skip("broker offers no Fetch version between 4 and 12")
    return v


def _corr_of(frame_body: bytes) -> int:
    return struct.unpack_from(">i", frame_body, 0)[0]


def test_pipelined_requests_answered_in_order(broker, topic, fetch_version):
    """Kafka answers each connection's requests in the order sent, even when an
    earlier one (a waiting Fetch) takes longer; acks=0 produce gets no answer."""
    now = int(time.time() * 1000)
    batch = rk.record_batch([(b"k", b"acks0")], now)
    wire = (
        rk.fetch_request(fetch_version, 1, topic, 0, 0, max_wait_ms=800)   # waits: log empty
        + rk.api_versions_v0_request(2)
        + rk.metadata_v9_request(3, [topic])
        + rk.produce_v9_request(4, topic, 0, batch, acks=0)                 # no response
        + rk.api_versions_v0_request(5)
    )
    with rk.RawConnection(broker.bootstrap) as conn:
        t0 = time.monotonic()
        conn.send(wire)
        order = [_corr_of(conn.recv_frame()) for _ in range(4)]
        elapsed = time.monotonic() - t0
        assert order == [1, 2, 3, 5]
        # The fetch may be answered early only because the acks=0 produce after it
        # made data available; either way not after its max wait plus slack.
        assert elapsed < 5, elapsed
        assert not conn.wait_closed(0.3), "connection closed after an acks=0 produce"
    (m,) = read_partition(broker.bootstrap, topic, 0, 1)
    assert (m.offset(), m.key(), m.value()) == (0, b"k", b"acks0")


def test_many_pipelined_requests(broker, topic):
    n = 300
    with rk.RawConnection(broker.bootstrap) as conn:
        conn.send(b"".join(
            rk.metadata_v9_request(i, [topic]) if i % 2 else rk.api_versions_v0_request(i)
            for i in range(1, n + 1)
        ))
        order = [_corr_of(conn.recv_frame()) for _ in range(n)]
    assert order == list(range(1, n + 1))


def test_fetch_waits_for_max_wait_when_no_data(broker, topic, fetch_version):
    with rk.RawConnection(broker.bootstrap) as conn:
        t0 = time.monotonic()
        resp = rk.fetch(conn, fetch_version, topic, 0, 0, max_wait_ms=1500)
        elapsed = time.monotonic() - t0
    p = resp["partitions"][(topic, 0)]
    assert (p["error_code"], p["high_watermark"], p["records"]) == (0, 0, b"")
    assert 1.2 <= elapsed < 4.0, f"empty fetch with max_wait_ms=1500 answered after {elapsed:.2f}s"


def test_waiting_fetch_wakes_up_on_produce(broker, topic, fetch_version):
    result = {}

    def waiter():
        with rk.RawConnection(broker.bootstrap, timeout=20) as conn:
            t0 = time.monotonic()
            result["resp"] = rk.fetch(conn, fetch_version, topic, 0, 0, max_wait_ms=10000)
            result["at"] = time.monotonic()
            result["t0"] = t0

    th = threading.Thread(target=waiter)
    th.start()
    time.sleep(0.7)
    with rk.RawConnection(broker.bootstrap) as conn:
        res = rk.produce_v9(conn, topic, 0, rk.record_batch([(None, b"wake")], 0))
        produced_at = time.monotonic()
        assert res[(topic, 0)]["error_code"] == 0
    th.join(15)
    assert not th.is_alive()
    p = result["resp"]["partitions"][(topic, 0)]
    assert p["error_code"] == 0
    assert [(b["base_offset"], b["count"]) for b in rk.parse_batches(p["records"])] == [(0, 1)]
    delay = result["at"] - produced_at
    assert delay < 2.0, f"waiting fetch answered {delay:.2f}s after the produce (max wait 10s)"


def test_idempotent_duplicates_and_gaps(broker, topic):
    now = int(time.time() * 1000)
    with rk.RawConnection(broker.bootstrap) as conn:
        pid, epoch = rk.init_producer_id(conn)
        assert pid >= 0 and epoch >= 0

        def send(seq, values, producer_epoch=epoch):
            batch = rk.record_batch([(None, v) for v in values], now, producer_id=pid,
                                    producer_epoch=producer_epoch, base_sequence=seq)
            return rk.produce_v9(conn, topic, 0, batch)[(topic, 0)]

        r = send(0, [b"a0", b"a1"])
        assert (r["error_code"], r["base_offset"]) == (0, 0), r
        # A retry of the same batch is acknowledged with its original offset, not stored again.
        r = send(0, [b"a0", b"a1"])
        assert r["error_code"] in (0, DUPLICATE_SEQUENCE_NUMBER), r
        if r["error_code"] == 0:
            assert r["base_offset"] == 0, r
        # A gap in the sequence is refused.
        r = send(5, [b"gap"])
        assert r["error_code"] == OUT_OF_ORDER_SEQUENCE_NUMBER, r
        # The next sequence continues normally.
        r = send(2, [b"a2"])
        assert (r["error_code"], r["base_offset"]) == (0, 2), r
        # A fenced (older) epoch is refused once a newer one exists.
        if epoch > 0:
            r = send(3, [b"old"], producer_epoch=epoch - 1)
            assert r["error_code"] == INVALID_PRODUCER_EPOCH, r

    msgs = read_partition(broker.bootstrap, topic, 0, 3)
    assert [(m.offset(), m.value()) for m in msgs] == [(0, b"a0"), (1, b"a1"), (2, b"a2")]
