"""ACL decisions: literal, wildcard and prefixed patterns, deny winning, implied Describe,
super users, allow.everyone.if.no.acl.found, host filters, and filters for Describe/DeleteAcls."""
from __future__ import annotations

import asyncio

import pytest

from josefk.broker.security import acl
from josefk.broker.security.authorizer import (ALL, ALLOW, ANY_OPERATION, ANY_PATTERN,
                                               ANY_PERMISSION, ANY_RESOURCE, CLUSTER, DENY, GROUP,
                                               LITERAL, MATCH, PREFIXED, TOPIC, AclAuthorizer,
                                               AclBinding, AclFilter, LocalAclStore,
                                               binding_problem)
from josefk.broker.config import BrokerConfig


def authorizer(tmp_path, bindings=(), **props):
    tmp_path.mkdir(parents=True, exist_ok=True)
    a = AclAuthorizer(BrokerConfig({k.replace("_", "."): v for k, v in props.items()}),
                      LocalAclStore(str(tmp_path)))
    if bindings:
        asyncio.run(a.create(list(bindings)))
    return a


def allow(name, op, principal="User:alice", pattern=LITERAL, rtype=TOPIC, host="*"):
    return AclBinding(rtype, name, pattern, principal, host, op, ALLOW)


def deny(name, op, principal="User:alice", pattern=LITERAL, rtype=TOPIC, host="*"):
    return AclBinding(rtype, name, pattern, principal, host, op, DENY)


def test_literal_prefixed_and_wildcard(tmp_path):
    a = authorizer(tmp_path, [allow("orders", acl.READ), allow("pay-", acl.WRITE,
                                                               pattern=PREFIXED),
                              allow("*", acl.DESCRIBE, principal="User:*")])
    assert a.authorize("User:alice", "1.2.3.4", TOPIC, "orders", acl.READ)
    assert not a.authorize("User:alice", "1.2.3.4", TOPIC, "orders", acl.WRITE)
    assert a.authorize("User:alice", "h", TOPIC, "pay-eu", acl.WRITE)
    assert not a.authorize("User:alice", "h", TOPIC, "pa", acl.WRITE)
    assert a.authorize("User:bob", "h", TOPIC, "anything", acl.DESCRIBE)


def test_deny_wins_and_read_implies_describe(tmp_path):
    a = authorizer(tmp_path, [allow("t", ALL), deny("t", acl.WRITE), allow("u", acl.READ),
                              allow("v", acl.ALTER_CONFIGS)])
    assert a.authorize("User:alice", "h", TOPIC, "t", acl.READ)
    assert not a.authorize("User:alice", "h", TOPIC, "t", acl.WRITE)
    assert a.authorize("User:alice", "h", TOPIC, "u", acl.DESCRIBE)
    assert a.authorize("User:alice", "h", TOPIC, "v", acl.DESCRIBE_CONFIGS)
    assert not a.authorize("User:alice", "h", TOPIC, "u", acl.DESCRIBE_CONFIGS)
    a2 = authorizer(tmp_path / "2", [allow("t", acl.READ), deny("t", ALL)])
    assert not a2.authorize("User:alice", "h", TOPIC, "t", acl.READ)


def test_host_filter(tmp_path):
    a = authorizer(tmp_path, [allow("t", acl.READ, host="10.0.0.1")])
    assert a.authorize("User:alice", "10.0.0.1", TOPIC, "t", acl.READ)
    assert not a.authorize("User:alice", "10.0.0.2", TOPIC, "t", acl.READ)


def test_super_users_and_no_acl_found(tmp_path):
    a = authorizer(tmp_path, [allow("t", acl.READ)], super_users="User:admin;User:ops")
    assert a.authorize("User:ops", "h", CLUSTER, "kafka-cluster", acl.ALTER)
    assert not a.authorize("User:alice", "h", GROUP, "g", acl.READ)  # no ACL: denied
    b = authorizer(tmp_path / "b", [allow("t", acl.READ)],
                   allow_everyone_if_no_acl_found="true")
    assert b.authorize("User:alice", "h", GROUP, "g", acl.READ)
    assert not b.authorize("User:bob", "h", TOPIC, "t", acl.READ)  # t has ACLs


def test_operations_bits_and_any(tmp_path):
    a = authorizer(tmp_path, [allow("t", acl.READ), allow("g", acl.READ, rtype=GROUP)])
    assert a.operations("User:alice", "h", TOPIC, "t") == acl.bits(acl.READ, acl.DESCRIBE)
    assert a.operations("User:alice", "h", GROUP, "g") == acl.bits(acl.READ, acl.DESCRIBE)
    assert not a.authorize_any("User:alice", "h", TOPIC, acl.WRITE)
    a2 = authorizer(tmp_path / "2", [allow("x-", acl.WRITE, pattern=PREFIXED),
                                     deny("x-", acl.WRITE, pattern=PREFIXED)])
    assert not a2.authorize_any("User:alice", "h", TOPIC, acl.WRITE)


def test_filters(tmp_path):
    bindings = [allow("orders", acl.READ), allow("ord", acl.WRITE, pattern=PREFIXED),
                allow("*", acl.DESCRIBE), allow("g", acl.READ, rtype=GROUP)]
    a = authorizer(tmp_path, bindings)
    every = AclFilter(ANY_RESOURCE, None, ANY_PATTERN, None, None, ANY_OPERATION,
                      ANY_PERMISSION)
    assert len([b for b in a.all() if every.matches(b)]) == 4
    match = AclFilter(TOPIC, "orders", MATCH, None, None, ANY_OPERATION, ANY_PERMISSION)
    assert {b.name for b in a.all() if match.matches(b)} == {"orders", "ord", "*"}
    literal = AclFilter(TOPIC, "orders", LITERAL, None, None, ANY_OPERATION, ANY_PERMISSION)
    assert [b.name for b in a.all() if literal.matches(b)] == ["orders"]
    gone = asyncio.run(a.delete(AclFilter(TOPIC, None, ANY_PATTERN, "User:alice", None,
                                          acl.WRITE, ALLOW)))
    assert [b.name for b in gone] == ["ord"]
    # The store kept the change.
    again = authorizer(tmp_path)
    asyncio.run(again.reload())
    assert len(again.all()) == 3


@pytest.mark.parametrize("binding,problem", [
    (AclBinding(CLUSTER, "other", LITERAL, "User:a", "*", acl.ALTER, ALLOW), "kafka-cluster"),
    (AclBinding(TOPIC, "t", LITERAL, "alice", "*", acl.READ, ALLOW), "principal"),
    (AclBinding(GROUP, "g", LITERAL, "User:a", "*", acl.WRITE, ALLOW), "not valid"),
    (AclBinding(TOPIC, "t", MATCH, "User:a", "*", acl.READ, ALLOW), "pattern"),
    (AclBinding(TOPIC, "", LITERAL, "User:a", "*", acl.READ, ALLOW), "empty"),
])
def test_invalid_bindings(binding, problem):
    assert problem in binding_problem(binding)
    assert binding_problem(binding._replace(resource_type=TOPIC, name="t", pattern_type=LITERAL,
                                            principal="User:a", operation=acl.READ)) is None
