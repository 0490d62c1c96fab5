"""InitProducerId for idempotent producers."""
from __future__ import annotations

from broker import acl
from broker.authorizer import CLUSTER, CLUSTER_NAME, TOPIC, allowed, allowed_on_any
from wire import errors
from wire.apis import INIT_PRODUCER_ID

R = INIT_PRODUCER_ID.Response


def handle_init_producer_id(broker, ctx, req):
    if req.transactional_id is not None:
        # Transactions need the transaction coordinator, which this broker does not offer yet
        # (it does not advertise the transactional APIs either).
        return R(error_code=errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, producer_id=-1,
                 producer_epoch=-1)
    if not (allowed(broker, ctx, CLUSTER, CLUSTER_NAME, acl.IDEMPOTENT_WRITE)
            or allowed_on_any(broker, ctx, TOPIC, acl.WRITE)):  # KIP-679: Write on any topic
        return R(error_code=errors.CLUSTER_AUTHORIZATION_FAILED, producer_id=-1,
                 producer_epoch=-1)
    pid, epoch = broker.producer_ids.init(req.producer_id, req.producer_epoch)
    return R(producer_id=pid, producer_epoch=epoch)
