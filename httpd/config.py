"""Service configuration as Confluent's services read it: a ``.properties`` file plus overrides,
``listeners`` (``http://host:port,https://host:port``), and the Kafka client settings under a
prefix (``kafkastore.`` for the registry, ``client.`` for the REST proxy) turned into
confluent-kafka's (librdkafka's) settings."""
from __future__ import annotations

import logging
import os
import re
import socket
import tempfile
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from josefk.broker.config import ConfigError, parse_properties
from josefk.broker.security.sasl import client_credentials
from josefk.broker.security.listeners import pkcs12_store


@dataclass(frozen=True)
class Listener:
    scheme: str  # http or https
    host: str
    port: int

    @property
    def url(self) -> str:
        return f"{self.scheme}://{self.host}:{self.port}"


class ServiceConfig:
    """Properties with defaults; ``get`` answers a property's value as a string (or None)."""

    def __init__(self, props: dict, defaults: dict):
        self.props = {**defaults, **{k: str(v) for k, v in props.items()}}

    @classmethod
    def load(cls, path: str | None, overrides: dict, defaults: dict) -> "ServiceConfig":
        props = parse_properties(Path(path).read_text()) if path else {}
        return cls({**props, **overrides}, defaults)

    def get(self, name: str, default=None):
        value = self.props.get(name)
        return default if value is None or value == "" else value

    def int(self, name: str, default: int = 0) -> int:
        try:
            return int(self.get(name, default))
        except ValueError:
            raise ConfigError(f"Invalid value {self.get(name)} for configuration {name}: Not a "
                              "number of type INT") from None

    def bool(self, name: str, default: bool = False) -> bool:
        return str(self.get(name, default)).lower() == "true"

    def list(self, name: str) -> list[str]:
        return [v.strip() for v in (self.get(name) or "").split(",") if v.strip()]

    def listeners(self) -> list[Listener]:
        out = []
        for url in self.list("listeners"):
            parts = urlsplit(url)
            if parts.scheme not in ("http", "https") or not parts.port:
                raise ConfigError(f"listeners: {url!r} is not http(s)://host:port")
            out.append(Listener(parts.scheme, parts.hostname or "0.0.0.0", parts.port))
        if not out:
            raise ConfigError("listeners is empty")
        return out

    def advertised_host(self, listener: Listener) -> str:
        """``host.name`` (how other instances and clients reach this one), else the listener's
        host, else this machine's name."""
        host = self.get("host.name")
        if host:
            return host
        return listener.host if listener.host not in ("0.0.0.0", "::", "") else socket.gethostname()

    def prefixed(self, prefix: str) -> dict:
        """Every property under ``prefix``, with the prefix removed."""
        return {k[len(prefix):]: v for k, v in self.props.items() if k.startswith(prefix)}


def kafka_security(config: ServiceConfig, prefix: str) -> dict:
    """The Java-named Kafka client settings under ``prefix`` (``security.protocol``,
    ``sasl.*``, ``ssl.*``), as Confluent's services take them."""
    return {k: v for k, v in config.prefixed(prefix).items()
            if k == "security.protocol" or k.startswith(("sasl.", "ssl."))}


def librdkafka_settings(java: dict) -> dict:
    """confluent-kafka settings for Java-named Kafka client settings: ``sasl.jaas.config``
    becomes ``sasl.username``/``sasl.password``, PEM or PKCS12 stores become librdkafka's
    locations (a PKCS12 truststore is written out as PEM, which librdkafka needs)."""
    out = {}
    protocol = java.get("security.protocol", "PLAINTEXT").upper()
    out["security.protocol"] = protocol
    if protocol.startswith("SASL"):
        out["sasl.mechanism"] = java.get("sasl.mechanism", "GSSAPI").upper()
        credentials = client_credentials(java)
        if credentials:
            out["sasl.username"], out["sasl.password"] = credentials
    if protocol in ("SSL", "SASL_SSL"):
        trust_type = java.get("ssl.truststore.type", "PEM").upper()
        if trust_type == "PKCS12":
            from cryptography.hazmat.primitives.serialization import Encoding

            _key, certs = pkcs12_store(java.get, "truststore")
            fd, path = tempfile.mkstemp(prefix="truststore-", suffix=".pem")
            with os.fdopen(fd, "w") as f:
                f.write("".join(c.public_bytes(Encoding.PEM).decode() for c in certs))
            out["ssl.ca.location"] = path
        elif java.get("ssl.truststore.location") or java.get("ssl.ca.location"):
            out["ssl.ca.location"] = java.get("ssl.truststore.location") or java["ssl.ca.location"]
        if java.get("ssl.keystore.location"):
            if java.get("ssl.keystore.type", "PEM").upper() == "PKCS12":
                out["ssl.keystore.location"] = java["ssl.keystore.location"]
                out["ssl.keystore.password"] = java.get("ssl.keystore.password", "")
            else:  # one PEM file with the key and the certificate chain
                out["ssl.certificate.location"] = out["ssl.key.location"] = \
                    java["ssl.keystore.location"]
        if java.get("ssl.key.password"):
            out["ssl.key.password"] = java["ssl.key.password"]
        if java.get("ssl.endpoint.identification.algorithm", "https") == "":
            out["ssl.endpoint.identification.algorithm"] = "none"
    return out


# What differs between two reports of one cause: librdkafka's time in a state, its count of
# suppressed repeats.
_RETRY_DETAILS = re.compile(r"\s*\(after \d+ms in state \w+(, \d+ identical error\(s\) "
                            r"suppressed)?\)|\d+ms")


class OncePerCause(logging.Filter):
    """librdkafka's log lines (``logger`` of confluent-kafka's clients: facility, client name,
    message), each cause once: a broker out of reach is reported once, not on every retry of
    every client of the service."""

    def __init__(self):
        super().__init__()
        self.seen: set[tuple] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args if isinstance(record.args, tuple) else ()
        if len(args) != 3:
            return True
        facility, _client, message = args
        cause = (record.levelno, facility, _RETRY_DETAILS.sub("", str(message)))
        if cause in self.seen:
            return False
        self.seen.add(cause)
        return True


def client_logging(name: str) -> dict:
    """The confluent-kafka setting that sends a service's clients' librdkafka logs to the
    logger ``name`` (not to stderr, once per cause)."""
    logger = logging.getLogger(name)
    if not any(isinstance(f, OncePerCause) for f in logger.filters):
        logger.addFilter(OncePerCause())
    return {"logger": logger}


def kafka_error_text(e: Exception) -> str:
    """A client's failure in librdkafka's words (``Failed to get metadata: Local: Broker
    transport failure``), not KafkaError's repr."""
    err = e.args[0] if e.args else None
    return err.str() if hasattr(err, "str") else str(e)


def add_service_command(sub, kv, name: str, help: str, properties: str, run_command) -> None:
    """``josefk <name> [<properties> file] [--override KEY=VALUE ...]``."""
    p = sub.add_parser(name, help=help)
    p.add_argument("config", nargs="?", help=f"{properties} file")
    p.add_argument("--override", action="append", type=kv, default=[], metavar="KEY=VALUE",
                   help=f"set any {properties} property (repeatable)")
    p.add_argument("--log-level", default="INFO", help="DEBUG, INFO, WARNING or ERROR")
    p.set_defaults(func=run_command)
