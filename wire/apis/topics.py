"""CreateTopics (19) 0-7, DeleteTopics (20) 0-6, CreatePartitions (37) 0-3.

Mirror Kafka's CreateTopics*/DeleteTopics*/CreatePartitions* JSON schemas.
"""
from josefk.wire.schema import BOOL, INT8, INT16, INT32, STRING, UUID, Api, Array, Field

CREATE_TOPICS = Api(19, "CreateTopics", versions="0-7", flexible="5+", request=[
    Field("topics", [
        Field("name", STRING),
        Field("num_partitions", INT32),
        Field("replication_factor", INT16),
        Field("assignments", [
            Field("partition_index", INT32),
            Field("broker_ids", Array(INT32)),
        ], struct="CreatableReplicaAssignment"),
        Field("configs", [
            Field("name", STRING),
            Field("value", STRING, nullable="0+"),
        ], struct="CreatableTopicConfig"),
    ], struct="CreatableTopic"),
    Field("timeout_ms", INT32, default=60000),
    Field("validate_only", BOOL, "1+", default=False),
], response=[
    Field("throttle_time_ms", INT32, "2+"),
    Field("topics", [
        Field("name", STRING),
        Field("topic_id", UUID, "7+"),
        Field("error_code", INT16),
        Field("error_message", STRING, "1+", nullable="0+"),
        Field("topic_config_error_code", INT16, "5+", tag=0),
        Field("num_partitions", INT32, "5+", default=-1),
        Field("replication_factor", INT16, "5+", default=-1),
        Field("configs", [
            Field("name", STRING, "5+"),
            Field("value", STRING, "5+", nullable="5+"),
            Field("read_only", BOOL, "5+"),
            Field("config_source", INT8, "5+", default=-1),
            Field("is_sensitive", BOOL, "5+"),
        ], "5+", nullable="5+", struct="CreatableTopicConfigs"),
    ], struct="CreatableTopicResult"),
])

DELETE_TOPICS = Api(20, "DeleteTopics", versions="0-6", flexible="4+", request=[
    Field("topics", [
        Field("name", STRING, "6+", nullable="6+", default=None),
        Field("topic_id", UUID, "6+"),
    ], "6+", struct="DeleteTopicState"),
    Field("topic_names", Array(STRING), "0-5"),
    Field("timeout_ms", INT32),
], response=[
    Field("throttle_time_ms", INT32, "1+"),
    Field("responses", [
        Field("name", STRING, nullable="6+"),
        Field("topic_id", UUID, "6+"),
        Field("error_code", INT16),
        Field("error_message", STRING, "5+", nullable="5+", default=None),
    ], struct="DeletableTopicResult"),
])

CREATE_PARTITIONS = Api(37, "CreatePartitions", versions="0-3", flexible="2+", request=[
    Field("topics", [
        Field("name", STRING),
        Field("count", INT32),
        Field("assignments", [
            Field("broker_ids", Array(INT32)),
        ], nullable="0+", struct="CreatePartitionsAssignment"),
    ], struct="CreatePartitionsTopic"),
    Field("timeout_ms", INT32),
    Field("validate_only", BOOL),
], response=[
    Field("throttle_time_ms", INT32),
    Field("results", [
        Field("name", STRING),
        Field("error_code", INT16),
        Field("error_message", STRING, nullable="0+", default=None),
    ], struct="CreatePartitionsTopicResult"),
])
