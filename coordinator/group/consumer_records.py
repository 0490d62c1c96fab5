"""A consumer group's records as Kafka writes them on ``__consumer_offsets``.

Maps each :class:`coordinator.group.consumer_group.Record` to the key and value bytes of its declared
record type (``wire.internal_topics.consumer_offsets``: ConsumerGroupMetadata,
ConsumerGroupPartitionMetadata, ...MemberMetadata, ...TargetAssignmentMetadata,
...TargetAssignmentMember, ...CurrentMemberAssignment, ...RegularExpression, all at value version
0), and decoded records back; and builds the records that write or remove a whole group.

Must not know: how the protocol decides what to write (``coordinator.group.consumer_groups``).
"""
from __future__ import annotations

from josefk.wire.internal_topics import consumer_offsets as co

from .consumer_group import (CURRENT_ASSIGNMENT, GROUP_EPOCH, MEMBER_METADATA, REGULAR_EXPRESSION,
                             SUBSCRIPTION_METADATA, TARGET_EPOCH, TARGET_MEMBER, ClassicMetadata,
                             ConsumerGroup, MemberAssignment, MemberMetadata, Record,
                             ResolvedRegex, TopicMetadata)

DECLARED = {
    GROUP_EPOCH: co.CONSUMER_GROUP_METADATA,
    SUBSCRIPTION_METADATA: co.CONSUMER_GROUP_PARTITION_METADATA,
    MEMBER_METADATA: co.CONSUMER_GROUP_MEMBER_METADATA,
    TARGET_EPOCH: co.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA,
    TARGET_MEMBER: co.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER,
    CURRENT_ASSIGNMENT: co.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT,
    REGULAR_EXPRESSION: co.CONSUMER_GROUP_REGULAR_EXPRESSION,
}
_MEMBER_KEYED = (MEMBER_METADATA, TARGET_MEMBER, CURRENT_ASSIGNMENT)
VALUE_VERSION = 0


def is_consumer_group_record(declared) -> bool:
    return declared.type in DECLARED


# ---------------------------------------------------------------------------------------------
# writing

def encode(record: Record) -> tuple[bytes, bytes | None]:
    """The key and value (None: a tombstone) of ``record``."""
    declared = DECLARED[record.type]
    if record.type in _MEMBER_KEYED:
        key = declared.key(group_id=record.group_id, member_id=record.key)
    elif record.type == REGULAR_EXPRESSION:
        key = declared.key(group_id=record.group_id, regular_expression=record.key)
    else:
        key = declared.key(group_id=record.group_id)
    if record.value is None:
        return key, None
    return key, declared.value(VALUE_VERSION, **_value_fields(record.type, record.value))


def _value_fields(kind, v) -> dict:
    if kind == GROUP_EPOCH:
        return {"epoch": v}
    if kind == TARGET_EPOCH:
        return {"assignment_epoch": v}
    if kind == SUBSCRIPTION_METADATA:
        T = co.CONSUMER_GROUP_PARTITION_METADATA.Value.TopicMetadata
        return {"topics": [T(topic_id=m.topic_id, topic_name=m.name,
                             num_partitions=m.num_partitions, partition_metadata=[])
                           for _, m in sorted(v.items())]}
    if kind == MEMBER_METADATA:
        V = co.CONSUMER_GROUP_MEMBER_METADATA.Value
        classic = None
        if v.classic is not None:
            classic = V.ClassicMemberMetadata(
                session_timeout_ms=v.classic.session_timeout_ms,
                supported_protocols=[V.ClassicProtocol(name=n, metadata=m)
                                     for n, m in v.classic.protocols])
        return {"instance_id": v.instance_id, "rack_id": v.rack_id, "client_id": v.client_id,
                "client_host": v.client_host, "subscribed_topic_names": list(v.topic_names),
                "subscribed_topic_regex": v.topic_regex,
                "rebalance_timeout_ms": v.rebalance_timeout_ms,
                "server_assignor": v.server_assignor, "classic_member_metadata": classic}
    if kind == TARGET_MEMBER:
        return {"topic_partitions": _topic_partitions(
            co.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER.Value.TopicPartition, v)}
    if kind == CURRENT_ASSIGNMENT:
        T = co.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT.Value.TopicPartitions
        return {"member_epoch": v.epoch, "previous_member_epoch": v.previous_epoch,
                "state": v.state, "assigned_partitions": _topic_partitions(T, v.assigned),
                "partitions_pending_revocation": _topic_partitions(T, v.revoking)}
    return {"topics": sorted(v.topics), "version": v.version, "timestamp": v.timestamp}


def _topic_partitions(klass, partitions: dict) -> list:
    return [klass(topic_id=t, partitions=sorted(ps))
            for t, ps in sorted(partitions.items(), key=lambda kv: str(kv[0])) if ps]


# ---------------------------------------------------------------------------------------------
# reading

def decode(declared, key, value) -> Record:
    """The Record of a decoded key (``declared``'s Key struct) and the value's bytes (None for
    a tombstone). Raises DecodeError when the value does not hold the declared layout."""
    kind = declared.type
    sub = (key.member_id if kind in _MEMBER_KEYED else
           key.regular_expression if kind == REGULAR_EXPRESSION else None)
    if value is None:
        return Record(kind, key.group_id, sub, None)
    _version, v = declared.read_value(value)
    return Record(kind, key.group_id, sub, _model_value(kind, v))


def _model_value(kind, v):
    if kind == GROUP_EPOCH:
        return v.epoch
    if kind == TARGET_EPOCH:
        return v.assignment_epoch
    if kind == SUBSCRIPTION_METADATA:
        return {t.topic_name: TopicMetadata(t.topic_id, t.topic_name, t.num_partitions)
                for t in v.topics}
    if kind == MEMBER_METADATA:
        c = v.classic_member_metadata
        classic = None if c is None else ClassicMetadata(
            c.session_timeout_ms, tuple((p.name, bytes(p.metadata)) for p in c.supported_protocols))
        return MemberMetadata(v.instance_id, v.rack_id, v.client_id, v.client_host,
                              tuple(sorted(v.subscribed_topic_names)), v.subscribed_topic_regex,
                              v.rebalance_timeout_ms, v.server_assignor, classic)
    if kind == TARGET_MEMBER:
        return _partitions(v.topic_partitions)
    if kind == CURRENT_ASSIGNMENT:
        return MemberAssignment(v.member_epoch, v.previous_member_epoch, v.state,
                                _partitions(v.assigned_partitions),
                                _partitions(v.partitions_pending_revocation))
    return ResolvedRegex(frozenset(v.topics), v.version, v.timestamp)


def _partitions(topic_partitions) -> dict:
    return {tp.topic_id: frozenset(tp.partitions) for tp in topic_partitions if tp.partitions}


# ---------------------------------------------------------------------------------------------
# whole groups

_REPLAY_ORDER = {GROUP_EPOCH: 0, SUBSCRIPTION_METADATA: 1, REGULAR_EXPRESSION: 2,
                 MEMBER_METADATA: 3, TARGET_MEMBER: 4, TARGET_EPOCH: 5, CURRENT_ASSIGNMENT: 6}


def replay(group_id: str, records, now_ms: int) -> ConsumerGroup | None:
    """The group the latest records of each of its keys describe (as a compacted log keeps
    them), None when they only remove it."""
    live = [r for r in records if r.value is not None]
    if not live:
        return None
    group = ConsumerGroup(group_id, now_ms)
    for r in sorted(live, key=lambda r: _REPLAY_ORDER[r.type]):
        group.apply(r, now_ms)
    return group


def group_records(group: ConsumerGroup) -> list[Record]:
    """Records that write ``group`` whole (a group converted from the classic protocol)."""
    gid = group.group_id
    out = [Record(MEMBER_METADATA, gid, mid, m.meta) for mid, m in group.members.items()]
    out.append(Record(GROUP_EPOCH, gid, None, group.group_epoch))
    out += [Record(TARGET_MEMBER, gid, mid, group.targets.get(mid, {})) for mid in group.members]
    out.append(Record(TARGET_EPOCH, gid, None, group.assignment_epoch))
    out += [Record(CURRENT_ASSIGNMENT, gid, mid, m.current) for mid, m in group.members.items()]
    return out


def member_tombstones(group_id: str, member_id: str) -> list[Record]:
    """The records that remove a member, in Kafka's order: its assignment, its target, its
    subscription."""
    return [Record(CURRENT_ASSIGNMENT, group_id, member_id, None),
            Record(TARGET_MEMBER, group_id, member_id, None),
            Record(MEMBER_METADATA, group_id, member_id, None)]


def group_tombstones(group: ConsumerGroup) -> list[Record]:
    """The records that remove ``group`` and all its members."""
    gid = group.group_id
    out = [Record(CURRENT_ASSIGNMENT, gid, mid, None) for mid in group.members]
    out += [Record(TARGET_MEMBER, gid, mid, None) for mid in group.members]
    out.append(Record(TARGET_EPOCH, gid, None, None))
    out += [Record(MEMBER_METADATA, gid, mid, None) for mid in group.members]
    out += [Record(REGULAR_EXPRESSION, gid, r, None) for r in group.regexes]
    out.append(Record(SUBSCRIPTION_METADATA, gid, None, None))
    out.append(Record(GROUP_EPOCH, gid, None, None))
    return out
