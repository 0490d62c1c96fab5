"""Incremental fetch sessions (KIP-227) against a live broker: the raw protocol, and
kafka-python's consumer (which uses them) across partitions added and removed."""
from __future__ import annotations

import time

from kafka import KafkaConsumer, TopicPartition as KTP

from broker.client import Client
from compat_tests.helpers import flush_all, producer
from wire.apis import FETCH

Q = FETCH.Request
V = 12


def fetch(c, session_id, epoch, parts=(), forgotten=(), topic=None):
    req = Q(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=0,
            session_id=session_id, session_epoch=epoch,
            topics=[Q.FetchTopic(topic=topic, partitions=[
                Q.FetchTopic.FetchPartition(partition=p, fetch_offset=o, partition_max_bytes=1 << 20)
                for p, o in parts])] if parts else [],
            forgotten_topics_data=[Q.ForgottenTopic(topic=topic, partitions=list(forgotten))]
            if forgotten else [], rack_id="")
    return c._call(FETCH, V, req)


def returned(resp):
    return sorted(p.partition_index for t in resp.responses for p in t.partitions)


def test_incremental_fetch_session_raw(broker, new_topic):
    topic = new_topic(3)
    with Client(broker.bootstrap) as c:
        full = fetch(c, 0, 0, [(0, 0), (1, 0), (2, 0)], topic=topic)
        sid = full.session_id
        assert full.error_code == 0 and sid > 0 and returned(full) == [0, 1, 2]
        # Nothing changed: an incremental fetch names no partition and gets none back.
        assert returned(fetch(c, sid, 1, topic=topic)) == []
        p = producer(broker.bootstrap)
        p.produce(topic, b"x", partition=1)
        flush_all(p)
        resp = fetch(c, sid, 2, topic=topic)
        assert returned(resp) == [1] and resp.responses[0].partitions[0].records
        # Move partition 1 past its record (nothing new there: not answered), forget 2.
        assert returned(fetch(c, sid, 3, [(1, 1)], forgotten=[2], topic=topic)) == []
        p.produce(topic, b"y", partition=2)
        p.produce(topic, b"z", partition=0)
        flush_all(p)
        assert returned(fetch(c, sid, 4, topic=topic)) == [0]  # 2 was forgotten
        # Errors: a wrong epoch, an unknown session.
        assert fetch(c, sid, 9, topic=topic).error_code == 71  # INVALID_FETCH_SESSION_EPOCH
        assert fetch(c, sid + 1, 1, topic=topic).error_code == 70  # FETCH_SESSION_ID_NOT_FOUND
        # Epoch -1 closes it; the session is gone.
        closed = fetch(c, sid, -1, [(0, 0)], topic=topic)
        assert closed.session_id == 0 and returned(closed) == [0]
        assert fetch(c, sid, 5, topic=topic).error_code == 70


def test_kafka_python_consumer_with_sessions_across_partition_changes(broker, new_topic):
    topic = new_topic(4)
    p = producer(broker.bootstrap)
    for i in range(40):
        p.produce(topic, f"{i}".encode(), partition=i % 4)
    flush_all(p)
    cons = KafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False,
                         auto_offset_reset="earliest", fetch_max_wait_ms=100)

    def drain(expect, timeout=20):
        got = []
        deadline = time.monotonic() + timeout
        while len(got) < expect and time.monotonic() < deadline:
            for recs in cons.poll(200).values():
                got += [(r.partition, int(r.value)) for r in recs]
        return got

    cons.assign([KTP(topic, 0), KTP(topic, 1)])
    first = drain(20)
    assert sorted(v for _, v in first) == [i for i in range(40) if i % 4 in (0, 1)]
    cons.assign([KTP(topic, 1), KTP(topic, 2), KTP(topic, 3)])  # 0 removed, 2 and 3 added
    cons.seek(KTP(topic, 1), 10)
    later = drain(20)
    assert sorted(later) == sorted((i % 4, i) for i in range(40) if i % 4 in (2, 3))
    for i in range(40, 48):
        p.produce(topic, f"{i}".encode(), partition=i % 4)
    flush_all(p)
    assert sorted(v for _, v in drain(6)) == [i for i in range(40, 48) if i % 4 in (1, 2, 3)]
    cons.close()
