"""Listeners and their security: the listener list with its protocol map, TLS contexts from PEM
settings, the principal of a TLS client, the per-connection security state and the events
that change a connection's state (`Reply`: a response with its throttle, close-after or
authentication), which the connection core (`broker.connection`) applies.

Every ``ssl.*`` / ``sasl.*`` setting may be given for one listener as
``listener.name.<listener>.<setting>``, which wins over the plain setting, as in Kafka.
"""
from __future__ import annotations

import os
import re
import ssl
import tempfile
from pathlib import Path

from josefk.broker.config import ConfigError
from josefk.zk.znodes import Endpoint, ZNodeError

ANONYMOUS = "User:ANONYMOUS"
SASL_PROTOCOLS = ("SASL_PLAINTEXT", "SASL_SSL")
TLS_PROTOCOLS = ("SSL", "SASL_SSL")
# Requests a SASL connection may send before it has authenticated (and to re-authenticate).
SASL_APIS = frozenset({17, 18, 36})  # SaslHandshake, ApiVersions, SaslAuthenticate

# A TLS listener's settings that AlterConfigs may change at run time (its keys and trust).
RELOADABLE_TLS = ("ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password",
                  "ssl.key.password", "ssl.keystore.key", "ssl.keystore.certificate.chain",
                  "ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.password",
                  "ssl.truststore.certificates", "ssl.allow.dn.changes", "ssl.allow.san.changes")
_CLIENT_AUTH = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL,
                "required": ssl.CERT_REQUIRED}
_TLS_VERSIONS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}
# X.500 attribute names as Python's getpeercert() spells them -> RFC 2253 keywords.
_DN_KEYWORDS = {"commonName": "CN", "organizationalUnitName": "OU", "organizationName": "O",
                "localityName": "L", "stateOrProvinceName": "ST", "countryName": "C",
                "streetAddress": "STREET", "domainComponent": "DC", "userId": "UID"}


def listener_value(config, listener: str, name: str):
    """``listener.name.<listener>.<name>`` if set, else ``<name>``, else None."""
    v = config.get(f"listener.name.{listener.lower()}.{name}")
    return v if v is not None else config.get(name)


def protocol_map(config) -> dict[str, str]:
    out = {}
    for item in config.get("listener.security.protocol.map", "").split(","):
        name, sep, proto = item.strip().partition(":")
        if sep:
            out[name.strip().upper()] = proto.strip().upper()
    return out


def endpoints(config, prop: str) -> list[Endpoint]:
    pmap = protocol_map(config)
    try:
        eps = [Endpoint.parse(s.strip(), pmap) for s in config.get(prop, "").split(",")
               if s.strip()]
    except ZNodeError as e:
        raise ConfigError(f"{prop}: {e}") from None
    names = [e.listener for e in eps]
    if len(set(names)) != len(names):
        raise ConfigError(f"{prop} has a listener name twice: {config.get(prop)}")
    return eps


def listeners(config) -> list[Endpoint]:
    """The listeners to bind (``listeners``), each with its security protocol."""
    eps = endpoints(config, "listeners")
    if not eps:
        raise ConfigError("listeners is empty")
    return eps


def advertised_listeners(config) -> list[Endpoint]:
    """What clients are told per listener: ``advertised.listeners``, else ``listeners``; an empty
    host becomes 127.0.0.1."""
    eps = endpoints(config, "advertised.listeners") if config.get("advertised.listeners") \
        else listeners(config)
    return [Endpoint(e.listener, e.host or "127.0.0.1", e.port, e.security_protocol) for e in eps]


def inter_broker_listener(config) -> str:
    """``inter.broker.listener.name``, else the listener using ``security.inter.broker.protocol``."""
    eps = advertised_listeners(config)
    name = config.get("inter.broker.listener.name")
    if name is None:
        proto = config.get("security.inter.broker.protocol", "PLAINTEXT").upper()
        name = next((e.listener for e in eps if e.security_protocol == proto), None)
        if name is None:
            raise ConfigError(f"no listener uses security.inter.broker.protocol {proto}")
    name = name.upper()
    if name not in {e.listener for e in eps}:
        raise ConfigError(f"inter.broker.listener.name {name} is not an advertised listener")
    return name


# -- TLS ------------------------------------------------------------------------------------------
def _pem_file(directory: str, name: str, text: str) -> str:
    path = os.path.join(directory, name)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text.replace("\\n", "\n"))
    return path


def _from_file(setting: str, path: str, load):
    """``load()``, with the setting and the file named in a failure (ssl's own errors name
    neither: "[Errno 2] No such file or directory")."""
    try:
        return load()
    except (OSError, ssl.SSLError) as e:
        raise ConfigError(f"{setting} {path}: {e.strerror or e}") from None


def _lookup(config, listener: str):
    return lambda name: listener_value(config, listener, name)


def pkcs12_store(get, store: str):
    """(key, certificates) of a PKCS12 store (``store`` is keystore or truststore), read with
    the store's password, as Java users bring them."""
    from cryptography.hazmat.primitives.serialization import pkcs12

    location, password = get(f"ssl.{store}.location"), get(f"ssl.{store}.password")
    if not location:
        raise ConfigError(f"ssl.{store}.type PKCS12 needs ssl.{store}.location")
    data = _from_file(f"ssl.{store}.location", location, Path(location).read_bytes)
    try:
        p12 = pkcs12.load_pkcs12(data, password.encode() if password else None)
    except ValueError as e:
        raise ConfigError(f"cannot read PKCS12 {store} {location}: {e}") from None
    certs = ([p12.cert] if p12.cert else []) + list(p12.additional_certs)
    return p12.key, [c.certificate for c in certs]


def _store_type(get, store: str) -> str:
    kind = (get(f"ssl.{store}.type") or "PEM").upper()
    if kind not in ("PEM", "PKCS12"):
        raise ConfigError(f"ssl.{store}.type {kind} is not supported; use PEM or PKCS12")
    return kind


def _load_pem_chain(ctx: ssl.SSLContext, key: str, chain: str, password) -> None:
    with tempfile.TemporaryDirectory() as d:
        ctx.load_cert_chain(_pem_file(d, "chain.pem", chain), _pem_file(d, "key.pem", key),
                            password)


def load_keystore(ctx: ssl.SSLContext, get, required: bool = True) -> None:
    """Load the key and certificate chain: ``ssl.keystore.location`` (a PEM file holding the
    key and the chain, or a PKCS12 store with ``ssl.keystore.type=PKCS12`` and
    ``ssl.keystore.password``) or inline ``ssl.keystore.key`` + ``ssl.keystore.certificate.chain``
    (librdkafka's ``ssl.certificate.location`` + ``ssl.key.location`` for client settings).
    ``get(name)`` looks a setting up."""
    password = get("ssl.key.password")
    if _store_type(get, "keystore") == "PKCS12":
        from cryptography.hazmat.primitives import serialization as ser

        key, certs = pkcs12_store(get, "keystore")
        if key is None or not certs:
            raise ConfigError(f"PKCS12 keystore {get('ssl.keystore.location')} holds no key "
                              "and certificate")
        _load_pem_chain(ctx, key.private_bytes(ser.Encoding.PEM, ser.PrivateFormat.PKCS8,
                                               ser.NoEncryption()).decode(),
                        "".join(c.public_bytes(ser.Encoding.PEM).decode() for c in certs), None)
    elif get("ssl.keystore.key"):
        _load_pem_chain(ctx, get("ssl.keystore.key"),
                        get("ssl.keystore.certificate.chain") or "", password)
    elif get("ssl.keystore.location"):
        path = get("ssl.keystore.location")
        _from_file("ssl.keystore.location", path, lambda: ctx.load_cert_chain(path,
                                                                              password=password))
    elif get("ssl.certificate.location"):
        cert, key = get("ssl.certificate.location"), get("ssl.key.location")
        _from_file("ssl.certificate.location/ssl.key.location", f"{cert} {key or ''}".strip(),
                   lambda: ctx.load_cert_chain(cert, key, password))
    elif required:
        raise ConfigError("TLS needs ssl.keystore.location or ssl.keystore.key")


def load_truststore(ctx: ssl.SSLContext, get) -> None:
    if _store_type(get, "truststore") == "PKCS12":
        from cryptography.hazmat.primitives.serialization import Encoding

        _key, certs = pkcs12_store(get, "truststore")
        ctx.load_verify_locations(cadata="".join(c.public_bytes(Encoding.PEM).decode()
                                                 for c in certs))
    elif get("ssl.truststore.certificates"):
        ctx.load_verify_locations(cadata=get("ssl.truststore.certificates").replace("\\n", "\n"))
    elif get("ssl.truststore.location") or get("ssl.ca.location"):
        setting = "ssl.truststore.location" if get("ssl.truststore.location") else "ssl.ca.location"
        path = get(setting)
        _from_file(setting, path, lambda: ctx.load_verify_locations(cafile=path))


def server_ssl_context(config, listener: str) -> ssl.SSLContext:
    get = _lookup(config, listener)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        load_keystore(ctx, get)
        load_truststore(ctx, get)
    except (OSError, ssl.SSLError, ConfigError) as e:
        raise ConfigError(f"listener {listener}: cannot load TLS keys or certificates: {e}") \
            from None
    auth = (get("ssl.client.auth") or "none").lower()
    if auth not in _CLIENT_AUTH:
        raise ConfigError(f"ssl.client.auth must be none, requested or required, not {auth}")
    ctx.verify_mode = _CLIENT_AUTH[auth]
    versions = [v.strip() for v in (get("ssl.enabled.protocols") or "TLSv1.2,TLSv1.3").split(",")
                if v.strip()]
    unknown = [v for v in versions if v not in _TLS_VERSIONS]
    if unknown or not versions:
        raise ConfigError(f"ssl.enabled.protocols: unsupported {unknown or versions}")
    ctx.minimum_version = min(_TLS_VERSIONS[v] for v in versions)
    ctx.maximum_version = max(_TLS_VERSIONS[v] for v in versions)
    if get("ssl.cipher.suites"):
        try:
            ctx.set_ciphers(":".join(c.strip() for c in get("ssl.cipher.suites").split(",")))
        except ssl.SSLError:
            raise ConfigError(f"ssl.cipher.suites: no usable cipher in "
                              f"{get('ssl.cipher.suites')}") from None
    return ctx


def client_ssl_context(get) -> ssl.SSLContext:
    """A client's TLS context from Kafka client settings (``get(name)`` looks one up): the
    truststore, an optional keystore for a client certificate, and host name checking unless
    ``ssl.endpoint.identification.algorithm`` is empty."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = (get("ssl.endpoint.identification.algorithm") or "https") == "https"
    load_truststore(ctx, get)
    load_keystore(ctx, get, required=False)
    return ctx


def inter_broker_ssl_context(config, listener: str) -> ssl.SSLContext:
    """What this broker uses to reach another broker's TLS listener: the listener's truststore,
    and its own keystore as client certificate."""
    return client_ssl_context(_lookup(config, listener))


def distinguished_name(peercert: dict) -> str:
    """A certificate subject in RFC 2253 form (most specific first), as Java's
    X500Principal.getName() gives it to Kafka's principal builder."""
    rdns = []
    for rdn in reversed(peercert.get("subject", ())):
        parts = []
        for key, value in rdn:
            value = re.sub(r'([,+"\\<>;=])', r"\\\1", value)
            if value[:1] in (" ", "#"):
                value = "\\" + value
            parts.append(f"{_DN_KEYWORDS.get(key, key)}={value}")
        rdns.append("+".join(parts))
    return ",".join(rdns)


_RULE = re.compile(r"RULE:((?:\\/|[^/])*)/((?:\\/|[^/])*)/([LU]?)")


def parse_mapping_rules(text: str | None) -> list:
    """``ssl.principal.mapping.rules``: ``RULE:pattern/replacement/[L|U]`` entries and
    ``DEFAULT`` (the whole distinguished name), tried in order."""
    rules, rest = [], (text or "DEFAULT").strip()
    while rest:
        if rest.startswith("DEFAULT"):
            rules.append(None)
            rest = rest[len("DEFAULT"):]
        else:
            m = _RULE.match(rest)
            if m is None:
                raise ConfigError(f"ssl.principal.mapping.rules: cannot parse {rest!r}")
            pattern, repl, case = (g.replace("\\/", "/") for g in m.groups())
            rules.append((re.compile(pattern), re.sub(r"\$(\d)", r"\\\1", repl), case))
            rest = rest[m.end():]
        rest = rest.lstrip().removeprefix(",").lstrip()
    return rules


def map_principal(dn: str, rules) -> str:
    for rule in rules:
        if rule is None:
            return dn
        pattern, repl, case = rule
        if pattern.fullmatch(dn):
            name = pattern.sub(repl, dn)
            return name.lower() if case == "L" else name.upper() if case == "U" else name
    raise ValueError(f"no ssl.principal.mapping.rules rule matches {dn}")


class ListenerSecurity:
    """What a connection needs to know about its listener."""

    def __init__(self, config, endpoint: Endpoint):
        self.name = endpoint.listener
        self.protocol = endpoint.security_protocol
        self.sasl = self.protocol in SASL_PROTOCOLS
        self.tls = self.protocol in TLS_PROTOCOLS
        self.ssl_context = server_ssl_context(config, self.name) if self.tls else None
        # The server keeps ``ssl_context``; every handshake switches to ``current_context``,
        # which a reload of the keystore or truststore replaces (broker.tls_reload).
        self.current_context = self.ssl_context
        self.tls_settings = tls_settings(config, self.name)
        if self.tls:
            self.ssl_context.sni_callback = self._use_current_context
        self.mapping_rules = parse_mapping_rules(
            listener_value(config, self.name, "ssl.principal.mapping.rules"))
        self.mechanisms = [m.strip().upper() for m in (listener_value(
            config, self.name, "sasl.enabled.mechanisms") or "GSSAPI").split(",") if m.strip()]
        self.reauth_ms = int(listener_value(config, self.name, "connections.max.reauth.ms") or 0)


    def _use_current_context(self, ssl_object, _server_name, ctx):
        if self.current_context is not ctx:
            ssl_object.context = self.current_context


def tls_settings(config, listener: str) -> tuple:
    """The values of a listener's reloadable TLS settings."""
    return tuple(listener_value(config, listener, name) for name in RELOADABLE_TLS)


class ConnectionSecurity:
    """One connection's principal and, on SASL listeners, the exchange under way. Where the
    connection stands (authenticating, bare tokens, authenticated) is the connection core's
    state (`broker.connection`), changed by the events below."""

    __slots__ = ("listener", "principal", "mechanism", "exchange", "expires_at")

    def __init__(self, listener: ListenerSecurity):
        self.listener = listener
        self.principal = ANONYMOUS
        self.mechanism = None
        self.exchange = None  # the SASL server exchange under way
        self.expires_at = None  # deadline of a SASL session (KIP-368), on the core's clock

    def on_tls_handshake(self, ssl_object) -> None:
        """A TLS client's principal is its certificate subject (when it sent one)."""
        cert = ssl_object.getpeercert() if ssl_object is not None else None
        if cert and not self.listener.sasl:
            self.principal = "User:" + map_principal(distinguished_name(cert),
                                                     self.listener.mapping_rules)


# -- what a request does to its connection, besides its response (Kafka's ResponseAction) ----------
class Throttle:
    """Read nothing more from the client for ``ms`` (a quota's throttle time, KIP-219)."""

    __slots__ = ("ms",)

    def __init__(self, ms: int):
        self.ms = ms


class CloseAfter:
    """Close the connection ``delay_s`` after the responses queued so far are written (a failed
    authentication); later requests are not read."""

    __slots__ = ("delay_s",)

    def __init__(self, delay_s: float = 0.0):
        self.delay_s = delay_s


class BareTokens:
    """After SaslHandshake v0: the next frames are bare SASL tokens, not requests."""

    __slots__ = ()


class Authenticated:
    """The SASL exchange succeeded: the connection serves ``principal`` (for
    ``connections.max.reauth.ms`` of the listener, when set)."""

    __slots__ = ("principal",)

    def __init__(self, principal: str):
        self.principal = principal


class Reply:
    """A handler's response (or `NO_RESPONSE`) with the event it brings about on its connection;
    a handler with no such event returns the bare response."""

    __slots__ = ("response", "event")

    def __init__(self, response, event):
        self.response = response
        self.event = event
