"""DescribeCluster (key 60) 0-1 and DescribeTopicPartitions (key 75) 0.

Mirror Kafka's DescribeCluster*.json and DescribeTopicPartitions*.json. The Cursor/NextCursor
fields are nullable structs (an int8 -1/1 presence marker precedes them on the wire).
"""
from josefk.wire.schema import BOOL, INT8, INT16, INT32, STRING, UUID, Api, Array, Field, Struct

DESCRIBE_CLUSTER = Api(60, "DescribeCluster", versions="0-1", flexible="0+", request=[
    Field("include_cluster_authorized_operations", BOOL),
    Field("endpoint_type", INT8, "1+", default=1),
], response=[
    Field("throttle_time_ms", INT32),
    Field("error_code", INT16),
    Field("error_message", STRING, nullable="0+", default=None),
    Field("endpoint_type", INT8, "1+", default=1),
    Field("cluster_id", STRING),
    Field("controller_id", INT32, default=-1),
    Field("brokers", [
        Field("broker_id", INT32),
        Field("host", STRING),
        Field("port", INT32),
        Field("rack", STRING, nullable="0+", default=None),
    ], struct="DescribeClusterBroker"),
    Field("cluster_authorized_operations", INT32, default=-2147483648),
])

DESCRIBE_TOPIC_PARTITIONS = Api(75, "DescribeTopicPartitions", versions="0", flexible="0+", request=[
    Field("topics", [
        Field("name", STRING),
    ], struct="TopicRequest"),
    Field("response_partition_limit", INT32, default=2000),
    Field("cursor", Struct([
        Field("topic_name", STRING),
        Field("partition_index", INT32),
    ]), nullable="0+", default=None, struct="Cursor"),
], response=[
    Field("throttle_time_ms", INT32),
    Field("topics", [
        Field("error_code", INT16),
        Field("name", STRING, nullable="0+"),
        Field("topic_id", UUID),
        Field("is_internal", BOOL, default=False),
        Field("partitions", [
            Field("error_code", INT16),
            Field("partition_index", INT32),
            Field("leader_id", INT32),
            Field("leader_epoch", INT32, default=-1),
            Field("replica_nodes", Array(INT32)),
            Field("isr_nodes", Array(INT32)),
            Field("eligible_leader_replicas", Array(INT32), nullable="0+", default=None),
            Field("last_known_elr", Array(INT32), nullable="0+", default=None),
            Field("offline_replicas", Array(INT32)),
        ], struct="DescribeTopicPartitionsResponsePartition"),
        Field("topic_authorized_operations", INT32, default=-2147483648),
    ], struct="DescribeTopicPartitionsResponseTopic"),
    Field("next_cursor", Struct([
        Field("topic_name", STRING),
        Field("partition_index", INT32),
    ]), nullable="0+", default=None, struct="Cursor"),
])
