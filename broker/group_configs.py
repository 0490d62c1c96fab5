"""Group configs (Kafka's ConfigResource type GROUP, 32): per-group overrides of the group
coordinator's settings, altered with IncrementalAlterConfigs / AlterConfigs and read with
DescribeConfigs as Kafka 4 does (its GroupConfig). Kafka keeps them in its KRaft metadata; josefk
keeps them with the other dynamic configs (``broker.dynamic``: ZooKeeper's
``/config/groups/<group>`` in a cluster, the dynamic-configs file on a single broker).

Every name is validated as Kafka validates it: its type, and for the timeouts, lock duration
and delivery count limit the range the broker allows (e.g. share.record.lock.duration.ms
within group.share.min/max.record.lock.duration.ms). A group without an override of a name
gets the broker's setting.
"""
from __future__ import annotations

import re

from josefk.broker.config import BrokerConfig
from josefk.broker.control.metadata import MetadataError
from josefk.wire import errors

GROUP = 32
AUTO_OFFSET_RESET = "share.auto.offset.reset"

_INT, _STRING, _BOOL = "int", "string", "bool"
# name: (type, the broker config giving its default, Kafka's default of that broker config,
#        (broker config of the minimum, its default), (maximum, its default))
SPECS = {
    "consumer.session.timeout.ms": (_INT, "group.consumer.session.timeout.ms", 45000,
                                    ("group.consumer.min.session.timeout.ms", 45000),
                                    ("group.consumer.max.session.timeout.ms", 60000)),
    "consumer.heartbeat.interval.ms": (_INT, "group.consumer.heartbeat.interval.ms", 5000,
                                       ("group.consumer.min.heartbeat.interval.ms", 5000),
                                       ("group.consumer.max.heartbeat.interval.ms", 15000)),
    "share.session.timeout.ms": (_INT, "group.share.session.timeout.ms", 45000,
                                 ("group.share.min.session.timeout.ms", 45000),
                                 ("group.share.max.session.timeout.ms", 60000)),
    "share.heartbeat.interval.ms": (_INT, "group.share.heartbeat.interval.ms", 5000,
                                    ("group.share.min.heartbeat.interval.ms", 5000),
                                    ("group.share.max.heartbeat.interval.ms", 15000)),
    "share.record.lock.duration.ms": (_INT, "group.share.record.lock.duration.ms", 30000,
                                      ("group.share.min.record.lock.duration.ms", 15000),
                                      ("group.share.max.record.lock.duration.ms", 60000)),
    "share.delivery.count.limit": (_INT, "group.share.delivery.count.limit", 5,
                                   ("group.share.min.delivery.count.limit", 2),
                                   ("group.share.max.delivery.count.limit", 10)),
    "share.partition.max.record.locks": (_INT, "group.share.partition.max.record.locks", 2000,
                                         (None, 100),
                                         ("group.share.max.partition.max.record.locks", 10000)),
    AUTO_OFFSET_RESET: (_STRING, None, "latest", None, None),
    "share.isolation.level": (_STRING, None, "read_uncommitted", None, None),
    "share.renew.acknowledge.enable": (_BOOL, None, "true", None, None),
    "streams.session.timeout.ms": (_INT, "group.streams.session.timeout.ms", 45000,
                                   ("group.streams.min.session.timeout.ms", 45000),
                                   ("group.streams.max.session.timeout.ms", 60000)),
    "streams.heartbeat.interval.ms": (_INT, "group.streams.heartbeat.interval.ms", 5000,
                                      ("group.streams.min.heartbeat.interval.ms", 5000),
                                      ("group.streams.max.heartbeat.interval.ms", 15000)),
    "streams.num.standby.replicas": (_INT, "group.streams.num.standby.replicas", 0,
                                     (None, 0), ("group.streams.max.standby.replicas", 2)),
    "streams.initial.rebalance.delay.ms": (_INT, "group.streams.initial.rebalance.delay.ms",
                                           3000, (None, 0), (None, 2**31 - 1)),
}
_ISOLATION = ("read_committed", "read_uncommitted")
_DURATION = re.compile(r"P(?:(\d+)D)?(?:T(?=\d)(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?",
                       re.IGNORECASE)


def parse_duration_ms(text: str) -> int | None:
    """An ISO-8601 duration (Java's Duration.parse: PnDTnHnMn.nS) in ms; None if it is not
    one (negative durations are not allowed)."""
    m = _DURATION.fullmatch(text.strip())
    if m is None or text.strip().upper() in ("P", "PT"):
        return None
    d, h, mi, s = m.groups()
    return int((int(d or 0) * 86400 + int(h or 0) * 3600 + int(mi or 0) * 60
                + float(s or 0)) * 1000)


def auto_offset_reset(value: str):
    """("earliest" | "latest" | "by_duration", duration ms) of a share.auto.offset.reset value;
    None when it is not a valid one."""
    v = value.strip().lower()
    if v in ("earliest", "latest"):
        return v, 0
    if v.startswith("by_duration:"):
        ms = parse_duration_ms(value.strip()[len("by_duration:"):])
        return None if ms is None else ("by_duration", ms)
    return None


def _broker_int(config, key, default) -> int:
    if key is None:
        return default
    v = config.get(key)
    return default if v in (None, "") else int(v)


def default_value(config, name: str) -> str:
    kind, key, default, _lo, _hi = SPECS[name]
    return str(_broker_int(config, key, default)) if kind == _INT else default


def validate(config, configs: dict) -> None:
    """Raise MetadataError(INVALID_CONFIG) for an unknown name or a value Kafka refuses."""
    for name, value in configs.items():
        spec = SPECS.get(name)
        if spec is None:
            raise MetadataError(errors.INVALID_CONFIG, f"Unknown group config name: {name}")
        kind, _key, _default, lo, hi = spec
        if value is None:
            raise MetadataError(errors.INVALID_CONFIG, f"Null value not supported for {name}")
        bad = MetadataError(errors.INVALID_CONFIG,
                            f"Invalid value {value} for configuration {name}")
        if kind == _INT:
            try:
                n = int(value)
            except ValueError:
                raise bad from None
            for bound, is_min in ((lo, True), (hi, False)):
                if bound is None:
                    continue
                limit = _broker_int(config, *bound)
                if (n < limit) if is_min else (n > limit):
                    what = bound[0] or str(limit)
                    raise MetadataError(errors.INVALID_CONFIG,
                                        f"{name} must be {'greater' if is_min else 'less'} "
                                        f"than or equal to {what}")
        elif kind == _BOOL:
            if value.lower() not in ("true", "false"):
                raise bad
        elif name == AUTO_OFFSET_RESET:
            if auto_offset_reset(value) is None:
                raise bad
        elif name == "share.isolation.level" and value.lower() not in _ISOLATION:
            raise bad


class GroupConfigs:
    """The effective group configs: a group's overrides, else the broker's settings."""

    def __init__(self, config: BrokerConfig):
        self.config = config
        # group id -> its overrides, kept by the dynamic configs (`dynamic.DynamicConfigs`)
        self.groups: dict[str, dict[str, str]] = {}

    def overrides(self, group_id: str) -> dict:
        return self.groups.get(group_id, {})

    def get(self, group_id: str, name: str) -> str:
        v = self.overrides(group_id).get(name)
        return v if v is not None else default_value(self.config, name)

    def int(self, group_id: str, name: str) -> int:
        return int(self.get(group_id, name))

    def entries(self, group_id: str) -> list[tuple[str, str, bool]]:
        """(name, value, overridden) of every group config, for DescribeConfigs."""
        mine = self.overrides(group_id)
        return [(n, mine[n] if n in mine else default_value(self.config, n), n in mine)
                for n in sorted(SPECS)]
