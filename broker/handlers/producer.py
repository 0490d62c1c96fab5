"""InitProducerId: idempotent producers get ids here, transactional ones from the transaction
coordinator."""
from __future__ import annotations

from typing import TYPE_CHECKING

from josefk.broker.security import acl
from josefk.broker.security.authorizer import (CLUSTER, CLUSTER_NAME, TOPIC, TRANSACTIONAL_ID,
                                               allowed, allowed_on_any)
from josefk.coordinator.txn.producer_ids import ProducerIdsUnavailable
from josefk.wire import errors
from josefk.wire.apis import INIT_PRODUCER_ID

if TYPE_CHECKING:
    from josefk.broker.handlers.services import Services
    from josefk.wire.apis import InitProducerIdRequest

R = INIT_PRODUCER_ID.Response


def handle_init_producer_id(broker: Services, ctx, req: InitProducerIdRequest):
    if req.transactional_id is not None:
        if not allowed(broker, ctx, TRANSACTIONAL_ID, req.transactional_id, acl.WRITE):
            return R(error_code=errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, producer_id=-1,
                     producer_epoch=-1)
        return _init_transactional(broker, req)
    if not (allowed(broker, ctx, CLUSTER, CLUSTER_NAME, acl.IDEMPOTENT_WRITE)
            or allowed_on_any(broker, ctx, TOPIC, acl.WRITE)):  # KIP-679: Write on any topic
        return R(error_code=errors.CLUSTER_AUTHORIZATION_FAILED, producer_id=-1,
                 producer_epoch=-1)
    try:
        pid, epoch = broker.producer_ids.init(req.producer_id, req.producer_epoch)
    except ProducerIdsUnavailable:
        return R(error_code=errors.COORDINATOR_LOAD_IN_PROGRESS, producer_id=-1, producer_epoch=-1)
    return R(producer_id=pid, producer_epoch=epoch)


async def _init_transactional(broker: Services, req):
    code, pid, epoch = await broker.txn.init_producer_id(
        req.transactional_id, req.transaction_timeout_ms, req.producer_id, req.producer_epoch)
    return R(error_code=code, producer_id=pid, producer_epoch=epoch)
