"""Transactions with real clients: confluent-kafka's transactional producer, read_committed
consumers, exactly-once consume-transform-produce, fencing, timeouts and broker crashes;
kafka-python's transactional producer and admin client (list/describe transactions, describe
producers)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import uuid

import pytest
from confluent_kafka import (OFFSET_BEGINNING, Consumer, KafkaError, KafkaException,
                             TopicPartition)

from josefk.faults.processes import REPO_ROOT
from compat_tests.helpers import consumer, create_topic, producer, unique_topic

TXN_TIMEOUTS = {"transaction.abort.timed.out.transaction.cleanup.interval.ms": 500}


def txn_producer(bootstrap, tid=None, **conf):
    timeout = conf.get("transaction_timeout_ms", 60000)
    conf.setdefault("message_timeout_ms", min(15000, timeout))
    conf.setdefault("socket_timeout_ms", min(10000, timeout))
    p = producer(bootstrap, transactional_id=tid or "tx-" + uuid.uuid4().hex[:8], **conf)
    p.init_transactions(30)
    return p


def read_values(bootstrap, topic, partitions, isolation, settle=1.5, timeout=20.0):
    """Every value readable from the beginning of ``topic``'s first ``partitions`` with
    ``isolation``."""
    return [m.value() for m in read_messages(bootstrap, topic, partitions, isolation, settle,
                                             timeout)]


def key_values(bootstrap, topic, isolation, settle=1.5):
    """Every (key, value) of partition 0 from the beginning, read with ``isolation``."""
    return [(m.key(), m.value()) for m in read_messages(bootstrap, topic, 1, isolation, settle)]


def read_messages(bootstrap, topic, partitions, isolation, settle=1.5, timeout=20.0):
    """The messages of ``topic``'s first ``partitions`` from the beginning, read with
    ``isolation`` until nothing new arrived for ``settle`` seconds after every partition's
    leader first answered a fetch (a consumer's start, slow on a loaded machine or right after
    a failover, does not count into the settling time)."""
    c = consumer(bootstrap, isolation_level=isolation, auto_offset_reset="earliest")
    assigned = [TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)]
    c.assign(assigned)
    out = []
    deadline = time.monotonic() + timeout
    quiet_since = None  # the later of every partition's first fetch answer and the last record
    try:
        while time.monotonic() < deadline and (
                quiet_since is None or time.monotonic() - quiet_since < settle):
            m = c.poll(0.1)
            if m is not None and m.error():  # a broker down while others lead: not a failure
                assert m.error().code() in (KafkaError._TRANSPORT,
                                            KafkaError._ALL_BROKERS_DOWN), m.error()
            elif m is not None:
                out.append(m)
                if quiet_since is not None:
                    quiet_since = time.monotonic()
            if quiet_since is None and all(  # a fetch answer sets the cached watermarks
                    c.get_watermark_offsets(tp, cached=True)[1] >= 0 for tp in assigned):
                quiet_since = time.monotonic()
    finally:
        c.close()
    return out


def open_txn(p, topic, value):
    """Begin a transaction with one record in partition 0, delivered, and leave it open."""
    p.begin_transaction()
    p.produce(topic, value=value, partition=0)
    p.flush(10)


def committed_in_txn(p, topic, values, partition=0, commit=True):
    p.begin_transaction()
    for v in values:
        p.produce(topic, value=v, partition=partition)
    if commit:
        p.commit_transaction(30)
    else:
        p.flush(10)
        p.abort_transaction(30)


def test_commit_and_abort_read_committed_and_uncommitted(target):
    topic = target.create_topic(unique_topic("txn"), 2)
    p = txn_producer(target.bootstrap)
    p.begin_transaction()
    for i in range(10):
        p.produce(topic, value=b"c%d" % i, partition=i % 2)
    p.commit_transaction(30)
    committed_in_txn(p, topic, [b"a%d" % i for i in range(6)], partition=1, commit=False)
    committed_in_txn(p, topic, [b"last"], partition=1)
    committed = sorted([b"c%d" % i for i in range(10)] + [b"last"])
    assert sorted(read_values(target.bootstrap, topic, 2, "read_committed")) == committed
    assert sorted(read_values(target.bootstrap, topic, 2, "read_uncommitted")) == sorted(
        committed + [b"a%d" % i for i in range(6)])


def test_read_committed_waits_for_the_open_transaction(target):
    """Records of an open transaction and everything after them stay invisible to
    read_committed readers (the LSO) until it commits; ListOffsets says the same."""
    topic = target.create_topic(unique_topic("lso"), 1)
    p = txn_producer(target.bootstrap)
    open_txn(p, topic, b"open")
    other = producer(target.bootstrap)
    other.produce(topic, value=b"plain", partition=0)
    other.flush(10)
    rc = consumer(target.bootstrap, isolation_level="read_committed")
    ru = consumer(target.bootstrap, isolation_level="read_uncommitted")
    try:
        tp = TopicPartition(topic, 0)
        assert rc.get_watermark_offsets(tp, timeout=10) == (0, 0)
        assert ru.get_watermark_offsets(tp, timeout=10) == (0, 2)
        assert read_values(target.bootstrap, topic, 1, "read_committed", settle=1.0) == []
        p.commit_transaction(30)  # answered once PrepareCommit is logged; markers follow
        deadline = time.monotonic() + 10
        while rc.get_watermark_offsets(tp, timeout=10) != (0, 3) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert rc.get_watermark_offsets(tp, timeout=10) == (0, 3)  # data, plain, marker
        assert read_values(target.bootstrap, topic, 1, "read_committed") == [b"open", b"plain"]
    finally:
        rc.close()
        ru.close()


def test_zombie_is_fenced(target):
    topic = target.create_topic(unique_topic("zombie"), 1)
    tid = "zombie-" + uuid.uuid4().hex[:8]
    old = txn_producer(target.bootstrap, tid)
    open_txn(old, topic, b"zombie-1")
    new = txn_producer(target.bootstrap, tid)  # aborts the old instance's transaction
    committed_in_txn(new, topic, [b"new"])
    old.produce(topic, value=b"zombie-2", partition=0)
    with pytest.raises(KafkaException) as err:
        old.commit_transaction(30)
    e = err.value.args[0]
    assert e.fatal() and e.code() == KafkaError._FENCED  # librdkafka's fatal "fenced"
    assert read_values(target.bootstrap, topic, 1, "read_committed") == [b"new"]


def test_timed_out_transaction_is_aborted_and_readers_move_on(target_factory):
    t = target_factory(TXN_TIMEOUTS)
    topic = t.create_topic(unique_topic("timeout"), 1)
    hanging = txn_producer(t.bootstrap, transaction_timeout_ms=2000)
    open_txn(hanging, topic, b"hanging")
    later = txn_producer(t.bootstrap)
    committed_in_txn(later, topic, [b"later"])
    c = consumer(t.bootstrap, isolation_level="read_committed")
    c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    try:
        t0 = time.monotonic()
        got = None
        while got is None and time.monotonic() - t0 < 15:
            m = c.poll(0.2)
            if m is not None and not m.error():
                got = m
        assert got is not None and got.value() == b"later"
        assert time.monotonic() - t0 > 0.5  # only once the coordinator aborted the other
    finally:
        c.close()
    assert read_values(t.bootstrap, topic, 1, "read_committed") == [b"later"]
    with pytest.raises(KafkaException):
        hanging.commit_transaction(10)


def _group_offsets(bootstrap, group, topic, partitions):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                  "isolation.level": "read_committed"})
    try:
        got = c.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=15)
        return {tp.partition: tp.offset for tp in got}
    finally:
        c.close()


def _run_pipeline(bootstrap, src, dst, group, tid, kill_after=None):
    """Run compat_tests.txn_pipeline; with ``kill_after`` SIGKILL it once it has committed
    that many records, as soon as a record of its next transaction is in the log (so the open
    transaction leaves records behind, for the coordinator to abort)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "compat_tests.txn_pipeline", bootstrap, src, dst, group, tid],
        cwd=str(REPO_ROOT), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
    try:
        committed = 0
        for line in proc.stdout:
            kind, *count = line.split()
            if kind == "committed":
                committed = int(count[0])
            elif kill_after is not None and committed >= kill_after:
                proc.send_signal(signal.SIGKILL)
                break
        assert proc.wait(60) in (0, -signal.SIGKILL)
        if kill_after is None:
            assert proc.returncode == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_consume_transform_produce_exactly_once_across_a_client_kill(target):
    src = target.create_topic(unique_topic("src"), 2)
    dst = target.create_topic(unique_topic("dst"), 2)
    group, tid = "eos-" + uuid.uuid4().hex[:6], "eos-tx-" + uuid.uuid4().hex[:6]
    n = 120
    p = producer(target.bootstrap)
    for i in range(n):
        p.produce(src, key=b"%d" % i, value=b"v%03d" % i, partition=i % 2)
    p.flush(10)
    _run_pipeline(target.bootstrap, src, dst, group, tid, kill_after=30)
    _run_pipeline(target.bootstrap, src, dst, group, tid)
    out = read_values(target.bootstrap, dst, 2, "read_committed")
    assert sorted(out) == sorted(b"V%03d" % i for i in range(n))  # each exactly once
    assert _group_offsets(target.bootstrap, group, src, 2) == {0: n // 2, 1: n // 2}
    # the killed transaction's records are in the log, aborted
    assert len(read_values(target.bootstrap, dst, 2, "read_uncommitted")) > n


def test_offsets_in_a_transaction_show_only_once_committed(target):
    topic = target.create_topic(unique_topic("txoff"), 1)
    group = "txoff-" + uuid.uuid4().hex[:6]
    c = Consumer({"bootstrap.servers": target.bootstrap, "group.id": group,
                  "enable.auto.commit": False})
    p = txn_producer(target.bootstrap)
    try:
        meta = c.consumer_group_metadata()
        p.begin_transaction()
        p.produce(topic, value=b"x", partition=0)
        p.send_offsets_to_transaction([TopicPartition(topic, 0, 7)], meta, 30)
        p.flush(10)
        # not visible, and a require_stable fetch (read_committed) waits for it
        plain = Consumer({"bootstrap.servers": target.bootstrap, "group.id": group,
                          "isolation.level": "read_uncommitted"})
        try:
            assert plain.committed([TopicPartition(topic, 0)], timeout=10)[0].offset < 0
        finally:
            plain.close()
        p.abort_transaction(30)
        assert _group_offsets(target.bootstrap, group, topic, 1) == {0: -1001}
        p.begin_transaction()
        p.produce(topic, value=b"y", partition=0)
        p.send_offsets_to_transaction([TopicPartition(topic, 0, 9)], meta, 30)
        p.commit_transaction(30)
        assert _group_offsets(target.bootstrap, group, topic, 1) == {0: 9}
    finally:
        c.close()


def _crash(t, tid, topic):
    """Kill -9 and restart what holds a transaction's state: its coordinator and the leader of
    the topic's partition 0 (on one broker, the broker)."""
    t.restart(t.transaction_coordinator(tid), t.leader(topic, 0), how="kill")


def test_broker_kill9_with_an_open_transaction(target_factory):
    t = target_factory(TXN_TIMEOUTS)
    topic = t.create_topic(unique_topic("crash"), 1)
    tid = "crash-" + uuid.uuid4().hex[:6]
    p = txn_producer(t.bootstrap, tid)
    committed_in_txn(p, topic, [b"before"])
    committed_in_txn(p, topic, [b"aborted"], commit=False)
    open_txn(p, topic, b"open")
    _crash(t, tid, topic)
    # Ongoing at the crash: the next instance fences it and it is aborted
    p2 = txn_producer(t.bootstrap, tid)
    committed_in_txn(p2, topic, [b"after"])
    assert read_values(t.bootstrap, topic, 1, "read_committed") == [b"before", b"after"]
    assert sorted(read_values(t.bootstrap, topic, 1, "read_uncommitted")) == sorted(
        [b"before", b"aborted", b"open", b"after"])


def test_broker_kill9_after_commit_and_abort(target_factory):
    t = target_factory(TXN_TIMEOUTS)
    topic = t.create_topic(unique_topic("crash2"), 1)
    tid = "crash2-" + uuid.uuid4().hex[:6]
    p = txn_producer(t.bootstrap, tid)
    committed_in_txn(p, topic, [b"one", b"two"])
    committed_in_txn(p, topic, [b"gone"], commit=False)
    _crash(t, tid, topic)
    # CompleteCommit / CompleteAbort survive, and so do the partition's aborted transactions
    assert read_values(t.bootstrap, topic, 1, "read_committed") == [b"one", b"two"]
    p2 = txn_producer(t.bootstrap, tid)
    committed_in_txn(p2, topic, [b"three"])
    assert read_values(t.bootstrap, topic, 1, "read_committed") == [b"one", b"two", b"three"]


def test_broker_kill9_during_a_stream_of_transactions(target_factory):
    """Kill -9 of the transaction coordinator at an arbitrary moment while a producer commits
    and aborts transactions back to back (so the crash may land in any state, Prepare*
    included, with markers on their way to the partitions' leaders): after the restart no
    acknowledged commit is lost and nothing aborted is visible to read_committed readers."""
    t = target_factory(TXN_TIMEOUTS)
    topic = t.create_topic(unique_topic("stream"), 2)
    tid = "stream-" + uuid.uuid4().hex[:6]
    acked, aborted = [], []
    stop = threading.Event()

    def run():
        p = txn_producer(t.bootstrap, tid, transaction_timeout_ms=5000)
        i = 0
        while not stop.is_set() and i < 2000:
            values = [b"%d-%d" % (i, k) for k in range(4)]
            try:
                p.begin_transaction()
                for k, v in enumerate(values):
                    p.produce(topic, value=v, partition=k % 2)
                if i % 3 == 2:
                    p.abort_transaction(10)
                    aborted.extend(values)
                else:
                    p.commit_transaction(10)
                    acked.extend(values)
            except KafkaException:
                return
            i += 1

    thread = threading.Thread(target=run)
    thread.start()
    try:
        deadline = time.monotonic() + 20
        while len(acked) < 40 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(acked) >= 40
        coordinator = t.brokers[t.transaction_coordinator(tid)]
        coordinator.kill()
    finally:
        stop.set()
        thread.join(30)
    t.restart(coordinator.node_id, how="kill")  # fails over, then it comes back
    # any transaction left open at the crash is aborted by its timeout
    time.sleep(6)
    seen = read_values(t.bootstrap, topic, 2, "read_committed")
    assert set(acked) <= set(seen)
    assert not set(aborted) & set(seen)
    assert len(seen) == len(set(seen))


def test_kafka_python_transactional_producer(target):
    from kafka import KafkaConsumer, KafkaProducer

    topic = target.create_topic(unique_topic("kp"), 1)
    p = KafkaProducer(bootstrap_servers=target.bootstrap,
                      transactional_id="kp-" + uuid.uuid4().hex[:6])
    try:
        p.init_transactions()
        p.begin_transaction()
        p.send(topic, b"kp-commit", partition=0)
        p.commit_transaction()
        p.begin_transaction()
        p.send(topic, b"kp-abort", partition=0)
        p.flush()
        p.abort_transaction()
    finally:
        p.close()
    for isolation, want in (("read_committed", [b"kp-commit"]),
                            ("read_uncommitted", [b"kp-commit", b"kp-abort"])):
        c = KafkaConsumer(topic, bootstrap_servers=target.bootstrap, isolation_level=isolation,
                          auto_offset_reset="earliest", consumer_timeout_ms=2000)
        try:
            assert [m.value for m in c] == want
        finally:
            c.close()


def test_kafka_python_consume_transform_produce(target):
    """kafka-python as a group member: offsets sent with its transaction (KIP-447 group
    metadata) are committed with it, and only then."""
    from kafka import KafkaConsumer, KafkaProducer
    from kafka.structs import OffsetAndMetadata
    from kafka.structs import TopicPartition as KTP

    src = target.create_topic(unique_topic("kpsrc"), 1)
    dst = target.create_topic(unique_topic("kpdst"), 1)
    group = "kp-eos-" + uuid.uuid4().hex[:6]
    seed = producer(target.bootstrap)
    for i in range(20):
        seed.produce(src, value=b"m%02d" % i, partition=0)
    seed.flush(10)
    c = KafkaConsumer(src, bootstrap_servers=target.bootstrap, group_id=group,
                      enable_auto_commit=False, auto_offset_reset="earliest",
                      isolation_level="read_committed")
    p = KafkaProducer(bootstrap_servers=target.bootstrap,
                      transactional_id="kp-eos-" + uuid.uuid4().hex[:6])
    try:
        p.init_transactions()
        got = []
        deadline = time.monotonic() + 30
        while len(got) < 20 and time.monotonic() < deadline:
            got += [m for recs in c.poll(500).values() for m in recs]
        assert len(got) == 20
        for commit, batch in ((False, got[:10]), (True, got[:10]), (True, got[10:])):
            p.begin_transaction()
            for m in batch:
                p.send(dst, m.value.upper(), partition=0)
            p.send_offsets_to_transaction(
                {KTP(src, 0): OffsetAndMetadata(batch[-1].offset + 1, "", -1)},
                c.group_metadata())
            if commit:
                p.commit_transaction()
            else:
                p.abort_transaction()
                assert c.committed(KTP(src, 0)) is None
        assert c.committed(KTP(src, 0)) == 20
    finally:
        p.close()
        c.close()
    assert read_values(target.bootstrap, dst, 1, "read_committed") == \
        [b"M%02d" % i for i in range(20)]


def _wait_state(admin, tid, state, timeout=10.0):
    deadline = time.monotonic() + timeout
    while True:
        desc = admin.describe_transactions([tid])[tid]
        if desc.state.value == state or time.monotonic() > deadline:
            return desc
        time.sleep(0.1)


def test_admin_list_describe_transactions_and_producers(target):
    """kafka-python's admin client (as kafka-transactions.sh does it): list, describe, describe
    producers, and abort a hanging transaction on a partition with WriteTxnMarkers."""
    from kafka import KafkaAdminClient
    from kafka.admin import AbortTransactionSpec
    from kafka.structs import TopicPartition as KTP

    topic = target.create_topic(unique_topic("adm"), 1)
    tid = "adm-" + uuid.uuid4().hex[:6]
    p = txn_producer(target.bootstrap, tid)
    committed_in_txn(p, topic, [b"first"])
    open_txn(p, topic, b"open")
    admin = KafkaAdminClient(bootstrap_servers=target.bootstrap)
    try:
        listed = [t for ts in admin.list_transactions(state_filters=["Ongoing"]).values()
                  for t in ts]
        mine = [t for t in listed if t.transactional_id == tid]
        assert len(mine) == 1 and mine[0].state.value == "Ongoing"
        assert not [t for ts in admin.list_transactions(state_filters=["Empty"]).values()
                    for t in ts if t.transactional_id == tid]
        desc = admin.describe_transactions([tid])[tid]
        assert desc.state.value == "Ongoing" and desc.producer_id == mine[0].producer_id
        assert desc.topic_partitions == {KTP(topic, 0)}
        assert desc.transaction_start_time_ms > 0 and desc.transaction_timeout_ms == 60000
        producers = admin.describe_producers([KTP(topic, 0)])[KTP(topic, 0)].active_producers
        assert [(s.producer_id, s.current_transaction_start_offset) for s in producers] == \
            [(desc.producer_id, 2)]  # "first" at 0, its marker at 1, the open one at 2
        p.commit_transaction(30)
        assert _wait_state(admin, tid, "CompleteCommit").topic_partitions == set()

        # a hanging transaction: aborted on its partition by the operator
        hung = txn_producer(target.bootstrap)
        open_txn(hung, topic, b"hung")
        state = [s for s in admin.describe_producers([KTP(topic, 0)])[KTP(topic, 0)]
                 .active_producers if s.current_transaction_start_offset >= 0]
        assert len(state) == 1
        admin.abort_transaction(AbortTransactionSpec(KTP(topic, 0), state[0].producer_id,
                                                     state[0].producer_epoch, -1))
        assert read_values(target.bootstrap, topic, 1, "read_committed") == [b"first", b"open"]
    finally:
        admin.close()


def _rows(out: str) -> list[list[str]]:
    return [ln.split() for ln in out.splitlines()[1:] if ln.strip()]


def test_transactions_cli(broker_factory):
    """`josefk transactions ...` (kafka-transactions.sh's commands) against a live producer;
    find-hanging spots an open transaction no coordinator knows, abort ends it."""
    from compat_tests.helpers import josefk_cli

    b = broker_factory()
    topic = create_topic(b.bootstrap, unique_topic("cli"), 1)
    tid = "cli-" + uuid.uuid4().hex[:6]
    p = txn_producer(b.bootstrap, tid)
    open_txn(p, topic, b"open")
    listed = _rows(josefk_cli(b, "transactions", "list").stdout)
    mine = [r for r in listed if r[0] == tid]
    assert len(mine) == 1 and mine[0][1] == "1" and mine[0][3] == "Ongoing"
    pid = mine[0][2]
    assert _rows(josefk_cli(b, "transactions", "list", "--state", "Empty").stdout) == []
    (desc,) = _rows(josefk_cli(b, "transactions", "describe", "--transactional-id",
                               tid).stdout)
    assert desc[1:5] == [tid, pid, "0", "Ongoing"] and desc[-1] == f"{topic}-0"
    (prod,) = _rows(josefk_cli(b, "transactions", "describe-producers", "--topic", topic,
                               "--partition", "0").stdout)
    assert prod[0] == pid and prod[-1] == "0"
    # not hanging, however old: its coordinator has it Ongoing
    assert _rows(josefk_cli(b, "transactions", "find-hanging", "--max-transaction-timeout",
                            "0").stdout) == []
    p.commit_transaction(30)
    missing = josefk_cli(b, "transactions", "describe", "--transactional-id", "nope",
                         check=False)
    assert missing.returncode == 1 and "TRANSACTIONAL_ID_NOT_FOUND" in missing.stderr

    # a transaction left open on the partition with no coordinator behind it: a transactional
    # batch written straight to the partition (as a producer whose coordinator lost its state)
    from compat_tests import rawkafka as rk

    batch = rk.record_batch([(None, b"stray")], int(time.time() * 1000), producer_id=999_999,
                            producer_epoch=0, base_sequence=0, transactional=True)
    with rk.RawConnection(b.bootstrap) as conn:
        assert rk.produce_v9(conn, topic, 0, batch)[(topic, 0)]["error_code"] == rk.NONE
    hanging = _rows(josefk_cli(b, "transactions", "find-hanging", "--max-transaction-timeout",
                               "0").stdout)
    assert [(r[0], r[2]) for r in hanging] == [(topic, "999999")]
    josefk_cli(b, "transactions", "abort", "--topic", topic, "--partition", "0",
               "--producer-id", "999999", "--producer-epoch", "0")
    assert _rows(josefk_cli(b, "transactions", "find-hanging", "--max-transaction-timeout",
                            "0").stdout) == []
    assert read_values(b.bootstrap, topic, 1, "read_committed") == [b"open"]


def commit_and_abort_in_turn(p, topic, rounds, keys, size):
    """``rounds`` transactions writing keys k0.. to partition 0, committed and aborted in turn;
    returns (latest committed value per key, aborted values)."""
    latest, aborted = {}, set()
    for r in range(rounds):
        commit = r % 2 == 0
        p.begin_transaction()
        for k in range(keys):
            value = b"k%d-r%d|" % (k, r) + b"." * size
            p.produce(topic, key=b"k%d" % k, value=value, partition=0)
            if commit:
                latest[b"k%d" % k] = value
            else:
                aborted.add(value)
        p.commit_transaction(30) if commit else (p.flush(10), p.abort_transaction(30))
    return latest, aborted


def test_compaction_removes_aborted_data_and_keeps_committed_state(target_factory):
    """On a compacted topic the cleaner drops aborted transactions' records (Kafka's rule) and
    keeps the latest committed value of every key; read_committed readers see the same state
    before and after."""
    t = target_factory({"log.cleaner.backoff.ms": 200})
    topic = t.create_topic(unique_topic("txcompact"), 1,
                           {"cleanup.policy": "compact", "segment.bytes": "32768",
                            "min.cleanable.dirty.ratio": "0.01"})
    p = txn_producer(t.bootstrap, linger_ms=5, batch_size=16384)
    latest, aborted = commit_and_abort_in_turn(p, topic, rounds=40, keys=5, size=300)

    def state(isolation):
        return key_values(t.bootstrap, topic, isolation)

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        uncommitted = state("read_uncommitted")
        if len([v for _k, v in uncommitted if v in aborted]) < len(aborted):
            break
        time.sleep(1)
    else:
        raise AssertionError("no aborted record was compacted away within 30s")
    committed = state("read_committed")
    assert not {v for _k, v in committed} & aborted
    assert dict(committed) == latest


def test_add_partitions_with_an_unknown_topic_fails_the_request(target):
    """Kafka's answer: UNKNOWN_TOPIC_OR_PARTITION for the unknown partition, and
    OPERATION_NOT_ATTEMPTED for the others; the transaction goes on without them."""
    from josefk.tools.client import Client
    from josefk.wire.apis import ADD_PARTITIONS_TO_TXN, INIT_PRODUCER_ID

    topic = target.create_topic(unique_topic("apt"), 1)
    tid = "apt-" + uuid.uuid4().hex[:6]
    R = ADD_PARTITIONS_TO_TXN.Request
    with Client(target.brokers[target.transaction_coordinator(tid)].bootstrap) as c:
        init = c.request(INIT_PRODUCER_ID, transactional_id=tid, transaction_timeout_ms=60000)
        assert init.error_code == 0
        resp = c._call(ADD_PARTITIONS_TO_TXN, 3, R(
            v3_and_below_transactional_id=tid, v3_and_below_producer_id=init.producer_id,
            v3_and_below_producer_epoch=init.producer_epoch, v3_and_below_topics=[
                R.AddPartitionsToTxnTopic(name=topic, partitions=[0]),
                R.AddPartitionsToTxnTopic(name="no-such-topic-" + tid, partitions=[0])]))
    codes = {t.name: t.results_by_partition[0].partition_error_code
             for t in resp.results_by_topic_v3_and_below}
    assert codes == {topic: 55, "no-such-topic-" + tid: 3}
