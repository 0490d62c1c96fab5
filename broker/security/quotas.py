"""Client quotas (KIP-13, KIP-55, KIP-124): byte rates for produce and fetch and a request
percentage, per user, client id or both, with defaults (entity name None = ``<default>``).

A client's quota for a key is the first configured one in Kafka's precedence order; usage is
measured over ``quota.window.num`` windows of ``quota.window.size.seconds`` and a client over
its quota is throttled for ``(rate - quota) / quota * window`` ms: the answer carries that
``throttle_time_ms`` and a `Throttle` for the connection, which reads nothing more from the
client for that long.

``request_percentage`` counts the time the broker works on a client's requests (decoding,
handling, encoding: Kafka's request handler and network thread time), in percent of one thread
over the quota window. Inter-broker requests, SASL exchanges and what a SASL connection sends
before it has authenticated are exempt, as in Kafka (whose authenticator answers those).
"""
from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path

from josefk.broker.security.listeners import Reply, Throttle
from josefk.wire.apis.fetch import fetching_replica_id

PRODUCE, FETCH, REQUEST = "producer_byte_rate", "consumer_byte_rate", "request_percentage"
KEYS = (PRODUCE, FETCH, REQUEST, "controller_mutation_rate")
USER, CLIENT = "user", "client-id"
DEFAULT = "<default>"

# Kafka's precedence: which (user, client-id) entity shapes to try, most specific first.
# "u"/"c" take the client's own names, DEFAULT the default entity, None leaves the part out.
PRECEDENCE = [("u", "c"), ("u", DEFAULT), ("u", None), (DEFAULT, "c"), (DEFAULT, DEFAULT),
              (DEFAULT, None), (None, "c"), (None, DEFAULT)]


class Rate:
    """A windowed rate as Kafka measures it: ``samples`` windows of ``window_s`` seconds; windows
    older than ``samples * window_s`` are forgotten."""

    __slots__ = ("samples", "window_s", "windows")

    def __init__(self, samples: int, window_s: float):
        self.samples, self.window_s = samples, window_s
        self.windows: list[list[float]] = []  # [start, total], oldest first

    def record(self, value: float, now: float) -> None:
        self._purge(now)
        if not self.windows or now >= self.windows[-1][0] + self.window_s:
            self.windows.append([now, 0.0])
        self.windows[-1][1] += value

    def _purge(self, now: float) -> None:
        horizon = now - self.samples * self.window_s
        while self.windows and self.windows[0][0] + self.window_s <= horizon:
            self.windows.pop(0)

    def elapsed(self, now: float) -> float:
        """The time the rate is measured over: at least ``samples - 1`` full windows, so a
        first burst is not judged over a few milliseconds."""
        self._purge(now)
        elapsed = now - self.windows[0][0] if self.windows else 0.0
        full = int(elapsed / self.window_s)
        if full < self.samples - 1:
            elapsed += (self.samples - 1 - full) * self.window_s
        return elapsed

    def rate(self, now: float) -> float:
        """Per second."""
        elapsed = self.elapsed(now)
        return sum(t for _, t in self.windows) / elapsed if elapsed > 0 else 0.0


class QuotaManager:
    def __init__(self, config, store):
        self.store = store
        self.samples = int(config.get("quota.window.num") or 11)
        self.window_s = float(config.get("quota.window.size.seconds") or 1)
        self.quotas: dict[tuple, dict[str, float]] = {}
        self.rates: dict[tuple, Rate] = {}

    async def start(self) -> None:
        await self.reload()
        watch = getattr(self.store, "watch", None)
        if watch is not None:
            await watch(self.reload)

    async def reload(self) -> None:
        self.quotas = await self.store.load()

    async def alter(self, entity: tuple, values: dict[str, float | None]) -> None:
        current = dict(self.quotas.get(entity, {}))
        for k, v in values.items():
            if v is None:
                current.pop(k, None)
            else:
                current[k] = v
        await self.store.save(entity, current)
        if current:
            self.quotas[entity] = current
        else:
            self.quotas.pop(entity, None)

    def quota_for(self, key: str, user: str, client: str):
        """(sensor entity, quota) for the client, or None if no quota applies."""
        if not self.quotas:
            return None
        for u, c in PRECEDENCE:
            entity = tuple(p for p in ((USER, user if u == "u" else u),
                                       (CLIENT, client if c == "c" else c)) if p[1] is not None)
            q = self.quotas.get(entity, {}).get(key)
            if q is not None:
                sensor = tuple((t, user if t == USER else client) for t, _ in entity)
                return (key, sensor), q
        return None

    def record(self, key: str, user: str, client: str, value: float) -> int:
        """Record usage; the throttle time in ms (0 when within the quota)."""
        found = self.quota_for(key, user, client)
        if found is None:
            return 0
        sensor, quota = found
        now = time.monotonic()
        r = self.rates.get(sensor)
        if r is None:
            r = self.rates[sensor] = Rate(self.samples, self.window_s)
        r.record(value, now)
        rate = r.rate(now)
        if rate <= quota:
            return 0
        return min(int((rate - quota) / max(quota, 1e-9) * r.elapsed(now) * 1000),
                   int(self.samples * self.window_s * 1000))


# LeaderAndIsr, StopReplica, UpdateMetadata, ControlledShutdown, SaslHandshake, WriteTxnMarkers,
# SaslAuthenticate, AlterPartition: Kafka's cluster actions and SASL, never request-throttled.
REQUEST_EXEMPT = frozenset({4, 5, 6, 7, 17, 27, 36, 56})


def request_time(broker, ctx, response, seconds: float) -> int:
    """Count ``seconds`` of broker work on ``ctx``'s request against ``request_percentage``.
    Over the quota, ``response`` (None: count only) carries the throttle time, which is
    returned for the connection to mute the client (else 0). Replica fetches are exempt."""
    if ctx.api.key in REQUEST_EXEMPT or (ctx.api.key == 1 and ctx.request is not None
                                         and fetching_replica_id(ctx.request, ctx.version) >= 0):
        return 0
    throttle = broker.quotas.record(REQUEST, *client_of(ctx), seconds * 100)
    if not throttle or response is None:
        return 0
    if ctx.api.key == 1:  # a consumer's fetch over its quota goes out empty, as in Kafka
        _answer_empty(broker, ctx, response)
    if hasattr(response, "throttle_time_ms"):
        response.throttle_time_ms = max(response.throttle_time_ms or 0, throttle)
    return throttle


class TimedCoroutine:
    """Awaits a handler's coroutine, adding the time spent in each of its steps (not the time
    it waits) to ``ctx.work_s``."""

    __slots__ = ("coro", "ctx")

    def __init__(self, coro, ctx):
        self.coro, self.ctx = coro, ctx

    def __await__(self):
        coro, ctx = self.coro, self.ctx
        value, error = None, None
        while True:
            start = time.perf_counter()
            try:
                step = coro.throw(error) if error is not None else coro.send(value)
            except StopIteration as done:
                ctx.work_s += time.perf_counter() - start
                return done.value
            ctx.work_s += time.perf_counter() - start
            value, error = None, None
            try:
                value = yield step
            except BaseException as e:  # noqa: BLE001 - handed to the coroutine, as await does
                error = e


def client_of(ctx) -> tuple[str, str]:
    """(user, client id) of a request, as quotas see them."""
    principal = ctx.connection.security.principal
    return principal.split(":", 1)[1], ctx.client_id


class LocalQuotaStore:
    """Quotas of a broker without ZooKeeper, in ``quotas.json`` in the first log dir."""

    def __init__(self, log_dir: str):
        self.path = Path(log_dir) / "quotas.json"

    async def load(self) -> dict:
        if not self.path.exists():
            return {}
        return {tuple(tuple(p) for p in e): v for e, v in json.loads(self.path.read_text())}

    async def save(self, entity: tuple, values: dict) -> None:
        quotas = await self.load()
        if values:
            quotas[entity] = values
        else:
            quotas.pop(entity, None)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps([[list(map(list, e)), v] for e, v in quotas.items()]))
        os.replace(tmp, self.path)


# -- the hooks around Produce and Fetch (broker.dispatch) ------------------------------------------
def produce_quota(handler):
    """Produce counts the bytes of its batches against ``producer_byte_rate``."""
    def run(broker, ctx, req):
        result = handler(broker, ctx, req)
        q = broker.quotas
        if not q.quotas:
            return result
        size = sum(len(pd.records or b"") for td in req.topic_data for pd in td.partition_data)
        throttle = q.record(PRODUCE, *client_of(ctx), size)
        return _throttled(ctx, result, throttle)
    return run


def fetch_quota(handler):
    """A consumer's Fetch counts the bytes it returns against ``consumer_byte_rate``; a
    throttled fetch is answered empty (and not counted), as in Kafka."""
    def run(broker, ctx, req):
        result = handler(broker, ctx, req)
        if not broker.quotas.quotas:
            return result
        if asyncio.iscoroutine(result):
            return _fetched_later(broker, ctx, result)
        return _fetched(broker, ctx, result)
    return run


async def _fetched_later(broker, ctx, coro):
    return _fetched(broker, ctx, await coro)


def _fetched_bytes(resp) -> int:
    return sum(len(p.records or b"") for t in resp.responses for p in t.partitions)


def _fetched(broker, ctx, resp):
    size = _fetched_bytes(resp)
    throttle = broker.quotas.record(FETCH, *client_of(ctx), size) if size else 0
    if throttle:
        _answer_empty(broker, ctx, resp)
    return _throttled(ctx, resp, throttle)


def _answer_empty(broker, ctx, resp) -> None:
    """Drop a throttled fetch's data, and take its bytes back off the fetch quota (they are
    not sent), as Kafka does for a fetch throttled by either quota."""
    size = _fetched_bytes(resp)
    if size:
        broker.quotas.record(FETCH, *client_of(ctx), -size)
    resp.responses = []


def _throttled(ctx, result, throttle_ms: int):
    if not throttle_ms:
        return result
    if asyncio.iscoroutine(result):
        return _set_later(result, throttle_ms)
    if hasattr(result, "throttle_time_ms"):
        result.throttle_time_ms = throttle_ms
    return Reply(result, Throttle(throttle_ms))


async def _set_later(coro, throttle_ms):
    resp = await coro
    if hasattr(resp, "throttle_time_ms"):
        resp.throttle_time_ms = throttle_ms
    return Reply(resp, Throttle(throttle_ms))
