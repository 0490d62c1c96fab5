import json

from josefk.broker.replication.producer_state import ProducerStateTable
from josefk.storage import Log, LogConfig
from josefk.storage.log_validator import own_records, validate_records
from josefk.wire import errors
from josefk.wire.batch import validate_batches
from josefk.wire.records import CONTROL_ABORT, CONTROL_COMMIT, build_batch, control_record


def header(pid, epoch, seq, count=1):
    buf = build_batch([(None, b"v", [], None)] * count, producer_id=pid, producer_epoch=epoch,
                      base_sequence=seq)
    return validate_batches(buf)[0]


def test_unknown_producer_is_accepted_with_any_sequence():
    t = ProducerStateTable()
    assert t.check(header(7, 0, 42)) == (errors.NONE, None)


def test_in_order_batches_then_duplicate_gets_original_offsets():
    t = ProducerStateTable()
    h0, h1 = header(1, 0, 0, 3), header(1, 0, 3, 2)
    t.update(h0, 100, 102)
    assert t.check(h1) == (errors.NONE, None)
    t.update(h1, 103, 104)
    assert t.check(header(1, 0, 0, 3)) == (errors.NONE, (100, 102))
    assert t.check(header(1, 0, 3, 2)) == (errors.NONE, (103, 104))


def test_gap_is_out_of_order():
    t = ProducerStateTable()
    t.update(header(1, 0, 0, 3), 0, 2)
    assert t.check(header(1, 0, 5))[0] == errors.OUT_OF_ORDER_SEQUENCE_NUMBER


def test_epochs():
    t = ProducerStateTable()
    t.update(header(1, 3, 0), 0, 0)
    assert t.check(header(1, 2, 1))[0] == errors.INVALID_PRODUCER_EPOCH
    assert t.check(header(1, 4, 0)) == (errors.NONE, None)
    assert t.check(header(1, 4, 9))[0] == errors.OUT_OF_ORDER_SEQUENCE_NUMBER


def test_only_last_five_batches_are_remembered():
    t = ProducerStateTable()
    for i in range(7):
        t.update(header(1, 0, i), i, i)
    assert t.check(header(1, 0, 6)) == (errors.NONE, (6, 6))
    assert t.check(header(1, 0, 1))[0] == errors.OUT_OF_ORDER_SEQUENCE_NUMBER


def test_sequence_wraps_at_int32():
    t = ProducerStateTable()
    t.update(header(1, 0, 2**31 - 1), 0, 0)
    assert t.check(header(1, 0, 0)) == (errors.NONE, None)


def test_rebuild_from_log_headers():
    t = ProducerStateTable()
    h = header(9, 1, 0, 4)
    h.base_offset = 50
    t.rebuild([h], None)
    assert t.check(header(9, 1, 0, 4)) == (errors.NONE, (50, 53))


def txn_header(pid, epoch, seq, count=1):
    buf = build_batch([(None, b"v", [], None)] * count, producer_id=pid, producer_epoch=epoch,
                      base_sequence=seq, transactional=True)
    return validate_batches(buf)[0]


def marker(pid, epoch, kind, offset):
    buf = build_batch([control_record(kind)], producer_id=pid, producer_epoch=epoch,
                      transactional=True, control=True, base_offset=offset)
    return buf, validate_batches(buf)[0]


def test_open_transactions_bound_the_stable_offset():
    t = ProducerStateTable()
    assert t.first_unstable_offset() is None
    t.update(txn_header(1, 0, 0, 2), 10, 11)
    t.update(txn_header(2, 0, 0), 12, 12)
    t.update(txn_header(1, 0, 2), 13, 13)  # same transaction: its start stays at 10
    assert t.first_unstable_offset() == 10
    t.end_txn(1, 0, CONTROL_COMMIT, 14)
    assert t.first_unstable_offset() == 12
    t.end_txn(2, 0, CONTROL_ABORT, 15)
    assert t.first_unstable_offset() is None
    assert t.aborted == [(2, 12, 15)]
    assert t.producers[1].txn_first_offset == -1


def test_aborted_between_lists_overlapping_aborted_transactions():
    t = ProducerStateTable()
    for pid, first, last in ((1, 0, 4), (2, 5, 9), (3, 10, 20)):
        t.update(txn_header(pid, 0, 0), first, first)
        t.end_txn(pid, 0, CONTROL_ABORT, last)
    assert t.aborted_between(0, 100) == [(1, 0), (2, 5), (3, 10)]
    assert t.aborted_between(5, 100) == [(2, 5), (3, 10)]
    assert t.aborted_between(6, 10) == [(2, 5)]
    assert t.aborted_between(21, 100) == []


def test_markers_fence_older_epochs_and_rebuild_reads_their_type():
    t = ProducerStateTable()
    t.update(txn_header(1, 0, 0), 0, 0)
    buf, h = marker(1, 1, CONTROL_ABORT, 1)  # aborted by the coordinator with a bumped epoch
    t.apply(h, buf)
    assert t.check_marker(1, 0, 0) == errors.INVALID_PRODUCER_EPOCH
    assert t.check(txn_header(1, 0, 1))[0] == errors.INVALID_PRODUCER_EPOCH
    assert t.aborted == [(1, 0, 1)]
    data = txn_header(1, 0, 0)
    data.base_offset = 0
    r = ProducerStateTable()
    r.rebuild([data, h], lambda _h: buf)
    assert r.aborted == [(1, 0, 1)] and r.first_unstable_offset() is None


def test_markers_from_an_older_coordinator_epoch_are_fenced():
    """Kafka's ProducerStateManager keeps the coordinator epoch of each producer's last marker;
    a marker with an older one is TRANSACTION_COORDINATOR_FENCED (a producer epoch check comes
    first), and a rebuild from the log reads the epoch from the marker's record."""
    t = ProducerStateTable()
    t.update(txn_header(1, 0, 0), 0, 0)
    assert t.check_marker(1, 0, 0) == errors.NONE
    buf = build_batch([control_record(CONTROL_COMMIT, 7)], producer_id=1, producer_epoch=0,
                      transactional=True, control=True, base_offset=1)
    h = validate_batches(buf)[0]
    t.apply(h, buf)
    assert t.producers[1].coordinator_epoch == 7
    assert t.check_marker(1, 0, 6) == errors.TRANSACTION_COORDINATOR_FENCED
    assert t.check_marker(1, 0, 7) == errors.NONE
    assert t.check_marker(1, 0, 8) == errors.NONE
    assert t.check_marker(2, 0, 0) == errors.NONE  # a producer the partition never saw
    t.update(txn_header(1, 1, 0), 2, 2)  # a bumped producer epoch keeps the coordinator's
    assert t.check_marker(1, 1, 6) == errors.TRANSACTION_COORDINATOR_FENCED
    assert t.check_marker(1, 0, 9) == errors.INVALID_PRODUCER_EPOCH
    data = txn_header(1, 0, 0)
    data.base_offset = 0
    r = ProducerStateTable()
    r.rebuild([data, h], lambda _h: buf)
    assert r.check_marker(1, 0, 6) == errors.TRANSACTION_COORDINATOR_FENCED


def test_sequence_less_transactional_writes_are_accepted():
    t = ProducerStateTable()
    t.update(header(4, 0, 0), 0, 0)
    assert t.check(txn_header(4, 0, -1)) == (errors.NONE, None)  # TxnOffsetCommit batches
    t.update(txn_header(4, 0, -1), 1, 1)
    assert t.check(header(4, 0, 1)) == (errors.NONE, None)


def _state(t):
    return {pid: (e.epoch, e.last_timestamp, list(e.batches)) for pid, e in t.producers.items()}


def _append(lg, t, pid, seq, count=2):
    """Append as Partition.append does: to the log, then to the producer state."""
    buf = build_batch([(None, b"v" * 50, [], None)] * count, producer_id=pid, producer_epoch=0,
                      base_sequence=seq)
    validated = validate_records(buf, lg.config)
    first, last = lg.append(validated)
    t.update(validated.batches[0], first, last)


def _reopen(path, cfg):
    lg = Log(path, cfg)
    t = ProducerStateTable()
    t.load(lg)
    return lg, t


def test_snapshots_at_roll_and_clean_shutdown_restore_the_same_state(tmp_path):
    """Start-up loads the newest snapshot and replays only the batches after it, and ends with
    the state a full replay of the log gives."""
    cfg = LogConfig.from_props({"segment.bytes": "400"})
    lg, t = _reopen(tmp_path / "p-0", cfg)
    for i in range(12):
        _append(lg, t, 1 + i % 2, 2 * (i // 2))
    assert lg.num_segments > 2
    assert len(list((tmp_path / "p-0").glob("*.snapshot"))) == 2  # the newest two are kept
    before = _state(t)
    lg.close()
    assert (tmp_path / "p-0" / f"{24:020d}.snapshot").exists()  # clean shutdown, at the end
    lg, restored = _reopen(tmp_path / "p-0", cfg)
    assert _state(restored) == before
    assert list(lg.iter_headers(24)) == []  # nothing was left to replay
    full = ProducerStateTable()
    full.rebuild(lg.iter_headers(), None)  # no transactions: no control batch to read
    assert _state(full) == before
    lg.close()


def test_after_a_crash_the_roll_snapshot_and_the_tail_are_replayed(tmp_path):
    cfg = LogConfig.from_props({"segment.bytes": "400"})
    lg, t = _reopen(tmp_path / "p-0", cfg)
    for i in range(9):
        _append(lg, t, 3, 2 * i)
    before = _state(t)
    for s in lg._segments:  # a crash: files stay as they are, no clean-shutdown snapshot
        s.close()
    lg, restored = _reopen(tmp_path / "p-0", cfg)
    assert _state(restored) == before
    lg.close()


def test_snapshots_past_the_log_end_are_dropped(tmp_path):
    cfg = LogConfig.from_props({"segment.bytes": "400"})
    lg, t = _reopen(tmp_path / "p-0", cfg)
    for seq in range(0, 16, 2):
        _append(lg, t, 5, seq)
    lg.truncate_to(6)  # e.g. a follower's truncation: later snapshots describe lost batches
    assert all(int(p.name[:20]) <= 6 for p in (tmp_path / "p-0").glob("*.snapshot"))
    t = ProducerStateTable()  # the owner reloads its state after a truncation
    t.load(lg)
    lg.close()
    lg, t2 = _reopen(tmp_path / "p-0", cfg)
    assert [b[:2] for b in t2.producers[5].batches] == [(0, 1), (2, 3), (4, 5)]
    lg.close()


def test_snapshots_keep_open_and_aborted_transactions(tmp_path):
    """A clean shutdown's snapshot carries what a replay of the markers would give: the open
    transaction (the LSO) and the aborted ones (for read_committed fetches)."""
    cfg = LogConfig.from_props({"segment.bytes": "400"})
    lg, t = _reopen(tmp_path / "p-0", cfg)

    def txn_append(pid, seq):
        buf = build_batch([(None, b"v" * 50, [], None)], producer_id=pid, producer_epoch=0,
                          base_sequence=seq, transactional=True)
        validated = validate_records(buf, lg.config)
        first, last = lg.append(validated)
        t.update(validated.batches[0], first, last)

    def marker_append(pid, kind):
        buf = build_batch([control_record(kind)], producer_id=pid, producer_epoch=0,
                          transactional=True, control=True)
        first, _ = lg.append(own_records(buf, lg.config))
        t.end_txn(pid, 0, kind, first)

    txn_append(1, 0)
    marker_append(1, CONTROL_ABORT)
    for seq in range(4):
        txn_append(2, seq)
    marker_append(2, CONTROL_COMMIT)
    txn_append(1, 1)  # left open
    aborted, unstable = list(t.aborted), t.first_unstable_offset()
    assert aborted == [(1, 0, 1)] and unstable == 7
    lg.close()
    lg, restored = _reopen(tmp_path / "p-0", cfg)
    assert (tmp_path / "p-0" / f"{8:020d}.snapshot").exists()  # state up to the end
    assert restored.aborted == aborted and restored.first_unstable_offset() == unstable
    assert restored.aborted_between(0, 10) == [(1, 0)]
    lg.close()


def test_aborted_transactions_go_with_their_markers(tmp_path):
    """Retention / DeleteRecords past a marker trims its aborted transaction at the next
    snapshot; a marker removed by the compactor takes its transaction out of the table and
    out of the snapshots on disk (a listed transaction without its marker would make readers
    skip that producer's later, committed transactions)."""
    cfg = LogConfig.from_props({"segment.bytes": "100", "cleanup.policy": "compact",
                                "delete.retention.ms": "0"})  # a segment per batch
    lg, t = _reopen(tmp_path / "p-0", cfg)

    def write(buf):
        validated = own_records(buf, lg.config)
        first, last = lg.append(validated)
        lg.high_watermark = lg.log_end_offset
        for h in validated.batches:
            h.base_offset, h.pos = first, 0
            t.apply(h, buf)
        return first

    for pid in (1, 2, 3):
        write(build_batch([(b"k%d" % pid, b"v" * 40, [], 100)], producer_id=pid,
                          producer_epoch=0, base_sequence=0, transactional=True))
        write(build_batch([control_record(CONTROL_ABORT)], producer_id=pid, producer_epoch=0,
                          transactional=True, control=True))
    write(build_batch([(b"z", b"v" * 40, [], 100)]))
    assert t.aborted == [(1, 0, 1), (2, 2, 3), (3, 4, 5)]
    lg.delete_records_before(3)  # in the second transaction: its marker's segment stays
    assert lg.first_segment_offset == 3
    lg.roll()  # the snapshot trims below the oldest segment left
    assert t.aborted == [(2, 2, 3), (3, 4, 5)]
    write(build_batch([(b"y", b"v" * 40, [], 100)]))  # the active segment
    for now in (10_000, 20_000):  # data gone, then (delete.retention.ms=0) the markers
        lg.compact(now_ms=now)
    assert [h.base_offset for h, _b in lg.iter_batches()] == [6, 7]
    assert t.aborted == [] and t.aborted_between(0, 100) == []
    # no snapshot lists the removed markers (an older one may still list marker 1, whose
    # segment is gone: loading trims it)
    snaps = list((tmp_path / "p-0").glob("*.snapshot"))
    assert snaps and all(a[2] not in (3, 5)
                         for f in snaps for a in json.loads(f.read_bytes())["aborted"])
    lg.close()
    lg, restored = _reopen(tmp_path / "p-0", cfg)
    assert restored.aborted == []
    lg.close()


def test_idle_producers_expire_but_not_with_an_open_transaction():
    """producer.id.expiration.ms (KIP-854): producers whose last write is older are forgotten,
    unless a transaction of theirs is open."""
    t = ProducerStateTable()
    idle, busy, recent = header(1, 0, 0), txn_header(2, 0, 0), header(3, 0, 0)
    for h, off in ((idle, 0), (busy, 1), (recent, 2)):
        t.update(h, off, off)
    t.producers[3].last_timestamp = t.producers[1].last_timestamp + 5000
    now = t.producers[1].last_timestamp + 10_000
    assert t.remove_expired(now, 8_000) == [1]
    assert set(t.producers) == {2, 3}
    t.end_txn(2, 0, CONTROL_COMMIT, 3, timestamp=now - 9_000)
    assert sorted(t.remove_expired(now, 5_000)) == [2, 3]
    assert t.producers == {} and t.check(header(1, 0, 7)) == (errors.NONE, None)
