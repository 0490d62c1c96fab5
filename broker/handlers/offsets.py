"""OffsetCommit, OffsetFetch (single group, and several groups per request in v8+), OffsetDelete.

OffsetCommit v0 (which Kafka kept in ZooKeeper) is stored in ``__consumer_offsets`` like the
rest, as a commit outside group management; v1 carries a commit timestamp per partition. v10 of
OffsetCommit and OffsetFetch name topics by id: an id this broker does not know is answered
UNKNOWN_TOPIC_ID."""
from __future__ import annotations

from typing import TYPE_CHECKING

from josefk.broker.security import acl
from josefk.broker.security.authorizer import GROUP, TOPIC, allowed
from josefk.broker.control.metadata import partition_exists
from josefk.wire import errors
from josefk.wire.apis import OFFSET_COMMIT, OFFSET_DELETE, OFFSET_FETCH

if TYPE_CHECKING:
    from josefk.broker.handlers.services import Services
    from josefk.wire.apis import OffsetCommitRequest, OffsetDeleteRequest, OffsetFetchRequest

NO_OFFSET = -1


def _by_name(broker: Services, topics, by_id: bool) -> list:
    """[(topic entry, its topic's name or None for an unknown id)] of a request's topics."""
    if not by_id:
        return [(t, t.name) for t in topics]
    known = broker.metadata.topics_by_id
    return [(t, known[t.topic_id].name if t.topic_id in known else None) for t in topics]


async def handle_offset_commit(broker: Services, ctx, req: OffsetCommitRequest):
    R = OFFSET_COMMIT.Response
    v = ctx.version
    offsets = {}
    codes = {}
    may_commit = allowed(broker, ctx, GROUP, req.group_id, acl.READ)
    topics = _by_name(broker, req.topics, v >= 10)
    for t, name in topics:
        may_read = name is not None and allowed(broker, ctx, TOPIC, name, acl.READ)
        for p in t.partitions:
            tp = (name, p.partition_index)
            if name is None:
                codes[tp] = errors.UNKNOWN_TOPIC_ID
            elif not may_commit:
                codes[tp] = errors.GROUP_AUTHORIZATION_FAILED
            elif not may_read:
                codes[tp] = errors.TOPIC_AUTHORIZATION_FAILED
            elif not partition_exists(broker.metadata, *tp):
                codes[tp] = errors.UNKNOWN_TOPIC_OR_PARTITION
            else:
                offsets[tp] = (p.committed_offset,
                               p.committed_leader_epoch if v >= 6 else -1, p.committed_metadata)
                if v == 1:
                    offsets[tp] += (p.commit_timestamp,)
    if offsets:
        codes.update(await broker.groups.commit_offsets(
            req.group_id, req.generation_id_or_member_epoch, req.member_id,
            req.group_instance_id if v >= 7 else None,
            req.retention_time_ms if v <= 4 else -1, offsets, api_version=v))
    return R(topics=[R.OffsetCommitResponseTopic(name=t.name, topic_id=t.topic_id, partitions=[
        R.OffsetCommitResponsePartition(partition_index=p.partition_index,
                                        error_code=codes[(name, p.partition_index)])
        for p in t.partitions]) for t, name in topics])


def _fetch_group(broker: Services, ctx, group_id, topics, require_stable, by_id=False,
                 member_id=None,
                 member_epoch=-1):
    """(error, [(topic, [(partition, offset, epoch, metadata, error)])]) for one group. The
    group needs Describe; topics the client may not describe are refused when named, left out
    when all are asked for. With ``by_id`` (v10) topics are named by id, and each ``topic`` of
    the answer is a topic id. ``member_id``/``member_epoch`` (v9+): the consumer group member
    asking."""
    if not allowed(broker, ctx, GROUP, group_id, acl.DESCRIBE):
        return errors.GROUP_AUTHORIZATION_FAILED, []
    wanted = unknown = None
    if topics is not None:
        named = _by_name(broker, topics, by_id)
        wanted = [(name, p) for t, name in named if name is not None for p in t.partition_indexes]
        unknown = [(t.topic_id, [(p, NO_OFFSET, -1, "", errors.UNKNOWN_TOPIC_ID)
                                 for p in t.partition_indexes]) for t, name in named if name is None]
    code, found = broker.groups.fetch_offsets(group_id, wanted, require_stable, member_id,
                                              member_epoch)
    if code:
        return code, []
    by_topic = {}
    order = wanted if wanted is not None else sorted(found)
    denied = {t for t, _ in order if not allowed(broker, ctx, TOPIC, t, acl.DESCRIBE)}
    if wanted is None:
        order = [tp for tp in order if tp[0] not in denied]
    for tp in order:
        r = found.get(tp)
        if tp[0] in denied:
            r = (NO_OFFSET, -1, "", errors.TOPIC_AUTHORIZATION_FAILED)
        elif r is None:
            r = (NO_OFFSET, -1, "", errors.NONE)
        by_topic.setdefault(tp[0], []).append((tp[1], *r))
    if not by_id:
        return errors.NONE, list(by_topic.items())
    ids = broker.metadata.topics
    return errors.NONE, [(ids[name].topic_id, parts) for name, parts in by_topic.items()
                         if name in ids] + (unknown or [])


def _topic_field(version, topic) -> dict:
    return {"topic_id": topic} if version >= 10 else {"name": topic}


def handle_offset_fetch(broker: Services, ctx, req: OffsetFetchRequest):
    R = OFFSET_FETCH.Response
    v = ctx.version
    if v >= 8:
        groups = []
        for g in req.groups:
            code, topics = _fetch_group(broker, ctx, g.group_id, g.topics, req.require_stable,
                                        v >= 10, g.member_id, g.member_epoch)
            groups.append(R.OffsetFetchResponseGroup(group_id=g.group_id, error_code=code, topics=[
                R.OffsetFetchResponseTopics(**_topic_field(v, topic), partitions=[
                    R.OffsetFetchResponsePartitions(partition_index=p, committed_offset=o,
                                                    committed_leader_epoch=e, metadata=m,
                                                    error_code=err)
                    for p, o, e, m, err in parts]) for topic, parts in topics]))
        return R(groups=groups)
    code, topics = _fetch_group(broker, ctx, req.group_id, req.topics,
                                req.require_stable if v >= 7 else False)
    if code and v < 2:
        # v0-1 have no top-level error: every requested partition carries it.
        topics = [(t.name, [(p, NO_OFFSET, -1, "", code) for p in t.partition_indexes])
                  for t in (req.topics or [])]
    return R(error_code=code, topics=[
        R.OffsetFetchResponseTopic(name=name, partitions=[
            R.OffsetFetchResponsePartition(partition_index=p, committed_offset=o,
                                           committed_leader_epoch=e, metadata=m, error_code=err)
            for p, o, e, m, err in parts]) for name, parts in topics])


async def handle_offset_delete(broker: Services, ctx, req: OffsetDeleteRequest):
    R = OFFSET_DELETE.Response
    if not allowed(broker, ctx, GROUP, req.group_id, acl.DELETE):
        return R(error_code=errors.GROUP_AUTHORIZATION_FAILED)
    wanted = [(t.name, p.partition_index) for t in req.topics for p in t.partitions]
    denied = {t.name for t in req.topics if not allowed(broker, ctx, TOPIC, t.name, acl.READ)}
    known = [tp for tp in wanted
             if tp[0] not in denied and partition_exists(broker.metadata, *tp)]
    code, results = await broker.groups.delete_offsets(req.group_id, known)
    if code:
        return R(error_code=code)
    results.update((tp, errors.TOPIC_AUTHORIZATION_FAILED if tp[0] in denied
                    else errors.UNKNOWN_TOPIC_OR_PARTITION) for tp in wanted if tp not in known)
    return R(topics=[R.OffsetDeleteResponseTopic(name=t.name, partitions=[
        R.OffsetDeleteResponsePartition(partition_index=p.partition_index,
                                        error_code=results.get((t.name, p.partition_index),
                                                               errors.NONE))
        for p in t.partitions]) for t in req.topics])
