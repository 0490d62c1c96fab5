"""Produce (key 0), versions 0-11. Mirrors Kafka's ProduceRequest.json / ProduceResponse.json.

v0-2 carry message sets of format v0/v1 (magic 0 and 1; v2 adds LogAppendTimeMs); v3 brings
record batches (magic 2). v10 adds the tagged CurrentLeader / NodeEndpoints (KIP-951); v11 only adds an error code (KIP-890).
"""
from josefk.wire.schema import INT16, INT32, INT64, RECORDS, STRING, Api, Field, Struct

PRODUCE = Api(0, "Produce", versions="0-11", flexible="9+", request=[
    Field("transactional_id", STRING, "3+", nullable="3+", default=None),
    Field("acks", INT16),
    Field("timeout_ms", INT32),
    Field("topic_data", [
        Field("name", STRING),
        Field("partition_data", [
            Field("index", INT32),
            Field("records", RECORDS, nullable="0+"),
        ], struct="PartitionProduceData"),
    ], struct="TopicProduceData"),
], response=[
    Field("responses", [
        Field("name", STRING),
        Field("partition_responses", [
            Field("index", INT32),
            Field("error_code", INT16),
            Field("base_offset", INT64),
            Field("log_append_time_ms", INT64, "2+", default=-1),
            Field("log_start_offset", INT64, "5+", default=-1),
            Field("record_errors", [
                Field("batch_index", INT32, "8+"),
                Field("batch_index_error_message", STRING, "8+", nullable="8+", default=None),
            ], "8+", struct="BatchIndexAndErrorMessage"),
            Field("error_message", STRING, "8+", nullable="8+", default=None),
            Field("current_leader", Struct([
                Field("leader_id", INT32, "10+", default=-1),
                Field("leader_epoch", INT32, "10+", default=-1),
            ]), "10+", tag=0, struct="LeaderIdAndEpoch"),
        ], struct="PartitionProduceResponse"),
    ], struct="TopicProduceResponse"),
    Field("throttle_time_ms", INT32, "1+", default=0),
    Field("node_endpoints", [
        Field("node_id", INT32, "10+"),
        Field("host", STRING, "10+"),
        Field("port", INT32, "10+"),
        Field("rack", STRING, "10+", nullable="10+", default=None),
    ], "10+", tag=0, struct="NodeEndpoint"),
])
