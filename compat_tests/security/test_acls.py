"""ACLs with real clients: a broker with ``authorizer.class.name`` set, SASL PLAIN users and a
TLS listener whose principals are certificate subjects. ACLs are managed with ``josefk acls``
and with confluent-kafka's admin API."""
from __future__ import annotations

import time

import pytest
from confluent_kafka import (Consumer, KafkaError, KafkaException, Producer, TopicCollection,
                             TopicPartition)
from confluent_kafka.admin import (AclBinding, AclBindingFilter, AclOperation,
                                   AclPermissionType, AdminClient, NewTopic, ResourcePatternType,
                                   ResourceType)

from compat_tests.helpers import unique_topic
from compat_tests.security_setup import (jaas, josefk, listener_address, module_broker,
                                         secure_overrides)

USERS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret",
         "carol": "carol-secret"}


def acl_overrides(pki):
    return secure_overrides(pki, {
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        "super.users": "User:admin",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": jaas(USERS),
        "listener.name.sasl_ssl.plain.sasl.jaas.config": jaas(USERS),
        "listener.name.mtls.ssl.principal.mapping.rules": "RULE:^CN=(.*?),.*$/tls-$1/L,DEFAULT",
        "auto.create.topics.enable": "false",
    })


@pytest.fixture(scope="module")
def acl_broker(pki, tmp_path_factory):
    b = module_broker(tmp_path_factory, "acl-broker", acl_overrides(pki))
    yield b
    b.stop()


def sasl(broker, user):
    return {"bootstrap.servers": listener_address(broker, "SASL_PLAINTEXT"),
            "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
            "sasl.username": user, "sasl.password": USERS[user], "socket.timeout.ms": 10000}


def admin_props(tmp_path, broker):
    p = tmp_path / "admin.properties"
    p.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
                 "sasl.username=admin\nsasl.password=admin-secret\n")
    return ["--bootstrap-server", listener_address(broker, "SASL_PLAINTEXT"),
            "--command-config", str(p)]


def create_topics(broker, *names, partitions=1):
    admin = AdminClient(sasl(broker, "admin"))
    for f in admin.create_topics([NewTopic(n, partitions) for n in names]).values():
        f.result(15)


def produce(conf, topic, n=3):
    """Delivery error codes of ``n`` messages (None for delivered)."""
    results = []
    p = Producer({**conf, "message.timeout.ms": 8000})
    for i in range(n):
        p.produce(topic, f"v{i}".encode(),
                  on_delivery=lambda err, _m: results.append(err.code() if err else None))
    p.flush(15)
    return results


def consume(conf, topic, group, count, timeout=20.0):
    """(values, error codes seen)."""
    c = Consumer({**conf, "group.id": group, "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    c.subscribe([topic])
    got, errs = [], []
    deadline = time.monotonic() + timeout
    try:
        while len(got) < count and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                errs.append(m.error().code())
                if m.error().code() in (KafkaError.TOPIC_AUTHORIZATION_FAILED,
                                        KafkaError.GROUP_AUTHORIZATION_FAILED):
                    break
            else:
                got.append(m.value())
    finally:
        c.close()
    return got, errs


def test_read_only_user_consumes_but_cannot_produce_see_or_commit_elsewhere(acl_broker,
                                                                            tmp_path):
    mine, other = unique_topic("ro"), unique_topic("hidden")
    group = f"g-{mine}"
    create_topics(acl_broker, mine, other)
    assert produce(sasl(acl_broker, "admin"), mine) == [None] * 3
    josefk("acls", *admin_props(tmp_path, acl_broker), "--add", "--allow-principal",
           "User:alice", "--operation", "Read", "--topic", mine, "--group", group)
    alice = sasl(acl_broker, "alice")
    got, errs = consume(alice, mine, group, 3)
    assert sorted(got) == [b"v0", b"v1", b"v2"] and not errs
    assert produce(alice, mine, 1) == [KafkaError.TOPIC_AUTHORIZATION_FAILED]
    topics = AdminClient(alice).list_topics(timeout=10).topics
    assert mine in topics and other not in topics
    md = AdminClient(alice).list_topics(other, timeout=10).topics[other]
    assert md.error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    # Consuming in another group fails: its coordinator is not even found.
    _, errs = consume(alice, mine, f"other-{group}", 1, timeout=10)
    assert KafkaError.GROUP_AUTHORIZATION_FAILED in errs
    # With Describe on the other group she finds its coordinator, but may not commit there.
    josefk("acls", *admin_props(tmp_path, acl_broker), "--add", "--allow-principal",
           "User:alice", "--operation", "Describe", "--group", f"other-{group}")
    c = Consumer({**alice, "group.id": f"other-{group}", "enable.auto.commit": False})
    try:
        with pytest.raises(KafkaException) as e:
            c.commit(offsets=[TopicPartition(mine, 0, 1)], asynchronous=False)
        assert e.value.args[0].code() == KafkaError.GROUP_AUTHORIZATION_FAILED
    finally:
        c.close()


def test_prefixed_acls_and_deny_wins(acl_broker):
    prefix = unique_topic("bob")
    inside, outside, denied = f"{prefix}-in", unique_topic("out"), f"{prefix}-denied"
    create_topics(acl_broker, inside, outside, denied)
    admin = AdminClient(sasl(acl_broker, "admin"))
    bindings = [
        AclBinding(ResourceType.TOPIC, prefix, ResourcePatternType.PREFIXED, "User:bob", "*",
                   AclOperation.ALL, AclPermissionType.ALLOW),
        AclBinding(ResourceType.TOPIC, denied, ResourcePatternType.LITERAL, "User:bob", "*",
                   AclOperation.WRITE, AclPermissionType.DENY),
    ]
    for f in admin.create_acls(bindings).values():
        f.result(10)
    bob = sasl(acl_broker, "bob")
    assert produce(bob, inside) == [None] * 3
    assert produce(bob, outside, 1) == [KafkaError.TOPIC_AUTHORIZATION_FAILED]
    assert produce(bob, denied, 1) == [KafkaError.TOPIC_AUTHORIZATION_FAILED]
    # Describe is still allowed on the denied topic (only Write is denied).
    assert denied in AdminClient(bob).list_topics(timeout=10).topics
    found = admin.describe_acls(AclBindingFilter(
        ResourceType.TOPIC, prefix, ResourcePatternType.PREFIXED, None, None,
        AclOperation.ANY, AclPermissionType.ANY)).result(10)
    assert [(b.name, b.operation, b.permission_type) for b in found] == \
        [(prefix, AclOperation.ALL, AclPermissionType.ALLOW)]
    # MATCH finds every binding that applies to a resource: the prefixed one and the literal deny.
    found = admin.describe_acls(AclBindingFilter(
        ResourceType.TOPIC, denied, ResourcePatternType.MATCH, None, None,
        AclOperation.ANY, AclPermissionType.ANY)).result(10)
    assert {b.name for b in found} == {prefix, denied}
    deleted = admin.delete_acls([AclBindingFilter(
        ResourceType.TOPIC, denied, ResourcePatternType.LITERAL, "User:bob", None,
        AclOperation.ANY, AclPermissionType.DENY)])
    assert len(list(deleted.values())[0].result(10)) == 1
    assert produce(bob, denied, 1) == [None]


def test_authorized_operations_reflect_acls(acl_broker, tmp_path):
    topic = unique_topic("ops")
    group = f"g-{topic}"
    create_topics(acl_broker, topic)
    josefk("acls", *admin_props(tmp_path, acl_broker), "--add", "--allow-principal",
           "User:carol", "--consumer", "--topic", topic, "--group", group)
    carol = AdminClient(sasl(acl_broker, "carol"))
    t = carol.describe_topics(TopicCollection([topic]),
                              include_authorized_operations=True)[topic].result(10)
    assert set(t.authorized_operations) == {AclOperation.READ, AclOperation.DESCRIBE}
    admin = AdminClient(sasl(acl_broker, "admin"))
    t = admin.describe_topics(TopicCollection([topic]),
                              include_authorized_operations=True)[topic].result(10)
    assert AclOperation.ALTER_CONFIGS in set(t.authorized_operations)
    assert not carol.describe_cluster(include_authorized_operations=True).result(10) \
        .authorized_operations
    c = admin.describe_cluster(include_authorized_operations=True).result(10)
    assert AclOperation.CLUSTER_ACTION in set(c.authorized_operations)
    consume(sasl(acl_broker, "carol"), topic, group, 0, timeout=3)
    g = carol.describe_consumer_groups([group], include_authorized_operations=True)[group] \
        .result(10)
    assert set(g.authorized_operations) == {AclOperation.READ, AclOperation.DESCRIBE}


def test_acls_cli_lists_and_removes(acl_broker, tmp_path):
    topic = unique_topic("cli")
    args = admin_props(tmp_path, acl_broker)
    josefk("acls", *args, "--add", "--allow-principal", "User:dave", "--operation", "Write",
           "--operation", "Describe", "--topic", topic)
    out = josefk("acls", *args, "--list", "--topic", topic).stdout
    assert f"Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name={topic}, " \
           "patternType=LITERAL)`" in out
    assert "(principal=User:dave, host=*, operation=WRITE, permissionType=ALLOW)" in out
    assert "(principal=User:dave, host=*, operation=DESCRIBE, permissionType=ALLOW)" in out
    out = josefk("acls", *args, "--remove", "--allow-principal", "User:dave", "--operation",
                 "Write", "--topic", topic, "--force").stdout
    assert "operation=WRITE" in out and "DESCRIBE" not in out
    out = josefk("acls", *args, "--list", "--topic", topic).stdout
    assert "WRITE" not in out and "DESCRIBE" in out
    # Without Alter on the cluster, a user cannot add ACLs.
    bob = tmp_path / "bob.properties"
    bob.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
                   "sasl.username=bob\nsasl.password=bob-secret\n")
    r = josefk("acls", "--bootstrap-server", listener_address(acl_broker, "SASL_PLAINTEXT"),
               "--command-config", str(bob), "--add", "--allow-principal", "User:bob",
               "--operation", "All", "--cluster", check=False)
    assert r.returncode == 1 and "CLUSTER_AUTHORIZATION_FAILED" in r.stderr


def test_tls_certificate_principal_with_mapping_rule(pki, acl_broker):
    topic = unique_topic("tls")
    create_topics(acl_broker, topic)
    admin = AdminClient(sasl(acl_broker, "admin"))
    for f in admin.create_acls([AclBinding(
            ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, "User:tls-alice", "*",
            AclOperation.WRITE, AclPermissionType.ALLOW)]).values():
        f.result(10)
    conf = {"bootstrap.servers": listener_address(acl_broker, "MTLS"), "security.protocol": "SSL",
            "ssl.ca.location": pki.ca, "ssl.certificate.location": pki.client_cert,
            "ssl.key.location": pki.client_key}
    assert produce(conf, topic) == [None] * 3
    # On the SSL listener (no client certificate) the principal is ANONYMOUS: refused.
    anon = {"bootstrap.servers": listener_address(acl_broker, "SSL"), "security.protocol": "SSL",
            "ssl.ca.location": pki.ca}
    assert produce(anon, topic, 1) == [KafkaError.TOPIC_AUTHORIZATION_FAILED]


def test_acls_and_users_survive_restart(pki, broker_factory, tmp_path):
    b = broker_factory(acl_overrides(pki))
    topic = unique_topic("restart")
    create_topics(b, topic)
    josefk("acls", *admin_props(tmp_path, b), "--add", "--allow-principal", "User:alice",
           "--operation", "Write", "--topic", topic)
    josefk("users", "alter", *admin_props(tmp_path, b), "--user", "erin", "--add-config",
           "SCRAM-SHA-256=[password=erin-secret]")
    josefk("acls", *admin_props(tmp_path, b), "--add", "--allow-principal", "User:erin",
           "--operation", "Describe", "--topic", topic)
    b.stop()
    b.start()
    assert produce(sasl(b, "alice"), topic, 1) == [None]
    assert produce(sasl(b, "bob"), topic, 1) == [KafkaError.TOPIC_AUTHORIZATION_FAILED]
    erin = {"bootstrap.servers": listener_address(b, "SASL_SSL"), "security.protocol": "SASL_SSL",
            "ssl.ca.location": pki.ca, "sasl.mechanism": "SCRAM-SHA-256", "sasl.username": "erin",
            "sasl.password": "erin-secret"}
    assert topic in AdminClient(erin).list_topics(timeout=10).topics


def test_acl_apis_without_authorizer_are_security_disabled(pki, broker_factory):
    b = broker_factory(secure_overrides(pki))
    admin = AdminClient({"bootstrap.servers": listener_address(b, "PLAINTEXT")})
    f = admin.create_acls([AclBinding(ResourceType.TOPIC, "t", ResourcePatternType.LITERAL,
                                      "User:x", "*", AclOperation.READ,
                                      AclPermissionType.ALLOW)])
    with pytest.raises(KafkaException) as e:
        list(f.values())[0].result(10)
    assert e.value.args[0].code() == KafkaError.SECURITY_DISABLED



def test_altering_configs_needs_alter_configs(acl_broker):
    """AlterConfigs on a topic needs AlterConfigs on it, on a broker AlterConfigs on the
    cluster, as in Kafka: alice may change the one topic she was granted, nothing else."""
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource

    mine, theirs = unique_topic("cfg-mine"), unique_topic("cfg-theirs")
    create_topics(acl_broker, mine, theirs)
    admin = AdminClient(sasl(acl_broker, "admin"))
    for f in admin.create_acls([AclBinding(ResourceType.TOPIC, mine, ResourcePatternType.LITERAL,
                                           "User:alice", "*", AclOperation.ALTER_CONFIGS,
                                           AclPermissionType.ALLOW)]).values():
        f.result(15)
    alice = AdminClient(sasl(acl_broker, "alice"))

    def alter(rtype, name, key, value):
        res = ConfigResource(rtype, name, incremental_configs=[
            ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET)])
        return alice.incremental_alter_configs([res], request_timeout=15)[res]

    alter("topic", mine, "retention.ms", "60000").result(15)
    for rtype, name, key, code in (
            ("topic", theirs, "retention.ms", KafkaError.TOPIC_AUTHORIZATION_FAILED),
            ("broker", "1", "log.retention.ms", KafkaError.CLUSTER_AUTHORIZATION_FAILED)):
        with pytest.raises(KafkaException) as e:
            alter(rtype, name, key, "60000").result(15)
        assert e.value.args[0].code() == code
