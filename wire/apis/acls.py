"""ACL APIs, versions 0-3 as Kafka 3.9 serves them (4.0 dropped v0, KIP-896; v0 knows only
literal resource patterns). Mirror Kafka's DescribeAcls*.json (key 29), CreateAcls*.json
(key 30) and DeleteAcls*.json (key 31)."""
from josefk.wire.schema import INT8, INT16, INT32, STRING, Api, Field


def _filter():
    return [
        Field("resource_type_filter", INT8),
        Field("resource_name_filter", STRING, nullable="0+"),
        Field("pattern_type_filter", INT8, "1+", default=3),
        Field("principal_filter", STRING, nullable="0+"),
        Field("host_filter", STRING, nullable="0+"),
        Field("operation", INT8),
        Field("permission_type", INT8),
    ]


def _acl():
    return [
        Field("principal", STRING),
        Field("host", STRING),
        Field("operation", INT8),
        Field("permission_type", INT8),
    ]


DESCRIBE_ACLS = Api(29, "DescribeAcls", versions="0-3", flexible="2+", request=_filter(),
                    response=[
    Field("throttle_time_ms", INT32),
    Field("error_code", INT16),
    Field("error_message", STRING, nullable="0+"),
    Field("resources", [
        Field("resource_type", INT8),
        Field("resource_name", STRING),
        Field("pattern_type", INT8, "1+", default=3),
        Field("acls", _acl(), struct="AclDescription"),
    ], struct="DescribeAclsResource"),
])

CREATE_ACLS = Api(30, "CreateAcls", versions="0-3", flexible="2+", request=[
    Field("creations", [
        Field("resource_type", INT8),
        Field("resource_name", STRING),
        Field("resource_pattern_type", INT8, "1+", default=3),
        *_acl(),
    ], struct="AclCreation"),
], response=[
    Field("throttle_time_ms", INT32),
    Field("results", [
        Field("error_code", INT16),
        Field("error_message", STRING, nullable="0+"),
    ], struct="AclCreationResult"),
])

DELETE_ACLS = Api(31, "DeleteAcls", versions="0-3", flexible="2+", request=[
    Field("filters", _filter(), struct="DeleteAclsFilter"),
], response=[
    Field("throttle_time_ms", INT32),
    Field("filter_results", [
        Field("error_code", INT16),
        Field("error_message", STRING, nullable="0+"),
        Field("matching_acls", [
            Field("error_code", INT16),
            Field("error_message", STRING, nullable="0+"),
            Field("resource_type", INT8),
            Field("resource_name", STRING),
            Field("pattern_type", INT8, "1+", default=3),
            *_acl(),
        ], struct="DeleteAclsMatchingAcl"),
    ], struct="DeleteAclsFilterResult"),
])
