"""``__consumer_offsets``: committed offsets, classic group metadata and the state of KIP-848
consumer groups. Mirrors Kafka's <Name>Key.json / <Name>Value.json pairs in
group-coordinator/src/main/resources/common/message/: OffsetCommit (record type 1), GroupMetadata
(2), and Kafka 4's ConsumerGroupMetadata (3), ConsumerGroupPartitionMetadata (4),
ConsumerGroupMemberMetadata (5), ConsumerGroupTargetAssignmentMetadata (6),
ConsumerGroupTargetAssignmentMember (7), ConsumerGroupCurrentMemberAssignment (8) and
ConsumerGroupRegularExpression (16); types 9-15 are KIP-932's share groups.

Record type 0 is the key Kafka 0.8.2 wrote (Kafka 4 calls it LegacyOffsetCommitKey): the same
layout as type 1, read with OffsetCommitValue as Kafka 3.x reads it. Kafka 2.3+ writes key type
1 with value v3, or v1 when the commit carries an explicit expire timestamp; value v4 is the
first flexible version.
"""
from josefk.wire.internal_topics.share_groups import SHARE_GROUP_RECORDS
from josefk.wire.schema import (BYTES, INT8, INT32, INT64, STRING, UUID, Array, CoordinatorRecord,
                                CoordinatorTopic, Field, Struct)

OFFSET_COMMIT = CoordinatorRecord(1, "OffsetCommit", key=[
    Field("group", STRING),
    Field("topic", STRING),
    Field("partition", INT32),
], versions="0-4", flexible="4+", value=[
    Field("offset", INT64),
    Field("leader_epoch", INT32, "3+", default=-1),
    Field("metadata", STRING),
    Field("commit_timestamp", INT64),
    Field("expire_timestamp", INT64, "1", default=-1),
])

GROUP_METADATA = CoordinatorRecord(2, "GroupMetadata", key=[
    Field("group", STRING),
], versions="0-4", flexible="4+", value=[
    Field("protocol_type", STRING),
    Field("generation", INT32),
    Field("protocol", STRING, nullable="0+", default=None),
    Field("leader", STRING, nullable="0+", default=None),
    Field("current_state_timestamp", INT64, "2+", default=-1),
    Field("members", [
        Field("member_id", STRING),
        Field("group_instance_id", STRING, "3+", nullable="3+", default=None),
        Field("client_id", STRING),
        Field("client_host", STRING),
        Field("rebalance_timeout", INT32, "1+"),
        Field("session_timeout", INT32),
        Field("subscription", BYTES),
        Field("assignment", BYTES),
    ], struct="MemberMetadata"),
])

# -- KIP-848 consumer groups: every value is flexible, at version 0 ---------------------------
_GROUP = [Field("group_id", STRING)]
_MEMBER = [Field("group_id", STRING), Field("member_id", STRING)]

CONSUMER_GROUP_METADATA = CoordinatorRecord(3, "ConsumerGroupMetadata", key=_GROUP,
                                            versions="0", flexible="0+", value=[
    Field("epoch", INT32),
    Field("metadata_hash", INT64, tag=0, default=0),  # Kafka 4.1 (KIP-1101)
])

CONSUMER_GROUP_PARTITION_METADATA = CoordinatorRecord(4, "ConsumerGroupPartitionMetadata",
                                                      key=_GROUP, versions="0", flexible="0+",
                                                      value=[
    Field("topics", [
        Field("topic_id", UUID),
        Field("topic_name", STRING),
        Field("num_partitions", INT32),
        Field("partition_metadata", [  # racks per partition; unused since Kafka 4.0
            Field("partition", INT32),
            Field("racks", Array(STRING)),
        ], struct="PartitionMetadata"),
    ], struct="TopicMetadata"),
])

CONSUMER_GROUP_MEMBER_METADATA = CoordinatorRecord(5, "ConsumerGroupMemberMetadata", key=_MEMBER,
                                                   versions="0", flexible="0+", value=[
    Field("instance_id", STRING, nullable="0+", default=None),
    Field("rack_id", STRING, nullable="0+", default=None),
    Field("client_id", STRING),
    Field("client_host", STRING),
    Field("subscribed_topic_names", Array(STRING)),
    Field("subscribed_topic_regex", STRING, nullable="0+", default=None),
    Field("rebalance_timeout_ms", INT32, default=-1),
    Field("server_assignor", STRING, nullable="0+", default=None),
    # a member that joined with JoinGroup (the classic protocol) inside a consumer group
    Field("classic_member_metadata", Struct([
        Field("session_timeout_ms", INT32),
        Field("supported_protocols", [
            Field("name", STRING),
            Field("metadata", BYTES),
        ], struct="ClassicProtocol"),
    ]), tag=0, nullable="0+", default=None, struct="ClassicMemberMetadata"),
])

CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA = CoordinatorRecord(
    6, "ConsumerGroupTargetAssignmentMetadata", key=_GROUP, versions="0", flexible="0+", value=[
        Field("assignment_epoch", INT32),
    ])

CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER = CoordinatorRecord(
    7, "ConsumerGroupTargetAssignmentMember", key=_MEMBER, versions="0", flexible="0+", value=[
        Field("topic_partitions", [
            Field("topic_id", UUID),
            Field("partitions", Array(INT32)),
        ], struct="TopicPartition"),
    ])

_TOPIC_PARTITIONS = [Field("topic_id", UUID), Field("partitions", Array(INT32))]

CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT = CoordinatorRecord(
    8, "ConsumerGroupCurrentMemberAssignment", key=_MEMBER, versions="0", flexible="0+", value=[
        Field("member_epoch", INT32),
        Field("previous_member_epoch", INT32),
        Field("state", INT8),
        Field("assigned_partitions", _TOPIC_PARTITIONS, struct="TopicPartitions"),
        Field("partitions_pending_revocation", _TOPIC_PARTITIONS, struct="TopicPartitions"),
    ])

CONSUMER_GROUP_REGULAR_EXPRESSION = CoordinatorRecord(
    16, "ConsumerGroupRegularExpression", key=[
        Field("group_id", STRING),
        Field("regular_expression", STRING),
    ], versions="0", flexible="0+", value=[
        Field("topics", Array(STRING)),
        Field("version", INT64),
        Field("timestamp", INT64),
    ])

CONSUMER_GROUP_RECORDS = (CONSUMER_GROUP_METADATA, CONSUMER_GROUP_PARTITION_METADATA,
                          CONSUMER_GROUP_MEMBER_METADATA, CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA,
                          CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER,
                          CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT,
                          CONSUMER_GROUP_REGULAR_EXPRESSION)

CONSUMER_OFFSETS = CoordinatorTopic("__consumer_offsets",
                                    [OFFSET_COMMIT, GROUP_METADATA, *CONSUMER_GROUP_RECORDS,
                                     *SHARE_GROUP_RECORDS],
                                    aliases={0: OFFSET_COMMIT})
