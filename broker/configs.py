"""Topic and broker config views: validation, effective values and their sources."""
from __future__ import annotations

import re
from typing import Protocol

from josefk.broker.client_metrics import INTERVAL_MS, INTERVAL_MS_DEFAULT, MATCH, METRICS
from josefk.broker.config import DEFAULTS, TOPIC_CONFIG_NAMES, TOPIC_DEFAULTS, BrokerConfig
from josefk.broker.control.metadata import MetadataError
from josefk.storage.config import BROKER_SYNONYMS as BROKER_KEYS
from josefk.storage.config import LogConfig
from josefk.storage.errors import InvalidConfig
from josefk.wire import errors


class ConfigSource:
    UNKNOWN = 0
    TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6
    CLIENT_METRICS_CONFIG = 7
    GROUP_CONFIG = 8


# A broker config and the names that stand for the same setting, in Kafka's precedence.
BROKER_SYNONYMS = {
    "log.retention.ms": ("log.retention.ms", "log.retention.minutes", "log.retention.hours"),
    "log.roll.ms": ("log.roll.ms", "log.roll.hours"),
}
# Topic config -> the broker config that gives its default, and back.
TOPIC_TO_BROKER = {**TOPIC_DEFAULTS, "retention.ms": "log.retention.ms",
                   "segment.ms": "log.roll.ms"}
BROKER_TO_TOPIC = {b: t for t, b in TOPIC_TO_BROKER.items()}


# A mirror topic's cluster link, state and source topic id (broker.links): josefk's topic
# configs, shown where set
MIRROR_LINK, MIRROR_STATE = "josefk.mirror.link", "josefk.mirror.state"
MIRROR_SOURCE_ID = "josefk.mirror.source.topic.id"
MIRROR_STOPPED_AT = "josefk.mirror.stopped.offsets"  # where promote or failover stopped it
# an operator's command to resume stopped partitions: "<nonce>:<partitions, or *>"
MIRROR_RESUME = "josefk.mirror.resume"
MIRROR_ACTIVE, MIRROR_STOPPED = "ACTIVE", "STOPPED"
MIRROR_CONFIGS = frozenset({MIRROR_LINK, MIRROR_STATE, MIRROR_SOURCE_ID, MIRROR_STOPPED_AT,
                            MIRROR_RESUME})
# a cluster link's settings kept encrypted (password.encoder.secret), as Confluent's links
LINK_PASSWORD_CONFIGS = ("sasl.jaas.config", "ssl.truststore.password",
                         "ssl.keystore.password", "ssl.key.password")


class ConfigType:
    BOOLEAN, STRING, INT, SHORT, LONG, DOUBLE, LIST = 1, 2, 3, 4, 5, 6, 7


_LONGS = {"retention.ms", "retention.bytes", "segment.ms", "delete.retention.ms",
          "min.compaction.lag.ms", "max.compaction.lag.ms", "flush.messages", "flush.ms",
          "file.delete.delay.ms", "segment.jitter.ms", "local.retention.bytes",
          "local.retention.ms", "message.timestamp.difference.max.ms",
          "message.timestamp.before.max.ms", "message.timestamp.after.max.ms"}
_INTS = {"segment.bytes", "index.interval.bytes", "max.message.bytes", "min.insync.replicas",
         "segment.index.bytes"}
_BOOLS = {"unclean.leader.election.enable", "preallocate", "message.downconversion.enable",
          "remote.storage.enable", "josefk.remote.recovery", "josefk.remote.delete"}
_CHOICES = {
    "cleanup.policy": {"delete", "compact"},
    "message.timestamp.type": {"CreateTime", "LogAppendTime"},
    "compression.type": {"producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"},
}


# Kafka's MetadataVersion releases (0.8.0 ... 3.9), each also with its -IVn steps.
_METADATA_VERSION = re.compile(
    r"(0\.8\.[0-2]|0\.9\.0|0\.10\.[0-2]|0\.11\.0|1\.[01]|2\.[0-8]|3\.[0-9])(-IV[0-9]+)?")


def _is_metadata_version(value: str) -> bool:
    """As Kafka's MetadataVersion.fromVersionString reads message.format.version: only the
    leading segments count (three for 0.x, else two), so 0.10.0.0 is 0.10.0 and 2.8.1 is 2.8."""
    leading = value.split(".")[:3 if value.startswith("0.") else 2]
    return bool(_METADATA_VERSION.fullmatch(".".join(leading)))


def config_type(name: str) -> int:
    if name in _LONGS:
        return ConfigType.LONG
    if name in _INTS or name == INTERVAL_MS:
        return ConfigType.INT
    if name in _BOOLS:
        return ConfigType.BOOLEAN
    if name == "min.cleanable.dirty.ratio":
        return ConfigType.DOUBLE
    if name in ("cleanup.policy", METRICS, MATCH) or name.endswith("throttled.replicas"):
        return ConfigType.LIST
    return ConfigType.STRING


def validate_topic_configs(configs: dict, defaults: dict, *,
                           tiered_storage: bool | None = None) -> None:
    """Raise MetadataError(INVALID_CONFIG) for an unknown name, a malformed value or one the
    log would refuse (Kafka's types and ranges), so nothing invalid is ever persisted. With
    ``tiered_storage`` (the broker's remote.log.storage.system.enable), a topic with
    remote.storage.enable is checked as Kafka's LogConfig checks it."""
    for name, value in configs.items():
        if name not in TOPIC_CONFIG_NAMES and name not in MIRROR_CONFIGS:
            raise MetadataError(errors.INVALID_CONFIG, f"Unknown topic config name: {name}")
        if value is None:
            raise MetadataError(errors.INVALID_CONFIG, f"Null value not supported for {name}")
        if name == MIRROR_STATE and value not in (MIRROR_ACTIVE, MIRROR_STOPPED):
            raise MetadataError(errors.INVALID_CONFIG,
                                f"Invalid value {value} for configuration {name}: String must "
                                f"be one of: {MIRROR_ACTIVE}, {MIRROR_STOPPED}")
        kind = config_type(name)
        try:
            if kind in (ConfigType.LONG, ConfigType.INT):
                int(value)
            elif kind == ConfigType.DOUBLE:
                float(value)
            elif kind == ConfigType.BOOLEAN and value.lower() not in ("true", "false"):
                raise ValueError
        except ValueError:
            raise MetadataError(errors.INVALID_CONFIG,
                                f"Invalid value {value} for configuration {name}") from None
        allowed = _CHOICES.get(name)
        if allowed and not set(v.strip() for v in value.split(",")) <= allowed:
            raise MetadataError(errors.INVALID_CONFIG,
                                f"Invalid value {value} for configuration {name}: "
                                f"String must be one of: {', '.join(sorted(allowed))}")
        if name == "message.format.version" and not _is_metadata_version(value):
            raise MetadataError(errors.INVALID_CONFIG,
                                f"Invalid value {value} for configuration {name}: Version "
                                f"{value} is not a valid version")
        if name.endswith("throttled.replicas") and not _throttled_replicas_ok(value):
            raise MetadataError(errors.INVALID_CONFIG,
                                f"Invalid value {value} for configuration {name}: {name} must "
                                "be the literal '*' or a list of replicas in the following "
                                "format: [partitionId]:[brokerId],[partitionId]:[brokerId],...")
    try:
        cfg = LogConfig.from_props(configs, defaults)
    except InvalidConfig as e:
        raise MetadataError(errors.INVALID_CONFIG, str(e)) from None
    if cfg.remote_storage_enable and tiered_storage is not None:
        _validate_remote_storage(cfg, tiered_storage)


def _validate_remote_storage(cfg: LogConfig, system_enabled: bool) -> None:
    if not system_enabled:
        raise MetadataError(errors.INVALID_CONFIG, "Tiered Storage functionality is disabled in "
                            "the broker. Topic cannot be configured with remote log storage.")
    for total_name, local_name in (("retention.bytes", "local.retention.bytes"),
                                   ("retention.ms", "local.retention.ms")):
        total, local = cfg.get(total_name), cfg.get(local_name)
        if total == -1 or local == -2:
            continue
        if local == -1:
            message = f"Value must not be -1 as {total_name} value is set as {total}."
        elif local > total:
            message = f"Value must not be more than {total_name} property value: {total}"
        else:
            continue
        raise MetadataError(errors.INVALID_CONFIG, f"Invalid value {local} for configuration "
                            f"{local_name}: {message}")


def _throttled_replicas_ok(value: str) -> bool:
    """Kafka's ThrottledReplicaListValidator: "*", or partition:broker pairs."""
    items = [v.strip() for v in value.split(",")]
    return "".join(items) == "*" or all(re.fullmatch(r"([0-9]+:[0-9]+)?", v) for v in items)


class ConfigEntry:
    __slots__ = ("name", "value", "source", "synonyms")

    def __init__(self, name, value, source, synonyms=()):
        self.name, self.value, self.source, self.synonyms = name, value, source, list(synonyms)


class ConfigLayers(Protocol):
    """What the config views read: the static config, the dynamic layers (`dynamic`: this
    broker's ``per_broker``, the ``cluster_default``, the ``client_metrics`` subscriptions) and
    the groups' effective configs (`group_configs.GroupConfigs.entries`)."""

    @property
    def config(self) -> BrokerConfig: ...

    @property
    def dynamic(self) -> DynamicLayers: ...

    @property
    def group_configs(self) -> GroupEntries: ...


class DynamicLayers(Protocol):
    per_broker: dict[str, str]
    cluster_default: dict[str, str]
    client_metrics: dict[str, dict[str, str]]


class GroupEntries(Protocol):
    def entries(self, group_id: str) -> list[tuple[str, str, bool]]: ...


def broker_synonyms(broker: ConfigLayers, name: str) -> list[tuple[str, str, int]]:
    """(name, value, source) of every layer that sets broker config ``name`` or a synonym,
    highest precedence first, ending with Kafka's default."""
    names = BROKER_SYNONYMS.get(name, (name,))
    dyn = broker.dynamic
    layers = ((dyn.per_broker, ConfigSource.DYNAMIC_BROKER_CONFIG),
              (dyn.cluster_default, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
              (broker.config.explicit, ConfigSource.STATIC_BROKER_CONFIG))
    out = [(n, layer[n], source) for layer, source in layers for n in names if n in layer]
    defaults = [(n, DEFAULTS[n], ConfigSource.DEFAULT_CONFIG) for n in names if DEFAULTS.get(n)]
    return out + defaults[-1:]


def topic_config_entries(broker: ConfigLayers, overrides: dict) -> list[ConfigEntry]:
    """Every topic-level config with its effective value and where it comes from."""
    defaults = broker.config.topic_defaults()
    out = [ConfigEntry(name, overrides[name], ConfigSource.TOPIC_CONFIG,
                       [(name, overrides[name], ConfigSource.TOPIC_CONFIG)])
           for name in sorted(MIRROR_CONFIGS & overrides.keys())]
    for name in sorted(defaults):
        synonyms = []
        if name in overrides:
            synonyms.append((name, overrides[name], ConfigSource.TOPIC_CONFIG))
        broker_name = TOPIC_TO_BROKER.get(name)
        if broker_name:
            synonyms += broker_synonyms(broker, broker_name)
        elif name in BROKER_KEYS:  # a broker key josefk does not read: Kafka's default of it
            synonyms.append((BROKER_KEYS[name][-1], defaults[name], ConfigSource.DEFAULT_CONFIG))
        value = overrides[name] if name in overrides else defaults[name]
        source = synonyms[0][2] if synonyms else ConfigSource.DEFAULT_CONFIG
        out.append(ConfigEntry(name, value, source, synonyms))
    return out


def broker_config_entries(broker: ConfigLayers) -> list[ConfigEntry]:
    """Every broker config with its effective value and source."""
    cfg = broker.config
    out = []
    for name in sorted(cfg.props):
        synonyms = broker_synonyms(broker, name)
        source = synonyms[0][2] if synonyms else ConfigSource.DEFAULT_CONFIG
        out.append(ConfigEntry(name, cfg.props[name], source, synonyms))
    return out


def default_broker_config_entries(broker: ConfigLayers) -> list[ConfigEntry]:
    """The cluster-wide dynamic defaults (a broker resource named "")."""
    source = ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
    return [ConfigEntry(n, v, source, [(n, v, source)])
            for n, v in sorted(broker.dynamic.cluster_default.items())]


def client_metrics_config_entries(broker: ConfigLayers, name: str) -> list[ConfigEntry]:
    """A client metrics subscription's configs (KIP-714), those not set at their defaults."""
    mine = broker.dynamic.client_metrics.get(name, {})
    defaults = {METRICS: "", INTERVAL_MS: str(INTERVAL_MS_DEFAULT), MATCH: ""}
    return [ConfigEntry(key, mine[key], ConfigSource.CLIENT_METRICS_CONFIG) if key in mine
            else ConfigEntry(key, default, ConfigSource.DEFAULT_CONFIG)
            for key, default in defaults.items()]


def group_config_entries(broker: ConfigLayers, group_id: str) -> list[ConfigEntry]:
    """Every group config of ``group_id`` (KIP-848, KIP-932): its overrides, else the broker's
    settings, as Kafka describes a GROUP resource."""
    return [ConfigEntry(name, value, ConfigSource.GROUP_CONFIG if mine
                        else ConfigSource.DEFAULT_CONFIG)
            for name, value, mine in broker.group_configs.entries(group_id)]
