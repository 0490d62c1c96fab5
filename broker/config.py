"""Broker configuration under Kafka's property names (server.properties form, plus overrides),
and how josefk's processes fail: one line, one exit code per kind of failure."""
from __future__ import annotations

import logging
import sys
from pathlib import Path

log = logging.getLogger("josefk.config")

# The exit codes of josefk's processes (docs/configuration.md#when-it-does-not-start):
# the command line or the configuration is wrong (argparse's code too), or the process could
# not do its work (a port in use, a directory it cannot write, a cluster out of reach).
EXIT_CONFIG = 2
EXIT_RUNTIME = 1


def fail(command: str, message: str, code: int) -> int:
    """Print a failure as its one line, ``josefk <command>: <message>``; answer the exit code."""
    print(f"josefk {command}: {message}", file=sys.stderr, flush=True)
    return code


def os_error_text(e: OSError) -> str:
    """An OSError as a user reads it: ``Permission denied: /data``, not Python's ``[Errno 13]
    Permission denied: '/data'``."""
    text = e.strerror or str(e)
    return f"{text}: {e.filename}" if e.filename else text

# Defaults follow Apache Kafka's. Values are kept as strings, like a properties file; typed
# accessors convert them.
DEFAULTS = {
    "node.id": "1",
    "listeners": "PLAINTEXT://127.0.0.1:9092",
    "advertised.listeners": "",
    "log.dirs": "/tmp/josefk-logs",
    "zookeeper.connect": "",
    "num.partitions": "1",
    "default.replication.factor": "1",
    "auto.create.topics.enable": "true",
    "delete.topic.enable": "true",
    "socket.request.max.bytes": "104857600",
    "connections.max.idle.ms": "600000",
    "max.connections": "2147483647",
    "max.connections.per.ip": "2147483647",
    # KIP-578's name; Kafka leaves it unbounded, we refuse what one broker was not tested to
    # serve (memory, start-up time) before persisting it
    "max.broker.partitions": "100000",
    "queued.max.request.bytes": "-1",
    "message.max.bytes": "1048588",
    "min.insync.replicas": "1",
    "log.segment.bytes": "1073741824",
    "log.roll.ms": "",
    "log.roll.hours": "168",
    "log.retention.ms": "",
    "log.retention.minutes": "",
    "log.retention.hours": "168",
    "log.retention.bytes": "-1",
    "log.retention.check.interval.ms": "300000",
    "log.index.interval.bytes": "4096",
    "log.cleanup.policy": "delete",
    "log.cleaner.enable": "true",
    "log.cleaner.backoff.ms": "15000",
    "log.cleaner.threads": "1",
    "log.cleaner.delete.retention.ms": "86400000",
    "log.cleaner.min.compaction.lag.ms": "0",
    "log.message.timestamp.type": "CreateTime",
    "log.message.timestamp.difference.max.ms": "9223372036854775807",
    "log.message.timestamp.before.max.ms": "9223372036854775807",
    "log.message.timestamp.after.max.ms": "9223372036854775807",
    "log.message.downconversion.enable": "true",
    # Deprecated in Kafka 3.0 and ignored since (the log is always v2); accepted for old tools.
    "log.message.format.version": "3.0-IV1",
    "log.cleaner.max.compaction.lag.ms": "9223372036854775807",
    "log.cleaner.min.cleanable.ratio": "0.5",
    "log.segment.delete.delay.ms": "60000",
    "log.index.size.max.bytes": "10485760",
    "log.preallocate": "false",
    "log.local.retention.bytes": "-2",
    "log.local.retention.ms": "-2",
    # Tiered storage (KIP-405; tiered/, docs/tiered-storage.md): off unless enabled
    "remote.log.storage.system.enable": "false",
    "remote.log.manager.task.interval.ms": "30000",
    "remote.log.manager.copy.max.bytes.per.second": "9223372036854775807",
    "remote.log.reader.threads": "10",
    "remote.log.metadata.topic.num.partitions": "50",
    "remote.log.metadata.topic.replication.factor": "3",
    # josefk's object store: "local" (a directory) or "s3" (any S3-compatible endpoint)
    "remote.log.storage.josefk.store": "local",
    "remote.log.storage.josefk.local.dir": "",  # default: remote-storage/ beside the log dirs
    "remote.log.storage.josefk.s3.endpoint": "",  # default: AWS for the region
    "remote.log.storage.josefk.s3.bucket": "",
    "remote.log.storage.josefk.s3.region": "us-east-1",
    "remote.log.storage.josefk.s3.access.key": "",
    "remote.log.storage.josefk.s3.secret.key": "",
    "remote.log.storage.josefk.s3.prefix": "",
    "remote.log.storage.josefk.read.cache.bytes": "67108864",
    "remote.log.storage.josefk.read.chunk.bytes": "1048576",
    "compression.type": "producer",
    "log.flush.interval.messages": "9223372036854775807",
    "log.flush.offset.checkpoint.interval.ms": "60000",
    "offsets.topic.num.partitions": "50",
    "offsets.topic.replication.factor": "3",
    "offsets.topic.segment.bytes": "104857600",
    "offsets.retention.minutes": "10080",
    "offsets.retention.check.interval.ms": "600000",
    "offset.metadata.max.bytes": "4096",
    "group.initial.rebalance.delay.ms": "3000",
    "group.min.session.timeout.ms": "6000",
    "group.max.session.timeout.ms": "1800000",
    "group.max.size": "2147483647",
    # KIP-848: the consumer group protocol beside the classic one (and share groups, below)
    "group.consumer.session.timeout.ms": "45000",
    "group.consumer.min.session.timeout.ms": "45000",
    "group.consumer.max.session.timeout.ms": "60000",
    "group.consumer.heartbeat.interval.ms": "5000",
    "group.consumer.min.heartbeat.interval.ms": "5000",
    "group.consumer.max.heartbeat.interval.ms": "15000",
    "group.consumer.max.size": "2147483647",
    "group.consumer.assignors": "uniform,range",
    "group.consumer.migration.policy": "bidirectional",
    "group.consumer.regex.refresh.interval.ms": "600000",
    "transaction.max.timeout.ms": "900000",
    "transaction.state.log.num.partitions": "50",
    "transaction.state.log.replication.factor": "3",
    "transaction.state.log.min.isr": "2",
    "transaction.state.log.segment.bytes": "104857600",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "10000",
    "transactional.id.expiration.ms": "604800000",
    "transaction.remove.expired.transaction.cleanup.interval.ms": "3600000",
    "producer.id.expiration.ms": "86400000",
    "producer.id.expiration.check.interval.ms": "600000",
    "producer.id.expiration.ms": "86400000",
    "replica.lag.time.max.ms": "30000",
    "unclean.leader.election.enable": "false",
    "controlled.shutdown.enable": "true",
    "controlled.shutdown.max.retries": "3",
    "controlled.shutdown.retry.backoff.ms": "5000",
    "zookeeper.session.timeout.ms": "18000",
    "zookeeper.connection.timeout.ms": "18000",
    "replica.fetch.wait.max.ms": "500",
    "replica.fetch.min.bytes": "1",
    "replica.fetch.max.bytes": "1048576",
    "replica.fetch.response.max.bytes": "10485760",
    "replica.fetch.backoff.ms": "1000",
    "auto.leader.rebalance.enable": "true",
    "leader.imbalance.check.interval.seconds": "300",
    "leader.imbalance.per.broker.percentage": "10",
    "max.incremental.fetch.session.cache.slots": "1000",
    "min.incremental.fetch.session.eviction.ms": "120000",
    # Share groups (KIP-932), served unless turned off ("share" in the rebalance protocols
    # and group.share.enable, Kafka 4.0's switches)
    "group.share.enable": "true",
    "group.coordinator.rebalance.protocols": "classic,consumer,share",
    "group.share.max.size": "200",
    "group.share.session.timeout.ms": "45000",
    "group.share.min.session.timeout.ms": "45000",
    "group.share.max.session.timeout.ms": "60000",
    "group.share.heartbeat.interval.ms": "5000",
    "group.share.min.heartbeat.interval.ms": "5000",
    "group.share.max.heartbeat.interval.ms": "15000",
    "group.share.record.lock.duration.ms": "30000",
    "group.share.min.record.lock.duration.ms": "15000",
    "group.share.max.record.lock.duration.ms": "60000",
    "group.share.delivery.count.limit": "5",
    "group.share.min.delivery.count.limit": "2",
    "group.share.max.delivery.count.limit": "10",
    "group.share.partition.max.record.locks": "2000",
    "group.share.max.partition.max.record.locks": "10000",
    "group.share.max.share.sessions": "2000",
    "share.coordinator.state.topic.num.partitions": "50",
    "share.coordinator.state.topic.replication.factor": "3",
    "share.coordinator.state.topic.min.isr": "2",
    "share.coordinator.state.topic.segment.bytes": "104857600",
    "share.coordinator.snapshot.update.records.per.snapshot": "500",
    "share.coordinator.state.topic.prune.interval.ms": "300000",
    "offsets.commit.required.acks": "-1",
    "offsets.commit.timeout.ms": "5000",
    "broker.rack": "",
    "josefk.metrics.port": "",  # Prometheus endpoint; off unless set
    # KIP-714 client metrics: served with the Prometheus endpoint (josefk.metrics.port) unless off
    "josefk.client.telemetry.enable": "true",
    "telemetry.max.bytes": "1048576",
    "josefk.metrics.host": "127.0.0.1",
    # Tests only: a control endpoint on 127.0.0.1 that injects faults (broker/injection.py)
    "josefk.testing.control.port": "",
    "listener.security.protocol.map":
        "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL",
    "security.inter.broker.protocol": "PLAINTEXT",
    "inter.broker.listener.name": "",
    "sasl.enabled.mechanisms": "GSSAPI",
    # how secrets among stored configs are encrypted (broker/security/password_encoder.py)
    "password.encoder.secret": "",
    "password.encoder.old.secret": "",
    "password.encoder.keyfactory.algorithm": "",
    "password.encoder.cipher.algorithm": "AES/CBC/PKCS5Padding",
    "password.encoder.key.length": "128",
    "password.encoder.iterations": "4096",
    "sasl.mechanism.inter.broker.protocol": "GSSAPI",
    # Kerberos (GSSAPI) login: josefk has none, it keeps and describes these as Kafka does.
    "sasl.kerberos.kinit.cmd": "/usr/bin/kinit",
    "sasl.kerberos.min.time.before.relogin": "60000",
    "sasl.kerberos.principal.to.local.rules": "DEFAULT",
    "sasl.kerberos.ticket.renew.jitter": "0.05",
    "sasl.kerberos.ticket.renew.window.factor": "0.8",
    "connections.max.reauth.ms": "0",
    "connection.failed.authentication.delay.ms": "100",
    "ssl.client.auth": "none",
    "ssl.enabled.protocols": "TLSv1.2,TLSv1.3",
    "ssl.principal.mapping.rules": "DEFAULT",
    "ssl.endpoint.identification.algorithm": "https",
}

# Broker property -> topic-level property it provides the default for.
TOPIC_DEFAULTS = {
    "cleanup.policy": "log.cleanup.policy",
    "segment.bytes": "log.segment.bytes",
    "retention.bytes": "log.retention.bytes",
    "index.interval.bytes": "log.index.interval.bytes",
    "delete.retention.ms": "log.cleaner.delete.retention.ms",
    "min.compaction.lag.ms": "log.cleaner.min.compaction.lag.ms",
    "message.timestamp.type": "log.message.timestamp.type",
    "flush.messages": "log.flush.interval.messages",
    "min.insync.replicas": "min.insync.replicas",
    "max.message.bytes": "message.max.bytes",
    "unclean.leader.election.enable": "unclean.leader.election.enable",
    "message.timestamp.difference.max.ms": "log.message.timestamp.difference.max.ms",
    "message.timestamp.before.max.ms": "log.message.timestamp.before.max.ms",
    "message.timestamp.after.max.ms": "log.message.timestamp.after.max.ms",
    "message.downconversion.enable": "log.message.downconversion.enable",
    "message.format.version": "log.message.format.version",
    "max.compaction.lag.ms": "log.cleaner.max.compaction.lag.ms",
    "min.cleanable.dirty.ratio": "log.cleaner.min.cleanable.ratio",
    "file.delete.delay.ms": "log.segment.delete.delay.ms",
    "segment.index.bytes": "log.index.size.max.bytes",
    "preallocate": "log.preallocate",
    "local.retention.bytes": "log.local.retention.bytes",
    "local.retention.ms": "log.local.retention.ms",
    "compression.type": "compression.type",
}
# Topic-level properties whose default is computed rather than copied.
DERIVED_TOPIC_DEFAULTS = ("retention.ms", "segment.ms")
EXTRA_TOPIC_DEFAULTS = {
    "flush.ms": "9223372036854775807",
    "segment.jitter.ms": "0",
    "follower.replication.throttled.replicas": "",
    "leader.replication.throttled.replicas": "",
    "remote.storage.enable": "false",
    "josefk.remote.delete": "true",
    "josefk.remote.recovery": "false",
    "josefk.remote.readreplica": "",
}
TOPIC_CONFIG_NAMES = (frozenset(TOPIC_DEFAULTS) | frozenset(DERIVED_TOPIC_DEFAULTS)
                      | frozenset(EXTRA_TOPIC_DEFAULTS))

# Numbers Kafka declares LONG (every other numeric broker property is an INT), and the numeric
# properties that have no default (they are derived, or off unless set).
LONG_CONFIGS = frozenset({
    "log.retention.ms", "log.retention.bytes", "log.roll.ms", "log.retention.check.interval.ms",
    "log.cleaner.backoff.ms", "log.cleaner.delete.retention.ms",
    "log.cleaner.min.compaction.lag.ms", "log.cleaner.max.compaction.lag.ms",
    "log.message.timestamp.difference.max.ms", "log.message.timestamp.before.max.ms",
    "log.message.timestamp.after.max.ms", "log.segment.delete.delay.ms",
    "log.flush.interval.messages", "log.local.retention.bytes", "log.local.retention.ms",
    "remote.log.manager.task.interval.ms", "remote.log.storage.josefk.read.cache.bytes",
    "remote.log.manager.copy.max.bytes.per.second",
    "connections.max.idle.ms", "connections.max.reauth.ms", "replica.lag.time.max.ms",
    "offsets.retention.check.interval.ms", "producer.id.expiration.check.interval.ms",
})
_UNSET_NUMBERS = ("log.roll.ms", "log.retention.ms", "log.retention.minutes",
                  "josefk.metrics.port", "josefk.testing.control.port")
# Properties the broker reads beyond DEFAULTS, and Kafka's own that josefk accepts and has no use
# for (the thread pools and socket buffers of a stock server.properties): none of them is
# warned about. A name under the prefixes is a listener's, TLS or SASL setting.
KNOWN_CONFIGS = frozenset({
    "broker.id", "log.dir", "authorizer.class.name", "super.users",
    "allow.everyone.if.no.acl.found", "quota.window.num", "quota.window.size.seconds",
    "num.network.threads", "num.io.threads", "num.replica.fetchers",
    "num.recovery.threads.per.data.dir", "background.threads", "socket.send.buffer.bytes",
    "socket.receive.buffer.bytes", "replica.socket.receive.buffer.bytes",
    "zookeeper.set.acl", "metric.reporters", "broker.id.generation.enable",
}) | frozenset(DEFAULTS)
KNOWN_PREFIXES = ("listener.name.", "ssl.", "sasl.")


class ConfigError(ValueError):
    pass


def bootstrap_addresses(bootstrap: str) -> list[tuple[str, int]]:
    """Every ``HOST:PORT`` of a bootstrap list; ValueError, in Kafka's words, for a bad one."""
    out = []
    for entry in bootstrap.split(","):
        host, sep, port = entry.strip().rpartition(":")
        if not sep or not port.isdigit():
            raise ValueError(f"Invalid url in bootstrap.servers: {entry.strip()}")
        out.append((host or "127.0.0.1", int(port)))
    return out


def parse_properties(text: str) -> dict:
    """Parse Java .properties text (comments, key=value or key: value, line continuations)."""
    props = {}
    pending = ""
    for raw in text.splitlines():
        line = pending + raw.strip()
        pending = ""
        if not line or line[0] in "#!":
            continue
        if line.endswith("\\"):
            pending = line[:-1]
            continue
        for i, ch in enumerate(line):
            if ch in "=:":
                props[line[:i].strip()] = line[i + 1:].strip()
                break
        else:
            props[line] = ""
    return props


class BrokerConfig:
    def __init__(self, props: dict | None = None):
        self.props = dict(DEFAULTS)
        self.explicit = dict(props or {})
        if "broker.id" in self.explicit and "node.id" not in self.explicit:
            self.explicit["node.id"] = self.explicit["broker.id"]
        if "log.dir" in self.explicit and "log.dirs" not in self.explicit:
            self.explicit["log.dirs"] = self.explicit["log.dir"]
        self.props.update(self.explicit)
        self._validate()

    @classmethod
    def load(cls, path: str | None = None, overrides: dict | None = None) -> "BrokerConfig":
        props = parse_properties(Path(path).read_text()) if path else {}
        props.update(overrides or {})
        return cls(props)

    def get(self, name: str, default=None):
        v = self.props.get(name)
        return default if v is None or v == "" else v

    def int(self, name: str) -> int:
        kind = "LONG" if name in LONG_CONFIGS else "INT"
        value = self.props.get(name)
        try:
            number = int(value)
        except (TypeError, ValueError):
            raise ConfigError(f"Invalid value {value} for configuration {name}: Not a number "
                              f"of type {kind}") from None
        if kind == "INT" and not -2**31 <= number < 2**31:
            raise ConfigError(f"Invalid value {value} for configuration {name}: Not a number "
                              f"of type INT")
        return number

    def bool(self, name: str) -> bool:
        return str(self.props.get(name, "")).strip().lower() == "true"

    def list(self, name: str) -> list[str]:
        """A comma-separated list setting, its items stripped, in lower case."""
        return [v.strip().lower() for v in str(self.props.get(name, "")).split(",") if v.strip()]

    def _validate(self):
        """Kafka's checks when it parses its configuration: every number and boolean is one
        (the first wrong one raises ConfigError, in Kafka's words); an unknown name is warned
        about and kept, as Kafka does."""
        for name, default in DEFAULTS.items():
            value = str(self.props[name]).strip()
            if default.lstrip("-").isdigit() or (name in _UNSET_NUMBERS and value):
                self.int(name)
            elif default in ("true", "false") and value.lower() not in ("true", "false"):
                raise ConfigError(f"Invalid value {value} for configuration {name}: Expected "
                                  "value to be either true or false")
        self.listener()
        self._validate_groups()
        for name in sorted(self.explicit):
            if name not in KNOWN_CONFIGS and not name.startswith(KNOWN_PREFIXES):
                log.warning("The configuration '%s' was supplied but isn't a known config.",
                            name)

    def _validate_groups(self):
        """The protocols list; the group.consumer.* bounds are the group coordinator's to check
        (the broker refuses to start on them: ``Broker``)."""
        protocols = self.list("group.coordinator.rebalance.protocols")
        unknown = sorted(set(protocols) - {"classic", "consumer", "share"})
        if unknown or "classic" not in protocols:
            raise ConfigError("group.coordinator.rebalance.protocols must list classic, and "
                              "may list consumer and share; got "
                              f"{self.props.get('group.coordinator.rebalance.protocols')!r}")

    @property
    def node_id(self) -> int:
        return self.int("node.id")

    @property
    def log_dirs(self) -> list[str]:
        return [d.strip() for d in self.props["log.dirs"].split(",") if d.strip()]

    def listener(self) -> tuple[str, int]:
        return _parse_listener(self.props["listeners"])

    def retention_ms(self) -> int:
        if self.get("log.retention.ms"):
            return self.int("log.retention.ms")
        if self.get("log.retention.minutes"):
            return self.int("log.retention.minutes") * 60_000
        return self.int("log.retention.hours") * 3_600_000

    def roll_ms(self) -> int:
        if self.get("log.roll.ms"):
            return self.int("log.roll.ms")
        return self.int("log.roll.hours") * 3_600_000

    def topic_defaults(self) -> dict:
        """Default topic-level configs, derived from the broker's own settings like Kafka."""
        d = dict(EXTRA_TOPIC_DEFAULTS)
        for topic_name, broker_name in TOPIC_DEFAULTS.items():
            d[topic_name] = self.props[broker_name]
        d["retention.ms"] = str(self.retention_ms())
        d["segment.ms"] = str(self.roll_ms())
        return d


def _parse_listener(spec: str) -> tuple[str, int]:
    first = spec.split(",")[0].strip()
    if "://" in first:
        first = first.split("://", 1)[1]
    host, sep, port = first.rpartition(":")
    if not sep:
        raise ConfigError(f"listener {spec!r} has no port")
    try:
        return host.strip("[]"), int(port)
    except ValueError:
        raise ConfigError(f"listener {spec!r} has a bad port") from None
