"""Listener parsing, TLS principals and mapping rules, PLAIN/SCRAM exchanges and credentials."""
from __future__ import annotations

import asyncio

import pytest
import scramp

from josefk.broker.security import sasl, listeners as security
from josefk.broker.config import BrokerConfig, ConfigError



def test_listeners_with_protocol_map_and_inter_broker_listener():
    c = BrokerConfig({"listeners": "INTERNAL://127.0.0.1:9093,EXTERNAL://:9094",
                      "listener.security.protocol.map": "INTERNAL:SASL_SSL,EXTERNAL:SSL",
                      "inter.broker.listener.name": "internal"})
    assert [(e.listener, e.port, e.security_protocol) for e in security.listeners(c)] == \
        [("INTERNAL", 9093, "SASL_SSL"), ("EXTERNAL", 9094, "SSL")]
    assert [e.host for e in security.advertised_listeners(c)] == ["127.0.0.1", "127.0.0.1"]
    assert security.inter_broker_listener(c) == "INTERNAL"
    c.props["inter.broker.listener.name"] = ""
    c.props["security.inter.broker.protocol"] = "SSL"
    assert security.inter_broker_listener(c) == "EXTERNAL"


@pytest.mark.parametrize("props", [
    {"listeners": "FOO://127.0.0.1:1"},  # no protocol for FOO
    {"listeners": "PLAINTEXT://127.0.0.1:1,PLAINTEXT://127.0.0.1:2"},
    {"listeners": "SSL://127.0.0.1:1"},  # no PLAINTEXT listener for inter-broker traffic
])
def test_bad_listener_settings(props):
    c = BrokerConfig(props)
    with pytest.raises(ConfigError):
        security.listeners(c)
        security.inter_broker_listener(c)


def test_listener_prefixed_settings_win():
    c = BrokerConfig({"ssl.client.auth": "requested", "listener.name.mtls.ssl.client.auth":
                      "required"})
    assert security.listener_value(c, "MTLS", "ssl.client.auth") == "required"
    assert security.listener_value(c, "SSL", "ssl.client.auth") == "requested"


def test_distinguished_name_is_rfc2253_most_specific_first():
    cert = {"subject": ((("countryName", "US"),), (("organizationName", "Acme, Inc"),),
                        (("organizationalUnitName", "eng"),), (("commonName", "alice"),))}
    assert security.distinguished_name(cert) == "CN=alice,OU=eng,O=Acme\\, Inc,C=US"


def test_principal_mapping_rules():
    rules = security.parse_mapping_rules(
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,RULE:^CN=(.*?),OU=(.*?),O=.*$/$1@$2/L, DEFAULT")
    assert security.map_principal("CN=kafka1,OU=ServiceUsers,O=Org", rules) == "kafka1"
    assert security.map_principal("CN=Alice,OU=ENG,O=Org", rules) == "alice@eng"
    assert security.map_principal("CN=x", rules) == "CN=x"
    with pytest.raises(ValueError):
        security.map_principal("CN=x", security.parse_mapping_rules("RULE:^O=.*$/y/"))
    with pytest.raises(ConfigError):
        security.parse_mapping_rules("RULE:broken")


def test_jaas_users_and_options():
    jaas = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
            'username="admin" password="a\\"b" user_admin="a\\"b" user_bob.x="pw";')
    assert sasl.parse_jaas_users(jaas) == {"admin": 'a\\"b', "bob.x": "pw"}
    assert sasl.jaas_option(jaas, "username") == "admin"
    assert sasl.client_credentials({"sasl.username": "u", "sasl.password": "p"}) == ("u", "p")


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_stored_credential_matches_scramp(mechanism):
    salt = b"0123456789abcdef"
    salted = sasl.salted_password(mechanism, "pw", salt, 4096)
    stored = sasl.parse_credential(sasl.scram_credential(mechanism, salt, salted, 4096))
    assert stored == scramp.ScramMechanism(mechanism).make_auth_info("pw", 4096, salt)


class MemoryStore:
    def __init__(self, users):
        self.users = users

    async def get(self, user):
        return self.users.get(user, {})


def run_exchange(server, client):
    async def go():
        token = client.first()
        user = None
        while token is not None:
            reply, user = await server.step(token)
            token = client.next(reply)
        return user
    return asyncio.run(go())


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_exchange(mechanism):
    salt = b"s" * 16
    cred = sasl.scram_credential(mechanism, salt, sasl.salted_password(mechanism, "pw", salt,
                                                                       4096), 4096)
    store = MemoryStore({"a,b=c": {mechanism: cred}})
    assert run_exchange(sasl.ScramExchange(mechanism, store),
                        sasl.ClientExchange(mechanism, "a,b=c", "pw")) == "a,b=c"
    with pytest.raises(sasl.AuthenticationFailed, match="invalid credentials with SASL "
                       f"mechanism {mechanism}"):
        run_exchange(sasl.ScramExchange(mechanism, store),
                     sasl.ClientExchange(mechanism, "a,b=c", "wrong"))
    with pytest.raises(sasl.AuthenticationFailed):
        run_exchange(sasl.ScramExchange(mechanism, store),
                     sasl.ClientExchange(mechanism, "nobody", "pw"))


def test_plain_exchange():
    server = sasl.PlainExchange({"alice": "secret"})
    assert run_exchange(server, sasl.ClientExchange("PLAIN", "alice", "secret")) == "alice"
    with pytest.raises(sasl.AuthenticationFailed, match="Invalid username or password"):
        run_exchange(server, sasl.ClientExchange("PLAIN", "alice", "nope"))
    with pytest.raises(sasl.AuthenticationFailed, match="invalid credentials"):
        asyncio.run(server.step(b"no separators"))


def test_local_credential_store_persists(tmp_path):
    store = sasl.LocalCredentialStore(str(tmp_path))
    asyncio.run(store.put("u", {"SCRAM-SHA-256": "salt=AA==,stored_key=AA==,server_key=AA==,"
                                                 "iterations=4096"}))
    again = sasl.LocalCredentialStore(str(tmp_path))
    assert list(asyncio.run(again.all_users())) == ["u"]
    asyncio.run(again.put("u", {}))
    assert asyncio.run(sasl.LocalCredentialStore(str(tmp_path)).get("u")) == {}
