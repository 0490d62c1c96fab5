"""TLS stores as Java users bring them and as operators rotate them: PKCS12 keystores and
truststores (``ssl.keystore.type=PKCS12``), and a listener's certificate replaced at run time
with IncrementalAlterConfigs on ``listener.name.<l>.ssl.keystore.location`` (new connections
get the new certificate, open ones keep working, a bad store is refused with INVALID_REQUEST)."""
from __future__ import annotations

import socket
import ssl

import pytest
import trustme
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource,
                                   ResourceType)
from cryptography import x509
from cryptography.hazmat.primitives.serialization import BestAvailableEncryption, pkcs12
from kafka import KafkaConsumer, KafkaProducer

from compat_tests import rawkafka as rk
from josefk.faults.processes import BrokerStartError
from josefk.zk.local_server import free_port
from compat_tests.helpers import unique_topic
from compat_tests.security_setup import listener_address

SERVER_NAMES = ("127.0.0.1", "localhost")
IDENTITY = {"common_name": "broker", "organization_name": "josefk",
            "organization_unit_name": "brokers"}


def _write(path, data: bytes) -> str:
    path.write_bytes(data)
    return str(path)


def _p12(key, cert, cas, password: bytes) -> bytes:
    return pkcs12.serialize_key_and_certificates(b"broker", key, cert, cas,
                                                 BestAvailableEncryption(password))


def _load(issued):
    from cryptography.hazmat.primitives.serialization import load_pem_private_key
    key = load_pem_private_key(issued.private_key_pem.bytes(), None)
    return key, x509.load_pem_x509_certificate(issued.cert_chain_pems[0].bytes())


def _peer_certificate(addr: str, cafile: str, keep_open: list | None = None) -> x509.Certificate:
    """The certificate a new TLS connection to ``addr`` is shown (no SNI: an IP address)."""
    host, port = addr.rsplit(":", 1)
    ctx = ssl.create_default_context(cafile=cafile)
    ctx.check_hostname = False
    sock = ctx.wrap_socket(socket.create_connection((host, int(port)), timeout=10))
    cert = x509.load_der_x509_certificate(sock.getpeercert(binary_form=True))
    if keep_open is None:
        sock.close()
    else:
        keep_open.append(sock)
    return cert


def _api_versions_over(sock: ssl.SSLSocket) -> int:
    """An ApiVersions v0 round trip on an open TLS connection: its error code."""
    sock.sendall(rk.api_versions_v0_request(7))
    size = int.from_bytes(_recv(sock, 4), "big")
    r = rk.Reader(_recv(sock, size))
    assert r.int32() == 7
    return r.int16()


def _recv(sock, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        assert chunk, "connection closed"
        buf += chunk
    return buf


# -- PKCS12 ---------------------------------------------------------------------------------------
def test_pkcs12_keystore_and_truststore(broker_factory, tmp_path):
    ca = trustme.CA(organization_name="josefk p12 CA")
    key, cert = _load(ca.issue_cert(*SERVER_NAMES, **IDENTITY))
    ca_cert = x509.load_pem_x509_certificate(ca.cert_pem.bytes())
    keystore = _write(tmp_path / "broker.p12", _p12(key, cert, [ca_cert], b"store-pass"))
    truststore = _write(tmp_path / "trust.p12", pkcs12.serialize_key_and_certificates(
        None, None, None, [ca_cert], BestAvailableEncryption(b"trust-pass")))
    ca_pem = _write(tmp_path / "ca.pem", ca.cert_pem.bytes())
    client = ca.issue_cert("client", common_name="client", organization_name="josefk")
    client_cert = _write(tmp_path / "client.crt", client.cert_chain_pems[0].bytes())
    client_key = _write(tmp_path / "client.key", client.private_key_pem.bytes())
    ssl_port, mtls_port = free_port(), free_port()
    b = broker_factory({
        "listeners": f"PLAINTEXT://127.0.0.1:{free_port()},SSL://127.0.0.1:{ssl_port},"
                     f"MTLS://127.0.0.1:{mtls_port}",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,MTLS:SSL",
        "ssl.keystore.type": "PKCS12", "ssl.keystore.location": keystore,
        "ssl.keystore.password": "store-pass",
        "ssl.truststore.type": "PKCS12", "ssl.truststore.location": truststore,
        "ssl.truststore.password": "trust-pass",
        "listener.name.mtls.ssl.client.auth": "required",
    })
    assert _peer_certificate(f"127.0.0.1:{ssl_port}", ca_pem).serial_number == cert.serial_number
    topic = unique_topic("p12")
    conf = {"bootstrap.servers": f"127.0.0.1:{mtls_port}", "security.protocol": "SSL",
            "ssl.ca.location": ca_pem, "ssl.certificate.location": client_cert,
            "ssl.key.location": client_key, "socket.timeout.ms": 10000}
    p = Producer(conf)
    for i in range(5):
        p.produce(topic, f"p12-{i}".encode())
    assert p.flush(20) == 0
    # kafka-python over the SSL listener reads what librdkafka wrote over the mTLS one.
    consumer = KafkaConsumer(topic, bootstrap_servers=f"127.0.0.1:{ssl_port}",
                             security_protocol="SSL", ssl_cafile=ca_pem,
                             auto_offset_reset="earliest", consumer_timeout_ms=8000)
    got = sorted(m.value for _, m in zip(range(5), consumer))
    consumer.close()
    assert got == [f"p12-{i}".encode() for i in range(5)]
    # The mTLS listener trusts the PKCS12 truststore's CA only: a client without a
    # certificate is refused there while the broker keeps serving.
    with pytest.raises((ssl.SSLError, ConnectionError, AssertionError)):
        with socket.create_connection(("127.0.0.1", mtls_port), timeout=10) as raw:
            ctx = ssl.create_default_context(cafile=ca_pem)
            ctx.check_hostname = False
            with ctx.wrap_socket(raw) as s:
                _api_versions_over(s)
    assert b.is_running()


def test_pkcs12_keystore_with_a_wrong_password_stops_start_up(broker_factory, tmp_path):
    ca = trustme.CA()
    key, cert = _load(ca.issue_cert(*SERVER_NAMES))
    keystore = _write(tmp_path / "broker.p12", _p12(key, cert, [], b"right"))
    b = broker_factory({
        "listeners": f"PLAINTEXT://127.0.0.1:{free_port()},SSL://127.0.0.1:{free_port()}",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL",
        "ssl.keystore.type": "PKCS12", "ssl.keystore.location": keystore,
        "ssl.keystore.password": "wrong"}, start=False)
    with pytest.raises(BrokerStartError):
        b.start()
    assert "cannot read PKCS12 keystore" in b.log_path.read_text()


# -- certificates replaced at run time ------------------------------------------------------------
@pytest.fixture
def rotating(broker_factory, tmp_path):
    """A broker with an SSL listener on a PEM keystore, its CA, and a way to issue more."""
    ca = trustme.CA(organization_name="josefk rotation CA")
    first = ca.issue_cert(*SERVER_NAMES, **IDENTITY)
    keystore = _write(tmp_path / "server-1.pem", first.private_key_and_cert_chain_pem.bytes())
    b = broker_factory({
        "listeners": f"PLAINTEXT://127.0.0.1:{free_port()},SSL://127.0.0.1:{free_port()}",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL",
        "ssl.keystore.type": "PEM", "ssl.keystore.location": keystore,
    })
    ca_pem = _write(tmp_path / "ca.pem", ca.cert_pem.bytes())
    counter = iter(range(2, 100))

    def issue(**identity) -> str:
        cert = ca.issue_cert(*identity.pop("names", SERVER_NAMES), **{**IDENTITY, **identity})
        return _write(tmp_path / f"server-{next(counter)}.pem",
                      cert.private_key_and_cert_chain_pem.bytes())
    return b, ca_pem, issue


def _alter(b, configs: dict, broker_id: str | None = None, validate_only: bool = False):
    admin = AdminClient({"bootstrap.servers": listener_address(b, "PLAINTEXT"),
                         "socket.timeout.ms": 10000})
    res = ConfigResource(ResourceType.BROKER, str(b.node_id) if broker_id is None else broker_id,
                         incremental_configs=[ConfigEntry(k, v,
                                                          incremental_operation=AlterConfigOpType.SET)
                                              for k, v in configs.items()])
    return list(admin.incremental_alter_configs([res], validate_only=validate_only)
                .values())[0].result(15)


def _refused(b, configs, **kw) -> str:
    with pytest.raises(KafkaException) as e:
        _alter(b, configs, **kw)
    err = e.value.args[0]
    assert err.code() == KafkaError.INVALID_REQUEST, err
    return err.str()


def _refused_as_default(b, configs) -> str:
    """IncrementalAlterConfigs v0 (SET) on the cluster-wide default, broker resource "" (the
    clients take no empty broker name, so by hand): its error message, INVALID_REQUEST."""
    body = (rk.int32(1) + rk.int8(4) + rk.string("") + rk.int32(len(configs))
            + b"".join(rk.string(k) + rk.int8(0) + rk.string(v) for k, v in configs.items())
            + rk.int8(0))
    with rk.RawConnection(listener_address(b, "PLAINTEXT")) as conn:
        r = conn.request(44, 0, body, flexible_request=False, flexible_response=False)
    r.int32()  # throttle time
    assert r.int32() == 1
    assert r.int16() == KafkaError.INVALID_REQUEST
    return r.string()


def test_new_keystore_for_new_connections_old_ones_keep_working(rotating):
    b, ca_pem, issue = rotating
    addr = listener_address(b, "SSL")
    opened = []
    old = _peer_certificate(addr, ca_pem, keep_open=opened)
    producer = KafkaProducer(bootstrap_servers=addr, security_protocol="SSL", ssl_cafile=ca_pem)
    topic = unique_topic("rotate")
    producer.send(topic, b"before").get(timeout=20)

    _alter(b, {"listener.name.ssl.ssl.keystore.location": issue()})
    new = _peer_certificate(addr, ca_pem)
    assert new.serial_number != old.serial_number and new.subject == old.subject
    # Connections opened before the change keep theirs and keep working.
    assert _api_versions_over(opened[0]) == 0
    producer.send(topic, b"after").get(timeout=20)
    producer.close()
    opened[0].close()
    # The change is stored: after a restart the listener starts with the new certificate.
    b.restart()
    assert _peer_certificate(addr, ca_pem).serial_number == new.serial_number


def test_bad_keystores_are_refused_and_the_old_one_stays(rotating, tmp_path):
    b, ca_pem, issue = rotating
    addr = listener_address(b, "SSL")
    serial = _peer_certificate(addr, ca_pem).serial_number
    key = "listener.name.ssl.ssl.keystore.location"
    assert "Validation of dynamic config update of SSLFactory failed" in _refused(
        b, {key: str(tmp_path / "missing.pem")})
    garbage = _write(tmp_path / "garbage.pem", b"-----BEGIN CERTIFICATE-----\nnope\n")
    _refused(b, {key: garbage})
    # Kafka keeps the broker's identity unless ssl.allow.dn.changes / ssl.allow.san.changes.
    assert "DistinguishedName does not match" in _refused(b, {key: issue(common_name="other")})
    assert "SubjectAltName does not match" in _refused(b, {key: issue(names=("127.0.0.1",))})
    assert "broker id must be specified" in _refused_as_default(b, {key: issue()})
    _alter(b, {key: issue()}, validate_only=True)
    assert _peer_certificate(addr, ca_pem).serial_number == serial
    _alter(b, {key: issue(common_name="renamed"),
               "listener.name.ssl.ssl.allow.dn.changes": "true"})
    assert _peer_certificate(addr, ca_pem).subject.rfc4514_string().startswith("CN=renamed")
