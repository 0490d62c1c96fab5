"""ListOffsets: earliest, latest, by timestamp and max timestamp (KIP-734)."""
from __future__ import annotations

from wire import errors
from wire.apis import LIST_OFFSETS

R = LIST_OFFSETS.Response
LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL, LATEST_TIERED = -1, -2, -3, -4, -5
READ_COMMITTED = 1


def handle_list_offsets(broker, ctx, req):
    read_committed = ctx.version >= 2 and req.isolation_level == READ_COMMITTED
    topics_out = []
    for t in req.topics:
        parts_out = []
        for p in t.partitions:
            part = broker.replicas.leader_partition(t.name, p.partition_index)
            if part is None:
                parts_out.append(R.ListOffsetsPartitionResponse(
                    partition_index=p.partition_index,
                    error_code=broker.not_hosted_error(t.name, p.partition_index), timestamp=-1,
                    offset=-1, leader_epoch=-1))
                continue
            err = part.check_leader_epoch(p.current_leader_epoch)
            ts, offset = (-1, -1) if err else _lookup(part, p.timestamp, read_committed)
            parts_out.append(R.ListOffsetsPartitionResponse(
                partition_index=p.partition_index, error_code=err, timestamp=ts, offset=offset,
                leader_epoch=part.leader_epoch if offset >= 0 else -1))
        topics_out.append(R.ListOffsetsTopicResponse(name=t.name, partitions=parts_out))
    return R(topics=topics_out)


def _lookup(part, timestamp, read_committed):
    """(timestamp, offset) the way Kafka answers each special timestamp; read_committed
    readers see nothing past the last stable offset."""
    log = part.log
    limit = part.last_stable_offset if read_committed else log.high_watermark
    if timestamp == LATEST or timestamp == LATEST_TIERED:
        return -1, limit
    if timestamp in (EARLIEST, EARLIEST_LOCAL):
        return -1, log.log_start_offset
    if timestamp == MAX_TIMESTAMP:
        found = log.max_timestamp(max_offset=limit)
        return found if found is not None else (-1, -1)
    found = log.offset_for_timestamp(timestamp, max_offset=limit)
    if found is None:
        return -1, -1
    offset, ts = found
    return ts, offset
