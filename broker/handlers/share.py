"""Share groups (KIP-932): the group's membership at its coordinator (ShareGroupHeartbeat,
ShareGroupDescribe), records at the partitions' leaders (ShareFetch, ShareAcknowledge), the
share coordinator's APIs between brokers and the share-group admin APIs. Requests are
translated to `coordinator.group.share_groups`, `broker.share.manager` and `coordinator.share.share_state`
calls and back."""
from __future__ import annotations

from typing import TYPE_CHECKING

import asyncio
import uuid

from josefk.broker.channel import ChannelError
from josefk.broker.handlers.consumer_groups import heartbeat_assignment
from josefk.broker.security import acl
from josefk.broker.security.authorizer import GROUP, TOPIC, allowed, operations
from josefk.wire import errors
from josefk.wire.apis import (ALTER_SHARE_GROUP_OFFSETS, DELETE_SHARE_GROUP_OFFSETS,
                              DELETE_SHARE_GROUP_STATE, DESCRIBE_SHARE_GROUP_OFFSETS,
                              INITIALIZE_SHARE_GROUP_STATE, LIST_OFFSETS, READ_SHARE_GROUP_STATE,
                              READ_SHARE_GROUP_STATE_SUMMARY, SHARE_ACKNOWLEDGE, SHARE_FETCH,
                              SHARE_GROUP_DESCRIBE, SHARE_GROUP_HEARTBEAT,
                              WRITE_SHARE_GROUP_STATE)

if TYPE_CHECKING:
    from josefk.broker.handlers.services import Services
    from josefk.wire.apis import (AlterShareGroupOffsetsRequest,
                                  DeleteShareGroupOffsetsRequest,
                                  DeleteShareGroupStateRequest,
                                  DescribeShareGroupOffsetsRequest,
                                  InitializeShareGroupStateRequest,
                                  ReadShareGroupStateRequest,
                                  ReadShareGroupStateSummaryRequest,
                                  ShareAcknowledgeRequest,
                                  ShareFetchRequest,
                                  ShareGroupDescribeRequest,
                                  ShareGroupHeartbeatRequest,
                                  WriteShareGroupStateRequest)

LATEST = -1
_ZERO = uuid.UUID(int=0)
BATCH_OPTIMIZED, RECORD_LIMIT = 0, 1  # ShareFetch v2's ShareAcquireMode (KIP-1206)


# -- membership, at the group coordinator ---------------------------------------------------------

async def handle_share_group_heartbeat(broker: Services, ctx, req: ShareGroupHeartbeatRequest):
    R = SHARE_GROUP_HEARTBEAT.Response
    denied = [t for t in req.subscribed_topic_names or ()
              if not allowed(broker, ctx, TOPIC, t, acl.DESCRIBE)]
    if denied:
        return R(error_code=errors.TOPIC_AUTHORIZATION_FAILED,
                 error_message=f"Topic authorization failed for topics {sorted(denied)}")
    res = await broker.share_groups.heartbeat(
        req.group_id, req.member_id, req.member_epoch, req.rack_id, req.subscribed_topic_names,
        ctx.client_id, "/" + ctx.client_host)
    return R(error_code=res.error, error_message=res.message, member_id=res.member_id,
             member_epoch=res.epoch, heartbeat_interval_ms=res.interval_ms,
             assignment=heartbeat_assignment(R, res.assignment))


def handle_share_group_describe(broker: Services, ctx, req: ShareGroupDescribeRequest):
    R = SHARE_GROUP_DESCRIBE.Response
    by_id = broker.metadata.topics_by_id
    out = []
    for gid in req.group_ids:
        if not allowed(broker, ctx, GROUP, gid, acl.DESCRIBE):
            out.append(R.DescribedGroup(error_code=errors.GROUP_AUTHORIZATION_FAILED,
                                        group_id=gid))
            continue
        code, message, group = broker.share_groups.describe(gid)
        if group is None:
            out.append(R.DescribedGroup(error_code=code, error_message=message, group_id=gid,
                                        group_state="Dead" if code else ""))
            continue
        members = []
        for m in group.members.values():
            tps = [R.TopicPartitions(topic_id=t, topic_name=by_id[t].name, partitions=ps)
                   for t, ps in sorted(m.assignment.items(), key=lambda kv: str(kv[0]))
                   if t in by_id]
            members.append(R.Member(member_id=m.member_id, rack_id=m.rack_id,
                                    member_epoch=m.epoch, client_id=m.client_id,
                                    client_host=m.client_host,
                                    subscribed_topic_names=list(m.subscribed),
                                    assignment=R.Assignment(topic_partitions=tps)))
        out.append(R.DescribedGroup(
            group_id=gid, group_state=group.state, group_epoch=group.epoch,
            assignment_epoch=group.assignment_epoch, assignor_name="simple", members=members,
            authorized_operations=operations(broker, ctx, GROUP, gid,
                                             req.include_authorized_operations)))
    return R(groups=out)


# -- records, at the partitions' leaders ---------------------------------------------------------

def _ack_batches(p):
    return [(b.first_offset, b.last_offset, list(b.acknowledge_types))
            for b in p.acknowledgement_batches]


def _leader(broker: Services, topic_id, index):
    meta = broker.metadata.topics_by_id.get(topic_id)
    if meta is None or not 0 <= index < len(meta.partitions):
        return -1, -1
    p = meta.partitions[index]
    return p.leader, p.leader_epoch


def _endpoints(broker: Services, ctx, R, leaders):
    out = []
    for node_id in sorted(leaders):
        b = broker.metadata.brokers.get(node_id)
        b = b.on(ctx.listener) if b is not None else None
        if b is not None:
            out.append(R.NodeEndpoint(node_id=b.node_id, host=b.host, port=b.port, rack=b.rack))
    return out


def _topic_denied(broker: Services, ctx, topic_ids) -> set:
    by_id = broker.metadata.topics_by_id
    return {t for t in topic_ids
            if t in by_id and not allowed(broker, ctx, TOPIC, by_id[t].name, acl.READ)}


def _acks_by_partition(broker: Services, topics, denied):
    """{(topic, index, topic id): batches} of the request's acknowledgements, and the errors of
    those that cannot be applied: {(topic id, index): error}."""
    by_id = broker.metadata.topics_by_id
    acks, bad = {}, {}
    for t in topics:
        for p in t.partitions:
            if not p.acknowledgement_batches:
                continue
            meta = by_id.get(t.topic_id)
            if t.topic_id in denied:
                bad[(t.topic_id, p.partition_index)] = errors.TOPIC_AUTHORIZATION_FAILED
            elif meta is None:
                bad[(t.topic_id, p.partition_index)] = errors.UNKNOWN_TOPIC_ID
            else:
                acks.setdefault((meta.name, p.partition_index, t.topic_id), []).extend(
                    _ack_batches(p))
    return acks, bad


async def handle_share_fetch(broker: Services, ctx, req: ShareFetchRequest):
    R = SHARE_FETCH.Response
    v = ctx.version
    manager = broker.share
    lock_ms = manager.lock_ms(req.group_id or "")
    if not req.group_id or not req.member_id:
        return R(error_code=errors.INVALID_REQUEST, error_message="GroupId and MemberId are "
                 "required.", acquisition_lock_timeout_ms=lock_ms)
    if v >= 2 and req.share_acquire_mode not in (BATCH_OPTIMIZED, RECORD_LIMIT):
        return R(error_code=errors.INVALID_REQUEST, error_message=f"Unknown ShareAcquireMode "
                 f"{req.share_acquire_mode}: 0 (batch_optimized) or 1 (record_limit).",
                 acquisition_lock_timeout_ms=lock_ms)
    denied = _topic_denied(broker, ctx, {t.topic_id for t in req.topics})
    acks, ack_errors = _acks_by_partition(broker, req.topics, denied)
    wanted = {(t.topic_id, p.partition_index) for t in req.topics for p in t.partitions}
    forgotten = {(t.topic_id, p) for t in req.forgotten_topics_data for p in t.partitions}
    code, session = manager.session_for(req.group_id, req.member_id, req.share_session_epoch,
                                        ctx.connection, wanted, forgotten, bool(acks))
    if code:
        return R(error_code=code, acquisition_lock_timeout_ms=lock_ms)
    acked = manager.acknowledge(req.group_id, req.member_id, acks, v >= 2 and req.is_renew_ack)
    fetched = {}
    if req.share_session_epoch == -1:
        await manager.release_session(session, delivered=False)
    elif req.max_records > 0 and req.max_bytes > 0:
        partitions = {tp for tp in session.partitions if tp[0] not in denied}
        for tp in session.partitions - partitions:
            fetched[tp] = (errors.TOPIC_AUTHORIZATION_FAILED, None, [])
        fetched.update(await manager.fetch(
            req.group_id, req.member_id, partitions, req.max_wait_ms, req.max_bytes,
            req.max_records, strict=v >= 2 and req.share_acquire_mode == RECORD_LIMIT))
    for (_t, index, topic_id), code in acked.items():
        ack_errors[(topic_id, index)] = code if type(code) is int else await code
    by_topic: dict = {}
    leaders = set()
    for key in sorted(set(fetched) | set(ack_errors), key=lambda k: (str(k[0]), k[1])):
        topic_id, index = key
        code, records, acquired = fetched.get(key, (errors.NONE, None, []))
        if code == errors.NONE and not acquired and key not in ack_errors:
            continue  # nothing to say about it (Kafka leaves it out)
        leader = R.LeaderIdAndEpoch(leader_id=-1, leader_epoch=-1)
        if code in (errors.NOT_LEADER_OR_FOLLOWER, errors.FENCED_LEADER_EPOCH):
            lid, lepoch = _leader(broker, topic_id, index)
            leader = R.LeaderIdAndEpoch(leader_id=lid, leader_epoch=lepoch)
            if lid >= 0:
                leaders.add(lid)
        by_topic.setdefault(topic_id, []).append(R.PartitionData(
            partition_index=index, error_code=code,
            acknowledge_error_code=ack_errors.get(key, errors.NONE), current_leader=leader,
            records=records if records is not None else b"",
            acquired_records=[R.AcquiredRecords(first_offset=a, last_offset=b, delivery_count=c)
                              for a, b, c in acquired]))
    return R(acquisition_lock_timeout_ms=lock_ms,
             responses=[R.ShareFetchableTopicResponse(topic_id=t, partitions=ps)
                        for t, ps in by_topic.items()],
             node_endpoints=_endpoints(broker, ctx, R, leaders))


async def handle_share_acknowledge(broker: Services, ctx, req: ShareAcknowledgeRequest):
    R = SHARE_ACKNOWLEDGE.Response
    v = ctx.version
    manager = broker.share
    lock_ms = manager.lock_ms(req.group_id or "")
    if not req.group_id or not req.member_id:
        return R(error_code=errors.INVALID_REQUEST, acquisition_lock_timeout_ms=lock_ms)
    code, session = manager.acknowledge_session(req.group_id, req.member_id,
                                                req.share_session_epoch, ctx.connection)
    if code:
        return R(error_code=code, acquisition_lock_timeout_ms=lock_ms)
    denied = _topic_denied(broker, ctx, {t.topic_id for t in req.topics})
    acks, results = _acks_by_partition(broker, req.topics, denied)
    for (_t, index, topic_id), code in manager.acknowledge(
            req.group_id, req.member_id, acks, v >= 2 and req.is_renew_ack).items():
        results[(topic_id, index)] = code if type(code) is int else await code
    if req.share_session_epoch == -1:
        await manager.release_session(session, delivered=False)
    by_topic: dict = {}
    leaders = set()
    for (topic_id, index), code in sorted(results.items(), key=lambda kv: (str(kv[0][0]),
                                                                            kv[0][1])):
        lid, lepoch = (_leader(broker, topic_id, index) if code == errors.NOT_LEADER_OR_FOLLOWER
                       else (-1, -1))
        if lid >= 0:
            leaders.add(lid)
        by_topic.setdefault(topic_id, []).append(R.PartitionData(
            partition_index=index, error_code=code,
            current_leader=R.LeaderIdAndEpoch(leader_id=lid, leader_epoch=lepoch)))
    return R(acquisition_lock_timeout_ms=lock_ms,
             responses=[R.ShareAcknowledgeTopicResponse(topic_id=t, partitions=ps)
                        for t, ps in by_topic.items()],
             node_endpoints=_endpoints(broker, ctx, R, leaders))


# -- the share coordinator's APIs (between brokers) ------------------------------------------------

async def _per_partition(api, result, req, answer):
    """Answer every (topic id, partition) of a share-coordinator request with ``answer(topic
    id, partition data)`` -> the PartitionResult's fields beyond the partition index; ``result``
    names the response's topic struct."""
    R = api.Response
    results = []
    for t in req.topics:
        parts = []
        for p in t.partitions:
            fields = await answer(t.topic_id, p)
            parts.append(R.PartitionResult(partition=p.partition, **fields))
        results.append(getattr(R, result)(topic_id=t.topic_id, partitions=parts))
    return R(results=results)


async def handle_initialize_share_group_state(broker: Services, ctx,
                                              req: InitializeShareGroupStateRequest):
    async def answer(topic_id, p):
        return {"error_code": await broker.share_state.initialize(
            req.group_id, topic_id, p.partition, p.state_epoch, p.start_offset)}
    return await _per_partition(INITIALIZE_SHARE_GROUP_STATE, "InitializeStateResult", req, answer)


async def handle_read_share_group_state(broker: Services, ctx, req: ReadShareGroupStateRequest):
    B = READ_SHARE_GROUP_STATE.Response.StateBatch

    async def answer(topic_id, p):
        code, state_epoch, start, batches = await broker.share_state.read(
            req.group_id, topic_id, p.partition, p.leader_epoch)
        return {"error_code": code, "state_epoch": state_epoch, "start_offset": start,
                "state_batches": [B(first_offset=f, last_offset=la, delivery_state=s,
                                    delivery_count=c) for f, la, s, c in batches]}
    return await _per_partition(READ_SHARE_GROUP_STATE, "ReadStateResult", req, answer)


async def handle_write_share_group_state(broker: Services, ctx, req: WriteShareGroupStateRequest):
    v = ctx.version

    async def answer(topic_id, p):
        return {"error_code": await broker.share_state.write(
            req.group_id, topic_id, p.partition, p.state_epoch, p.leader_epoch, p.start_offset,
            [(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
             for b in p.state_batches], p.delivery_complete_count if v >= 1 else -1)}
    return await _per_partition(WRITE_SHARE_GROUP_STATE, "WriteStateResult", req, answer)


async def handle_delete_share_group_state(broker: Services, ctx,
                                          req: DeleteShareGroupStateRequest):
    async def answer(topic_id, p):
        return {"error_code": await broker.share_state.delete(req.group_id, topic_id,
                                                             p.partition)}
    return await _per_partition(DELETE_SHARE_GROUP_STATE, "DeleteStateResult", req, answer)


async def handle_read_share_group_state_summary(broker: Services, ctx,
                                                req: ReadShareGroupStateSummaryRequest):
    async def answer(topic_id, p):
        code, state_epoch, leader_epoch, start, complete = broker.share_state.summary(
            req.group_id, topic_id, p.partition)
        return {"error_code": code, "state_epoch": state_epoch, "leader_epoch": leader_epoch,
                "start_offset": start, "delivery_complete_count": complete}
    return await _per_partition(READ_SHARE_GROUP_STATE_SUMMARY, "ReadStateSummaryResult", req, answer)


# -- admin, at the group coordinator ---------------------------------------------------------------

async def latest_offset(broker: Services, topic: str, index: int) -> int:
    """The partition's high watermark, asked of its leader; -1 when it cannot be had."""
    part = broker.replicas.leader_partition(topic, index)
    if part is not None:
        return part.log.high_watermark
    meta = broker.metadata.topics.get(topic)
    if broker.cluster is None or meta is None or not 0 <= index < len(meta.partitions):
        return -1
    Q = LIST_OFFSETS.Request
    try:
        resp = await broker.cluster.channel("share", meta.partitions[index].leader).request(
            LIST_OFFSETS, 7, Q(replica_id=-1, isolation_level=0, topics=[Q.ListOffsetsTopic(
                name=topic, partitions=[Q.ListOffsetsPartition(
                    partition_index=index, current_leader_epoch=-1, timestamp=LATEST)])]),
            timeout=10)
    except ChannelError:
        return -1
    p = resp.topics[0].partitions[0]
    return p.offset if not p.error_code else -1


async def share_offsets(broker: Services, group_id, partitions):
    """[(topic, topic id, index, start offset, leader epoch, lag, error)] of ``group_id``'s
    share-partitions ``partitions`` [(topic, topic id, index)]: their state's summary from the
    share coordinators, the lag as Kafka 4.2 counts it (records from the start offset to the
    high watermark not yet acknowledged or archived)."""
    async def one(topic, topic_id, index):
        code, _state_epoch, leader_epoch, start, complete = await broker.share_persister.summary(
            group_id, topic_id, index, -1)
        if code or start < 0:
            return topic, topic_id, index, -1, -1, -1, code
        end = await latest_offset(broker, topic, index)
        lag = max(0, end - start - max(complete, 0)) if end >= 0 else -1
        return topic, topic_id, index, start, leader_epoch, lag, errors.NONE
    return await asyncio.gather(*(one(*p) for p in partitions))


async def handle_describe_share_group_offsets(broker: Services, ctx,
                                              req: DescribeShareGroupOffsetsRequest):
    R = DESCRIBE_SHARE_GROUP_OFFSETS.Response
    out = []
    for g in req.groups:
        if not allowed(broker, ctx, GROUP, g.group_id, acl.DESCRIBE):
            out.append(R.DescribeShareGroupOffsetsResponseGroup(
                group_id=g.group_id, error_code=errors.GROUP_AUTHORIZATION_FAILED))
            continue
        code, message, group = broker.share_groups.describe(g.group_id)
        if group is None:
            out.append(R.DescribeShareGroupOffsetsResponseGroup(
                group_id=g.group_id, error_code=code, error_message=message))
            continue
        by_id = broker.metadata.topics_by_id
        if g.topics is None:
            wanted = [(by_id[t].name, t, p) for t, (_n, ps) in group.initialized.items()
                      if t in by_id for p in sorted(ps)]
        else:
            wanted = []
            for t in g.topics:
                meta = broker.metadata.topics.get(t.topic_name)
                for p in t.partitions:
                    wanted.append((t.topic_name, meta.topic_id if meta else None, p))
        topics: dict = {}
        known = [w for w in wanted if w[1] is not None]
        for topic, topic_id, index, start, epoch, lag, code in await share_offsets(
                broker, g.group_id, known):
            topics.setdefault((topic, topic_id), []).append(
                R.DescribeShareGroupOffsetsResponsePartition(
                    partition_index=index, start_offset=start, leader_epoch=epoch, lag=lag,
                    error_code=code))
        for topic, _none, index in (w for w in wanted if w[1] is None):
            topics.setdefault((topic, None), []).append(
                R.DescribeShareGroupOffsetsResponsePartition(
                    partition_index=index, start_offset=-1, leader_epoch=-1,
                    error_code=errors.UNKNOWN_TOPIC_OR_PARTITION))
        out.append(R.DescribeShareGroupOffsetsResponseGroup(group_id=g.group_id, topics=[
            R.DescribeShareGroupOffsetsResponseTopic(topic_name=t, topic_id=tid or _ZERO,
                                                     partitions=ps)
            for (t, tid), ps in topics.items()]))
    return R(groups=out)


async def _empty_share_group(broker: Services, ctx, group_id, op, R, create=False):
    """(the share group, None), or (None, the response refusing the request): the admin
    offset APIs need ``op`` on the group, and a group without members (``create``: made if
    it does not exist)."""
    if not allowed(broker, ctx, GROUP, group_id, op):
        return None, R(error_code=errors.GROUP_AUTHORIZATION_FAILED)
    code, message, group = await broker.share_groups.empty_group(group_id, create)
    if group is None:
        return None, R(error_code=code, error_message=message)
    return group, None


async def handle_alter_share_group_offsets(broker: Services, ctx,
                                           req: AlterShareGroupOffsetsRequest):
    """Start an empty share group's share-partitions over at the given offsets: a fresh state
    under the next state epoch (the partitions' leaders are fenced and read it again). A group
    that does not exist yet is created, empty, as Kafka does."""
    R = ALTER_SHARE_GROUP_OFFSETS.Response
    group, refused = await _empty_share_group(broker, ctx, req.group_id, acl.READ, R,
                                              create=True)
    if refused is not None:
        return refused
    out = []
    for t in req.topics:
        meta = broker.metadata.topics.get(t.topic_name)
        parts = []
        for p in t.partitions:
            if meta is None or not 0 <= p.partition_index < len(meta.partitions):
                code = errors.UNKNOWN_TOPIC_OR_PARTITION
            elif not allowed(broker, ctx, TOPIC, t.topic_name, acl.READ):
                code = errors.TOPIC_AUTHORIZATION_FAILED
            else:
                s = await broker.share_persister.summary(req.group_id, meta.topic_id,
                                                         p.partition_index, -1)
                code = s[0] or await broker.share_persister.initialize(
                    req.group_id, meta.topic_id, p.partition_index, s[1] + 1, p.start_offset)
                if not code:
                    code = await broker.share_groups.mark_initialized(
                        group, meta.topic_id, t.topic_name, p.partition_index)
            parts.append(R.AlterShareGroupOffsetsResponsePartition(
                partition_index=p.partition_index, error_code=code))
        out.append(R.AlterShareGroupOffsetsResponseTopic(
            topic_name=t.topic_name, topic_id=meta.topic_id if meta else _ZERO, partitions=parts))
    return R(responses=out)


async def handle_delete_share_group_offsets(broker: Services, ctx,
                                            req: DeleteShareGroupOffsetsRequest):
    """Forget an empty share group's state on the given topics."""
    R = DELETE_SHARE_GROUP_OFFSETS.Response
    group, refused = await _empty_share_group(broker, ctx, req.group_id, acl.DELETE, R)
    if refused is not None:
        return refused
    out = []
    for t in req.topics:
        meta = broker.metadata.topics.get(t.topic_name)
        if meta is None:
            code = errors.UNKNOWN_TOPIC_OR_PARTITION
        elif not allowed(broker, ctx, TOPIC, t.topic_name, acl.READ):
            code = errors.TOPIC_AUTHORIZATION_FAILED
        else:
            code = await broker.share_groups.forget_partitions(group, [meta.topic_id])
        out.append(R.DeleteShareGroupOffsetsResponseTopic(
            topic_name=t.topic_name, topic_id=meta.topic_id if meta else _ZERO, error_code=code))
    return R(responses=out)


