"""Topic and broker config views: validation, effective values and their sources."""
from __future__ import annotations

from broker.config import TOPIC_CONFIG_NAMES, TOPIC_DEFAULTS
from broker.metadata import MetadataError
from storage.config import LogConfig
from storage.errors import InvalidConfig
from wire import errors


class ConfigSource:
    UNKNOWN = 0
    TOPIC_CONFIG = 1
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5


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
          "remote.storage.enable"}
_CHOICES = {
    "cleanup.policy": {"delete", "compact"},
    "message.timestamp.type": {"CreateTime", "LogAppendTime"},
    "compression.type": {"producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"},
}


def config_type(name: str) -> int:
    if name in _LONGS:
        return ConfigType.LONG
    if name in _INTS:
        return ConfigType.INT
    if name in _BOOLS:
        return ConfigType.BOOLEAN
    if name == "min.cleanable.dirty.ratio":
        return ConfigType.DOUBLE
    if name == "cleanup.policy" or name.endswith("throttled.replicas"):
        return ConfigType.LIST
    return ConfigType.STRING


def validate_topic_configs(configs: dict, defaults: dict) -> None:
    """Raise MetadataError(INVALID_CONFIG) for an unknown name, a malformed value or one the
    log would refuse (Kafka's types and ranges), so nothing invalid is ever persisted."""
    for name, value in configs.items():
        if name not in TOPIC_CONFIG_NAMES:
            raise MetadataError(errors.INVALID_CONFIG, f"Unknown topic config name: {name}")
        if value is None:
            raise MetadataError(errors.INVALID_CONFIG, f"Null value not supported for {name}")
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
    try:
        LogConfig.from_props(configs, defaults)
    except InvalidConfig as e:
        raise MetadataError(errors.INVALID_CONFIG, str(e)) from None


class ConfigEntry:
    __slots__ = ("name", "value", "source", "synonyms")

    def __init__(self, name, value, source, synonyms=()):
        self.name, self.value, self.source, self.synonyms = name, value, source, list(synonyms)


def topic_config_entries(broker, overrides: dict) -> list[ConfigEntry]:
    """Every topic-level config with its effective value and where it comes from."""
    cfg = broker.config
    defaults = cfg.topic_defaults()
    out = []
    for name in sorted(defaults):
        synonyms = []
        if name in overrides:
            synonyms.append((name, overrides[name], ConfigSource.TOPIC_CONFIG))
        broker_name = TOPIC_DEFAULTS.get(name)
        if broker_name and broker_name in cfg.explicit:
            synonyms.append((broker_name, cfg.explicit[broker_name],
                             ConfigSource.STATIC_BROKER_CONFIG))
        synonyms.append((broker_name or name, defaults[name], ConfigSource.DEFAULT_CONFIG))
        value, source = synonyms[0][1], synonyms[0][2]
        out.append(ConfigEntry(name, value, source, synonyms))
    return out


def broker_config_entries(broker) -> list[ConfigEntry]:
    cfg = broker.config
    out = []
    for name in sorted(cfg.props):
        source = (ConfigSource.STATIC_BROKER_CONFIG if name in cfg.explicit
                  else ConfigSource.DEFAULT_CONFIG)
        out.append(ConfigEntry(name, cfg.props[name], source, [(name, cfg.props[name], source)]))
    return out
