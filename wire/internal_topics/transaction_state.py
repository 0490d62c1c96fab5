"""``__transaction_state``: one record type, the state of a transactional id. Mirrors Kafka's
TransactionLogKey.json / TransactionLogValue.json (transaction-coordinator/src/main/resources/
common/message/). Kafka 3.x writes value v0 (null partitions in the Empty state); v1 is
flexible and Kafka 4 (KIP-890) adds the tagged producer ids and client transaction version.
"""
from josefk.wire.schema import (INT8, INT16, INT32, INT64, STRING, Array, CoordinatorRecord,
                                CoordinatorTopic, Field)

TRANSACTION_LOG = CoordinatorRecord(0, "TransactionLog", key=[
    Field("transactional_id", STRING),
], versions="0-1", flexible="1+", value=[
    Field("producer_id", INT64),
    Field("previous_producer_id", INT64, "1+", tag=0, default=-1),
    Field("next_producer_id", INT64, "1+", tag=1, default=-1),
    Field("producer_epoch", INT16),
    Field("transaction_timeout_ms", INT32),
    Field("transaction_status", INT8),
    Field("transaction_partitions", [
        Field("topic", STRING),
        Field("partition_ids", Array(INT32)),
    ], nullable="0+", default=None, struct="PartitionsSchema"),
    Field("transaction_last_update_timestamp_ms", INT64),
    Field("transaction_start_timestamp_ms", INT64),
    Field("client_transaction_version", INT16, "1+", tag=2, default=0),
])

TRANSACTION_STATE = CoordinatorTopic("__transaction_state", [TRANSACTION_LOG])
