"""The broker process: wires config, storage, metadata, replicas, coordinators and the server."""
from __future__ import annotations

import asyncio
import functools
import logging
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from broker.config import BrokerConfig, parse_properties
from broker.dispatch import HANDLERS
from broker.group_log import OFFSETS_TOPIC, OffsetsTopicLog
from broker.metadata import BrokerInfo, LocalMetadataStore, MetadataError, topic_name_error
from broker.replica import ReplicaManager, topic_log_config
from broker.server import serve
from coordinator import GroupCoordinator, OffsetStore
from coordinator.producer_ids import ProducerIdManager
from storage.config import LogConfig
from storage.manager import LogManager
from wire import errors
from wire.types import uuid_to_base64
from wire.apis import API_BY_KEY, API_VERSIONS

log = logging.getLogger("josefk")


def _read_properties(path: Path) -> dict:
    return parse_properties(path.read_text()) if path.exists() else {}


def ensure_cluster_id(log_dirs: list[str], node_id: int) -> str:
    """Read or create meta.properties in every log dir, Kafka style."""
    cluster_id = None
    for d in log_dirs:
        props = _read_properties(Path(d) / "meta.properties")
        cluster_id = cluster_id or props.get("cluster.id")
    if cluster_id is None:
        cluster_id = uuid_to_base64(uuid.uuid4())
    for d in log_dirs:
        p = Path(d) / "meta.properties"
        if not p.exists():
            p.write_text(f"version=0\nbroker.id={node_id}\ncluster.id={cluster_id}\n")
    return cluster_id


class Broker:
    def __init__(self, config: BrokerConfig):
        self.config = config
        self.connections = set()
        self.handlers = HANDLERS
        self.server = None
        self._tasks = []
        self._housekeeping = ThreadPoolExecutor(1, thread_name_prefix="josefk-housekeeping")
        dirs = config.log_dirs
        for d in dirs:
            Path(d).mkdir(parents=True, exist_ok=True)
        cluster_id = ensure_cluster_id(dirs, config.node_id)
        host, port = config.advertised_listener()
        self.info = BrokerInfo(config.node_id, host, port, config.get("broker.rack"))
        self.metadata = LocalMetadataStore(dirs[0], self.info, cluster_id)
        self.default_log_config = LogConfig.from_props({}, config.topic_defaults())
        self.logs = LogManager(dirs, self.default_log_config, config_for=self._log_config_for)
        self.replicas = ReplicaManager(config, self.logs, self.metadata)
        self.producer_ids = ProducerIdManager(Path(dirs[0]) / "producer-id-block")
        self.groups = GroupCoordinator(config.props, OffsetStore(OffsetsTopicLog(self.replicas)))

    def _log_config_for(self, topic: str) -> LogConfig:
        meta = self.metadata.topics.get(topic)
        return topic_log_config(self.config, meta) if meta else self.default_log_config

    # -- lifecycle ------------------------------------------------------------------------------
    async def start(self):
        cfg = self.config
        host, port = cfg.listener()
        offsets_topic = self.metadata.topics.get(OFFSETS_TOPIC)
        self.groups.startup([p.index for p in offsets_topic.partitions] if offsets_topic else [])
        self.server = await serve(self, host or "0.0.0.0", port)
        # Storage housekeeping runs on one worker thread (the logs lock themselves), never on
        # the event loop.
        for interval, fn in ((cfg.int("log.retention.check.interval.ms"), self._retention),
                             (cfg.int("log.cleaner.backoff.ms"), self._compaction),
                             (cfg.int("log.flush.offset.checkpoint.interval.ms"), self._checkpoint)):
            self._tasks.append(asyncio.ensure_future(self._periodic(interval, fn)))
        log.info("josefk broker %d listening on %s:%d", self.config.node_id, host, port)

    async def stop(self):
        for t in self._tasks:
            t.cancel()
        if self.server is not None:
            self.server.close()
        self.groups.shutdown()
        await asyncio.to_thread(self._housekeeping.shutdown, True)  # let a running pass finish
        for c in list(self.connections):
            c.transport.close()
        self.logs.checkpoint()
        self.logs.close()

    async def _periodic(self, interval_ms, fn):
        while True:
            await asyncio.sleep(interval_ms / 1000)
            try:
                await asyncio.get_running_loop().run_in_executor(self._housekeeping, fn)
            except Exception:
                log.exception("periodic task %s failed", fn.__name__)

    def _retention(self):
        self.logs.run_retention(int(time.time() * 1000))

    def _compaction(self):
        if self.config.bool("log.cleaner.enable"):
            self.logs.run_compaction(int(time.time() * 1000))

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

    def auto_create_topic(self, name):
        """Create ``name`` with the broker defaults if auto creation is enabled; else None."""
        if not self.config.bool("auto.create.topics.enable"):
            return None
        try:
            return self.metadata.create_topic(name, self.config.int("num.partitions"),
                                              self.config.int("default.replication.factor"), {})
        except MetadataError as e:
            if e.code == errors.TOPIC_ALREADY_EXISTS:
                return self.metadata.topics.get(name)
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
