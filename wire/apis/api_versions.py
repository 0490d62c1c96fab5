from josefk.wire.schema import BOOL, INT16, INT32, INT64, STRING, Api, Field

API_VERSIONS = Api(18, "ApiVersions", versions="0-4", flexible="3+", request=[
    Field("client_software_name", STRING, "3+"),
    Field("client_software_version", STRING, "3+"),
], response=[
    Field("error_code", INT16),
    Field("api_keys", [
        Field("api_key", INT16),
        Field("min_version", INT16),
        Field("max_version", INT16),
    ], struct="ApiVersion"),
    Field("throttle_time_ms", INT32, "1+"),
    Field("supported_features", [
        Field("name", STRING),
        Field("min_version", INT16),
        Field("max_version", INT16),
    ], "3+", tag=0, struct="SupportedFeatureKey"),
    Field("finalized_features_epoch", INT64, "3+", tag=1, default=-1),
    Field("finalized_features", [
        Field("name", STRING),
        Field("max_version_level", INT16),
        Field("min_version_level", INT16),
    ], "3+", tag=2, struct="FinalizedFeatureKey"),
    Field("zk_migration_ready", BOOL, "3+", tag=3),
])
