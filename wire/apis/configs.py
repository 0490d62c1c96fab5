"""DescribeConfigs (key 32), versions 0-4, and ListConfigResources (key 74), versions 0-1 (v0 was
ListClientMetricsResources, KIP-714; v1 lists any resource type, KIP-1142). Mirror Kafka's
DescribeConfigs*.json and ListConfigResources*.json.

v0 reports IsDefault per config; v1 replaces it with ConfigSource and adds synonyms.
"""
from josefk.wire.schema import BOOL, INT8, INT16, INT32, STRING, Api, Array, Field

DESCRIBE_CONFIGS = Api(32, "DescribeConfigs", versions="0-4", flexible="4+", request=[
    Field("resources", [
        Field("resource_type", INT8),
        Field("resource_name", STRING),
        Field("configuration_keys", Array(STRING), nullable="0+"),
    ], struct="DescribeConfigsResource"),
    Field("include_synonyms", BOOL, "1+", default=False),
    Field("include_documentation", BOOL, "3+", default=False),
], response=[
    Field("throttle_time_ms", INT32),
    Field("results", [
        Field("error_code", INT16),
        Field("error_message", STRING, nullable="0+"),
        Field("resource_type", INT8),
        Field("resource_name", STRING),
        Field("configs", [
            Field("name", STRING),
            Field("value", STRING, nullable="0+"),
            Field("read_only", BOOL),
            Field("is_default", BOOL, "0"),
            Field("config_source", INT8, "1+", default=-1),
            Field("is_sensitive", BOOL),
            Field("synonyms", [
                Field("name", STRING, "1+"),
                Field("value", STRING, "1+", nullable="0+"),
                Field("source", INT8, "1+"),
            ], "1+", struct="DescribeConfigsSynonym"),
            Field("config_type", INT8, "3+", default=0),
            Field("documentation", STRING, "3+", nullable="0+"),
        ], struct="DescribeConfigsResourceResult"),
    ], struct="DescribeConfigsResult"),
])

LIST_CONFIG_RESOURCES = Api(74, "ListConfigResources", versions="0-1", flexible="0+", request=[
    Field("resource_types", Array(INT8), "1+"),
], response=[
    Field("throttle_time_ms", INT32),
    Field("error_code", INT16),
    Field("config_resources", [
        Field("resource_name", STRING),
        Field("resource_type", INT8, "1+", default=16),
    ], struct="ConfigResource"),
])
