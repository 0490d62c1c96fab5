"""The share-group records of ``__consumer_offsets`` (KIP-932), as Kafka's group coordinator
writes them. Mirrors ShareGroupMemberMetadata (record type 10), ShareGroupMetadata (11),
ShareGroupTargetAssignmentMetadata (12), ShareGroupTargetAssignmentMember (13),
ShareGroupCurrentMemberAssignment (14) and ShareGroupStatePartitionMetadata (15), Key/Value.json
each, in group-coordinator/src/main/resources/common/message/.

A share group's epoch and the hash of its subscribed topics' metadata are its metadata record;
each member's subscription, its target assignment and its current epoch and assignment are its
member records (so a coordinator that takes the group over knows the members); the
share-partitions whose state the group has initialized (and the topics whose state is being
deleted) are its state-partition record.
"""
from josefk.wire.schema import INT8, INT32, INT64, STRING, UUID, Array, CoordinatorRecord, Field

_GROUP = [Field("group_id", STRING)]
_MEMBER = [Field("group_id", STRING), Field("member_id", STRING)]
_TOPIC_PARTITIONS = [Field("topic_id", UUID), Field("partitions", Array(INT32))]

SHARE_GROUP_MEMBER_METADATA = CoordinatorRecord(10, "ShareGroupMemberMetadata", key=_MEMBER,
                                                versions="0", flexible="0+", value=[
    Field("rack_id", STRING, nullable="0+", default=None),
    Field("client_id", STRING),
    Field("client_host", STRING),
    Field("subscribed_topic_names", Array(STRING)),
])

SHARE_GROUP_TARGET_ASSIGNMENT_METADATA = CoordinatorRecord(
    12, "ShareGroupTargetAssignmentMetadata", key=_GROUP, versions="0", flexible="0+", value=[
        Field("assignment_epoch", INT32),
    ])

SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER = CoordinatorRecord(
    13, "ShareGroupTargetAssignmentMember", key=_MEMBER, versions="0", flexible="0+", value=[
        Field("topic_partitions", _TOPIC_PARTITIONS, struct="TopicPartition"),
    ])

SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT = CoordinatorRecord(
    14, "ShareGroupCurrentMemberAssignment", key=_MEMBER, versions="0", flexible="0+", value=[
        Field("member_epoch", INT32),
        Field("previous_member_epoch", INT32),
        Field("state", INT8),
        Field("assigned_partitions", _TOPIC_PARTITIONS, struct="TopicPartitions"),
    ])

SHARE_GROUP_METADATA = CoordinatorRecord(11, "ShareGroupMetadata", key=_GROUP,
                                         versions="0", flexible="0+", value=[
    Field("epoch", INT32),
    Field("metadata_hash", INT64),
])

_TOPIC_PARTITIONS_INFO = [
    Field("topic_id", UUID),
    Field("topic_name", STRING),
    Field("partitions", Array(INT32)),
    Field("create_timestamp", INT64),
]

SHARE_GROUP_STATE_PARTITION_METADATA = CoordinatorRecord(
    15, "ShareGroupStatePartitionMetadata", key=_GROUP, versions="0", flexible="0+", value=[
        Field("initializing_topics", _TOPIC_PARTITIONS_INFO, struct="TopicPartitionsInfo"),
        Field("initialized_topics", _TOPIC_PARTITIONS_INFO, struct="TopicPartitionsInfo"),
        Field("deleting_topics", [
            Field("topic_id", UUID),
            Field("topic_name", STRING),
        ], struct="TopicInfo"),
    ])

SHARE_GROUP_RECORDS = [SHARE_GROUP_MEMBER_METADATA, SHARE_GROUP_METADATA,
                       SHARE_GROUP_TARGET_ASSIGNMENT_METADATA, SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER,
                       SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT, SHARE_GROUP_STATE_PARTITION_METADATA]
