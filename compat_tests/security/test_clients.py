"""TLS and SASL with real clients: confluent-kafka and kafka-python over SSL (with and without a
client certificate), SASL_PLAINTEXT and SASL_SSL with PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512;
failures answered with Kafka's errors while the broker keeps serving others."""
from __future__ import annotations

import socket
import ssl
import time

import pytest
from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer, KafkaProducer
from kafka.errors import KafkaError as KafkaPythonError

from compat_tests import rawkafka as rk
from josefk.zk.local_server import free_port
from compat_tests.helpers import requests_by_version, unique_topic, versions_sent
from compat_tests.security_setup import (PLAIN_USERS, SCRAM_USERS, add_scram_users, josefk,
                                         listener_address, module_broker, secure_overrides)

SASL_AUTHENTICATION_FAILED = 58
UNSUPPORTED_SASL_MECHANISM = 33
ILLEGAL_SASL_STATE = 34


@pytest.fixture(scope="module")
def secure_broker(pki, tmp_path_factory):
    b = module_broker(tmp_path_factory, "secure-broker",
                      secure_overrides(pki, {"josefk.metrics.port": free_port()}))
    add_scram_users(listener_address(b, "PLAINTEXT"), SCRAM_USERS)
    yield b
    b.stop()


# (listener, mechanism, user): one client setting per way in.
CASES = [
    ("SSL", None, None),
    ("MTLS", None, None),
    ("SASL_PLAINTEXT", "PLAIN", "alice"),
    ("SASL_SSL", "PLAIN", "alice"),
    ("SASL_SSL", "SCRAM-SHA-256", "bob"),
    ("SASL_PLAINTEXT", "SCRAM-SHA-512", "carol"),
    ("SASL_SSL", "SCRAM-SHA-512", "bob"),
]
IDS = [f"{listener}-{mech or 'tls'}" for listener, mech, _ in CASES]


def password(user):
    return {**PLAIN_USERS, **SCRAM_USERS}[user]


def confluent_config(pki, broker, listener, mechanism=None, user=None, secret=None):
    conf = {"bootstrap.servers": listener_address(broker, listener), "socket.timeout.ms": 10000,
            "security.protocol": "SSL" if listener == "MTLS" else listener}
    if listener in ("SSL", "MTLS", "SASL_SSL"):
        conf["ssl.ca.location"] = pki.ca
    if listener == "MTLS":
        conf.update({"ssl.certificate.location": pki.client_cert,
                     "ssl.key.location": pki.client_key})
    if mechanism:
        conf.update({"sasl.mechanism": mechanism, "sasl.username": user,
                     "sasl.password": secret if secret is not None else password(user)})
    return conf


def kafka_python_config(pki, broker, listener, mechanism=None, user=None):
    conf = {"bootstrap_servers": listener_address(broker, listener),
            "security_protocol": "SSL" if listener == "MTLS" else listener}
    if listener in ("SSL", "MTLS", "SASL_SSL"):
        conf["ssl_cafile"] = pki.ca
    if listener == "MTLS":
        conf.update({"ssl_certfile": pki.client_cert, "ssl_keyfile": pki.client_key})
    if mechanism:
        conf.update({"sasl_mechanism": mechanism, "sasl_plain_username": user,
                     "sasl_plain_password": password(user)})
    return conf


def _consume(conf, topic, group, count, timeout=30.0):
    c = Consumer({**conf, "group.id": group, "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    c.subscribe([topic])
    got = []
    deadline = time.monotonic() + timeout
    try:
        while len(got) < count and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                got.append(m.value())
        c.commit(asynchronous=False)
        committed = c.committed(c.assignment(), timeout=10)
    finally:
        c.close()
    return got, committed


@pytest.mark.parametrize("listener,mechanism,user", CASES, ids=IDS)
def test_confluent_produce_consume_group_admin(pki, secure_broker, listener, mechanism, user):
    conf = confluent_config(pki, secure_broker, listener, mechanism, user)
    topic = unique_topic(f"sec-{listener}")
    admin = AdminClient(conf)
    admin.create_topics([NewTopic(topic, 2)])[topic].result(15)
    md = admin.list_topics(timeout=10)
    # Metadata names the endpoints of the listener the client came in on.
    port = int(listener_address(secure_broker, listener).rsplit(":", 1)[1])
    assert [b.port for b in md.brokers.values()] == [port]
    p = Producer(conf)
    for i in range(20):
        p.produce(topic, f"m{i}".encode(), partition=i % 2)
    assert p.flush(15) == 0
    got, committed = _consume(conf, topic, f"g-{topic}", 20)
    assert sorted(got) == sorted(f"m{i}".encode() for i in range(20))
    assert sum(tp.offset for tp in committed) == 20
    groups = admin.list_consumer_groups().result(10)
    assert f"g-{topic}" in {g.group_id for g in groups.valid}


@pytest.mark.parametrize("listener,mechanism,user", CASES, ids=IDS)
def test_kafka_python_produce_consume(pki, secure_broker, listener, mechanism, user):
    conf = kafka_python_config(pki, secure_broker, listener, mechanism, user)
    topic = unique_topic(f"kp-{listener}")
    producer = KafkaProducer(**conf)
    for i in range(10):
        producer.send(topic, f"k{i}".encode()).get(timeout=20)
    producer.close()
    consumer = KafkaConsumer(topic, group_id=f"g-{topic}", auto_offset_reset="earliest",
                             consumer_timeout_ms=8000, **conf)
    got = [m.value for _, m in zip(range(10), consumer)]  # the timeout only bounds a miss
    consumer.commit()
    consumer.close()
    assert sorted(got) == sorted(f"k{i}".encode() for i in range(10))


def _expect_failure(conf, needle=None):
    """A client with ``conf`` cannot get metadata; returns librdkafka's error text."""
    errors = []
    conf = {**conf, "error_cb": lambda e: errors.append(str(e)), "socket.timeout.ms": 3000,
            "reconnect.backoff.ms": 1000}
    admin = AdminClient(conf)
    with pytest.raises(KafkaException):
        admin.list_topics(timeout=4)
    admin.poll(0.5)  # serves error_cb
    text = " | ".join(errors)
    if needle is not None:
        assert needle in text, text
    return text


def _still_serves(pki, broker):
    conf = confluent_config(pki, broker, "SASL_SSL", "SCRAM-SHA-256", "bob")
    assert AdminClient(conf).list_topics(timeout=10).brokers


@pytest.mark.parametrize("listener,mechanism,user,secret,needle", [
    ("SASL_SSL", "PLAIN", "alice", "wrong", "Authentication failed: Invalid username or password"),
    ("SASL_PLAINTEXT", "PLAIN", "nobody", "x", "Authentication failed: Invalid username or "
                                              "password"),
    ("SASL_SSL", "SCRAM-SHA-256", "bob", "wrong", "Authentication failed during authentication "
     "due to invalid credentials with SASL mechanism SCRAM-SHA-256"),
    ("SASL_PLAINTEXT", "SCRAM-SHA-512", "nobody", "x", "Authentication failed during "
     "authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512"),
    # alice is a PLAIN (JAAS) user only: she has no SCRAM credential.
    ("SASL_SSL", "SCRAM-SHA-256", "alice", "alice-secret", "invalid credentials"),
], ids=["plain-wrong-password", "plain-unknown-user", "scram256-wrong-password",
        "scram512-unknown-user", "scram-user-without-credential"])
def test_bad_credentials_fail_and_broker_serves_others(pki, secure_broker, listener, mechanism,
                                                       user, secret, needle):
    _expect_failure(confluent_config(pki, secure_broker, listener, mechanism, user, secret),
                    needle)
    _still_serves(pki, secure_broker)


def test_kafka_python_wrong_password_is_refused(pki, secure_broker, caplog):
    conf = kafka_python_config(pki, secure_broker, "SASL_SSL", "SCRAM-SHA-512", "bob")
    conf["sasl_plain_password"] = "wrong"
    with pytest.raises(KafkaPythonError):
        KafkaProducer(**conf, max_block_ms=5000, bootstrap_timeout_ms=3000).send(
            unique_topic("x"), b"v").get(timeout=5)
    assert "Authentication failed during authentication due to invalid credentials with SASL " \
           "mechanism SCRAM-SHA-512" in caplog.text
    _still_serves(pki, secure_broker)


def test_tls_failures_and_broker_serves_others(pki, secure_broker):
    # A plaintext client on a TLS port.
    plain = {"bootstrap.servers": listener_address(secure_broker, "SSL")}
    _expect_failure(plain)
    # A client certificate from a CA the broker does not trust, and an expired one.
    for cert, key in ((pki.rogue_cert, pki.rogue_key), (pki.expired_cert, pki.expired_key)):
        conf = confluent_config(pki, secure_broker, "MTLS")
        conf.update({"ssl.certificate.location": cert, "ssl.key.location": key})
        _expect_failure(conf)
    # No client certificate where one is required.
    conf = confluent_config(pki, secure_broker, "MTLS")
    del conf["ssl.certificate.location"], conf["ssl.key.location"]
    _expect_failure(conf)
    # A client that does not trust the broker's certificate.
    conf = confluent_config(pki, secure_broker, "SSL")
    conf["ssl.ca.location"] = pki.rogue_cert
    _expect_failure(conf, "certificate verify failed")
    _still_serves(pki, secure_broker)


def test_unknown_mechanism_is_refused(pki, secure_broker):
    addr = listener_address(secure_broker, "SASL_PLAINTEXT")
    with rk.RawConnection(addr) as conn:
        r = conn.request(17, 1, rk.string("GSSAPI"), flexible_request=False,
                         flexible_response=False)
        assert r.int16() == UNSUPPORTED_SASL_MECHANISM
        assert sorted(r.str_(False) for _ in range(r.int32())) == \
            ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
        assert conn.wait_closed(5)
    _still_serves(pki, secure_broker)


def _handshake(conn, mechanism):
    r = conn.request(17, 1, rk.string(mechanism), flexible_request=False, flexible_response=False)
    assert r.int16() == 0


def _authenticate(conn, token):
    """SaslAuthenticate v1: (error code, message, token, session lifetime)."""
    r = conn.request(36, 1, rk.int32(len(token)) + token, flexible_request=False,
                     flexible_response=False)
    return r.int16(), r.str_(False), r.bytes_(False), r.int64()


def test_requests_before_authentication_close_the_connection(secure_broker):
    addr = listener_address(secure_broker, "SASL_PLAINTEXT")
    with rk.RawConnection(addr) as conn:
        rk.api_versions(conn)  # allowed before authenticating
        conn.send(rk.frame(rk.request_header(rk.METADATA, 1, conn.next_corr()) + rk.int32(-1)))
        assert conn.wait_closed(5)


def test_failed_authentication_is_answered_and_closed_after_a_delay(secure_broker):
    addr = listener_address(secure_broker, "SASL_PLAINTEXT")
    with rk.RawConnection(addr) as conn:
        _handshake(conn, "PLAIN")
        start = time.monotonic()
        code, message, token, _ = _authenticate(conn, b"\0alice\0nope")
        assert (code, message, token) == (SASL_AUTHENTICATION_FAILED,
                                          "Authentication failed: Invalid username or password",
                                          b"")
        assert conn.wait_closed(5)
        # Closed only after connection.failed.authentication.delay.ms (300 ms here).
        assert time.monotonic() - start >= 0.25


def test_plain_exchange_and_illegal_state_after_success(secure_broker):
    addr = listener_address(secure_broker, "SASL_PLAINTEXT")
    with rk.RawConnection(addr) as conn:
        _handshake(conn, "PLAIN")
        code, message, token, lifetime = _authenticate(conn, b"\0alice\0alice-secret")
        assert (code, message, token, lifetime) == (0, None, b"", 0)
        code, message, _, _ = _authenticate(conn, b"\0alice\0alice-secret")
        assert code == ILLEGAL_SASL_STATE
        assert message == "SaslAuthenticate request received after successful authentication"
        r = conn.request(rk.METADATA, 1, rk.int32(0), flexible_request=False,
                         flexible_response=False)
        assert r.int32() == 1  # one broker: the connection serves ordinary requests


def test_sasl_handshake_on_a_plaintext_listener_is_illegal(secure_broker):
    with rk.RawConnection(listener_address(secure_broker, "PLAINTEXT")) as conn:
        r = conn.request(17, 1, rk.string("PLAIN"), flexible_request=False,
                         flexible_response=False)
        assert r.int16() == ILLEGAL_SASL_STATE


def _sasl_ssl_admin_props(pki, tmp_path):
    """A Kafka-style --command-config file: the admin over SASL_SSL with PLAIN."""
    props = tmp_path / "admin.properties"
    props.write_text(
        "security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\n"
        f"ssl.truststore.location={pki.ca}\n"
        'sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required '
        'username="admin" password="admin-secret";\n')
    return props


def test_data_tools_take_command_config(pki, secure_broker, tmp_path):
    """The console producer and consumer and configs reach a SASL_SSL listener with
    --command-config, as the admin tools do."""
    import subprocess

    from compat_tests.security_setup import BROKER_PYTHON, REPO_ROOT

    common = ["--bootstrap-server", listener_address(secure_broker, "SASL_SSL"),
              "--command-config", str(_sasl_ssl_admin_props(pki, tmp_path))]
    topic = unique_topic("secure-console")

    def run(*args, input=None):
        proc = subprocess.run([BROKER_PYTHON, "-m", "josefk", *args, *common], input=input,
                              cwd=str(REPO_ROOT), capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, (args, proc.stderr)
        return proc.stdout

    run("console-producer", "--topic", topic, input="over sasl_ssl\n")
    assert run("console-consumer", "--topic", topic, "--from-beginning", "--max-messages",
               "1").splitlines() == ["over sasl_ssl"]
    assert run("configs", "--describe", "--entity-type", "topics", "--entity-name",
               topic).splitlines() == [f"Dynamic configs for topic {topic} are:"]


def test_users_cli_describe_alter_delete(pki, secure_broker, tmp_path):
    # Over SASL_SSL itself, with a Kafka-style --command-config file.
    props = _sasl_ssl_admin_props(pki, tmp_path)
    boot = listener_address(secure_broker, "SASL_SSL")
    out = josefk("users", "describe", "--bootstrap-server", boot, "--user", "bob",
                 "--command-config", str(props)).stdout
    assert out.strip() == ("SCRAM credential configs for user-principal 'bob' are "
                           "SCRAM-SHA-256=iterations=4096,SCRAM-SHA-512=iterations=4096")
    add_scram_users(boot, {"dave": "dave-1"}, ("SCRAM-SHA-256",), command_config=str(props))
    conf = confluent_config(pki, secure_broker, "SASL_SSL", "SCRAM-SHA-256", "dave", "dave-1")
    assert AdminClient(conf).list_topics(timeout=10).brokers
    # A new password replaces the old one.
    add_scram_users(boot, {"dave": "dave-2"}, ("SCRAM-SHA-256",), command_config=str(props))
    _expect_failure(conf, "invalid credentials")
    conf["sasl.password"] = "dave-2"
    assert AdminClient(conf).list_topics(timeout=10).brokers
    josefk("users", "alter", "--bootstrap-server", boot, "--user", "dave", "--delete-config",
           "SCRAM-SHA-256", "--command-config", str(props))
    r = josefk("users", "describe", "--bootstrap-server", boot, "--user", "dave",
               "--command-config", str(props), check=False)
    assert r.returncode == 1 and "RESOURCE_NOT_FOUND" in r.stderr
    r = josefk("users", "alter", "--bootstrap-server", boot, "--user", "dave", "--add-config",
               "SCRAM-SHA-256=[iterations=100,password=x]", "--command-config", str(props),
               check=False)
    assert r.returncode == 1 and "UNACCEPTABLE_CREDENTIAL" in r.stderr


def test_kafka_python_admin_alters_scram_credentials(pki, secure_broker):
    from kafka.admin import KafkaAdminClient, ScramMechanism, UserScramCredentialUpsertion

    admin = KafkaAdminClient(**kafka_python_config(pki, secure_broker, "SASL_SSL", "PLAIN",
                                                   "admin"))
    try:
        admin.alter_user_scram_credentials([UserScramCredentialUpsertion(
            "erin", ScramMechanism.SCRAM_SHA_512, "erin-secret", iterations=8192)])
        described = admin.describe_user_scram_credentials(["erin"])
    finally:
        admin.close()
    assert "erin" in str(described) and "8192" in str(described)
    conf = confluent_config(pki, secure_broker, "SASL_PLAINTEXT", "SCRAM-SHA-512", "erin",
                            "erin-secret")
    assert AdminClient(conf).list_topics(timeout=10).brokers


def test_scram_users_survive_restart(pki, broker_factory):
    b = broker_factory(secure_overrides(pki))
    add_scram_users(listener_address(b, "PLAINTEXT"), {"frank": "frank-secret"})
    b.stop()
    b.start()
    conf = confluent_config(pki, b, "SASL_SSL", "SCRAM-SHA-512", "frank", "frank-secret")
    assert AdminClient(conf).list_topics(timeout=10).brokers


def test_reauthentication(pki, broker_factory):
    """KIP-368: the session lifetime is announced; librdkafka re-authenticates and keeps
    producing; a connection that does not is closed at its next request."""
    b = broker_factory(secure_overrides(pki, {"connections.max.reauth.ms": 1500}))
    add_scram_users(listener_address(b, "PLAINTEXT"), SCRAM_USERS)
    conf = confluent_config(pki, b, "SASL_SSL", "SCRAM-SHA-256", "bob")
    topic = unique_topic("reauth")
    p = Producer(conf)
    for i in range(8):
        p.produce(topic, f"v{i}".encode())
        assert p.flush(10) == 0
        time.sleep(0.5)
    got, _ = _consume(conf, topic, f"g-{topic}", 8)
    assert len(got) == 8
    with rk.RawConnection(listener_address(b, "SASL_PLAINTEXT")) as conn:
        _handshake(conn, "PLAIN")
        code, _, _, lifetime = _authenticate(conn, b"\0alice\0alice-secret")
        assert (code, lifetime) == (0, 1500)
        time.sleep(1.7)
        conn.send(rk.frame(rk.request_header(rk.METADATA, 1, conn.next_corr()) + rk.int32(0)))
        assert conn.wait_closed(5)


def test_enabled_protocols_refuse_older_tls(pki, broker_factory):
    """A TLSv1.3-only listener (ssl.enabled.protocols) refuses a TLSv1.2 client."""
    b = broker_factory(secure_overrides(pki, {"listener.name.ssl.ssl.enabled.protocols":
                                              "TLSv1.3"}))
    assert AdminClient(confluent_config(pki, b, "SSL")).list_topics(timeout=10).brokers
    host, port = listener_address(b, "SSL").rsplit(":", 1)
    ctx = ssl.create_default_context(cafile=pki.ca)
    ctx.maximum_version = ssl.TLSVersion.TLSv1_2
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        with pytest.raises(ssl.SSLError):
            ctx.wrap_socket(sock, server_hostname=host)
    ctx.maximum_version = ssl.TLSVersion.TLSv1_3
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        with ctx.wrap_socket(sock, server_hostname=host) as tls:
            assert tls.version() == "TLSv1.3"


# -- SaslHandshake v0: the tokens follow as bare size-prefixed frames ------------------------------
def _handshake_v0(conn, mechanism):
    r = conn.request(17, 0, rk.string(mechanism), flexible_request=False, flexible_response=False)
    assert r.int16() == 0
    assert sorted(r.str_(False) for _ in range(r.int32())) == \
        ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]


def _bare_token(conn, token: bytes) -> bytes:
    conn.send(rk.frame(token))
    return conn.recv_frame()


def test_sasl_handshake_v0_plain_with_bare_tokens(secure_broker):
    with rk.RawConnection(listener_address(secure_broker, "SASL_PLAINTEXT")) as conn:
        _handshake_v0(conn, "PLAIN")
        assert _bare_token(conn, b"\0alice\0alice-secret") == b""  # an empty frame: success
        r = conn.request(rk.METADATA, 1, rk.int32(0), flexible_request=False,
                         flexible_response=False)
        assert r.int32() == 1  # authenticated: ordinary requests are served


def test_sasl_handshake_v0_scram_with_bare_tokens(secure_broker):
    import scramp
    client = scramp.ScramClient(["SCRAM-SHA-256"], "bob", SCRAM_USERS["bob"])
    with rk.RawConnection(listener_address(secure_broker, "SASL_PLAINTEXT")) as conn:
        _handshake_v0(conn, "SCRAM-SHA-256")
        client.set_server_first(_bare_token(conn, client.get_client_first().encode()).decode())
        client.set_server_final(_bare_token(conn, client.get_client_final().encode()).decode())
        r = conn.request(rk.METADATA, 1, rk.int32(0), flexible_request=False,
                         flexible_response=False)
        assert r.int32() == 1


def test_sasl_handshake_v0_wrong_password_closes_after_the_delay(pki, secure_broker):
    with rk.RawConnection(listener_address(secure_broker, "SASL_PLAINTEXT")) as conn:
        _handshake_v0(conn, "PLAIN")
        start = time.monotonic()
        conn.send(rk.frame(b"\0alice\0nope"))
        assert conn.wait_closed(5)  # v0 has no way to say why: the connection is closed
        assert time.monotonic() - start >= 0.25
    _still_serves(pki, secure_broker)


@pytest.mark.parametrize("mechanism,user", [("PLAIN", "alice"), ("SCRAM-SHA-512", "carol")])
def test_kafka_python_pinned_to_0_10_uses_handshake_v0(pki, secure_broker, mechanism, user):
    # kafka-python with api_version (0, 10) knows no ApiVersions and no SaslAuthenticate: it
    # sends SaslHandshake v0 and the bare tokens, as clients of Kafka 0.10 did.
    conf = {**kafka_python_config(pki, secure_broker, "SASL_PLAINTEXT", mechanism, user),
            "api_version": (0, 10)}
    topic = unique_topic("kp-v0-sasl")
    with rk.RawConnection(listener_address(secure_broker, "PLAINTEXT")) as conn:
        rk.metadata_v9(conn, [topic])  # auto-created
    port = secure_broker.overrides["josefk.metrics.port"]
    before = requests_by_version(port)
    producer = KafkaProducer(**conf)
    for i in range(5):
        producer.send(topic, f"v0-{i}".encode()).get(timeout=20)
    producer.close()
    consumer = KafkaConsumer(topic, auto_offset_reset="earliest", consumer_timeout_ms=8000,
                             **conf)
    got = [m.value for _, m in zip(range(5), consumer)]
    consumer.close()
    assert sorted(got) == sorted(f"v0-{i}".encode() for i in range(5))
    sent = versions_sent(before, port)
    assert sent["SaslHandshake"] == [0] and "SaslAuthenticate" not in sent
