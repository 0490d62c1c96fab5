"""The share-partition state machine (broker/share/partition.py) on a fake clock: acquisition by
whole batches, acknowledgements, locks, delivery counts, the start offset, persisted state."""
from __future__ import annotations

import pytest

from josefk.broker.share.partition import (ACCEPT, ACKNOWLEDGED, ACQUIRED, ARCHIVED, AVAILABLE,
                                           GAP, REJECT, RELEASE, RENEW, SharePartition,
                                           StateError)
from josefk.coordinator.runtime.clock import FakeClock
from josefk.wire import errors


def sp(limit=3, lock_ms=1000, max_locks=2000):
    clock = FakeClock()
    p = SharePartition(clock, limit, lock_ms, max_locks)
    p.expired = []
    p.on_available = lambda: p.expired.append(clock.now_ms())
    return p, clock


def states(p):
    return [(r.first, r.last, r.state, r.count, r.member) for r in p.runs]


def test_whole_batches_are_acquired_up_to_max_records():
    p, _ = sp()
    got = p.acquire("m1", 0, [(0, 9, True), (10, 19, True), (20, 29, True)], max_records=15)
    assert got == [(0, 19, 1)]  # the second batch crosses 15: taken whole, the third is not
    assert p.next_offset == 20 and p.start == 0
    assert states(p) == [(0, 19, ACQUIRED, 1, "m1")]  # one fetch, one lock: one run
    assert p.acquire("m2", 20, [(20, 29, True)], 500) == [(20, 29, 1)]


def test_record_limit_mode_acquires_max_records_exactly_inside_a_batch():
    p, _ = sp()
    batches = [(0, 9, True), (10, 19, True)]
    assert p.acquire("m1", 0, batches, max_records=4, strict=True) == [(0, 3, 1)]
    assert p.next_offset == 4  # the rest of the first batch is for the next fetch
    # the next member starts inside the batch and crosses into the next one
    assert p.acquire("m2", 4, batches, max_records=8, strict=True) == [(4, 11, 1)]
    p.acknowledge("m1", [(0, 3, [RELEASE])])
    # released records first, as many as allowed, then new ones up to the limit
    assert p.acquire("m3", 0, batches, max_records=2, strict=True) == [(0, 1, 2)]
    assert p.acquire("m3", 0, batches, max_records=5, strict=True) == [(2, 3, 2), (12, 14, 1)]
    assert p.next_offset == 15


def test_accept_moves_the_start_and_forgets_the_records():
    p, _ = sp()
    p.acquire("m1", 0, [(0, 9, True)], 100)
    assert not p.acknowledge("m1", [(0, 9, [ACCEPT])])
    assert p.start == 10 and p.runs == [] and p.next_fetch_offset() == 10


def test_release_redelivers_with_a_higher_count_and_reject_never():
    p, _ = sp()
    p.acquire("m1", 0, [(0, 9, True)], 100)
    assert p.acknowledge("m1", [(0, 4, [RELEASE]), (5, 9, [REJECT])])
    assert states(p) == [(0, 4, AVAILABLE, 1, ""), (5, 9, ARCHIVED, 1, "")]
    assert p.next_fetch_offset() == 0
    assert p.acquire("m2", 0, [(0, 9, True)], 100) == [(0, 4, 2)]  # 5-9 stay archived
    p.acknowledge("m2", [(0, 4, [ACCEPT])])
    assert p.start == 10 and p.runs == []


def test_per_offset_types_split_only_where_they_differ():
    p, _ = sp()
    p.acquire("m1", 0, [(0, 5, True)], 100)
    p.acknowledge("m1", [(0, 5, [ACCEPT, ACCEPT, RELEASE, GAP, ACCEPT, ACCEPT])])
    assert states(p) == [(2, 2, AVAILABLE, 1, ""), (3, 3, ARCHIVED, 1, ""),
                         (4, 5, ACKNOWLEDGED, 1, "")]
    assert p.start == 2


def test_only_the_owner_acknowledges_and_nothing_changes_on_error():
    p, _ = sp()
    p.acquire("m1", 0, [(0, 9, True)], 100)
    with pytest.raises(StateError) as e:
        p.acknowledge("m2", [(0, 9, [ACCEPT])])
    assert e.value.code == errors.INVALID_RECORD_STATE
    with pytest.raises(StateError) as e:  # the first batch is fine, the second is not
        p.acknowledge("m1", [(0, 4, [ACCEPT]), (5, 12, [ACCEPT])])
    assert e.value.code == errors.INVALID_RECORD_STATE
    with pytest.raises(StateError) as e:
        p.acknowledge("m1", [(0, 9, [ACCEPT, RELEASE])])  # neither one type nor one per offset
    assert e.value.code == errors.INVALID_REQUEST
    with pytest.raises(StateError):
        p.acknowledge("m1", [(0, 9, [RENEW])])  # renew is ShareFetch/ShareAcknowledge v2
    assert states(p) == [(0, 9, ACQUIRED, 1, "m1")]


def test_an_expired_lock_makes_records_available_then_archives_at_the_limit():
    p, clock = sp(limit=2, lock_ms=1000)
    p.acquire("m1", 0, [(0, 9, True)], 100)
    clock.advance(999)
    assert states(p)[0][2] == ACQUIRED
    clock.advance(1)
    assert states(p) == [(0, 9, AVAILABLE, 1, "")] and p.expired == [clock.now_ms()]
    assert p.acquire("m2", 0, [(0, 9, True)], 100) == [(0, 9, 2)]
    clock.advance(1000)
    assert p.runs == [] and p.start == 10  # delivered twice: archived, never a third time


def test_acknowledging_cancels_the_lock_and_renew_extends_it():
    p, clock = sp(lock_ms=1000)
    p.acquire("m1", 0, [(0, 9, True)], 100)
    clock.advance(800)
    p.acknowledge("m1", [(0, 4, [RENEW]), (5, 9, [ACCEPT])], renew_allowed=True)
    clock.advance(800)  # the first lock would have expired by now
    assert states(p) == [(0, 4, ACQUIRED, 1, "m1"), (5, 9, ACKNOWLEDGED, 1, "")]
    clock.advance(200)
    assert states(p) == [(0, 4, AVAILABLE, 1, ""), (5, 9, ACKNOWLEDGED, 1, "")]
    assert clock.pending() == 0


def test_release_member_keeps_or_takes_back_the_delivery():
    p, _ = sp(limit=2)
    p.acquire("m1", 0, [(0, 4, True)], 100)
    p.acquire("m2", 5, [(5, 9, True)], 100)
    p.release_member("m1", delivered=False)  # closed its session: never processed them
    assert states(p)[0] == (0, 4, AVAILABLE, 0, "")
    p.release_member("m2", delivered=True)  # died holding them: that was a delivery
    assert states(p)[1] == (5, 9, AVAILABLE, 1, "")
    p.acquire("m3", 5, [(5, 9, True)], 100)
    p.release_member("m3", delivered=True)
    assert states(p)[-1] == (5, 9, ARCHIVED, 2, "")


def test_in_flight_records_are_bounded():
    p, _ = sp(max_locks=20)
    assert p.acquire("m1", 0, [(0, 9, True), (10, 19, True), (20, 29, True)], 100) == [(0, 19, 1)]
    assert p.acquire("m2", 20, [(20, 29, True)], 100) == []
    p.acknowledge("m1", [(0, 9, [ACCEPT])])
    assert p.acquire("m2", 20, [(20, 29, True)], 100) == [(20, 29, 1)]


def test_skipped_and_missing_offsets_are_archived_at_once():
    p, _ = sp()
    # a control batch at 5, offsets 10-11 compacted away
    got = p.acquire("m1", 0, [(0, 4, True), (5, 5, False), (12, 15, True)], 100)
    assert got == [(0, 4, 1), (12, 15, 1)]
    assert [(r.first, r.last, r.state) for r in p.runs] == [
        (0, 4, ACQUIRED), (5, 11, ARCHIVED), (12, 15, ACQUIRED)]
    p.acknowledge("m1", [(0, 4, [ACCEPT])])
    assert p.start == 12


def test_available_records_the_log_no_longer_has_are_archived():
    p, _ = sp()
    p.acquire("m1", 0, [(0, 9, True), (10, 19, True)], 100)
    p.acknowledge("m1", [(0, 19, [RELEASE])])
    assert p.next_fetch_offset() == 0
    assert p.acquire("m1", 0, [(10, 19, True)], 100) == [(10, 19, 2)]  # 0-9 were compacted away
    assert p.start == 10


def test_persisted_state_round_trips_with_acquired_as_available():
    p, _ = sp(limit=3)
    p.acquire("m1", 0, [(0, 9, True), (10, 19, True)], 100)
    p.acknowledge("m1", [(0, 4, [ACCEPT]), (10, 12, [REJECT])])
    batches = p.state_batches()
    assert batches == [(5, 9, AVAILABLE, 1), (10, 12, ARCHIVED, 1), (13, 19, AVAILABLE, 1)]
    q, _ = sp(limit=3)
    q.load(p.start, 0, batches)
    assert q.start == 5 and q.next_offset == 20 and q.next_fetch_offset() == 5
    assert q.delivery_complete_count() == 3
    assert q.acquire("m2", 5, [(0, 9, True), (10, 19, True)], 100) == [(5, 9, 2), (13, 19, 2)]


def test_loaded_records_at_the_limit_are_archived():
    p, _ = sp(limit=2)
    p.load(0, 0, [(0, 9, AVAILABLE, 2), (10, 14, AVAILABLE, 1)])
    assert p.start == 10 and p.next_fetch_offset() == 10


def test_move_start_drops_what_the_log_lost():
    p, _ = sp()
    p.acquire("m1", 0, [(0, 9, True), (10, 19, True)], 100)
    p.move_start(15)
    assert p.start == 15 and states(p) == [(15, 19, ACQUIRED, 1, "m1")]
    p.acknowledge("m1", [(0, 19, [ACCEPT])])  # below the start: already done with
    assert p.runs == [] and p.start == 20
