"""InitProducerId (key 22), versions 0-5. Mirrors Kafka's InitProducerId*.json.

v3 adds ProducerId/ProducerEpoch to the request (KIP-360); v4 (PRODUCER_FENCED) and
v5 (TRANSACTION_ABORTABLE, KIP-890) only add error codes.
"""
from josefk.wire.schema import INT16, INT32, INT64, STRING, Api, Field

INIT_PRODUCER_ID = Api(22, "InitProducerId", versions="0-5", flexible="2+", request=[
    Field("transactional_id", STRING, nullable="0+"),
    Field("transaction_timeout_ms", INT32),
    Field("producer_id", INT64, "3+", default=-1),
    Field("producer_epoch", INT16, "3+", default=-1),
], response=[
    Field("throttle_time_ms", INT32),
    Field("error_code", INT16),
    Field("producer_id", INT64, default=-1),
    Field("producer_epoch", INT16),
])
