"""``josefk registry`` and ``josefk rest`` secured as Confluent's services are: HTTP basic
authentication (``authentication.method=BASIC``, a JAAS file naming Jetty's
PropertyFileLoginModule and its password file, ``authentication.realm``,
``authentication.roles``), https listeners (PEM and PKCS12 keystores,
``ssl.client.authentication``), and a Kafka cluster reached over SASL_SSL
(``kafkastore.*`` for the registry, ``client.*`` for the proxy), with stock clients."""
from __future__ import annotations

import hashlib
import json
import ssl
import uuid

import httpx
import pytest
from confluent_kafka import Consumer
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from cryptography import x509
from cryptography.hazmat.primitives.serialization import (BestAvailableEncryption,
                                                          load_pem_private_key, pkcs12)

from josefk.zk.local_server import free_port
from compat_tests.http_services import ServiceProcess, wait_until
from compat_tests.security_setup import (PLAIN_USERS, SCRAM_USERS, add_scram_users,
                                         listener_address, module_broker, secure_overrides)

V2 = "application/vnd.kafka.v2+json"
# Jetty's password file: plain, MD5: and OBF: passwords (OBF:1v2j... is Jetty's documented
# obfuscation of "password"); dave has no allowed role.
PASSWORDS = {"alice": "alice-pw", "bob": "bob-pw", "carol": "password", "dave": "dave-pw"}
PASSWORD_FILE = f"""# user: password[,role...]
alice: alice-pw,developer
bob: MD5:{hashlib.md5(b"bob-pw").hexdigest()},admin
carol: OBF:1v2j1uum1xtv1zej1zer1xtn1uvk1v1v,developer,viewer
dave: dave-pw,guest
"""
ROLES = "developer,admin"


def jaas_file(path, password_file, realms) -> str:
    path.write_text("".join(
        f"{realm} {{\n  org.eclipse.jetty.jaas.spi.PropertyFileLoginModule required\n"
        f'  file="{password_file}"\n  debug="false";\n}};\n' for realm in realms))
    return str(path)


def kafka_jaas(module: str, user: str, password: str) -> str:
    return (f"org.apache.kafka.common.security.{module} required "
            f'username="{user}" password="{password}";')


@pytest.fixture(scope="module")
def secure_broker(pki, tmp_path_factory):
    b = module_broker(tmp_path_factory, "http-secure-broker", secure_overrides(pki))
    add_scram_users(listener_address(b, "PLAINTEXT"), SCRAM_USERS)
    yield b
    b.stop()


@pytest.fixture(scope="module")
def auth_files(tmp_path_factory):
    root = tmp_path_factory.mktemp("http-auth")
    (root / "password.properties").write_text(PASSWORD_FILE)
    return jaas_file(root / "jaas.conf", root / "password.properties",
                     ("SchemaRegistry-Props", "Proxy-Users"))


def registry_kafka(pki, broker, password="bob-secret") -> dict:
    """kafkastore.*: SASL_SSL with SCRAM-SHA-512, a bootstrap list with Confluent's prefix."""
    return {"kafkastore.bootstrap.servers": f"SASL_SSL://{listener_address(broker, 'SASL_SSL')}",
            "kafkastore.security.protocol": "SASL_SSL",
            "kafkastore.sasl.mechanism": "SCRAM-SHA-512",
            "kafkastore.sasl.jaas.config": kafka_jaas("scram.ScramLoginModule", "bob", password),
            "kafkastore.ssl.truststore.type": "PEM",
            "kafkastore.ssl.truststore.location": pki.ca}


@pytest.fixture(scope="module")
def secure_registry(pki, secure_broker, auth_files, tmp_path_factory):
    """https (PEM keystore), BASIC (default realm, roles developer and admin), _schemas over
    SASL_SSL."""
    root = tmp_path_factory.mktemp("secure-registry")
    sr = ServiceProcess("registry", {
        "listeners": f"https://127.0.0.1:{free_port()}", **registry_kafka(pki, secure_broker),
        "kafkastore.topic": "_schemas_secure", "kafkastore.topic.replication.factor": 1,
        "ssl.keystore.type": "PEM", "ssl.keystore.location": pki.server,
        "authentication.method": "BASIC", "authentication.roles": ROLES,
    }, root / "registry.log",
        env={"SCHEMA_REGISTRY_OPTS": f"-Djava.security.auth.login.config={auth_files}"}).start()
    yield sr
    sr.stop()


def tls(pki, client_cert: bool = False, rogue: bool = False) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=pki.ca)
    if rogue:
        ctx.load_cert_chain(pki.rogue_cert, pki.rogue_key)
    elif client_cert:
        ctx.load_cert_chain(pki.client_cert, pki.client_key)
    return ctx


def test_registry_basic_authentication(pki, secure_registry):
    """No or wrong credentials: 401 with the realm's challenge; a user without an allowed
    role: 403; every password format of Jetty's file works."""
    url = secure_registry.url
    with httpx.Client(base_url=url, verify=tls(pki), timeout=20) as http:
        r = http.get("/subjects")
        assert (r.status_code, r.json()["error_code"]) == (401, 401)
        assert r.headers["WWW-Authenticate"] == 'Basic realm="SchemaRegistry-Props"'
        for user, password in (("alice", "wrong"), ("nobody", "x"), ("bob", "bob-pw-")):
            r = http.get("/subjects", auth=(user, password))
            assert (r.status_code, r.json()["error_code"]) == (401, 401), user
        r = http.get("/subjects", headers={"Authorization": "Basic !!not base64"})
        assert r.status_code == 401
        r = http.get("/subjects", auth=("dave", PASSWORDS["dave"]))
        assert (r.status_code, r.json()["error_code"]) == (403, 403)
        for user in ("alice", "bob", "carol"):  # plain, MD5:, OBF:
            assert http.get("/subjects", auth=(user, PASSWORDS[user])).status_code == 200, user
    with pytest.raises(httpx.HTTPError):  # plain HTTP to a TLS listener
        httpx.get(url.replace("https://", "http://") + "/subjects", timeout=5)


def test_registry_over_tls_with_the_stock_client_and_sasl_to_kafka(pki, secure_registry,
                                                                   secure_broker):
    """confluent-kafka's SchemaRegistryClient with basic.auth.user.info and the CA; the
    registry's records land in _schemas on the SASL_SSL listener."""
    client = SchemaRegistryClient({"url": secure_registry.url, "ssl.ca.location": pki.ca,
                                   "basic.auth.user.info": f"alice:{PASSWORDS['alice']}"})
    subject = f"sec-{uuid.uuid4().hex[:8]}"
    schema_id = client.register_schema(subject, Schema(json.dumps(
        {"type": "record", "name": "S", "fields": [{"name": "a", "type": "int"}]}), "AVRO"))
    assert client.get_latest_version(subject).schema_id == schema_id
    denied = SchemaRegistryClient({"url": secure_registry.url, "ssl.ca.location": pki.ca,
                                   "basic.auth.user.info": f"dave:{PASSWORDS['dave']}"})
    with pytest.raises(Exception) as e:
        denied.get_subjects()
    assert getattr(e.value, "http_status_code", None) == 403
    c = Consumer({"bootstrap.servers": listener_address(secure_broker, "SASL_SSL"),
                  "security.protocol": "SASL_SSL", "ssl.ca.location": pki.ca,
                  "sasl.mechanism": "PLAIN", "sasl.username": "admin",
                  "sasl.password": PLAIN_USERS["admin"], "group.id": f"read-{subject}",
                  "auto.offset.reset": "earliest"})
    keys = []
    try:
        c.subscribe(["_schemas_secure"])
        wait_until(lambda: keys.extend(json.loads(m.key()) for m in c.consume(50, 1.0)
                                       if not m.error()) or
                   any(k.get("subject") == subject for k in keys), 30)
    finally:
        c.close()


@pytest.fixture(scope="module")
def secure_proxy(pki, secure_broker, secure_registry, auth_files, tmp_path_factory):
    """https with a PKCS12 keystore and client certificates required, BASIC in realm
    Proxy-Users, every Kafka client over SASL_SSL (PLAIN), the registry over https + BASIC."""
    root = tmp_path_factory.mktemp("secure-proxy")
    pem = open(pki.server, "rb").read()
    certs = x509.load_pem_x509_certificates(pem)
    store = root / "proxy.p12"
    store.write_bytes(pkcs12.serialize_key_and_certificates(
        b"proxy", load_pem_private_key(pem, None), certs[0], certs[1:],
        BestAvailableEncryption(b"store-pw")))
    proxy = ServiceProcess("rest", {
        "listeners": f"https://127.0.0.1:{free_port()}",
        "bootstrap.servers": listener_address(secure_broker, "SASL_SSL"),
        "client.security.protocol": "SASL_SSL", "client.sasl.mechanism": "PLAIN",
        "client.sasl.jaas.config": kafka_jaas("plain.PlainLoginModule", "alice",
                                              PLAIN_USERS["alice"]),
        "client.ssl.truststore.location": pki.ca,
        "schema.registry.url": secure_registry.url,
        "schema.registry.basic.auth.credentials.source": "USER_INFO",
        "schema.registry.basic.auth.user.info": f"bob:{PASSWORDS['bob']}",
        "schema.registry.ssl.truststore.location": pki.ca,
        "ssl.keystore.type": "PKCS12", "ssl.keystore.location": str(store),
        "ssl.keystore.password": "store-pw", "ssl.truststore.location": pki.ca,
        "ssl.client.authentication": "REQUIRED",
        "authentication.method": "BASIC", "authentication.realm": "Proxy-Users",
        "authentication.roles": ROLES,
    }, root / "rest.log",
        env={"KAFKAREST_OPTS": f"-Djava.security.auth.login.config={auth_files}"}).start()
    yield proxy
    proxy.stop()


def test_proxy_client_certificates_and_basic_authentication(pki, secure_proxy):
    url = secure_proxy.url
    for ctx in (tls(pki), tls(pki, rogue=True)):  # no client certificate, or an unknown one
        with pytest.raises(httpx.HTTPError):
            httpx.get(f"{url}/topics", verify=ctx, auth=("alice", PASSWORDS["alice"]),
                      timeout=10)
    with httpx.Client(base_url=url, verify=tls(pki, client_cert=True), timeout=30) as http:
        r = http.get("/topics")
        assert (r.status_code, r.json()["error_code"]) == (401, 401)
        assert r.headers["WWW-Authenticate"] == 'Basic realm="Proxy-Users"'
        assert http.get("/topics", auth=("alice", "wrong")).status_code == 401
        r = http.get("/v3/clusters", auth=("dave", PASSWORDS["dave"]))
        assert (r.status_code, r.json()["error_code"]) == (403, 403)
        assert http.get("/topics", auth=("carol", PASSWORDS["carol"])).status_code == 200


def test_proxy_produces_and_consumes_over_sasl_ssl_with_a_secured_registry(pki, secure_proxy):
    """Avro through the proxy: the schema registered at the https + BASIC registry, records
    produced and read back by a consumer instance over SASL_SSL."""
    topic = f"sec-{uuid.uuid4().hex[:8]}"
    with httpx.Client(base_url=secure_proxy.url, verify=tls(pki, client_cert=True),
                      auth=("alice", PASSWORDS["alice"]), timeout=30) as http:
        cid = http.get("/v3/clusters").json()["data"][0]["cluster_id"]
        r = http.post(f"/v3/clusters/{cid}/topics", json={"topic_name": topic,
                                                          "partitions_count": 1})
        assert r.status_code == 201, r.text
        schema = json.dumps({"type": "record", "name": "Login", "fields": [
            {"name": "user", "type": "string"}]})
        r = http.post(f"/topics/{topic}", headers={
            "Content-Type": "application/vnd.kafka.avro.v2+json"}, json={
            "value_schema": schema, "records": [{"value": {"user": "ann"}},
                                                {"value": {"user": "bo"}}]})
        assert r.status_code == 200 and isinstance(r.json()["value_schema_id"], int), r.text
        r = http.post(f"/consumers/g-{topic}", headers={"Content-Type": V2}, json={
            "format": "avro", "auto.offset.reset": "earliest"})
        base = r.json()["base_uri"]
        assert base.startswith("https://"), base
        assert http.post(f"{base}/subscription", headers={"Content-Type": V2},
                         json={"topics": [topic]}).status_code == 204
        got = []
        wait_until(lambda: got.extend(http.get(f"{base}/records?timeout=1000", headers={
            "Accept": "application/vnd.kafka.avro.v2+json"}).json()) or len(got) >= 2, 30)
        assert [m["value"]["user"] for m in got] == ["ann", "bo"]
        assert http.delete(base).status_code == 204


def test_wrong_kafka_credentials_are_reported(pki, secure_broker, tmp_path):
    """The registry refuses to start (exit 1, a one-line reason); the proxy answers Kafka's
    authentication failure as Confluent does, 401 with 40101."""
    sr = ServiceProcess("registry", {**registry_kafka(pki, secure_broker, password="wrong"),
                                     "kafkastore.topic": "_schemas_wrong",
                                     "kafkastore.init.timeout.ms": 5000},
                        tmp_path / "registry.log")
    with pytest.raises(RuntimeError, match="exited"):
        sr.start()
    assert sr.proc.returncode == 1
    assert "cannot use _schemas_wrong" in sr.log_tail()
    proxy = ServiceProcess("rest", {
        "bootstrap.servers": listener_address(secure_broker, "SASL_SSL"),
        "client.security.protocol": "SASL_SSL", "client.sasl.mechanism": "SCRAM-SHA-256",
        "client.sasl.jaas.config": kafka_jaas("scram.ScramLoginModule", "bob", "wrong"),
        "client.ssl.truststore.location": pki.ca, "kafka.timeout.ms": 5000,
    }, tmp_path / "rest.log").start()
    try:
        r = httpx.get(f"{proxy.url}/topics", timeout=30)
        assert (r.status_code, r.json()["error_code"]) == (401, 40101), r.text
    finally:
        proxy.stop()


@pytest.mark.parametrize("props,env,message", [
    ({"authentication.method": "BASIC"}, {}, "needs a JAAS file"),
    ({"authentication.method": "BASIC", "authentication.realm": "Nowhere"}, "jaas",
     "has no section 'Nowhere'"),
    ({"authentication.method": "DIGEST"}, {}, "not supported"),
    ({"listeners": "https://127.0.0.1:{port}", "ssl.keystore.location": "/nonexistent.pem"},
     {}, "ssl.keystore.location /nonexistent.pem: No such file or directory"),
    ({"listeners": "https://127.0.0.1:{port}", "ssl.client.authentication": "SOMETIMES"}, {},
     "ssl.client.authentication"),
], ids=["no-jaas", "no-section", "method", "keystore", "client-auth"])
def test_bad_security_configuration_is_refused(pki, auth_files, tmp_path, props, env,
                                               message):
    if env == "jaas":
        env = {"KAFKAREST_OPTS": f"-Djava.security.auth.login.config={auth_files}"}
    if "listeners" in props:
        props = {"ssl.keystore.location": pki.server, **props,
                 "listeners": props["listeners"].format(port=free_port())}
    proxy = ServiceProcess("rest", {"bootstrap.servers": "127.0.0.1:1", **props},
                           tmp_path / "rest.log", env=env)
    with pytest.raises(RuntimeError, match="exited"):
        proxy.start()
    assert proxy.proc.returncode == 2
    assert message in proxy.log_tail(), proxy.log_tail()
