"""Per-topic log configuration under Kafka's property names.

``LogConfig.from_props({"retention.ms": "1000"}, defaults)`` overlays topic overrides on the
broker's defaults; ``props`` keeps the raw override dict for DescribeConfigs and
``BROKER_SYNONYMS`` names the server.properties keys that set each default.
"""
from __future__ import annotations

from .errors import InvalidConfig

LONG_MAX = 9223372036854775807

# topic property -> (attribute, kind, default)
PROPS: dict[str, tuple[str, str, object]] = {
    "cleanup.policy": ("cleanup_policy", "policy", "delete"),
    "compression.type": ("compression_type", "compression", "producer"),
    "delete.retention.ms": ("delete_retention_ms", "long", 86400000),
    "file.delete.delay.ms": ("file_delete_delay_ms", "long", 60000),
    "flush.messages": ("flush_messages", "long", LONG_MAX),
    "flush.ms": ("flush_ms", "long", LONG_MAX),
    "index.interval.bytes": ("index_interval_bytes", "int", 4096),
    # past Kafka (Redpanda's redpanda.remote.recovery / .readreplica): the remote log comes
    # from the bucket (tiered/recovery.py)
    "josefk.remote.delete": ("remote_delete", "bool", True),
    "josefk.remote.readreplica": ("remote_read_replica", "str", ""),
    "josefk.remote.recovery": ("remote_recovery", "bool", False),
    # tiered storage (KIP-405): -2 means the total retention.ms / retention.bytes
    "local.retention.bytes": ("local_retention_bytes", "long", -2),
    "local.retention.ms": ("local_retention_ms", "long", -2),
    "max.compaction.lag.ms": ("max_compaction_lag_ms", "long", LONG_MAX),
    "max.message.bytes": ("max_message_bytes", "int", 1048588),
    "message.downconversion.enable": ("message_downconversion_enable", "bool", True),
    "message.timestamp.after.max.ms": ("message_timestamp_after_max_ms", "long", LONG_MAX),
    "message.timestamp.before.max.ms": ("message_timestamp_before_max_ms", "long", LONG_MAX),
    "message.timestamp.difference.max.ms": ("message_timestamp_difference_max_ms", "long",
                                            LONG_MAX),
    "message.timestamp.type": ("message_timestamp_type", "timestamp_type", "CreateTime"),
    "min.cleanable.dirty.ratio": ("min_cleanable_dirty_ratio", "ratio", 0.5),
    "min.compaction.lag.ms": ("min_compaction_lag_ms", "long", 0),
    "min.insync.replicas": ("min_insync_replicas", "int", 1),
    "preallocate": ("preallocate", "bool", False),
    "remote.storage.enable": ("remote_storage_enable", "bool", False),
    "retention.bytes": ("retention_bytes", "long", -1),
    "retention.ms": ("retention_ms", "long", 604800000),
    "segment.bytes": ("segment_bytes", "int", 1073741824),
    "segment.index.bytes": ("segment_index_bytes", "int", 10485760),
    "segment.jitter.ms": ("segment_jitter_ms", "long", 0),
    "segment.ms": ("segment_ms", "long", 604800000),
    "unclean.leader.election.enable": ("unclean_leader_election_enable", "bool", False),
}

# topic property -> broker (server.properties) keys that set its default, highest precedence first;
# a "*_minutes"/"*_hours" key is converted to milliseconds.
BROKER_SYNONYMS: dict[str, list[str]] = {
    "cleanup.policy": ["log.cleanup.policy"],
    "compression.type": ["compression.type"],
    "delete.retention.ms": ["log.cleaner.delete.retention.ms"],
    "file.delete.delay.ms": ["log.segment.delete.delay.ms"],
    "flush.messages": ["log.flush.interval.messages"],
    "flush.ms": ["log.flush.interval.ms", "log.flush.scheduler.interval.ms"],
    "index.interval.bytes": ["log.index.interval.bytes"],
    "local.retention.bytes": ["log.local.retention.bytes"],
    "local.retention.ms": ["log.local.retention.ms"],
    "max.compaction.lag.ms": ["log.cleaner.max.compaction.lag.ms"],
    "max.message.bytes": ["message.max.bytes"],
    "message.downconversion.enable": ["log.message.downconversion.enable"],
    "message.timestamp.after.max.ms": ["log.message.timestamp.after.max.ms"],
    "message.timestamp.before.max.ms": ["log.message.timestamp.before.max.ms"],
    "message.timestamp.difference.max.ms": ["log.message.timestamp.difference.max.ms"],
    "message.timestamp.type": ["log.message.timestamp.type"],
    "min.cleanable.dirty.ratio": ["log.cleaner.min.cleanable.ratio"],
    "min.compaction.lag.ms": ["log.cleaner.min.compaction.lag.ms"],
    "min.insync.replicas": ["min.insync.replicas"],
    "preallocate": ["log.preallocate"],
    "retention.bytes": ["log.retention.bytes"],
    "retention.ms": ["log.retention.ms", "log.retention.minutes", "log.retention.hours"],
    "segment.bytes": ["log.segment.bytes"],
    "segment.index.bytes": ["log.index.size.max.bytes"],
    "segment.jitter.ms": ["log.roll.jitter.ms", "log.roll.jitter.hours"],
    "segment.ms": ["log.roll.ms", "log.roll.hours"],
    "unclean.leader.election.enable": ["unclean.leader.election.enable"],
}

# Kafka's lower bounds (LogConfig's ``atLeast`` validators); a value below is refused.
MINIMUM = {
    "segment.bytes": 14,  # LegacyRecord.RECORD_OVERHEAD_V0
    "segment.ms": 1,
    "segment.jitter.ms": 0,
    "segment.index.bytes": 4,
    "flush.messages": 1,
    "flush.ms": 0,
    "retention.ms": -1,
    "local.retention.ms": -2,
    "local.retention.bytes": -2,
    "max.message.bytes": 0,
    "index.interval.bytes": 0,
    "delete.retention.ms": 0,
    "min.compaction.lag.ms": 0,
    "max.compaction.lag.ms": 1,
    "file.delete.delay.ms": 0,
    "min.insync.replicas": 1,
    "message.timestamp.difference.max.ms": 0,
    "message.timestamp.before.max.ms": 0,
    "message.timestamp.after.max.ms": 0,
}

_COMPRESSION_TYPES = {"uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"}


def _parse(name: str, kind: str, raw):
    if isinstance(raw, str):
        text = raw.strip()
    else:
        text = raw
    try:
        if kind in ("long", "int"):
            if isinstance(text, bool):
                raise ValueError
            v = int(text)
            limit = LONG_MAX if kind == "long" else 2147483647
            if not -limit - 1 <= v <= limit:
                raise InvalidConfig(f"Invalid value {raw} for configuration {name}: Not a "
                                    f"number of type {kind.upper()}")
            if v < MINIMUM.get(name, v):
                raise InvalidConfig(f"Invalid value {raw} for configuration {name}: Value "
                                    f"must be at least {MINIMUM[name]}")
            return v
        if kind == "ratio":
            v = float(text)
            if not 0.0 <= v <= 1.0:
                raise ValueError
            return v
        if kind == "bool":
            if isinstance(text, bool):
                return text
            if str(text).lower() in ("true", "false"):
                return str(text).lower() == "true"
            raise ValueError
        if kind == "policy":
            parts = [p.strip() for p in str(text).split(",") if p.strip()]
            if not parts or any(p not in ("compact", "delete") for p in parts):
                raise ValueError
            return ",".join(parts)
        if kind == "timestamp_type":
            if text not in ("CreateTime", "LogAppendTime"):
                raise ValueError
            return text
        if kind == "str":
            return str(text)
        if kind == "compression":
            if text not in _COMPRESSION_TYPES:
                raise ValueError
            return text
    except InvalidConfig:
        raise
    except (TypeError, ValueError):
        raise InvalidConfig(f"invalid value {raw!r} for configuration {name}") from None
    raise AssertionError(kind)


def _to_text(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


class LogConfig:
    """Effective log settings. Attributes are the property names with ``.`` -> ``_``
    (``segment_bytes``, ``retention_ms``, ...). ``props`` holds the raw topic overrides."""

    __slots__ = tuple(a for a, _k, _d in PROPS.values()) + ("props",)

    def __init__(self, **values):
        for name, (attr, _kind, default) in PROPS.items():
            setattr(self, attr, default)
        self.props: dict[str, str] = {}
        for attr, v in values.items():
            if attr not in self.__slots__ or attr == "props":
                raise TypeError(f"unknown log config attribute {attr}")
            setattr(self, attr, v)

    @classmethod
    def from_props(cls, props: dict | None, defaults: "LogConfig | dict | None" = None) -> "LogConfig":
        """Overlay ``props`` (Kafka topic property names; values as strings or numbers) on
        ``defaults`` (a LogConfig, a dict of topic properties, or None for Kafka's defaults).
        Unknown names are kept in ``props`` but otherwise ignored. Raises InvalidConfig."""
        if isinstance(defaults, LogConfig):
            cfg = defaults.copy()
            cfg.props = {}
        else:
            cfg = cls()
            if defaults:
                for name, raw in defaults.items():
                    if name in PROPS:
                        attr, kind, _d = PROPS[name]
                        setattr(cfg, attr, _parse(name, kind, raw))
        props = dict(props or {})
        for name, raw in props.items():
            if name in PROPS and raw is not None:
                attr, kind, _d = PROPS[name]
                setattr(cfg, attr, _parse(name, kind, raw))
        cfg.props = {k: (v if v is None else _to_text(v)) for k, v in props.items()}
        return cfg

    def copy(self) -> "LogConfig":
        c = LogConfig.__new__(LogConfig)
        for attr in self.__slots__:
            setattr(c, attr, getattr(self, attr))
        c.props = dict(self.props)
        return c

    def get(self, name: str):
        """Value of a property by its Kafka name."""
        return getattr(self, PROPS[name][0])

    def timestamp_window(self):
        """``(before_ms, after_ms)`` a CreateTime record's timestamp may lie around now
        (message.timestamp.before/after.max.ms, falling back to the deprecated
        difference.max.ms when they are unset, as Kafka 3.6+ does), or None when unbounded or
        the topic uses LogAppendTime."""
        if self.message_timestamp_type == "LogAppendTime":
            return None
        before = self.message_timestamp_before_max_ms
        after = self.message_timestamp_after_max_ms
        diff = self.message_timestamp_difference_max_ms
        if "message.timestamp.before.max.ms" not in self.props and diff != LONG_MAX:
            before = diff
        if "message.timestamp.after.max.ms" not in self.props and diff != LONG_MAX:
            after = diff
        if before == LONG_MAX and after == LONG_MAX:
            return None
        return before, after

    @property
    def local_retention(self) -> tuple[int, int]:
        """``(ms, bytes)`` a tiered log keeps locally: local.retention.*, or where -2 the
        total retention.*."""
        ms, size = self.local_retention_ms, self.local_retention_bytes
        return (self.retention_ms if ms == -2 else ms,
                self.retention_bytes if size == -2 else size)

    @property
    def compact(self) -> bool:
        return "compact" in self.cleanup_policy.split(",")

    @property
    def delete(self) -> bool:
        return "delete" in self.cleanup_policy.split(",")

    def __eq__(self, other):
        if not isinstance(other, LogConfig):
            return NotImplemented
        return all(getattr(self, a) == getattr(other, a) for a in self.__slots__)

    def __repr__(self):
        return f"LogConfig({self.props!r})"
