"""storage/log.py: appends and reads across segments, timestamps, truncation and retention."""
import random

import pytest

from josefk.storage import FetchData, Log, OffsetOutOfRange, RecordTooLarge, UnexpectedAppendOffset
from josefk.storage.log_validator import validate_records
from josefk.wire.batch import iter_headers, read_header, validate_batches
from josefk.wire.records import build_batch
from tests.storage.logs import all_records, append, cfg, crash, mk, read_everything, records_of


def test_append_assigns_offsets_and_patches_in_place(tmp_path):
    log = Log(tmp_path / "t-0", cfg())
    assert (log.log_start_offset, log.log_end_offset, log.high_watermark) == (0, 0, 0)
    b1, b2, b3 = mk(2), mk(3), mk(1)
    buf = bytearray(b1 + b2 + b3)
    validated = validate_records(buf, log.config)
    hs = validated.batches
    assert log.append(validated, leader_epoch=7) == (0, 5)
    assert [h.base_offset for h in hs] == [0, 2, 5]
    assert read_header(buf, hs[1].pos).base_offset == 2
    assert read_header(buf, hs[1].pos).leader_epoch == 7
    assert log.log_end_offset == 6
    assert log.high_watermark == 0  # the broker moves it
    assert log.read(0, 1 << 20).records == b""
    log.high_watermark = 100
    assert log.high_watermark == 6  # clamped to the log end offset
    fd = log.read(0, 1 << 20)
    assert isinstance(fd, FetchData) and fd.first_offset == 0 and fd.batch_offset == 0
    assert fd.records == bytes(buf)
    validate_batches(bytearray(fd.records))  # CRCs still valid after patching
    assert [r.offset for r in records_of(fd.records)] == [0, 1, 2, 3, 4, 5]
    assert append(log, mk(4)) == (6, 9)
    assert [r.offset for r in all_records(log)] == list(range(10))
    log.close()


def test_read_from_the_middle_via_sparse_index(tmp_path):
    log = Log(tmp_path / "t-0", cfg(index_interval_bytes=300))
    sizes = []
    for i in range(200):
        b = mk(1 + i % 3, value=b"x" * (10 + i % 50))
        sizes.append(1 + i % 3)
        append(log, b)
    seg = log._segments[-1]
    assert len(seg.idx_off) > 20  # sparse but present
    assert len(seg.idx_off) < 200
    starts = []
    o = 0
    for n in sizes:
        starts.append(o)
        o += n
    for target in random.Random(1).sample(range(log.log_end_offset), 80) + [0, o - 1]:
        fd = log.read(target, 1)
        base = max(s for s in starts if s <= target)
        assert fd.batch_offset == base
        h = read_header(fd.records)
        assert h.base_offset <= target <= h.last_offset
        assert len(fd.records) == h.size  # min_one: exactly the first batch
    log.close()


def test_roll_at_segment_bytes_and_read_across_segments(tmp_path):
    log = Log(tmp_path / "t-0", cfg(segment_bytes=1000, index_interval_bytes=100))
    for i in range(40):
        append(log, mk(2, value=b"y" * 100))
    assert log.num_segments > 5
    names = sorted(p.name for p in (tmp_path / "t-0").glob("*.log"))
    assert names[0] == "00000000000000000000.log"
    assert all(len(n) == 24 for n in names)
    for seg in log._segments:
        assert seg.size <= 1000
    # one read never crosses a segment
    fd = log.read(0, 1 << 30)
    assert len(fd.records) == log._segments[0].size
    got = read_everything(log)
    assert [r.offset for r in got] == list(range(80))
    # every offset readable
    for off in range(80):
        assert any(r.offset == off for r in records_of(log.read(off, 1).records))
    log.close()


def test_segment_ms_roll(tmp_path):
    log = Log(tmp_path / "t-0", cfg(segment_ms=1000))
    append(log, mk(1), now_ms=10_000)
    append(log, mk(1), now_ms=10_500)
    assert log.num_segments == 1
    append(log, mk(1), now_ms=11_001)
    assert log.num_segments == 2
    assert log._segments[-1].base_offset == 2
    log.close()


def test_max_bytes_and_kip74_min_one(tmp_path):
    log = Log(tmp_path / "t-0", cfg())
    batches = [mk(1, value=b"z" * 500) for _ in range(5)]
    append(log, *batches)
    size = len(batches[0])
    fd = log.read(0, 100)
    assert len(fd.records) == size  # first batch whole despite max_bytes
    fd = log.read(0, 100, min_one=False)
    assert len(fd.records) == 100  # Kafka returns the partial bytes; clients drop them
    assert list(iter_headers(fd.records)) == []
    fd = log.read(0, 2 * size + 10)
    assert len(fd.records) == 2 * size + 10
    assert [h.base_offset for h in iter_headers(fd.records)] == [0, 1]  # partial tail ignored
    fd = log.read(2, 0)
    assert fd.batch_offset == 2 and len(fd.records) == size
    log.close()


def test_max_offset_and_high_watermark_cut(tmp_path):
    log = Log(tmp_path / "t-0", cfg(segment_bytes=400, index_interval_bytes=50))
    for i in range(10):
        append(log, mk(1, value=b"w" * 80), hwm=False)
    assert log.num_segments > 2
    log.high_watermark = 5
    got = read_everything(log)
    assert [r.offset for r in got] == [0, 1, 2, 3, 4]
    assert log.read(5, 1 << 20).records == b""
    assert log.read(7, 1 << 20).records == b""  # above HWM but within LEO: empty, no error
    recs = records_of(log.read(0, 1 << 20, max_offset=3).records)
    assert recs and max(r.offset for r in recs) <= 2
    recs = records_of(log.read(2, 1 << 20, max_offset=3).records)
    assert [r.offset for r in recs] == [2]  # offset 3 shares the segment but is cut
    assert log.read(3, 1 << 20, max_offset=3).records == b""
    # limit inside the same segment as the start
    for start in range(0, 5):
        for limit in range(start + 1, 10):
            recs = records_of(log.read(start, 1 << 20, max_offset=limit).records)
            assert recs and all(r.offset < limit for r in recs)
    log.high_watermark = 10
    assert log.read(10, 100).records == b""  # offset == LEO
    with pytest.raises(OffsetOutOfRange):
        log.read(11, 100)
    with pytest.raises(OffsetOutOfRange):
        log.read(-1, 100)
    log.close()


def test_offset_out_of_range_below_log_start(tmp_path):
    log = Log(tmp_path / "t-0", cfg(segment_bytes=300))
    for _ in range(10):
        append(log, mk(1, value=b"q" * 100))
    assert log.delete_records_before(4) == 4
    assert log.log_start_offset == 4
    assert log._segments[0].base_offset > 0  # whole segments below dropped
    with pytest.raises(OffsetOutOfRange):
        log.read(3, 100)
    assert log.read(4, 100).batch_offset == 4
    with pytest.raises(OffsetOutOfRange):
        log.delete_records_before(11)  # beyond the high watermark
    log.close()


def test_record_too_large_and_follower_append(tmp_path):
    log = Log(tmp_path / "t-0", cfg(max_message_bytes=200))
    with pytest.raises(RecordTooLarge):  # refused by the validator, before the log
        append(log, mk(1, value=b"x" * 300))
    assert log.log_end_offset == 0
    leader = build_batch([(b"a", b"1", None, 1), (b"b", b"2", None, 2)], base_offset=0)
    gap = build_batch([(b"c", b"3", None, 3)], base_offset=5)
    buf = bytearray(leader + gap)
    assert log.append_as_follower(buf, validate_batches(buf)) == (0, 5)
    assert log.log_end_offset == 6
    bad = bytearray(build_batch([(b"d", b"4", None, 4)], base_offset=3))
    with pytest.raises(UnexpectedAppendOffset):
        log.append_as_follower(bad, validate_batches(bad))
    log.high_watermark = 6
    assert [r.offset for r in all_records(log)] == [0, 1, 5]
    log.close()


def test_log_append_time(tmp_path):
    log = Log(tmp_path / "t-0", cfg(message_timestamp_type="LogAppendTime"))
    append(log, mk(3, ts=5), now_ms=777)
    data = log.read(0, 1 << 20).records
    validate_batches(bytearray(data))  # CRC recomputed
    assert [r.timestamp for r in records_of(data)] == [777, 777, 777]
    assert log.max_timestamp() == (777, 0)
    log.close()


def test_offset_for_timestamp_and_max_timestamp(tmp_path):
    log = Log(tmp_path / "t-0", cfg(segment_bytes=1500, index_interval_bytes=120))
    rnd = random.Random(5)
    assert log.max_timestamp() is None
    assert log.offset_for_timestamp(0) is None
    expected = []
    t = 1000
    for i in range(80):
        n = rnd.randint(1, 4)
        recs = []
        for j in range(n):
            t += rnd.randint(-30, 60)  # mostly increasing, sometimes backwards
            recs.append((b"k", b"v" * 30, None, t))
        buf = bytearray(build_batch(recs))
        append(log, buf)
    expected = [(r.offset, r.timestamp) for r in all_records(log)]
    assert log.num_segments > 3
    for target in list(range(900, t + 100, 7)):
        want = next(((o, ts) for o, ts in expected if ts >= target), None)
        assert log.offset_for_timestamp(target) == want, target
    max_ts = max(ts for _o, ts in expected)
    first = next(o for o, ts in expected if ts == max_ts)
    assert log.max_timestamp() == (max_ts, first)
    # respects the log start offset and the high watermark
    log.delete_records_before(expected[10][0])
    want = next(((o, ts) for o, ts in expected[10:] if ts >= 0))
    assert log.offset_for_timestamp(0) == want
    hwm = expected[20][0]
    log.high_watermark = hwm
    for target in (expected[15][1], max_ts):
        want = next(((o, ts) for o, ts in expected[10:] if ts >= target), None)
        if want is not None and want[0] >= hwm:
            want = None
        assert log.offset_for_timestamp(target) == want
    log.close()


def test_truncate_to(tmp_path):
    d = tmp_path / "t-0"
    log = Log(d, cfg(segment_bytes=500, index_interval_bytes=50))
    for i in range(20):
        append(log, mk(2, ts=100 + i, value=b"t" * 60))
    assert log.num_segments > 3
    log.truncate_to(21)  # inside the batch 20-21: the whole batch goes
    assert log.log_end_offset == 20 and log.high_watermark == 20
    assert [r.offset for r in all_records(log)] == list(range(20))
    log.truncate_to(10)
    assert log.log_end_offset == 10
    assert all(s.base_offset < 10 for s in log._segments)
    assert log.max_timestamp() == (104 + 1, 9)
    assert append(log, mk(1)) == (10, 10)
    log.close()
    log = Log(d, cfg(segment_bytes=500, index_interval_bytes=50))
    assert log.log_end_offset == 11
    log.delete_records_before(4)
    log.truncate_to(2)  # below the log start offset: restart empty at 2
    assert (log.log_start_offset, log.log_end_offset) == (2, 2)
    assert append(log, mk(1)) == (2, 2)
    log.close()


def test_retention_by_time(tmp_path):
    c = cfg(segment_bytes=400, retention_ms=1000)
    log = Log(tmp_path / "t-0", c)
    for i in range(10):
        append(log, mk(1, ts=5000 + i * 100, value=b"a" * 100))
    n = log.num_segments
    assert n >= 4
    # segments whose max timestamp is older than now - retention.ms go
    deleted = log.apply_retention(now_ms=5000 + 1000 + 350)
    assert deleted >= 1
    assert log.log_start_offset == log._segments[0].base_offset
    for s in log._segments[:-1]:
        assert s.max_timestamp >= 5350
    # everything expired: only the active segment remains
    log.apply_retention(now_ms=10**9)
    assert log.num_segments == 1
    assert log.log_start_offset == log._segments[0].base_offset
    assert log.log_end_offset == 10
    # nothing above the high watermark is ever deleted
    for i in range(10):
        append(log, mk(1, ts=1, value=b"a" * 100), hwm=False)
    assert log.high_watermark == 10
    log.apply_retention(now_ms=10**9)
    assert log.log_start_offset <= 10
    assert [h.base_offset for h, _b in log.iter_batches(10)] == list(range(10, 20))
    log.close()


def test_retention_by_bytes_and_policy(tmp_path):
    c = cfg(segment_bytes=400, retention_bytes=1000, retention_ms=-1)
    log = Log(tmp_path / "t-0", c)
    for i in range(20):
        append(log, mk(1, value=b"b" * 100))
    log.apply_retention()
    assert log.size - log._segments[0].size < 1000 <= log.size
    assert log.log_start_offset > 0
    c2 = cfg(segment_bytes=400, retention_bytes=1, cleanup_policy="compact")
    log2 = Log(tmp_path / "t-1", c2)
    for i in range(10):
        append(log2, mk(1, value=b"b" * 100))
    assert log2.apply_retention() == 0  # compact-only topics are not deleted by retention
    log.close()
    log2.close()


def test_iter_batches(tmp_path):
    log = Log(tmp_path / "t-0", cfg(segment_bytes=300))
    for i in range(15):
        append(log, mk(2, value=b"i" * 50))
    hs = list(log.iter_batches())
    assert [h.base_offset for h, _b in hs] == list(range(0, 30, 2))
    assert all(h.pos == 0 and len(b) == h.size for h, b in hs)
    assert [h.base_offset for h, _b in log.iter_batches(13)] == list(range(12, 30, 2))
    assert [h.base_offset for h, _b in log.iter_batches(0, max_offset=5)] == [0, 2, 4]
    log.close()


def test_iter_headers_reads_every_batch_header_across_segments(tmp_path):
    log = Log(tmp_path / "t-0", cfg(segment_bytes=300))
    for i in range(15):
        append(log, mk(2, value=b"i" * 50))
    log.delete_records_before(6)
    expected = [(h.base_offset, h.size, h.count) for h, _b in log.iter_batches()]
    assert [(h.base_offset, h.size, h.count) for h in log.iter_headers()] == expected
    assert expected[0][0] == 6 and log.num_segments > 1
    log.close()


def test_an_epoch_checkpoint_that_cannot_be_written_leaves_the_log_consistent(tmp_path,
                                                                              monkeypatch):
    """A full disk refusing the leader-epoch checkpoint at a flush after the batches were
    written: the appends stand (log end moved, the next append follows it, no offset given
    twice), the recovery point stays below the unwritten entry, and the next flush writes it."""
    from josefk.storage import epochs
    from josefk.storage.epochs import LeaderEpochCache

    log = Log(tmp_path / "t-0", cfg())
    append(log, mk(2), epoch=0)
    log.flush()
    assert log.recovery_point == 2

    def full(*_args):
        raise OSError(28, "No space left on device")
    assert append(log, mk(3), epoch=1) == (2, 4)
    with monkeypatch.context() as m:
        m.setattr(epochs.os, "replace", full)
        log.flush()
    assert log.log_end_offset == 5 and log.recovery_point == 2
    assert append(log, mk(1), epoch=1) == (5, 5)
    assert LeaderEpochCache(tmp_path / "t-0").entries == [(0, 0)]  # not written yet
    log.flush()
    assert LeaderEpochCache(tmp_path / "t-0").entries == [(0, 0), (1, 2)]
    assert log.recovery_point == 6


def test_a_new_epoch_is_written_by_the_next_flush(tmp_path, monkeypatch):
    """An append that starts an epoch does not wait on the disk: the log's flush writes the
    checkpoint (fsynced) before it moves the recovery point past the entry."""
    from josefk.storage.epochs import LeaderEpochCache

    log = Log(tmp_path / "t-0", cfg())
    append(log, mk(2), epoch=0)
    append(log, mk(1), epoch=3)
    assert LeaderEpochCache(tmp_path / "t-0").entries == []
    assert log.epochs.unsaved and log.recovery_point == 0
    log.flush()
    assert not log.epochs.unsaved and log.recovery_point == 3
    assert LeaderEpochCache(tmp_path / "t-0").entries == [(0, 0), (3, 2)]


def test_tiered_retention_deletes_only_copied_segments_by_local_retention(tmp_path):
    c = cfg(segment_bytes=400, retention_bytes=100000, retention_ms=-1,
            local_retention_bytes=500, remote_storage_enable="true")
    log = Log(tmp_path / "t-0", c)
    for i in range(20):
        append(log, mk(1, value=b"b" * 100))
    rolled = log.rolled_segments(-1, log.high_watermark)
    assert [s[0] for s in rolled] == [b for b, _m, _s in log.segment_times()][:-1]
    assert all(nxt > base and path.name.endswith(".log") for base, nxt, path, *_ in rolled)
    assert log.rolled_segments(rolled[-1][1] - 1, log.high_watermark) == []
    assert log.rolled_segments(-1, rolled[0][1] - 1) == []  # not wholly below the limit
    assert log.apply_retention() == 0  # nothing told copied: nothing goes
    log.remote_copied_end = rolled[2][1] - 1
    assert log.apply_retention() == 3  # local.retention.bytes, but only what is remote
    assert log.log_start_offset == rolled[3][0]
    log.remote_copied_end = log.high_watermark
    log.apply_retention()
    assert log.size - log._segments[0].size < 500
    log.close()


def test_a_tiered_leader_keeps_the_snapshots_not_copied_yet(tmp_path):
    from josefk.storage import snapshots

    log = Log(tmp_path / "t-0", cfg(segment_bytes=400, remote_storage_enable="true"))
    log.snapshot_source = lambda: b"state"
    log.remote_copied_end = -1
    for i in range(10):
        append(log, mk(1, value=b"b" * 100))
    kept = snapshots._offsets(log.dir)
    assert len(kept) == log.num_segments - 1  # one a roll, none uploaded yet
    log.remote_copied_end = kept[-2] - 1
    log.roll()
    assert snapshots._offsets(log.dir) == kept[-2:] + [log.log_end_offset]  # 6 on: not copied
    log.close()


def test_recovery_assigns_again_the_epochs_an_os_crash_lost(tmp_path):
    """The epoch checkpoint is written by the flush, not the append: after a crash before any
    flush (or one that lost the file), recovery assigns the epochs of the batches again, as
    Kafka's LogSegment.recover does, and writes the file."""
    from josefk.storage.epochs import FILE, LeaderEpochCache

    log = Log(tmp_path / "t-0", cfg())
    append(log, mk(2), epoch=0)
    append(log, mk(3), epoch=4)
    append(log, mk(1), epoch=4)
    crash(log)
    assert not (tmp_path / "t-0" / FILE).exists()
    again = Log(tmp_path / "t-0", cfg(), recovery_point=0)
    assert again.epochs.entries == [(0, 0), (4, 2)]
    assert not again.epochs.unsaved
    assert LeaderEpochCache(tmp_path / "t-0").entries == [(0, 0), (4, 2)]
    assert again.end_offset_for_epoch(0) == (0, 2)
