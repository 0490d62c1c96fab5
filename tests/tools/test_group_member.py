"""The console consumer's group-member pieces that need no broker: Kafka's range assignment
and the consumer protocol's Subscription / Assignment bytes."""
import pytest

from josefk.tools.group_member import range_assign
from josefk.tools.groups_cli import decode_assignment
from josefk.wire.apis.consumer_protocol import ASSIGNMENT, SUBSCRIPTION


def test_range_assign_gives_contiguous_ranges_first_members_one_more():
    # As Kafka's RangeAssignorTest: per topic, subscribers in member id order.
    got = range_assign({"c2": {"t1", "t2"}, "c1": {"t1", "t2"}}, {"t1": [0, 1, 2],
                                                                   "t2": [0, 1, 2]})
    assert got == {"c1": {"t1": [0, 1], "t2": [0, 1]}, "c2": {"t1": [2], "t2": [2]}}


def test_range_assign_only_subscribers_and_more_members_than_partitions():
    got = range_assign({"a": {"t"}, "b": {"t"}, "c": {"t", "u"}}, {"t": [0, 1], "u": [0, 1, 2],
                                                                   "v": [0]})
    assert got == {"a": {"t": [0]}, "b": {"t": [1]}, "c": {"u": [0, 1, 2]}}
    assert range_assign({}, {"t": [0]}) == {}


def test_subscription_bytes_are_kafkas_layout():
    # version INT16, topics [STRING], user data (null: length -1)
    want = b"\x00\x00" + b"\x00\x00\x00\x01" + b"\x00\x01x" + b"\xff\xff\xff\xff"
    assert SUBSCRIPTION.to_bytes(0, topics=["x"]) == want
    assert SUBSCRIPTION.from_bytes(want).topics == ["x"]


def test_subscription_of_later_versions_and_newer_than_known():
    TP = SUBSCRIPTION.Struct.TopicPartition
    v3 = SUBSCRIPTION.to_bytes(3, topics=["a", "b"], owned_partitions=[TP(topic="a",
                                                                         partitions=[1, 2])],
                               generation_id=7, rack_id="r1")
    s = SUBSCRIPTION.from_bytes(v3)
    assert (s.topics, s.owned_partitions[0].partitions, s.generation_id, s.rack_id) == \
        (["a", "b"], [1, 2], 7, "r1")
    # A version this code does not know is read with the newest layout it does (Kafka's rule:
    # later versions only append fields).
    future = SUBSCRIPTION.from_bytes(b"\x00\x09" + v3[2:] + b"more fields")
    assert future.topics == ["a", "b"] and future.rack_id == "r1"


def test_assignment_roundtrip_and_decode_assignment():
    TP = ASSIGNMENT.Struct.TopicPartition
    data = ASSIGNMENT.to_bytes(0, assigned_partitions=[TP(topic="t", partitions=[0, 3]),
                                                       TP(topic="u", partitions=[1])])
    assert data[:2] == b"\x00\x00"
    assert decode_assignment(data) == [("t", 0), ("t", 3), ("u", 1)]
    # Not a consumer assignment (another protocol type, or empty): no partitions.
    assert decode_assignment(b"") == [] and decode_assignment(b"\x00\x00\x00\x00\x00\x09") == []
    with pytest.raises(ValueError):
        ASSIGNMENT.from_bytes(b"\xff\xff")
