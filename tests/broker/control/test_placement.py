"""broker.placement: Kafka's replica assignment and manual-assignment checks."""
import random
from collections import Counter

import pytest

from josefk.broker.control.placement import (PlacementError, assign_additional_partitions,
                                             assign_replicas, rack_alternated_brokers,
                                             validate_manual_assignment)
from josefk.wire import errors


def leaders(assignment):
    return Counter(reps[0] for reps in assignment.values())


def replicas(assignment):
    return Counter(b for reps in assignment.values() for b in reps)


def check_well_formed(assignment, num_partitions, rf, brokers, start_partition=0):
    assert sorted(assignment) == list(range(start_partition, start_partition + num_partitions))
    for reps in assignment.values():
        assert len(reps) == rf and len(set(reps)) == rf
        assert set(reps) <= set(brokers)


@pytest.mark.parametrize("seed", range(20))
def test_six_partitions_rf3_on_three_brokers_is_even(seed):
    a = assign_replicas({1: None, 2: None, 3: None}, 6, 3, rng=random.Random(seed))
    check_well_formed(a, 6, 3, [1, 2, 3])
    assert leaders(a) == {1: 2, 2: 2, 3: 2}
    assert replicas(a) == {1: 6, 2: 6, 3: 6}


def test_fixed_start_matches_kafkas_walk():
    # Kafka's documented example: 5 brokers, 10 partitions, RF 3, start index 0, shift 0.
    a = assign_replicas([0, 1, 2, 3, 4], 10, 3, fixed_start_index=0, start_shift=0)
    assert a == {
        0: [0, 1, 2], 1: [1, 2, 3], 2: [2, 3, 4], 3: [3, 4, 0], 4: [4, 0, 1],
        5: [0, 2, 3], 6: [1, 3, 4], 7: [2, 4, 0], 8: [3, 0, 1], 9: [4, 1, 2],
    }


def test_brokers_are_taken_in_id_order():
    a = assign_replicas({30: None, 10: None, 20: None}, 3, 1, fixed_start_index=0)
    assert a == {0: [10], 1: [20], 2: [30]}


@pytest.mark.parametrize("n_brokers,partitions,rf", [(3, 300, 2), (5, 1000, 3), (7, 700, 3), (4, 400, 4)])
def test_leaders_and_followers_spread_evenly(n_brokers, partitions, rf):
    brokers = list(range(1, n_brokers + 1))
    a = assign_replicas(brokers, partitions, rf, rng=random.Random(1))
    check_well_formed(a, partitions, rf, brokers)
    assert set(leaders(a).values()) == {partitions // n_brokers}
    assert set(replicas(a).values()) == {partitions * rf // n_brokers}
    # the followers of each leader are spread over the other brokers, not always its neighbours
    if rf < n_brokers:
        for leader in brokers:
            followers = Counter(b for reps in a.values() if reps[0] == leader for b in reps[1:])
            assert set(followers) == set(brokers) - {leader}


def test_seeded_rng_is_deterministic():
    brokers = {1: None, 2: None, 3: None, 4: None, 5: None}
    one = assign_replicas(brokers, 12, 3, rng=random.Random(42))
    two = assign_replicas(brokers, 12, 3, rng=random.Random(42))
    assert one == two
    starts = {assign_replicas(brokers, 1, 1, rng=random.Random(s))[0][0] for s in range(50)}
    assert len(starts) > 1  # the start really is random


def test_start_partition_continues_numbering():
    a = assign_replicas([1, 2, 3], 2, 2, start_partition=4, fixed_start_index=0)
    assert list(a) == [4, 5]


def test_rack_alternated_order():
    assert rack_alternated_brokers({1: "a", 2: "a", 3: "b", 4: "c", 5: "c", 6: "a"}) == [1, 3, 4, 2, 5, 6]
    kafkas_example = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}
    assert rack_alternated_brokers(kafkas_example) == [0, 3, 1, 5, 4, 2]


@pytest.mark.parametrize("seed", range(20))
def test_four_brokers_two_racks_every_partition_in_both(seed):
    brokers = {1: "r1", 2: "r1", 3: "r2", 4: "r2"}
    a = assign_replicas(brokers, 8, 2, rng=random.Random(seed))
    check_well_formed(a, 8, 2, brokers)
    for reps in a.values():
        assert {brokers[b] for b in reps} == {"r1", "r2"}
    assert set(leaders(a).values()) == {2}
    assert set(replicas(a).values()) == {4}
    # RF 3 on two racks: both racks still hold a replica of every partition
    a3 = assign_replicas(brokers, 8, 3, rng=random.Random(seed))
    check_well_formed(a3, 8, 3, brokers)
    for reps in a3.values():
        assert {brokers[b] for b in reps} == {"r1", "r2"}


@pytest.mark.parametrize("seed", range(10))
def test_uneven_racks_still_distinct_racks(seed):
    brokers = {1: "a", 2: "a", 3: "a", 4: "b", 5: "c"}
    a = assign_replicas(brokers, 30, 3, rng=random.Random(seed))
    check_well_formed(a, 30, 3, brokers)
    for reps in a.values():
        assert len({brokers[b] for b in reps}) == 3


def test_rack_aware_fixed_start():
    # 6 brokers in 3 racks, alternated order [0, 3, 1, 5, 4, 2]
    brokers = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}
    a = assign_replicas(brokers, 6, 3, fixed_start_index=0, start_shift=0)
    assert a == {0: [0, 3, 1], 1: [3, 1, 5], 2: [1, 5, 4], 3: [5, 4, 2], 4: [4, 2, 0], 5: [2, 0, 3]}
    for reps in a.values():
        assert len({brokers[b] for b in reps}) == 3


def test_errors():
    with pytest.raises(PlacementError) as e:
        assign_replicas({1: None, 2: None, 3: None}, 3, 4)
    assert e.value.code == errors.INVALID_REPLICATION_FACTOR
    assert e.value.message == "Replication factor: 4 larger than available brokers: 3."
    with pytest.raises(PlacementError) as e:
        assign_replicas({}, 1, 1)
    assert e.value.message == "Replication factor: 1 larger than available brokers: 0."
    with pytest.raises(PlacementError) as e:
        assign_replicas([1], 1, 0)
    assert e.value.code == errors.INVALID_REPLICATION_FACTOR
    with pytest.raises(PlacementError) as e:
        assign_replicas([1], 0, 1)
    assert e.value.code == errors.INVALID_PARTITIONS
    with pytest.raises(PlacementError) as e:
        assign_replicas({1: "r1", 2: None, 3: "r2"}, 3, 2)
    assert e.value.code == errors.UNKNOWN_SERVER_ERROR
    assert e.value.message == "Not all brokers have rack information for replica rack aware assignment."


def test_additional_partitions_continue_from_partition0_leader():
    existing = {0: [2, 3, 1], 1: [3, 1, 2]}
    new = assign_additional_partitions([1, 2, 3], existing, 5, rng=random.Random(0))
    assert list(new) == [2, 3, 4]
    check_well_formed(new, 3, 3, [1, 2, 3], start_partition=2)
    # start index = index of broker 2 in [1, 2, 3] = 1: partition p's leader is brokers[(p + 1) % 3]
    assert [new[p][0] for p in (2, 3, 4)] == [1, 2, 3]
    with pytest.raises(PlacementError) as e:
        assign_additional_partitions([1, 2, 3], existing, 2)
    assert e.value.code == errors.INVALID_PARTITIONS


# -- manual assignments -----------------------------------------------------------------------

def test_valid_manual_assignment():
    assert validate_manual_assignment({0: [1, 2], 1: [2, 3], 2: [3, 1]}, {1, 2, 3}) is None
    assert validate_manual_assignment([(1, [2, 1]), (0, [1, 2])], [1, 2]) is None
    assert validate_manual_assignment({0: [5]}, None) is None  # no broker check without a list
    assert validate_manual_assignment({3: [1, 2], 4: [2, 1]}, {1, 2}, first_partition=3,
                                      replication_factor=2) is None


@pytest.mark.parametrize("assignment,expected", [
    ({0: [1, 1]}, "Duplicate brokers not allowed in replica assignment: 1, 1 for partition id 0."),
    ({0: [1, 9], 1: [8, 1]}, "Unknown broker(s) in replica assignment: 8, 9."),
    ({0: [1, 2], 2: [2, 1]}, "partitions should be a consecutive 0-based integer sequence"),
    ({1: [1, 2]}, "partitions should be a consecutive 0-based integer sequence"),
    ({0: [1, 2], 1: [1]}, "All partitions should have the same number of replicas."),
    ({0: []}, "Cannot have replication factor of 0 for partition id 0."),
    ([(0, [1]), (0, [2])], "Partition id 0 appears more than once in the replica assignment."),
    ({}, "The replica assignment is empty."),
])
def test_invalid_manual_assignments(assignment, expected):
    assert validate_manual_assignment(assignment, {1, 2, 3}) == expected


def test_manual_assignment_for_added_partitions():
    msg = validate_manual_assignment({2: [1, 2], 3: [1]}, {1, 2}, first_partition=2, replication_factor=2)
    assert msg == ("Inconsistent replication factor between partitions, partition 2 should have 2 while "
                   "partitions [3] have replication factors [1], respectively.")
    assert "starting at 2" in validate_manual_assignment({3: [1, 2]}, {1, 2}, first_partition=2)
