"""ACL bindings in ZooKeeper, in Kafka's layout: literal ones under
``/kafka-acl/<ResourceType>/<name>``, prefixed ones under
``/kafka-acl-extended/prefixed/<ResourceType>/<name>``, each holding
``{"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow","operation":"Read","host":"*"}]}``.
Every change is announced under ``/kafka-acl-changes`` (literal) or
``/kafka-acl-extended-changes`` (prefixed); brokers reload on those notifications."""
from __future__ import annotations

import json

from kazoo.exceptions import NoNodeError

from josefk.broker.security.authorizer import (LITERAL, OPERATION_NAMES, PATTERN_NAMES,
                                               PERMISSION_NAMES, PREFIXED, RESOURCE_NAMES,
                                               AclBinding)

ROOTS = {LITERAL: "/kafka-acl", PREFIXED: "/kafka-acl-extended/prefixed"}
CHANGES = {LITERAL: "/kafka-acl-changes", PREFIXED: "/kafka-acl-extended-changes"}
CHANGE_PREFIX = "acl_changes_"
_RESOURCE_CODES = {v: k for k, v in RESOURCE_NAMES.items()}
_OPERATION_CODES = {v: k for k, v in OPERATION_NAMES.items()}
_PERMISSION_CODES = {v: k for k, v in PERMISSION_NAMES.items()}


def _path(pattern: int, resource_type: int, name: str) -> str:
    return f"{ROOTS[pattern]}/{RESOURCE_NAMES[resource_type]}/{name}"


def _encode(bindings) -> bytes:
    return json.dumps({"version": 1, "acls": [
        {"principal": b.principal, "permissionType": PERMISSION_NAMES[b.permission],
         "operation": OPERATION_NAMES[b.operation], "host": b.host} for b in bindings]},
        separators=(",", ":")).encode()


def _decode(data: bytes, pattern: int, resource_type: int, name: str) -> list[AclBinding]:
    return [AclBinding(resource_type, name, pattern, a["principal"], a["host"],
                       _OPERATION_CODES[a["operation"]], _PERMISSION_CODES[a["permissionType"]])
            for a in json.loads(data or b"{}").get("acls", [])]


def read_all(k) -> list[AclBinding]:
    out = []
    for pattern, root in ROOTS.items():
        try:
            types = k.get_children(root)
        except NoNodeError:
            continue
        for type_name in types:
            if type_name not in _RESOURCE_CODES:
                continue
            for name in k.get_children(f"{root}/{type_name}"):
                try:
                    data, _ = k.get(f"{root}/{type_name}/{name}")
                except NoNodeError:
                    continue
                out += _decode(data, pattern, _RESOURCE_CODES[type_name], name)
    return out


def _change(pattern: int, resource_type: int, name: str) -> bytes:
    if pattern == LITERAL:
        return f"{RESOURCE_NAMES[resource_type]}:{name}".encode()
    return json.dumps({"version": 1, "resourceType": RESOURCE_NAMES[resource_type],
                       "name": name, "patternType": PATTERN_NAMES[pattern]}).encode()


def write(k, add, remove) -> None:
    resources = {(b.pattern_type, b.resource_type, b.name) for b in [*add, *remove]}
    for pattern, rtype, name in sorted(resources):
        path = _path(pattern, rtype, name)
        try:
            data, stat = k.get(path)
            current, version = set(_decode(data, pattern, rtype, name)), stat.version
        except NoNodeError:
            current, version = set(), None
        new = (current - set(remove)) | {b for b in add if (b.pattern_type, b.resource_type,
                                                          b.name) == (pattern, rtype, name)}
        if new == current:
            continue
        if not new:
            k.delete(path, version=version)
        elif version is None:
            k.create(path, _encode(sorted(new)), makepath=True)
        else:
            k.set(path, _encode(sorted(new)), version=version)
        k.create(f"{CHANGES[pattern]}/{CHANGE_PREFIX}", _change(pattern, rtype, name),
                 sequence=True, makepath=True)


class ZkAclStore:
    def __init__(self, zk):
        self.zk = zk

    async def load(self) -> list[AclBinding]:
        return await self.zk.run(read_all)

    async def save(self, add, remove) -> None:
        await self.zk.run(write, add, remove)

    async def watch(self, reload) -> None:
        """Call ``reload()`` (on the loop) whenever any broker announces an ACL change."""
        for path in CHANGES.values():
            await self.zk.watch_children(path, lambda _children: reload())
