"""Metadata (key 3), versions 0-12. Mirrors Kafka's MetadataRequest.json / MetadataResponse.json."""
from josefk.wire.schema import BOOL, INT16, INT32, STRING, UUID, Api, Array, Field

METADATA = Api(3, "Metadata", versions="0-12", flexible="9+", request=[
    # v0: an empty array means "all topics"; v1+: null means all topics, empty means none.
    Field("topics", [
        Field("topic_id", UUID, "10+"),
        Field("name", STRING, nullable="10+"),
    ], nullable="1+", struct="MetadataRequestTopic"),
    Field("allow_auto_topic_creation", BOOL, "4+", default=True),
    Field("include_cluster_authorized_operations", BOOL, "8-10"),
    Field("include_topic_authorized_operations", BOOL, "8+"),
], response=[
    Field("throttle_time_ms", INT32, "3+"),
    Field("brokers", [
        Field("node_id", INT32),
        Field("host", STRING),
        Field("port", INT32),
        Field("rack", STRING, "1+", nullable="1+", default=None),
    ], struct="MetadataResponseBroker"),
    Field("cluster_id", STRING, "2+", nullable="2+", default=None),
    Field("controller_id", INT32, "1+", default=-1),
    Field("topics", [
        Field("error_code", INT16),
        Field("name", STRING, nullable="12+"),
        Field("topic_id", UUID, "10+"),
        Field("is_internal", BOOL, "1+", default=False),
        Field("partitions", [
            Field("error_code", INT16),
            Field("partition_index", INT32),
            Field("leader_id", INT32),
            Field("leader_epoch", INT32, "7+", default=-1),
            Field("replica_nodes", Array(INT32)),
            Field("isr_nodes", Array(INT32)),
            Field("offline_replicas", Array(INT32), "5+"),
        ], struct="MetadataResponsePartition"),
        Field("topic_authorized_operations", INT32, "8+", default=-2147483648),
    ], struct="MetadataResponseTopic"),
    Field("cluster_authorized_operations", INT32, "8-10", default=-2147483648),
])
