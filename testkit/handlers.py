"""A harness for the request handlers without sockets: ``call(services, API, request)`` runs
``handle_<api>(services, ctx, request)`` the way the dispatch does and returns the response
object.

``Services`` is what handlers use of the broker today (``broker.<name>`` in broker/handlers/),
built from the real parts where they are cheap: a ``LocalMetadataStore`` and a ``LogManager``
in a temporary directory, the ``ReplicaManager`` leading every partition (a single broker),
the group coordinator over an ``InMemoryOffsetsLog`` and a ``FakeClock``, the fetch sessions,
quotas and client metrics; fakes where the real part needs the process (dynamic configs are
plain dicts, no authorizer unless one is given). Asking for anything else fails with the name
of what is missing, so a handler test says which part it needs before it runs on a stub."""
from __future__ import annotations

import asyncio
import functools
import inspect
import uuid
from pathlib import Path
from types import SimpleNamespace

from josefk.broker.app import Broker
from josefk.broker.client_metrics import ClientMetricsManager
from josefk.broker.config import BrokerConfig
from josefk.broker.control.metadata import BrokerInfo, LocalMetadataStore
from josefk.broker.dispatch import served
from josefk.broker.fetch_sessions import FetchSessionCache
from josefk.broker.group_log import GroupTopics
from josefk.broker.handlers.metadata import TopicMetadataCache
from josefk.broker.replication.replica import ReplicaManager
from josefk.broker.security.quotas import LocalQuotaStore, QuotaManager
from josefk.broker.connection import RequestContext
from josefk.coordinator import FakeClock, GroupCoordinator, InMemoryOffsetsLog, OffsetStore
from josefk.storage.config import LogConfig
from josefk.storage.manager import LogManager
from josefk.wire import headers

HOST, PORT = "127.0.0.1", 9092


class DynamicConfigs:
    """The dynamic config layers handlers read (``broker.dynamic``), as plain dicts: the real
    ``DynamicConfigs`` persists them and follows ZooKeeper."""

    def __init__(self):
        self.per_broker: dict[str, str] = {}
        self.cluster_default: dict[str, str] = {}
        self.client_metrics: dict[str, dict[str, str]] = {}
        self.groups: dict[str, dict[str, str]] = {}


class Connection:
    """What handlers read and set on ``ctx.connection``: the listener, the principal and the
    client's software (ApiVersions v3+)."""

    def __init__(self, principal: str = "User:ANONYMOUS", listener: str = "PLAINTEXT"):
        self.security = SimpleNamespace(principal=principal,
                                        listener=SimpleNamespace(name=listener))
        self.client_software = None


class Services:
    """The broker's parts as handlers use them, in one process and one directory, no socket."""

    api_versions = functools.cached_property(Broker.api_versions.func)
    features = functools.cached_property(Broker.features.func)

    def __init__(self, log_dir, props: dict | None = None, authorizer=None):
        log_dir = Path(log_dir)
        self.config = BrokerConfig({"log.dirs": str(log_dir), **(props or {})})
        node = self.config.node_id
        self.info = BrokerInfo(node, HOST, PORT, None, {"PLAINTEXT": (HOST, PORT)})
        self.metadata = LocalMetadataStore(str(log_dir), self.info, uuid.uuid4().hex[:22])
        self.logs = LogManager([str(log_dir)], LogConfig.from_props({},
                                                                    self.config.topic_defaults()))
        self.replicas = ReplicaManager(self.config, self.logs, self.metadata, node, None)
        self.replicas.lead_locally(self.metadata)
        self.cluster = None
        self.authorizer = authorizer
        self.dynamic = DynamicConfigs()
        self.handlers = served(self.config)
        self.topic_metadata = TopicMetadataCache(self.metadata)
        self.fetch_sessions = FetchSessionCache(
            self.config.int("max.incremental.fetch.session.cache.slots"),
            self.config.int("min.incremental.fetch.session.eviction.ms"))
        self.quotas = QuotaManager(self.config, LocalQuotaStore(str(log_dir)))
        self.client_metrics = ClientMetricsManager(self.config.int("telemetry.max.bytes"))
        self.clock = FakeClock()
        self.offsets_log = InMemoryOffsetsLog()
        self.groups = GroupCoordinator(self.config.props, OffsetStore(self.offsets_log),
                                       self.clock, topics=GroupTopics(self.metadata))
        self.groups.startup(enable_expiration=False)

    def __getattr__(self, name):
        raise AttributeError(f"the handler harness (testkit/handlers.py) has no broker.{name}; "
                             f"add the part the handler needs there")

    def create_topic(self, name: str, partitions: int = 1, configs: dict | None = None):
        """A topic as CreateTopics makes it, its partitions led here."""
        return run(self.metadata.create_topic(name, partitions, 1, configs or {}))

    def close(self) -> None:
        self.groups.shutdown()
        self.logs.close()


def context(api, version: int, connection: Connection | None = None,
            client_id: str = "harness") -> RequestContext:
    """The request context the dispatch hands a handler, with a fake connection."""
    return RequestContext(headers.RequestHeader(api.key, version, 1, client_id), api, HOST,
                          connection or Connection())


def run(value):
    """The value, or what an awaitable resolves to on a fresh event loop."""
    return asyncio.run(_resolve(value)) if inspect.isawaitable(value) else value


async def _resolve(awaitable):
    return await awaitable


def call(services: Services, api, request, version: int | None = None,
         connection: Connection | None = None):
    """``handle_<api>(services, ctx, request)`` at ``version`` (default: the latest), as the
    dispatch calls it; the response object, awaited if the handler is async."""
    version = api.max_version if version is None else version
    ctx = context(api, version, connection)
    ctx.request = request
    return run(services.handlers[api.key](services, ctx, request))
