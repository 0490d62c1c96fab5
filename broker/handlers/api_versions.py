"""ApiVersions: advertises exactly the versions declared in wire/apis that this broker serves, and
the feature levels of the switchable ones (``broker.dispatch.SWITCHES``)."""


def handle_api_versions(broker, ctx, req):
    if ctx.version >= 3:  # KIP-511: who the client is, for client metrics' matching
        ctx.connection.client_software = (req.client_software_name or "",
                                          req.client_software_version or "")
    R = ctx.api.Response
    # Kafka 4 reports the feature levels of what it serves (share.version for share groups)
    return R(api_keys=broker.api_versions,
             supported_features=[R.SupportedFeatureKey(name=n, min_version=0, max_version=level)
                                 for n, level in broker.api_features],
             finalized_features_epoch=1 if broker.api_features else -1,
             finalized_features=[R.FinalizedFeatureKey(name=n, max_version_level=level,
                                                       min_version_level=level)
                                 for n, level in broker.api_features])
