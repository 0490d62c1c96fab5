"""ListOffsets (key 2), versions 0-9. Mirrors Kafka's ListOffsetsRequest.json / ListOffsetsResponse.json.

v0 asks for up to MaxNumOffsets offsets and answers them in OldStyleOffsets. Special timestamps:
-1 latest, -2 earliest, -3 max timestamp (v7+), -4 local log start (v8+), -5 last tiered offset
(v9+).
"""
from josefk.wire.schema import INT8, INT16, INT32, INT64, STRING, Api, Array, Field

LIST_OFFSETS = Api(2, "ListOffsets", versions="0-9", flexible="6+", request=[
    Field("replica_id", INT32),
    Field("isolation_level", INT8, "2+"),
    Field("topics", [
        Field("name", STRING),
        Field("partitions", [
            Field("partition_index", INT32),
            Field("current_leader_epoch", INT32, "4+", default=-1),
            Field("timestamp", INT64),
            Field("max_num_offsets", INT32, "0", default=1),
        ], struct="ListOffsetsPartition"),
    ], struct="ListOffsetsTopic"),
], response=[
    Field("throttle_time_ms", INT32, "2+"),
    Field("topics", [
        Field("name", STRING),
        Field("partitions", [
            Field("partition_index", INT32),
            Field("error_code", INT16),
            Field("old_style_offsets", Array(INT64), "0"),
            Field("timestamp", INT64, "1+", default=-1),
            Field("offset", INT64, "1+", default=-1),
            Field("leader_epoch", INT32, "4+", default=-1),
        ], struct="ListOffsetsPartitionResponse"),
    ], struct="ListOffsetsTopicResponse"),
])
