"""A 3-broker ZooKeeper cluster whose brokers talk to each other over SASL_SSL (PLAIN, as
User:broker, a super user) with the ACL authorizer on: clients use SCRAM over SASL_SSL with
credentials and ACLs kept in ZooKeeper; replication and failover work as without security."""
from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import (AclBinding, AclOperation, AclPermissionType, AdminClient,
                                   NewTopic, ResourcePatternType, ResourceType)

from josefk.zk.local_server import free_port
from compat_tests.cluster import zk_json
from compat_tests.helpers import unique_topic
from compat_tests.security_setup import add_scram_users, jaas, listener_address

PLAIN = {"broker": "broker-secret", "admin": "admin-secret"}


def secure_cluster(cluster_factory, pki):
    """Listeners: PLAINTEXT first (the test harness's own view; ANONYMOUS is a super user
    there), INTERNAL (SASL_SSL between brokers) and SASL_SSL for clients."""
    c = cluster_factory(start=False, overrides={
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:SASL_SSL,"
                                          "SASL_SSL:SASL_SSL",
        "inter.broker.listener.name": "INTERNAL",
        "sasl.mechanism.inter.broker.protocol": "PLAIN",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
        "listener.name.internal.plain.sasl.jaas.config": jaas(PLAIN, "broker"),
        "listener.name.sasl_ssl.plain.sasl.jaas.config": jaas(PLAIN, "admin"),
        "ssl.keystore.location": pki.server,
        "ssl.truststore.location": pki.ca,
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        "super.users": "User:broker;User:admin;User:ANONYMOUS",
        "min.insync.replicas": 2,
        "zookeeper.session.timeout.ms": 3000,
        "replica.lag.time.max.ms": 2000,
    })
    for b in c.brokers.values():
        ports = [free_port() for _ in range(3)]
        b.overrides["listeners"] = (f"PLAINTEXT://127.0.0.1:{ports[0]},"
                                    f"INTERNAL://127.0.0.1:{ports[1]},"
                                    f"SASL_SSL://127.0.0.1:{ports[2]}")
        b.port = ports[0]
    return c.start()


def client(c, pki, user, password, mechanism="SCRAM-SHA-256"):
    return {"bootstrap.servers": ",".join(listener_address(b, "SASL_SSL")
                                          for b in c.brokers.values() if b.is_running()),
            "security.protocol": "SASL_SSL", "ssl.ca.location": pki.ca,
            "sasl.mechanism": mechanism, "sasl.username": user, "sasl.password": password,
            "socket.timeout.ms": 10000}


def produce(conf, topic, values):
    acked = []
    p = Producer({**conf, "acks": "all", "message.timeout.ms": 60000})
    for v in values:
        p.produce(topic, v, partition=0,
                  on_delivery=lambda err, m: acked.append(m.value()) if err is None else None)
    p.flush(90)
    return acked


@pytest.mark.slow
def test_sasl_ssl_cluster_replicates_and_fails_over(cluster_factory, pki, tmp_path):
    c = secure_cluster(cluster_factory, pki)
    admin_conf = client(c, pki, "admin", "admin-secret", "PLAIN")
    props = tmp_path / "admin.properties"
    props.write_text(f"security.protocol=SASL_SSL\nssl.truststore.location={pki.ca}\n"
                     "sasl.mechanism=PLAIN\nsasl.username=admin\nsasl.password=admin-secret\n")
    # The SCRAM user is created through broker 1 and stored in ZooKeeper for every broker.
    add_scram_users(listener_address(c.brokers[1], "SASL_SSL"), {"app": "app-secret"},
                    ("SCRAM-SHA-256",), command_config=str(props))
    prefix = unique_topic("secure")
    admin = AdminClient(admin_conf)
    for f in admin.create_acls([
            AclBinding(ResourceType.TOPIC, prefix, ResourcePatternType.PREFIXED, "User:app",
                       "*", AclOperation.ALL, AclPermissionType.ALLOW),
            AclBinding(ResourceType.GROUP, prefix, ResourcePatternType.PREFIXED, "User:app",
                       "*", AclOperation.READ, AclPermissionType.ALLOW)]).values():
        f.result(10)
    config, stat = zk_json(c.zk_connect, "/config/users/app")
    assert set(config["config"]) == {"SCRAM-SHA-256"}
    acls, _ = zk_json(c.zk_connect, f"/kafka-acl-extended/prefixed/Topic/{prefix}")
    assert acls["acls"] == [{"principal": "User:app", "permissionType": "Allow",
                             "operation": "All", "host": "*"}]

    # Every broker authenticates the SCRAM user and applies the ACLs it learnt from ZooKeeper.
    topic = f"{prefix}-t"
    app = client(c, pki, "app", "app-secret")
    for i in c.brokers:
        one = {**app, "bootstrap.servers": listener_address(c.brokers[i], "SASL_SSL")}
        c.wait_for(lambda: AdminClient(one).list_topics(timeout=5).brokers, 20, "SCRAM login")
    app_admin = AdminClient(app)  # kept alive until its future is answered
    app_admin.create_topics([NewTopic(topic, 1, 3)])[topic].result(30)
    c.wait_for_topic(topic, 1)
    md = AdminClient(app).list_topics(timeout=10)
    assert {b.port for b in md.brokers.values()} == {
        int(listener_address(b, "SASL_SSL").rsplit(":", 1)[1]) for b in c.brokers.values()}
    first = [f"a{i}".encode() for i in range(200)]
    assert produce(app, topic, first) == first
    c.wait_for(lambda: len(c.partition(topic, 0).isrs) == 3, 30, "3 replicas in sync")

    # Fail over: kill the leader; a follower that replicated over SASL_SSL takes over.
    leader = c.partition(topic, 0).leader
    c.brokers[leader].kill()
    survivor = next(i for i in c.brokers if i != leader)
    c.wait_for(lambda: c.partition(topic, 0, survivor).leader not in (-1, leader), 30,
               "a new leader")
    app = client(c, pki, "app", "app-secret")
    second = [f"b{i}".encode() for i in range(200)]
    assert produce(app, topic, second) == second
    cons = Consumer({**app, "group.id": f"{prefix}-g", "enable.auto.commit": False,
                     "auto.offset.reset": "earliest"})
    cons.assign([TopicPartition(topic, 0, 0)])
    got = []
    deadline = time.monotonic() + 60
    while len(got) < 400 and time.monotonic() < deadline:
        m = cons.poll(0.5)
        if m is not None and m.error() is None:
            got.append(m.value())
    cons.close()
    assert got == first + second
    c.brokers[leader].start()
    c.wait_for(lambda: len(c.partition(topic, 0, survivor).isrs) == 3, 60,
               "the restarted broker back in the ISR")
