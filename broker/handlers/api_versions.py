"""ApiVersions: advertises exactly the versions declared in wire/apis."""


def handle_api_versions(broker, ctx, req):
    if ctx.version >= 3:  # KIP-511: who the client is, for client metrics' matching
        ctx.connection.client_software = (req.client_software_name or "",
                                          req.client_software_version or "")
    return ctx.api.Response(api_keys=broker.api_versions)
