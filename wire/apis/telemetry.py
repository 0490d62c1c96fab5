"""GetTelemetrySubscriptions (key 71) 0 and PushTelemetry (key 72) 0 (KIP-714).

Mirror Kafka's GetTelemetrySubscriptions*.json and PushTelemetry*.json.
"""
from josefk.wire.schema import BOOL, BYTES, INT8, INT16, INT32, STRING, UUID, Api, Array, Field

GET_TELEMETRY_SUBSCRIPTIONS = Api(71, "GetTelemetrySubscriptions", versions="0", flexible="0+",
                                  request=[
    Field("client_instance_id", UUID),
], response=[
    Field("throttle_time_ms", INT32),
    Field("error_code", INT16),
    Field("client_instance_id", UUID),
    Field("subscription_id", INT32),
    Field("accepted_compression_types", Array(INT8)),
    Field("push_interval_ms", INT32),
    Field("telemetry_max_bytes", INT32),
    Field("delta_temporality", BOOL),
    Field("requested_metrics", Array(STRING)),
])

PUSH_TELEMETRY = Api(72, "PushTelemetry", versions="0", flexible="0+", request=[
    Field("client_instance_id", UUID),
    Field("subscription_id", INT32),
    Field("terminating", BOOL),
    Field("compression_type", INT8),
    Field("metrics", BYTES),
], response=[
    Field("throttle_time_ms", INT32),
    Field("error_code", INT16),
])
