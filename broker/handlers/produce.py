"""Produce: validate whole batches, assign offsets, append; no per-record work.

Produce v0-2 carry message formats v0/v1: those (and only those) are converted to one v2 batch
first (``wire.legacy``), as Kafka converts them to the log's format."""
from __future__ import annotations

from broker.replica import AppendResult
from broker.server import NO_RESPONSE
from wire import errors, legacy
from wire.batch import MAGIC_OFFSET, CorruptRecord, InvalidRecord
from wire.apis import PRODUCE

R = PRODUCE.Response
_VALID_ACKS = (0, 1, -1)


def handle_produce(broker, ctx, req):
    acks = req.acks
    topics_out = []
    for td in req.topic_data:
        parts_out = []
        name = td.name
        topic_error = broker.topic_error_for_produce(name)
        for pd in td.partition_data:
            if acks not in _VALID_ACKS:
                err, res = errors.INVALID_REQUIRED_ACKS, None
            elif topic_error:
                err, res = topic_error, None
            else:
                part = broker.replicas.get(name, pd.index)
                if part is None:
                    err, res = errors.UNKNOWN_TOPIC_OR_PARTITION, None
                elif pd.records is None:
                    err, res = errors.CORRUPT_MESSAGE, None
                else:
                    res = (part.append(pd.records, acks) if ctx.version >= 3
                           else _append_legacy(part, pd.records, acks))
                    err = res.error
            if res is not None and not err:
                parts_out.append(R.PartitionProduceResponse(
                    index=pd.index, base_offset=res.base_offset, log_append_time_ms=-1,
                    log_start_offset=res.log_start_offset))
            else:
                parts_out.append(R.PartitionProduceResponse(
                    index=pd.index, error_code=err, base_offset=-1, log_append_time_ms=-1,
                    log_start_offset=-1, error_message=res.message if res else None))
        topics_out.append(R.TopicProduceResponse(name=name, partition_responses=parts_out))
    if acks == 0:
        return NO_RESPONSE
    return R(responses=topics_out)


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
