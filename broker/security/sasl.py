"""SASL server exchanges (PLAIN, SCRAM-SHA-256/512) and the SCRAM credential stores.

SCRAM credentials are kept salted, as Kafka keeps them: per user, per mechanism
``salt=<b64>,stored_key=<b64>,server_key=<b64>,iterations=<n>``, in ZooKeeper under
``/config/users/<user>`` in cluster mode and in ``scram-credentials.json`` in the first log dir
otherwise.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import re
from pathlib import Path

from josefk.broker.config import ConfigError
from josefk.broker.security.listeners import (SASL_PROTOCOLS, TLS_PROTOCOLS, advertised_listeners,
                                              inter_broker_listener, inter_broker_ssl_context,
                                              listener_value, pkcs12_store)

SCRAM_MECHANISMS = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}  # ScramMechanism codes on the wire
SCRAM_CODES = {v: k for k, v in SCRAM_MECHANISMS.items()}
SCRAM_HASHES = {"SCRAM-SHA-256": hashlib.sha256, "SCRAM-SHA-512": hashlib.sha512}
MIN_ITERATIONS, MAX_ITERATIONS = 4096, 16384  # Kafka's bounds
SUPPORTED_MECHANISMS = ("PLAIN", *SCRAM_HASHES)
PLAIN_FAILED = "Authentication failed: Invalid username or password"


class AuthenticationFailed(Exception):
    """The exchange failed; ``message`` is what the client is told."""


def generic_failure(mechanism: str, reauthenticating: bool = False) -> str:
    phase = "re-authentication" if reauthenticating else "authentication"
    return (f"Authentication failed during {phase} due to invalid credentials with SASL "
            f"mechanism {mechanism}")


# -- credentials ----------------------------------------------------------------------------------
def scram_credential(mechanism: str, salt: bytes, salted_password: bytes, iterations: int) -> str:
    """The stored form of a credential, from what AlterUserScramCredentials sends."""
    hf = SCRAM_HASHES[mechanism]
    client_key = hmac.new(salted_password, b"Client Key", hf).digest()
    stored_key = hf(client_key).digest()
    server_key = hmac.new(salted_password, b"Server Key", hf).digest()
    b64 = lambda b: base64.b64encode(b).decode()  # noqa: E731
    return (f"salt={b64(salt)},stored_key={b64(stored_key)},server_key={b64(server_key)},"
            f"iterations={iterations}")


def salted_password(mechanism: str, password: str, salt: bytes, iterations: int) -> bytes:
    return hashlib.pbkdf2_hmac(SCRAM_HASHES[mechanism]().name, password.encode(), salt, iterations)


def parse_credential(text: str) -> tuple[bytes, bytes, bytes, int]:
    """(salt, stored_key, server_key, iterations), the shape scramp's auth_fn returns."""
    d = dict(item.split("=", 1) for item in text.split(","))
    return (base64.b64decode(d["salt"]), base64.b64decode(d["stored_key"]),
            base64.b64decode(d["server_key"]), int(d["iterations"]))


class LocalCredentialStore:
    """SCRAM credentials of a broker without ZooKeeper: {user: {mechanism: credential}} in a
    JSON file, rewritten atomically."""

    def __init__(self, log_dir: str):
        self.path = Path(log_dir) / "scram-credentials.json"
        self.users = json.loads(self.path.read_text()) if self.path.exists() else {}

    async def get(self, user: str) -> dict:
        return dict(self.users.get(user, {}))

    async def all_users(self) -> dict:
        return {u: dict(c) for u, c in self.users.items()}

    async def put(self, user: str, credentials: dict) -> None:
        if credentials:
            self.users[user] = dict(credentials)
        else:
            self.users.pop(user, None)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.users, indent=1, sort_keys=True))
        os.replace(tmp, self.path)


# -- exchanges ------------------------------------------------------------------------------------
def parse_jaas_users(jaas: str | None) -> dict[str, str]:
    """The ``user_<name>="<password>"`` options of a PlainLoginModule JAAS config."""
    return {m.group(1): m.group(2)
            for m in re.finditer(r'\buser_([^\s=]+)\s*=\s*"((?:[^"\\]|\\.)*)"', jaas or "")}


def jaas_option(jaas: str | None, name: str) -> str | None:
    m = re.search(rf'\b{re.escape(name)}\s*=\s*"((?:[^"\\]|\\.)*)"', jaas or "")
    return m.group(1) if m else None


class PlainExchange:
    """RFC 4616: one token ``authzid NUL authcid NUL password``."""

    def __init__(self, users: dict[str, str]):
        self.users = users

    async def step(self, token: bytes):
        """Returns (response token, principal name or None while the exchange goes on)."""
        parts = token.split(b"\0")
        if len(parts) != 3:
            raise AuthenticationFailed(generic_failure("PLAIN"))
        authzid, user, password = (p.decode("utf-8", "replace") for p in parts)
        expected = self.users.get(user)
        if not user or expected is None or not hmac.compare_digest(expected.encode(),
                                                                   password.encode()):
            raise AuthenticationFailed(PLAIN_FAILED)
        if authzid and authzid != user:
            raise AuthenticationFailed("Authentication failed: Client requested an authorization "
                                       "id that is different from username")
        return b"", user


class ScramExchange:
    """RFC 5802 server side, through scramp. The stored credential is looked up (possibly in
    ZooKeeper) once the client-first message names the user."""

    def __init__(self, mechanism: str, store):
        self.mechanism = mechanism
        self.store = store
        self.server = None
        self.user = None

    async def step(self, token: bytes):
        import scramp  # here, not at the top: its import costs 20 ms a broker without SCRAM

        try:
            text = token.decode("utf-8")
            if self.server is None:
                self.user = _scram_user(text)
                cred = (await self.store.get(self.user)).get(self.mechanism)
                if cred is None:
                    raise AuthenticationFailed(generic_failure(self.mechanism))
                self.server = scramp.ScramMechanism(self.mechanism).make_server(
                    lambda _user: parse_credential(cred))
                self.server.set_client_first(text)
                return self.server.get_server_first().encode(), None
            self.server.set_client_final(text)
            return self.server.get_server_final().encode(), self.user
        except (UnicodeDecodeError, ValueError, KeyError, scramp.ScramException):
            raise AuthenticationFailed(generic_failure(self.mechanism)) from None


def _scram_user(client_first: str) -> str:
    """The saslname of ``n,,n=<user>,r=<nonce>``, unescaped (``=2C`` is ``,``, ``=3D`` is ``=``)."""
    for attr in client_first.split(",")[2:]:
        if attr.startswith("n="):
            return attr[2:].replace("=2C", ",").replace("=3D", "=")
    raise ValueError("no user name in the SCRAM client-first message")


def new_exchange(mechanism: str, config, listener: str, store):
    if mechanism == "PLAIN":
        return PlainExchange(parse_jaas_users(listener_value(
            config, listener, "plain.sasl.jaas.config") or listener_value(
            config, listener, "sasl.jaas.config")))
    return ScramExchange(mechanism, store)


def check_mechanisms(mechanisms) -> None:
    unsupported = [m for m in mechanisms if m not in SUPPORTED_MECHANISMS]
    if unsupported:
        raise ConfigError(f"sasl.enabled.mechanisms: {', '.join(unsupported)} not supported "
                          f"(supported: {', '.join(SUPPORTED_MECHANISMS)})")


# -- the client side (CLI tools and inter-broker channels) ------------------------------------------
class ClientExchange:
    """The client's tokens of a PLAIN or SCRAM exchange: ``first()``, then ``next(server_token)``
    until it returns None."""

    def __init__(self, mechanism: str, username: str, password: str):
        self.mechanism = mechanism
        self.username, self.password = username, password
        self.scram = None
        if mechanism in SCRAM_HASHES:
            import scramp

            self.scram = scramp.ScramClient([mechanism], username, password)
        self.step = 0

    def first(self) -> bytes:
        if self.scram is None:
            return f"\0{self.username}\0{self.password}".encode()
        return self.scram.get_client_first().encode()

    def next(self, server_token: bytes) -> bytes | None:
        self.step += 1
        if self.scram is None:
            return None
        if self.step == 1:
            self.scram.set_server_first(server_token.decode())
            return self.scram.get_client_final().encode()
        self.scram.set_server_final(server_token.decode())
        return None


def client_credentials(props: dict) -> tuple[str, str] | None:
    """(username, password) from ``sasl.jaas.config`` or librdkafka's ``sasl.username``/``sasl.password``."""
    jaas = props.get("sasl.jaas.config")
    user = jaas_option(jaas, "username") if jaas else props.get("sasl.username")
    password = jaas_option(jaas, "password") if jaas else props.get("sasl.password")
    return (user, password) if user is not None and password is not None else None


class InterBrokerSecurity:
    """How this broker reaches the others: the inter-broker listener's protocol, a TLS context
    with its truststore (and keystore, for brokers requiring client certificates), and for SASL
    ``sasl.mechanism.inter.broker.protocol`` with the username and password of the listener's
    JAAS config for that mechanism."""

    def __init__(self, config):
        self.listener = inter_broker_listener(config)
        protocol = next(e.security_protocol for e in advertised_listeners(config)
                        if e.listener == self.listener)
        self.ssl_context = inter_broker_ssl_context(config, self.listener) \
            if protocol in TLS_PROTOCOLS else None
        self.mechanism = self.username = self.password = None
        if protocol in SASL_PROTOCOLS:
            self.mechanism = (config.get("sasl.mechanism.inter.broker.protocol") or "").upper()
            check_mechanisms([self.mechanism])
            jaas = listener_value(config, self.listener,
                                  f"{self.mechanism.lower()}.sasl.jaas.config")
            self.username, self.password = jaas_option(jaas, "username"), jaas_option(jaas,
                                                                                     "password")
            if self.username is None or self.password is None:
                raise ConfigError(f"listener.name.{self.listener.lower()}."
                                  f"{self.mechanism.lower()}.sasl.jaas.config needs username "
                                  "and password for inter-broker SASL")
        self.protocol = protocol
        self._get = lambda name: listener_value(config, self.listener, name)

    def client_config(self) -> dict:
        """The same security as librdkafka settings, for the broker's own Kafka clients of
        its inter-broker listener (``__remote_log_metadata``'s)."""
        out = {"security.protocol": self.protocol}
        if self.ssl_context is not None:
            out.update(rdkafka_tls(self._get))
        if self.mechanism is not None:
            out.update({"sasl.mechanism": self.mechanism, "sasl.username": self.username,
                        "sasl.password": self.password})
        return out


def rdkafka_tls(get) -> dict:
    """A Kafka client's (or listener's) TLS settings, ``get(name)`` looking one up, as
    librdkafka's: the truststore as CA, the keystore as client certificate, host name
    checking unless ``ssl.endpoint.identification.algorithm`` is empty."""
    from cryptography.hazmat.primitives.serialization import Encoding

    out = {"ssl.endpoint.identification.algorithm":
           "https" if (get("ssl.endpoint.identification.algorithm") or "https") == "https"
           else "none"}
    if (get("ssl.truststore.type") or "PEM").upper() == "PKCS12":
        _key, certs = pkcs12_store(get, "truststore")
        out["ssl.ca.pem"] = "".join(c.public_bytes(Encoding.PEM).decode() for c in certs)
    elif get("ssl.truststore.certificates"):
        out["ssl.ca.pem"] = get("ssl.truststore.certificates").replace("\\n", "\n")
    elif get("ssl.truststore.location") or get("ssl.ca.location"):
        out["ssl.ca.location"] = get("ssl.truststore.location") or get("ssl.ca.location")
    if (get("ssl.keystore.type") or "PEM").upper() == "PKCS12":
        out.update({"ssl.keystore.location": get("ssl.keystore.location"),
                    "ssl.keystore.password": get("ssl.keystore.password") or ""})
    elif get("ssl.keystore.key"):
        out.update({"ssl.key.pem": get("ssl.keystore.key"),
                    "ssl.certificate.pem": get("ssl.keystore.certificate.chain") or ""})
    elif get("ssl.keystore.location"):  # one PEM file: the key and the chain
        out["ssl.key.location"] = out["ssl.certificate.location"] = \
            get("ssl.keystore.location")
    if get("ssl.key.password"):
        out["ssl.key.password"] = get("ssl.key.password")
    return out
