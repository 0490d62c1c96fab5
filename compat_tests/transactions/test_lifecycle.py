"""Transactions over their whole life: markers from a fenced coordinator epoch (raw
WriteTxnMarkers), expiry of idle transactional ids and producer state, compaction and retention
of transactional data, and broker crashes held exactly in PrepareCommit / PrepareAbort."""
from __future__ import annotations

import time
import uuid

from josefk.tools.client import Client
from compat_tests import rawkafka as rk
from compat_tests.helpers import producer, unique_topic
from compat_tests.transactions.test_confluent import (commit_and_abort_in_turn, committed_in_txn,
                                            key_values, open_txn, read_values, txn_producer)
from josefk.wire import errors
from josefk.wire.apis import DESCRIBE_TRANSACTIONS, WRITE_TXN_MARKERS
from josefk.wire.batch import iter_headers


def _raw_txn_batch(bootstrap, topic, pid, value):
    batch = rk.record_batch([(None, value)], int(time.time() * 1000), producer_id=pid,
                            producer_epoch=0, base_sequence=-1, transactional=True)
    with rk.RawConnection(bootstrap) as conn:
        assert rk.produce_v9(conn, topic, 0, batch)[(topic, 0)]["error_code"] == rk.NONE


def _marker(bootstrap, topic, pid, commit, coordinator_epoch) -> int:
    R = WRITE_TXN_MARKERS.Request
    with Client(bootstrap) as c:
        resp = c.request(WRITE_TXN_MARKERS, markers=[R.WritableTxnMarker(
            producer_id=pid, producer_epoch=0, transaction_result=commit,
            coordinator_epoch=coordinator_epoch,
            topics=[R.WritableTxnMarker.WritableTxnMarkerTopic(name=topic,
                                                              partition_indexes=[0])])])
    return resp.markers[0].topics[0].partitions[0].error_code


def test_write_txn_markers_from_an_older_coordinator_epoch_are_fenced(target):
    """A partition leader keeps the coordinator epoch of each producer's last marker: a marker
    from an older coordinator epoch is refused with TRANSACTION_COORDINATOR_FENCED and writes
    nothing; the current epoch (or a newer one) is accepted."""
    topic = target.create_topic(unique_topic("fenced"), 1)
    pid = 880_000 + uuid.uuid4().int % 10_000
    leader = target.leader_bootstrap(topic, 0)
    _raw_txn_batch(leader, topic, pid, b"first")
    assert _marker(leader, topic, pid, True, 5) == errors.NONE
    _raw_txn_batch(leader, topic, pid, b"second")
    assert _marker(leader, topic, pid, False, 4) == errors.TRANSACTION_COORDINATOR_FENCED
    # the fenced abort wrote nothing: the transaction is still open for read_committed
    assert read_values(target.bootstrap, topic, 1, "read_committed", settle=1.0) == [b"first"]
    assert _marker(leader, topic, pid, True, 6) == errors.NONE
    assert read_values(target.bootstrap, topic, 1, "read_committed") == [b"first", b"second"]
    assert _marker(leader, topic, pid, True, 5) == errors.TRANSACTION_COORDINATOR_FENCED


def _describe_txn(t, tid):
    """DescribeTransactions, asked of the transaction's coordinator."""
    with Client(t.brokers[t.transaction_coordinator(tid)].bootstrap) as c:
        (state,) = c.request(DESCRIBE_TRANSACTIONS, transactional_ids=[tid]).transaction_states
    return state


def _txn_state(t, tid):
    return _describe_txn(t, tid).transaction_state


def _wait_txn_state(t, tid, want, timeout=20.0):
    deadline = time.monotonic() + timeout
    while (state := _txn_state(t, tid)) != want and time.monotonic() < deadline:
        time.sleep(0.1)
    return state


def test_broker_kill9_in_prepare_commit_and_prepare_abort(target_factory):
    """The coordinator holds its markers (a test-only property), so one transaction stays in
    PrepareCommit and another in PrepareAbort, both already answered to their producers; the
    broker (in a cluster, every broker) is killed -9 and restarted without the hold: loading
    ``__transaction_state`` finds both prepared, writes their markers and completes them, as
    Kafka's coordinator does. The committed records become visible to read_committed readers,
    the aborted ones never do."""
    t = target_factory({"josefk.test.hold.txn.markers": "true"})
    topic = t.create_topic(unique_topic("prepared"), 2)
    to_commit, to_abort = "pc-" + uuid.uuid4().hex[:6], "pa-" + uuid.uuid4().hex[:6]
    pc, pa = txn_producer(t.bootstrap, to_commit), txn_producer(t.bootstrap, to_abort)
    pc.begin_transaction()
    pa.begin_transaction()
    for partition in (0, 1):
        for v in (b"c%d-a" % partition, b"c%d-b" % partition):
            pc.produce(topic, value=v, partition=partition)
        pa.produce(topic, value=b"a%d" % partition, partition=partition)
    pa.flush(10)
    pc.commit_transaction(30)
    pa.abort_transaction(30)
    # answered, but the markers are held: both transactions stay prepared, the LSO where
    # their records begin
    assert _txn_state(t, to_commit) == "PrepareCommit"
    assert _txn_state(t, to_abort) == "PrepareAbort"
    assert read_values(t.bootstrap, topic, 2, "read_committed", settle=1.0) == []

    t.restart_all("kill", change=lambda b: b.overrides.pop("josefk.test.hold.txn.markers"))
    assert _wait_txn_state(t, to_commit, "CompleteCommit") == "CompleteCommit"
    assert _wait_txn_state(t, to_abort, "CompleteAbort") == "CompleteAbort"
    committed = [b"c0-a", b"c0-b", b"c1-a", b"c1-b"]
    assert sorted(read_values(t.bootstrap, topic, 2, "read_committed")) == committed
    assert sorted(read_values(t.bootstrap, topic, 2, "read_uncommitted")) == sorted(
        committed + [b"a0", b"a1"])
    # both ids go on with new instances
    for tid in (to_commit, to_abort):
        committed_in_txn(txn_producer(t.bootstrap, tid), topic, [tid.encode()])
    assert sorted(read_values(t.bootstrap, topic, 2, "read_committed")) == sorted(
        committed + [to_commit.encode(), to_abort.encode()])


def _control_batches(t, topic) -> list[int]:
    """How many control batches the log of ``topic``-0 holds, on each broker that has one."""
    return [_control_batches_in(b.data_dir / f"{topic}-0")
            for b in t.brokers.values() if (b.data_dir / f"{topic}-0").exists()]


def _control_batches_in(directory) -> int:
    """The control batches of the segments in ``directory``, counted while no cleaner swapped
    segments: a swap deletes the old files before its ``.log.swap`` takes their name, so a
    listing made meanwhile misses the batches being swapped in."""
    for _ in range(100):
        before = sorted(p.name for p in directory.iterdir())
        if not any(name.endswith(".swap") for name in before):
            try:
                count = sum(h.is_control for name in before if name.endswith(".log")
                            for h in iter_headers((directory / name).read_bytes()))
            except FileNotFoundError:
                count = None
            if count is not None and sorted(p.name for p in directory.iterdir()) == before:
                return count
        time.sleep(0.05)
    raise AssertionError(f"the segments of {directory.name} kept changing under the reader")


def test_compaction_with_transactions_then_markers_go_after_delete_retention(target_factory):
    """A compacted topic written by one transactional producer, committing and aborting in
    turn, with a transaction of another producer left open: the cleaner drops the aborted
    records, keeps the open transaction's, and once their data is gone and delete.retention.ms
    passed, removes the markers and the partition forgets those aborted transactions. The same
    producer's later commit stays visible to read_committed (a forgotten marker still listed
    as aborted would hide it), before and after a kill -9 and restart (of the partition's
    leader, in a cluster)."""
    t = target_factory({"log.cleaner.backoff.ms": 200})
    topic = t.create_topic(unique_topic("txclean"), 1, {
        "cleanup.policy": "compact", "segment.bytes": "8192", "delete.retention.ms": "1000",
        "min.cleanable.dirty.ratio": "0.01"})
    p = txn_producer(t.bootstrap, linger_ms=5)
    latest, aborted = commit_and_abort_in_turn(p, topic, rounds=24, keys=4, size=200)
    plain = producer(t.bootstrap, linger_ms=0)
    for _ in range(40):  # closes the segments the transactions are in
        plain.produce(topic, key=b"filler", value=b"." * 300, partition=0)
        plain.flush(10)
    opener = txn_producer(t.bootstrap)
    opener.begin_transaction()
    opener.produce(topic, key=b"k0", value=b"open", partition=0)
    opener.flush(10)

    deadline = time.monotonic() + 40
    while max(_control_batches(t, topic)) > 1 and time.monotonic() < deadline:
        time.sleep(0.5)
    # only the marker of the last commit is left (on every replica): its records are the
    # latest of their keys
    assert set(_control_batches(t, topic)) == {1}

    uncommitted = key_values(t.bootstrap, topic, "read_uncommitted")
    assert not {v for _k, v in uncommitted} & aborted
    assert (b"k0", b"open") in uncommitted  # the open transaction's data is kept
    filler = {b"filler": b"." * 300}
    assert dict(key_values(t.bootstrap, topic, "read_committed")) == {**latest, **filler}
    # the same producer id goes on: its next transaction is committed and must be visible
    p.begin_transaction()
    p.produce(topic, key=b"after", value=b"after", partition=0)
    p.commit_transaction(30)
    opener.commit_transaction(30)
    want = {**latest, **filler, b"k0": b"open", b"after": b"after"}
    assert dict(key_values(t.bootstrap, topic, "read_committed")) == want
    t.restart(t.leader(topic, 0), how="kill")
    assert dict(key_values(t.bootstrap, topic, "read_committed")) == want


def test_idle_transactional_ids_and_producers_expire(target_factory):
    """transactional.id.expiration.ms and producer.id.expiration.ms (small here): an id idle
    after its commit is removed (DescribeTransactions: TRANSACTIONAL_ID_NOT_FOUND) and a new
    instance starts over with a new producer id; the partitions forget idle producers, but
    neither an Ongoing transaction nor the producer with a transaction open on a partition
    expires."""
    from kafka import KafkaAdminClient
    from kafka.structs import TopicPartition as KTP

    t = target_factory({"transactional.id.expiration.ms": 3000,
                        "transaction.remove.expired.transaction.cleanup.interval.ms": 200,
                        "producer.id.expiration.ms": 3000,
                        "producer.id.expiration.check.interval.ms": 200})
    topic = t.create_topic(unique_topic("expire"), 1)
    idle, busy = "idle-" + uuid.uuid4().hex[:6], "busy-" + uuid.uuid4().hex[:6]
    p = txn_producer(t.bootstrap, idle)
    committed_in_txn(p, topic, [b"one"])
    open_txn(txn_producer(t.bootstrap, busy), topic, b"open")
    admin = KafkaAdminClient(bootstrap_servers=t.bootstrap)
    try:
        first_pid = admin.describe_transactions([idle])[idle].producer_id
        busy_pid = admin.describe_transactions([busy])[busy].producer_id
        assert _wait_txn_state(t, idle, "") == ""  # removed: no state to describe
        assert _describe_txn(t, idle).error_code == errors.TRANSACTIONAL_ID_NOT_FOUND
        assert _txn_state(t, busy) == "Ongoing"
        deadline = time.monotonic() + 10
        while (pids := [s.producer_id for s in admin.describe_producers([KTP(topic, 0)])[
                KTP(topic, 0)].active_producers]) != [busy_pid] and time.monotonic() < deadline:
            time.sleep(0.2)
        assert pids == [busy_pid]
        p2 = txn_producer(t.bootstrap, idle)
        committed_in_txn(p2, topic, [b"two"])
        assert admin.describe_transactions([idle])[idle].producer_id != first_pid
    finally:
        admin.close()


def test_delete_records_inside_and_past_an_aborted_transaction(target_factory):
    """DeleteRecords moving the log start into an aborted transaction keeps it listed for
    read_committed readers (its remaining records stay hidden); moved past its marker, the
    partition forgets it once its segment is deleted, and the producer's later commits stay
    visible, also after a kill -9 of the partition's leader (which may bring the log start back
    to the oldest segment)."""
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient

    t = target_factory()
    topic = t.create_topic(unique_topic("txdel"), 1, {"segment.bytes": "1024"})
    p = txn_producer(t.bootstrap, linger_ms=0)
    p.begin_transaction()
    for i in range(6):  # offsets 0-5, one batch each; the ABORT marker at 6
        p.produce(topic, value=b"a%d" % i, partition=0)
        p.flush(10)
    p.abort_transaction(30)
    committed_in_txn(p, topic, [b"b0", b"b1"])  # 7, 8 and the marker at 9
    admin = AdminClient({"bootstrap.servers": t.bootstrap})

    def delete_before(offset):
        tp = TopicPartition(topic, 0, offset)
        assert admin.delete_records([tp], request_timeout=15)[tp].result(15).low_watermark == \
            offset

    delete_before(3)
    assert read_values(t.bootstrap, topic, 1, "read_committed") == [b"b0", b"b1"]
    assert read_values(t.bootstrap, topic, 1, "read_uncommitted") == [
        b"a3", b"a4", b"a5", b"b0", b"b1"]
    delete_before(7)
    for i in range(8):  # rolls segments (and snapshots the producer state)
        committed_in_txn(p, topic, [b"c%d-" % i + b"." * 200])
    committed = [b"b0", b"b1"] + [b"c%d-" % i + b"." * 200 for i in range(8)]
    assert read_values(t.bootstrap, topic, 1, "read_committed") == committed
    t.restart(t.leader(topic, 0), how="kill")
    assert read_values(t.bootstrap, topic, 1, "read_committed") == committed
