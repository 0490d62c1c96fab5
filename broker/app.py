"""The broker process: wires config, storage, metadata, replicas, coordinators and the server."""
from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from josefk.broker.config import BrokerConfig, ConfigError, parse_properties
from josefk.broker.client_metrics import ClientMetricsManager
from josefk.broker.dispatch import features, served
from josefk.broker.group_configs import GroupConfigs
from josefk.broker.group_log import OFFSETS_TOPIC, GroupTopics, InternalTopics, OffsetsTopicLog
from josefk.broker.injection import FaultInjector
from josefk.broker.control.metadata import (BrokerInfo, LocalMetadataStore, MetadataError,
                                            MetadataStore, topic_name_error)
from josefk.broker.security.quotas import LocalQuotaStore, QuotaManager
from josefk.broker.replication.replica import ReplicaManager, topic_log_config
from josefk.broker.security.authorizer import AclAuthorizer, LocalAclStore
from josefk.broker.dynamic import DynamicConfigs
from josefk.broker.links import LinkManager
from josefk.broker.fetch_sessions import FetchSessionCache
from josefk.broker.handlers.metadata import TopicMetadataCache
from josefk.broker.security import listeners as security
from josefk.broker.security.sasl import InterBrokerSecurity, LocalCredentialStore, check_mechanisms
from josefk.broker.security.listeners import ListenerSecurity
from josefk.broker.limits import ConnectionLimits
from josefk.broker.server import serve
from josefk.broker.share.manager import SharePartitionManager
from josefk.broker.share.persister import SHARE_STATE_TOPIC, Persister
from josefk.broker.txn import HOLD_MARKERS, TXN_TOPIC, TxnMarkerWriter
from josefk.coordinator import AsyncioClock, GroupCoordinator, OffsetStore
from josefk.coordinator.group.share_groups import ShareGroups
from josefk.coordinator.share.share_state import ShareCoordinator
from josefk.broker.control.producer_id_blocks import ZkBlocks
from josefk.coordinator.txn.producer_ids import FileBlocks, ProducerIdManager
from josefk.coordinator.txn.txn_coordinator import TransactionCoordinator
from josefk.storage.cleaner import LogCleaner
from josefk.storage.config import LogConfig
from josefk.storage.manager import LogManager
from josefk.wire import errors, recscan
from josefk.wire.types import uuid_to_base64
from josefk.wire.apis import API_BY_KEY, API_VERSIONS
from josefk.zk.client import ZkClient
from josefk.broker.security.zk_acls import ZkAclStore
from josefk.broker.security.zk_credentials import ZkCredentialStore, ZkQuotaStore
from josefk.broker.control.zk_metadata import ZkMetadataStore

log = logging.getLogger("josefk")
TXN_LOG_TIMEOUT_MS = 30000  # Kafka waits request.timeout.ms for __transaction_state appends


def object_store(cfg):
    """The object store remote segments go to, as remote.log.storage.josefk.* say (an S3
    bucket made when missing)."""
    from josefk.tiered.store import S3Store, open_store

    try:
        store = open_store(cfg.get, Path(cfg.log_dirs[0]).parent / "remote-storage")
    except ValueError as e:
        raise ConfigError(str(e)) from None
    if isinstance(store, S3Store):
        store.ensure_bucket()
    return store


METADATA_CLIENT = "remote.log.metadata.common.client."


def metadata_clients(cfg, inter) -> tuple[dict, dict, dict]:
    """librdkafka settings of ``__remote_log_metadata``'s admin, producer and consumer: the
    inter-broker listener's security (``inter``: `InterBrokerSecurity`), then Kafka's
    ``remote.log.metadata.common.client.*``, and ``remote.log.metadata.producer.*`` /
    ``.consumer.*`` for each (a ``sasl.jaas.config`` and Java's TLS stores translated)."""
    from josefk.broker.security.sasl import client_credentials, rdkafka_tls

    def prefixed(prefix):
        props = {k[len(prefix):]: v for k, v in cfg.props.items() if k.startswith(prefix)}
        if any(k.startswith(("ssl.truststore.", "ssl.keystore.")) for k in props):
            tls = rdkafka_tls(props.get)
            props = {k: v for k, v in props.items()
                     if not k.startswith(("ssl.truststore.", "ssl.keystore."))}
            props.update(tls)
        if "sasl.jaas.config" in props:
            credentials = client_credentials(props)
            del props["sasl.jaas.config"]
            if credentials is None:
                raise ConfigError(f"{prefix}sasl.jaas.config needs username and password")
            props["sasl.username"], props["sasl.password"] = credentials
        return props

    common = {**inter.client_config(), **prefixed(METADATA_CLIENT)}
    return (common, {**common, **prefixed("remote.log.metadata.producer.")},
            {**common, **prefixed("remote.log.metadata.consumer.")})


def bucket_opener(cfg):
    """Another bucket of the object store's endpoint and credentials (a read-replica topic
    names it), never made; None for the local engine, whose only bucket is its directory."""
    from josefk.tiered.store import open_store

    if (cfg.get("remote.log.storage.josefk.store") or "local") != "s3":
        return None

    def open_bucket(bucket: str):
        return open_store(lambda name: bucket if name == "remote.log.storage.josefk.s3.bucket"
                          else cfg.get(name), None)
    return open_bucket


def _read_properties(path: Path) -> dict:
    return parse_properties(path.read_text()) if path.exists() else {}


def stored_cluster_id(log_dirs: list[str]) -> str | None:
    """The cluster id recorded in the log dirs' meta.properties, if any."""
    for d in log_dirs:
        cluster_id = _read_properties(Path(d) / "meta.properties").get("cluster.id")
        if cluster_id:
            return cluster_id
    return None


def ensure_cluster_id(log_dirs: list[str], node_id: int, cluster_id: str | None = None) -> str:
    """Read or create meta.properties in every log dir, Kafka style. A ``cluster_id`` given
    (from ZooKeeper) must match what the log dirs recorded: a broker never joins another
    cluster with its data."""
    stored = stored_cluster_id(log_dirs)
    if cluster_id is not None and stored is not None and stored != cluster_id:
        raise ConfigError(
            f"The Cluster ID {cluster_id} doesn't match stored clusterId {stored} in "
            "meta.properties. The broker is trying to join the wrong cluster. Configured "
            "zookeeper.connect may be wrong.")
    cluster_id = cluster_id or stored or uuid_to_base64(uuid.uuid4())
    for d in log_dirs:
        p = Path(d) / "meta.properties"
        if not p.exists():
            p.write_text(f"version=0\nbroker.id={node_id}\ncluster.id={cluster_id}\n")
    return cluster_id


class Broker:
    def __init__(self, config: BrokerConfig):
        self.config = config
        self.connections = set()
        # The parts only some brokers run are imported by those alone (the Prometheus client,
        # the controller and the replica fetchers): a single broker starts without them.
        self.client_metrics = ClientMetricsManager(config.int("telemetry.max.bytes"))
        self.servers = []
        self._tasks = []
        self._housekeeping = ThreadPoolExecutor(1, thread_name_prefix="josefk-housekeeping")
        dirs = config.log_dirs
        for d in dirs:
            Path(d).mkdir(parents=True, exist_ok=True)
        self.listeners = [ListenerSecurity(config, e) for e in security.listeners(config)]
        for listener in self.listeners:
            if listener.sasl:
                check_mechanisms(listener.mechanisms)
        endpoints = {e.listener: (e.host, e.port) for e in security.advertised_listeners(config)}
        host, port = endpoints[security.inter_broker_listener(config)]
        self.info = BrokerInfo(config.node_id, host, port, config.get("broker.rack"), endpoints)
        self.zk = self.cluster = self.inter_broker = None
        self.metadata: MetadataStore
        self.credentials: ZkCredentialStore | LocalCredentialStore
        if config.get("zookeeper.connect"):
            self.inter_broker = InterBrokerSecurity(config)
            self.zk = ZkClient(config.get("zookeeper.connect"),
                               config.int("zookeeper.session.timeout.ms"),
                               config.int("zookeeper.connection.timeout.ms"))
            self.metadata = ZkMetadataStore(self.zk, self.info, config)
            self.credentials = ZkCredentialStore(self.zk)
        else:
            self.metadata = LocalMetadataStore(dirs[0], self.info,
                                               ensure_cluster_id(dirs, config.node_id))
            self.credentials = LocalCredentialStore(dirs[0])
        self.authorizer = None
        if config.get("authorizer.class.name"):
            self.authorizer = AclAuthorizer(config, ZkAclStore(self.zk) if self.zk is not None
                                            else LocalAclStore(dirs[0]))
        self.quotas = QuotaManager(config, ZkQuotaStore(self.zk) if self.zk is not None
                                   else LocalQuotaStore(dirs[0]))
        self.logs = LogManager(dirs, LogConfig.from_props({}, config.topic_defaults()),
                               config_for=self._log_config_for)
        if self.zk is not None:
            from josefk.broker.control.cluster import ClusterMember

            self.cluster = ClusterMember(config, self.zk, self.metadata, self.inter_broker)
        self.internal_topics = InternalTopics(config, self.metadata, self.cluster is not None)
        self.replicas = ReplicaManager(config, self.logs, self.metadata, config.node_id,
                                       self.cluster.isr_changes if self.cluster else None)
        if self.cluster is not None:
            from josefk.broker.replication.fetcher import FetcherManager

            self.replicas.fetchers = FetcherManager(
                config.node_id, lambda b: self.cluster.channel("fetch", b), config)
            self.replicas.dir_failure_listeners.append(self.cluster.log_dir_failed)
            self.replicas.session = self.cluster.session
        self.replicas.role_listeners.append(self._on_role_change)
        self.topic_metadata = TopicMetadataCache(self.metadata)
        self.fetch_sessions = FetchSessionCache(
            config.int("max.incremental.fetch.session.cache.slots"),
            config.int("min.incremental.fetch.session.eviction.ms"))
        self.producer_ids = ProducerIdManager(
            ZkBlocks(self.zk, config.node_id) if self.zk is not None
            else FileBlocks(Path(dirs[0]) / "producer-id-block"))
        def may_serve(topic):  # a coordinator's may_serve(partition): its leadership not fenced
            return lambda index: not self.replicas.fenced_leader(topic, index)
        try:
            self.groups = GroupCoordinator(config.props, OffsetStore(OffsetsTopicLog(
                self.replicas, config.int("offsets.commit.required.acks"),
                config.int("offsets.commit.timeout.ms"))), may_serve=may_serve(OFFSETS_TOPIC),
                topics=GroupTopics(self.metadata))
        except ValueError as e:   # a group.consumer.* setting out of Kafka's bounds
            raise ConfigError(str(e)) from None
        self.txn = TransactionCoordinator(
            config.props, OffsetsTopicLog(self.replicas, -1, TXN_LOG_TIMEOUT_MS, TXN_TOPIC),
            self.producer_ids,
            TxnMarkerWriter(self.replicas, self.groups, self.metadata, config.node_id,
                            self.cluster, config.bool(HOLD_MARKERS)),
            may_serve=may_serve(TXN_TOPIC))
        # share groups (KIP-932): members at the group coordinator, share-partitions at the
        # partitions' leaders, their state at the share coordinator of __share_group_state
        self.group_configs = GroupConfigs(config)
        self.share_state = ShareCoordinator(
            config.props,
            OffsetsTopicLog(self.replicas, -1, TXN_LOG_TIMEOUT_MS, SHARE_STATE_TOPIC),
            may_serve=may_serve(SHARE_STATE_TOPIC))
        self.share_persister = Persister(self.internal_topics, self.share_state, config.node_id,
                                         self.cluster)
        self.share_groups = ShareGroups(
            self.groups.catalog, self.groups.group_store.store, self._share_topics,
            self._share_settings, self._initialize_share_state, self.share_persister.delete,
            config.int("group.share.max.size"))
        self.share = SharePartitionManager(
            self.replicas, self.metadata, self.group_configs, self.share_persister,
            AsyncioClock(), config.int("group.share.max.share.sessions"))
        # one coordinator runtime per internal topic: __consumer_offsets, __transaction_state,
        # __share_group_state
        self.coordinator_runtimes = {c.runtime.topic: c.runtime
                                     for c in (self.groups, self.txn, self.share_state)}
        self.cleaner = LogCleaner(self.logs, config.int("log.cleaner.backoff.ms"))
        self.dynamic = DynamicConfigs(config, self.metadata, self.zk, self.replicas, self.logs,
                                      self.cleaner, self.listeners, self.client_metrics,
                                      self.group_configs)
        self.links = LinkManager(config, self.metadata, self.replicas, self.dynamic.links,
                                 self.groups)
        self.dynamic.link_listeners.append(self.links.link_changed)
        self.dynamic.topic_listeners.append(self.links.topic_changed)
        self.metrics = None
        if config.get("josefk.metrics.port"):
            from josefk.broker.metrics import BrokerMetrics

            self.metrics = BrokerMetrics(config, self.metadata, self.replicas, self.logs,
                                         self.groups, self.quotas, self.client_metrics)
            self.metrics.links = self.links
        handlers = served(config)
        self.handlers = self.metrics.instrument(handlers) if self.metrics else handlers
        self.faults = FaultInjector(self.handlers)

    def _log_config_for(self, topic: str) -> LogConfig | None:
        """A found log's config; None (the log manager's default) for a topic not known."""
        meta = self.metadata.topics.get(topic)
        return topic_log_config(self.config, meta.configs) if meta else None

    def _on_role_change(self, part, leader: bool) -> None:
        """The coordinators follow the leadership of their internal topics' partitions (the
        topic's runtime loads or unloads the partition)."""
        runtime = self.coordinator_runtimes.get(part.topic)
        if runtime is not None:
            if leader:
                runtime.load(part.index, part.leader_epoch)
            else:
                runtime.unload(part.index)
        if not leader:
            self.share.partition_moved(part.topic, part.index)
        self.replicas.sync_remote_partition(part)  # tiered storage follows leadership at once

    def _share_topics(self, names) -> dict:
        """{name: (topic id, partitions)} of the existing topics among ``names``."""
        topics = self.metadata.topics
        return {n: (topics[n].topic_id, len(topics[n].partitions)) for n in names
                if n in topics and not topics[n].internal}

    def _share_settings(self, group_id: str) -> tuple[int, int]:
        """A share group's (session timeout ms, heartbeat interval ms)."""
        cfg = self.group_configs
        return (cfg.int(group_id, "share.session.timeout.ms"),
                cfg.int(group_id, "share.heartbeat.interval.ms"))

    async def _initialize_share_state(self, group_id, topic_id, partition) -> int:
        """A share-partition's first state: its start offset left to its leader (-1), which
        picks it by share.auto.offset.reset when the group first fetches there."""
        return await self.share_persister.initialize(group_id, topic_id, partition, 0, -1)

    # -- lifecycle ------------------------------------------------------------------------------
    async def start(self):
        cfg = self.config
        self.groups.startup([])
        self.txn.startup()
        self.share_state.startup()
        if self.cluster is None:
            self.replicas.lead_locally(self.metadata)
        else:
            cluster_id = await self.metadata.start(
                stored_cluster_id(cfg.log_dirs) or uuid_to_base64(uuid.uuid4()))
            ensure_cluster_id(cfg.log_dirs, cfg.node_id, cluster_id)
            await self.producer_ids.blocks.claim()
            await self.dynamic.start()
        self.links.start()
        if self.authorizer is not None:
            await self.authorizer.start()
        await self.quotas.start()
        # Every other port first: a broker that cannot bind one exits before it takes clients.
        if self.metrics is not None:
            await self.metrics.start()
        if cfg.get("josefk.testing.control.port") is not None:
            await self.faults.start(cfg.int("josefk.testing.control.port"))
        limits = ConnectionLimits(cfg)
        for listener, e in zip(self.listeners, security.listeners(cfg)):
            self.servers.append(await serve(self, listener, e.host or "0.0.0.0", e.port,
                                            limits))
        self._advertise_bound_ports()
        limits.start(self.connections, lambda: any(s.is_serving() for s in self.servers))
        self._tasks.append(limits.expiry)
        if cfg.bool("remote.log.storage.system.enable"):
            # before the cluster's roles arrive: a follower's restart reads the remote copy
            await self._start_remote_log()
        if self.cluster is not None:
            await self.cluster.start()
            self._tasks.append(asyncio.ensure_future(self._periodic_on_loop(
                cfg.int("replica.lag.time.max.ms") / 2, self.replicas.check_isr)))
            self._tasks.append(asyncio.ensure_future(self._periodic_on_loop(
                250, self.replicas.fence_cut_off_leaders)))
        self._tasks.append(asyncio.ensure_future(self._periodic_on_loop(
            cfg.int("producer.id.expiration.check.interval.ms"), self._expire_producers)))
        # Storage housekeeping runs on one worker thread and compaction on the cleaner's
        # threads (the logs lock themselves), never on the event loop.
        if cfg.bool("log.cleaner.enable"):
            self.cleaner.start(cfg.int("log.cleaner.threads"))
        for interval, fn in ((cfg.int("log.retention.check.interval.ms"), self._retention),
                             (cfg.int("log.flush.offset.checkpoint.interval.ms"), self._checkpoint)):
            self._tasks.append(asyncio.ensure_future(self._periodic(interval, fn)))
        log.info("josefk broker %d listening on %s", self.config.node_id, cfg.get("listeners"))
        if not recscan.NATIVE:
            log.info("records are walked in plain Python (the C helper was not built): produce "
                     "validation costs more CPU")

    async def _start_remote_log(self) -> None:
        """Tiered storage (KIP-405): the remote log manager on its own thread, its metadata
        in ``__remote_log_metadata`` through this broker's inter-broker listener (with its
        security, `metadata_clients`); the
        partitions already led here are handed to it, the others as they come, and topic
        config changes at the next task interval."""
        from josefk.tiered.manager import RemoteLogManager
        from josefk.tiered.metadata_topic import TopicMetadataLog

        cfg = self.config
        store = await asyncio.to_thread(object_store, cfg)  # may make the bucket
        common, produce, consume = metadata_clients(cfg,
                                                    self.inter_broker or InterBrokerSecurity(cfg))
        rlm = RemoteLogManager(
            store, TopicMetadataLog(
                f"{self.info.host}:{self.info.port}",
                partitions=cfg.int("remote.log.metadata.topic.num.partitions"),
                replication=cfg.int("remote.log.metadata.topic.replication.factor"),
                client_config=common, producer_config=produce, consumer_config=consume),
            cfg.node_id, interval_ms=cfg.int("remote.log.manager.task.interval.ms"),
            cache_bytes=cfg.int("remote.log.storage.josefk.read.cache.bytes"),
            chunk_bytes=cfg.int("remote.log.storage.josefk.read.chunk.bytes"),
            copy_bytes_per_second=cfg.int("remote.log.manager.copy.max.bytes.per.second"),
            reader_threads=cfg.int("remote.log.reader.threads"),
            open_bucket=bucket_opener(cfg))
        self.replicas.remote = rlm
        self.replicas.sync_remote()
        rlm.start()
        self._tasks.append(asyncio.ensure_future(self._periodic_on_loop(
            cfg.int("remote.log.manager.task.interval.ms"), self.replicas.sync_remote)))

    def _advertise_bound_ports(self) -> None:
        """Listeners on port 0 got their port from the system: from now on the configuration,
        the registration and every Metadata answer name the bound port (as Kafka does)."""
        cfg = self.config
        bound = {e.listener: server.sockets[0].getsockname()[1]
                 for e, server in zip(security.listeners(cfg), self.servers) if e.port == 0}
        if not bound:
            return
        for prop in ("listeners", "advertised.listeners"):
            if cfg.get(prop):
                cfg.props[prop] = ",".join(
                    dataclasses.replace(e, port=bound.get(e.listener, e.port)).connection_string
                    if e.port == 0 else e.connection_string
                    for e in security.endpoints(cfg, prop))
        endpoints = {e.listener: (e.host, e.port) for e in security.advertised_listeners(cfg)}
        self.info.endpoints = endpoints
        self.info.host, self.info.port = endpoints[security.inter_broker_listener(cfg)]

    async def stop(self):
        if self.cluster is not None and self.config.bool("controlled.shutdown.enable"):
            await self.cluster.controlled_shutdown(
                self.config.int("controlled.shutdown.max.retries"),
                self.config.int("controlled.shutdown.retry.backoff.ms") / 1000)
        for t in self._tasks:
            t.cancel()
        if self.metrics is not None:
            await self.metrics.stop()
        await self.faults.stop()
        for server in self.servers:
            server.close()
        for c in list(self.connections):
            c.transport.close()
        await self.links.stop()
        if self.replicas.fetchers is not None:
            self.replicas.fetchers.close()
        if self.cluster is not None:
            await self.cluster.stop()
        self.share.shutdown()
        self.share_groups.shutdown()
        self.share_state.shutdown()
        self.groups.shutdown()
        self.txn.shutdown()
        if self.replicas.remote is not None:
            await asyncio.to_thread(self.replicas.remote.close)
        await asyncio.to_thread(self._housekeeping.shutdown, True)  # let a running pass finish
        await asyncio.to_thread(self.cleaner.stop)
        self.logs.checkpoint()
        self.logs.close()

    @staticmethod
    async def _periodic_on_loop(interval_ms, fn):
        while True:
            await asyncio.sleep(interval_ms / 1000)
            try:
                fn()
            except Exception:
                log.exception("periodic task %s failed", fn.__name__)

    async def _periodic(self, interval_ms, fn):
        while True:
            await asyncio.sleep(interval_ms / 1000)
            try:
                await asyncio.get_running_loop().run_in_executor(self._housekeeping, fn)
            except Exception:
                log.exception("periodic task %s failed", fn.__name__)

    def _retention(self):
        self.logs.run_retention(int(time.time() * 1000))

    def _expire_producers(self):
        now, expiration_ms = int(time.time() * 1000), self.config.int("producer.id.expiration.ms")
        for part in list(self.replicas.partitions.values()):
            part.producers.remove_expired(now, expiration_ms)

    def _checkpoint(self):
        self.logs.flush_rolled()
        self.logs.checkpoint()

    # -- shared helpers for handlers --------------------------------------------------------------
    @functools.cached_property
    def api_versions(self) -> list:
        """What ApiVersions advertises: every declared API this broker handles."""
        R = API_VERSIONS.Response
        return [R.ApiVersion(api_key=k, min_version=api.min_version, max_version=api.max_version)
                for k, api in sorted(API_BY_KEY.items()) if k in self.handlers]

    @functools.cached_property
    def features(self) -> tuple[list, list, int]:
        """What ApiVersions v3+ reports of features (KIP-584): supported, finalized, and the
        finalized features' epoch (-1 when none is finalized)."""
        R = API_VERSIONS.Response
        supported, finalized = features(self.config)
        return ([R.SupportedFeatureKey(name=n, min_version=lo, max_version=hi)
                 for n, lo, hi in supported],
                [R.FinalizedFeatureKey(name=n, max_version_level=level, min_version_level=level)
                 for n, level in finalized],
                1 if finalized else -1)

    def auto_create_topic(self, name):
        """Create ``name`` with the broker defaults if auto creation is enabled; else None."""
        if not self.config.bool("auto.create.topics.enable"):
            return None
        try:
            return self.metadata.request_topic(name, self.config.int("num.partitions"),
                                               self.config.int("default.replication.factor"), {})
        except MetadataError as e:
            log.warning("auto-creating topic %s failed: %s", name, e.message)
            return None

    def topic_error_for_produce(self, name) -> int:
        """NONE if ``name`` exists (auto-creating it if allowed), else the error to answer."""
        if name in self.metadata.topics:
            return errors.NONE
        if topic_name_error(name):
            return errors.INVALID_TOPIC_EXCEPTION
        if self.auto_create_topic(name) is None:
            return errors.UNKNOWN_TOPIC_OR_PARTITION
        return errors.NONE
