"""Produce: validate whole batches, assign offsets, append; no per-record work.

acks=all answers once the ISR has every batch (a delayed produce, bounded by timeout_ms); the
request is handled synchronously whenever nothing has to wait, as on a single broker.

Produce v0-2 carry message formats v0/v1: those (and only those) are converted to one v2 batch
first (``wire.legacy``), as Kafka converts them to the log's format.
"""
from __future__ import annotations

import asyncio

from josefk.broker.security import acl
from josefk.broker.security.authorizer import TOPIC, TRANSACTIONAL_ID, allowed
from josefk.broker.guards import produce_topic_error
from josefk.broker.replication.replica import AppendResult
from josefk.broker.handlers import NO_RESPONSE
from josefk.wire import errors, legacy
from josefk.wire.batch import MAGIC_OFFSET, CorruptRecord, InvalidRecord
from josefk.wire.apis import PRODUCE

R = PRODUCE.Response
_VALID_ACKS = (0, 1, -1)
_LEADER_HINT_VERSION = 10


def handle_produce(broker, ctx, req):
    acks = req.acks
    topics_out = []
    waits = []  # (partition response, partition, offset the high watermark must pass)
    hints = False
    # a transactional producer needs Write on its transactional id for every partition
    txn_denied = (req.transactional_id is not None and not allowed(
        broker, ctx, TRANSACTIONAL_ID, req.transactional_id, acl.WRITE))
    for td in req.topic_data:
        parts_out = []
        name = td.name
        topic_error = (errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED if txn_denied
                       else produce_topic_error(name) or broker.topic_error_for_produce(name)
                       if allowed(broker, ctx, TOPIC, name, acl.WRITE)
                       else errors.TOPIC_AUTHORIZATION_FAILED)
        for pd in td.partition_data:
            res = None
            if acks not in _VALID_ACKS:
                err = errors.INVALID_REQUIRED_ACKS
            elif topic_error:
                err = topic_error
            else:
                part = broker.replicas.leader_partition(name, pd.index)
                if part is None:
                    err = broker.not_hosted_error(name, pd.index)
                else:
                    if pd.records is None:
                        err = errors.CORRUPT_MESSAGE
                    else:
                        res = (part.append(pd.records, acks) if ctx.version >= 3
                               else _append_legacy(part, pd.records, acks))
                        err = res.error
            if not err:
                out = R.PartitionProduceResponse(
                    index=pd.index, base_offset=res.base_offset,
                    log_append_time_ms=res.log_append_time,
                    log_start_offset=res.log_start_offset)
                if acks == -1 and not part.replicated(res.next_offset):
                    waits.append((out, part, res.next_offset))
            else:
                out = R.PartitionProduceResponse(
                    index=pd.index, error_code=err, base_offset=-1, log_append_time_ms=-1,
                    log_start_offset=-1, error_message=res.message if res else None,
                    record_errors=[R.BatchIndexAndErrorMessage(
                        batch_index=i, batch_index_error_message=m)
                        for i, m in (res.record_errors if res else ())])
                if err == errors.NOT_LEADER_OR_FOLLOWER:
                    hints = _leader_hint(broker, ctx, out, name, pd.index) or hints
            parts_out.append(out)
        topics_out.append(R.TopicProduceResponse(name=name, partition_responses=parts_out))
    if acks == 0:
        return NO_RESPONSE
    resp = R(responses=topics_out,
             node_endpoints=_endpoints(broker, ctx, topics_out) if hints else [])
    if waits:
        return _await_replication(resp, waits, req.timeout_ms)
    return resp


async def _await_replication(resp, waits, timeout_ms):
    codes = await asyncio.gather(*(part.wait_replicated(off, timeout_ms)
                                   for _out, part, off in waits))
    for (out, _part, _off), code in zip(waits, codes):
        if code:
            out.error_code = code
            if code != errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND:
                out.base_offset = -1
    return resp


def _leader_hint(broker, ctx, out, topic, index) -> bool:
    """KIP-951: tell a v10+ client the partition's current leader with the error."""
    if ctx.version < _LEADER_HINT_VERSION:
        return False
    t = broker.metadata.topics.get(topic)
    if t is None or not 0 <= index < len(t.partitions) or t.partitions[index].leader < 0:
        return False
    p = t.partitions[index]
    out.current_leader = R.PartitionProduceResponse.LeaderIdAndEpoch(
        leader_id=p.leader, leader_epoch=p.leader_epoch)
    return True


def _endpoints(broker, ctx, topics_out):
    brokers = {i: b.on(ctx.listener) for i, b in broker.metadata.brokers.items()}
    brokers = {i: b for i, b in brokers.items() if b is not None}
    ids = {p.current_leader.leader_id for t in topics_out for p in t.partition_responses
           if p.current_leader is not None and p.current_leader.leader_id in brokers}
    return [R.NodeEndpoint(node_id=i, host=brokers[i].host, port=brokers[i].port,
                           rack=brokers[i].rack) for i in sorted(ids)]


def _append_legacy(part, records, acks):
    """Produce v0-2: message formats v0/v1 are stored as one v2 batch. Kafka does not check the
    magic for these versions, so v2 batches sent with them are taken as they are."""
    if len(records) > MAGIC_OFFSET and records[MAGIC_OFFSET] == 2:
        return part.append(records, acks)
    try:
        batch = legacy.to_batch(records)
    except InvalidRecord as e:
        return AppendResult(errors.INVALID_RECORD, message=str(e))
    except CorruptRecord as e:
        return AppendResult(errors.CORRUPT_MESSAGE, message=str(e))
    return part.append(batch, acks)
