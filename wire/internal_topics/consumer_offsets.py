"""``__consumer_offsets``: committed offsets and classic group metadata. Mirrors Kafka's
OffsetCommitKey.json / OffsetCommitValue.json (record type 1) and GroupMetadataKey.json /
GroupMetadataValue.json (record type 2), in group-coordinator/src/main/resources/common/message/.

Record type 0 is the key Kafka 0.8.2 wrote (Kafka 4 calls it LegacyOffsetCommitKey): the same
layout as type 1, read with OffsetCommitValue as Kafka 3.x reads it. Kafka 2.3+ writes key type
1 with value v3, or v1 when the commit carries an explicit expire timestamp; value v4 is the
first flexible version.
"""
from josefk.wire.internal_topics.share_groups import SHARE_GROUP_RECORDS
from josefk.wire.schema import (BYTES, INT32, INT64, STRING, CoordinatorRecord, CoordinatorTopic,
                                Field)

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

CONSUMER_OFFSETS = CoordinatorTopic("__consumer_offsets",
                                    [OFFSET_COMMIT, GROUP_METADATA, *SHARE_GROUP_RECORDS],
                                    aliases={0: OFFSET_COMMIT})
