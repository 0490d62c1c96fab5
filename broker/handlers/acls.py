"""CreateAcls, DescribeAcls, DeleteAcls. Without an authorizer they answer SECURITY_DISABLED;
creating and deleting needs Alter on the cluster, describing needs Describe (as in Kafka)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from josefk.broker.security import acl
from josefk.broker.security.authorizer import (CLUSTER, CLUSTER_NAME, AclBinding, AclFilter,
                                               allowed, binding_problem)
from josefk.wire import errors
from josefk.wire.apis import CREATE_ACLS, DELETE_ACLS, DESCRIBE_ACLS

if TYPE_CHECKING:
    from josefk.broker.handlers.services import Services
    from josefk.wire.apis import CreateAclsRequest, DeleteAclsRequest, DescribeAclsRequest

NO_AUTHORIZER = "No Authorizer is configured on the broker"


def _refusal(broker: Services, ctx, op):
    """(error code, message) when the request may not run, else None."""
    if broker.authorizer is None:
        return errors.SECURITY_DISABLED, NO_AUTHORIZER
    if not allowed(broker, ctx, CLUSTER, CLUSTER_NAME, op):
        return errors.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed."
    return None


def _filter(f) -> AclFilter | str:
    """The request's filter, or why it is invalid."""
    if f.resource_type_filter <= 0 or f.pattern_type_filter <= 0 or f.operation <= 0 \
            or f.permission_type <= 0:
        return "The filter has an UNKNOWN type, operation or permission"
    return AclFilter(f.resource_type_filter, f.resource_name_filter, f.pattern_type_filter,
                     f.principal_filter, f.host_filter, f.operation, f.permission_type)


async def handle_create_acls(broker: Services, ctx, req: CreateAclsRequest):
    R = CREATE_ACLS.Response
    refusal = _refusal(broker, ctx, acl.ALTER)
    if refusal is not None:
        return R(results=[R.AclCreationResult(error_code=refusal[0], error_message=refusal[1])
                          for _ in req.creations])
    results, valid = [], []
    for c in req.creations:
        b = AclBinding(c.resource_type, c.resource_name, c.resource_pattern_type, c.principal,
                       c.host, c.operation, c.permission_type)
        problem = binding_problem(b)
        if problem is None:
            valid.append(b)
        results.append(R.AclCreationResult(
            error_code=errors.INVALID_REQUEST if problem else errors.NONE, error_message=problem))
    if valid:
        await broker.authorizer.create(valid)
    return R(results=results)


def handle_describe_acls(broker: Services, ctx, req: DescribeAclsRequest):
    R = DESCRIBE_ACLS.Response
    refusal = _refusal(broker, ctx, acl.DESCRIBE)
    if refusal is not None:
        return R(error_code=refusal[0], error_message=refusal[1])
    flt = _filter(req)
    if isinstance(flt, str):
        return R(error_code=errors.INVALID_REQUEST, error_message=flt)
    by_resource: dict[tuple, list] = {}
    for b in broker.authorizer.all():
        if flt.matches(b):
            by_resource.setdefault((b.resource_type, b.name, b.pattern_type), []).append(
                R.DescribeAclsResource.AclDescription(principal=b.principal, host=b.host,
                                                      operation=b.operation,
                                                      permission_type=b.permission))
    return R(error_message=None, resources=[
        R.DescribeAclsResource(resource_type=t, resource_name=n, pattern_type=p, acls=acls)
        for (t, n, p), acls in by_resource.items()])


async def handle_delete_acls(broker: Services, ctx, req: DeleteAclsRequest):
    R = DELETE_ACLS.Response
    M = R.DeleteAclsFilterResult.DeleteAclsMatchingAcl
    refusal = _refusal(broker, ctx, acl.ALTER)
    if refusal is not None:
        return R(filter_results=[R.DeleteAclsFilterResult(error_code=refusal[0],
                                                          error_message=refusal[1])
                                 for _ in req.filters])
    results = []
    for f in req.filters:
        flt = _filter(f)
        if isinstance(flt, str):
            results.append(R.DeleteAclsFilterResult(error_code=errors.INVALID_REQUEST,
                                                    error_message=flt))
            continue
        gone = await broker.authorizer.delete(flt)
        results.append(R.DeleteAclsFilterResult(error_message=None, matching_acls=[
            M(error_message=None, resource_type=b.resource_type, resource_name=b.name,
              pattern_type=b.pattern_type, principal=b.principal, host=b.host,
              operation=b.operation, permission_type=b.permission) for b in gone]))
    return R(filter_results=results)

