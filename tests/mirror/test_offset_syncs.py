from josefk.mirror.offset_syncs import (MAX_OUTSTANDING_OFFSET_SYNCS, OffsetSyncStore,
                                        OffsetSyncWriter, PartitionState)
from josefk.mirror.records import OffsetSync


def test_partition_state_syncs_the_first_a_gap_a_stale_one_and_a_truncation():
    state = PartitionState(max_offset_lag=50)
    assert state.update(0, 100)          # the first of the lifetime
    state.should_sync = False
    assert not state.update(1, 101)      # consecutive, fresh
    assert state.update(3, 102)          # upstream offset 2 skipped
    state.should_sync = False
    assert not state.update(4, 103)
    assert not state.update(5, 152)      # 152 - (102 + 1) = 49 < 50
    assert state.update(6, 153)          # 153 - 103 = 50: too stale
    state.should_sync = False
    assert state.update(7, 10)           # the downstream topic went back
    state.should_sync = False
    assert not state.update(8, 11)


def test_partition_state_with_no_lag_syncs_every_record():
    state = PartitionState(max_offset_lag=0)
    for offset in range(5):
        assert state.update(offset, offset)
        state.should_sync = False


class Sent(list):
    def __call__(self, sync, done):
        self.append((sync, done))


def test_writer_sends_at_once_or_delays_until_the_commit():
    sent = Sent()
    writer = OffsetSyncWriter(sent, max_offset_lag=100)
    assert writer.maybe_queue("t", 0, 0, 0)  # pending: to fire
    writer.fire_pending()
    assert [s for s, _ in sent] == [OffsetSync("t", 0, 0, 0)]
    assert not writer.maybe_queue("t", 0, 1, 1) and not writer.maybe_queue("t", 0, 2, 2)
    writer.fire_pending()
    assert len(sent) == 1 and writer.delayed == {("t", 0): (2, 2)}
    writer.promote_delayed()
    writer.fire_pending()
    assert [s for s, _ in sent][1:] == [OffsetSync("t", 0, 2, 2)]
    assert writer.delayed == {} and writer.pending == {}


def test_writer_bounds_the_syncs_in_flight():
    sent = Sent()
    writer = OffsetSyncWriter(sent, max_offset_lag=0)
    for partition in range(MAX_OUTSTANDING_OFFSET_SYNCS + 2):
        writer.maybe_queue("t", partition, 0, 0)
    writer.fire_pending()
    assert len(sent) == MAX_OUTSTANDING_OFFSET_SYNCS and len(writer.pending) == 2
    sent[0][1]()                         # one acknowledged
    writer.fire_pending()
    assert len(sent) == MAX_OUTSTANDING_OFFSET_SYNCS + 1 and len(writer.pending) == 1


def test_writer_keeps_the_latest_sync_per_partition():
    sent = Sent()
    writer = OffsetSyncWriter(sent, max_offset_lag=0)
    for offset in range(3):
        writer.maybe_queue("t", 0, offset, offset)
    writer.fire_pending()
    assert [s for s, _ in sent] == [OffsetSync("t", 0, 2, 2)]


def loaded(*syncs) -> OffsetSyncStore:
    store = OffsetSyncStore()
    store.read_to_end = True
    for upstream, downstream in syncs:
        store.handle(OffsetSync("t", 0, upstream, downstream))
    return store


def test_nothing_translates_before_the_topic_is_read_to_its_end():
    store = OffsetSyncStore()
    store.handle(OffsetSync("t", 0, 100, 200))
    assert store.translate_downstream("t", 0, 150) is None
    store.read_to_end = True
    assert store.translate_downstream("t", 0, 150) == 201
    assert store.translate_downstream("t", 1, 150) is None  # no sync for the partition


def test_translation_at_a_sync_past_it_and_before_every_sync():
    store = loaded((100, 200))
    assert store.translate_downstream("t", 0, 100) == 200
    assert store.translate_downstream("t", 0, 150) == 201   # one past: never skip a record
    assert store.translate_downstream("t", 0, 99) == -1


def test_older_syncs_are_kept_at_power_of_two_spacing():
    store = loaded((100, 200), (150, 251))
    assert store.translate_downstream("t", 0, 150) == 251
    assert store.translate_downstream("t", 0, 120) == 201   # the sync at 100 is still kept
    store = loaded(*[(u, u + 1000) for u in range(0, 1000)])
    assert store.translate_downstream("t", 0, 999) == 1999
    assert store.translate_downstream("t", 0, 998) == 1998
    # far behind: the closest kept sync before it, at most a power of two away
    translated = store.translate_downstream("t", 0, 300)
    assert 1000 < translated <= 1301 and store.translate_downstream("t", 0, 0) == 1000


def test_a_sync_going_back_upstream_clears_the_older_ones():
    store = loaded((100, 200), (150, 251), (10, 300))
    assert store.translate_downstream("t", 0, 120) == 301
    assert store.translate_downstream("t", 0, 5) == -1


def test_recent_syncs_stay_distinct():
    store = loaded((0, 0), (6, 6), (12, 12), (18, 18), (19, 19))
    assert store.translate_downstream("t", 0, 13) == 13
    assert store.translate_downstream("t", 0, 19) == 19


def test_the_store_keeps_its_invariants_and_translation_is_monotonic():
    store = loaded(*[(u, 2 * u) for u in range(0, 5000, 3)])
    syncs = store.syncs[("t", 0)]
    assert syncs[0].upstream_offset == 4998
    for i in range(len(syncs) - 1):
        newer, older = syncs[i], syncs[i + 1]
        if newer is not older:
            assert newer.upstream_offset <= older.upstream_offset + 2 ** (i + 1) - 2 ** i
            assert newer.upstream_offset >= older.upstream_offset + 2 ** max(i - 2, 0)
    translated = [store.translate_downstream("t", 0, u) for u in range(0, 5000)]
    assert translated == sorted(translated)
    for upstream in (4990, 4900, 4000):   # recent offsets translate closely
        assert 2 * upstream - store.translate_downstream("t", 0, upstream) <= \
            2 * (5000 - upstream)
