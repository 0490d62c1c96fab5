"""storage/recovery.py: a log reopened after a clean close or a crash (torn or corrupt tails,
missing or garbage indexes)."""
import os
import struct
from pathlib import Path

from josefk.storage import Log
from tests.storage.logs import all_records, append, cfg, crash, mk, read_everything


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


def test_crash_recovery_truncated_mid_batch(tmp_path):
    d = tmp_path / "t-0"
    log = Log(d, cfg(index_interval_bytes=100))
    for i in range(10):
        append(log, mk(3, value=b"c" * 50))
    seg_path = Path(log._segments[-1].log_path)
    crash(log)
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
    crash(log)
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
    crash(log)
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
