"""Certificates and a broker with one listener per security protocol, for the security tests.

Certificates are made here with trustme (a CA, a server certificate for 127.0.0.1 and
localhost, client certificates), written as PEM files the broker and the clients read.
"""
from __future__ import annotations

import datetime
import subprocess
from pathlib import Path

import trustme

from josefk.faults.processes import BROKER_PYTHON, REPO_ROOT, BrokerProcess
from josefk.zk.local_server import free_port

PLAIN_USERS = {"admin": "admin-secret", "alice": "alice-secret"}
SCRAM_USERS = {"bob": "bob-secret", "carol": "carol-secret"}
CLIENT_DN = "CN=alice,OU=eng,O=josefk"


class Pki:
    def __init__(self, root: Path):
        root.mkdir(parents=True, exist_ok=True)
        self.root = root
        ca = trustme.CA(organization_name="josefk test CA")
        self.ca = self._write("ca.pem", ca.cert_pem.bytes())
        server = ca.issue_cert("127.0.0.1", "localhost")
        self.server = self._write("server.pem", server.private_key_and_cert_chain_pem.bytes())
        client = ca.issue_cert("alice", common_name="alice", organization_unit_name="eng",
                               organization_name="josefk")
        self.client_cert = self._write("client.crt", client.cert_chain_pems[0].bytes())
        self.client_key = self._write("client.key", client.private_key_pem.bytes())
        rogue = trustme.CA(organization_name="somebody else").issue_cert("mallory",
                                                                         common_name="mallory")
        self.rogue_cert = self._write("rogue.crt", rogue.cert_chain_pems[0].bytes())
        self.rogue_key = self._write("rogue.key", rogue.private_key_pem.bytes())
        now = datetime.datetime.now(datetime.timezone.utc)
        expired = ca.issue_cert("old", common_name="old", not_before=now - datetime.timedelta(
            days=30), not_after=now - datetime.timedelta(days=1))
        self.expired_cert = self._write("expired.crt", expired.cert_chain_pems[0].bytes())
        self.expired_key = self._write("expired.key", expired.private_key_pem.bytes())

    def _write(self, name: str, data: bytes) -> str:
        p = self.root / name
        p.write_bytes(data)
        return str(p)


def jaas(users: dict, user: str = "admin") -> str:
    entries = " ".join(f'user_{u}="{p}"' for u, p in users.items())
    return (f'org.apache.kafka.common.security.plain.PlainLoginModule required '
            f'username="{user}" password="{users[user]}" {entries};')


def secure_overrides(pki: Pki, extra: dict | None = None) -> dict:
    """Listeners PLAINTEXT, SSL, MTLS (SSL requiring a client certificate), SASL_PLAINTEXT and
    SASL_SSL, on free ports; PLAIN and both SCRAM mechanisms."""
    names = ("PLAINTEXT", "SSL", "MTLS", "SASL_PLAINTEXT", "SASL_SSL")
    listeners = ",".join(f"{n}://127.0.0.1:{free_port()}" for n in names)
    return {
        "listeners": listeners,
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,MTLS:SSL,"
                                          "SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": pki.server,
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": pki.ca,
        "listener.name.mtls.ssl.client.auth": "required",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": jaas(PLAIN_USERS),
        "listener.name.sasl_ssl.plain.sasl.jaas.config": jaas(PLAIN_USERS),
        "connection.failed.authentication.delay.ms": 300,
        **(extra or {}),
    }


def listener_address(broker, name: str) -> str:
    for spec in str(broker.overrides["listeners"]).split(","):
        listener, _, hostport = spec.partition("://")
        if listener == name:
            return hostport
    raise KeyError(name)


def josefk(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run([BROKER_PYTHON, "-m", "josefk", *args], cwd=str(REPO_ROOT),
                          capture_output=True, text=True, timeout=60, check=check)


def add_scram_users(bootstrap: str, users: dict, mechanisms=("SCRAM-SHA-256", "SCRAM-SHA-512"),
                    command_config: str | None = None) -> None:
    extra = ["--command-config", command_config] if command_config else []
    for user, password in users.items():
        config = ",".join(f"{m}=[iterations=4096,password={password}]" for m in mechanisms)
        josefk("users", "alter", "--bootstrap-server", bootstrap, "--user", user,
               "--add-config", config, *extra)


def module_broker(tmp_path_factory, name: str, overrides: dict) -> BrokerProcess:
    """A started broker with the compat tests' base settings and ``overrides``."""
    from compat_tests.conftest import BASE_OVERRIDES

    root = tmp_path_factory.mktemp(name)
    b = BrokerProcess(data_dir=root / "data", log_dir=root,
                      overrides={**BASE_OVERRIDES, **overrides})
    return b.start()
