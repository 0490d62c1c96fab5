"""The options of Spark's built-in Kafka connector, parsed and checked the way it checks them.

Offsets are kept as ``{topic: {partition: offset}}`` with Kafka's sentinels -2 (earliest) and
-1 (latest), as in Spark's ``startingOffsets``/``endingOffsets`` JSON.
"""
from __future__ import annotations

import json
import re
import uuid

EARLIEST, LATEST = -2, -1
CLIENT_PREFIX = "kafka."
STRATEGIES = ("assign", "subscribe", "subscribepattern")
# Client settings the source owns, as Spark's connector refuses them.
OWNED = ("auto.offset.reset", "key.deserializer", "value.deserializer",
         "key.serializer", "value.serializer", "enable.auto.commit", "interceptor.classes")


class KafkaOptionError(ValueError):
    """An option is missing, malformed or not supported; the message names it."""


def get(options, name, default=None):
    # Spark hands Python sources a case-insensitive map; plain dicts are accepted too.
    for k, v in options.items():
        if k.lower() == name.lower():
            return v
    return default


def client_config(options) -> dict:
    """The ``kafka.*`` options with the prefix removed, for the confluent-kafka client."""
    conf = {k[len(CLIENT_PREFIX):]: v for k, v in options.items()
            if k.lower().startswith(CLIENT_PREFIX)}
    if not conf.get("bootstrap.servers"):
        raise KafkaOptionError("Option 'kafka.bootstrap.servers' must be specified for "
                               "configuring Kafka consumer/producer")
    for key in OWNED:
        if key in conf:
            raise KafkaOptionError(f"Kafka option '{key}' is not supported as the source "
                                   "manages it itself")
    return conf


def flag(options, name, default: bool) -> bool:
    value = str(get(options, name, default)).strip().lower()
    if value not in ("true", "false"):
        raise KafkaOptionError(f"Option '{name}' must be true or false, not {value!r}")
    return value == "true"


def positive_int(options, name):
    value = get(options, name)
    if value is None:
        return None
    try:
        n = int(value)
    except ValueError:
        n = 0
    if n <= 0:
        raise KafkaOptionError(f"Option '{name}' must be a positive integer, not {value!r}")
    return n


class Strategy:
    """Which topics and partitions to read: ``assign``, ``subscribe`` or ``subscribePattern``."""

    def __init__(self, options):
        given = [s for s in STRATEGIES if get(options, s) is not None]
        if len(given) != 1:
            raise KafkaOptionError("Exactly one of the options 'assign', 'subscribe', "
                                   f"'subscribePattern' must be specified, got {given or 'none'}")
        self.kind = given[0]
        value = get(options, self.kind)
        if self.kind == "assign":
            self.assigned = {(t, p) for t, parts in _json(value, "assign").items() for p in parts}
            if not self.assigned:
                raise KafkaOptionError("Option 'assign' names no partitions")
        elif self.kind == "subscribe":
            self.topics = [t.strip() for t in value.split(",") if t.strip()]
            if not self.topics:
                raise KafkaOptionError("Option 'subscribe' names no topics")
        else:
            try:
                self.pattern = re.compile(value)
            except re.error as e:
                raise KafkaOptionError(f"Option 'subscribePattern' is not a valid pattern: "
                                       f"{e}") from None

    def wanted_topics(self, existing) -> list[str]:
        """The topics this strategy names (those of ``existing`` for a pattern)."""
        if self.kind == "assign":
            return sorted({t for t, _ in self.assigned})
        if self.kind == "subscribe":
            return self.topics
        return sorted(t for t in existing if self.pattern.fullmatch(t) and not t.startswith("__"))

    def select(self, partitions_by_topic) -> list[tuple[str, int]]:
        """The (topic, partition) pairs to read, given the partitions each existing topic has."""
        if self.kind == "assign":
            return sorted(tp for tp in self.assigned
                          if tp[1] in partitions_by_topic.get(tp[0], ()))
        return sorted((t, p) for t in self.wanted_topics(partitions_by_topic)
                      for p in partitions_by_topic.get(t, ()))


def _json(text, name) -> dict:
    try:
        value = json.loads(text)
    except (TypeError, ValueError) as e:
        raise KafkaOptionError(f"Option '{name}' is not valid JSON ({e}): {text!r}") from None
    if not isinstance(value, dict) or not all(isinstance(v, (dict, list))
                                              for v in value.values()):
        raise KafkaOptionError(f"Option '{name}' must be a JSON object of topics, e.g. "
                               f"{{\"topicA\":{{\"0\":23,\"1\":-1}}}}, got {text!r}")
    return value


def offset_spec(options, name, default):
    """``earliest``/``latest`` or the per-partition JSON of option ``name``.

    Returns "earliest", "latest" or ``{(topic, partition): offset}``.
    """
    value = get(options, name)
    if value is None:
        return default
    word = value.strip().lower()
    if word in ("earliest", "latest"):
        return word
    spec = {}
    for topic, parts in _json(value, name).items():
        if not isinstance(parts, dict):
            raise KafkaOptionError(f"Option '{name}': partitions of {topic!r} must be an object")
        for p, off in parts.items():
            try:
                spec[(topic, int(p))] = int(off)
            except (TypeError, ValueError):
                raise KafkaOptionError(f"Option '{name}': bad partition or offset "
                                       f"{p!r}: {off!r} for topic {topic!r}") from None
    return spec


def timestamp_spec(options, which: str = "starting"):
    """The ``which`` ("starting" or "ending") timestamps: ``int`` for every partition,
    ``{(topic, p): ms}``, or None.

    ``<which>Timestamp`` wins over ``<which>OffsetsByTimestamp``, as in Spark.
    """
    name = f"{which}Timestamp"
    single = get(options, name)
    if single is not None:
        try:
            return int(single)
        except ValueError:
            raise KafkaOptionError(f"Option '{name}' must be milliseconds since "
                                   f"the epoch, not {single!r}") from None
    if get(options, f"{which}OffsetsByTimestamp") is None:
        return None
    return offset_spec(options, f"{which}OffsetsByTimestamp", None)


def no_match_strategy(options) -> str:
    """``startingOffsetsByTimestampStrategy``: what a starting timestamp that matches no offset
    does, ``error`` (the default) or ``latest``."""
    value = str(get(options, "startingOffsetsByTimestampStrategy", "error")).strip().lower()
    if value not in ("error", "latest"):
        raise KafkaOptionError("Option 'startingOffsetsByTimestampStrategy' must be 'error' or "
                               f"'latest', not {value!r}")
    return value


TIME_UNITS_MS = {"us": 0.001, "ms": 1, "s": 1000, "m": 60_000, "min": 60_000,
                 "h": 3_600_000, "d": 86_400_000}


def duration_ms(options, name, default: str) -> int:
    """A duration option as Spark writes them ("15m", "30s", "500ms"; a bare number is ms)."""
    value = str(get(options, name, default)).strip().lower()
    match = re.fullmatch(r"(\d+)\s*([a-z]*)", value)
    if match is None or match.group(2) not in ("", *TIME_UNITS_MS):
        raise KafkaOptionError(f"Option '{name}' must be a duration such as 15m, 30s or "
                               f"500ms, not {value!r}")
    return int(int(match.group(1)) * TIME_UNITS_MS.get(match.group(2), 1))


def group_id(options) -> str:
    """``kafka.group.id`` as given, else ``groupIdPrefix`` (default ``spark-kafka-source``)
    and a unique suffix, as Spark's connector names its consumers' group."""
    given = get(options, CLIENT_PREFIX + "group.id")
    if given:
        return given
    return f"{get(options, 'groupIdPrefix', 'spark-kafka-source')}-{uuid.uuid4()}"


def target_topic(options):
    return get(options, "topic")
