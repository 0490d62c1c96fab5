"""InitProducerId: idempotent producers get ids here, transactional ones from the transaction
coordinator."""
from __future__ import annotations

from wire.apis import INIT_PRODUCER_ID

R = INIT_PRODUCER_ID.Response


def handle_init_producer_id(broker, ctx, req):
    if req.transactional_id is not None:
        return _init_transactional(broker, req)
    pid, epoch = broker.producer_ids.init(req.producer_id, req.producer_epoch)
    return R(producer_id=pid, producer_epoch=epoch)


async def _init_transactional(broker, req):
    code, pid, epoch = await broker.txn.init_producer_id(
        req.transactional_id, req.transaction_timeout_ms, req.producer_id, req.producer_epoch)
    return R(error_code=code, producer_id=pid, producer_epoch=epoch)
