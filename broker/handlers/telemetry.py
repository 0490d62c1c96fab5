"""Client telemetry (KIP-714): GetTelemetrySubscriptions and PushTelemetry, answered by the
broker's `ClientMetricsManager` (broker/client_metrics.py), which keeps what clients push for
the Prometheus endpoint."""
from __future__ import annotations

from typing import TYPE_CHECKING

from josefk.broker.client_metrics import ACCEPTED_COMPRESSION
from josefk.wire.apis import GET_TELEMETRY_SUBSCRIPTIONS, PUSH_TELEMETRY

if TYPE_CHECKING:
    from josefk.broker.handlers.services import Services
    from josefk.wire.apis import GetTelemetrySubscriptionsRequest, PushTelemetryRequest


def _client(ctx) -> dict:
    """What a subscription's ``match`` may name of the client behind ``ctx``."""
    name, version = ctx.connection.client_software
    return {"client_id": ctx.client_id, "client_software_name": name,
            "client_software_version": version, "client_source_address": ctx.client_host,
            "client_source_port": ctx.connection.client_port}


def handle_get_telemetry_subscriptions(broker: Services, ctx,
                                       req: GetTelemetrySubscriptionsRequest):
    R = GET_TELEMETRY_SUBSCRIPTIONS.Response
    manager = broker.client_metrics
    code, inst = manager.get_subscriptions(req.client_instance_id, _client(ctx))
    return R(error_code=code, client_instance_id=inst.id, subscription_id=inst.subscription_id,
             accepted_compression_types=ACCEPTED_COMPRESSION, push_interval_ms=inst.interval_ms,
             telemetry_max_bytes=manager.max_bytes, delta_temporality=False,
             requested_metrics=inst.requested_metrics())


def handle_push_telemetry(broker: Services, ctx, req: PushTelemetryRequest):
    code = broker.client_metrics.push(req.client_instance_id, _client(ctx), req.subscription_id,
                                      req.terminating, req.compression_type, req.metrics)
    return PUSH_TELEMETRY.Response(error_code=code)
