"""ListOffsets: earliest, latest, by timestamp and max timestamp (KIP-734)."""
from __future__ import annotations

from broker import acl
from broker.authorizer import TOPIC, allowed
from wire import errors
from wire.apis import LIST_OFFSETS

R = LIST_OFFSETS.Response
LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL, LATEST_TIERED = -1, -2, -3, -4, -5


def handle_list_offsets(broker, ctx, req):
    topics_out = []
    for t in req.topics:
        parts_out = []
        may_describe = allowed(broker, ctx, TOPIC, t.name, acl.DESCRIBE)
        for p in t.partitions:
            part = broker.replicas.leader_partition(t.name, p.partition_index)
            if part is None or not may_describe:
                parts_out.append(R.ListOffsetsPartitionResponse(
                    partition_index=p.partition_index,
                    error_code=broker.not_hosted_error(t.name, p.partition_index) if may_describe
                    else errors.TOPIC_AUTHORIZATION_FAILED, timestamp=-1, offset=-1,
                    leader_epoch=-1))
                continue
            err = part.check_leader_epoch(p.current_leader_epoch)
            ts, offset = (-1, -1) if err else _lookup(part.log, p.timestamp)
            parts_out.append(R.ListOffsetsPartitionResponse(
                partition_index=p.partition_index, error_code=err, timestamp=ts, offset=offset,
                leader_epoch=part.leader_epoch if offset >= 0 else -1))
        topics_out.append(R.ListOffsetsTopicResponse(name=t.name, partitions=parts_out))
    return R(topics=topics_out)


def _lookup(log, timestamp):
    """(timestamp, offset) the way Kafka answers each special timestamp."""
    if timestamp == LATEST or timestamp == LATEST_TIERED:
        return -1, log.high_watermark
    if timestamp in (EARLIEST, EARLIEST_LOCAL):
        return -1, log.log_start_offset
    if timestamp == MAX_TIMESTAMP:
        found = log.max_timestamp()
        return found if found is not None else (-1, -1)
    found = log.offset_for_timestamp(timestamp)
    if found is None:
        return -1, -1
    offset, ts = found
    return ts, offset
