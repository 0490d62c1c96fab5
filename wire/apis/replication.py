"""Inter-broker / replication APIs, as Apache Kafka 3.9 serves them in ZooKeeper mode.

Mirror Kafka 3.9's <Name>Request.json / <Name>Response.json:

* LeaderAndIsr (4) 0-7, flexible 4+: v1 IsNew, v2 broker epoch and partitions grouped by topic,
  v3 Adding/RemovingReplicas, v5 topic ids and Type (KIP-516), v6 LeaderRecoveryState (KIP-704),
  v7 isKRaftController (KIP-866). Response v5 groups partition errors by topic id.
* StopReplica (5) 0-4, flexible 2+: v0 ungrouped partitions, v1-2 topics with partition indexes,
  v3 per-partition leader epoch and delete flag (KIP-570), v4 isKRaftController.
* UpdateMetadata (6) 0-8, flexible 6+: v0 single host/port per broker, v1 endpoints, v2 rack,
  v3 listener, v4 offline replicas, v5 broker epoch and partitions grouped by topic, v7 topic
  ids, v8 isKRaftController and the tagged Type (tag 0, KIP-866).
* ControlledShutdown (7) 0-3, flexible 3+: v2 broker epoch.
* OffsetForLeaderEpoch (23) 0-4, flexible 4+: v2 current leader epoch, v3 replica id.
* ElectLeaders (43) 0-2, flexible 2+: v1 election type and top-level error code.
* AlterPartition (56) 0-3, flexible 0+: v1 LeaderRecoveryState, v2 topic ids (KIP-841),
  v3 NewIsrWithEpochs (KIP-903).

Kafka 4.0 removed LeaderAndIsr, StopReplica, UpdateMetadata and ControlledShutdown, and the
v0-1 of OffsetForLeaderEpoch and AlterPartition; newer schema copies therefore lack them.

Kafka's ``isKRaftController`` fields are named ``is_kraft_controller``. A common struct used in
two places (LeaderAndIsrPartitionState, UpdateMetadataPartitionState, LeaderAndIsrPartitionError)
is one field list below, but the compiler builds one class per use; both have the same fields
and encode alike. ControlledShutdown v0 requests carry a non-standard header (request header v0,
without client id), which ``Api.request_header_version`` does not express.
"""
from josefk.wire.schema import BOOL, INT8, INT16, INT32, INT64, STRING, UUID, Api, Array, Field

# -- LeaderAndIsr (4) ---------------------------------------------------------------------------

# commonStructs LeaderAndIsrPartitionState: top level in v0-1, per topic in v2+.
LEADER_AND_ISR_PARTITION_STATE = [
    Field("topic_name", STRING, "0-1"),
    Field("partition_index", INT32),
    Field("controller_epoch", INT32),
    Field("leader", INT32),
    Field("leader_epoch", INT32),
    Field("isr", Array(INT32)),
    Field("partition_epoch", INT32),
    Field("replicas", Array(INT32)),
    Field("adding_replicas", Array(INT32), "3+"),
    Field("removing_replicas", Array(INT32), "3+"),
    Field("is_new", BOOL, "1+", default=False),
    Field("leader_recovery_state", INT8, "6+", default=0),
]

# commonStructs LeaderAndIsrPartitionError: top level in v0-4, per topic in v5+.
LEADER_AND_ISR_PARTITION_ERROR = [
    Field("topic_name", STRING, "0-4"),
    Field("partition_index", INT32),
    Field("error_code", INT16),
]

LEADER_AND_ISR = Api(4, "LeaderAndIsr", versions="0-7", flexible="4+", request=[
    Field("controller_id", INT32),
    Field("is_kraft_controller", BOOL, "7+", default=False),
    Field("controller_epoch", INT32),
    Field("broker_epoch", INT64, "2+", default=-1),
    Field("type", INT8, "5+"),
    Field("ungrouped_partition_states", LEADER_AND_ISR_PARTITION_STATE, "0-1",
          struct="LeaderAndIsrPartitionState"),
    Field("topic_states", [
        Field("topic_name", STRING, "2+"),
        Field("topic_id", UUID, "5+"),
        Field("partition_states", LEADER_AND_ISR_PARTITION_STATE, "2+",
              struct="LeaderAndIsrPartitionState"),
    ], "2+", struct="LeaderAndIsrTopicState"),
    Field("live_leaders", [
        Field("broker_id", INT32),
        Field("host_name", STRING),
        Field("port", INT32),
    ], struct="LeaderAndIsrLiveLeader"),
], response=[
    Field("error_code", INT16),
    Field("partition_errors", LEADER_AND_ISR_PARTITION_ERROR, "0-4",
          struct="LeaderAndIsrPartitionError"),
    Field("topics", [
        Field("topic_id", UUID, "5+"),
        Field("partition_errors", LEADER_AND_ISR_PARTITION_ERROR, "5+",
              struct="LeaderAndIsrPartitionError"),
    ], "5+", struct="LeaderAndIsrTopicError"),
])

# -- StopReplica (5) ----------------------------------------------------------------------------

STOP_REPLICA = Api(5, "StopReplica", versions="0-4", flexible="2+", request=[
    Field("controller_id", INT32),
    Field("is_kraft_controller", BOOL, "4+", default=False),
    Field("controller_epoch", INT32),
    Field("broker_epoch", INT64, "1+", default=-1),
    Field("delete_partitions", BOOL, "0-2"),
    Field("ungrouped_partitions", [
        Field("topic_name", STRING, "0"),
        Field("partition_index", INT32, "0"),
    ], "0", struct="StopReplicaPartitionV0"),
    Field("topics", [
        Field("name", STRING, "1-2"),
        Field("partition_indexes", Array(INT32), "1-2"),
    ], "1-2", struct="StopReplicaTopicV1"),
    Field("topic_states", [
        Field("topic_name", STRING, "3+"),
        Field("partition_states", [
            Field("partition_index", INT32, "3+"),
            Field("leader_epoch", INT32, "3+", default=-1),
            Field("delete_partition", BOOL, "3+"),
        ], "3+", struct="StopReplicaPartitionState"),
    ], "3+", struct="StopReplicaTopicState"),
], response=[
    Field("error_code", INT16),
    Field("partition_errors", [
        Field("topic_name", STRING),
        Field("partition_index", INT32),
        Field("error_code", INT16),
    ], struct="StopReplicaPartitionError"),
])

# -- UpdateMetadata (6) -------------------------------------------------------------------------

# commonStructs UpdateMetadataPartitionState: top level in v0-4, per topic in v5+.
UPDATE_METADATA_PARTITION_STATE = [
    Field("topic_name", STRING, "0-4"),
    Field("partition_index", INT32),
    Field("controller_epoch", INT32),
    Field("leader", INT32),
    Field("leader_epoch", INT32),
    Field("isr", Array(INT32)),
    Field("zk_version", INT32),
    Field("replicas", Array(INT32)),
    Field("offline_replicas", Array(INT32), "4+"),
]

UPDATE_METADATA = Api(6, "UpdateMetadata", versions="0-8", flexible="6+", request=[
    Field("controller_id", INT32),
    Field("is_kraft_controller", BOOL, "8+", default=False),
    Field("type", INT8, "8+", tag=0, default=0),
    Field("controller_epoch", INT32),
    Field("broker_epoch", INT64, "5+", default=-1),
    Field("ungrouped_partition_states", UPDATE_METADATA_PARTITION_STATE, "0-4",
          struct="UpdateMetadataPartitionState"),
    Field("topic_states", [
        Field("topic_name", STRING, "5+"),
        Field("topic_id", UUID, "7+"),
        Field("partition_states", UPDATE_METADATA_PARTITION_STATE, "5+",
              struct="UpdateMetadataPartitionState"),
    ], "5+", struct="UpdateMetadataTopicState"),
    Field("live_brokers", [
        Field("id", INT32),
        Field("v0_host", STRING, "0"),
        Field("v0_port", INT32, "0"),
        Field("endpoints", [
            Field("port", INT32, "1+"),
            Field("host", STRING, "1+"),
            Field("listener", STRING, "3+"),
            Field("security_protocol", INT16, "1+"),
        ], "1+", struct="UpdateMetadataEndpoint"),
        Field("rack", STRING, "2+", nullable="0+"),
    ], struct="UpdateMetadataBroker"),
], response=[
    Field("error_code", INT16),
])

# -- ControlledShutdown (7) ---------------------------------------------------------------------

CONTROLLED_SHUTDOWN = Api(7, "ControlledShutdown", versions="0-3", flexible="3+", request=[
    Field("broker_id", INT32),
    Field("broker_epoch", INT64, "2+", default=-1),
], response=[
    Field("error_code", INT16),
    Field("remaining_partitions", [
        Field("topic_name", STRING),
        Field("partition_index", INT32),
    ], struct="RemainingPartition"),
])

# -- OffsetForLeaderEpoch (23) ------------------------------------------------------------------

OFFSET_FOR_LEADER_EPOCH = Api(23, "OffsetForLeaderEpoch", versions="0-4", flexible="4+", request=[
    Field("replica_id", INT32, "3+", default=-2),
    Field("topics", [
        Field("topic", STRING),
        Field("partitions", [
            Field("partition", INT32),
            Field("current_leader_epoch", INT32, "2+", default=-1),
            Field("leader_epoch", INT32),
        ], struct="OffsetForLeaderPartition"),
    ], struct="OffsetForLeaderTopic"),
], response=[
    Field("throttle_time_ms", INT32, "2+"),
    Field("topics", [
        Field("topic", STRING),
        Field("partitions", [
            Field("error_code", INT16),
            Field("partition", INT32),
            Field("leader_epoch", INT32, "1+", default=-1),
            Field("end_offset", INT64, default=-1),
        ], struct="EpochEndOffset"),
    ], struct="OffsetForLeaderTopicResult"),
])

# -- ElectLeaders (43) --------------------------------------------------------------------------

ELECT_LEADERS = Api(43, "ElectLeaders", versions="0-2", flexible="2+", request=[
    Field("election_type", INT8, "1+"),
    Field("topic_partitions", [
        Field("topic", STRING),
        Field("partitions", Array(INT32)),
    ], nullable="0+", struct="TopicPartitions"),
    Field("timeout_ms", INT32, default=60000),
], response=[
    Field("throttle_time_ms", INT32),
    Field("error_code", INT16, "1+"),
    Field("replica_election_results", [
        Field("topic", STRING),
        Field("partition_result", [
            Field("partition_id", INT32),
            Field("error_code", INT16),
            Field("error_message", STRING, nullable="0+"),
        ], struct="PartitionResult"),
    ], struct="ReplicaElectionResult"),
])

# -- AlterPartition (56) ------------------------------------------------------------------------

ALTER_PARTITION = Api(56, "AlterPartition", versions="0-3", flexible="0+", request=[
    Field("broker_id", INT32),
    Field("broker_epoch", INT64, default=-1),
    Field("topics", [
        Field("topic_name", STRING, "0-1"),
        Field("topic_id", UUID, "2+"),
        Field("partitions", [
            Field("partition_index", INT32),
            Field("leader_epoch", INT32),
            Field("new_isr", Array(INT32), "0-2"),
            Field("new_isr_with_epochs", [
                Field("broker_id", INT32, "3+"),
                Field("broker_epoch", INT64, "3+", default=-1),
            ], "3+", struct="BrokerState"),
            Field("leader_recovery_state", INT8, "1+", default=0),
            Field("partition_epoch", INT32),
        ], struct="PartitionData"),
    ], struct="TopicData"),
], response=[
    Field("throttle_time_ms", INT32),
    Field("error_code", INT16),
    Field("topics", [
        Field("topic_name", STRING, "0-1"),
        Field("topic_id", UUID, "2+"),
        Field("partitions", [
            Field("partition_index", INT32),
            Field("error_code", INT16),
            Field("leader_id", INT32),
            Field("leader_epoch", INT32),
            Field("isr", Array(INT32)),
            Field("leader_recovery_state", INT8, "1+", default=0),
            Field("partition_epoch", INT32),
        ], struct="PartitionData"),
    ], struct="TopicData"),
])
