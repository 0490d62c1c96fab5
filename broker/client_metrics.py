"""Client metrics (KIP-714): what operators ask clients to measure, and what clients push.

Operators configure subscriptions as ``client-metrics`` config resources (IncrementalAlterConfigs,
``josefk configs --entity-type client-metrics``), each with ``metrics`` (metric name prefixes,
``*`` for all), ``interval.ms`` and ``match`` (regular expressions over the client's id, software
name and version, address, port and instance id). A client asks GetTelemetrySubscriptions, gets
the union of the subscriptions that match it, and pushes OTLP metrics (PushTelemetry) every
interval. Kafka hands those to a plug-in; josefk keeps each client's latest values and serves them
on its Prometheus endpoint, labelled by client. The rules (subscription ids, throttling, errors)
are Kafka's ClientMetricsManager's; clients are asked for cumulative values, which Prometheus
expects.
"""
from __future__ import annotations

import logging
import re
import time
import uuid
from collections import OrderedDict

from crc32c import crc32c

from josefk.wire import errors
from josefk.wire.records import CODEC_NAMES, NONE, TooLarge, decompress

log = logging.getLogger("josefk.client_metrics")

METRICS, INTERVAL_MS, MATCH = "metrics", "interval.ms", "match"
CONFIG_NAMES = (METRICS, INTERVAL_MS, MATCH)
ALL_METRICS = "*"
INTERVAL_MS_DEFAULT = 300_000
MIN_INTERVAL_MS, MAX_INTERVAL_MS = 100, 3_600_000
MATCH_PARAMS = ("client_instance_id", "client_id", "client_software_name",
                "client_software_version", "client_source_address", "client_source_port")
# Kafka's preference order; the client takes the first it supports.
ACCEPTED_COMPRESSION = [4, 3, 1, 2]  # zstd, lz4, gzip, snappy
MAX_INSTANCES = 16384
INSTANCE_EXPIRY_MS = 60_000


class InvalidSubscription(ValueError):
    """A client-metrics config Kafka refuses: ``code`` is the error to answer."""

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code


def _list(value: str | None) -> list[str]:
    return [v.strip() for v in (value or "").split(",") if v.strip()]


class Subscription:
    __slots__ = ("name", "metrics", "interval_ms", "match")

    def __init__(self, name: str, configs: dict):
        """Validate ``configs`` as Kafka's ClientMetricsConfigs does; raises
        InvalidSubscription."""
        if not name:
            raise InvalidSubscription(errors.INVALID_REQUEST, "Subscription name can't be empty")
        for key in configs:
            if key not in CONFIG_NAMES:
                raise InvalidSubscription(errors.INVALID_REQUEST,
                                          f"Unknown client metrics configuration: {key}")
        self.name = name
        self.metrics = set(_list(configs.get(METRICS)))
        try:
            self.interval_ms = int(configs.get(INTERVAL_MS) or INTERVAL_MS_DEFAULT)
        except ValueError:
            raise InvalidSubscription(errors.INVALID_CONFIG, "Invalid value "
                                      f"{configs.get(INTERVAL_MS)} for configuration "
                                      f"{INTERVAL_MS}: Not a number of type INT") from None
        if not MIN_INTERVAL_MS <= self.interval_ms <= MAX_INTERVAL_MS:
            raise InvalidSubscription(errors.INVALID_REQUEST,
                                      f"Invalid value {self.interval_ms} for {INTERVAL_MS}, "
                                      "interval must be between 100 and 3600000 (1 hour)")
        self.match = {}
        for pattern in _list(configs.get(MATCH)):
            param, sep, regex = pattern.partition("=")
            param = param.strip()
            if not sep or "=" in regex or param not in MATCH_PARAMS:
                raise InvalidSubscription(errors.INVALID_CONFIG,
                                          f"Illegal client matching pattern: {pattern}")
            try:
                self.match[param] = re.compile(regex.strip())
            except re.error:
                raise InvalidSubscription(errors.INVALID_CONFIG,
                                          f"Illegal client matching pattern: {pattern}") from None

    def matches(self, client: dict) -> bool:
        return all(p.fullmatch(client.get(k, "")) for k, p in self.match.items())


class Series:
    """One pushed metric of one client: its kind, latest value and help text."""

    __slots__ = ("kind", "value", "help")

    def __init__(self, kind: str, value: float, help_: str):
        self.kind, self.value, self.help = kind, value, help_


class ClientInstance:
    __slots__ = ("id", "client", "subscription_id", "version", "metrics", "interval_ms",
                 "last_get_ms", "last_push_ms", "terminating", "last_error", "seen_ms",
                 "series")

    def __init__(self, instance_id: uuid.UUID, client: dict, subscriptions, version: int):
        self.id = instance_id
        self.client = client  # the match parameters' values for this client
        self.version = version
        interval, metrics, everything = INTERVAL_MS_DEFAULT, set(), False
        for s in subscriptions:
            if s.matches(client):
                everything = everything or ALL_METRICS in s.metrics
                metrics |= s.metrics
                interval = min(interval, s.interval_ms)
        self.metrics = {ALL_METRICS} if everything else metrics
        self.interval_ms = interval
        # Kafka's id: CRC32C of the subscribed metrics and interval, xor the instance's hash
        text = "[" + ", ".join(sorted(self.metrics)) + "]" + str(interval)
        crc = crc32c(text.encode()) ^ (instance_id.int & 0x7FFFFFFF)
        self.subscription_id = crc - (1 << 32) if crc >= 1 << 31 else crc
        self.last_get_ms = self.last_push_ms = 0
        self.terminating = False
        self.last_error = errors.NONE
        self.seen_ms = 0
        self.series: dict[tuple, Series] = {}

    def requested_metrics(self) -> list[str]:
        """What GetTelemetrySubscriptions asks for: [] none, [""] all, else the prefixes."""
        return [""] if ALL_METRICS in self.metrics else sorted(self.metrics)


class ClientMetricsManager:
    def __init__(self, max_bytes: int, now_ms=None):
        self.max_bytes = max_bytes
        self.subscriptions: dict[str, Subscription] = {}
        self.version = 0  # bumped at every subscription change: instances re-evaluate
        self.instances: OrderedDict[uuid.UUID, ClientInstance] = OrderedDict()
        self._now_ms = now_ms or (lambda: int(time.time() * 1000))

    # -- subscriptions ------------------------------------------------------------------------
    def update(self, name: str, configs: dict) -> None:
        """Set subscription ``name`` (no configs: remove it). Raises InvalidSubscription."""
        if not configs:
            if self.subscriptions.pop(name, None) is not None:
                self.version += 1
            return
        self.subscriptions[name] = Subscription(name, configs)
        self.version += 1

    # -- clients ------------------------------------------------------------------------------
    def _instance(self, instance_id: uuid.UUID, client: dict, now: int) -> ClientInstance:
        inst = self.instances.get(instance_id)
        if inst is None or inst.version < self.version:
            fresh = ClientInstance(instance_id, {**client, "client_instance_id": str(instance_id)},
                                   self.subscriptions.values(), self.version)
            if inst is not None:  # re-evaluated after a subscription change: asks at once
                fresh.series = inst.series
            inst = self.instances[instance_id] = fresh
        self.instances.move_to_end(instance_id)
        inst.seen_ms = now
        self._expire(now)
        return inst

    def _expire(self, now: int) -> None:
        while self.instances:
            oldest = next(iter(self.instances.values()))
            idle = now - oldest.seen_ms
            if len(self.instances) <= MAX_INSTANCES and \
                    idle < max(INSTANCE_EXPIRY_MS, 3 * oldest.interval_ms):
                return
            del self.instances[oldest.id]

    def get_subscriptions(self, instance_id: uuid.UUID | None, client: dict):
        """GetTelemetrySubscriptions: (error, instance)."""
        now = self._now_ms()
        if instance_id is None or instance_id.int == 0:
            instance_id = uuid.uuid4()
        inst = self._instance(instance_id, client, now)
        if now - max(inst.last_get_ms, inst.last_push_ms) < inst.interval_ms and \
                inst.last_error not in (errors.UNKNOWN_SUBSCRIPTION_ID,
                                        errors.UNSUPPORTED_COMPRESSION_TYPE):
            return errors.THROTTLING_QUOTA_EXCEEDED, inst
        inst.last_get_ms = now
        inst.last_error = errors.NONE
        return errors.NONE, inst

    def push(self, instance_id, client: dict, subscription_id: int, terminating: bool,
             compression: int, payload: bytes) -> int:
        """PushTelemetry: the error code to answer."""
        if instance_id is None or instance_id.int in (0, 1):
            return errors.INVALID_REQUEST
        now = self._now_ms()
        inst = self._instance(instance_id, client, now)
        code = self._check_push(inst, subscription_id, terminating, compression, payload, now)
        inst.terminating = inst.terminating or terminating
        if code == errors.NONE and payload:
            try:
                self._store(inst, decompress(compression, payload, self.max_bytes))
            except TooLarge:  # the client may shrink its set: not a reason to stop pushing
                code = errors.TELEMETRY_TOO_LARGE
            except ValueError as e:  # undecodable: INVALID_RECORD tells the client to stop
                log.warning("client %s pushed metrics that cannot be read: %s", instance_id, e)
                code = errors.INVALID_RECORD
        inst.last_error = code
        return code

    def _check_push(self, inst, subscription_id, terminating, compression, payload, now) -> int:
        if inst.terminating:
            return errors.INVALID_REQUEST
        if not (inst.last_get_ms > inst.last_push_ms or now - inst.last_push_ms >=
                inst.interval_ms or terminating):
            return errors.THROTTLING_QUOTA_EXCEEDED
        inst.last_push_ms = now
        if subscription_id != inst.subscription_id:
            return errors.UNKNOWN_SUBSCRIPTION_ID
        if compression != NONE and compression not in CODEC_NAMES:
            return errors.UNSUPPORTED_COMPRESSION_TYPE
        if payload and len(payload) > self.max_bytes:
            return errors.TELEMETRY_TOO_LARGE
        return errors.NONE

    def _store(self, inst: ClientInstance, raw: bytes) -> None:
        from google.protobuf.message import DecodeError
        from opentelemetry.proto.metrics.v1.metrics_pb2 import AggregationTemporality, MetricsData

        data = MetricsData()
        try:
            data.ParseFromString(raw)
        except DecodeError as e:
            raise ValueError(f"not OTLP metrics: {e}") from None
        delta = AggregationTemporality.AGGREGATION_TEMPORALITY_DELTA
        for rm in data.resource_metrics:
            for sm in rm.scope_metrics:
                for m in sm.metrics:
                    kind = m.WhichOneof("data")
                    if kind == "gauge":
                        points, accumulate, ptype = m.gauge.data_points, False, "gauge"
                    elif kind == "sum":
                        points = m.sum.data_points
                        accumulate = m.sum.aggregation_temporality == delta
                        ptype = "counter" if m.sum.is_monotonic else "gauge"
                    else:
                        continue  # histograms and summaries: no client sends them today
                    for p in points:
                        value = p.as_double if p.WhichOneof("value") == "as_double" else p.as_int
                        key = (m.name, tuple(sorted((a.key, _attribute(a.value))
                                                    for a in p.attributes)))
                        old = inst.series.get(key)
                        if accumulate and old is not None:
                            value += old.value
                        inst.series[key] = Series(ptype, value, m.description)

    # -- Prometheus ---------------------------------------------------------------------------
    def families(self):
        """Every client's pushed series as (prometheus name, type, help, [(labels, value)])."""
        out: dict[str, tuple] = {}
        for inst in self.instances.values():
            client = {k: inst.client.get(k, "") for k in MATCH_PARAMS[:4]}
            for (name, attrs), s in inst.series.items():
                metric = prometheus_name(name)
                fam = out.setdefault(metric, (s.kind, s.help or name, []))
                labels = {**client, **{prometheus_name(k): v for k, v in attrs}}
                fam[2].append((labels, s.value))
        return [(name, *fam) for name, fam in sorted(out.items())]


def _attribute(v) -> str:
    kind = v.WhichOneof("value")
    return "" if kind is None else str(getattr(v, kind))


_INVALID = re.compile(r"[^a-zA-Z0-9_]")


def prometheus_name(name: str) -> str:
    """``org.apache.kafka.producer.node.request.latency.avg`` ->
    ``org_apache_kafka_producer_node_request_latency_avg``."""
    out = _INVALID.sub("_", name)
    return "_" + out if out[:1].isdigit() else out
