"""SASL and SCRAM credential APIs. Mirror Kafka's SaslHandshake*.json (key 17, 0-1: after v0 the
SASL tokens follow as bare size-prefixed frames, after v1 inside SaslAuthenticate),
SaslAuthenticate*.json (key 36, 0-2), DescribeUserScramCredentials*.json (key 50, 0) and
AlterUserScramCredentials*.json (key 51, 0)."""
from josefk.wire.schema import BYTES, INT8, INT16, INT32, INT64, STRING, Api, Array, Field

SASL_HANDSHAKE = Api(17, "SaslHandshake", versions="0-1", flexible="none", request=[
    Field("mechanism", STRING),
], response=[
    Field("error_code", INT16),
    Field("mechanisms", Array(STRING)),
])

SASL_AUTHENTICATE = Api(36, "SaslAuthenticate", versions="0-2", flexible="2+", request=[
    Field("auth_bytes", BYTES),
], response=[
    Field("error_code", INT16),
    Field("error_message", STRING, nullable="0+"),
    Field("auth_bytes", BYTES),
    Field("session_lifetime_ms", INT64, "1+", default=0),
])

DESCRIBE_USER_SCRAM_CREDENTIALS = Api(50, "DescribeUserScramCredentials", versions="0",
                                      flexible="0+", request=[
    Field("users", [
        Field("name", STRING),
    ], nullable="0+", struct="UserName"),
], response=[
    Field("throttle_time_ms", INT32),
    Field("error_code", INT16),
    Field("error_message", STRING, nullable="0+"),
    Field("results", [
        Field("user", STRING),
        Field("error_code", INT16),
        Field("error_message", STRING, nullable="0+"),
        Field("credential_infos", [
            Field("mechanism", INT8),
            Field("iterations", INT32),
        ], struct="CredentialInfo"),
    ], struct="DescribeUserScramCredentialsResult"),
])

ALTER_USER_SCRAM_CREDENTIALS = Api(51, "AlterUserScramCredentials", versions="0",
                                   flexible="0+", request=[
    Field("deletions", [
        Field("name", STRING),
        Field("mechanism", INT8),
    ], struct="ScramCredentialDeletion"),
    Field("upsertions", [
        Field("name", STRING),
        Field("mechanism", INT8),
        Field("iterations", INT32),
        Field("salt", BYTES),
        Field("salted_password", BYTES),
    ], struct="ScramCredentialUpsertion"),
], response=[
    Field("throttle_time_ms", INT32),
    Field("results", [
        Field("user", STRING),
        Field("error_code", INT16),
        Field("error_message", STRING, nullable="0+"),
    ], struct="AlterUserScramCredentialsResult"),
])
