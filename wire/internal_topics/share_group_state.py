"""``__share_group_state``: the state of every share-partition (KIP-932), written by the share
coordinator. Mirrors Kafka's ShareSnapshotKey.json / ShareSnapshotValue.json (record type 0) and
ShareUpdateKey.json / ShareUpdateValue.json (record type 1), in share-coordinator/src/main/
resources/common/message/.

A snapshot holds a share-partition's whole state; an update holds the state batches that changed
since, merged over the snapshot when the log is replayed. Kafka 4.2 (KIP-1226) adds the tagged
DeliveryCompleteCount to both values.
"""
from josefk.wire.schema import (INT8, INT16, INT32, INT64, STRING, UUID, CoordinatorRecord,
                                CoordinatorTopic, Field)


def _key():
    return [
        Field("group_id", STRING),
        Field("topic_id", UUID),
        Field("partition", INT32),
    ]


def _state_batches():
    return Field("state_batches", [
        Field("first_offset", INT64),
        Field("last_offset", INT64),
        Field("delivery_state", INT8),
        Field("delivery_count", INT16),
    ], struct="StateBatch")


SHARE_SNAPSHOT = CoordinatorRecord(0, "ShareSnapshot", key=_key(), versions="0", flexible="0+",
                                   value=[
    Field("snapshot_epoch", INT32),
    Field("state_epoch", INT32),
    Field("leader_epoch", INT32),
    Field("start_offset", INT64),
    Field("delivery_complete_count", INT32, tag=0, default=-1),
    Field("create_timestamp", INT64),
    Field("write_timestamp", INT64),
    _state_batches(),
])

SHARE_UPDATE = CoordinatorRecord(1, "ShareUpdate", key=_key(), versions="0", flexible="0+",
                                 value=[
    Field("snapshot_epoch", INT32),
    Field("leader_epoch", INT32),
    Field("start_offset", INT64),
    Field("delivery_complete_count", INT32, tag=0, default=-1),
    _state_batches(),
])

SHARE_GROUP_STATE = CoordinatorTopic("__share_group_state", [SHARE_SNAPSHOT, SHARE_UPDATE])
