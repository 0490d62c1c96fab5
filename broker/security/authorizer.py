"""Kafka's ACL authorizer (``authorizer.class.name``): ACL bindings over topics, groups, the
cluster, transactional ids and delegation tokens, literal or prefixed patterns (and ``*``),
allow and deny with deny winning, ``super.users`` and ``allow.everyone.if.no.acl.found``.

Decisions are plain functions of the bindings; where the bindings live (a JSON file in the
first log dir, or ZooKeeper's ``/kafka-acl`` in cluster mode) is the store's business.
"""
from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import NamedTuple, Protocol

from josefk.broker.security import acl
from josefk.wire import errors

# Resource types, pattern types, permissions (Kafka's codes on the wire).
ANY_RESOURCE, TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID, DELEGATION_TOKEN, USER = 1, 2, 3, 4, 5, 6, 7
ANY_PATTERN, MATCH, LITERAL, PREFIXED = 1, 2, 3, 4
ANY_PERMISSION, DENY, ALLOW = 1, 2, 3
ANY_OPERATION, ALL = 1, 2
WILDCARD = "*"
CLUSTER_NAME = "kafka-cluster"

RESOURCE_NAMES = {TOPIC: "Topic", GROUP: "Group", CLUSTER: "Cluster",
                  TRANSACTIONAL_ID: "TransactionalId", DELEGATION_TOKEN: "DelegationToken",
                  USER: "User"}
OPERATION_NAMES = {ALL: "All", acl.READ: "Read", acl.WRITE: "Write", acl.CREATE: "Create",
                   acl.DELETE: "Delete", acl.ALTER: "Alter", acl.DESCRIBE: "Describe",
                   acl.CLUSTER_ACTION: "ClusterAction", acl.DESCRIBE_CONFIGS: "DescribeConfigs",
                   acl.ALTER_CONFIGS: "AlterConfigs", acl.IDEMPOTENT_WRITE: "IdempotentWrite",
                   acl.CREATE_TOKENS: "CreateTokens", acl.DESCRIBE_TOKENS: "DescribeTokens"}
PERMISSION_NAMES = {ALLOW: "Allow", DENY: "Deny"}
PATTERN_NAMES = {LITERAL: "LITERAL", PREFIXED: "PREFIXED"}
# The operations each resource type has (what a resource's authorized-operations bits can hold).
RESOURCE_OPERATIONS = {TOPIC: acl.TOPIC, GROUP: acl.GROUP, CLUSTER: acl.CLUSTER,
                       TRANSACTIONAL_ID: acl.bits(acl.WRITE, acl.DESCRIBE),
                       DELEGATION_TOKEN: acl.bits(acl.DESCRIBE),
                       USER: acl.bits(acl.CREATE_TOKENS, acl.DESCRIBE_TOKENS)}
# An allow ACL for one of these operations also allows Describe (or DescribeConfigs).
IMPLIES = {acl.DESCRIBE: {acl.DESCRIBE, acl.READ, acl.WRITE, acl.DELETE, acl.ALTER},
           acl.DESCRIBE_CONFIGS: {acl.DESCRIBE_CONFIGS, acl.ALTER_CONFIGS}}


class AclBinding(NamedTuple):
    resource_type: int
    name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission: int

    def to_json(self):
        return list(self)


class AclFilter(NamedTuple):
    """A DescribeAcls/DeleteAcls filter: None (or ANY) fields match anything; pattern type MATCH
    matches the bindings that would apply to the named resource."""
    resource_type: int
    name: str | None
    pattern_type: int
    principal: str | None
    host: str | None
    operation: int
    permission: int

    def matches(self, b: AclBinding) -> bool:
        if self.resource_type not in (ANY_RESOURCE, b.resource_type):
            return False
        if self.pattern_type == MATCH:
            if self.name is not None and not resource_matches(b, self.name):
                return False
        else:
            if self.pattern_type not in (ANY_PATTERN, b.pattern_type):
                return False
            if self.name is not None and self.name != b.name:
                return False
        return (self.principal in (None, b.principal) and self.host in (None, b.host)
                and self.operation in (ANY_OPERATION, b.operation)
                and self.permission in (ANY_PERMISSION, b.permission))


def binding_problem(b: AclBinding) -> str | None:
    """Why a binding cannot be created (Kafka's checks), or None."""
    if b.resource_type not in RESOURCE_NAMES or b.resource_type == USER:
        return "Invalid resource type"
    if b.pattern_type not in PATTERN_NAMES:
        return "Invalid pattern type"
    if b.operation not in OPERATION_NAMES:
        return "Invalid operation"
    if b.permission not in PERMISSION_NAMES:
        return "Invalid permission type"
    if not b.name:
        return "Resource name must not be empty"
    if b.resource_type == CLUSTER and b.name != CLUSTER_NAME:
        return "The only valid name for the CLUSTER resource is kafka-cluster"
    if ":" not in b.principal:
        return f"Could not parse principal from `{b.principal}` (no colon is present " \
               "separating the principal type from the principal name)"
    if b.operation != ALL and not RESOURCE_OPERATIONS[b.resource_type] >> b.operation & 1:
        return f"ACL operation {OPERATION_NAMES[b.operation]} is not valid for resource " \
               f"type {RESOURCE_NAMES[b.resource_type]}"
    return None


def resource_matches(b: AclBinding, name: str) -> bool:
    if b.pattern_type == PREFIXED:
        return name.startswith(b.name)
    return b.name in (name, WILDCARD)


class AclAuthorizer:
    def __init__(self, config, store):
        self.store = store
        self.super_users = {u.strip() for u in (config.get("super.users") or "").split(";")
                            if u.strip()}
        self.allow_if_no_acl = config.bool("allow.everyone.if.no.acl.found")
        self.bindings: dict[int, set[AclBinding]] = {}

    # -- the store ----------------------------------------------------------------------------------
    async def start(self) -> None:
        """Load the bindings; in cluster mode, reload them whenever a broker announces a change."""
        await self.reload()
        watch = getattr(self.store, "watch", None)
        if watch is not None:
            await watch(lambda: asyncio.ensure_future(self.reload()))

    async def reload(self) -> None:
        self.load(await self.store.load())

    def load(self, bindings) -> None:
        self.bindings = {}
        for b in bindings:
            self.bindings.setdefault(b.resource_type, set()).add(b)

    def all(self) -> list[AclBinding]:
        return sorted(b for group in self.bindings.values() for b in group)

    async def create(self, bindings: list[AclBinding]) -> None:
        await self.store.save(add=bindings, remove=[])
        self.load([*self.all(), *bindings])

    async def delete(self, flt: AclFilter) -> list[AclBinding]:
        gone = [b for b in self.all() if flt.matches(b)]
        if gone:
            await self.store.save(add=[], remove=gone)
            self.load([b for b in self.all() if b not in set(gone)])
        return gone

    # -- decisions ----------------------------------------------------------------------------------
    def authorize(self, principal: str, host: str, resource_type: int, name: str, op: int) -> bool:
        if principal in self.super_users:
            return True
        acls = [b for b in self.bindings.get(resource_type, ()) if resource_matches(b, name)]
        if not acls:
            return self.allow_if_no_acl
        mine = [b for b in acls if b.principal in (principal, "User:*")
                and b.host in (host, WILDCARD)]
        if any(b.permission == DENY and b.operation in (op, ALL) for b in mine):
            return False
        allowed = IMPLIES.get(op, {op})
        return any(b.permission == ALLOW and (b.operation == ALL or b.operation in allowed)
                   for b in mine)

    def authorize_any(self, principal: str, host: str, resource_type: int, op: int) -> bool:
        """May the principal do ``op`` on at least one resource of the type? (Kafka's
        authorizeByResourceType): some allow binding's resource is not denied."""
        if principal in self.super_users:
            return True
        acls = self.bindings.get(resource_type, ())
        if not acls:
            return self.allow_if_no_acl
        return any(b.permission == ALLOW and b.principal in (principal, "User:*")
                   and b.host in (host, WILDCARD) and b.operation in (op, ALL)
                   and self.authorize(principal, host, resource_type, b.name, op) for b in acls)

    def operations(self, principal: str, host: str, resource_type: int, name: str) -> int:
        """The authorized-operations bits (KIP-430) of a resource for this principal."""
        bits = RESOURCE_OPERATIONS[resource_type]
        return sum(1 << op for op in range(32) if bits >> op & 1
                   and self.authorize(principal, host, resource_type, name, op))


# -- what handlers call ------------------------------------------------------------------------------
class Authorizing(Protocol):
    """What the checks below need of the broker: its authorizer (None: everything allowed)."""

    @property
    def authorizer(self) -> AclAuthorizer | None: ...


def allowed(broker: Authorizing, ctx, resource_type: int, name: str, op: int) -> bool:
    """May the client of ``ctx`` do ``op`` on the resource? Always, without an authorizer."""
    a = broker.authorizer
    return a is None or a.authorize(ctx.connection.security.principal, ctx.client_host,
                                    resource_type, name, op)


def allowed_on_any(broker: Authorizing, ctx, resource_type: int, op: int) -> bool:
    a = broker.authorizer
    return a is None or a.authorize_any(ctx.connection.security.principal, ctx.client_host,
                                        resource_type, op)


def operations(broker: Authorizing, ctx, resource_type: int, name: str, requested: bool) -> int:
    """The authorized-operations field of a response (NOT_REQUESTED unless asked for)."""
    if not requested:
        return acl.NOT_REQUESTED
    a = broker.authorizer
    if a is None:
        return RESOURCE_OPERATIONS[resource_type]
    return a.operations(ctx.connection.security.principal, ctx.client_host, resource_type, name)


def _requires(resource_type: int, name_of, op: int, code: int, handler):
    """``handler`` behind a check of ``op`` on the request's resource: refused requests get
    ``code`` in the response's top-level error code."""
    def checked(broker, ctx, req):
        if allowed(broker, ctx, resource_type, name_of(req), op):
            return handler(broker, ctx, req)
        resp = ctx.api.Response(error_code=code)
        if hasattr(resp, "error_message"):
            resp.error_message = "Authorization failed."
        return resp
    return checked


def requires_cluster(op: int, handler):
    return _requires(CLUSTER, lambda _req: CLUSTER_NAME, op, errors.CLUSTER_AUTHORIZATION_FAILED,
                     handler)


def requires_group(op: int, handler):
    """For the group APIs whose request names one ``group_id``."""
    return _requires(GROUP, lambda req: req.group_id, op, errors.GROUP_AUTHORIZATION_FAILED,
                     handler)


class LocalAclStore:
    """The bindings of a broker without ZooKeeper, in ``acls.json`` in the first log dir."""

    def __init__(self, log_dir: str):
        self.path = Path(log_dir) / "acls.json"
        self.bindings = {AclBinding(*b) for b in json.loads(self.path.read_text())} \
            if self.path.exists() else set()

    async def load(self) -> list[AclBinding]:
        return sorted(self.bindings)

    async def save(self, add, remove) -> None:
        self.bindings = (self.bindings - set(remove)) | set(add)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps([b.to_json() for b in sorted(self.bindings)]))
        os.replace(tmp, self.path)
