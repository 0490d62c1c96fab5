"""ListOffsets: earliest (remote data included), earliest local (KIP-1005), latest, by
timestamp and max timestamp (KIP-734).

v0 answers up to MaxNumOffsets offsets "before" a timestamp the way Kafka 3.9 still did: the
base offsets of segments last modified at or before it (and the log end offset), newest first.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import asyncio
import time

from josefk.broker.security import acl
from josefk.broker.security.authorizer import TOPIC, allowed
from josefk.wire import errors
from josefk.wire.apis import LIST_OFFSETS

if TYPE_CHECKING:
    from josefk.broker.handlers.services import Services
    from josefk.wire.apis import ListOffsetsRequest

R = LIST_OFFSETS.Response
LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL, LATEST_TIERED = -1, -2, -3, -4, -5
READ_COMMITTED = 1
CONSUMER = -1
DEBUGGING_REPLICA_ID = -2  # a tool's ListOffsets any replica answers, not only the leader


def handle_list_offsets(broker: Services, ctx, req: ListOffsetsRequest):
    read_committed = ctx.version >= 2 and req.isolation_level == READ_COMMITTED
    topics_out = []
    remote = []  # (answer, partition, timestamp) looked up in the remote log (tiered storage)
    for t in req.topics:
        parts_out = []
        may_describe = allowed(broker, ctx, TOPIC, t.name, acl.DESCRIBE)
        for p in t.partitions:
            part = (broker.replicas.get(t.name, p.partition_index)
                    if req.replica_id == DEBUGGING_REPLICA_ID
                    else broker.replicas.leader_partition(t.name, p.partition_index))
            if part is None or not may_describe:
                parts_out.append(R.ListOffsetsPartitionResponse(
                    partition_index=p.partition_index,
                    error_code=broker.replicas.not_hosted_error(t.name, p.partition_index) if may_describe
                    else errors.TOPIC_AUTHORIZATION_FAILED, timestamp=-1, offset=-1,
                    leader_epoch=-1))
                continue
            err = part.check_leader_epoch(p.current_leader_epoch)
            if ctx.version == 0:
                parts_out.append(R.ListOffsetsPartitionResponse(
                    partition_index=p.partition_index, error_code=err,
                    old_style_offsets=[] if err else _offsets_before(
                        part.log, p.timestamp, p.max_num_offsets, req.replica_id)))
                continue
            if not err and (p.timestamp in (EARLIEST, MAX_TIMESTAMP) or p.timestamp >= 0) \
                    and part.remote_pending:
                err = errors.REPLICA_NOT_AVAILABLE  # the remote log is not known here yet
            if not err and p.timestamp == LATEST and req.replica_id == CONSUMER \
                    and part.log.high_watermark < part.epoch_start_offset:
                # KIP-207: a new leader's high watermark may lag what its predecessor
                # acknowledged until its followers fetch; a consumer must not read it as the
                # end (Kafka answers this, retriable)
                err = errors.OFFSET_NOT_AVAILABLE
            wanted = None if err else _remote_timestamp(part, p.timestamp, read_committed)
            if wanted is not None:
                answer = R.ListOffsetsPartitionResponse(
                    partition_index=p.partition_index, error_code=errors.NONE, timestamp=-1,
                    offset=-1, leader_epoch=part.leader_epoch)
                remote.append((answer, part, wanted, p.timestamp))
                parts_out.append(answer)
                continue
            ts, offset = (-1, -1) if err else _lookup(part, p.timestamp, read_committed)
            parts_out.append(R.ListOffsetsPartitionResponse(
                partition_index=p.partition_index, error_code=err, timestamp=ts, offset=offset,
                leader_epoch=part.leader_epoch if offset >= 0 else -1))
        topics_out.append(R.ListOffsetsTopicResponse(name=t.name, partitions=parts_out))
    if remote:
        return _remote_lookups(R(topics=topics_out), remote, read_committed)
    return R(topics=topics_out)


async def _remote_lookups(response, remote, read_committed):
    """Fill in the answers found in the remote log, read in worker threads (or, where it had
    none after all, in the local log)."""
    found = await asyncio.gather(*(asyncio.to_thread(part.remote_offset_for_timestamp, ts)
                                   for _answer, part, ts, _asked in remote))
    for (answer, part, _ts, asked), (hit, err) in zip(remote, found):
        answer.error_code = err
        if not err and hit is None:
            hit = _lookup(part, asked, read_committed)[::-1]
        if hit is not None and hit[0] >= 0:
            answer.offset, answer.timestamp = hit
        else:
            answer.leader_epoch = -1
    return response


def _remote_timestamp(part, timestamp, read_committed):
    """The timestamp to look up in the remote log for ListOffsets ``timestamp``, or None when
    the local log answers: a timestamp some remote segment reaches, or for MAX_TIMESTAMP the
    remote log's largest when no local record carries more (the first such record wins)."""
    if timestamp >= 0:
        return timestamp if part.remote_has_timestamp(timestamp) else None
    if timestamp != MAX_TIMESTAMP:
        return None
    remote_max = part.remote_max_timestamp()
    if remote_max is None or _lookup(part, MAX_TIMESTAMP, read_committed)[0] > remote_max:
        return None
    return remote_max


def _lookup(part, timestamp, read_committed):
    """(timestamp, offset) the way Kafka answers each special timestamp; read_committed
    readers see nothing past the last stable offset."""
    log = part.log
    limit = part.last_stable_offset if read_committed else log.high_watermark
    if timestamp == LATEST:
        return -1, limit
    if timestamp == LATEST_TIERED:  # KIP-1005: the last offset copied to the remote log
        copied = log.remote_copied_end if part.config.remote_storage_enable else None
        return -1, -1 if copied is None else copied
    if timestamp == EARLIEST:  # remote data included (tiered storage)
        return -1, part.log_start_offset
    if timestamp == EARLIEST_LOCAL:  # KIP-1005: the local log's start
        return -1, log.log_start_offset
    if timestamp == MAX_TIMESTAMP:
        found = log.max_timestamp(max_offset=limit)
        return found if found is not None else (-1, -1)
    found = log.offset_for_timestamp(timestamp, max_offset=limit)
    if found is None:
        return -1, -1
    offset, ts = found
    return ts, offset


def _offsets_before(log, timestamp, max_num_offsets, replica_id):
    """Kafka's v0 answer: candidate offsets are each segment's base offset (at least the log
    start offset) with the segment's last-modified time, plus the log end offset at "now" when
    the active segment holds data; a consumer never sees offsets past the high watermark."""
    segments = log.segment_times()
    points = [(max(base, log.log_start_offset), mtime) for base, mtime, _size in segments]
    if segments[-1][2] > 0:
        points.append((log.log_end_offset, int(time.time() * 1000)))
    if timestamp == LATEST:
        start = len(points) - 1
    elif timestamp == EARLIEST:
        start = 0
    else:
        start = len(points) - 1
        while start >= 0 and points[start][1] > timestamp:
            start -= 1
    found = sorted((points[start - j][0] for j in range(min(max_num_offsets, start + 1))),
                   reverse=True)
    hwm = log.high_watermark
    if replica_id < 0 and any(o > hwm for o in found):
        found = [hwm] + [o for o in found if o <= hwm]
    return found
