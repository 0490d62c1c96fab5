"""Fetch: authorise and resolve the topics, hand the partitions to the replica manager
(`ReplicaManager.fetch_messages`: byte ranges of the logs, a follower's state moved, waiting up
to max_wait_ms for min_bytes with no busy polling) and map its results to the answer.

From v7 a client may open an incremental fetch session (KIP-227, `broker.fetch_sessions`):
then each request names only the partitions whose position changed, and the response carries
only the partitions with something new.

Fetch v0-3 read message formats v0 (v0-1) and v1 (v2-3): their answers are converted down from
the stored v2 batches (``wire.legacy``); v4+ answers are the stored bytes, sent with sendfile.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from josefk.broker.security import acl
from josefk.broker.security.authorizer import CLUSTER, CLUSTER_NAME, TOPIC, allowed
from josefk.broker.fetch_sessions import FetchContext
from josefk.broker.replication.replica import FetchParams
from josefk.wire import errors
from josefk.wire.apis import FETCH
from josefk.wire.apis.fetch import fetching_replica_id

if TYPE_CHECKING:
    from josefk.broker.handlers.services import Services
    from josefk.wire.apis import FetchRequest

R = FETCH.Response
_INT32_MAX = 0x7FFFFFFF
READ_COMMITTED = 1
_Aborted = R.FetchableTopicResponse.PartitionData.AbortedTransaction


def handle_fetch(broker: Services, ctx, req: FetchRequest):
    v = ctx.version
    fctx = _context(broker, req, v)
    if fctx.error:
        return R(error_code=fctx.error, session_id=0, responses=[])
    replica_id = fetching_replica_id(req, v)
    denied = _denied(broker, ctx, replica_id, v, fctx.topics)
    by_id = broker.metadata.topics_by_id
    last = fctx.cached if fctx.incremental else None  # what the session answered before
    topics = []  # (topic key, name, fetch partitions, the error refusing all of them)
    reads = []  # (name, fetch partitions, last answers) of the topics read
    refused = False
    for k, (tkey, fps) in enumerate(fctx.topics):
        if v >= 13:
            meta = by_id.get(tkey)
            name = meta.name if meta is not None else None
        else:
            name = tkey
        error = (errors.TOPIC_AUTHORIZATION_FAILED if tkey in denied
                 else errors.UNKNOWN_TOPIC_ID if name is None else errors.NONE)
        if error:
            refused = refused or bool(fps)
        else:
            reads.append((name, fps, last[k][1] if last is not None else None))
        topics.append((tkey, name, fps, error))
    # a refused topic is an error to tell: the fetch is answered at once, as for any error
    params = FetchParams(replica_id, 0 if refused else req.max_wait_ms, req.min_bytes,
                         req.max_bytes if v >= 3 else _INT32_MAX,
                         read_committed=v >= 4 and req.isolation_level == READ_COMMITTED,
                         magic=2 if v >= 4 else 1 if v >= 2 else 0)

    def respond(results):
        resp = _response(broker, v, topics, results)
        return fctx.finish(resp, _key(v)) if v >= 7 else resp

    return broker.replicas.fetch_messages(params, reads, respond)


def _denied(broker: Services, ctx, replica_id, v, topics) -> set:
    """The topics this client may not fetch: consumers need Read on the topic, followers
    ClusterAction on the cluster."""
    keys = {tkey for tkey, _fps in topics}
    if replica_id >= 0:
        return set() if allowed(broker, ctx, CLUSTER, CLUSTER_NAME, acl.CLUSTER_ACTION) else keys
    if v < 13:
        return {t for t in keys if not allowed(broker, ctx, TOPIC, t, acl.READ)}
    by_id = broker.metadata.topics_by_id  # unknown ids are answered UNKNOWN_TOPIC_ID
    return {t for t in keys if t in by_id and not allowed(broker, ctx, TOPIC, by_id[t].name,
                                                          acl.READ)}


def _key(v):
    return (lambda t: t.topic_id) if v >= 13 else (lambda t: t.topic)


def _context(broker: Services, req, v) -> FetchContext:
    """The partitions this request reads: those it names, or its session's."""
    key = _key(v)
    topics = [(key(ft), ft.partitions) for ft in req.topics]
    if v < 7:
        return FetchContext(topics)
    forgotten = [(key(ft), ft.partitions) for ft in req.forgotten_topics_data]
    return broker.fetch_sessions.context(req.session_id, req.session_epoch, topics, forgotten,
                                         privileged=fetching_replica_id(req, v) >= 0)


def _response(broker: Services, v, topics, results):
    """The answer: ``topics`` as the request named them, the refused ones with their error,
    the others with the replica manager's ``results`` (in the same order)."""
    read = iter(results)
    missing = errors.UNKNOWN_TOPIC_ID if v >= 13 else errors.UNKNOWN_TOPIC_OR_PARTITION
    topics_out = []
    for tkey, name, fps, error in topics:
        if error:
            parts_out = [R.PartitionData(
                partition_index=fp.partition, error_code=error, high_watermark=-1,
                last_stable_offset=-1, log_start_offset=-1, records=b"",
                current_leader=_leader(broker, name, fp.partition) if v >= 12 else None)
                for fp in fps]
        else:
            parts_out = []
            for fp, res in next(read):
                code = res.error
                if code:
                    if code == errors.UNKNOWN_TOPIC_OR_PARTITION:
                        code = missing
                    parts_out.append(R.PartitionData(
                        partition_index=fp.partition, error_code=code,
                        high_watermark=res.high_watermark,
                        last_stable_offset=res.last_stable_offset,
                        log_start_offset=res.log_start_offset, records=b"",
                        current_leader=_leader(broker, name, fp.partition) if v >= 12 else None))
                elif res.diverging_epoch is not None:
                    parts_out.append(R.PartitionData(
                        partition_index=fp.partition, high_watermark=res.high_watermark,
                        last_stable_offset=res.last_stable_offset,
                        log_start_offset=res.log_start_offset, records=b"",
                        diverging_epoch=R.EpochEndOffset(epoch=res.diverging_epoch[0],
                                                         end_offset=res.diverging_epoch[1])))
                else:
                    parts_out.append(R.PartitionData(
                        partition_index=fp.partition, high_watermark=res.high_watermark,
                        last_stable_offset=res.last_stable_offset,
                        log_start_offset=res.log_start_offset,
                        aborted_transactions=_aborted(res.aborted) if v >= 4 else [],
                        records=res.records))
        topics_out.append(R.FetchableTopicResponse(topic=name or "", topic_id=tkey
                                                   if v >= 13 else None, partitions=parts_out))
    return R(session_id=0, responses=topics_out)


def _aborted(aborted):
    """The aborted transactions a read_committed consumer must drop (None when not asked)."""
    if aborted is None:
        return None
    return [_Aborted(producer_id=pid, first_offset=first) for pid, first in aborted]


def _leader(broker: Services, topic, index):
    """KIP-951: the partition's current leader, sent with NOT_LEADER_OR_FOLLOWER and fencing
    errors so clients need not refresh their metadata first."""
    t = broker.metadata.topics.get(topic) if topic is not None else None
    if t is None or not 0 <= index < len(t.partitions):
        return None
    p = t.partitions[index]
    return R.LeaderIdAndEpoch(leader_id=p.leader, leader_epoch=p.leader_epoch)
