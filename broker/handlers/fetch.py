"""Fetch: byte ranges of the logs, waiting up to max_wait_ms for min_bytes (no busy polling).

Fetch sessions (KIP-227) are declined: every response carries session id 0, which tells the
client to keep sending full fetch requests. Incremental requests for a session we never
created get FETCH_SESSION_ID_NOT_FOUND.

Fetch v0-3 read message formats v0 (v0-1) and v1 (v2-3): their answers are converted down from
the stored v2 batches (``wire.legacy``); v4+ answers stay the stored bytes, untouched.
"""
from __future__ import annotations

import asyncio

from wire import errors, legacy
from wire.apis import FETCH

R = FETCH.Response
_INT32_MAX = 0x7FFFFFFF
FINAL_EPOCH = -1
INITIAL_EPOCH = 0


def handle_fetch(broker, ctx, req):
    v = ctx.version
    if v >= 7 and (req.session_id != 0 or req.session_epoch not in (INITIAL_EPOCH, FINAL_EPOCH)):
        code = (errors.FETCH_SESSION_ID_NOT_FOUND if req.session_id != 0
                else errors.INVALID_FETCH_SESSION_EPOCH)
        return R(error_code=code, session_id=0, responses=[])
    resp, size, ready, parts = _read(broker, req, v)
    if ready or size >= req.min_bytes or req.max_wait_ms <= 0 or not parts:
        return resp
    # Register before returning: an append handled before the coroutine first runs must wake it.
    return _delayed(broker, req, v, broker.replicas.watch(parts))


async def _delayed(broker, req, v, waiter):
    loop = asyncio.get_running_loop()
    deadline = loop.time() + req.max_wait_ms / 1000
    while True:
        await waiter.wait(deadline - loop.time())
        resp, size, ready, parts = _read(broker, req, v)
        if ready or size >= req.min_bytes or loop.time() >= deadline or not parts:
            return resp
        waiter = broker.replicas.watch(parts)


def _read(broker, req, v):
    """One pass over the requested partitions. Returns (response, bytes, ready, partitions);
    ``ready`` is set when an error means the fetch should be answered at once."""
    replicas = broker.replicas
    by_id = broker.metadata.topics_by_id
    remaining = req.max_bytes if v >= 3 else _INT32_MAX
    size = 0
    ready = False
    parts = []
    topics_out = []
    for ft in req.topics:
        if v >= 13:
            meta = by_id.get(ft.topic_id)
            name = meta.name if meta else None
            missing = errors.UNKNOWN_TOPIC_ID
        else:
            name = ft.topic
            missing = errors.UNKNOWN_TOPIC_OR_PARTITION
        parts_out = []
        for fp in ft.partitions:
            part = replicas.get(name, fp.partition) if name is not None else None
            if part is None:
                ready = True
                parts_out.append(R.PartitionData(partition_index=fp.partition, error_code=missing,
                                                 high_watermark=-1, last_stable_offset=-1,
                                                 log_start_offset=-1, records=b""))
                continue
            err = part.check_leader_epoch(fp.current_leader_epoch)
            if not err and v < 4 and not part.config.message_downconversion_enable:
                err = errors.UNSUPPORTED_VERSION
            if err:
                ready = True
                res = None
            else:
                res = part.read(fp.fetch_offset, min(fp.partition_max_bytes, remaining),
                                min_one=size == 0)
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
                    log_start_offset=res.log_start_offset if res else -1, records=b""))
                continue
            n = len(res.records)
            size += n
            remaining = max(0, remaining - n)
            parts.append(part)
            parts_out.append(R.PartitionData(
                partition_index=fp.partition, high_watermark=res.high_watermark,
                last_stable_offset=res.last_stable_offset, log_start_offset=res.log_start_offset,
                aborted_transactions=None if v >= 4 else [], records=records))
        topics_out.append(R.FetchableTopicResponse(topic=name or "", topic_id=ft.topic_id
                                                   if v >= 13 else None, partitions=parts_out))
    return R(session_id=0, responses=topics_out), size, ready, parts


def _down_convert(records, v, fetch_offset):
    """(error, records) for Fetch v0-3: magic 0 for v0-1, magic 1 for v2-3."""
    try:
        return errors.NONE, legacy.down_convert(records, 0 if v < 2 else 1, fetch_offset)
    except legacy.UnsupportedDownConversion:
        return errors.UNSUPPORTED_COMPRESSION_TYPE, None
