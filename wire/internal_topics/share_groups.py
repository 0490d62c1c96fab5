"""The share-group records of ``__consumer_offsets`` (KIP-932), as Kafka's group coordinator
writes them. Mirrors ShareGroupMetadataKey/Value.json (record type 11) and
ShareGroupStatePartitionMetadataKey/Value.json (record type 15), in group-coordinator/src/main/
resources/common/message/.

A share group's epoch and the hash of its subscribed topics' metadata are its metadata record;
the share-partitions whose state the group has initialized (and the topics whose state is being
deleted) are its state-partition record. josefk keeps the members themselves in memory only: a
coordinator that takes over a group answers its members UNKNOWN_MEMBER_ID and they join again.
"""
from josefk.wire.schema import INT32, INT64, STRING, UUID, Array, CoordinatorRecord, Field

SHARE_GROUP_METADATA = CoordinatorRecord(11, "ShareGroupMetadata", key=[
    Field("group_id", STRING),
], versions="0", flexible="0+", value=[
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
    15, "ShareGroupStatePartitionMetadata", key=[
        Field("group_id", STRING),
    ], versions="0", flexible="0+", value=[
        Field("initializing_topics", _TOPIC_PARTITIONS_INFO, struct="TopicPartitionsInfo"),
        Field("initialized_topics", _TOPIC_PARTITIONS_INFO, struct="TopicPartitionsInfo"),
        Field("deleting_topics", [
            Field("topic_id", UUID),
            Field("topic_name", STRING),
        ], struct="TopicInfo"),
    ])

SHARE_GROUP_RECORDS = [SHARE_GROUP_METADATA, SHARE_GROUP_STATE_PARTITION_METADATA]
