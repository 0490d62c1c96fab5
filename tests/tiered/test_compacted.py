"""Compacted topics tiered (tiered/compacted.py): a segment the cleaner rewrote after its copy
is copied again and the remote segments it supersedes are deleted; reads from the bucket then
answer as the compaction says."""
from josefk.storage import Log
from josefk.tiered import metadata as md
from josefk.tiered.manager import Leader, RemoteLogManager
from josefk.tiered.store import LocalStore
from tests.storage.logs import append, cfg, mk, records_of
from tests.tiered.test_manager import MemoryMetadataLog, leader_for


def compacted_leader(log):
    base, _ = leader_for(log)
    return Leader("t", 0, base.topic_id, 0, segments_to_copy=base.segments_to_copy,
                  upload_limit=base.upload_limit, aborted=lambda start, end: [],
                  epochs=base.epochs, snapshot=base.snapshot, set_copied=base.set_copied,
                  retention=lambda: (-1, -1, 0), delete_below=base.delete_below,
                  compacted=True)


def remote_records(rlm, end):
    out, off = [], 0
    while off < end:
        data = rlm.read("t", 0, off, 1 << 20, end)
        recs = [r for r in records_of(data) if r.offset >= off]
        if not recs:
            break
        out.extend((r.offset, r.key, r.value) for r in recs)
        off = recs[-1].offset + 1
    return out


def test_the_cleaners_output_replaces_the_copied_segments(tmp_path):
    log = Log(tmp_path / "t-0", cfg(segment_bytes=400, cleanup_policy="compact",
                                    remote_storage_enable="true", min_cleanable_dirty_ratio=0.01,
                                    delete_retention_ms=10**12, retention_ms=-1))
    for i in range(40):  # four keys, overwritten over and over
        append(log, mk(1, key=b"key%d" % (i % 4), value=b"v%03d-" % i + b"x" * 60, ts=1000 + i))
    store, meta = LocalStore(tmp_path / "bucket"), MemoryMetadataLog()
    rlm = RemoteLogManager(store, meta, node_id=1)
    leader = compacted_leader(log)
    rlm.lead(leader)
    rlm.run_once()
    first_copies = leader.remote.copied()
    end = leader.remote.end_offset + 1
    assert len(first_copies) >= 5
    assert [o for o, _k, _v in remote_records(rlm, end)] == list(range(end))  # as written

    assert log.compact(now_ms=10**9) > 0
    local = [(base, nxt - 1, size) for base, nxt, *_p, size, _ts in log.rolled_segments(-1, end)]
    rewritten = [s for s in first_copies
                 if (s.start_offset, s.end_offset, s.size) not in local]
    assert rewritten  # the cleaner dropped records from copied segments
    rlm.run_once()
    copied = leader.remote.copied()
    # the remote log is the cleaner's output: segment for segment, record for record
    assert [(s.start_offset, s.end_offset, s.size) for s in copied] == local
    want = []
    off = 0
    while off < end:
        recs = [r for r in records_of(log.read(off, 1 << 20, max_offset=end).records)
                if r.offset >= off]
        if not recs:
            break
        want.extend((r.offset, r.key, r.value) for r in recs)
        off = recs[-1].offset + 1
    assert remote_records(rlm, end) == want and len(want) < end // 2
    # the superseded remote segments are gone, objects and all, their deletion recorded
    assert meta.states().count(md.DELETE_SEGMENT_FINISHED) == len(rewritten)
    assert len(store.list("t-0-")) == 6 * len(copied)
    assert log.remote_copied_end == leader.remote.end_offset
    rlm.run_once()  # nothing changed: nothing copied again
    assert [s.segment_id for s in leader.remote.copied()] == [s.segment_id for s in copied]
    log.close()
