"""Committed offsets. Mirror Kafka's <Name>Request.json / <Name>Response.json.

OffsetCommit (8) 0-9, OffsetFetch (9) 0-9, OffsetDelete (47) 0. OffsetCommit v9 (KIP-848) renames
GenerationId to GenerationIdOrMemberEpoch without changing the wire; OffsetFetch v9 adds MemberId
and MemberEpoch per group. Topic ids in these APIs arrive only in v10 and are not declared.
"""
from josefk.wire.schema import BOOL, INT16, INT32, INT64, STRING, Api, Array, Field

OFFSET_COMMIT = Api(8, "OffsetCommit", versions="0-9", flexible="8+", request=[
    Field("group_id", STRING),
    Field("generation_id_or_member_epoch", INT32, "1+", default=-1),
    Field("member_id", STRING, "1+"),
    Field("group_instance_id", STRING, "7+", nullable="7+", default=None),
    Field("retention_time_ms", INT64, "2-4", default=-1),
    Field("topics", [
        Field("name", STRING),
        Field("partitions", [
            Field("partition_index", INT32),
            Field("committed_offset", INT64),
            Field("committed_leader_epoch", INT32, "6+", default=-1),
            Field("commit_timestamp", INT64, "1", default=-1),
            Field("committed_metadata", STRING, nullable="0+"),
        ], struct="OffsetCommitRequestPartition"),
    ], struct="OffsetCommitRequestTopic"),
], response=[
    Field("throttle_time_ms", INT32, "3+"),
    Field("topics", [
        Field("name", STRING),
        Field("partitions", [
            Field("partition_index", INT32),
            Field("error_code", INT16),
        ], struct="OffsetCommitResponsePartition"),
    ], struct="OffsetCommitResponseTopic"),
])

OFFSET_FETCH = Api(9, "OffsetFetch", versions="0-9", flexible="6+", request=[
    Field("group_id", STRING, "0-7"),
    Field("topics", [
        Field("name", STRING, "0-7"),
        Field("partition_indexes", Array(INT32), "0-7"),
    ], "0-7", nullable="2-7", struct="OffsetFetchRequestTopic"),
    Field("groups", [
        Field("group_id", STRING, "8+"),
        Field("member_id", STRING, "9+", nullable="9+", default=None),
        Field("member_epoch", INT32, "9+", default=-1),
        Field("topics", [
            Field("name", STRING, "8+"),
            Field("partition_indexes", Array(INT32), "8+"),
        ], "8+", nullable="8+", struct="OffsetFetchRequestTopics"),
    ], "8+", struct="OffsetFetchRequestGroup"),
    Field("require_stable", BOOL, "7+", default=False),
], response=[
    Field("throttle_time_ms", INT32, "3+"),
    Field("topics", [
        Field("name", STRING, "0-7"),
        Field("partitions", [
            Field("partition_index", INT32, "0-7"),
            Field("committed_offset", INT64, "0-7"),
            Field("committed_leader_epoch", INT32, "5-7", default=-1),
            Field("metadata", STRING, "0-7", nullable="0-7"),
            Field("error_code", INT16, "0-7"),
        ], "0-7", struct="OffsetFetchResponsePartition"),
    ], "0-7", struct="OffsetFetchResponseTopic"),
    Field("error_code", INT16, "2-7", default=0),
    Field("groups", [
        Field("group_id", STRING, "8+"),
        Field("topics", [
            Field("name", STRING, "8+"),
            Field("partitions", [
                Field("partition_index", INT32, "8+"),
                Field("committed_offset", INT64, "8+"),
                Field("committed_leader_epoch", INT32, "8+", default=-1),
                Field("metadata", STRING, "8+", nullable="8+"),
                Field("error_code", INT16, "8+"),
            ], "8+", struct="OffsetFetchResponsePartitions"),
        ], "8+", struct="OffsetFetchResponseTopics"),
        Field("error_code", INT16, "8+", default=0),
    ], "8+", struct="OffsetFetchResponseGroup"),
])

OFFSET_DELETE = Api(47, "OffsetDelete", versions="0", flexible="none", request=[
    Field("group_id", STRING),
    Field("topics", [
        Field("name", STRING),
        Field("partitions", [
            Field("partition_index", INT32),
        ], struct="OffsetDeleteRequestPartition"),
    ], struct="OffsetDeleteRequestTopic"),
], response=[
    Field("error_code", INT16),
    Field("throttle_time_ms", INT32),
    Field("topics", [
        Field("name", STRING),
        Field("partitions", [
            Field("partition_index", INT32),
            Field("error_code", INT16),
        ], struct="OffsetDeleteResponsePartition"),
    ], struct="OffsetDeleteResponseTopic"),
])
