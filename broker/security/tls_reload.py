"""A TLS listener's keystore and truststore changed at run time, as Kafka allows: AlterConfigs /
IncrementalAlterConfigs on this broker's resource with ``listener.name.<l>.ssl.keystore.*`` or
``listener.name.<l>.ssl.truststore.*``. The new stores are checked first (they must load, and
the new certificate must keep the old one's subject and subject alternative names unless
``ssl.allow.dn.changes`` / ``ssl.allow.san.changes``); a refused change is answered
INVALID_REQUEST as Kafka does. Once stored, new connections get the new context; connections
already open keep theirs.
"""
from __future__ import annotations

import logging
import re
from typing import Any, Protocol

from josefk.broker.config import DEFAULTS, BrokerConfig, ConfigError
from josefk.broker.security.listeners import (RELOADABLE_TLS, listener_value, pkcs12_store,
                                              server_ssl_context, tls_settings)

log = logging.getLogger("josefk.tls")

_PREFIXED = re.compile(r"listener\.name\.[^.]+\.(.+)")


class Refused(ValueError):
    """A change of a listener's stores that Kafka refuses (answered INVALID_REQUEST)."""


def reloadable(name: str) -> bool:
    """A listener-prefixed keystore or truststore setting."""
    m = _PREFIXED.fullmatch(name)
    return m is not None and m.group(1) in RELOADABLE_TLS


class Reloading(Protocol):
    """What checking new TLS stores needs: the static config, the cluster-wide dynamic layer
    (``dynamic.cluster_default``) and the listeners."""

    @property
    def config(self) -> BrokerConfig: ...

    @property
    def dynamic(self) -> Any: ...

    @property
    def listeners(self) -> list: ...


class _Layers:
    """The broker config as it would be with ``per_broker`` as this broker's dynamic layer."""

    def __init__(self, broker: Reloading, per_broker: dict):
        dyn = broker.dynamic
        self.props = {**DEFAULTS, **broker.config.explicit, **dyn.cluster_default, **per_broker}

    def get(self, name: str, default=None):
        v = self.props.get(name)
        return default if v is None or v == "" else v


def check(broker: Reloading, resource_name: str, overrides: dict) -> None:
    """Raise `Refused` when the new overrides of broker ``resource_name``
    ("" = the cluster default) would give a TLS listener stores that do not load or a
    certificate Kafka would refuse."""
    names = sorted(n for n in overrides if reloadable(n))
    where = f"ConfigResource(type=BROKER, name='{resource_name}')"
    if resource_name == "" and names:
        raise Refused(f"Invalid config value for resource {where}: Cannot update these configs "
                      f"at default cluster level, broker id must be specified: {', '.join(names)}")
    new = _Layers(broker, overrides)
    for listener in broker.listeners:
        if not listener.tls or tls_settings(new, listener.name) == listener.tls_settings:
            continue
        try:
            server_ssl_context(new, listener.name)
            _same_identity(broker.config, new, listener.name)
        except ConfigError as e:
            raise Refused(f"Invalid config value for resource {where}: Validation of dynamic "
                          f"config update of SSLFactory failed: {e}") from None


def _same_identity(old_config, new_config, listener: str) -> None:
    old, new = _certificate(old_config, listener), _certificate(new_config, listener)
    if old is None or new is None:
        return
    get = lambda n: (listener_value(new_config, listener, n) or "false").lower()  # noqa: E731
    if get("ssl.allow.dn.changes") != "true" and old.subject != new.subject:
        raise ConfigError(f"Keystore DistinguishedName does not match: existing="
                          f"{old.subject.rfc4514_string()}, new={new.subject.rfc4514_string()}")
    if get("ssl.allow.san.changes") != "true" and _sans(old) != _sans(new):
        raise ConfigError(f"Keystore SubjectAltName does not match: existing={_sans(old)}, "
                          f"new={_sans(new)}")


def _certificate(config, listener: str):
    """The listener's own certificate (the first of its keystore's chain), or None."""
    from cryptography import x509

    get = lambda n: listener_value(config, listener, n)  # noqa: E731
    if (get("ssl.keystore.type") or "PEM").upper() == "PKCS12":
        return pkcs12_store(get, "keystore")[1][0]
    if get("ssl.keystore.certificate.chain"):
        pem = get("ssl.keystore.certificate.chain").replace("\\n", "\n").encode()
    elif get("ssl.keystore.location"):
        with open(get("ssl.keystore.location"), "rb") as f:
            pem = f.read()
    else:
        return None
    try:
        return x509.load_pem_x509_certificates(pem)[0]
    except ValueError as e:
        raise ConfigError(f"cannot read the keystore's certificate: {e}") from None


def _sans(cert) -> list:
    from cryptography import x509

    try:
        ext = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName)
    except x509.ExtensionNotFound:
        return []
    return sorted(str(n.value) for n in ext.value)


def apply(config, listeners) -> None:
    """Give every TLS listener whose stores changed in the broker config a new context."""
    for listener in listeners:
        settings = tls_settings(config, listener.name)
        if not listener.tls or settings == listener.tls_settings:
            continue
        try:
            listener.current_context = server_ssl_context(config, listener.name)
        except ConfigError as e:  # checked before it was stored; a store may have gone since
            log.error("listener %s keeps its TLS keys: %s", listener.name, e)
            continue
        listener.tls_settings = settings
        log.info("listener %s: TLS keystore and truststore reloaded", listener.name)
