"""DescribeClientQuotas and AlterClientQuotas over user / client-id entities (KIP-546).
Describing needs DescribeConfigs on the cluster, altering AlterConfigs (as in Kafka)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from josefk.broker.security import acl
from josefk.broker.security.authorizer import CLUSTER, CLUSTER_NAME, allowed
from josefk.broker.security.quotas import CLIENT, DEFAULT, KEYS, USER
from josefk.wire import errors
from josefk.wire.apis import ALTER_CLIENT_QUOTAS, DESCRIBE_CLIENT_QUOTAS

if TYPE_CHECKING:
    from josefk.broker.handlers.services import Services
    from josefk.wire.apis import AlterClientQuotasRequest, DescribeClientQuotasRequest

EXACT, DEFAULT_MATCH, SPECIFIED = 0, 1, 2


def _wire_entity(R, entity):
    return [R.EntityData(entity_type=t, entity_name=None if n == DEFAULT else n)
            for t, n in entity]


def handle_describe_client_quotas(broker: Services, ctx, req: DescribeClientQuotasRequest):
    R = DESCRIBE_CLIENT_QUOTAS.Response
    if not allowed(broker, ctx, CLUSTER, CLUSTER_NAME, acl.DESCRIBE_CONFIGS):
        return R(error_code=errors.CLUSTER_AUTHORIZATION_FAILED,
                 error_message="Cluster authorization failed.", entries=None)
    for c in req.components:
        if c.entity_type not in (USER, CLIENT) or c.match_type not in (EXACT, DEFAULT_MATCH,
                                                                       SPECIFIED):
            return R(error_code=errors.INVALID_REQUEST, entries=None,
                     error_message=f"Invalid quota filter component {c.entity_type}")
    entries = []
    for entity, values in sorted(broker.quotas.quotas.items()):
        names = dict(entity)
        if req.strict and set(names) != {c.entity_type for c in req.components}:
            continue
        if all(_matches(c, names.get(c.entity_type)) for c in req.components):
            entries.append(R.EntryData(entity=_wire_entity(R.EntryData, entity), values=[
                R.EntryData.ValueData(key=k, value=v) for k, v in sorted(values.items())]))
    return R(entries=entries, error_message=None)


def _matches(component, name) -> bool:
    if name is None:
        return False
    if component.match_type == DEFAULT_MATCH or (component.match_type == EXACT
                                                 and component.match is None):
        return name == DEFAULT
    if component.match_type == SPECIFIED:
        return name != DEFAULT
    return name == component.match


async def handle_alter_client_quotas(broker: Services, ctx, req: AlterClientQuotasRequest):
    R = ALTER_CLIENT_QUOTAS.Response
    may = allowed(broker, ctx, CLUSTER, CLUSTER_NAME, acl.ALTER_CONFIGS)
    out = []
    for e in req.entries:
        res = R.EntryData(entity=[R.EntryData.EntityData(entity_type=d.entity_type,
                                                         entity_name=d.entity_name)
                                  for d in e.entity], error_message=None)
        out.append(res)
        types = [d.entity_type for d in e.entity]
        problem = None
        if not may:
            res.error_code = errors.CLUSTER_AUTHORIZATION_FAILED
            res.error_message = "Cluster authorization failed."
            continue
        if not types or len(set(types)) != len(types) or not set(types) <= {USER, CLIENT}:
            problem = f"Invalid quota entity {types}"
        else:
            bad = [o.key for o in e.ops if o.key not in KEYS or (not o.remove and o.value <= 0)]
            if bad:
                problem = f"Invalid quota configs {bad}"
        if problem:
            res.error_code, res.error_message = errors.INVALID_REQUEST, problem
            continue
        names = {d.entity_type: d.entity_name for d in e.entity}
        key = tuple((t, names[t] if names[t] is not None else DEFAULT)
                    for t in (USER, CLIENT) if t in names)
        if not req.validate_only:
            await broker.quotas.alter(key, {o.key: None if o.remove else o.value for o in e.ops})
    return R(entries=out)
