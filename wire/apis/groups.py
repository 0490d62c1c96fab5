"""Classic group protocol APIs. Mirror Kafka's <Name>Request.json / <Name>Response.json.

FindCoordinator (10) 0-6, JoinGroup (11) 0-9, Heartbeat (12) 0-4, LeaveGroup (13) 0-5,
SyncGroup (14) 0-5, DescribeGroups (15) 0-5, ListGroups (16) 0-5, DeleteGroups (42) 0-2.
"""
from josefk.wire.schema import BOOL, BYTES, INT8, INT16, INT32, STRING, Api, Array, Field

# v4 batches keys (KIP-699); v5 (TRANSACTION_ABORTABLE) and v6 (share groups) add no fields.
FIND_COORDINATOR = Api(10, "FindCoordinator", versions="0-6", flexible="3+", request=[
    Field("key", STRING, "0-3"),
    Field("key_type", INT8, "1+", default=0),
    Field("coordinator_keys", Array(STRING), "4+"),
], response=[
    Field("throttle_time_ms", INT32, "1+"),
    Field("error_code", INT16, "0-3"),
    Field("error_message", STRING, "1-3", nullable="1-3"),
    Field("node_id", INT32, "0-3"),
    Field("host", STRING, "0-3"),
    Field("port", INT32, "0-3"),
    Field("coordinators", [
        Field("key", STRING, "4+"),
        Field("node_id", INT32, "4+"),
        Field("host", STRING, "4+"),
        Field("port", INT32, "4+"),
        Field("error_code", INT16, "4+"),
        Field("error_message", STRING, "4+", nullable="4+"),
    ], "4+", struct="Coordinator"),
])

JOIN_GROUP = Api(11, "JoinGroup", versions="0-9", flexible="6+", request=[
    Field("group_id", STRING),
    Field("session_timeout_ms", INT32),
    Field("rebalance_timeout_ms", INT32, "1+", default=-1),
    Field("member_id", STRING),
    Field("group_instance_id", STRING, "5+", nullable="5+", default=None),
    Field("protocol_type", STRING),
    Field("protocols", [
        Field("name", STRING),
        Field("metadata", BYTES),
    ], struct="JoinGroupRequestProtocol"),
    Field("reason", STRING, "8+", nullable="8+", default=None),
], response=[
    Field("throttle_time_ms", INT32, "2+"),
    Field("error_code", INT16),
    Field("generation_id", INT32, default=-1),
    Field("protocol_type", STRING, "7+", nullable="7+", default=None),
    Field("protocol_name", STRING, nullable="7+"),
    Field("leader", STRING),
    Field("skip_assignment", BOOL, "9+", default=False),
    Field("member_id", STRING),
    Field("members", [
        Field("member_id", STRING),
        Field("group_instance_id", STRING, "5+", nullable="5+", default=None),
        Field("metadata", BYTES),
    ], struct="JoinGroupResponseMember"),
])

HEARTBEAT = Api(12, "Heartbeat", versions="0-4", flexible="4+", request=[
    Field("group_id", STRING),
    Field("generation_id", INT32),
    Field("member_id", STRING),
    Field("group_instance_id", STRING, "3+", nullable="3+", default=None),
], response=[
    Field("throttle_time_ms", INT32, "1+"),
    Field("error_code", INT16),
])

LEAVE_GROUP = Api(13, "LeaveGroup", versions="0-5", flexible="4+", request=[
    Field("group_id", STRING),
    Field("member_id", STRING, "0-2"),
    Field("members", [
        Field("member_id", STRING, "3+"),
        Field("group_instance_id", STRING, "3+", nullable="3+", default=None),
        Field("reason", STRING, "5+", nullable="5+", default=None),
    ], "3+", struct="MemberIdentity"),
], response=[
    Field("throttle_time_ms", INT32, "1+"),
    Field("error_code", INT16),
    Field("members", [
        Field("member_id", STRING, "3+"),
        Field("group_instance_id", STRING, "3+", nullable="3+"),
        Field("error_code", INT16, "3+"),
    ], "3+", struct="MemberResponse"),
])

SYNC_GROUP = Api(14, "SyncGroup", versions="0-5", flexible="4+", request=[
    Field("group_id", STRING),
    Field("generation_id", INT32),
    Field("member_id", STRING),
    Field("group_instance_id", STRING, "3+", nullable="3+", default=None),
    Field("protocol_type", STRING, "5+", nullable="5+", default=None),
    Field("protocol_name", STRING, "5+", nullable="5+", default=None),
    Field("assignments", [
        Field("member_id", STRING),
        Field("assignment", BYTES),
    ], struct="SyncGroupRequestAssignment"),
], response=[
    Field("throttle_time_ms", INT32, "1+"),
    Field("error_code", INT16),
    Field("protocol_type", STRING, "5+", nullable="5+", default=None),
    Field("protocol_name", STRING, "5+", nullable="5+", default=None),
    Field("assignment", BYTES),
])

DESCRIBE_GROUPS = Api(15, "DescribeGroups", versions="0-5", flexible="5+", request=[
    Field("groups", Array(STRING)),
    Field("include_authorized_operations", BOOL, "3+"),
], response=[
    Field("throttle_time_ms", INT32, "1+"),
    Field("groups", [
        Field("error_code", INT16),
        Field("group_id", STRING),
        Field("group_state", STRING),
        Field("protocol_type", STRING),
        Field("protocol_data", STRING),
        Field("members", [
            Field("member_id", STRING),
            Field("group_instance_id", STRING, "4+", nullable="4+", default=None),
            Field("client_id", STRING),
            Field("client_host", STRING),
            Field("member_metadata", BYTES),
            Field("member_assignment", BYTES),
        ], struct="DescribedGroupMember"),
        Field("authorized_operations", INT32, "3+", default=-2147483648),
    ], struct="DescribedGroup"),
])

LIST_GROUPS = Api(16, "ListGroups", versions="0-5", flexible="3+", request=[
    Field("states_filter", Array(STRING), "4+"),
    Field("types_filter", Array(STRING), "5+"),
], response=[
    Field("throttle_time_ms", INT32, "1+"),
    Field("error_code", INT16),
    Field("groups", [
        Field("group_id", STRING),
        Field("protocol_type", STRING),
        Field("group_state", STRING, "4+"),
        Field("group_type", STRING, "5+"),
    ], struct="ListedGroup"),
])

DELETE_GROUPS = Api(42, "DeleteGroups", versions="0-2", flexible="2+", request=[
    Field("groups_names", Array(STRING)),
], response=[
    Field("throttle_time_ms", INT32),
    Field("results", [
        Field("group_id", STRING),
        Field("error_code", INT16),
    ], struct="DeletableGroupResult"),
])
