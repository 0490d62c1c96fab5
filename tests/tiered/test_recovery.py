"""A partition's remote log rebuilt from the bucket alone (tiered/recovery.py): topic recovery
writes the segments to a fresh metadata log and restarts the empty local log past them; a
read replica follows the origin's uploads and deletions; incomplete uploads are left out."""
from josefk.storage import Log
from josefk.tiered import metadata as md
from josefk.tiered.manager import Leader, RemoteLogManager, object_prefix
from josefk.tiered.recovery import scan, topics_in
from josefk.tiered.store import LocalStore
from tests.storage.logs import append, mk, records_of
from tests.tiered.test_manager import TOPIC_ID, MemoryMetadataLog, leader_for, tiered_log

PREFIX = object_prefix("t", 0, TOPIC_ID)


def origin(tmp_path, n=30):
    """A log copied to a local-directory store by its own manager: (log, store, its segments)."""
    log = tiered_log(tmp_path / "origin" / "t-0", n)
    store = LocalStore(tmp_path / "bucket")
    rlm = RemoteLogManager(store, MemoryMetadataLog(), node_id=1)
    leader, _ = leader_for(log)
    rlm.lead(leader)
    rlm.run_once()
    return log, store, rlm, leader


def bucket_leader(log, restarts, *, read_replica=False):
    """A leader of an empty log whose remote log comes from the bucket."""
    leader, _ = leader_for(log, epoch=0)

    def recover(offset, state):
        restarts.append((offset, state))
        log.truncate_fully_and_start_at(offset)

    return Leader("t", 0, TOPIC_ID, 0, segments_to_copy=leader.segments_to_copy,
                  upload_limit=leader.upload_limit, aborted=leader.aborted,
                  epochs=leader.epochs, snapshot=leader.snapshot, set_copied=leader.set_copied,
                  retention=leader.retention, delete_below=leader.delete_below,
                  recover=recover, read_replica=read_replica)


def described(segments):
    return [(s.start_offset, s.end_offset, s.size, s.max_timestamp_ms, s.leader_epochs,
             s.txn_index_empty) for s in segments]


def test_recovery_rebuilds_the_remote_log_from_the_objects(tmp_path):
    log, store, _rlm, old = origin(tmp_path)
    copied = old.remote.copied()
    assert len(copied) >= 10
    assert topics_in(store, "t") == {TOPIC_ID: {0}}
    assert topics_in(store, "t-0") == {}  # another topic's name is not a prefix match

    fresh = Log(tmp_path / "new" / "t-0", log.config)
    meta, restarts = MemoryMetadataLog(), []
    rlm = RemoteLogManager(store, meta, node_id=2)
    leader = bucket_leader(fresh, restarts)
    rlm.lead(leader)
    rlm.run_once()

    assert described(leader.remote.copied()) == described(copied)
    assert meta.states() == [md.COPY_SEGMENT_STARTED, md.COPY_SEGMENT_FINISHED] * len(copied)
    (offset, (epochs, snapshot)), = restarts
    assert offset == copied[-1].end_offset + 1 == fresh.log_end_offset
    assert epochs == [(0, 0)] and snapshot == b""
    # every record from offset 0 reads from the bucket, as the origin wrote it
    off, got = 0, []
    while off < offset:
        recs = [r for r in records_of(rlm.read("t", 0, off, 1000, offset)) if r.offset >= off]
        got.extend((r.offset, r.value) for r in recs)
        off = recs[-1].offset + 1
    want = [(r.offset, r.value) for r in records_of(log.read(0, 1 << 20, max_offset=offset,
                                                              min_one=True).records)]
    assert got[:len(want)] == want and [o for o, _v in got] == list(range(offset))

    # a second load (a restart) finds every segment in the metadata: nothing written again
    again = RemoteLogManager(store, meta, node_id=2)
    leader2 = bucket_leader(fresh, restarts)
    again.lead(leader2)
    again.run_once()
    assert len(meta.states()) == 2 * len(copied)
    assert described(leader2.remote.copied()) == described(copied)
    log.close()
    fresh.close()


def test_incomplete_uploads_are_left_out(tmp_path):
    log, store, _rlm, old = origin(tmp_path, n=12)
    first, second, third = old.remote.copied()[:3]
    stem = lambda s: f"{PREFIX}{s.start_offset:020d}-{md.uuid_text(s.segment_id)}"  # noqa: E731
    # the first: its .log cut mid-batch; the second: an object missing
    raw = store.get(stem(first) + ".log")
    store.put(stem(first) + ".log", raw[:len(raw) - 7])
    store.delete([stem(second) + ".txnindex"])
    found = scan(store, PREFIX)
    assert described(found) == described(old.remote.copied()[2:])
    assert found[0].start_offset == third.start_offset
    # known segment ids are not read again
    assert scan(store, PREFIX, known={s.segment_id for s in found}) == []
    log.close()


def test_a_read_replica_follows_uploads_and_deletions(tmp_path):
    log, store, origin_rlm, old = origin(tmp_path, n=12)
    replica_log = Log(tmp_path / "replica" / "t-0", log.config)
    restarts = []
    meta = MemoryMetadataLog()
    rlm = RemoteLogManager(store, meta, node_id=2)
    leader = bucket_leader(replica_log, restarts, read_replica=True)
    rlm.lead(leader)
    rlm.run_once()
    end = old.remote.end_offset
    assert leader.remote.end_offset == end and replica_log.log_end_offset == end + 1
    assert restarts[-1] == (end + 1, None)

    for i in range(12, 24):  # the origin writes and copies more
        append(log, mk(1, key=b"k%d-" % i, value=b"v" * 100, ts=1000 + 10 * i))
    origin_rlm.run_once()
    rlm.run_once()
    assert described(leader.remote.copied()) == described(old.remote.copied())
    assert replica_log.log_end_offset == old.remote.end_offset + 1 > end + 1

    for seg in old.remote.copied()[:2]:  # the origin's retention deletes its oldest
        origin_rlm._delete_segment(old, old.remote, seg)
    rlm.run_once()
    assert described(leader.remote.copied()) == described(old.remote.copied())
    assert meta.events == {}  # a read replica writes no metadata
    log.close()
    replica_log.close()
