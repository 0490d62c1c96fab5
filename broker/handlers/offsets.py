"""OffsetCommit, OffsetFetch (single group, and several groups per request in v8+), OffsetDelete.

OffsetCommit v0 (which Kafka kept in ZooKeeper) is stored in ``__consumer_offsets`` like the
rest, as a commit outside group management; v1 carries a commit timestamp per partition."""
from __future__ import annotations

from josefk.broker.security import acl
from josefk.broker.security.authorizer import GROUP, TOPIC, allowed
from josefk.broker.control.metadata import partition_exists
from josefk.wire import errors
from josefk.wire.apis import OFFSET_COMMIT, OFFSET_DELETE, OFFSET_FETCH

NO_OFFSET = -1


async def handle_offset_commit(broker, ctx, req):
    R = OFFSET_COMMIT.Response
    v = ctx.version
    offsets = {}
    codes = {}
    may_commit = allowed(broker, ctx, GROUP, req.group_id, acl.READ)
    for t in req.topics:
        may_read = allowed(broker, ctx, TOPIC, t.name, acl.READ)
        for p in t.partitions:
            tp = (t.name, p.partition_index)
            if not may_commit:
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
            req.retention_time_ms if v <= 4 else -1, offsets))
    return R(topics=[R.OffsetCommitResponseTopic(name=t.name, partitions=[
        R.OffsetCommitResponsePartition(partition_index=p.partition_index,
                                        error_code=codes[(t.name, p.partition_index)])
        for p in t.partitions]) for t in req.topics])


def _fetch_group(broker, ctx, group_id, topics, require_stable):
    """(error, [(topic, [(partition, offset, epoch, metadata, error)])]) for one group. The
    group needs Describe; topics the client may not describe are refused when named, left out
    when all are asked for."""
    if not allowed(broker, ctx, GROUP, group_id, acl.DESCRIBE):
        return errors.GROUP_AUTHORIZATION_FAILED, []
    wanted = None
    if topics is not None:
        wanted = [(t.name, p) for t in topics for p in t.partition_indexes]
    code, found = broker.groups.fetch_offsets(group_id, wanted, require_stable)
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
    return errors.NONE, list(by_topic.items())


def handle_offset_fetch(broker, ctx, req):
    R = OFFSET_FETCH.Response
    v = ctx.version
    if v >= 8:
        groups = []
        for g in req.groups:
            code, topics = _fetch_group(broker, ctx, g.group_id, g.topics, req.require_stable)
            groups.append(R.OffsetFetchResponseGroup(group_id=g.group_id, error_code=code, topics=[
                R.OffsetFetchResponseTopics(name=name, partitions=[
                    R.OffsetFetchResponsePartitions(partition_index=p, committed_offset=o,
                                                    committed_leader_epoch=e, metadata=m,
                                                    error_code=err)
                    for p, o, e, m, err in parts]) for name, parts in topics]))
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


async def handle_offset_delete(broker, ctx, req):
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
