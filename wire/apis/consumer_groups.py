"""The consumer group protocol's APIs (KIP-848). Mirror Kafka's <Name>Request.json /
<Name>Response.json.

ConsumerGroupHeartbeat (68) 0-1: v1 adds SubscribedTopicRegex and requires a member id the client
generated itself (KIP-1082). ConsumerGroupDescribe (69) 0-1: v1 adds each member's MemberType
(KIP-1099: 0 classic, 1 consumer, -1 unknown).
"""
from josefk.wire.schema import BOOL, INT8, INT16, INT32, STRING, UUID, Api, Array, Field, Struct

CONSUMER_GROUP_HEARTBEAT = Api(68, "ConsumerGroupHeartbeat", versions="0-1", flexible="0+",
                               request=[
    Field("group_id", STRING),
    Field("member_id", STRING),
    Field("member_epoch", INT32),  # 0 joins, -1 leaves, -2: a static member leaves for a while
    # null: unchanged since the previous heartbeat
    Field("instance_id", STRING, nullable="0+", default=None),
    Field("rack_id", STRING, nullable="0+", default=None),
    Field("rebalance_timeout_ms", INT32, default=-1),
    Field("subscribed_topic_names", Array(STRING), nullable="0+", default=None),
    Field("subscribed_topic_regex", STRING, "1+", nullable="1+", default=None),
    Field("server_assignor", STRING, nullable="0+", default=None),
    Field("topic_partitions", [
        Field("topic_id", UUID),
        Field("partitions", Array(INT32)),
    ], nullable="0+", default=None, struct="TopicPartitions"),
], response=[
    Field("throttle_time_ms", INT32),
    Field("error_code", INT16),
    Field("error_message", STRING, nullable="0+", default=None),
    Field("member_id", STRING, nullable="0+", default=None),
    Field("member_epoch", INT32),
    Field("heartbeat_interval_ms", INT32),
    Field("assignment", Struct([
        Field("topic_partitions", [
            Field("topic_id", UUID),
            Field("partitions", Array(INT32)),
        ], struct="TopicPartitions"),
    ]), nullable="0+", default=None, struct="Assignment"),
])

_ASSIGNMENT = Struct([
    Field("topic_partitions", [
        Field("topic_id", UUID),
        Field("topic_name", STRING),
        Field("partitions", Array(INT32)),
    ], struct="TopicPartitions"),
])

CONSUMER_GROUP_DESCRIBE = Api(69, "ConsumerGroupDescribe", versions="0-1", flexible="0+",
                              request=[
    Field("group_ids", Array(STRING)),
    Field("include_authorized_operations", BOOL),
], response=[
    Field("throttle_time_ms", INT32),
    Field("groups", [
        Field("error_code", INT16),
        Field("error_message", STRING, nullable="0+", default=None),
        Field("group_id", STRING),
        Field("group_state", STRING),
        Field("group_epoch", INT32),
        Field("assignment_epoch", INT32),
        Field("assignor_name", STRING),
        Field("members", [
            Field("member_id", STRING),
            Field("instance_id", STRING, nullable="0+", default=None),
            Field("rack_id", STRING, nullable="0+", default=None),
            Field("member_epoch", INT32),
            Field("client_id", STRING),
            Field("client_host", STRING),
            Field("subscribed_topic_names", Array(STRING)),
            Field("subscribed_topic_regex", STRING, nullable="0+", default=None),
            Field("assignment", _ASSIGNMENT, struct="Assignment"),
            Field("target_assignment", _ASSIGNMENT, struct="Assignment"),
            Field("member_type", INT8, "1+", default=-1),
        ], struct="Member"),
        Field("authorized_operations", INT32, default=-2147483648),
    ], struct="DescribedGroup"),
])
