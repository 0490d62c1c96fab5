"""Fetch: byte ranges of the logs, waiting up to max_wait_ms for min_bytes (no busy polling).

From v7 a client may open an incremental fetch session (KIP-227, `broker.fetch_sessions`):
then each request names only the partitions whose position changed, and the response carries
only the partitions with something new.

Fetch v0-3 read message formats v0 (v0-1) and v1 (v2-3): their answers are converted down from
the stored v2 batches (``wire.legacy``); v4+ answers are the stored bytes, sent with sendfile.
"""
from __future__ import annotations

import asyncio
import time

from josefk.broker.security import acl
from josefk.broker.security.authorizer import CLUSTER, CLUSTER_NAME, TOPIC, allowed
from josefk.broker.fetch_sessions import FetchContext
from josefk.wire import errors, legacy
from josefk.wire.apis import FETCH
from josefk.wire.apis.fetch import fetching_replica_id

R = FETCH.Response
_INT32_MAX = 0x7FFFFFFF
READ_COMMITTED = 1
_Aborted = R.FetchableTopicResponse.PartitionData.AbortedTransaction
# Record ranges at least this long are sent from the segment file with sendfile; shorter ones
# are cheaper to copy.
ZERO_COPY_MIN = 16 * 1024


def handle_fetch(broker, ctx, req):
    v = ctx.version
    fctx = _context(broker, req, v)
    if fctx.error:
        return R(error_code=fctx.error, session_id=0, responses=[])
    denied = _denied(broker, ctx, req, v, fctx.topics)
    resp, size, ready, parts = _read_session(broker, req, v, fctx, denied)
    if ready or size >= req.min_bytes or req.max_wait_ms <= 0 or not parts:
        return _finish(fctx, resp, v)
    # Register before returning: an append handled before the coroutine first runs must wake it.
    return _delayed(broker, req, v, fctx, denied, broker.replicas.watch(parts))


def _denied(broker, ctx, req, v, topics) -> set:
    """The topics this client may not fetch: consumers need Read on the topic, followers
    ClusterAction on the cluster."""
    keys = {tkey for tkey, _fps in topics}
    if fetching_replica_id(req, v) >= 0:
        return set() if allowed(broker, ctx, CLUSTER, CLUSTER_NAME, acl.CLUSTER_ACTION) else keys
    if v < 13:
        return {t for t in keys if not allowed(broker, ctx, TOPIC, t, acl.READ)}
    by_id = broker.metadata.topics_by_id  # unknown ids are answered UNKNOWN_TOPIC_ID
    return {t for t in keys if t in by_id and not allowed(broker, ctx, TOPIC, by_id[t].name,
                                                          acl.READ)}


async def _delayed(broker, req, v, fctx, denied, waiter):
    loop = asyncio.get_running_loop()
    deadline = loop.time() + req.max_wait_ms / 1000
    while True:
        await waiter.wait(deadline - loop.time())
        resp, size, ready, parts = _read_session(broker, req, v, fctx, denied)
        if ready or size >= req.min_bytes or loop.time() >= deadline or not parts:
            return _finish(fctx, resp, v)
        waiter = broker.replicas.watch(parts)


def _key(v):
    return (lambda t: t.topic_id) if v >= 13 else (lambda t: t.topic)


def _context(broker, req, v) -> FetchContext:
    """The partitions this request reads: those it names, or its session's."""
    key = _key(v)
    topics = [(key(ft), ft.partitions) for ft in req.topics]
    if v < 7:
        return FetchContext(topics)
    forgotten = [(key(ft), ft.partitions) for ft in req.forgotten_topics_data]
    return broker.fetch_sessions.context(req.session_id, req.session_epoch, topics, forgotten,
                                         privileged=fetching_replica_id(req, v) >= 0)


def _finish(fctx, resp, v):
    return fctx.finish(resp, _key(v)) if v >= 7 else resp


def _read_session(broker, req, v, fctx, denied):
    """`_read` of what ``fctx`` fetches. A consumer's incremental fetch reads only the partitions
    that may have something to answer: one it is caught up on (fetch offset at the high
    watermark, or the last stable offset for read_committed) whose high watermark, last stable
    offset and log start offset are those its session last answered, with no error then and no
    fencing or divergence now, would be left out of the answer (KIP-227), so it is only watched
    for new data - a few comparisons instead of a read and a response object."""
    if not fctx.incremental or fetching_replica_id(req, v) >= 0:
        return _read(broker, req, v, fctx.topics, denied)
    partitions = broker.replicas.partitions
    by_id = broker.metadata.topics_by_id
    read_committed = req.isolation_level == READ_COMMITTED
    check_epoch = v >= 12
    topics = []
    idle = []
    for tkey, cached in fctx.cached:
        if v >= 13:
            meta = by_id.get(tkey)
            name = meta.name if meta is not None else None
        else:
            name = tkey
        if name is None or tkey in denied:  # answered with an error by `_read`
            topics.append((tkey, [c.request for c in cached]))
            continue
        fps = []
        for c in cached:
            fp = c.request
            part = partitions.get((name, fp.partition))
            if part is None or not part.is_leader:
                fps.append(fp)
                continue
            lg = part.log
            hwm = lg.high_watermark
            # The last stable offset is the high watermark unless a transaction is open.
            lso = part.last_stable_offset if part.producers.ongoing else hwm
            if (hwm == c.high_watermark and lso == c.last_stable_offset
                    and lg.log_start_offset == c.log_start_offset
                    and fp.fetch_offset == (lso if read_committed else hwm)
                    and fp.fetch_offset >= c.log_start_offset
                    and (fp.current_leader_epoch < 0
                         or fp.current_leader_epoch == part.leader_epoch)
                    and (not check_epoch or fp.last_fetched_epoch < 0
                         or fp.last_fetched_epoch == lg.epochs.latest_epoch)):
                idle.append(part)
            else:
                fps.append(fp)
        if fps:
            topics.append((tkey, fps))
    resp, size, ready, parts = _read(broker, req, v, topics, denied)
    return resp, size, ready, parts + idle


def _read(broker, req, v, topics, denied):
    """One pass over ``topics`` ([(name or topic id, [FetchPartition])]), those in ``denied``
    answered TOPIC_AUTHORIZATION_FAILED. Returns (response, bytes, ready, partitions);
    ``ready`` is set when an error means the fetch should be answered at once. A follower's
    fetch (replica id >= 0) reads up to the log end and tells the leader how far it has got."""
    replicas = broker.replicas
    replica_id = fetching_replica_id(req, v)
    now_ms = int(time.time() * 1000) if replica_id >= 0 else 0
    by_id = broker.metadata.topics_by_id
    remaining = req.max_bytes if v >= 3 else _INT32_MAX
    read_committed = v >= 4 and req.isolation_level == READ_COMMITTED
    size = 0
    ready = False
    parts = []
    topics_out = []
    for tkey, fps in topics:
        if v >= 13:
            meta = by_id.get(tkey)
            name = meta.name if meta else None
            missing = errors.UNKNOWN_TOPIC_ID
        else:
            name = tkey
            missing = errors.UNKNOWN_TOPIC_OR_PARTITION
        parts_out = []
        for fp in fps:
            part = replicas.get(name, fp.partition) if name is not None else None
            code = errors.NONE
            if tkey in denied:
                ready = True
                code = errors.TOPIC_AUTHORIZATION_FAILED
            elif part is None or not part.is_leader:
                ready = True
                code = broker.not_hosted_error(name, fp.partition)
                if code == errors.UNKNOWN_TOPIC_OR_PARTITION:
                    code = missing
            if code:
                parts_out.append(R.PartitionData(
                    partition_index=fp.partition, error_code=code, high_watermark=-1,
                    last_stable_offset=-1, log_start_offset=-1, records=b"",
                    current_leader=_leader(broker, name, fp.partition) if v >= 12 else None))
                continue
            err = part.check_leader_epoch(fp.current_leader_epoch)
            if not err and v < 4 and not part.config.message_downconversion_enable:
                err = errors.UNSUPPORTED_VERSION
            if err:
                ready = True
                res = None
            else:
                if replica_id >= 0 and not part.update_follower(
                        replica_id, fp.fetch_offset, now_ms,
                        fp.log_start_offset if v >= 5 else -1):
                    err = errors.NOT_LEADER_OR_FOLLOWER  # not a replica of this partition
                    res = None
                else:
                    res = part.read(fp.fetch_offset, min(fp.partition_max_bytes, remaining),
                                    min_one=size == 0, replica_id=replica_id,
                                    last_fetched_epoch=fp.last_fetched_epoch if v >= 12 else -1,
                                    zero_copy_min=ZERO_COPY_MIN if v >= 4 else 0,
                                    read_committed=read_committed)
                    err = res.error
            records = res.records if res else None
            if not err and v < 4:
                err, records = _down_convert(records, v, fp.fetch_offset)
                res = None if err else res  # Kafka's error answer: no offsets
            if err:
                ready = True
                parts_out.append(R.PartitionData(
                    partition_index=fp.partition, error_code=err,
                    high_watermark=res.high_watermark if res else -1,
                    last_stable_offset=res.last_stable_offset if res else -1,
                    log_start_offset=res.log_start_offset if res else -1, records=b"",
                    current_leader=_leader(broker, name, fp.partition) if v >= 12 else None))
                continue
            if res.diverging_epoch is not None:
                ready = True
                parts_out.append(R.PartitionData(
                    partition_index=fp.partition, high_watermark=res.high_watermark,
                    last_stable_offset=res.last_stable_offset,
                    log_start_offset=res.log_start_offset, records=b"",
                    diverging_epoch=R.EpochEndOffset(epoch=res.diverging_epoch[0],
                                                     end_offset=res.diverging_epoch[1])))
                continue
            n = len(res.records)
            size += n
            remaining = max(0, remaining - n)
            parts.append(part)
            parts_out.append(R.PartitionData(
                partition_index=fp.partition, high_watermark=res.high_watermark,
                last_stable_offset=res.last_stable_offset, log_start_offset=res.log_start_offset,
                aborted_transactions=_aborted(res.aborted) if v >= 4 else [], records=records))
        topics_out.append(R.FetchableTopicResponse(topic=name or "", topic_id=tkey
                                                   if v >= 13 else None, partitions=parts_out))
    return R(session_id=0, responses=topics_out), size, ready, parts


def _aborted(aborted):
    """The aborted transactions a read_committed consumer must drop (None when not asked)."""
    if aborted is None:
        return None
    return [_Aborted(producer_id=pid, first_offset=first) for pid, first in aborted]


def _leader(broker, topic, index):
    """KIP-951: the partition's current leader, sent with NOT_LEADER_OR_FOLLOWER and fencing
    errors so clients need not refresh their metadata first."""
    t = broker.metadata.topics.get(topic) if topic is not None else None
    if t is None or not 0 <= index < len(t.partitions):
        return None
    p = t.partitions[index]
    return R.LeaderIdAndEpoch(leader_id=p.leader, leader_epoch=p.leader_epoch)


def _down_convert(records, v, fetch_offset):
    """(error, records) for Fetch v0-3: magic 0 for v0-1, magic 1 for v2-3."""
    try:
        return errors.NONE, legacy.down_convert(records, 0 if v < 2 else 1, fetch_offset)
    except legacy.UnsupportedDownConversion:
        return errors.UNSUPPORTED_COMPRESSION_TYPE, None
