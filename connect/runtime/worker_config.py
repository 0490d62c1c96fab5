"""A worker's settings with Apache Kafka Connect's names (WorkerConfig, DistributedConfig,
StandaloneConfig), parsed and checked by a ConfigDef, and the Kafka clients' settings the
worker derives from them: the worker-wide client settings (``bootstrap.servers``,
``security.protocol``, ``ssl.*``, ``sasl.*``, ...), then the ``producer.`` / ``consumer.`` /
``admin.`` prefixed ones, in Java's names turned into confluent-kafka's (librdkafka's)."""
from __future__ import annotations

import logging
from urllib.parse import urlsplit

from josefk.connect.api.config import ConfigDef, Importance, Range, ValidString
from josefk.connect.api.config import Type as T
from josefk.httpd.config import librdkafka_settings

log = logging.getLogger("josefk.connect.worker")

JSON_CONVERTER = "org.apache.kafka.connect.json.JsonConverter"
SIMPLE_HEADER_CONVERTER = "org.apache.kafka.connect.storage.SimpleHeaderConverter"

# Settings every Kafka client of the worker shares, as Connect passes them on.
_CLIENT_SHARED = ("bootstrap.servers", "client.dns.lookup", "security.protocol",
                  "metadata.max.age.ms", "reconnect.backoff.ms", "reconnect.backoff.max.ms",
                  "retry.backoff.ms", "request.timeout.ms", "connections.max.idle.ms",
                  "socket.connection.setup.timeout.ms", "receive.buffer.bytes",
                  "send.buffer.bytes")
# Java client settings with another name in librdkafka.
_RENAMED = {"max.request.size": "message.max.bytes",
            "max.in.flight.requests.per.connection": "max.in.flight",
            "fetch.max.wait.ms": "fetch.wait.max.ms",
            # the Java clients refresh all metadata (and a regex subscription's topics) this often
            "metadata.max.age.ms": "topic.metadata.refresh.interval.ms",
            "buffer.memory": None, "max.block.ms": None, "max.poll.records": None,
            "key.serializer": None, "value.serializer": None, "key.deserializer": None,
            "value.deserializer": None, "interceptor.classes": None,
            "partitioner.class": None, "client.dns.lookup": None, "retry.backoff.max.ms": None,
            "default.api.timeout.ms": None, "exclude.internal.topics": None,
            "security.providers": None, "metric.reporters": None,
            "auto.include.jmx.reporter": None, "connections.max.idle.ms": None,
            "send.buffer.bytes": "socket.send.buffer.bytes",
            "receive.buffer.bytes": "socket.receive.buffer.bytes"}
_SECURITY_PREFIXES = ("ssl.", "sasl.")


def _common(d: ConfigDef) -> ConfigDef:
    return (d
        .define("bootstrap.servers", T.LIST, "localhost:9092", importance=Importance.HIGH,
                documentation="The Kafka cluster's host:port pairs the worker connects to.")
        .define("key.converter", T.CLASS, JSON_CONVERTER, importance=Importance.HIGH,
                documentation="Converter class for record keys (a connector may override it).")
        .define("value.converter", T.CLASS, JSON_CONVERTER, importance=Importance.HIGH,
                documentation="Converter class for record values.")
        .define("header.converter", T.CLASS, SIMPLE_HEADER_CONVERTER,
                importance=Importance.LOW, documentation="Converter class for headers.")
        .define("task.shutdown.graceful.timeout.ms", T.LONG, 5000, importance=Importance.LOW,
                documentation="How long to wait for tasks to stop gracefully, in total.")
        .define("offset.flush.interval.ms", T.LONG, 60000, importance=Importance.LOW,
                documentation="How often source offsets are committed and sink tasks flushed.")
        .define("offset.flush.timeout.ms", T.LONG, 5000, importance=Importance.LOW,
                documentation="How long an offset flush waits for outstanding records.")
        .define("listeners", T.LIST, "http://:8083", importance=Importance.LOW,
                documentation="The REST API's listeners: http(s)://host:port, comma-separated.")
        .define("rest.advertised.host.name", T.STRING, None, importance=Importance.LOW,
                documentation="The host name other workers and clients reach this one at.")
        .define("rest.advertised.port", T.INT, None, importance=Importance.LOW,
                documentation="The port other workers and clients reach this one at.")
        .define("rest.advertised.listener", T.STRING, None, importance=Importance.LOW,
                documentation="http or https: which listener to advertise.")
        .define("admin.listeners", T.LIST, None, importance=Importance.LOW,
                documentation="Where /admin (the log levels) is served instead: unset, on "
                              "the listeners; empty, nowhere.")
        .define("access.control.allow.origin", T.STRING, "", importance=Importance.LOW,
                documentation="Origins allowed cross-origin access to the REST API (* for "
                              "any); empty: none.")
        .define("access.control.allow.methods", T.STRING, "", importance=Importance.LOW,
                documentation="Methods allowed cross-origin (default GET,POST,HEAD).")
        .define("rest.extension.classes", T.LIST, "", importance=Importance.LOW,
                documentation="REST extensions (basic authentication).")
        .define("plugin.path", T.LIST, None, importance=Importance.LOW,
                documentation="Accepted for compatibility: Python connectors are found through "
                              "the josefk.connect.plugins entry points and dotted paths.")
        .define("connector.client.config.override.policy", T.STRING, "All",
                ValidString.in_("All", "None", "Principal"), importance=Importance.MEDIUM,
                documentation="Which producer./consumer./admin.override.* settings a connector "
                              "may set: All, None, or Principal (only sasl.jaas.config, "
                              "security.protocol and sasl.mechanism).")
        .define("client.id", T.STRING, "", importance=Importance.LOW,
                documentation="The Kafka clients' client.id prefix.")
        .define("security.protocol", T.STRING, "PLAINTEXT", importance=Importance.MEDIUM,
                documentation="How the worker's clients talk to the brokers.")
        .define("topic.creation.enable", T.BOOLEAN, True, importance=Importance.LOW,
                documentation="Whether source connectors may create their topics (KIP-158).")
        .define("metrics.port", T.INT, None, importance=Importance.LOW,
                documentation="A port for Prometheus metrics of its own (default: /metrics "
                              "on the REST listener).")
        .define("exactly.once.source.support", T.STRING, "disabled",
                ValidString.in_ignore_case("disabled", "preparing", "enabled"),
                importance=Importance.HIGH,
                documentation="KIP-618: source tasks write records and offsets in one "
                              "transaction (distributed mode)."))


def distributed_def() -> ConfigDef:
    return (_common(ConfigDef())
        .define("group.id", T.STRING, importance=Importance.HIGH,
                documentation="The Connect cluster's group.")
        .define("config.storage.topic", T.STRING, importance=Importance.HIGH,
                documentation="The topic of connector and task configurations.")
        .define("config.storage.replication.factor", T.SHORT, 3, importance=Importance.LOW,
                documentation="Its replication factor (-1: the brokers' default).")
        .define("offset.storage.topic", T.STRING, importance=Importance.HIGH,
                documentation="The topic of source connectors' offsets.")
        .define("offset.storage.replication.factor", T.SHORT, 3, importance=Importance.LOW,
                documentation="Its replication factor (-1: the brokers' default).")
        .define("offset.storage.partitions", T.INT, 25, importance=Importance.LOW,
                documentation="Its partitions (-1: the brokers' default).")
        .define("status.storage.topic", T.STRING, importance=Importance.HIGH,
                documentation="The topic of connector and task statuses.")
        .define("status.storage.replication.factor", T.SHORT, 3, importance=Importance.LOW,
                documentation="Its replication factor (-1: the brokers' default).")
        .define("status.storage.partitions", T.INT, 5, importance=Importance.LOW,
                documentation="Its partitions (-1: the brokers' default).")
        .define("session.timeout.ms", T.INT, 10000, importance=Importance.HIGH,
                documentation="The group session timeout.")
        .define("heartbeat.interval.ms", T.INT, 3000, importance=Importance.HIGH,
                documentation="The heartbeat interval.")
        .define("rebalance.timeout.ms", T.INT, 60000, importance=Importance.HIGH,
                documentation="The most a rebalance may take.")
        .define("worker.sync.timeout.ms", T.INT, 3000, importance=Importance.MEDIUM,
                documentation="How long a worker waits to catch up with the config topic.")
        .define("worker.unsync.backoff.ms", T.INT, 300000, importance=Importance.MEDIUM,
                documentation="How long an out-of-sync worker waits before rejoining.")
        .define("connect.protocol", T.STRING, "sessioned",
                ValidString.in_("eager", "compatible", "sessioned"),
                importance=Importance.LOW,
                documentation="The group sub-protocol: eager, compatible or sessioned.")
        .define("scheduled.rebalance.max.delay.ms", T.INT, 300000, Range.at_least(0),
                importance=Importance.LOW,
                documentation="How long lost connectors and tasks wait for their worker to "
                              "come back before they are reassigned.")
        .define("inter.worker.key.generation.algorithm", T.STRING, "HmacSHA256",
                importance=Importance.LOW,
                documentation="The session key's algorithm.")
        .define("inter.worker.key.ttl.ms", T.INT, 3600000, importance=Importance.LOW,
                documentation="How long a session key lives.")
        .define("inter.worker.signature.algorithm", T.STRING, "HmacSHA256",
                importance=Importance.LOW, documentation="The requests' signature algorithm.")
        .define("inter.worker.verification.algorithms", T.LIST, "HmacSHA256",
                importance=Importance.LOW, documentation="Signature algorithms accepted."))


def standalone_def() -> ConfigDef:
    return (_common(ConfigDef())
        .define("offset.storage.file.filename", T.STRING, importance=Importance.HIGH,
                documentation="The file source connectors' offsets are kept in."))


class WorkerConfig:
    """The worker's parsed settings: ``config["group.id"]``; ``props`` as given."""

    def __init__(self, props: dict[str, str], distributed: bool):
        self.props, self.distributed = dict(props), distributed
        self.definition = distributed_def() if distributed else standalone_def()
        self.values = self.definition.parse(self.props)
        self.worker_id = ""  # host:port, known once the REST API is bound (``advertise``)
        self.rest_url = ""

    def __getitem__(self, name: str):
        return self.values[name]

    def get(self, name: str, default=None):
        return self.values.get(name, default)

    @property
    def exactly_once_source(self) -> bool:
        return self.distributed and self["exactly.once.source.support"].lower() == "enabled"

    def advertise(self, bound_urls: list[str]) -> None:
        """This worker's REST URL and id (``host:port``) from the URLs its listeners bound,
        as ``rest.advertised.*`` say."""
        wanted = self.get("rest.advertised.listener")
        url = next((u for u in bound_urls if wanted and u.startswith(wanted + ":")),
                   bound_urls[0])
        parts = urlsplit(url)
        host = self.get("rest.advertised.host.name") or parts.hostname
        if host in ("0.0.0.0", "::", ""):
            host = "localhost"
        port = self.get("rest.advertised.port") or parts.port
        self.rest_url = f"{parts.scheme}://{host}:{port}/"
        self.worker_id = f"{host}:{port}"

    def client_settings(self, kind: str, overrides: dict[str, str] | None = None) -> dict:
        """confluent-kafka settings for the worker's ``kind`` client ("producer",
        "consumer" or "admin"): the shared settings, then ``<kind>.*``, then a connector's
        allowed ``<kind>.override.*`` (``overrides``, prefix removed)."""
        java = {"bootstrap.servers": self["bootstrap.servers"]}
        java.update({k: v for k, v in self.props.items()
                     if k in _CLIENT_SHARED or k.startswith(_SECURITY_PREFIXES)})
        java.update({k[len(kind) + 1:]: v for k, v in self.props.items()
                     if k.startswith(kind + ".")})
        java.update(overrides or {})
        return to_librdkafka(java)

    def check_overrides(self, kind: str, overrides: dict[str, str]) -> list[str]:
        """The names of ``<kind>.override.*`` settings the override policy forbids."""
        policy = self["connector.client.config.override.policy"]
        if policy == "All":
            return []
        if policy == "None":
            return sorted(overrides)
        allowed = {"sasl.jaas.config", "sasl.mechanism", "security.protocol"}
        return sorted(k for k in overrides if k not in allowed)


def to_librdkafka(java: dict[str, str]) -> dict:
    """Java-named client settings in confluent-kafka's names: security through
    httpd's translation, the few renamed ones renamed, Java-only ones left out."""
    out = librdkafka_settings(java)
    for key, value in java.items():
        if key == "security.protocol" or key.startswith(_SECURITY_PREFIXES):
            continue
        if key in _RENAMED:
            if _RENAMED[key] is not None:
                out[_RENAMED[key]] = value
            continue
        out[key] = ",".join(value) if isinstance(value, list) else value
    return out

