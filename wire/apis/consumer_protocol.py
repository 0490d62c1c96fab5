"""The ``consumer`` protocol type's member metadata (JoinGroup) and assignment (SyncGroup).
Mirror Kafka's ConsumerProtocolSubscription.json and ConsumerProtocolAssignment.json."""
from josefk.wire.schema import BYTES, INT32, STRING, Array, Data, Field

_TOPIC_PARTITION = [
    Field("topic", STRING),
    Field("partitions", Array(INT32)),
]

SUBSCRIPTION = Data("ConsumerProtocolSubscription", "0-3", [
    Field("topics", Array(STRING)),
    Field("user_data", BYTES, nullable="0+", default=None),
    Field("owned_partitions", _TOPIC_PARTITION, "1+", struct="TopicPartition"),
    Field("generation_id", INT32, "2+", default=-1),
    Field("rack_id", STRING, "3+", nullable="3+", default=None),
])

ASSIGNMENT = Data("ConsumerProtocolAssignment", "0-3", [
    Field("assigned_partitions", _TOPIC_PARTITION, struct="TopicPartition"),
    Field("user_data", BYTES, nullable="0+", default=None),
])
