"""MirrorSourceConnector and its task, as Kafka's: the source topics the filters accept (not
internal, not replicated back from the target) are mirrored to the remote topics the policy
names, created on the target with the source's partition count and topic configs; new topics
and partitions are found every ``refresh.topics.interval.seconds`` and the tasks
reconfigured. Each task reads its partitions from the offsets stored for them (partition key
``{"cluster", "topic", "partition"}``, offset ``{"offset": n}``, the next read at n + 1) and
returns the records unchanged (key, value, headers and timestamp as bytes, for
ByteArrayConverter) as one SourceRecordBatch per poll (josefk's columnar form: no
SourceRecord each), writing offset syncs as the rows are acknowledged."""
from __future__ import annotations

import logging
import threading
import time

from confluent_kafka import (OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer,
                             TopicPartition)
from confluent_kafka.admin import (AclBinding, AclBindingFilter, AclOperation, AclPermissionType,
                                   AlterConfigOpType, ConfigEntry, ConfigResource, NewPartitions,
                                   NewTopic, ResourcePatternType, ResourceType)

from josefk.connect.api.config import ConfigDef, ConfigException, Importance, Range, ValidString
from josefk.connect.api.config import Type as T
from josefk.connect.api.connector import ExactlyOnceSupport, SourceConnector, SourceTask
from josefk.connect.api.errors import ConnectException
from josefk.connect.api.records import SourceRecordBatch
from josefk.connect.runtime.sink_task import poll_records
from josefk.mirror.metrics import METRICS
from josefk.mirror.config import (ADMIN_TIMEOUT, Filter, MirrorConfig, common_config,
                                  create_compacted_topic, split, topic_filter_config,
                                  validate_offsets)
from josefk.mirror.offset_syncs import OffsetSyncWriter
from josefk.mirror.policy import DefaultReplicationPolicy
from josefk.mirror.records import OffsetSync

log = logging.getLogger(__name__)

VERSION = "1.0"
ASSIGNED_PARTITIONS = "task.assigned.partitions"
CONFIG_PROPERTIES_EXCLUDE_DEFAULT = (
    r"follower\.replication\.throttled\.replicas, leader\.replication\.throttled\.replicas, "
    r"message\.timestamp\.difference\.max\.ms, message\.timestamp\.type, "
    r"unclean\.leader\.election\.enable, min\.insync\.replicas")


def source_config() -> ConfigDef:
    return (topic_filter_config(common_config())
            .define("config.properties.exclude", T.LIST, CONFIG_PROPERTIES_EXCLUDE_DEFAULT,
                    importance=Importance.HIGH,
                    documentation="Topic config properties that should not be replicated.")
            .define("refresh.topics.enabled", T.BOOLEAN, True, importance=Importance.LOW,
                    documentation="Whether to periodically check for new topics and partitions.")
            .define("refresh.topics.interval.seconds", T.LONG, 600, Range.at_least(1),
                    importance=Importance.LOW,
                    documentation="Frequency of topic refresh.")
            .define("sync.topic.configs.enabled", T.BOOLEAN, True, importance=Importance.LOW,
                    documentation="Whether to periodically configure remote topics to match "
                                  "their corresponding upstream topics.")
            .define("sync.topic.configs.interval.seconds", T.LONG, 600, Range.at_least(1),
                    importance=Importance.LOW,
                    documentation="Frequency of topic config sync.")
            .define("sync.topic.acls.enabled", T.BOOLEAN, True, importance=Importance.LOW,
                    documentation="Whether to periodically configure remote topic ACLs to match "
                                  "their corresponding upstream topics.")
            .define("sync.topic.acls.interval.seconds", T.LONG, 600, Range.at_least(1),
                    importance=Importance.LOW,
                    documentation="Frequency of topic ACL sync.")
            .define("replication.factor", T.INT, 2, importance=Importance.LOW,
                    documentation="Replication factor for newly created remote topics.")
            .define("offset-syncs.topic.replication.factor", T.INT, 3,
                    importance=Importance.LOW,
                    documentation="Replication factor for offset-syncs topic.")
            .define("offset-syncs.topic.location", T.STRING, "source",
                    ValidString.in_("source", "target"), importance=Importance.LOW,
                    documentation="The location (source/target) of the offset-syncs topic.")
            .define("emit.offset-syncs.enabled", T.BOOLEAN, True, importance=Importance.LOW,
                    documentation="Whether to store the new offset of the replicated records "
                                  "in offset-syncs topic or not.")
            .define("offset.lag.max", T.LONG, 100, Range.at_least(0), importance=Importance.LOW,
                    documentation="How out-of-sync a remote partition can be before it is "
                                  "resynced.")
            .define("consumer.poll.timeout.ms", T.LONG, 1000, Range.at_least(1),
                    importance=Importance.LOW,
                    documentation="Timeout when polling source cluster."))


def should_replicate(policy: DefaultReplicationPolicy, topic_filter: Filter, target: str,
                     topic: str) -> bool:
    """Accepted by the filter, not internal, and not come from the target (a cycle)."""
    return (topic_filter(topic) and not policy.is_internal_topic(topic)
            and not is_cycle(policy, target, topic))


def is_cycle(policy: DefaultReplicationPolicy, target: str, topic: str) -> bool:
    source = policy.topic_source(topic)
    if source is None:
        return False
    if source == target:
        return True
    upstream = policy.upstream_topic(topic)
    return upstream is not None and upstream != topic and is_cycle(policy, target, upstream)


def task_consumer(mirror: MirrorConfig) -> dict:
    """The source consumer's settings: Java's defaults where librdkafka's differ
    (read_uncommitted), offsets kept by Connect, not the group."""
    return {"group.id": f"mirror-{mirror.source}-{mirror.target}", "enable.auto.commit": False,
            "auto.offset.reset": "earliest", "isolation.level": "read_uncommitted",
            **mirror.client("source", "consumer")}


class MirrorSourceConnector(SourceConnector):
    def version(self) -> str:
        return VERSION

    def config(self) -> ConfigDef:
        return source_config()

    def task_class(self):
        return MirrorSourceTask

    def start(self, props: dict[str, str]) -> None:
        self.mirror = MirrorConfig(source_config(), props)
        self.topic_filter = Filter(self.mirror["topics"], self.mirror["topics.exclude"], "topics")
        self.config_filter = Filter([".*"], self.mirror["config.properties.exclude"],
                                    "config.properties")
        self.source_admin, self.target_admin = (self.mirror.admin("source"),
                                                self.mirror.admin("target"))
        if self.mirror["emit.offset-syncs.enabled"]:
            create_compacted_topic(self.mirror.admin(self.mirror["offset-syncs.topic.location"]),
                                   self.mirror.policy.offset_syncs_topic(self.mirror.target),
                                   self.mirror["offset-syncs.topic.replication.factor"])
        self.known: dict[str, int] = {}
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.refresh()
        jobs = [(self.mirror[f"{name}.interval.seconds"], job) for name, job in (
            ("refresh.topics", self._refresh_topics), ("sync.topic.configs", self._sync_configs),
            ("sync.topic.acls", self._sync_acls)) if self.mirror[f"{name}.enabled"]]
        for _, job in jobs:
            if job != self._refresh_topics:  # done just now
                self._run(job)
        self.scheduler = threading.Thread(target=self._schedule, args=(jobs,), daemon=True,
                                          name=f"mirror-source-{self.mirror.source}")
        self.scheduler.start()

    def stop(self) -> None:
        self.stopping.set()
        self.scheduler.join(ADMIN_TIMEOUT)

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        with self.lock:
            partitions = [f"{t}-{p}" for t in sorted(self.known) for p in range(self.known[t])]
        return [{**self.mirror.props, ASSIGNED_PARTITIONS: assigned}
                for assigned in split(partitions, max_tasks)]

    def alter_offsets(self, connector_config, offsets) -> bool:
        validate_offsets(offsets, {"cluster": str, "topic": str, "partition": int}, only_zero=False)
        return True

    def exactly_once_support(self, connector_config) -> ExactlyOnceSupport:
        """SUPPORTED when the source is read committed (as Kafka's: otherwise aborted records
        would be mirrored as if committed)."""
        consumer = task_consumer(MirrorConfig(source_config(), connector_config))
        return (ExactlyOnceSupport.SUPPORTED if consumer["isolation.level"] == "read_committed"
                else ExactlyOnceSupport.UNSUPPORTED)

    # ---- topics ---------------------------------------------------------------------------

    def should_replicate(self, topic: str) -> bool:
        return should_replicate(self.mirror.policy, self.topic_filter, self.mirror.target, topic)

    def _source_partitions(self) -> dict[str, int]:
        topics = self.source_admin.list_topics(timeout=ADMIN_TIMEOUT).topics
        return {name: len(meta.partitions) for name, meta in topics.items()
                if meta.error is None and self.should_replicate(name)}

    def refresh(self) -> bool:
        """Find the source's topics and partitions; create or grow their remote topics.
        True when they changed."""
        found = self._source_partitions()
        with self.lock:
            changed = found != self.known
        if changed:
            self._create_remote_topics(found)
            with self.lock:
                self.known = found
        return changed

    def _refresh_topics(self) -> None:
        if self.refresh() and self.context is not None:
            self.context.request_task_reconfiguration()

    def _remote(self, topic: str) -> str:
        return self.mirror.policy.format_remote_topic(self.mirror.source, topic)

    def _create_remote_topics(self, source: dict[str, int]) -> None:
        existing = {name: len(meta.partitions) for name, meta in
                    self.target_admin.list_topics(timeout=ADMIN_TIMEOUT).topics.items()}
        configs = (self._source_configs(list(source))
                   if self.mirror["sync.topic.configs.enabled"] else {})
        new = [NewTopic(self._remote(t), n, self.mirror["replication.factor"],
                        config=configs.get(t, {}))
               for t, n in source.items() if self._remote(t) not in existing]
        grown = [NewPartitions(self._remote(t), n) for t, n in source.items()
                 if existing.get(self._remote(t), n) < n]
        for futures in (self.target_admin.create_topics(new) if new else {},
                        self.target_admin.create_partitions(grown) if grown else {}):
            for name, future in futures.items():
                try:
                    future.result(ADMIN_TIMEOUT)
                    log.info("mirror %s->%s: created or grew %s", self.mirror.source,
                             self.mirror.target, name)
                except KafkaException as e:
                    if e.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                        log.warning("mirror: could not create or grow %s: %s", name, e)

    def _source_configs(self, topics: list[str]) -> dict[str, dict[str, str]]:
        """The settings of each topic set on the source (not defaults), the excluded ones
        left out."""
        futures = self.source_admin.describe_configs(
            [ConfigResource(ConfigResource.Type.TOPIC, t) for t in topics])
        out = {}
        for resource, future in futures.items():
            try:
                entries = future.result(ADMIN_TIMEOUT)
            except KafkaException as e:
                log.warning("mirror: could not read %s's configs: %s", resource.name, e)
                continue
            out[resource.name] = {
                name: entry.value for name, entry in entries.items()
                if not entry.is_default and not entry.is_read_only and entry.value is not None
                and self.config_filter(name)}
        return out

    def _sync_configs(self) -> None:
        with self.lock:
            topics = list(self.known)
        resources = []
        for topic, configs in (self._source_configs(topics) if topics else {}).items():
            if configs:
                resources.append(ConfigResource(
                    ConfigResource.Type.TOPIC, self._remote(topic), incremental_configs=[
                        ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET)
                        for k, v in configs.items()]))
        if not resources:
            return
        for resource, future in self.target_admin.incremental_alter_configs(resources).items():
            try:
                future.result(ADMIN_TIMEOUT)
            except KafkaException as e:
                log.warning("mirror: could not sync %s's configs: %s", resource.name, e)

    def _sync_acls(self) -> None:
        """The source's LITERAL topic ACLs of the replicated topics onto their remote topics:
        ALLOW WRITE left out (only MirrorMaker writes there), ALLOW ALL made ALLOW READ."""
        topic_acls = AclBindingFilter(ResourceType.TOPIC, None, ResourcePatternType.LITERAL,
                                      None, None, AclOperation.ANY, AclPermissionType.ANY)
        try:
            bindings = self.source_admin.describe_acls(topic_acls).result(ADMIN_TIMEOUT)
        except KafkaException as e:
            if e.args[0].code() == KafkaError.SECURITY_DISABLED:
                log.info("mirror %s: no authorizer on the source, no ACLs to sync (set "
                         "sync.topic.acls.enabled=false)", self.mirror.source)
                return
            raise
        with self.lock:
            known = set(self.known)
        remote = [AclBinding(ResourceType.TOPIC, self._remote(b.name), ResourcePatternType.LITERAL,
                             b.principal, b.host,
                             AclOperation.READ if allow_all(b) else b.operation,
                             b.permission_type)
                  for b in bindings if b.name in known and not allow_write(b)]
        if remote:
            for binding, future in self.target_admin.create_acls(remote).items():
                try:
                    future.result(ADMIN_TIMEOUT)
                except KafkaException as e:
                    log.warning("mirror: could not create ACL %s: %s", binding, e)

    def _schedule(self, jobs) -> None:
        """Run each job every its interval (seconds) until the connector stops."""
        due = [(time.monotonic() + interval, interval, job) for interval, job in jobs]
        while due:
            due.sort(key=lambda item: item[0])
            when, interval, job = due[0]
            if self.stopping.wait(max(0.0, when - time.monotonic())):
                return
            self._run(job)
            due[0] = (time.monotonic() + interval, interval, job)

    def _run(self, job) -> None:
        try:
            job()
        except KafkaException as e:
            log.warning("mirror %s->%s: %s failed: %s", self.mirror.source, self.mirror.target,
                        job.__name__.strip("_").replace("_", " "), e)


def allow_all(binding) -> bool:
    return (binding.permission_type == AclPermissionType.ALLOW
            and binding.operation == AclOperation.ALL)


def allow_write(binding) -> bool:
    return (binding.permission_type == AclPermissionType.ALLOW
            and binding.operation == AclOperation.WRITE)


class MirrorBatch(SourceRecordBatch):
    """A poll's rows, with the consumed messages they were read from (for the offset syncs)
    and each partition's run of rows (``(sensors, start, end)``, for the metrics)."""

    __slots__ = ("messages", "runs")

    def __init__(self, messages: list, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.messages, self.runs = messages, []


class MirrorSourceTask(SourceTask):
    def version(self) -> str:
        return VERSION

    def start(self, props: dict[str, str]) -> None:
        self.sensors = {}
        self.mirror = MirrorConfig(source_config(), props)
        self.partitions = []
        for item in filter(None, props.get(ASSIGNED_PARTITIONS, "").split(",")):
            topic, _, partition = item.rpartition("-")
            if not topic or not partition.isdigit():
                raise ConfigException(ASSIGNED_PARTITIONS, props[ASSIGNED_PARTITIONS],
                                      f"{item!r} is not topic-partition")
            self.partitions.append((topic, int(partition)))
        self.timeout = self.mirror["consumer.poll.timeout.ms"] / 1000
        self.consumer = Consumer(task_consumer(self.mirror))
        self.closing, self.closed = threading.Lock(), False
        self.remote = {t: self.mirror.policy.format_remote_topic(self.mirror.source, t)
                       for t, _ in self.partitions}
        self.partition_keys = {tp: {"cluster": self.mirror.source, "topic": tp[0],
                                    "partition": tp[1]} for tp in self.partitions}
        self.sensors.update({(self.remote[t], p): METRICS.source(
            self.mirror.source, self.mirror.target, self.remote[t], p) for t, p in self.partitions})
        self.consumer.assign([TopicPartition(t, p, start) for (t, p), start in
                              zip(self.partitions, self._start_offsets())])
        self.writer = self.syncs_producer = None
        if self.mirror["emit.offset-syncs.enabled"]:
            self.syncs_producer = Producer(
                {"acks": "all", **self.mirror.client(self.mirror["offset-syncs.topic.location"],
                                                     "producer")})
            self.syncs_topic = self.mirror.policy.offset_syncs_topic(self.mirror.target)
            self.writer = OffsetSyncWriter(self._send_sync, self.mirror["offset.lag.max"])

    def _start_offsets(self) -> list[int]:
        """One past the last offset stored for each partition; the beginning without one."""
        keys = [self.partition_keys[tp] for tp in self.partitions]
        stored = (self.context.offset_storage_reader().offsets(keys)
                  if self.context is not None else [None] * len(keys))
        return [s["offset"] + 1 if s and isinstance(s.get("offset"), int) and s["offset"] >= 0
                else OFFSET_BEGINNING for s in stored]

    def poll(self) -> MirrorBatch | None:
        """The records read, unchanged, as one batch of rows (no SourceRecord each)."""
        with self.closing:
            if self.closed:
                return None
            messages = poll_records(self.consumer, 500, self.timeout)
        kept, topics, partitions, keys, values, timestamps, headers = [], [], [], [], [], [], []
        last = {}  # (topic, partition) -> the last offset read
        starts = []  # (row, (remote topic, partition)) where each partition's run begins
        remote, any_headers, run = self.remote, False, None
        for msg in messages:
            error = msg.error()
            if error is not None:
                if error.fatal():
                    raise ConnectException(f"mirror consumer failed: {error}")
                log.warning("mirror %s: %s", self.mirror.source, error)
                continue
            topic, partition = msg.topic(), msg.partition()
            if (topic, partition) != run:
                run = (topic, partition)
                starts.append((len(kept), (remote[topic], partition)))
            last[run] = msg.offset()
            kept.append(msg)
            topics.append(remote[topic])
            partitions.append(partition)
            keys.append(msg.key())
            values.append(msg.value())
            kind, timestamp = msg.timestamp()
            timestamps.append(timestamp if kind else None)
            raw = msg.headers()
            headers.append(raw)
            any_headers = any_headers or raw is not None
        if self.syncs_producer is not None:
            self.syncs_producer.poll(0)
        if not kept:
            return None
        batch = MirrorBatch(kept, topics, values, keys, partitions=partitions,
                            timestamps=timestamps, headers=headers if any_headers else None,
                            offsets=[(self.partition_keys[tp], {"offset": offset})
                                     for tp, offset in last.items()])
        ends = [start for start, _ in starts[1:]] + [len(kept)]
        batch.runs = [(self.sensors[tp], start, end) for (start, tp), end in zip(starts, ends)]
        self._count_polled(batch)
        return batch

    def _count_polled(self, batch: "MirrorBatch") -> None:
        """record-age-ms and the bytes, per partition's run of rows (no Python per record:
        the sums and extremes are the builtins')."""
        now_ms = time.time() * 1000
        values, stamps = batch.values, batch.timestamps
        for sensor, start, end in batch.runs:
            sensor.polled(end - start, sum(map(len, filter(None, values[start:end]))), now_ms,
                          list(filter(None, stamps[start:end])))

    def commit_rows(self, batch: "MirrorBatch", offsets: list[int]) -> None:
        """record-count and replication-latency-ms of the rows written, and an offset sync for
        each where the offsets drifted (as Kafka's commitRecord for each record)."""
        now_ms = time.time() * 1000
        stamps = batch.timestamps
        for sensor, start, end in batch.runs:
            written = offsets[start:end]
            dropped = written.count(-1)
            if dropped == end - start:
                continue
            run_stamps = (stamps[start:end] if not dropped else
                          [t for t, o in zip(stamps[start:end], written) if o >= 0])
            sensor.replicated(end - start - dropped, now_ms, list(filter(None, run_stamps)))
        if self.writer is None:
            return
        queue, fire = self.writer.maybe_queue, self.writer.fire_pending
        for msg, downstream in zip(batch.messages, offsets):
            if downstream >= 0 and queue(msg.topic(), msg.partition(), msg.offset(), downstream):
                fire()
        fire()

    def commit(self) -> None:
        if self.writer is not None:
            self.writer.promote_delayed()
            self.writer.fire_pending()

    def _send_sync(self, sync: OffsetSync, done) -> None:
        def delivered(error, _msg):
            if error is not None:
                log.error("mirror: failure sending offset sync: %s", error)
            done()
        self.syncs_producer.produce(self.syncs_topic, sync.record_value(), sync.record_key(),
                                    partition=0, on_delivery=delivered)
        self.syncs_producer.poll(0)

    def stop(self) -> None:
        with self.closing:  # after a poll in progress (bounded by consumer.poll.timeout.ms)
            self.closed = True
            self.consumer.close()
        if self.syncs_producer is not None:
            self.syncs_producer.flush(ADMIN_TIMEOUT)
        METRICS.forget(self.sensors.values())
