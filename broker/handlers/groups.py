"""Consumer group APIs: translate requests to `coordinator.GroupCoordinator` calls and back."""
from __future__ import annotations

from typing import TYPE_CHECKING

from josefk.broker.security import acl
from josefk.broker.security.authorizer import (CLUSTER, CLUSTER_NAME, GROUP, TRANSACTIONAL_ID,
                                               allowed, operations)
from josefk.broker.group_log import ensure_offsets_topic
from josefk.broker.txn import ensure_txn_topic
from josefk.wire import errors
from josefk.wire.types import uuid_from_base64
from josefk.wire.apis import (DELETE_GROUPS, DESCRIBE_GROUPS, FIND_COORDINATOR, HEARTBEAT,
                              JOIN_GROUP, LEAVE_GROUP, LIST_GROUPS, SYNC_GROUP)

if TYPE_CHECKING:
    from josefk.broker.handlers.services import Services
    from josefk.wire.apis import (DeleteGroupsRequest,
                                  DescribeGroupsRequest,
                                  FindCoordinatorRequest,
                                  HeartbeatRequest,
                                  JoinGroupRequest,
                                  LeaveGroupRequest,
                                  ListGroupsRequest,
                                  SyncGroupRequest)

GROUP_KEY, TRANSACTION_KEY, SHARE_KEY = 0, 1, 2


def handle_find_coordinator(broker: Services, ctx, req: FindCoordinatorRequest):
    R = FIND_COORDINATOR.Response
    v = ctx.version
    keys = req.coordinator_keys if v >= 4 else [req.key]
    found = []
    for key in keys:
        node = None
        if req.key_type not in (GROUP_KEY, TRANSACTION_KEY, SHARE_KEY) or (
                req.key_type == SHARE_KEY and not share_key(key)):
            code, msg = errors.INVALID_REQUEST, f"Unknown coordinator type {req.key_type}" \
                if req.key_type != SHARE_KEY else f"Invalid share coordinator key {key}"
        elif req.key_type == GROUP_KEY and not allowed(broker, ctx, GROUP, key, acl.DESCRIBE):
            code, msg = errors.GROUP_AUTHORIZATION_FAILED, "Group authorization failed."
        elif req.key_type == TRANSACTION_KEY and not allowed(broker, ctx, TRANSACTIONAL_ID, key,
                                                             acl.DESCRIBE):
            code, msg = (errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                         "Transactional Id authorization failed.")
        elif req.key_type == SHARE_KEY and not allowed(broker, ctx, CLUSTER, CLUSTER_NAME,
                                                       acl.CLUSTER_ACTION):
            code, msg = errors.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed."
        else:
            if req.key_type == GROUP_KEY:
                node = _coordinator_of(broker, ensure_offsets_topic(broker.internal_topics), broker.groups, key)
            elif req.key_type == TRANSACTION_KEY:
                node = _coordinator_of(broker, ensure_txn_topic(broker.internal_topics), broker.txn, key)
            else:
                node = broker.metadata.brokers.get(
                    broker.share_persister.coordinator_node(*share_key(key)))
            node = node.on(ctx.listener) if node is not None else None
            code, msg = ((errors.NONE, None) if node is not None else
                         (errors.COORDINATOR_NOT_AVAILABLE, "The coordinator is not available."))
        found.append(R.Coordinator(key=key, node_id=node.node_id if node else -1,
                                   host=node.host if node else "",
                                   port=node.port if node else -1, error_code=code,
                                   error_message=msg))
    if v >= 4:
        return R(coordinators=found)
    c = found[0]
    return R(error_code=c.error_code, error_message=c.error_message, node_id=c.node_id,
             host=c.host, port=c.port)


def share_key(key: str):
    """(group id, topic id, partition) of a share coordinator key "group:topicId:partition"
    (KIP-932), or None."""
    rest = key.rsplit(":", 2)
    if len(rest) != 3 or not rest[0]:
        return None
    try:
        return rest[0], uuid_from_base64(rest[1]), int(rest[2])
    except ValueError:
        return None


def _coordinator_of(broker: Services, topic, coordinator, key):
    """The broker leading ``key``'s partition of the coordinator's internal ``topic``
    (``__consumer_offsets`` for a group, ``__transaction_state`` for a transactional id), or
    None while the topic is being created."""
    if topic is None:
        return None
    index = coordinator.partition_for(key)
    if index >= len(topic.partitions):
        return None
    return broker.metadata.brokers.get(topic.partitions[index].leader)


async def handle_join_group(broker: Services, ctx, req: JoinGroupRequest):
    R = JOIN_GROUP.Response
    v = ctx.version
    if broker.share_groups.has(req.group_id):  # the id names a share group
        return R(error_code=errors.INCONSISTENT_GROUP_PROTOCOL, member_id=req.member_id,
                 protocol_name=None if v >= 7 else "", leader="", members=[])
    res = await broker.groups.join_group(
        req.group_id, req.member_id, req.group_instance_id, ctx.client_id,
        "/" + ctx.client_host,  # Kafka shows a member's host as Java's InetAddress.toString()
        req.session_timeout_ms, req.rebalance_timeout_ms if v >= 1 else req.session_timeout_ms,
        req.protocol_type, [(p.name, p.metadata) for p in req.protocols],
        require_known_member_id=v >= 4, reason=req.reason if v >= 8 else None,
        supports_skip_assignment=v >= 9)
    protocol_name = res.protocol_name
    if v < 7 and protocol_name is None:
        protocol_name = ""
    return R(error_code=res.error, generation_id=res.generation_id,
             protocol_type=res.protocol_type, protocol_name=protocol_name,
             leader=res.leader_id, skip_assignment=res.skip_assignment, member_id=res.member_id,
             members=[R.JoinGroupResponseMember(member_id=m, group_instance_id=i, metadata=md)
                      for m, i, md in res.members])


async def handle_sync_group(broker: Services, ctx, req: SyncGroupRequest):
    R = SYNC_GROUP.Response
    v = ctx.version
    res = await broker.groups.sync_group(
        req.group_id, req.generation_id, req.member_id, req.group_instance_id,
        req.protocol_type if v >= 5 else None, req.protocol_name if v >= 5 else None,
        {a.member_id: a.assignment for a in req.assignments})
    return R(error_code=res.error, protocol_type=res.protocol_type,
             protocol_name=res.protocol_name, assignment=res.assignment or b"")


def handle_heartbeat(broker: Services, ctx, req: HeartbeatRequest):
    code = broker.groups.heartbeat(req.group_id, req.generation_id, req.member_id,
                                   req.group_instance_id)
    return HEARTBEAT.Response(error_code=code)


async def handle_leave_group(broker: Services, ctx, req: LeaveGroupRequest):
    R = LEAVE_GROUP.Response
    if ctx.version >= 3:
        members = [(m.member_id, m.group_instance_id, m.reason) for m in req.members]
    else:
        members = [(req.member_id, None, None)]
    code, results = await broker.groups.leave_group(req.group_id, members)
    if ctx.version < 3 and not code and results:
        code = results[0].error
    return R(error_code=code, members=[
        R.MemberResponse(member_id=r.member_id, group_instance_id=r.group_instance_id,
                         error_code=r.error) for r in results])


def handle_describe_groups(broker: Services, ctx, req: DescribeGroupsRequest):
    R = DESCRIBE_GROUPS.Response
    want_ops = ctx.version >= 3 and req.include_authorized_operations
    out = []
    names = [g for g in req.groups if allowed(broker, ctx, GROUP, g, acl.DESCRIBE)]
    out += [R.DescribedGroup(error_code=errors.GROUP_AUTHORIZATION_FAILED, group_id=g,
                             authorized_operations=acl.NOT_REQUESTED)
            for g in req.groups if g not in names]
    for d in broker.groups.describe_groups(names):
        if d.state == "Dead" and not d.error and broker.share_groups.has(d.group_id):
            d.error = errors.GROUP_ID_NOT_FOUND  # a share group: ShareGroupDescribe tells it
        out.append(R.DescribedGroup(
            error_code=d.error, group_id=d.group_id, group_state=d.state,
            protocol_type=d.protocol_type, protocol_data=d.protocol,
            authorized_operations=operations(broker, ctx, GROUP, d.group_id, want_ops),
            members=[R.DescribedGroupMember(
                member_id=m.member_id, group_instance_id=m.group_instance_id,
                client_id=m.client_id, client_host=m.client_host, member_metadata=m.metadata,
                member_assignment=m.assignment) for m in d.members]))
    return R(groups=out)


def handle_list_groups(broker: Services, ctx, req: ListGroupsRequest):
    R = LIST_GROUPS.Response
    v = ctx.version
    types = {t.strip().lower() for t in req.types_filter} if v >= 5 and req.types_filter \
        else None
    states = req.states_filter if v >= 4 and req.states_filter else None
    code, groups = broker.groups.list_groups(states)
    # "classic", "consumer" or "share" (an unknown type matches nothing)
    listed = [(g, g.group_type) for g in groups if types is None or g.group_type in types]
    if types is None or "share" in types:
        listed += [(g, "share") for g in broker.share_groups.list_groups(states)]
    if not allowed(broker, ctx, CLUSTER, CLUSTER_NAME, acl.DESCRIBE):  # only the describable
        listed = [(g, t) for g, t in listed
                  if allowed(broker, ctx, GROUP, g.group_id, acl.DESCRIBE)]
    return R(error_code=code, groups=[
        R.ListedGroup(group_id=g.group_id, protocol_type=g.protocol_type, group_state=g.state,
                      group_type=t) for g, t in listed])


async def handle_delete_groups(broker: Services, ctx, req: DeleteGroupsRequest):
    R = DELETE_GROUPS.Response
    names = [g for g in req.groups_names if allowed(broker, ctx, GROUP, g, acl.DELETE)]
    shared = [g for g in names if broker.share_groups.has(g)]
    results = await broker.groups.delete_groups([g for g in names if g not in shared])
    for g in shared:
        results[g] = await broker.share_groups.delete(g)
    results.update((g, errors.GROUP_AUTHORIZATION_FAILED) for g in req.groups_names
                   if g not in names)
    return R(results=[R.DeletableGroupResult(group_id=g, error_code=code)
                      for g, code in results.items()])
