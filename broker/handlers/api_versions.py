"""ApiVersions: advertises exactly the versions declared in wire/apis that this broker serves, and
the feature levels of the switchable ones (``broker.dispatch.SWITCHES``)."""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from josefk.broker.handlers.services import Services
    from josefk.wire.apis import ApiVersionsRequest


def handle_api_versions(broker: Services, ctx, req: ApiVersionsRequest):
    if ctx.version >= 3:  # KIP-511: who the client is, for client metrics' matching
        ctx.connection.client_software = (req.client_software_name or "",
                                          req.client_software_version or "")
    supported, finalized, epoch = broker.features
    return ctx.api.Response(api_keys=broker.api_versions, supported_features=supported,
                            finalized_features_epoch=epoch, finalized_features=finalized)
