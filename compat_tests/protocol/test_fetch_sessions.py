"""Incremental fetch sessions (KIP-227) against a live broker: the raw protocol, and
kafka-python's consumer (which uses them) across partitions added and removed."""
from __future__ import annotations

import threading
import time
import uuid

from confluent_kafka import TopicPartition
from kafka import KafkaConsumer, TopicPartition as KTP

from josefk.tools.client import Client
from compat_tests.helpers import admin_client, flush_all, producer
from josefk.wire import errors
from josefk.wire.apis import FETCH

Q = FETCH.Request
V = 12


def fetch(c, session_id, epoch, parts=(), forgotten=(), topic=None, isolation=0, max_wait_ms=0,
          min_bytes=0):
    """``parts``: (partition, fetch offset) or (partition, fetch offset, current leader epoch)."""
    req = Q(replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=min_bytes, max_bytes=1 << 20,
            isolation_level=isolation, session_id=session_id, session_epoch=epoch,
            topics=[Q.FetchTopic(topic=topic, partitions=[
                Q.FetchTopic.FetchPartition(partition=p[0], fetch_offset=p[1],
                                            current_leader_epoch=p[2] if len(p) > 2 else -1,
                                            partition_max_bytes=1 << 20)
                for p in parts])] if parts else [],
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


def answered(resp):
    """{partition: (error, high watermark, last stable offset, log start offset, has records)}"""
    return {p.partition_index: (p.error_code, p.high_watermark, p.last_stable_offset,
                                p.log_start_offset, bool(p.records))
            for t in resp.responses for p in t.partitions}


def test_incremental_answers_carry_exactly_what_kafka_sends(broker, new_topic):
    """KIP-227: a partition is in an incremental answer when it has records, an error, or a
    high watermark, last stable offset or log start offset its session has not been told of -
    and only then, whatever the number of caught-up partitions around it."""
    topic = new_topic(4)
    p = producer(broker.bootstrap)
    admin = admin_client(broker.bootstrap)
    with Client(broker.bootstrap) as c:
        sid = fetch(c, 0, 0, [(i, 0) for i in range(4)], topic=topic).session_id
        assert sid > 0
        for _ in range(3):
            p.produce(topic, b"a", partition=0)
            p.produce(topic, b"b", partition=1)
        flush_all(p)
        assert answered(fetch(c, sid, 1, topic=topic)) == {0: (0, 3, 3, 0, True),
                                                           1: (0, 3, 3, 0, True)}
        # The client moves to the end: nothing new, nothing answered (also not the
        # partitions whose positions the request changed).
        assert answered(fetch(c, sid, 2, [(0, 3), (1, 3)], topic=topic)) == {}
        assert answered(fetch(c, sid, 3, topic=topic)) == {}
        # DeleteRecords moves partition 1's log start: answered once, without records.
        tp = TopicPartition(topic, 1, 2)
        assert admin.delete_records([tp], request_timeout=15)[tp].result(15).low_watermark == 2
        assert answered(fetch(c, sid, 4, topic=topic)) == {1: (0, 3, 3, 2, False)}
        assert answered(fetch(c, sid, 5, topic=topic)) == {}
        # An error is answered; the next answer without one is sent though nothing moved.
        assert answered(fetch(c, sid, 6, [(2, 0, 1000)], topic=topic)) == {
            2: (errors.UNKNOWN_LEADER_EPOCH, -1, -1, -1, False)}
        assert answered(fetch(c, sid, 7, [(2, 0)], topic=topic)) == {2: (0, 0, 0, 0, False)}
        assert answered(fetch(c, sid, 8, topic=topic)) == {}
        # A new record on partition 3 only.
        p.produce(topic, b"c", partition=3)
        flush_all(p)
        assert answered(fetch(c, sid, 9, topic=topic)) == {3: (0, 1, 1, 0, True)}
        assert answered(fetch(c, sid, 10, [(3, 1)], topic=topic)) == {}


def test_read_committed_session_answers_a_high_watermark_only_change(broker, new_topic):
    """read_committed reads to the last stable offset: an open transaction moves the high
    watermark past it, which is answered (without records) once; its commit moves the last
    stable offset and brings the records."""
    topic = new_topic(3)
    with Client(broker.bootstrap) as c:
        sid = fetch(c, 0, 0, [(i, 0) for i in range(3)], topic=topic, isolation=1).session_id
        assert fetch(c, sid, 1, topic=topic, isolation=1).responses == []
        txn = producer(broker.bootstrap, transactional_id="fs-" + uuid.uuid4().hex[:8])
        txn.init_transactions(30)
        txn.begin_transaction()
        txn.produce(topic, b"t", partition=2)
        flush_all(txn)
        assert answered(fetch(c, sid, 2, topic=topic, isolation=1)) == {2: (0, 1, 0, 0, False)}
        assert answered(fetch(c, sid, 3, topic=topic, isolation=1)) == {}
        txn.commit_transaction(30)
        # The coordinator writes the commit marker after answering EndTxn: until then the
        # session has nothing new; then high watermark 2, stable up to it.
        epoch = 4
        deadline = time.monotonic() + 10
        while not (got := answered(fetch(c, sid, epoch, topic=topic, isolation=1))):
            assert time.monotonic() < deadline
            epoch += 1
            time.sleep(0.05)
        assert got == {2: (0, 2, 2, 0, True)}
        assert answered(fetch(c, sid, epoch + 1, [(2, 2)], topic=topic, isolation=1)) == {}


def test_waiting_incremental_fetch_is_woken_by_a_produce(broker, new_topic):
    """An incremental fetch of caught-up partitions waits for min_bytes: a record on any one of
    its partitions answers it at once; with none, it answers empty once max_wait_ms passes."""
    topic = new_topic(5)
    p = producer(broker.bootstrap)
    with Client(broker.bootstrap) as c:
        sid = fetch(c, 0, 0, [(i, 0) for i in range(5)], topic=topic).session_id
        start = time.monotonic()
        assert fetch(c, sid, 1, topic=topic, max_wait_ms=400, min_bytes=1).responses == []
        assert time.monotonic() - start >= 0.35

        def produce():
            p.produce(topic, b"wake", partition=3)
            flush_all(p)

        timer = threading.Timer(0.5, produce)
        start = time.monotonic()
        timer.start()
        try:
            resp = fetch(c, sid, 2, topic=topic, max_wait_ms=20000, min_bytes=1)
        finally:
            timer.join()
        assert answered(resp) == {3: (0, 1, 1, 0, True)}
        assert 0.4 <= time.monotonic() - start < 10


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
