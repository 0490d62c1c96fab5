"""Bounds on what clients can make the broker hold, under Kafka's property names.

- ``max.connections`` / ``max.connections.per.ip``: a connection over either limit is closed as
  soon as it is accepted (Kafka closes per-IP excess the same way; for the broker-wide limit it
  stops accepting instead, which asyncio's server cannot do per connection).
- ``connections.max.idle.ms``: a connection with no bytes in or out and no request in progress
  for that long is closed (Kafka's default: 10 minutes).
- ``queued.max.request.bytes``: a memory pool, as Kafka's SimpleMemoryPool (non-strict): a
  connection must reserve the declared size of the request it is receiving before reading more
  of it; while the pool is exhausted its reading is paused, so half-sent frames cannot add up
  to more than the pool plus one request. -1 means unbounded.
- The open-file limit: every connection and every segment file takes a descriptor, so at start
  the broker raises its soft ``RLIMIT_NOFILE`` to the hard limit (Kafka's documentation asks
  operators for a high limit; the soft default of 1024 would refuse the 1,000th connection).
"""
from __future__ import annotations

import asyncio
import collections
import logging
import resource

log = logging.getLogger("josefk.server")


def raise_open_file_limit() -> int:
    """Raise the soft open-file limit to the hard one; returns the soft limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError) as e:  # e.g. a hard limit above the kernel's nr_open
            log.warning("cannot raise the open-file limit from %d to %d: %s", soft, hard, e)
    return soft


class MemoryPool:
    """Kafka's SimpleMemoryPool in non-strict mode: an allocation succeeds while any memory is
    left (so one request larger than what remains still makes progress)."""

    def __init__(self, capacity: int):
        self.capacity = capacity
        self.available = capacity
        self.waiting = collections.deque()  # callables retried when memory is released

    @property
    def bounded(self) -> bool:
        return self.capacity >= 0

    def try_allocate(self, n: int) -> bool:
        if not self.bounded:
            return True
        if self.available < 1:
            return False
        self.available -= n
        return True

    def release(self, n: int) -> None:
        if not self.bounded or n == 0:
            return
        self.available += n
        while self.waiting and self.available >= 1:
            self.waiting.popleft()()


class ConnectionLimits:
    """Admission, idle expiry and the request memory pool for one listener."""

    def __init__(self, config):
        self.max_connections = config.int("max.connections")
        self.max_per_ip = config.int("max.connections.per.ip")
        self.idle_ms = config.int("connections.max.idle.ms")
        self.pool = MemoryPool(config.int("queued.max.request.bytes"))
        self.per_ip = collections.Counter()
        self.count = 0
        self.expiry = None

    def admit(self, host: str) -> str | None:
        """Count a new connection from ``host``; the reason to refuse it, or None."""
        if self.count >= self.max_connections:
            return f"max.connections ({self.max_connections}) reached"
        if self.per_ip[host] >= self.max_per_ip:
            return f"max.connections.per.ip ({self.max_per_ip}) reached for {host}"
        self.count += 1
        self.per_ip[host] += 1
        return None

    def forget(self, host: str) -> None:
        self.count -= 1
        self.per_ip[host] -= 1
        if not self.per_ip[host]:
            del self.per_ip[host]

    def start(self, connections, is_serving) -> None:
        """Run the idle expiry over ``connections`` while ``is_serving()``."""
        self.expiry = asyncio.ensure_future(self._expire_idle(connections, is_serving))

    async def _expire_idle(self, connections, is_serving) -> None:
        """Close connections idle for ``connections.max.idle.ms`` until the server stops."""
        loop = asyncio.get_running_loop()
        period = max(0.01, min(self.idle_ms / 4000, 30.0))
        while is_serving():
            await asyncio.sleep(period)
            now = loop.time()
            for c in [c for c in connections if c.idle_since(now) * 1000 >= self.idle_ms]:
                log.info("closing connection from %s: idle for more than %d ms", c.client_host,
                         self.idle_ms)
                c.close()

