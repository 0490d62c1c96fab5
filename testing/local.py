"""`broker()`: a josefk broker inside the test's own process, on its own event-loop thread.

It is a guest there: it installs no signal handler, configures no logging (its records go to
the ``josefk`` loggers, which the test's logging shows or not), changes no process limit, and
takes an ephemeral port and a temporary log dir that are gone once it is closed.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import shutil
import tempfile
import threading

from josefk.broker.config import BrokerConfig
from josefk.broker.security.listeners import advertised_listeners
from josefk.testing.admin import Admin, property_text
from josefk.testing.faults import Faults
from josefk.testing.lifecycle import Lifecycle

# What a test broker changes from Kafka's defaults: one broker holds every replica of the
# internal topics, a group's first rebalance starts at once, and its few partitions are made
# at the first use of a group or a transaction.
TEST_DEFAULTS = {
    "listeners": "PLAINTEXT://127.0.0.1:0",
    "group.initial.rebalance.delay.ms": "0",
    "offsets.topic.replication.factor": "1",
    "offsets.topic.num.partitions": "5",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "transaction.state.log.num.partitions": "5",
    "josefk.testing.control.port": "0",
}
START_TIMEOUT = 30.0
STOP_TIMEOUT = 30.0


def kafka_properties(properties: dict | None, keywords: dict) -> dict[str, str]:
    """Properties given as a dict of Kafka names, and as keywords with ``_`` for ``.``
    (``num_partitions=3`` is ``num.partitions``; no Kafka property has an underscore)."""
    props = {k: property_text(v) for k, v in (properties or {}).items()}
    props.update({k.replace("_", "."): property_text(v) for k, v in keywords.items()})
    return props


def broker(properties: dict | None = None, /, *, topics=None, **keywords) -> "EmbeddedBroker":
    """Start a broker in this process and return it once it serves; close it (or use it as a
    context manager) to stop it and remove its data::

        with josefk.testing.broker(topics={"orders": 3}) as b:
            Producer({"bootstrap.servers": b.bootstrap_servers})...

    ``properties`` are Kafka broker properties (``{"num.partitions": 3}``), also as keywords
    (``num_partitions=3``); ``topics`` are created before it returns (names, or a mapping of
    names to partition counts or to ``{"partitions": n, "config": {...}}``)."""
    return EmbeddedBroker(kafka_properties(properties, keywords), topics)


class EmbeddedBroker(Admin, Faults, Lifecycle):
    """A josefk broker served by a thread of this process. ``bootstrap_servers`` is its
    address; `create_topic` makes topics; `inject`, `delay` and `clear_faults` put faults
    on it."""

    def __init__(self, properties: dict[str, str], topics=None):
        self.log_dir = tempfile.mkdtemp(prefix="josefk-testing-")
        self._loop = self._stop = None
        started = concurrent.futures.Future()
        self._thread = threading.Thread(target=self._run, args=(started,), name="josefk-broker",
                                        daemon=True)

        def start():
            self.config = BrokerConfig({**TEST_DEFAULTS, "log.dirs": self.log_dir, **properties})
            self._thread.start()
            started.result(START_TIMEOUT)

        self._start(start, topics)

    @property
    def bootstrap_servers(self) -> str:
        first = advertised_listeners(self.config)[0]
        return f"{first.host}:{first.port}"

    @property
    def node_id(self) -> int:
        return self.config.node_id

    def _close(self) -> None:
        """Stop the broker (as a clean shutdown) and remove its log dir."""
        if self._thread.is_alive() and self._loop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        if self._thread.ident is not None:
            self._thread.join(STOP_TIMEOUT)
        shutil.rmtree(self.log_dir, ignore_errors=True)

    def __repr__(self) -> str:
        return f"<josefk.testing broker {self.node_id} on {self.bootstrap_servers}>"

    # -- the broker's thread -------------------------------------------------------------------
    def _run(self, started: concurrent.futures.Future) -> None:
        try:
            import uvloop
            loop = uvloop.new_event_loop()
        except ImportError:
            loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(self._serve(started))
        finally:
            loop.close()

    async def _serve(self, started: concurrent.futures.Future) -> None:
        from josefk.broker.app import Broker

        self._loop, self._stop = asyncio.get_running_loop(), asyncio.Event()
        b = None
        try:
            b = Broker(self.config)
            await b.start()
        except BaseException as e:
            started.set_exception(e)
            if b is not None:
                with contextlib.suppress(Exception):  # what it started, as far as it can
                    await b.stop()
            return
        self.control = ("127.0.0.1", b.faults.port)
        started.set_result(None)
        await self._stop.wait()
        await b.stop()
