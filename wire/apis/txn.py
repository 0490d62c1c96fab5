"""Transactions (KIP-98, KIP-447, KIP-664). Mirror Kafka 3.9's <Name>Request.json /
<Name>Response.json.

AddPartitionsToTxn (24) 0-5: v4+ is the broker-to-broker batched form (KIP-890), v0-3 the
client's. AddOffsetsToTxn (25) 0-4, EndTxn (26) 0-4, WriteTxnMarkers (27) 0-1 (broker to broker),
TxnOffsetCommit (28) 0-4, DescribeProducers (61) 0, DescribeTransactions (65) 0,
ListTransactions (66) 0-1 (v1 adds DurationFilter, KIP-994).
"""
from josefk.wire.schema import BOOL, INT16, INT32, INT64, STRING, Api, Array, Field

_TOPIC = [
    Field("name", STRING),
    Field("partitions", Array(INT32)),
]
_TOPIC_RESULT = [
    Field("name", STRING),
    Field("results_by_partition", [
        Field("partition_index", INT32),
        Field("partition_error_code", INT16),
    ], struct="AddPartitionsToTxnPartitionResult"),
]

ADD_PARTITIONS_TO_TXN = Api(24, "AddPartitionsToTxn", versions="0-5", flexible="3+", request=[
    Field("transactions", [
        Field("transactional_id", STRING, "4+"),
        Field("producer_id", INT64, "4+"),
        Field("producer_epoch", INT16, "4+"),
        Field("verify_only", BOOL, "4+", default=False),
        Field("topics", _TOPIC, "4+", struct="AddPartitionsToTxnTopic"),
    ], "4+", struct="AddPartitionsToTxnTransaction"),
    Field("v3_and_below_transactional_id", STRING, "0-3"),
    Field("v3_and_below_producer_id", INT64, "0-3"),
    Field("v3_and_below_producer_epoch", INT16, "0-3"),
    Field("v3_and_below_topics", _TOPIC, "0-3", struct="AddPartitionsToTxnTopic"),
], response=[
    Field("throttle_time_ms", INT32),
    Field("error_code", INT16, "4+"),
    Field("results_by_transaction", [
        Field("transactional_id", STRING, "4+"),
        Field("topic_results", _TOPIC_RESULT, "4+", struct="AddPartitionsToTxnTopicResult"),
    ], "4+", struct="AddPartitionsToTxnResult"),
    Field("results_by_topic_v3_and_below", _TOPIC_RESULT, "0-3",
          struct="AddPartitionsToTxnTopicResult"),
])

ADD_OFFSETS_TO_TXN = Api(25, "AddOffsetsToTxn", versions="0-4", flexible="3+", request=[
    Field("transactional_id", STRING),
    Field("producer_id", INT64),
    Field("producer_epoch", INT16),
    Field("group_id", STRING),
], response=[
    Field("throttle_time_ms", INT32),
    Field("error_code", INT16),
])

END_TXN = Api(26, "EndTxn", versions="0-4", flexible="3+", request=[
    Field("transactional_id", STRING),
    Field("producer_id", INT64),
    Field("producer_epoch", INT16),
    Field("committed", BOOL),
], response=[
    Field("throttle_time_ms", INT32),
    Field("error_code", INT16),
])

WRITE_TXN_MARKERS = Api(27, "WriteTxnMarkers", versions="0-1", flexible="1+", request=[
    Field("markers", [
        Field("producer_id", INT64),
        Field("producer_epoch", INT16),
        Field("transaction_result", BOOL),
        Field("topics", [
            Field("name", STRING),
            Field("partition_indexes", Array(INT32)),
        ], struct="WritableTxnMarkerTopic"),
        Field("coordinator_epoch", INT32),
    ], struct="WritableTxnMarker"),
], response=[
    Field("markers", [
        Field("producer_id", INT64),
        Field("topics", [
            Field("name", STRING),
            Field("partitions", [
                Field("partition_index", INT32),
                Field("error_code", INT16),
            ], struct="WritableTxnMarkerPartitionResult"),
        ], struct="WritableTxnMarkerTopicResult"),
    ], struct="WritableTxnMarkerResult"),
])

TXN_OFFSET_COMMIT = Api(28, "TxnOffsetCommit", versions="0-4", flexible="3+", request=[
    Field("transactional_id", STRING),
    Field("group_id", STRING),
    Field("producer_id", INT64),
    Field("producer_epoch", INT16),
    Field("generation_id", INT32, "3+", default=-1),
    Field("member_id", STRING, "3+"),
    Field("group_instance_id", STRING, "3+", nullable="3+", default=None),
    Field("topics", [
        Field("name", STRING),
        Field("partitions", [
            Field("partition_index", INT32),
            Field("committed_offset", INT64),
            Field("committed_leader_epoch", INT32, "2+", default=-1),
            Field("committed_metadata", STRING, nullable="0+"),
        ], struct="TxnOffsetCommitRequestPartition"),
    ], struct="TxnOffsetCommitRequestTopic"),
], response=[
    Field("throttle_time_ms", INT32),
    Field("topics", [
        Field("name", STRING),
        Field("partitions", [
            Field("partition_index", INT32),
            Field("error_code", INT16),
        ], struct="TxnOffsetCommitResponsePartition"),
    ], struct="TxnOffsetCommitResponseTopic"),
])

DESCRIBE_PRODUCERS = Api(61, "DescribeProducers", versions="0", flexible="0+", request=[
    Field("topics", [
        Field("name", STRING),
        Field("partition_indexes", Array(INT32)),
    ], struct="TopicRequest"),
], response=[
    Field("throttle_time_ms", INT32),
    Field("topics", [
        Field("name", STRING),
        Field("partitions", [
            Field("partition_index", INT32),
            Field("error_code", INT16),
            Field("error_message", STRING, nullable="0+", default=None),
            Field("active_producers", [
                Field("producer_id", INT64),
                Field("producer_epoch", INT32),
                Field("last_sequence", INT32, default=-1),
                Field("last_timestamp", INT64, default=-1),
                Field("coordinator_epoch", INT32),
                Field("current_txn_start_offset", INT64, default=-1),
            ], struct="ProducerState"),
        ], struct="PartitionResponse"),
    ], struct="TopicResponse"),
])

DESCRIBE_TRANSACTIONS = Api(65, "DescribeTransactions", versions="0", flexible="0+", request=[
    Field("transactional_ids", Array(STRING)),
], response=[
    Field("throttle_time_ms", INT32),
    Field("transaction_states", [
        Field("error_code", INT16),
        Field("transactional_id", STRING),
        Field("transaction_state", STRING),
        Field("transaction_timeout_ms", INT32),
        Field("transaction_start_time_ms", INT64),
        Field("producer_id", INT64),
        Field("producer_epoch", INT16),
        Field("topics", [
            Field("topic", STRING),
            Field("partitions", Array(INT32)),
        ], struct="TopicData"),
    ], struct="TransactionState"),
])

LIST_TRANSACTIONS = Api(66, "ListTransactions", versions="0-1", flexible="0+", request=[
    Field("state_filters", Array(STRING)),
    Field("producer_id_filters", Array(INT64)),
    Field("duration_filter", INT64, "1+", default=-1),
], response=[
    Field("throttle_time_ms", INT32),
    Field("error_code", INT16),
    Field("unknown_state_filters", Array(STRING)),
    Field("transaction_states", [
        Field("transactional_id", STRING),
        Field("producer_id", INT64),
        Field("transaction_state", STRING),
    ], struct="TransactionState"),
])
