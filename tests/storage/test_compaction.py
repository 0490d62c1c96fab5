"""storage/compaction.py: compaction keeps the latest value per key with its offset, drops old
tombstones, aborted data and markers in Kafka's order, and completes an interrupted swap."""
import random

from josefk.storage import Log
from josefk.wire import records as R
from josefk.wire.records import CONTROL_ABORT, CONTROL_COMMIT, build_batch, control_record
from tests.storage.logs import all_records, append, cfg, read_everything


def test_compaction_keeps_latest_per_key_with_offsets(tmp_path):
    d = tmp_path / "t-0"
    c = cfg(segment_bytes=600, cleanup_policy="compact", delete_retention_ms=10**12)
    log = Log(d, c)
    latest = {}
    rnd = random.Random(3)
    for i in range(120):
        k = f"key{rnd.randint(0, 9)}".encode()
        v = None if (i % 17 == 5) else f"value{i}".encode()
        first, _ = append(log, build_batch([(k, v, [("i", str(i).encode())], 10_000 + i)],
                                           compression=R.LZ4 if i % 2 else 0))
        latest[k] = (first, v)
    before = all_records(log)
    active_base = log._segments[-1].base_offset
    nseg = log.num_segments
    size_before = log.size
    reclaimed = log.compact(now_ms=20_000)
    assert reclaimed > 0 and log.size == size_before - reclaimed
    assert log.num_segments == nseg  # full segments: nothing to merge on the first pass
    assert log.compact(now_ms=20_000) == 0  # nothing dirty: no work
    after = all_records(log)
    cleaned = [r for r in after if r.offset < active_base]
    tail = [r for r in after if r.offset >= active_base]
    assert tail == [r for r in before if r.offset >= active_base]
    # in the cleaned part every record is the latest one for its key among the cleaned range
    last_in_range = {}
    for r in before:
        if r.offset < active_base:
            last_in_range[r.key] = r.offset
    assert sorted(r.offset for r in cleaned) == sorted(last_in_range.values())
    by_offset = {r.offset: r for r in before}
    for r in cleaned:
        o = by_offset[r.offset]
        assert (r.key, r.value, r.timestamp, r.headers) == (o.key, o.value, o.timestamp, o.headers)
    # the log is consistent: reads and reopen
    assert [r.offset for r in read_everything(log)] == [r.offset for r in after]
    log.close()
    log = Log(d, c)
    assert [r.offset for r in all_records(log)] == [r.offset for r in after]
    assert not list(d.glob("*.cleaned")) and not list(d.glob("*.swap"))
    # new dirty data: the next pass also merges the small cleaned segments
    for i in range(30):
        append(log, build_batch([(b"key%d" % (i % 10), b"n%d" % i, None, 30_000)]))
    nseg = log.num_segments
    log.compact(now_ms=40_000)
    assert log.num_segments < nseg
    assert all(s.size <= 600 for s in log._segments)
    recs = all_records(log)
    active_base = log._segments[-1].base_offset
    keys = [r.key for r in recs if r.offset < active_base]
    assert len(keys) == len(set(keys))
    offsets = [r.offset for r in recs]
    assert offsets == sorted(offsets)
    log.high_watermark = log.log_end_offset
    assert [r.offset for r in read_everything(log)] == offsets
    log.close()


def test_compaction_drops_old_tombstones_and_aborted_transactions(tmp_path):
    c = cfg(segment_bytes=100, cleanup_policy="compact", delete_retention_ms=1000)
    log = Log(tmp_path / "t-0", c)
    append(log, build_batch([(b"a", b"a1", None, 100)]))
    append(log, build_batch([(b"b", b"b1", None, 100)]))
    append(log, build_batch([(b"b", None, None, 100)]))  # tombstone
    append(log, build_batch([(b"a", b"a-aborted", None, 100)], transactional=True,
                            producer_id=9, producer_epoch=0, base_sequence=0))
    append(log, build_batch([control_record(CONTROL_ABORT, 1, 100)], control=True,
                            transactional=True, producer_id=9, producer_epoch=0))
    append(log, build_batch([(b"c", b"c-committed", None, 100)], transactional=True,
                            producer_id=10, producer_epoch=0, base_sequence=0))
    append(log, build_batch([control_record(CONTROL_COMMIT, 1, 100)], control=True,
                            transactional=True, producer_id=10, producer_epoch=0))
    append(log, build_batch([(b"z", b"active", None, 100)]))
    assert log.num_segments == 8
    log.compact(now_ms=100 + 500)  # tombstone still within delete.retention.ms
    got = [(r.offset, r.key, r.value) for r in all_records(log)]
    assert (2, b"b", None) in got and (1, b"b", b"b1") not in got
    assert (0, b"a", b"a1") in got and (3, b"a", b"a-aborted") not in got
    assert (5, b"c", b"c-committed") in got
    assert [o for o, _k, _v in got if o in (4, 6)] == [4, 6]  # markers kept
    log.compact(now_ms=100 + 5000)
    got = [(r.offset, r.key, r.value) for r in all_records(log)]
    assert all(k != b"b" for _o, k, _v in got)
    assert got[-1] == (7, b"z", b"active")
    log.close()


def _txn(pid, key, value, ts=100):
    return build_batch([(key, value, None, ts)], transactional=True, producer_id=pid,
                       producer_epoch=0, base_sequence=0)


def _end(pid, kind, ts=100):
    return build_batch([control_record(kind, 1, ts)], control=True, transactional=True,
                       producer_id=pid, producer_epoch=0)


def test_compaction_removes_markers_only_after_their_data_and_delete_retention(tmp_path):
    """Kafka's cleaner: a marker stays while any batch of its transaction is in the log, and
    for delete.retention.ms after the last one went (so a reader that saw the data still finds
    it); then it goes and the owner is told its offset."""
    c = cfg(segment_bytes=100, cleanup_policy="compact", delete_retention_ms=1000)
    log = Log(tmp_path / "t-0", c)
    removed = []
    log.on_markers_removed = removed.extend
    append(log, _txn(9, b"a", b"aborted"))            # 0
    append(log, _end(9, CONTROL_ABORT))                # 1
    append(log, _txn(10, b"b", b"b-old"))              # 2
    append(log, _end(10, CONTROL_COMMIT))              # 3: its data is superseded by 6
    append(log, _txn(11, b"c", b"c-latest"))           # 4
    append(log, _end(11, CONTROL_COMMIT))              # 5: its data stays (latest of c)
    append(log, build_batch([(b"b", b"b-new", None, 100)]))  # 6
    append(log, build_batch([(b"z", b"active", None, 100)]))  # 7

    def offsets():
        return [h.base_offset for h, _b in log.iter_batches()]

    log.compact(now_ms=10_000)  # the data goes; the markers wait delete.retention.ms
    assert offsets() == [1, 3, 4, 5, 6, 7] and removed == []
    log.compact(now_ms=10_500)
    assert offsets() == [1, 3, 4, 5, 6, 7] and removed == []
    log.compact(now_ms=11_001)
    assert offsets() == [4, 5, 6, 7] and sorted(removed) == [1, 3]
    log.compact(now_ms=99_000)
    assert offsets() == [4, 5, 6, 7]  # a marker with data left is kept however old
    log.close()


def test_compaction_keeps_markers_and_data_of_open_transactions(tmp_path):
    c = cfg(segment_bytes=100, cleanup_policy="compact", delete_retention_ms=0)
    log = Log(tmp_path / "t-0", c)
    append(log, _txn(9, b"a", b"aborted"))            # 0
    append(log, _txn(12, b"a", b"open"))               # 1: never ended
    append(log, _end(9, CONTROL_ABORT))                # 2
    append(log, build_batch([(b"a", b"later", None, 100)]))  # 3
    append(log, build_batch([(b"z", b"active", None, 100)]))  # 4
    for now in (10_000, 20_000):
        log.compact(now_ms=now)
    # only what is below the open transaction is cleanable: the aborted batch at 0
    assert [h.base_offset for h, _b in log.iter_batches()] == [1, 2, 3, 4]
    log.close()


def test_compaction_respects_min_lag_and_open_transactions(tmp_path):
    c = cfg(segment_bytes=100, cleanup_policy="compact", min_compaction_lag_ms=1000)
    log = Log(tmp_path / "t-0", c)
    for i in range(4):
        append(log, build_batch([(b"k", f"v{i}".encode(), None, 1000 * i)]))
    assert log.compact(now_ms=2500) > 0  # only segments with max ts <= 1500 are cleanable
    assert [r.value for r in all_records(log)] == [b"v1", b"v2", b"v3"]
    c2 = cfg(segment_bytes=100, cleanup_policy="compact")
    log2 = Log(tmp_path / "t-1", c2)
    append(log2, build_batch([(b"k", b"old", None, 1)]))
    append(log2, build_batch([(b"k", b"open-txn", None, 1)], transactional=True, producer_id=4,
                             producer_epoch=0, base_sequence=0))
    append(log2, build_batch([(b"k", b"x", None, 1)]))
    append(log2, build_batch([(b"q", b"x", None, 1)]))
    assert log2.compact(now_ms=10) == 0  # nothing before the open transaction to clean
    assert len(all_records(log2)) == 4
    log.close()
    log2.close()


def test_interrupted_compaction_swap_is_completed(tmp_path):
    d = tmp_path / "t-0"
    c = cfg(segment_bytes=100, cleanup_policy="compact")
    log = Log(d, c)
    for i in range(5):
        append(log, build_batch([(b"k", f"v{i}".encode(), None, 1)]))
    log.close()
    # simulate a crash after "<base>.log.swap" was written but before the old files went away
    swap_data = build_batch([(b"k", b"v3", None, 1)], base_offset=0, offset_deltas=[3])
    (d / "00000000000000000000.log.swap").write_bytes(swap_data)
    (d / "00000000000000000001.log.cleaned").write_bytes(b"junk")
    log = Log(d, c)
    assert [(r.offset, r.value) for r in all_records(log)] == [(3, b"v3"), (4, b"v4")]
    assert not list(d.glob("*.swap")) and not list(d.glob("*.cleaned"))
    log.close()


def test_compaction_in_a_thread_while_appending(tmp_path):
    import threading
    c = cfg(segment_bytes=2000, cleanup_policy="compact", min_cleanable_dirty_ratio=0)
    log = Log(tmp_path / "t-0", c)
    stop = threading.Event()
    errors = []

    def cleaner():
        try:
            while not stop.is_set():
                log.compact(now_ms=10**12)
                log.flush()
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    t = threading.Thread(target=cleaner)
    t.start()
    try:
        for i in range(600):
            append(log, build_batch([(b"k%d" % (i % 20), b"v%d" % i, None, i)]))
            if i % 50 == 0:
                recs = read_everything(log)
                offs = [r.offset for r in recs]
                assert offs == sorted(offs) and offs[-1] == i
    finally:
        stop.set()
        t.join()
    assert not errors
    log.compact(now_ms=10**12)
    recs = all_records(log)
    latest = {}
    for r in recs:
        latest[r.key] = r.value
    assert latest == {b"k%d" % k: b"v%d" % (580 + k) for k in range(20)}
    log.close()
