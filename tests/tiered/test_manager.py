"""The remote log manager over a real log and a local-directory store: copies of rolled
segments with their metadata events, reads below the local log start, total retention, a new
leader taking over from the metadata, a copy a crash interrupted, the read cache's bound."""
import uuid

import pytest

from josefk.storage import Log
from josefk.tiered import metadata as md
from josefk.tiered.manager import (ChunkCache, Leader, LocalSegment, NotLeading,
                                   RemoteLogManager)
from josefk.tiered.store import LocalStore, StoreError
from tests.storage.logs import append, cfg, mk, records_of

TOPIC_ID = uuid.UUID("11111111-2222-3333-4444-555555555555")


class MemoryMetadataLog:
    """A test double of the MetadataLog seam: the events in order, per metadata partition."""

    def __init__(self):
        self.events: dict[int, list[bytes]] = {}
        self.reads = 0

    def append(self, topic_id, partition, value):
        self.events.setdefault(self.metadata_partition(topic_id, partition), []).append(value)

    def read(self, topic_id, partition):
        self.reads += 1
        return list(self.events.get(self.metadata_partition(topic_id, partition), []))

    def metadata_partition(self, topic_id, partition):
        return md.metadata_partition(topic_id, partition, 50)

    def states(self):
        return [md.deserialize(v)[2].remote_log_segment_state
                for vs in self.events.values() for v in vs]


def tiered_log(path, n=30, **settings):
    """A log of ``n`` records, one a batch (two a segment), record i at timestamp 1000 + 10 i."""
    conf = dict(segment_bytes=400, retention_ms=-1, remote_storage_enable="true",
                local_retention_bytes=500)
    conf.update(settings)
    log = Log(path, cfg(**conf))
    for i in range(n):
        append(log, mk(1, key=b"k%d-" % i, value=b"v" * 100, ts=1000 + 10 * i))
    return log


def leader_for(log, epoch=0, partition=0):
    state = {"delete_below": -1}

    def retention():
        copied = -1 if log.remote_copied_end is None else log.remote_copied_end
        local = sum(size for base, _m, size in log.segment_times() if base > copied)
        return log.config.retention_ms, log.config.retention_bytes, local

    leader = Leader("t", partition, TOPIC_ID, epoch,
                    segments_to_copy=lambda after, limit: [
                        LocalSegment(*s) for s in log.rolled_segments(after, limit)],
                    upload_limit=lambda: log.high_watermark,
                    aborted=lambda start, end: [(7, start, start)],
                    epochs=lambda: list(log.epochs.entries),
                    snapshot=lambda offset: None,
                    set_copied=lambda offset: setattr(log, "remote_copied_end", offset),
                    retention=retention, delete_below=lambda: state["delete_below"])
    return leader, state


def read_all(rlm, log, start=0, max_bytes=1000):
    """Follow the offsets as a consumer: from the remote log, then the local one."""
    out, off = [], start
    while off < log.high_watermark:
        if off < log.log_start_offset:
            data = rlm.read("t", 0, off, max_bytes, log.high_watermark)
        else:
            data = log.read(off, max_bytes).records
        recs = [r for r in records_of(data) if r.offset >= off]
        assert recs, off
        out.extend(recs)
        off = recs[-1].offset + 1
    return out


def test_copy_then_local_retention_then_remote_reads(tmp_path):
    log = tiered_log(tmp_path / "t-0")
    everything = []
    off = 0
    while off < log.log_end_offset:
        recs = records_of(log.read(off, 1 << 20).records)
        everything.extend((r.offset, r.value) for r in recs)
        off = recs[-1].offset + 1
    store, meta = LocalStore(tmp_path / "remote"), MemoryMetadataLog()
    rlm = RemoteLogManager(store, meta, node_id=1)
    leader, _ = leader_for(log)
    rlm.lead(leader)
    assert log.apply_retention() == 0  # nothing is copied yet: nothing goes locally
    rlm.run_once()
    rolled = log.num_segments - 1
    copied = leader.remote.copied()
    assert len(copied) == rolled and log.remote_copied_end == copied[-1].end_offset
    assert meta.states() == [md.COPY_SEGMENT_STARTED, md.COPY_SEGMENT_FINISHED] * rolled
    assert len(store.list("t-0-")) == 6 * rolled
    assert leader.copy_lag_bytes == 0
    stats = rlm.stats["t"]
    assert (stats.copy_requests, stats.copy_bytes) == (rolled, sum(s.size for s in copied))
    seg = copied[0]
    stem = f"t-0-{md.uuid_text(TOPIC_ID)}/{seg.start_offset:020d}-{md.uuid_text(seg.segment_id)}"
    assert store.get(stem + ".leader_epoch_checkpoint") == b"0\n1\n0 0\n"
    assert len(store.get(stem + ".txnindex")) == 34  # one aborted transaction entry

    assert log.apply_retention() > 0
    assert log.log_start_offset > 0 and log.size <= 500 + 400
    assert [(r.offset, r.value) for r in read_all(rlm, log)] == everything
    # one request per chunk of 1 MiB: one per segment read from the remote log
    assert rlm.cache.requests == sum(1 for s in copied if s.end_offset < log.log_start_offset)
    assert stats.fetch_requests >= rlm.cache.requests and stats.fetch_bytes > 0
    log.close()


def test_remote_read_limits(tmp_path):
    log = tiered_log(tmp_path / "t-0")
    rlm = RemoteLogManager(LocalStore(tmp_path / "remote"), MemoryMetadataLog(), node_id=1)
    leader, _ = leader_for(log)
    rlm.lead(leader)
    rlm.run_once()
    one = records_of(rlm.read("t", 0, 0, 1, 100))  # min_one: the first batch whole
    assert [r.offset for r in one] == [0]
    assert rlm.read("t", 0, 0, 1, 100, min_one=False) == b""
    assert rlm.read("t", 0, 3, 1 << 20, 3) == b""  # nothing at or past the limit
    # within one segment, as a local read (two batches of one record a segment here)
    assert [r.offset for r in records_of(rlm.read("t", 0, 2, 1 << 20, 100))] == [2, 3]
    assert [r.offset for r in records_of(rlm.read("t", 0, 2, 1 << 20, 3))] == [2]
    assert rlm.read("t", 0, 10_000, 100, 20_000) is None
    with pytest.raises(NotLeading):
        rlm.read("t", 1, 0, 100, 100)  # a partition not led here
    # read_committed: the segment's transaction index (one aborted transaction per segment,
    # pid 7, at the segment's first offset, in this test's leader)
    seg = leader.remote.copied()[1]
    assert rlm.aborted("t", 0, seg.start_offset) == [(7, seg.start_offset)]
    assert rlm.aborted("t", 0, seg.start_offset + 1) == []  # over before the read
    log.close()


def test_offset_for_timestamp_from_the_remote_log(tmp_path):
    log = tiered_log(tmp_path / "t-0")
    rlm = RemoteLogManager(LocalStore(tmp_path / "remote"), MemoryMetadataLog(), node_id=1)
    leader, _ = leader_for(log)
    rlm.lead(leader)
    rlm.run_once()
    end = leader.remote.end_offset
    assert rlm.offset_for_timestamp("t", 0, 1050, 0) == (5, 1050)
    assert rlm.offset_for_timestamp("t", 0, 1047, 0) == (5, 1050)
    assert rlm.offset_for_timestamp("t", 0, 0, 0) == (0, 1000)
    assert rlm.offset_for_timestamp("t", 0, 1000, 7) == (7, 1070)  # from the log start
    assert rlm.has_timestamp("t", 0, 1000 + 10 * end, 0)
    assert not rlm.has_timestamp("t", 0, 1000 + 10 * end + 1, 0)  # past the remote log
    assert rlm.offset_for_timestamp("t", 0, 1000 + 10 * end + 1, 0) is None
    log.close()


def test_total_retention_and_delete_records_delete_remote_segments(tmp_path):
    log = tiered_log(tmp_path / "t-0")
    store, meta = LocalStore(tmp_path / "remote"), MemoryMetadataLog()
    rlm = RemoteLogManager(store, meta, node_id=1)
    leader, state = leader_for(log)
    rlm.lead(leader)
    rlm.run_once()
    before = leader.remote.copied()
    state["delete_below"] = before[2].end_offset + 1  # DeleteRecords past three segments
    rlm.run_once()
    after = leader.remote.copied()
    assert after == before[3:]
    assert md.DELETE_SEGMENT_FINISHED in meta.states()
    assert not store.list(f"t-0-{md.uuid_text(TOPIC_ID)}/{before[0].start_offset:020d}")
    log.config = cfg(segment_bytes=400, remote_storage_enable="true", retention_ms=-1,
                     retention_bytes=1500, local_retention_bytes=500)
    rlm.run_once()
    left = leader.remote.size
    local = leader.retention()[2]
    assert left + local - 1500 < leader.remote.copied()[0].size and left < 1500
    log.close()


def test_a_new_leader_continues_from_the_metadata(tmp_path):
    log = tiered_log(tmp_path / "t-0")
    store, meta = LocalStore(tmp_path / "remote"), MemoryMetadataLog()
    first = RemoteLogManager(store, meta, node_id=1)
    leader, _ = leader_for(log)
    first.lead(leader)
    first.run_once()
    copied = [s.segment_id for s in leader.remote.copied()]
    for i in range(10):
        append(log, mk(1, key=b"more%d" % i, value=b"w" * 100))
    log.apply_retention()
    second = RemoteLogManager(store, meta, node_id=2)
    leader2, _ = leader_for(log, epoch=1)
    second.lead(leader2)
    first.resign("t", 0)
    second.run_once()
    got = [s.segment_id for s in leader2.remote.copied()]
    assert got[:len(copied)] == copied and len(got) > len(copied)  # no segment copied twice
    assert [r.offset for r in records_of(second.read("t", 0, 0, 1 << 20, 100))][0] == 0
    log.close()


def test_a_copy_a_crash_interrupted_is_cleaned_up(tmp_path):
    log = tiered_log(tmp_path / "t-0", n=6)
    store, meta = LocalStore(tmp_path / "remote"), MemoryMetadataLog()
    leader, _ = leader_for(log)
    half = md.RemoteSegment(uuid.uuid4(), 0, 1, 0, 10, [(0, 0)])
    record, msg = md.segment_metadata(leader, 1, half, 0)
    meta.append(TOPIC_ID, 0, md.serialize(record, msg))
    prefix = f"t-0-{md.uuid_text(TOPIC_ID)}/{0:020d}-{md.uuid_text(half.segment_id)}"
    store.put(prefix + ".log", b"half")
    rlm = RemoteLogManager(store, meta, node_id=2)
    rlm.lead(leader)
    rlm.run_once()
    assert store.list(prefix) == []
    assert meta.states()[:3] == [md.COPY_SEGMENT_STARTED, md.DELETE_SEGMENT_STARTED,
                                 md.DELETE_SEGMENT_FINISHED]
    assert leader.remote.start_offset == 0 and half.segment_id not in leader.remote.segments
    log.close()


def test_chunk_cache_is_bounded(tmp_path):
    store = LocalStore(tmp_path)
    store.put("obj", bytes(range(256)) * 64)  # 16 KiB
    cache = ChunkCache(store, chunk_bytes=1024, max_bytes=4096)
    assert cache.read("obj", 1000, 3000) == (bytes(range(256)) * 64)[1000:3000]
    assert cache.requests == 3
    cache.read("obj", 1500, 2500)
    assert cache.requests == 3  # cached
    cache.read("obj", 8000, 16384)
    assert cache._size <= 4096


def test_copies_keep_to_the_copy_quota(tmp_path):
    import time

    log = tiered_log(tmp_path / "t-0", n=12)
    rlm = RemoteLogManager(LocalStore(tmp_path / "remote"), MemoryMetadataLog(), node_id=1,
                           copy_bytes_per_second=20_000)
    leader, _ = leader_for(log)
    rlm.lead(leader)
    sizes = [s[5] for s in log.rolled_segments(-1, log.high_watermark)]
    start = time.monotonic()
    rlm.run_once()
    assert len(leader.remote.copied()) == len(sizes)
    assert time.monotonic() - start >= sum(sizes[:-1]) / 20_000
    log.close()


def test_a_deleted_partition_loses_its_remote_log(tmp_path):
    log = tiered_log(tmp_path / "t-0")
    store, meta = LocalStore(tmp_path / "remote"), MemoryMetadataLog()
    rlm = RemoteLogManager(store, meta, node_id=1)
    leader, _ = leader_for(log)
    rlm.lead(leader)
    rlm.run_once()
    copied = len(leader.remote.copied())
    prefix = f"t-0-{md.uuid_text(TOPIC_ID)}/"
    store.put(prefix + "stray.log", b"no event names it")
    rlm.delete_partition("t", 0, TOPIC_ID, 0)
    assert rlm.leaders == {}
    rlm.run_once()
    assert store.list(prefix) == []
    events = [md.deserialize(v) for vs in meta.events.values() for v in vs]
    deletes = [m.remote_partition_delete_state for r, _v, m in events
               if r is md.PARTITION_DELETE]
    assert deletes == [md.DELETE_PARTITION_STARTED, md.DELETE_PARTITION_FINISHED]
    assert [m.remote_log_segment_state for r, _v, m in events
            if r is md.SEGMENT_UPDATE].count(md.DELETE_SEGMENT_FINISHED) == copied
    log.close()


class FlakyStore(LocalStore):
    """A local store that fails every put after ``puts_left`` (an object store going down
    in the middle of a copy), until ``puts_left`` is None again."""

    puts_left = None

    def put(self, key, data):
        if self.puts_left is not None:
            if self.puts_left == 0:
                raise StoreError(f"cannot write {key}: connection refused")
            self.puts_left -= 1
        super().put(key, data)


def test_a_store_down_mid_copy_keeps_the_log_and_the_copy_resumes(tmp_path):
    log = tiered_log(tmp_path / "t-0")
    store, meta = FlakyStore(tmp_path / "remote"), MemoryMetadataLog()
    rlm = RemoteLogManager(store, meta, node_id=1)
    leader, _ = leader_for(log)
    rlm.lead(leader)
    store.puts_left = 8  # the first segment's six objects, then two of the second's
    rlm.run_once()
    assert len(leader.remote.copied()) == 1 and leader.remote.unfinished() == []
    assert len(store.list("t-0-")) == 6  # the half copy's objects are gone
    assert rlm.stats["t"].copy_errors == 1
    local_start = log.log_start_offset
    log.apply_retention()
    assert log.log_start_offset <= leader.remote.end_offset + 1  # nothing lost locally
    assert log.log_start_offset >= local_start
    store.puts_left = None
    rlm.run_once()
    assert leader.remote.end_offset == log.rolled_segments(-1, log.high_watermark)[-1][1] - 1
    starts = [s.start_offset for s in leader.remote.copied()]
    assert starts == sorted(set(starts))
    log.close()


def test_a_metadata_partition_is_read_once_a_pass(tmp_path):
    meta = MemoryMetadataLog()
    other = next(p for p in range(1, 1000)
                 if meta.metadata_partition(TOPIC_ID, p) == meta.metadata_partition(TOPIC_ID, 0))
    logs = [tiered_log(tmp_path / f"t-{p}", n=6) for p in (0, other)]
    rlm = RemoteLogManager(LocalStore(tmp_path / "remote"), meta, node_id=1)
    leaders = [leader_for(lg, partition=p)[0] for lg, p in zip(logs, (0, other))]
    for leader in leaders:
        rlm.lead(leader)
    rlm.run_once()
    assert meta.reads == 1
    assert all(len(leader.remote.copied()) == 2 for leader in leaders)
    for lg in logs:
        lg.close()


def test_a_segments_epoch_checkpoint_is_the_history_up_to_its_end(tmp_path):
    log = Log(tmp_path / "t-0", cfg(segment_bytes=400, retention_ms=-1,
                                    remote_storage_enable="true"))
    for i in range(12):
        append(log, mk(1, key=b"k%d-" % i, value=b"v" * 100), epoch=0 if i < 5 else 3)
    store = LocalStore(tmp_path / "remote")
    rlm = RemoteLogManager(store, MemoryMetadataLog(), node_id=1)
    leader, _ = leader_for(log)
    rlm.lead(leader)
    rlm.run_once()
    late = next(s for s in leader.remote.copied() if s.start_offset >= 6)
    assert late.leader_epochs == [(3, late.start_offset)]  # the segment's own, in the metadata
    stem = f"t-0-{md.uuid_text(TOPIC_ID)}/{late.start_offset:020d}-{md.uuid_text(late.segment_id)}"
    assert store.get(stem + ".leader_epoch_checkpoint") == b"0\n2\n0 0\n3 5\n"
    log.close()
