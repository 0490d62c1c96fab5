"""Share groups (KIP-932), as Apache Kafka 4.2 declares them. Mirror Kafka's <Name>Request.json /
<Name>Response.json (clients/src/main/resources/common/message/).

Client APIs: ShareGroupHeartbeat (76) 1, ShareGroupDescribe (77) 1, ShareFetch (78) 1-2,
ShareAcknowledge (79) 1-2 (v0 was Kafka 4.0's early access and was removed in 4.1; v2 adds
KIP-1206's ShareAcquireMode and KIP-1222's renew acknowledgements), and the admin APIs
DescribeShareGroupOffsets (90) 0-1 (v1 adds the lag, KIP-1226), AlterShareGroupOffsets (91) 0,
DeleteShareGroupOffsets (92) 0.

Share-coordinator APIs, between brokers: InitializeShareGroupState (83) 0,
ReadShareGroupState (84) 0, WriteShareGroupState (85) 0-1 (v1 adds DeliveryCompleteCount),
DeleteShareGroupState (86) 0, ReadShareGroupStateSummary (87) 0-1.
"""
from josefk.wire.schema import (BOOL, INT8, INT16, INT32, INT64, RECORDS, STRING, UUID, Api, Array,
                                Field, Struct)


def _leader_id_and_epoch():
    return Struct([
        Field("leader_id", INT32),
        Field("leader_epoch", INT32),
    ])


def _node_endpoints():
    return Field("node_endpoints", [
        Field("node_id", INT32),
        Field("host", STRING),
        Field("port", INT32),
        Field("rack", STRING, nullable="0+", default=None),
    ], struct="NodeEndpoint")


def _acknowledgement_batches():
    return Field("acknowledgement_batches", [
        Field("first_offset", INT64),
        Field("last_offset", INT64),
        Field("acknowledge_types", Array(INT8)),
    ], struct="AcknowledgementBatch")


SHARE_GROUP_HEARTBEAT = Api(76, "ShareGroupHeartbeat", versions="1", flexible="0+", request=[
    Field("group_id", STRING),
    Field("member_id", STRING),
    Field("member_epoch", INT32),
    Field("rack_id", STRING, nullable="0+", default=None),
    Field("subscribed_topic_names", Array(STRING), nullable="0+", default=None),
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

_DESCRIBED_TOPIC_PARTITIONS = [
    Field("topic_id", UUID),
    Field("topic_name", STRING),
    Field("partitions", Array(INT32)),
]

SHARE_GROUP_DESCRIBE = Api(77, "ShareGroupDescribe", versions="1", flexible="1+", request=[
    Field("group_ids", Array(STRING)),
    Field("include_authorized_operations", BOOL),
], response=[
    Field("throttle_time_ms", INT32),
    Field("groups", [
        Field("error_code", INT16),
        Field("error_message", STRING, nullable="1+", default=None),
        Field("group_id", STRING),
        Field("group_state", STRING),
        Field("group_epoch", INT32),
        Field("assignment_epoch", INT32),
        Field("assignor_name", STRING),
        Field("members", [
            Field("member_id", STRING),
            Field("rack_id", STRING, nullable="1+", default=None),
            Field("member_epoch", INT32),
            Field("client_id", STRING),
            Field("client_host", STRING),
            Field("subscribed_topic_names", Array(STRING)),
            Field("assignment", Struct([
                Field("topic_partitions", _DESCRIBED_TOPIC_PARTITIONS, struct="TopicPartitions"),
            ]), struct="Assignment"),
        ], struct="Member"),
        Field("authorized_operations", INT32, default=-2147483648),
    ], struct="DescribedGroup"),
])

SHARE_FETCH = Api(78, "ShareFetch", versions="1-2", flexible="0+", request=[
    Field("group_id", STRING, nullable="0+", default=None),
    Field("member_id", STRING, nullable="0+"),
    Field("share_session_epoch", INT32),
    Field("max_wait_ms", INT32),
    Field("min_bytes", INT32),
    Field("max_bytes", INT32, default=0x7FFFFFFF),
    Field("max_records", INT32, "1+"),
    Field("batch_size", INT32, "1+"),
    Field("share_acquire_mode", INT8, "2+"),
    Field("is_renew_ack", BOOL, "2+"),
    Field("topics", [
        Field("topic_id", UUID),
        Field("partitions", [
            Field("partition_index", INT32),
            _acknowledgement_batches(),
        ], struct="FetchPartition"),
    ], struct="FetchTopic"),
    Field("forgotten_topics_data", [
        Field("topic_id", UUID),
        Field("partitions", Array(INT32)),
    ], struct="ForgottenTopic"),
], response=[
    Field("throttle_time_ms", INT32),
    Field("error_code", INT16),
    Field("error_message", STRING, nullable="0+", default=None),
    Field("acquisition_lock_timeout_ms", INT32, "1+"),
    Field("responses", [
        Field("topic_id", UUID),
        Field("partitions", [
            Field("partition_index", INT32),
            Field("error_code", INT16),
            Field("error_message", STRING, nullable="0+", default=None),
            Field("acknowledge_error_code", INT16),
            Field("acknowledge_error_message", STRING, nullable="0+", default=None),
            Field("current_leader", _leader_id_and_epoch(), struct="LeaderIdAndEpoch"),
            Field("records", RECORDS, nullable="0"),
            Field("acquired_records", [
                Field("first_offset", INT64),
                Field("last_offset", INT64),
                Field("delivery_count", INT16),
            ], struct="AcquiredRecords"),
        ], struct="PartitionData"),
    ], struct="ShareFetchableTopicResponse"),
    _node_endpoints(),
])

SHARE_ACKNOWLEDGE = Api(79, "ShareAcknowledge", versions="1-2", flexible="0+", request=[
    Field("group_id", STRING, nullable="0+", default=None),
    Field("member_id", STRING, nullable="0+"),
    Field("share_session_epoch", INT32),
    Field("is_renew_ack", BOOL, "2+"),
    Field("topics", [
        Field("topic_id", UUID),
        Field("partitions", [
            Field("partition_index", INT32),
            _acknowledgement_batches(),
        ], struct="AcknowledgePartition"),
    ], struct="AcknowledgeTopic"),
], response=[
    Field("throttle_time_ms", INT32),
    Field("error_code", INT16),
    Field("error_message", STRING, nullable="0+", default=None),
    Field("acquisition_lock_timeout_ms", INT32, "2+"),
    Field("responses", [
        Field("topic_id", UUID),
        Field("partitions", [
            Field("partition_index", INT32),
            Field("error_code", INT16),
            Field("error_message", STRING, nullable="0+", default=None),
            Field("current_leader", _leader_id_and_epoch(), struct="LeaderIdAndEpoch"),
        ], struct="PartitionData"),
    ], struct="ShareAcknowledgeTopicResponse"),
    _node_endpoints(),
])


# -- the share coordinator's APIs (brokers only) --------------------------------------------------

def _state_batches(versions="0+"):
    return Field("state_batches", [
        Field("first_offset", INT64),
        Field("last_offset", INT64),
        Field("delivery_state", INT8),
        Field("delivery_count", INT16),
    ], versions, struct="StateBatch")


def _partition_result(*fields):
    return [
        Field("partition", INT32),
        Field("error_code", INT16),
        Field("error_message", STRING, nullable="0+", default=None),
        *fields,
    ]


def _state_api(key, name, versions, partition_fields, result_fields, topic_struct,
               result_struct):
    return Api(key, name, versions=versions, flexible="0+", request=[
        Field("group_id", STRING),
        Field("topics", [
            Field("topic_id", UUID),
            Field("partitions", partition_fields, struct="PartitionData"),
        ], struct=topic_struct),
    ], response=[
        Field("results", [
            Field("topic_id", UUID),
            Field("partitions", _partition_result(*result_fields), struct="PartitionResult"),
        ], struct=result_struct),
    ])


INITIALIZE_SHARE_GROUP_STATE = _state_api(83, "InitializeShareGroupState", "0", [
    Field("partition", INT32),
    Field("state_epoch", INT32),
    Field("start_offset", INT64),
], [], "InitializeStateData", "InitializeStateResult")

READ_SHARE_GROUP_STATE = _state_api(84, "ReadShareGroupState", "0", [
    Field("partition", INT32),
    Field("leader_epoch", INT32),
], [
    Field("state_epoch", INT32),
    Field("start_offset", INT64),
    _state_batches(),
], "ReadStateData", "ReadStateResult")

WRITE_SHARE_GROUP_STATE = _state_api(85, "WriteShareGroupState", "0-1", [
    Field("partition", INT32),
    Field("state_epoch", INT32),
    Field("leader_epoch", INT32),
    Field("start_offset", INT64),
    Field("delivery_complete_count", INT32, "1+", default=-1),
    _state_batches(),
], [], "WriteStateData", "WriteStateResult")

DELETE_SHARE_GROUP_STATE = _state_api(86, "DeleteShareGroupState", "0", [
    Field("partition", INT32),
], [], "DeleteStateData", "DeleteStateResult")

READ_SHARE_GROUP_STATE_SUMMARY = _state_api(87, "ReadShareGroupStateSummary", "0-1", [
    Field("partition", INT32),
    Field("leader_epoch", INT32),
], [
    Field("state_epoch", INT32),
    Field("leader_epoch", INT32),
    Field("start_offset", INT64),
    Field("delivery_complete_count", INT32, "1+", default=-1),
], "ReadStateSummaryData", "ReadStateSummaryResult")


# -- admin --------------------------------------------------------------------------------------

DESCRIBE_SHARE_GROUP_OFFSETS = Api(90, "DescribeShareGroupOffsets", versions="0-1",
                                   flexible="0+", request=[
    Field("groups", [
        Field("group_id", STRING),
        Field("topics", [
            Field("topic_name", STRING),
            Field("partitions", Array(INT32)),
        ], nullable="0+", default=None, struct="DescribeShareGroupOffsetsRequestTopic"),
    ], struct="DescribeShareGroupOffsetsRequestGroup"),
], response=[
    Field("throttle_time_ms", INT32),
    Field("groups", [
        Field("group_id", STRING),
        Field("topics", [
            Field("topic_name", STRING),
            Field("topic_id", UUID),
            Field("partitions", [
                Field("partition_index", INT32),
                Field("start_offset", INT64),
                Field("leader_epoch", INT32),
                Field("lag", INT64, "1+", default=-1),
                Field("error_code", INT16),
                Field("error_message", STRING, nullable="0+", default=None),
            ], struct="DescribeShareGroupOffsetsResponsePartition"),
        ], struct="DescribeShareGroupOffsetsResponseTopic"),
        Field("error_code", INT16),
        Field("error_message", STRING, nullable="0+", default=None),
    ], struct="DescribeShareGroupOffsetsResponseGroup"),
])

ALTER_SHARE_GROUP_OFFSETS = Api(91, "AlterShareGroupOffsets", versions="0", flexible="0+",
                                request=[
    Field("group_id", STRING),
    Field("topics", [
        Field("topic_name", STRING),
        Field("partitions", [
            Field("partition_index", INT32),
            Field("start_offset", INT64),
        ], struct="AlterShareGroupOffsetsRequestPartition"),
    ], struct="AlterShareGroupOffsetsRequestTopic"),
], response=[
    Field("throttle_time_ms", INT32),
    Field("error_code", INT16),
    Field("error_message", STRING, nullable="0+", default=None),
    Field("responses", [
        Field("topic_name", STRING),
        Field("topic_id", UUID),
        Field("partitions", [
            Field("partition_index", INT32),
            Field("error_code", INT16),
            Field("error_message", STRING, nullable="0+", default=None),
        ], struct="AlterShareGroupOffsetsResponsePartition"),
    ], struct="AlterShareGroupOffsetsResponseTopic"),
])

DELETE_SHARE_GROUP_OFFSETS = Api(92, "DeleteShareGroupOffsets", versions="0", flexible="0+",
                                 request=[
    Field("group_id", STRING),
    Field("topics", [
        Field("topic_name", STRING),
    ], struct="DeleteShareGroupOffsetsRequestTopic"),
], response=[
    Field("throttle_time_ms", INT32),
    Field("error_code", INT16),
    Field("error_message", STRING, nullable="0+", default=None),
    Field("responses", [
        Field("topic_name", STRING),
        Field("topic_id", UUID),
        Field("error_code", INT16),
        Field("error_message", STRING, nullable="0+", default=None),
    ], struct="DeleteShareGroupOffsetsResponseTopic"),
])

SHARE_APIS = [SHARE_GROUP_HEARTBEAT, SHARE_GROUP_DESCRIBE, SHARE_FETCH, SHARE_ACKNOWLEDGE,
              INITIALIZE_SHARE_GROUP_STATE, READ_SHARE_GROUP_STATE, WRITE_SHARE_GROUP_STATE,
              DELETE_SHARE_GROUP_STATE, READ_SHARE_GROUP_STATE_SUMMARY,
              DESCRIBE_SHARE_GROUP_OFFSETS, ALTER_SHARE_GROUP_OFFSETS, DELETE_SHARE_GROUP_OFFSETS]
