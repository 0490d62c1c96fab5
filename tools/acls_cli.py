"""``josefk acls``, shaped like kafka-acls.sh:

    josefk acls --bootstrap-server B --add --allow-principal User:alice --operation Read \
        --topic orders [--resource-pattern-type prefixed]
    josefk acls --bootstrap-server B --add --allow-principal User:alice --consumer \
        --topic orders --group billing
    josefk acls --bootstrap-server B --list [--topic orders] [--principal User:alice]
    josefk acls --bootstrap-server B --remove --allow-principal User:alice --topic orders
"""
from __future__ import annotations

import sys

from josefk.broker.security import acl
from josefk.broker.security.authorizer import (ALL, ALLOW, ANY_OPERATION, ANY_PATTERN,
                                               ANY_PERMISSION, ANY_RESOURCE, CLUSTER, CLUSTER_NAME,
                                               DENY, GROUP, LITERAL, MATCH, OPERATION_NAMES,
                                               PATTERN_NAMES, PREFIXED, TOPIC, TRANSACTIONAL_ID)
from josefk.tools.actions import add_actions
from josefk.tools.client import Client, KafkaError
from josefk.wire import errors
from josefk.wire.apis import CREATE_ACLS, DELETE_ACLS, DESCRIBE_ACLS

_OPERATIONS = {n.lower(): code for code, n in OPERATION_NAMES.items()}
_PATTERNS = {"literal": LITERAL, "prefixed": PREFIXED, "match": MATCH, "any": ANY_PATTERN}
_RESOURCE_LABELS = {TOPIC: "TOPIC", GROUP: "GROUP", CLUSTER: "CLUSTER",
                    TRANSACTIONAL_ID: "TRANSACTIONAL_ID", 6: "DELEGATION_TOKEN", 7: "USER"}


def add_commands(sub, common):
    a = common(sub.add_parser("acls", help="add, list and remove ACLs (like kafka-acls.sh)"))
    add_actions(a, {"add": (acls_command, "add the ACLs"),
                    "remove": (acls_command, "remove the ACLs that match"),
                    "list": (acls_command, "list the ACLs that match (every ACL by default)")})
    a.add_argument("--allow-principal", action="append", default=[],
                   help="User:NAME allowed (repeatable)")
    a.add_argument("--deny-principal", action="append", default=[],
                   help="User:NAME denied (repeatable)")
    a.add_argument("--allow-host", action="append", default=[],
                   help="a host the allowed principals may come from (default: any, *)")
    a.add_argument("--deny-host", action="append", default=[],
                   help="a host the denied principals are denied from (default: any, *)")
    a.add_argument("--principal", help="--list: only the ACLs of this principal")
    a.add_argument("--operation", action="append", default=[],
                   help="Read, Write, Create, Delete, Alter, Describe, ClusterAction, "
                        "DescribeConfigs, AlterConfigs, IdempotentWrite, All")
    a.add_argument("--topic", action="append", default=[], help="a topic (repeatable)")
    a.add_argument("--group", action="append", default=[], help="a group (repeatable)")
    a.add_argument("--transactional-id", action="append", default=[],
                   help="a transactional id (repeatable)")
    a.add_argument("--cluster", action="store_true", help="the cluster resource")
    a.add_argument("--resource-pattern-type", default=None,
                   help="literal (default), prefixed; for --list/--remove also any, match")
    a.add_argument("--producer", action="store_true", help="Write, Describe, Create on topics")
    a.add_argument("--consumer", action="store_true", help="Read, Describe on topics, Read on "
                                                           "groups")
    a.add_argument("--force", action="store_true", help="accepted for kafka-acls.sh "
                                                        "compatibility; nothing is asked")


def _resources(args) -> list[tuple[int, str]]:
    res = [(TOPIC, t) for t in args.topic] + [(GROUP, g) for g in args.group]
    res += [(TRANSACTIONAL_ID, t) for t in args.transactional_id]
    if args.cluster:
        res.append((CLUSTER, CLUSTER_NAME))
    return res


def _operations(args, resource_type) -> list[int]:
    ops = [_OPERATIONS[o.lower()] for o in args.operation]
    if args.producer and resource_type == TOPIC:
        ops += [acl.WRITE, acl.DESCRIBE, acl.CREATE]
    if args.consumer and resource_type == TOPIC:
        ops += [acl.READ, acl.DESCRIBE]
    if args.consumer and resource_type == GROUP:
        ops.append(acl.READ)
    return list(dict.fromkeys(ops))


def _entries(args):
    """(principal, host, permission) to add or remove."""
    out = [(p, h, ALLOW) for p in args.allow_principal for h in args.allow_host or ["*"]]
    out += [(p, h, DENY) for p in args.deny_principal for h in args.deny_host or ["*"]]
    return out


def acls_command(args) -> int:
    unknown = [o for o in args.operation if o.lower() not in _OPERATIONS]
    if unknown:
        print(f"Error: unknown operation {', '.join(unknown)}", file=sys.stderr)
        return 1
    with Client.from_args(args) as c:
        if args.action == "add":
            return _add(c, args)
        if args.action == "remove":
            return _remove(c, args)
        return _list(c, args)


def _add(c, args) -> int:
    Q = CREATE_ACLS.Request
    pattern = _PATTERNS[(args.resource_pattern_type or "literal").lower()]
    creations = [Q.AclCreation(resource_type=rt, resource_name=name,
                               resource_pattern_type=pattern, principal=p, host=h, operation=op,
                               permission_type=perm)
                 for rt, name in _resources(args) for op in _operations(args, rt)
                 for p, h, perm in _entries(args)]
    if not creations:
        print("Error: --add needs a resource, a principal and an operation", file=sys.stderr)
        return 1
    resp = c.request(CREATE_ACLS, creations=creations)
    failed = [r for r in resp.results if r.error_code]
    for r in failed:
        print(f"Error while adding ACLs: {errors.name(r.error_code)}: {r.error_message}",
              file=sys.stderr)
    if not failed:
        for rt, name in _resources(args):
            print(f"Adding ACLs for resource `{_pattern_text(rt, name, pattern)}`: ")
            for p, h, perm in _entries(args):
                for op in _operations(args, rt):
                    print(f" \t{_acl_text(p, h, op, perm)} ")
    return 1 if failed else 0


def _filters(args):
    """Filters for --list/--remove: the resources named (else every resource)."""
    default = "literal" if args.action == "remove" else "any"
    pattern = _PATTERNS[(args.resource_pattern_type or default).lower()]
    resources = _resources(args) or [(ANY_RESOURCE, None)]
    entries = _entries(args) or [(args.principal, None, ANY_PERMISSION)]
    return [(rt, name, pattern, p, h, op, perm) for rt, name in resources
            for op in (_operations(args, rt) or [ANY_OPERATION]) for p, h, perm in entries]


def _list(c, args) -> int:
    for rt, name, pattern, principal, host, op, perm in _filters(args):
        resp = c.request(DESCRIBE_ACLS, resource_type_filter=rt, resource_name_filter=name,
                         pattern_type_filter=pattern, principal_filter=principal,
                         host_filter=host, operation=op, permission_type=perm)
        if resp.error_code:
            raise KafkaError(resp.error_code, resp.error_message)
        for r in resp.resources:
            print(f"Current ACLs for resource `{_pattern_text(r.resource_type, r.resource_name, r.pattern_type)}`: ")
            for a in r.acls:
                print(f" \t{_acl_text(a.principal, a.host, a.operation, a.permission_type)} ")
            print()
    return 0


def _remove(c, args) -> int:
    Q = DELETE_ACLS.Request
    filters = [Q.DeleteAclsFilter(resource_type_filter=rt, resource_name_filter=name,
                                  pattern_type_filter=pattern, principal_filter=p,
                                  host_filter=h, operation=op, permission_type=perm)
               for rt, name, pattern, p, h, op, perm in _filters(args)]
    resp = c.request(DELETE_ACLS, filters=filters)
    failed = 0
    for r in resp.filter_results:
        if r.error_code:
            failed = 1
            print(f"Error while removing ACLs: {errors.name(r.error_code)}: {r.error_message}",
                  file=sys.stderr)
        for m in r.matching_acls:
            print(f"Removed ACL {_acl_text(m.principal, m.host, m.operation, m.permission_type)}"
                  f" from `{_pattern_text(m.resource_type, m.resource_name, m.pattern_type)}`")
    return failed


def _pattern_text(rt, name, pattern) -> str:
    return (f"ResourcePattern(resourceType={_RESOURCE_LABELS.get(rt, rt)}, name={name}, "
            f"patternType={PATTERN_NAMES.get(pattern, pattern)})")


def _acl_text(principal, host, op, perm) -> str:
    operation = "ALL" if op == ALL else OPERATION_NAMES.get(op, str(op)).upper()
    permission = "ALLOW" if perm == ALLOW else "DENY"
    return f"(principal={principal}, host={host}, operation={operation}, " \
           f"permissionType={permission})"
