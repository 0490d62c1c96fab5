"""The server-side assignors of KIP-848 consumer groups (coordinator/group/assignors.py)."""
from __future__ import annotations

import uuid

import pytest

from josefk.coordinator.group.assignors import (MemberSpec, assignor_names, range_assignor, uniform)

T1, T2, T3 = (uuid.UUID(int=i) for i in (1, 2, 3))


def spec(*topics, instance=None, **assignment):
    """A member subscribed to ``topics`` whose current target is ``assignment`` (T1=[0, 1])."""
    ids = {"T1": T1, "T2": T2, "T3": T3}
    return MemberSpec(instance, frozenset(topics),
                      {ids[t]: frozenset(ps) for t, ps in assignment.items()})


def flat(result):
    return {mid: sorted((str(t.int), p) for t, ps in a.items() for p in ps)
            for mid, a in result.items()}


def check_complete(result, partitions, members):
    """Every partition of a subscribed topic has exactly one owner, who subscribes to it."""
    owners = {}
    for mid, a in result.items():
        for t, ps in a.items():
            assert t in members[mid].topics
            for p in ps:
                assert (t, p) not in owners, f"{(t, p)} owned by {owners[(t, p)]} and {mid}"
                owners[(t, p)] = mid
    subscribed = set().union(*(m.topics for m in members.values()))
    assert set(owners) == {(t, p) for t in subscribed if t in partitions
                           for p in range(partitions[t])}


def sizes(result):
    return sorted(sum(len(ps) for ps in a.values()) for a in result.values())


def test_uniform_spreads_a_topic_evenly():
    members = {m: spec(T1) for m in ("a", "b", "c")}
    out = uniform(members, {T1: 7})
    check_complete(out, {T1: 7}, members)
    assert sizes(out) == [2, 2, 3]


def test_uniform_moves_only_what_balance_needs_when_a_member_joins_and_leaves():
    two = {"a": spec(T1, T2), "b": spec(T1, T2)}
    first = uniform(two, {T1: 4, T2: 2})
    assert sizes(first) == [3, 3]
    three = {mid: MemberSpec(None, frozenset({T1, T2}), first[mid]) for mid in two}
    three["c"] = spec(T1, T2)
    second = uniform(three, {T1: 4, T2: 2})
    check_complete(second, {T1: 4, T2: 2}, three)
    assert sizes(second) == [2, 2, 2]
    for mid in ("a", "b"):  # each keeps two of its three partitions
        assert len(flat(second)[mid]) == 2 and set(flat(second)[mid]) <= set(flat(first)[mid])
    # c leaves: its partitions go to the others, who keep theirs
    back = {mid: MemberSpec(None, frozenset({T1, T2}), second[mid]) for mid in ("a", "b")}
    third = uniform(back, {T1: 4, T2: 2})
    for mid in ("a", "b"):
        assert set(flat(second)[mid]) <= set(flat(third)[mid])
    assert sizes(third) == [3, 3]


def test_uniform_drops_what_no_longer_exists_or_is_no_longer_subscribed():
    members = {"a": spec(T1, T1=[0, 1, 5]), "b": spec(T1, T2=[0])}
    out = uniform(members, {T1: 4})
    check_complete(out, {T1: 4}, members)
    assert {0, 1} <= out["a"][T1]


def test_uniform_with_different_subscriptions():
    members = {"a": spec(T1), "b": spec(T1, T2), "c": spec(T2, T3), "d": spec(T3)}
    partitions = {T1: 3, T2: 3, T3: 6}
    out = uniform(members, partitions)
    check_complete(out, partitions, members)
    assert max(sizes(out)) - min(sizes(out)) <= 1
    again = uniform({m: MemberSpec(None, s.topics, out[m]) for m, s in members.items()},
                    partitions)
    assert again == out  # a stable assignment stays as it is


def test_range_is_contiguous_and_copartitioned():
    members = {"m0": spec(T1, T2), "m1": spec(T1, T2)}
    assert flat(range_assignor(members, {T1: 3, T2: 3})) == {
        "m0": [("1", 0), ("1", 1), ("2", 0), ("2", 1)], "m1": [("1", 2), ("2", 2)]}


def test_range_orders_static_members_first_by_instance_id():
    members = {"a": spec(T1), "b": spec(T1, instance="i2"), "c": spec(T1, instance="i1")}
    assert flat(range_assignor(members, {T1: 3})) == {
        "c": [("1", 0)], "b": [("1", 1)], "a": [("1", 2)]}


def test_range_with_different_subscriptions():
    members = {"a": spec(T1), "b": spec(T1, T2)}
    out = range_assignor(members, {T1: 4, T2: 2})
    check_complete(out, {T1: 4, T2: 2}, members)
    assert flat(out) == {"a": [("1", 0), ("1", 1)],
                         "b": [("1", 2), ("1", 3), ("2", 0), ("2", 1)]}


def test_members_without_partitions_are_still_answered():
    members = {m: spec(T1) for m in "abc"}
    for assign in (uniform, range_assignor):
        out = assign(members, {T1: 1})
        assert set(out) == set("abc") and sizes(out) == [0, 0, 1]
        assert assign({"a": spec(T1)}, {}) == {"a": {}}


def test_assignor_names():
    assert assignor_names("uniform,range") == ["uniform", "range"]
    assert assignor_names(" org.apache.kafka.coordinator.group.assignor.RangeAssignor ") == [
        "range"]
    with pytest.raises(ValueError, match="sticky"):
        assignor_names("uniform,sticky")
    with pytest.raises(ValueError):
        assignor_names("")
