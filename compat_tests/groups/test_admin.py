"""Group administration through confluent-kafka's AdminClient (ListGroups, DescribeGroups,
OffsetFetch, OffsetCommit, DeleteGroups).  confluent-kafka's Python AdminClient does not
expose OffsetDelete, so delete-offsets goes through kafka-python's KafkaAdminClient."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import (ConsumerGroupState, ConsumerGroupTopicPartitions, KafkaError,
                             KafkaException, TopicPartition)
from kafka import KafkaAdminClient
from kafka import TopicPartition as KTopicPartition
from kafka import errors as kerrors

from compat_tests.helpers import (
    GroupMember,
    admin_client,
    balanced,
    close_all,
    consumer,
    poll_until,
    unique_topic,
    wait_group_state,
)

pytestmark = pytest.mark.timeout(60)

OFFSET_INVALID = -1001  # librdkafka's "no committed offset"


def _commit_simple(bootstrap, group, topic, offsets: dict):
    """Commit offsets {partition: offset} for `group` without joining it (a 'simple' group)."""
    c = consumer(bootstrap, **{"group.id": group})
    try:
        res = c.commit(offsets=[TopicPartition(topic, p, o) for p, o in offsets.items()],
                       asynchronous=False)
        assert all(tp.error is None for tp in res), res
    finally:
        c.close()


def _listed(admin, states=None) -> dict:
    kw = {"states": states} if states is not None else {}
    res = admin.list_consumer_groups(request_timeout=10, **kw).result(15)
    assert res.errors == [], res.errors
    return {g.group_id: g for g in res.valid}


def _group_offsets(admin, group, partitions=None) -> dict:
    req = ConsumerGroupTopicPartitions(group, partitions)
    res = admin.list_consumer_group_offsets([req], request_timeout=10)[group].result(15)
    assert res.group_id == group
    assert all(tp.error is None for tp in res.topic_partitions), res.topic_partitions
    return {(tp.topic, tp.partition): tp.offset for tp in res.topic_partitions}


def _kp_admin(target):
    return KafkaAdminClient(bootstrap_servers=target.bootstrap, request_timeout_ms=15000)


def test_list_and_describe_consumer_groups(target):
    topic = target.create_topic(unique_topic("adm"), 4)
    active = unique_topic("adm-active")
    simple = unique_topic("adm-simple")
    admin = admin_client(target.bootstrap)

    _commit_simple(target.bootstrap, simple, topic, {0: 3})
    members = [GroupMember(target.bootstrap, active, [topic], name="adm-c0"),
               GroupMember(target.bootstrap, active, [topic], name="adm-c1",
                           **{"group.instance.id": "adm-static"})]
    try:
        poll_until(members, lambda: balanced(members, {(topic, p) for p in range(4)}), 30,
                   "2 members sharing 4 partitions")

        listed = _listed(admin)
        assert listed[active].state == ConsumerGroupState.STABLE
        assert listed[active].is_simple_consumer_group is False
        assert listed[simple].state == ConsumerGroupState.EMPTY
        assert listed[simple].is_simple_consumer_group is True
        stable = _listed(admin, {ConsumerGroupState.STABLE})
        assert active in stable and simple not in stable
        assert all(g.state == ConsumerGroupState.STABLE for g in stable.values())
        empty = _listed(admin, {ConsumerGroupState.EMPTY})
        assert simple in empty and active not in empty
        both = _listed(admin, {ConsumerGroupState.EMPTY, ConsumerGroupState.STABLE})
        assert {active, simple} <= set(both)

        d = admin.describe_consumer_groups([active], request_timeout=10)[active].result(15)
        assert d.group_id == active
        assert d.state == ConsumerGroupState.STABLE
        assert d.is_simple_consumer_group is False
        assert d.partition_assignor == "range"
        coordinator = target.brokers[d.coordinator.id]
        assert (d.coordinator.host, d.coordinator.port) == (coordinator.host, coordinator.port)
        by_client = {m.client_id: m for m in d.members}
        assert sorted(by_client) == ["adm-c0", "adm-c1"]
        for mem in members:
            md = by_client[mem.name]
            assert md.host == "/127.0.0.1"  # Kafka's form: InetAddress.toString()
            assert md.member_id.startswith(
                ("adm-static-" if mem.name == "adm-c1" else mem.name + "-"))
            assert {(tp.topic, tp.partition) for tp in md.assignment.topic_partitions} == \
                mem.assignment()
        assert by_client["adm-c0"].group_instance_id is None
        assert by_client["adm-c1"].group_instance_id == "adm-static"

        d = admin.describe_consumer_groups([simple], request_timeout=10)[simple].result(15)
        assert (d.state, d.members, d.is_simple_consumer_group) == \
            (ConsumerGroupState.EMPTY, [], True)
    finally:
        close_all(members[::-1])  # the static member first: it cannot rejoin in between

    # The dynamic member left (LeaveGroup), the static one did not (KIP-345): the group
    # waits in PreparingRebalance for it until its session times out (6 s), then is Empty.
    closed = time.monotonic()

    def describe():
        return admin.describe_consumer_groups([active], request_timeout=10)[active].result(15)

    d = describe()
    while len(d.members) > 1 and time.monotonic() - closed < 3:
        time.sleep(0.1)
        d = describe()
    assert [m.group_instance_id for m in d.members] == ["adm-static"]
    assert d.state == ConsumerGroupState.PREPARING_REBALANCING
    # like Kafka's GroupMetadata.summary: outside Stable no protocol, no member assignment
    assert d.partition_assignor == ""
    assert [m.assignment.topic_partitions for m in d.members] == [[]]
    while d.state != ConsumerGroupState.EMPTY and time.monotonic() - closed < 15:
        time.sleep(0.2)
        d = describe()
    took = time.monotonic() - closed
    assert (d.state, d.members) == (ConsumerGroupState.EMPTY, []), vars(d)
    assert 4.5 <= took <= 10, f"static member evicted {took:.1f}s after it closed"


def test_describe_unknown_group(target):
    """DescribeGroups (v0-5) answers an unknown group with no error, state Dead, no members;
    librdkafka passes that on as is."""
    admin = admin_client(target.bootstrap)
    group = unique_topic("adm-nobody")
    d = admin.describe_consumer_groups([group], request_timeout=10)[group].result(15)
    assert (d.group_id, d.state, d.members, d.partition_assignor) == \
        (group, ConsumerGroupState.DEAD, [], "")
    assert group not in _listed(admin)
    assert _group_offsets(admin, group) == {}


def test_list_and_alter_group_offsets(target):
    topic = target.create_topic(unique_topic("admoff"), 3)
    group = unique_topic("adm-off")
    admin = admin_client(target.bootstrap)
    _commit_simple(target.bootstrap, group, topic, {0: 5, 2: 7})

    assert _group_offsets(admin, group) == {(topic, 0): 5, (topic, 2): 7}
    assert _group_offsets(admin, group, [TopicPartition(topic, p) for p in range(3)]) == \
        {(topic, 0): 5, (topic, 1): OFFSET_INVALID, (topic, 2): 7}

    # the group is empty: offsets can be altered
    req = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 1, 11),
                                               TopicPartition(topic, 2, 2)])
    res = admin.alter_consumer_group_offsets([req], request_timeout=10)[group].result(15)
    assert sorted((tp.partition, tp.offset, tp.error) for tp in res.topic_partitions) == \
        [(1, 11, None), (2, 2, None)]
    assert _group_offsets(admin, group) == {(topic, 0): 5, (topic, 1): 11, (topic, 2): 2}

    # a consumer joins: altering offsets of an active group is refused (Kafka: the
    # generation-less commit of a non-empty group fails with UNKNOWN_MEMBER_ID)
    m = GroupMember(target.bootstrap, group, [topic], name="adm-live")
    try:
        poll_until([m], lambda: len(m.assignment()) == 3, 30, "member owning all")
        req = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0, 1)])
        fut = admin.alter_consumer_group_offsets([req], request_timeout=10)[group]
        with pytest.raises(KafkaException) as ei:
            res = fut.result(15)
            # some client versions report it per partition instead
            errs = [tp.error for tp in res.topic_partitions if tp.error is not None]
            raise KafkaException(errs[0]) if errs else AssertionError(f"accepted: {res}")
        assert ei.value.args[0].code() == KafkaError.UNKNOWN_MEMBER_ID, ei.value
        assert _group_offsets(admin, group)[(topic, 0)] == 5
    finally:
        m.close()


def test_delete_group_offsets(target):
    topic = target.create_topic(unique_topic("admdel"), 2)
    other = target.create_topic(unique_topic("admother"), 1)
    group = unique_topic("adm-deloff")
    admin = admin_client(target.bootstrap)
    _commit_simple(target.bootstrap, group, topic, {0: 4, 1: 6})
    _commit_simple(target.bootstrap, group, other, {0: 9})
    kp = _kp_admin(target)
    m = None
    try:
        # a member subscribed to `topic`: its offsets cannot be deleted, `other`'s can
        m = GroupMember(target.bootstrap, group, [topic], name="adm-sub")
        poll_until([m], lambda: len(m.assignment()) == 2, 30, "member owning both")
        res = kp.delete_group_offsets(group, [KTopicPartition(topic, 0),
                                              KTopicPartition(other, 0)])
        assert res == {KTopicPartition(topic, 0): kerrors.GroupSubscribedToTopicError,
                       KTopicPartition(other, 0): kerrors.NoError}
        assert _group_offsets(admin, group) == {(topic, 0): 4, (topic, 1): 6}
        m.close()
        wait_group_state(admin, group, ConsumerGroupState.EMPTY)

        # empty now: deletion works
        res = kp.delete_group_offsets(group, [KTopicPartition(topic, 0)])
        assert res == {KTopicPartition(topic, 0): kerrors.NoError}
        assert _group_offsets(admin, group) == {(topic, 1): 6}

        with pytest.raises(kerrors.GroupIdNotFoundError):
            kp.delete_group_offsets(unique_topic("adm-nobody"), [KTopicPartition(topic, 0)])
    finally:
        if m is not None:
            m.close()
        kp.close()


def test_delete_consumer_groups(target):
    topic = target.create_topic(unique_topic("admdg"), 2)
    group = unique_topic("adm-delgrp")
    unknown = unique_topic("adm-unknown")
    admin = admin_client(target.bootstrap)
    m = GroupMember(target.bootstrap, group, [topic], name="adm-dg", commit_each=True)
    try:
        poll_until([m], lambda: len(m.assignment()) == 2, 30, "member owning both")
        m.call(lambda c: c.commit(offsets=[TopicPartition(topic, 0, 0)], asynchronous=False))

        futs = admin.delete_consumer_groups([group, unknown], request_timeout=10)
        with pytest.raises(KafkaException) as ei:
            futs[group].result(15)
        assert ei.value.args[0].code() == KafkaError.NON_EMPTY_GROUP
        with pytest.raises(KafkaException) as ei:
            futs[unknown].result(15)
        assert ei.value.args[0].code() == KafkaError.GROUP_ID_NOT_FOUND
        assert group in _listed(admin)
    finally:
        m.close()

    wait_group_state(admin, group, ConsumerGroupState.EMPTY)
    assert _listed(admin)[group].state == ConsumerGroupState.EMPTY
    assert admin.delete_consumer_groups([group], request_timeout=10)[group].result(15) is None
    assert group not in _listed(admin)
    assert _group_offsets(admin, group, [TopicPartition(topic, 0)]) == \
        {(topic, 0): OFFSET_INVALID}
    # deleting it again: it is gone
    with pytest.raises(KafkaException) as ei:
        admin.delete_consumer_groups([group], request_timeout=10)[group].result(15)
    assert ei.value.args[0].code() == KafkaError.GROUP_ID_NOT_FOUND


def test_remove_static_member_by_instance_id(target):
    """LeaveGroup v3+ from an admin client (kafka-python's remove_group_members; confluent's
    Python AdminClient has no such call): the static member is removed at once (no session
    timeout wait), the other member gets all partitions; an unknown instance id is refused
    with UNKNOWN_MEMBER_ID for that member only."""
    from kafka.admin import MemberToRemove

    topic = target.create_topic(unique_topic("admrm"), 4)
    group = unique_topic("adm-remove")
    everything = {(topic, p) for p in range(4)}
    static = GroupMember(target.bootstrap, group, [topic], name="adm-rm-static",
                         **{"group.instance.id": "rm-static", "session.timeout.ms": 30000})
    dyn = GroupMember(target.bootstrap, group, [topic], name="adm-rm-dyn")
    members = [static, dyn]
    kp = _kp_admin(target)
    try:
        poll_until(members, lambda: balanced(members, everything), 30, "2 members sharing")
        static.close()  # no LeaveGroup from a static member: it would stay 30 s
        members = [dyn]
        res = kp.remove_group_members(group, [
            MemberToRemove(group_instance_id="rm-static"),
            MemberToRemove(group_instance_id="rm-nobody")])
        assert res == {"rm-static": kerrors.NoError, "rm-nobody": kerrors.UnknownMemberIdError}
        took = poll_until(members, lambda: dyn.assignment() == everything, 10, "dyn owning all")
        assert took < 8, f"{took:.1f}s"
        admin = admin_client(target.bootstrap)
        d = admin.describe_consumer_groups([group], request_timeout=10)[group].result(15)
        assert [m.client_id for m in d.members] == ["adm-rm-dyn"]
    finally:
        close_all([static, dyn])
        kp.close()


def test_list_groups_type_filter_and_describe_type(target):
    """ListGroups v5 types filter (KIP-848): a group of classic members is a classic group."""
    from confluent_kafka import ConsumerGroupType

    topic = target.create_topic(unique_topic("admtype"), 1)
    group = unique_topic("adm-type")
    admin = admin_client(target.bootstrap)
    m = GroupMember(target.bootstrap, group, [topic], name="adm-type")
    try:
        poll_until([m], lambda: len(m.assignment()) == 1, 30, "member assigned")
        classic = admin.list_consumer_groups(
            types={ConsumerGroupType.CLASSIC}, request_timeout=10).result(15)
        assert classic.errors == []
        mine = [g for g in classic.valid if g.group_id == group]
        assert [(g.type, g.state) for g in mine] == \
            [(ConsumerGroupType.CLASSIC, ConsumerGroupState.STABLE)]
        consumer_type = admin.list_consumer_groups(
            types={ConsumerGroupType.CONSUMER}, request_timeout=10).result(15)
        assert consumer_type.errors == []
        assert all(g.type == ConsumerGroupType.CONSUMER for g in consumer_type.valid)
        assert group not in {g.group_id for g in consumer_type.valid}
        d = admin.describe_consumer_groups([group], request_timeout=10)[group].result(15)
        assert d.type == ConsumerGroupType.CLASSIC
    finally:
        m.close()


def test_describe_group_authorized_operations(target):
    from confluent_kafka.admin import AclOperation

    topic = target.create_topic(unique_topic("admops"), 1)
    group = unique_topic("adm-ops")
    _commit_simple(target.bootstrap, group, topic, {0: 1})
    admin = admin_client(target.bootstrap)
    d = admin.describe_consumer_groups([group], include_authorized_operations=True,
                                       request_timeout=10)[group].result(15)
    assert set(d.authorized_operations or []) == \
        {AclOperation.READ, AclOperation.DELETE, AclOperation.DESCRIBE}
    # not asked for: not answered
    d = admin.describe_consumer_groups([group], request_timeout=10)[group].result(15)
    assert d.authorized_operations is None


def test_delete_group_offsets_of_unknown_topic_or_partition(target):
    topic = target.create_topic(unique_topic("admdelu"), 2)
    group = unique_topic("adm-delu")
    missing = unique_topic("adm-missing")
    _commit_simple(target.bootstrap, group, topic, {0: 4, 1: 6})
    kp = _kp_admin(target)
    try:
        res = kp.delete_group_offsets(group, [KTopicPartition(topic, 1),
                                              KTopicPartition(topic, 9),
                                              KTopicPartition(missing, 0)])
        assert res == {KTopicPartition(topic, 1): kerrors.NoError,
                       KTopicPartition(topic, 9): kerrors.UnknownTopicOrPartitionError,
                       KTopicPartition(missing, 0): kerrors.UnknownTopicOrPartitionError}
    finally:
        kp.close()
    assert _group_offsets(admin_client(target.bootstrap), group) == {(topic, 0): 4}
