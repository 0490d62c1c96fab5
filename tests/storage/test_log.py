import os
import random
import struct
from pathlib import Path

import pytest

from josefk.storage import (FetchData, InvalidConfig, Log, LogConfig, LogManager, OffsetOutOfRange,
                            RecordTooLarge, UnexpectedAppendOffset)
from josefk.storage.manager import read_checkpoint, write_checkpoint
from josefk.wire import records as R
from josefk.wire.batch import iter_headers, read_header, validate_batches
from josefk.wire.records import (CONTROL_ABORT, CONTROL_COMMIT, build_batch, control_record,
                                 iter_records)


def cfg(**kw):
    return LogConfig.from_props({k.replace("_", "."): str(v) for k, v in kw.items()})


def mk(n=1, *, key=b"k", value=b"v" * 20, ts=1_000, codec=0, **kw):
    recs = [(key + str(i).encode() if key is not None else None, value, None, ts + i)
            for i in range(n)]
    return build_batch(recs, base_offset=12345, compression=codec, **kw)


def append(log, *batches, epoch=0, hwm=True, **kw):
    buf = bytearray(b"".join(batches))
    hs = validate_batches(buf)
    res = log.append(buf, hs, leader_epoch=epoch, **kw)
    if hwm:
        log.high_watermark = log.log_end_offset
    return res


def records_of(data):
    out = []
    for h in iter_headers(data):
        out.extend(iter_records(data, h))
    return out


def all_records(log, start=None):
    out = []
    for h, b in log.iter_batches(start):
        out.extend(iter_records(b, h))
    return out


def read_everything(log, max_bytes=1 << 30):
    """Follow reads like a consumer: all records from the log start to the high watermark."""
    out = []
    off = log.log_start_offset
    while off < log.high_watermark:
        fd = log.read(off, max_bytes)
        recs = [r for r in records_of(fd.records) if r.offset >= off]
        if not recs:
            break
        out.extend(recs)
        off = recs[-1].offset + 1
    return out


# ---------------------------------------------------------------------------------------------
# append / read


def test_append_assigns_offsets_and_patches_in_place(tmp_path):
    log = Log(tmp_path / "t-0", cfg())
    assert (log.log_start_offset, log.log_end_offset, log.high_watermark) == (0, 0, 0)
    b1, b2, b3 = mk(2), mk(3), mk(1)
    buf = bytearray(b1 + b2 + b3)
    hs = validate_batches(buf)
    assert log.append(buf, hs, leader_epoch=7) == (0, 5)
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
    with pytest.raises(RecordTooLarge):
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


# ---------------------------------------------------------------------------------------------
# restart and recovery


def test_restart_after_clean_close(tmp_path):
    d = tmp_path / "t-0"
    log = Log(d, cfg(segment_bytes=500, index_interval_bytes=100))
    for i in range(30):
        append(log, mk(2, ts=1000 + i * 10, value=b"r" * 60))
    log.delete_records_before(7)
    log.high_watermark = 50
    before = [(r.offset, r.key, r.value) for r in all_records(log)]
    nseg = log.num_segments
    log.close()
    assert (d / ".clean_shutdown").exists()
    log = Log(d, cfg(segment_bytes=500, index_interval_bytes=100))
    assert not (d / ".clean_shutdown").exists()
    assert (log.log_start_offset, log.high_watermark, log.log_end_offset) == (7, 50, 60)
    assert log.num_segments == nseg
    assert [(r.offset, r.key, r.value) for r in all_records(log)] == before
    assert append(log, mk(1)) == (60, 60)
    assert log.max_timestamp() == (1291, 59)
    log.close()


def _crash(log):
    """Leave the log as a killed process would: no flush, no marker, fds dropped."""
    for s in log._segments:
        s.close()
    log._closed = True


def test_crash_recovery_truncated_mid_batch(tmp_path):
    d = tmp_path / "t-0"
    log = Log(d, cfg(index_interval_bytes=100))
    for i in range(10):
        append(log, mk(3, value=b"c" * 50))
    seg_path = Path(log._segments[-1].log_path)
    _crash(log)
    size = seg_path.stat().st_size
    os.truncate(seg_path, size - 17)
    log = Log(d, cfg(index_interval_bytes=100))
    assert log.log_end_offset == 27  # the last (3-record) batch is gone
    assert seg_path.stat().st_size < size - 17
    log.high_watermark = log.log_end_offset
    assert [r.offset for r in read_everything(log)] == list(range(27))
    assert append(log, mk(2)) == (27, 28)
    assert [r.offset for r in all_records(log)] == list(range(29))
    log.close()


def test_crash_recovery_flipped_byte(tmp_path):
    d = tmp_path / "t-0"
    log = Log(d, cfg())
    for i in range(5):
        append(log, mk(2, value=b"f" * 40))
    seg_path = Path(log._segments[-1].log_path)
    _crash(log)
    data = bytearray(seg_path.read_bytes())
    data[-5] ^= 0xFF  # inside the last batch's records: CRC mismatch
    seg_path.write_bytes(data)
    log = Log(d, cfg())
    assert log.log_end_offset == 8
    assert append(log, mk(1)) == (8, 8)
    assert len(all_records(log)) == 9
    log.close()


def test_crash_recovery_in_an_earlier_segment_drops_later_ones(tmp_path):
    d = tmp_path / "t-0"
    c = cfg(segment_bytes=400)
    log = Log(d, c)
    for i in range(12):
        append(log, mk(1, value=b"e" * 100))
    assert log.num_segments >= 3
    second = log._segments[1]
    corrupt_at = second.base_offset
    p = Path(second.log_path)
    _crash(log)
    data = bytearray(p.read_bytes())
    data[70] ^= 0x01
    p.write_bytes(data)
    log = Log(d, c)  # no recovery point known: every segment is checked
    assert log.log_end_offset == corrupt_at
    assert log.num_segments == 2
    assert append(log, mk(1)) == (corrupt_at, corrupt_at)
    log.close()


def test_clean_marker_but_garbage_tail_is_recovered(tmp_path):
    d = tmp_path / "t-0"
    log = Log(d, cfg())
    append(log, mk(2), mk(2))
    p = Path(log._segments[-1].log_path)
    log.close()
    with open(p, "ab") as f:
        f.write(b"\x00" * 30)
    log = Log(d, cfg())
    assert log.log_end_offset == 4
    assert p.stat().st_size == 2 * len(mk(2))
    log.close()


def test_missing_and_garbage_indexes_are_rebuilt(tmp_path):
    d = tmp_path / "t-0"
    c = cfg(segment_bytes=2000, index_interval_bytes=100)
    log = Log(d, c)
    for i in range(60):
        append(log, mk(1, ts=10_000 + i, value=b"i" * 50))
    segs = [(s.base_offset, list(s.idx_off), list(s.idx_pos), list(s.time_ts)) for s in
            log._segments]
    paths = [(Path(s.index_path), Path(s.timeindex_path)) for s in log._segments]
    log.close()
    assert len(paths) >= 3
    paths[0][0].unlink()
    paths[0][1].unlink()
    paths[1][0].write_bytes(b"\x01\x02\x03garbage!")
    paths[1][1].write_bytes(os.urandom(24))
    paths[2][0].write_bytes(struct.pack(">ii", 3, 0))  # plausible but wrong entry
    log = Log(d, c)
    for s, (base, offs, poss, _ts) in zip(log._segments, segs):
        assert s.base_offset == base
        assert list(s.idx_off) == offs and list(s.idx_pos) == poss
    assert paths[0][0].stat().st_size == 8 * len(segs[0][1])
    assert [r.offset for r in read_everything(log)] == list(range(60))
    assert log.offset_for_timestamp(10_030) == (30, 10_030)
    # an in-memory index gone bad at runtime: the lookup notices and rebuilds
    s = log._segments[1]
    s.idx_pos[:] = type(s.idx_pos)("i", [7] * len(s.idx_pos))
    target = s.base_offset + 3
    assert log.read(target, 1).batch_offset == target
    log.close()


# ---------------------------------------------------------------------------------------------
# timestamps


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


# ---------------------------------------------------------------------------------------------
# truncation, retention, compaction


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


# ---------------------------------------------------------------------------------------------
# config and manager


def test_log_config():
    c = LogConfig.from_props({})
    assert (c.segment_bytes, c.segment_ms, c.index_interval_bytes, c.retention_ms,
            c.retention_bytes, c.cleanup_policy, c.message_timestamp_type, c.max_message_bytes,
            c.flush_messages) == (1 << 30, 7 * 86400000, 4096, 604800000, -1, "delete",
                                  "CreateTime", 1048588, 2**63 - 1)
    base = LogConfig.from_props({"retention.ms": "1000", "segment.bytes": "2048"})
    c = LogConfig.from_props({"cleanup.policy": "compact,delete", "x.unknown": "1"}, base)
    assert c.retention_ms == 1000 and c.segment_bytes == 2048
    assert c.compact and c.delete
    assert c.props == {"cleanup.policy": "compact,delete", "x.unknown": "1"}
    assert c.to_props()["retention.ms"] == "1000"
    for bad in ({"retention.ms": "soon"}, {"cleanup.policy": "shred"},
                {"message.timestamp.type": "Now"}, {"segment.bytes": str(1 << 40)}):
        with pytest.raises(InvalidConfig):
            LogConfig.from_props(bad)
    s = LogConfig.from_server_props({"log.retention.hours": "2", "log.segment.bytes": "1000",
                                     "message.max.bytes": "5000", "log.roll.ms": "7"})
    assert (s.retention_ms, s.segment_bytes, s.max_message_bytes, s.segment_ms) == \
        (7_200_000, 1000, 5000, 7)


def test_checkpoint_files_round_trip(tmp_path):
    p = tmp_path / "cp"
    entries = {("a", 0): 5, ("b-c", 12): 0, ("a", 1): 99}
    write_checkpoint(p, entries)
    lines = p.read_text().splitlines()
    assert lines[:2] == ["0", "3"]
    assert sorted(lines[2:]) == sorted(["a 0 5", "a 1 99", "b-c 12 0"])
    assert read_checkpoint(p) == entries
    p.write_text("0\n5\na 0 1\n")
    assert read_checkpoint(p) == {}  # malformed: ignored
    assert read_checkpoint(tmp_path / "missing") == {}


def test_log_manager(tmp_path):
    dirs = [str(tmp_path / "d1"), str(tmp_path / "d2")]
    m = LogManager(dirs, cfg(segment_bytes=300))
    logs = {}
    for t in ("orders", "my-topic"):
        for p in range(2):
            lg = m.get_or_create(t, p)
            logs[(t, p)] = lg
            for i in range(3 + p):
                append(lg, mk(1, value=b"m" * 100), hwm=False)
    assert m.get("orders", 1) is logs[("orders", 1)]
    assert m.get("nope", 0) is None
    assert set(m.all_logs()) == set(logs)
    assert (tmp_path / "d1" / "orders-0").is_dir() or (tmp_path / "d2" / "orders-0").is_dir()
    assert sum(len(list(Path(d).iterdir())) for d in dirs) == 4  # spread across both dirs
    logs[("orders", 1)].high_watermark = 3
    logs[("my-topic", 0)].high_watermark = 2
    logs[("orders", 1)].delete_records_before(1)
    m.checkpoint()
    for d in dirs:
        for f in ("replication-offset-checkpoint", "recovery-point-offset-checkpoint",
                  "log-start-offset-checkpoint"):
            assert (Path(d) / f).exists()
    d_orders1 = m.log_dir_of("orders", 1)
    assert read_checkpoint(d_orders1 / "replication-offset-checkpoint")[("orders", 1)] == 3
    # a leftover of an interrupted topic deletion is removed at start-up
    (Path(dirs[0]) / "old-0.0123abcd-delete").mkdir()
    m.close()
    m = LogManager(dirs, cfg(segment_bytes=300))
    assert m.get("orders", 1).high_watermark == 3
    assert m.get("orders", 1).log_start_offset == 1
    assert m.get("my-topic", 0).high_watermark == 2
    assert m.get("orders", 1).log_end_offset == 4
    assert not (Path(dirs[0]) / "old-0.0123abcd-delete").exists()
    # deletion
    path = m.get("orders", 0).dir
    assert m.delete("orders", [0, 7]) == 1  # 7 has no log here
    assert not path.exists() and m.get("orders", 0) is None
    assert not any(p.name.endswith("-delete") for d in dirs for p in Path(d).iterdir())
    assert ("orders", 0) not in read_checkpoint(Path(path).parent / "replication-offset-checkpoint")
    with pytest.raises(ValueError):
        m.get_or_create("../evil", 0)
    m.close()


def test_manager_recovery_point_limits_the_scan(tmp_path):
    dirs = [str(tmp_path / "d")]
    c = cfg(segment_bytes=300)
    m = LogManager(dirs, c)
    lg = m.get_or_create("t", 0)
    for i in range(10):
        append(lg, mk(1, value=b"p" * 100))
    m.flush_rolled()
    assert lg.recovery_point == lg._segments[-1].base_offset
    m.checkpoint()
    first = Path(lg._segments[0].log_path)
    last = Path(lg._segments[-1].log_path)
    _crash(lg)
    # damage below the recovery point is not looked at (that data was fsynced) ...
    data = bytearray(first.read_bytes())
    data[-3] ^= 0xFF
    first.write_bytes(data)
    # ... but the active segment is validated
    os.truncate(last, last.stat().st_size - 1)
    m2 = LogManager(dirs, c)
    lg2 = m2.get("t", 0)
    assert lg2.log_end_offset == 9
    assert lg2.high_watermark == 9  # checkpointed 10, clamped to the recovered log end
    assert lg2.num_segments == lg.num_segments
    m2.close()


def test_retention_and_compaction_through_manager(tmp_path):
    m = LogManager([str(tmp_path / "d")], cfg(segment_bytes=200, retention_ms=10))
    a = m.get_or_create("a", 0)
    b = m.get_or_create("b", 0, cfg(segment_bytes=200, cleanup_policy="compact"))
    for i in range(6):
        append(a, build_batch([(b"k", b"v" * 80, None, 1)]))
        append(b, build_batch([(b"k", b"v" * 80, None, 1)]))
    assert m.run_retention(now_ms=10**6) > 0
    assert a.num_segments == 1
    assert b.compact(now_ms=10**6) > 0
    assert len(all_records(b)) == 2  # latest in the cleaned range + the active segment
    m.close()


def _cleaner_threads():
    import threading
    return [t for t in threading.enumerate() if t.name.startswith("josefk-cleaner-")]


def _wait(predicate, what, timeout=10.0):
    import time
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def test_cleaner_threads_compact_and_resize(tmp_path):
    from josefk.storage.cleaner import LogCleaner

    m = LogManager([str(tmp_path / "d")], cfg(segment_bytes=200, cleanup_policy="compact"))
    logs = [m.get_or_create("c", i) for i in range(4)]

    def fill():
        for lg in logs:
            for _ in range(6):
                append(lg, build_batch([(b"k", b"v" * 80, None, 1)]))

    fill()
    cleaner = LogCleaner(m, backoff_ms=20)
    cleaner.resize(3)  # not started: no threads yet
    assert cleaner.thread_count == 0 and _cleaner_threads() == []
    cleaner.start(2)
    try:
        assert len(_cleaner_threads()) == 2
        _wait(lambda: all(len(all_records(lg)) == 2 for lg in logs), "two threads to compact")
        cleaner.resize(4)
        assert cleaner.thread_count == 4 and len(_cleaner_threads()) == 4
        cleaner.resize(1)
        assert cleaner.thread_count == 1
        _wait(lambda: len(_cleaner_threads()) == 1, "the removed threads to exit")
        fill()
        _wait(lambda: all(len(all_records(lg)) == 2 for lg in logs), "one thread to compact")
    finally:
        cleaner.stop()
    assert _cleaner_threads() == []
    m.close()


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


def test_manager_config_for(tmp_path):
    m = LogManager([str(tmp_path / "d")], cfg())
    m.get_or_create("c", 0, cfg(cleanup_policy="compact"))
    m.close()
    m = LogManager([str(tmp_path / "d")], cfg(),
                   config_for=lambda t: cfg(cleanup_policy="compact") if t == "c" else None)
    assert m.get("c", 0).config.compact
    m.close()


def test_deleting_a_partition_of_a_249_character_topic(tmp_path):
    """A topic name of the longest legal length (249) still fits the file system's 255-byte
    limit once renamed for deletion (the name is cut short, as Kafka does)."""
    m = LogManager([str(tmp_path / "d")], cfg())
    topic = "t" * 249
    paths = []
    for p in (0, 12345):
        lg = m.get_or_create(topic, p)
        append(lg, mk(2))
        paths.append(lg.dir)
    assert m.delete(topic, [0, 12345]) == 2
    assert not any(path.exists() for path in paths) and m.get(topic, 0) is None
    assert [p.name for p in (tmp_path / "d").iterdir() if p.is_dir()] == []
    m.close()


def test_an_epoch_checkpoint_that_cannot_be_written_leaves_the_log_consistent(tmp_path,
                                                                              monkeypatch):
    """A full disk refusing the leader-epoch checkpoint after the batches were written: the
    append stands (log end moved, the next append follows it, no offset given twice) and the
    checkpoint is written at the next flush."""
    from josefk.storage import epochs
    from josefk.storage.epochs import FILE, LeaderEpochCache

    log = Log(tmp_path / "t-0", cfg())
    append(log, mk(2), epoch=0)

    def full(_fd):
        raise OSError(28, "No space left on device")
    with monkeypatch.context() as m:
        m.setattr(epochs.os, "fsync", full)
        assert append(log, mk(3), epoch=1) == (2, 4)
    assert log.log_end_offset == 5
    assert append(log, mk(1), epoch=1) == (5, 5)
    assert LeaderEpochCache(tmp_path / "t-0").entries == [(0, 0)]  # not written yet
    log.flush()
    assert LeaderEpochCache(tmp_path / "t-0").entries == [(0, 0), (1, 2)]
