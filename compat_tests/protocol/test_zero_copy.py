"""Fetch answers sent with sendfile: the record bytes equal the segment file's, for every fetch
version and size limit (partial batches included), and pipelined fetches stay in order, also for
a client that reads slower than the broker sends."""
from __future__ import annotations

import socket
import struct
import time

import pytest

from josefk.tools.client import Client
from compat_tests import rawkafka as rk
from compat_tests.helpers import flush_all, producer
from josefk.wire.apis import FETCH, METADATA

Q = FETCH.Request


def segment_bytes(broker, topic):
    return (broker.data_dir / f"{topic}-0" / f"{0:020d}.log").read_bytes()


@pytest.fixture(scope="module")
def big_topic(broker):
    from compat_tests.helpers import create_topic, unique_topic

    topic = create_topic(broker.bootstrap, unique_topic("zerocopy"), 1)
    p = producer(broker.bootstrap, **{"linger.ms": 50, "batch.size": 64 * 1024,
                                      "compression.type": "none"})
    for i in range(3000):
        p.produce(topic, (b"%06d" % i) * 40, partition=0)
    flush_all(p)
    return topic


def fetch_records(c, version, topic, topic_id, offset, partition_max, max_bytes):
    t = Q.FetchTopic(topic=topic, topic_id=topic_id, partitions=[Q.FetchTopic.FetchPartition(
        partition=0, fetch_offset=offset, partition_max_bytes=partition_max)])
    req = Q(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=max_bytes, isolation_level=0,
            session_id=0, session_epoch=-1, topics=[t], forgotten_topics_data=[], rack_id="")
    resp = c._call(FETCH, version, req)
    pd = resp.responses[0].partitions[0]
    assert pd.error_code == 0
    return bytes(pd.records or b"")


# v0-3 answers are converted down to the old message formats, not sent from the file.
@pytest.mark.parametrize("version", range(4, FETCH.max_version + 1))
def test_sendfile_answers_are_the_segment_bytes(broker, big_topic, version):
    data = segment_bytes(broker, big_topic)
    assert len(data) > 200_000
    with Client(broker.bootstrap) as c:
        md = c.request(METADATA, topics=[METADATA.Request.MetadataRequestTopic(name=big_topic)],
                       allow_auto_topic_creation=False)
        topic_id = md.topics[0].topic_id
        for partition_max, max_bytes in ((1 << 20, 50 << 20), (100_000, 50 << 20),
                                         (70_001, 50 << 20), (1 << 20, 30_000), (10, 50 << 20)):
            got = fetch_records(c, version, big_topic, topic_id, 0, partition_max, max_bytes)
            first_batch = struct.unpack_from(">i", data, 8)[0] + 12
            want = max(min(partition_max, max_bytes), first_batch)
            assert got == data[:min(want, len(data))], (partition_max, max_bytes)
        # From the middle of the log: the batch holding the offset onwards.
        got = fetch_records(c, version, big_topic, topic_id, 1500, 1 << 20, 50 << 20)
        batches = list(rk.parse_batches(data))
        start = next(b for b in batches if b["base_offset"] + b["last_offset_delta"] >= 1500)
        pos = 0
        for b in batches:
            if b is start:
                break
            pos += struct.unpack_from(">i", data, pos + 8)[0] + 12
        assert got == data[pos:pos + len(got)] and len(got) > 16 * 1024


def test_pipelined_sendfile_fetches_in_order(broker, big_topic):
    data = segment_bytes(broker, big_topic)
    wire = b"".join(rk.fetch_request(11, corr, big_topic, 0, 0, 0) for corr in range(1, 21))
    with rk.RawConnection(broker.bootstrap) as conn:
        conn.send(wire)
        for corr in range(1, 21):
            frame = conn.recv_frame()
            assert struct.unpack_from(">i", frame, 0)[0] == corr
            assert data[:65536] in frame


def test_slow_reader_gets_whole_answers_in_order(broker, big_topic):
    """The socket fills up again and again in the middle of the file ranges: the broker goes on
    with each answer when the client has read, and every answer is whole and in order."""
    data = segment_bytes(broker, big_topic)
    answers = 8
    wire = b"".join(rk.fetch_request(11, corr, big_topic, 0, 0, 0)
                    for corr in range(1, answers + 1))
    with rk.RawConnection(broker.bootstrap) as conn:
        conn.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 * 1024)
        conn.send(wire)
        time.sleep(0.3)  # the broker has filled the socket by now
        stream = bytearray()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            chunk = conn.sock.recv(32 * 1024)
            if not chunk:
                break
            stream += chunk
            if len(stream) >= answers * len(data):
                # every answer is at least its records: see whether all have come
                pos, n = 0, 0
                while pos + 4 <= len(stream):
                    pos += 4 + struct.unpack_from(">i", stream, pos)[0]
                    n += pos <= len(stream)
                if n == answers and pos == len(stream):
                    break
            time.sleep(0.002)
    pos = 0
    for corr in range(1, answers + 1):
        size = struct.unpack_from(">i", stream, pos)[0]
        frame = bytes(stream[pos + 4:pos + 4 + size])
        pos += 4 + size
        assert struct.unpack_from(">i", frame, 0)[0] == corr
        assert frame.endswith(data)  # v11: the records are the last field of the answer
    assert pos == len(stream)
