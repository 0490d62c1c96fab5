"""Client quota APIs (KIP-546). Mirror Kafka's DescribeClientQuotas*.json (key 48, 0-1) and
AlterClientQuotas*.json (key 49, 0-1)."""
from josefk.wire.schema import BOOL, FLOAT64, INT8, INT16, INT32, STRING, Api, Field


def _entity():
    return [
        Field("entity_type", STRING),
        Field("entity_name", STRING, nullable="0+"),
    ]


DESCRIBE_CLIENT_QUOTAS = Api(48, "DescribeClientQuotas", versions="0-1", flexible="1+",
                             request=[
    Field("components", [
        Field("entity_type", STRING),
        Field("match_type", INT8),
        Field("match", STRING, nullable="0+"),
    ], struct="ComponentData"),
    Field("strict", BOOL),
], response=[
    Field("throttle_time_ms", INT32),
    Field("error_code", INT16),
    Field("error_message", STRING, nullable="0+"),
    Field("entries", [
        Field("entity", _entity(), struct="EntityData"),
        Field("values", [
            Field("key", STRING),
            Field("value", FLOAT64),
        ], struct="ValueData"),
    ], nullable="0+", struct="EntryData"),
])

ALTER_CLIENT_QUOTAS = Api(49, "AlterClientQuotas", versions="0-1", flexible="1+", request=[
    Field("entries", [
        Field("entity", _entity(), struct="EntityData"),
        Field("ops", [
            Field("key", STRING),
            Field("value", FLOAT64),
            Field("remove", BOOL),
        ], struct="OpData"),
    ], struct="EntryData"),
    Field("validate_only", BOOL),
], response=[
    Field("throttle_time_ms", INT32),
    Field("entries", [
        Field("error_code", INT16),
        Field("error_message", STRING, nullable="0+"),
        Field("entity", _entity(), struct="EntityData"),
    ], struct="EntryData"),
])
