"""Operators' admin APIs, as Kafka 3.9 declares them (AlterConfigs*.json,
IncrementalAlterConfigs*.json, DeleteRecords*.json, DescribeLogDirs*.json):
AlterConfigs (33) 0-2, IncrementalAlterConfigs (44) 0-1, DeleteRecords (21) 0-2,
DescribeLogDirs (35) 0-4 (v0 as Kafka 3.9 still serves it; 4.0 dropped it)."""
from josefk.wire.schema import BOOL, INT8, INT16, INT32, INT64, STRING, Api, Array, Field


def _alter_response():
    return [
        Field("throttle_time_ms", INT32),
        Field("responses", [
            Field("error_code", INT16),
            Field("error_message", STRING, nullable="0+"),
            Field("resource_type", INT8),
            Field("resource_name", STRING),
        ], struct="AlterConfigsResourceResponse"),
    ]


ALTER_CONFIGS = Api(33, "AlterConfigs", versions="0-2", flexible="2+", request=[
    Field("resources", [
        Field("resource_type", INT8),
        Field("resource_name", STRING),
        Field("configs", [
            Field("name", STRING),
            Field("value", STRING, nullable="0+"),
        ], struct="AlterableConfig"),
    ], struct="AlterConfigsResource"),
    Field("validate_only", BOOL),
], response=_alter_response())

INCREMENTAL_ALTER_CONFIGS = Api(44, "IncrementalAlterConfigs", versions="0-1", flexible="1+",
                                request=[
    Field("resources", [
        Field("resource_type", INT8),
        Field("resource_name", STRING),
        Field("configs", [
            Field("name", STRING),
            Field("config_operation", INT8),
            Field("value", STRING, nullable="0+"),
        ], struct="AlterableConfig"),
    ], struct="AlterConfigsResource"),
    Field("validate_only", BOOL),
], response=_alter_response())

DELETE_RECORDS = Api(21, "DeleteRecords", versions="0-2", flexible="2+", request=[
    Field("topics", [
        Field("name", STRING),
        Field("partitions", [
            Field("partition_index", INT32),
            Field("offset", INT64),
        ], struct="DeleteRecordsPartition"),
    ], struct="DeleteRecordsTopic"),
    Field("timeout_ms", INT32),
], response=[
    Field("throttle_time_ms", INT32),
    Field("topics", [
        Field("name", STRING),
        Field("partitions", [
            Field("partition_index", INT32),
            Field("low_watermark", INT64),
            Field("error_code", INT16),
        ], struct="DeleteRecordsPartitionResult"),
    ], struct="DeleteRecordsTopicResult"),
])

DESCRIBE_LOG_DIRS = Api(35, "DescribeLogDirs", versions="0-4", flexible="2+", request=[
    Field("topics", [
        Field("topic", STRING),
        Field("partitions", Array(INT32)),
    ], nullable="0+", struct="DescribableLogDirTopic"),
], response=[
    Field("throttle_time_ms", INT32),
    Field("error_code", INT16, "3+"),
    Field("results", [
        Field("error_code", INT16),
        Field("log_dir", STRING),
        Field("topics", [
            Field("name", STRING),
            Field("partitions", [
                Field("partition_index", INT32),
                Field("partition_size", INT64),
                Field("offset_lag", INT64),
                Field("is_future_key", BOOL),
            ], struct="DescribeLogDirsPartition"),
        ], struct="DescribeLogDirsTopic"),
        Field("total_bytes", INT64, "4+", default=-1),
        Field("usable_bytes", INT64, "4+", default=-1),
    ], struct="DescribeLogDirsResult"),
])
