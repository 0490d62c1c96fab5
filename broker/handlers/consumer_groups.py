"""The consumer group protocol's APIs (KIP-848): translate ConsumerGroupHeartbeat and
ConsumerGroupDescribe to ``coordinator.GroupCoordinator`` calls and back."""
from __future__ import annotations

from typing import TYPE_CHECKING

from josefk.broker.security import acl
from josefk.broker.security.authorizer import GROUP, TOPIC, allowed, operations
from josefk.coordinator.group.consumer_groups import Heartbeat
from josefk.wire import errors
from josefk.wire.apis import CONSUMER_GROUP_DESCRIBE, CONSUMER_GROUP_HEARTBEAT

if TYPE_CHECKING:
    from josefk.broker.handlers.services import Services
    from josefk.wire.apis import ConsumerGroupDescribeRequest, ConsumerGroupHeartbeatRequest


async def handle_consumer_group_heartbeat(broker: Services, ctx,
                                          req: ConsumerGroupHeartbeatRequest):
    """Needs Read on the group (``requires_group`` in dispatch) and Describe on every topic it
    subscribes to by name; a regular expression only resolves to topics the member may
    describe."""
    R = CONSUMER_GROUP_HEARTBEAT.Response
    if req.subscribed_topic_names:
        denied = sorted(t for t in set(req.subscribed_topic_names)
                        if not allowed(broker, ctx, TOPIC, t, acl.DESCRIBE))
        if denied:
            return R(error_code=errors.TOPIC_AUTHORIZATION_FAILED,
                     error_message=f"The member is not authorized to access topics "
                                   f"{', '.join(denied)}.")
    owned = None
    if req.topic_partitions is not None:
        owned = {tp.topic_id: frozenset(tp.partitions) for tp in req.topic_partitions}
    res = await broker.groups.consumer_group_heartbeat(Heartbeat(
        req.group_id, req.member_id, req.member_epoch, req.instance_id, req.rack_id,
        req.rebalance_timeout_ms, req.subscribed_topic_names,
        req.subscribed_topic_regex if ctx.version >= 1 else None, req.server_assignor, owned,
        ctx.client_id or "", "/" + ctx.client_host, ctx.version),
        may_describe=lambda t: allowed(broker, ctx, TOPIC, t, acl.DESCRIBE))
    return R(error_code=res.error, error_message=res.message, member_id=res.member_id,
             member_epoch=res.member_epoch, heartbeat_interval_ms=res.heartbeat_interval_ms,
             assignment=heartbeat_assignment(R, res.assignment))


def heartbeat_assignment(R, assignment):
    """A heartbeat response's ``Assignment`` (``R``: the response class) from {topic id:
    partitions}, in a stable order; None (no change to report) stays None. Consumer and share
    group heartbeats answer the same shape."""
    if assignment is None:
        return None
    return R.Assignment(topic_partitions=[
        R.TopicPartitions(topic_id=t, partitions=sorted(ps))
        for t, ps in sorted(assignment.items(), key=lambda kv: str(kv[0]))])


def handle_consumer_group_describe(broker: Services, ctx, req: ConsumerGroupDescribeRequest):
    R = CONSUMER_GROUP_DESCRIBE.Response
    A = R.Assignment
    want_ops = req.include_authorized_operations
    names = [g for g in req.group_ids if allowed(broker, ctx, GROUP, g, acl.DESCRIBE)]
    out = [R.DescribedGroup(group_id=g, error_code=errors.GROUP_AUTHORIZATION_FAILED)
           for g in req.group_ids if g not in names]

    def assignment(parts):
        return A(topic_partitions=[A.TopicPartitions(topic_id=t, topic_name=n, partitions=ps)
                                   for t, n, ps in parts])

    for d in broker.groups.consumer_group_describe(names):
        if d.error:
            out.append(R.DescribedGroup(group_id=d.group_id, error_code=d.error,
                                        error_message=d.message))
            continue
        out.append(R.DescribedGroup(
            group_id=d.group_id, group_state=d.state, group_epoch=d.group_epoch,
            assignment_epoch=d.assignment_epoch, assignor_name=d.assignor,
            authorized_operations=operations(broker, ctx, GROUP, d.group_id, want_ops),
            members=[R.Member(member_id=m.member_id, instance_id=m.instance_id,
                              rack_id=m.rack_id, member_epoch=m.member_epoch,
                              client_id=m.client_id, client_host=m.client_host,
                              subscribed_topic_names=m.topic_names,
                              subscribed_topic_regex=m.topic_regex,
                              assignment=assignment(m.assignment),
                              target_assignment=assignment(m.target_assignment),
                              member_type=0 if m.classic else 1) for m in d.members]))
    return R(groups=out)
