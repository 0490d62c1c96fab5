"""Client telemetry (KIP-714): the broker collects no client metrics, so every subscription is
empty, which tells clients not to push."""
from __future__ import annotations

import uuid

from josefk.wire.apis import GET_TELEMETRY_SUBSCRIPTIONS, PUSH_TELEMETRY

PUSH_INTERVAL_MS = 300_000


def handle_get_telemetry_subscriptions(broker, ctx, req):
    R = GET_TELEMETRY_SUBSCRIPTIONS.Response
    client_id = req.client_instance_id
    if client_id is None or client_id.int == 0:
        client_id = uuid.uuid4()
    return R(client_instance_id=client_id, subscription_id=0, accepted_compression_types=[],
             push_interval_ms=PUSH_INTERVAL_MS, telemetry_max_bytes=1024 * 1024,
             delta_temporality=True, requested_metrics=[])


def handle_push_telemetry(broker, ctx, req):
    return PUSH_TELEMETRY.Response()
