"""Fetch (key 1), versions 0-17. Mirrors Kafka's FetchRequest.json / FetchResponse.json.

v0-3 answer with message sets of format v0/v1 (v0-1 magic 0, v2-3 magic 1), v3 adds MaxBytes.
v7 adds fetch sessions (KIP-227), v12 goes flexible, v13 switches topic names to topic ids,
v15 moves the replica id into the tagged ReplicaState (KIP-903), v16 adds NodeEndpoints
(KIP-951), v17 adds the tagged ReplicaDirectoryId (KIP-853).
"""
from josefk.wire.schema import (INT8, INT16, INT32, INT64, RECORDS, STRING, UUID, Api, Array, Field,
                                Struct)

FETCH = Api(1, "Fetch", versions="0-17", flexible="12+", request=[
    Field("cluster_id", STRING, "12+", nullable="12+", tag=0, default=None),
    Field("replica_id", INT32, "0-14", default=-1),
    Field("replica_state", Struct([
        Field("replica_id", INT32, "15+", default=-1),
        Field("replica_epoch", INT64, "15+", default=-1),
    ]), "15+", tag=1, struct="ReplicaState"),
    Field("max_wait_ms", INT32),
    Field("min_bytes", INT32),
    Field("max_bytes", INT32, "3+", default=0x7FFFFFFF),
    Field("isolation_level", INT8, "4+", default=0),
    Field("session_id", INT32, "7+", default=0),
    Field("session_epoch", INT32, "7+", default=-1),
    Field("topics", [
        Field("topic", STRING, "0-12"),
        Field("topic_id", UUID, "13+"),
        Field("partitions", [
            Field("partition", INT32),
            Field("current_leader_epoch", INT32, "9+", default=-1),
            Field("fetch_offset", INT64),
            Field("last_fetched_epoch", INT32, "12+", default=-1),
            Field("log_start_offset", INT64, "5+", default=-1),
            Field("partition_max_bytes", INT32),
            Field("replica_directory_id", UUID, "17+", tag=0),
        ], struct="FetchPartition"),
    ], struct="FetchTopic"),
    Field("forgotten_topics_data", [
        Field("topic", STRING, "7-12"),
        Field("topic_id", UUID, "13+"),
        Field("partitions", Array(INT32), "7+"),
    ], "7+", struct="ForgottenTopic"),
    Field("rack_id", STRING, "11+", default=""),
], response=[
    Field("throttle_time_ms", INT32, "1+"),
    Field("error_code", INT16, "7+"),
    Field("session_id", INT32, "7+", default=0),
    Field("responses", [
        Field("topic", STRING, "0-12"),
        Field("topic_id", UUID, "13+"),
        Field("partitions", [
            Field("partition_index", INT32),
            Field("error_code", INT16),
            Field("high_watermark", INT64),
            Field("last_stable_offset", INT64, "4+", default=-1),
            Field("log_start_offset", INT64, "5+", default=-1),
            Field("diverging_epoch", Struct([
                Field("epoch", INT32, "12+", default=-1),
                Field("end_offset", INT64, "12+", default=-1),
            ]), "12+", tag=0, struct="EpochEndOffset"),
            Field("current_leader", Struct([
                Field("leader_id", INT32, "12+", default=-1),
                Field("leader_epoch", INT32, "12+", default=-1),
            ]), "12+", tag=1, struct="LeaderIdAndEpoch"),
            Field("snapshot_id", Struct([
                Field("end_offset", INT64, default=-1),
                Field("epoch", INT32, default=-1),
            ]), "12+", tag=2, struct="SnapshotId"),
            Field("aborted_transactions", [
                Field("producer_id", INT64, "4+"),
                Field("first_offset", INT64, "4+"),
            ], "4+", nullable="4+", struct="AbortedTransaction"),
            Field("preferred_read_replica", INT32, "11+", default=-1),
            Field("records", RECORDS, nullable="0+"),
        ], struct="PartitionData"),
    ], struct="FetchableTopicResponse"),
    Field("node_endpoints", [
        Field("node_id", INT32, "16+"),
        Field("host", STRING, "16+"),
        Field("port", INT32, "16+"),
        Field("rack", STRING, "16+", nullable="16+", default=None),
    ], "16+", tag=0, struct="NodeEndpoint"),
])


def fetching_replica_id(req, version: int) -> int:
    """The fetching follower's broker id, or -1 for a consumer (v15+ carry it in ReplicaState)."""
    if version >= 15:
        return req.replica_state.replica_id if req.replica_state is not None else -1
    return req.replica_id
