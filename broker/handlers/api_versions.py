"""ApiVersions: advertises exactly the versions declared in wire/apis."""


def handle_api_versions(broker, ctx, req):
    return ctx.api.Response(api_keys=broker.api_versions)
