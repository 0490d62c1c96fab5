"""storage/manager.py: the log directories, their checkpoints, recovery points, retention and
deletion."""
import os
from pathlib import Path

import pytest

from josefk.storage import LogManager
from josefk.storage.manager import read_checkpoint, write_checkpoint
from josefk.wire.records import build_batch
from tests.storage.logs import all_records, append, cfg, crash, mk


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
    crash(lg)
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


def test_a_tiered_logs_start_below_its_local_data_survives_a_restart(tmp_path):
    """A DeleteRecords offset below a tiered log's local data is checkpointed apart
    (remote-log-start-offset-checkpoint); a log start checkpointed before local retention
    moved on is not taken for one."""
    dirs = [str(tmp_path / "d")]
    tiered = cfg(segment_bytes=300, remote_storage_enable="true")
    m = LogManager(dirs, cfg(segment_bytes=300),
                   config_for=lambda topic: tiered if topic == "t" else None)
    lg, other = m.get_or_create("t", 0, tiered), m.get_or_create("t", 1, tiered)
    for target in (lg, other):
        for _ in range(10):
            append(target, mk(1, value=b"p" * 100))
    m.checkpoint()  # other's log start: 0
    other.delete_records_before(other._segments[6].base_offset)  # local retention, say
    lg.delete_records_before(lg._segments[6].base_offset)
    local_start = lg.log_start_offset
    lg.remote_log_start = 3
    checkpoint = Path(dirs[0]) / "remote-log-start-offset-checkpoint"
    m.close()  # other's log start is checkpointed here: put back as a crash would leave it
    write_checkpoint(Path(dirs[0]) / "log-start-offset-checkpoint", {("t", 0): 0, ("t", 1): 0})

    m = LogManager(dirs, cfg(segment_bytes=300),
                   config_for=lambda topic: tiered if topic == "t" else None)
    lg, other = m.get("t", 0), m.get("t", 1)
    assert lg.remote_log_start == 3 and lg.log_start_offset == local_start
    assert other.remote_log_start == -1 and other.log_start_offset == 6
    m.checkpoint()
    assert read_checkpoint(checkpoint) == {("t", 0): 3}
    m.close()


def test_create_many_spreads_new_logs_and_keeps_existing_ones(tmp_path):
    dirs = [str(tmp_path / "d1"), str(tmp_path / "d2")]
    m = LogManager(dirs, cfg())
    existing = m.get_or_create("many", 3)
    append(existing, mk(1), hwm=False)
    m.create_many("many", range(100), cfg())
    assert m.get("many", 3) is existing and existing.log_end_offset == 1
    assert sorted(p for _t, p in m.all_logs()) == list(range(100))
    assert sorted(len(list(Path(d).iterdir())) for d in dirs) == [50, 50]
    # a new log's segment files are made on its first write
    fresh = m.get("many", 7)
    assert list(fresh.dir.iterdir()) == []
    append(fresh, mk(2), hwm=False)
    assert {p.suffix for p in fresh.dir.iterdir()} >= {".log", ".index", ".timeindex"}
    m.close()
    again = LogManager(dirs, cfg())
    assert again.get("many", 7).log_end_offset == 2 and again.get("many", 8).log_end_offset == 0
    again.close()
    with pytest.raises(ValueError):
        LogManager([str(tmp_path / "d3")], cfg()).create_many("bad/topic", [0], cfg())


def test_a_new_logs_files_made_ahead_of_its_first_append(tmp_path):
    m = LogManager([str(tmp_path / "d")], cfg())
    made = m.create_many("ahead", range(3), cfg())
    assert sorted(lg.dir.name for lg in made) == ["ahead-0", "ahead-1", "ahead-2"]
    assert m.create_many("ahead", range(3), cfg()) == []  # none new
    made[0].make_files()
    assert {p.suffix for p in made[0].dir.iterdir()} == {".log", ".index", ".timeindex"}
    assert made[0]._segments[-1].parked  # left closed: the first append opens them
    append(made[0], mk(2), hwm=False)
    assert made[0].log_end_offset == 2
    m.close()
