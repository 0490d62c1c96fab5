"""The controller's leader election rules, as plain functions."""
from josefk.broker.control import election as e


def test_offline_leader_picks_first_live_isr_member_in_assignment_order():
    assert e.offline_leader([1, 2, 3], [3, 2], {2, 3}, unclean=False) == (2, [3, 2])
    assert e.offline_leader([1, 2, 3], [1, 3], {2, 3}, unclean=False) == (3, [3])


def test_offline_leader_without_live_isr_waits_unless_unclean():
    assert e.offline_leader([1, 2], [1], {2}, unclean=False) is None
    assert e.offline_leader([1, 2], [1], {2}, unclean=True) == (2, [2])
    assert e.offline_leader([1, 2], [1], set(), unclean=True) is None


def test_new_partition_leader_is_first_live_replica_and_isr_all_live():
    assert e.new_partition_leader([3, 1, 2], {1, 2, 3}) == (3, [3, 1, 2])
    assert e.new_partition_leader([3, 1, 2], {1, 2}) == (1, [1, 2])
    assert e.new_partition_leader([3], set()) is None


def test_preferred_leader_needs_it_alive_and_in_sync():
    assert e.preferred_leader([1, 2, 3], [2, 3, 1], {1, 2, 3}) == (1, [2, 3, 1])
    assert e.preferred_leader([1, 2, 3], [2, 3], {1, 2, 3}) is None
    assert e.preferred_leader([1, 2, 3], [1, 2, 3], {2, 3}) is None


def test_controlled_shutdown_moves_leadership_and_shrinks_isr():
    assert e.controlled_shutdown_leader([1, 2, 3], [1, 2, 3], {1, 2, 3}, {1}) == (2, [2, 3])
    assert e.controlled_shutdown_leader([1, 2], [1], {1, 2}, {1}) is None


def test_without_replica_keeps_the_last_member():
    assert e.without_replica([1, 2], 2) == [1]
    assert e.without_replica([2], 2) == [2]


def test_leader_imbalance():
    assignments = {("t", 0): [1, 2], ("t", 1): [1, 2], ("t", 2): [2, 1]}
    leaders = {("t", 0): 2, ("t", 1): 1, ("t", 2): 2}
    assert e.leader_imbalance(assignments, leaders, 1) == 0.5
    assert e.leader_imbalance(assignments, leaders, 2) == 0.0
    assert e.leader_imbalance(assignments, leaders, 3) == 0.0
