"""MirrorCheckpointConnector and its task, as Kafka's: the source's consumer groups that
``groups`` / ``groups.exclude`` accept are split among the tasks; each task reads the
offset-syncs topic (to its end before translating anything), translates its groups'
committed source offsets every ``emit.checkpoints.interval.seconds`` and emits Checkpoint
records to ``<source>.checkpoints.internal`` on the target; with
``sync.group.offsets.enabled`` it also commits the translated offsets to the target's groups
of the same name that have no active members, never moving a group's offset back."""
from __future__ import annotations

import logging
import threading
import time

from confluent_kafka import (OFFSET_BEGINNING, Consumer, ConsumerGroupState,
                             ConsumerGroupTopicPartitions)
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from josefk.connect.api.config import ConfigDef, Importance, Range, ValidString
from josefk.connect.api.config import Type as T
from josefk.connect.api.connector import SourceConnector, SourceTask
from josefk.connect.api.records import RecordMetadata, SourceRecord
from josefk.connect.api.schema import Schema
from josefk.mirror.client import read_checkpoints
from josefk.mirror.config import (ADMIN_TIMEOUT, GROUPS_EXCLUDE_DEFAULT, Filter, MirrorConfig,
                                  common_config, create_compacted_topic, split,
                                  topic_filter_config, validate_offsets)
from josefk.mirror.metrics import METRICS
from josefk.mirror.offset_syncs import OffsetSyncStore
from josefk.mirror.records import Checkpoint, FormatError, OffsetSync

log = logging.getLogger(__name__)

VERSION = "1.0"
ASSIGNED_GROUPS = "task.assigned.groups"
_BYTES = Schema.BYTES_SCHEMA
_IDLE = (ConsumerGroupState.EMPTY, ConsumerGroupState.DEAD)  # DEAD: none of that name


def checkpoint_config() -> ConfigDef:
    return (topic_filter_config(common_config())
            .define("groups", T.LIST, ".*", importance=Importance.HIGH,
                    documentation="Consumer groups to replicate. Supports comma-separated "
                                  "group IDs and regexes.")
            .define("groups.exclude", T.LIST, GROUPS_EXCLUDE_DEFAULT, importance=Importance.HIGH,
                    documentation="Exclude groups. Supports comma-separated group IDs and "
                                  "regexes.")
            .define("emit.checkpoints.enabled", T.BOOLEAN, True, importance=Importance.LOW,
                    documentation="Whether to replicate consumer offsets to target cluster.")
            .define("emit.checkpoints.interval.seconds", T.LONG, 60, Range.at_least(0),
                    importance=Importance.LOW,
                    documentation="Frequency of checkpoints.")
            .define("sync.group.offsets.enabled", T.BOOLEAN, False, importance=Importance.LOW,
                    documentation="Whether to periodically write the translated offsets to "
                                  "__consumer_offsets topic in target cluster, as long as no "
                                  "active consumers in that group are connected to the target "
                                  "cluster")
            .define("sync.group.offsets.interval.seconds", T.LONG, 60, Range.at_least(0),
                    importance=Importance.LOW,
                    documentation="Frequency of consumer group offset sync.")
            .define("refresh.groups.enabled", T.BOOLEAN, True, importance=Importance.LOW,
                    documentation="Whether to periodically check for new consumer groups.")
            .define("refresh.groups.interval.seconds", T.LONG, 600, Range.at_least(1),
                    importance=Importance.LOW,
                    documentation="Frequency of group refresh.")
            .define("checkpoints.topic.replication.factor", T.INT, 3, importance=Importance.LOW,
                    documentation="Replication factor for checkpoints topic.")
            .define("offset-syncs.topic.location", T.STRING, "source",
                    ValidString.in_("source", "target"), importance=Importance.LOW,
                    documentation="The location (source/target) of the offset-syncs topic."))


def more_recent(checkpoint: Checkpoint, last: Checkpoint | None) -> bool:
    """Whether to emit ``checkpoint`` after ``last`` (Kafka's checkpointIsMoreRecent): the
    first, after a rewind of the source group, or further downstream; never back
    downstream, never a repeat."""
    return (last is None or checkpoint.upstream_offset < last.upstream_offset
            or checkpoint.downstream_offset > last.downstream_offset)


class MirrorCheckpointConnector(SourceConnector):
    def version(self) -> str:
        return VERSION

    def config(self) -> ConfigDef:
        return checkpoint_config()

    def task_class(self):
        return MirrorCheckpointTask

    def start(self, props: dict[str, str]) -> None:
        self.mirror = MirrorConfig(checkpoint_config(), props)
        self.group_filter = Filter(self.mirror["groups"], self.mirror["groups.exclude"], "groups")
        self.source_admin = self.mirror.admin("source")
        create_compacted_topic(self.mirror.admin("target"),
                               self.mirror.policy.checkpoints_topic(self.mirror.source),
                               self.mirror["checkpoints.topic.replication.factor"])
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.groups = self._find_groups()
        self.refresher = None
        if self.mirror["refresh.groups.enabled"] and self.mirror["emit.checkpoints.enabled"]:
            self.refresher = threading.Thread(target=self._refresh_loop, daemon=True,
                                              name=f"mirror-groups-refresh-{self.mirror.source}")
            self.refresher.start()

    def stop(self) -> None:
        self.stopping.set()
        if self.refresher is not None:
            self.refresher.join(ADMIN_TIMEOUT)

    def _find_groups(self) -> list[str]:
        listed = self.source_admin.list_consumer_groups(
            request_timeout=ADMIN_TIMEOUT).result(ADMIN_TIMEOUT)
        return sorted(g.group_id for g in listed.valid if self.group_filter(g.group_id))

    def _refresh_loop(self) -> None:
        while not self.stopping.wait(self.mirror["refresh.groups.interval.seconds"]):
            try:
                found = self._find_groups()
            except KafkaException as e:
                log.warning("mirror %s->%s: group refresh failed: %s", self.mirror.source,
                            self.mirror.target, e)
                continue
            with self.lock:
                changed, self.groups = found != self.groups, found
            if changed and self.context is not None:
                self.context.request_task_reconfiguration()

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        with self.lock:
            groups = list(self.groups)
        if not self.mirror["emit.checkpoints.enabled"]:
            return []
        return [{**self.mirror.props, ASSIGNED_GROUPS: assigned}
                for assigned in split(groups, max_tasks)]

    def alter_offsets(self, connector_config, offsets) -> bool:
        validate_offsets(offsets, {"group": str, "topic": str, "partition": int}, only_zero=True)
        return True

class MirrorCheckpointTask(SourceTask):
    def version(self) -> str:
        return VERSION

    def start(self, props: dict[str, str]) -> None:
        self.sensors = {}  # (group, topic, partition) -> its checkpoint-latency-ms
        self.mirror = MirrorConfig(checkpoint_config(), props)
        self.groups = [g for g in props.get(ASSIGNED_GROUPS, "").split(",") if g]
        self.topic_filter = Filter(self.mirror["topics"], self.mirror["topics.exclude"], "topics")
        self.checkpoints_topic = self.mirror.policy.checkpoints_topic(self.mirror.source)
        self.source_admin, self.target_admin = (self.mirror.admin("source"),
                                                self.mirror.admin("target"))
        self.store = OffsetSyncStore()
        self.syncs_consumer = Consumer({
            "group.id": f"mirror-checkpoints-{self.mirror.source}-{self.mirror.target}",
            "enable.auto.commit": False, "enable.partition.eof": True,
            **self.mirror.client(self.mirror["offset-syncs.topic.location"], "consumer")})
        self.syncs_consumer.assign([TopicPartition(
            self.mirror.policy.offset_syncs_topic(self.mirror.target), 0, OFFSET_BEGINNING)])
        self.stopping = threading.Event()
        self.closing = threading.Lock()
        # the last checkpoint of each group's partitions, from the checkpoints topic at start
        self.checkpoints: dict[str, dict[tuple[str, int], Checkpoint]] = {
            g: {} for g in self.groups}
        self._load_checkpoints()
        self.next_emit = self.next_sync = 0.0

    def _load_checkpoints(self) -> None:
        """Read the checkpoints topic on the target to its end (as Kafka's CheckpointStore),
        so that a restarted task never emits a checkpoint behind one already written."""
        for c in read_checkpoints(self.mirror.client("target", "consumer"),
                                  self.checkpoints_topic, ADMIN_TIMEOUT):
            if c.group in self.checkpoints:
                self.checkpoints[c.group][c.topic, c.partition] = c

    def _read_syncs(self, timeout: float) -> None:
        """Apply the offset syncs written since the last read; the first read to the end of
        the topic opens translation."""
        deadline = time.monotonic() + timeout
        while True:
            messages = self.syncs_consumer.consume(1000, max(0.0, deadline - time.monotonic()))
            for msg in messages:
                if msg.error() is not None:
                    if msg.error().code() == KafkaError._PARTITION_EOF:
                        self.store.read_to_end = True
                    continue
                try:
                    self.store.handle(OffsetSync.from_record(msg.key(), msg.value()))
                except FormatError as e:
                    log.warning("mirror: skipped a record of the offset-syncs topic: %s", e)
            if not messages or time.monotonic() >= deadline:
                return

    def poll(self) -> list[SourceRecord] | None:
        with self.closing:
            if self.stopping.is_set():
                return None
            self._read_syncs(0.2 if self.store.read_to_end else 1.0)
            now = time.monotonic()
            records = None
            if now >= self.next_emit and self.store.read_to_end:
                self.next_emit = now + self.mirror["emit.checkpoints.interval.seconds"]
                records = self._checkpoint_records()
            if (self.mirror["sync.group.offsets.enabled"] and now >= self.next_sync
                    and self.store.read_to_end):
                self.next_sync = now + self.mirror["sync.group.offsets.interval.seconds"]
                self._sync_group_offsets()
        if not records:
            self.stopping.wait(0.5)
        return records

    def _rename(self, topic: str) -> str:
        """The remote topic of ``topic``; back to its upstream name when it came from the
        target (fail-back)."""
        policy = self.mirror.policy
        if policy.topic_source(topic) == self.mirror.target:
            return policy.original_topic(topic)
        return policy.format_remote_topic(self.mirror.source, topic)

    def checkpoints_for(self, group: str, offsets: list[TopicPartition]) -> list[Checkpoint]:
        out = []
        for tp in offsets:
            if tp.offset < 0 or not self.topic_filter(tp.topic) or \
                    self.mirror.policy.is_internal_topic(tp.topic):
                continue
            downstream = self.store.translate_downstream(tp.topic, tp.partition, tp.offset)
            if downstream is None or downstream < 0:
                continue
            out.append(Checkpoint(group, self._rename(tp.topic), tp.partition, tp.offset,
                                  downstream, tp.metadata or ""))
        return out

    def _checkpoint_records(self) -> list[SourceRecord]:
        records = []
        now_ms = int(time.time() * 1000)
        for group in self.groups:
            try:
                offsets = self.source_admin.list_consumer_group_offsets(
                    [ConsumerGroupTopicPartitions(group)])[group].result(ADMIN_TIMEOUT)
            except KafkaException as e:
                log.warning("mirror: could not read group %s's offsets: %s", group, e)
                continue
            last = self.checkpoints[group]
            for c in self.checkpoints_for(group, offsets.topic_partitions or []):
                if not more_recent(c, last.get((c.topic, c.partition))):
                    continue
                last[c.topic, c.partition] = c
                records.append(SourceRecord(c.connect_partition(), {"offset": 0},
                                            self.checkpoints_topic, 0, _BYTES, c.record_key(),
                                            _BYTES, c.record_value(), now_ms))
        return records

    def _sync_group_offsets(self) -> None:
        groups = [g for g in self.groups if self.checkpoints[g]]
        if not groups:
            return
        described = self.target_admin.describe_consumer_groups(groups)
        for group in groups:
            try:
                state = described[group].result(ADMIN_TIMEOUT).state
            except KafkaException:
                state = ConsumerGroupState.DEAD  # not on the target yet
            if state not in _IDLE:
                continue
            try:
                current = self.target_admin.list_consumer_group_offsets(
                    [ConsumerGroupTopicPartitions(group)])[group].result(ADMIN_TIMEOUT)
                committed = {(tp.topic, tp.partition): tp.offset
                             for tp in current.topic_partitions or []}
                moves = [TopicPartition(c.topic, c.partition, c.downstream_offset)
                         for tp, c in self.checkpoints[group].items()
                         if committed.get(tp, -1) < c.downstream_offset]
                if moves:
                    self.target_admin.alter_consumer_group_offsets(
                        [ConsumerGroupTopicPartitions(group, moves)])[group].result(ADMIN_TIMEOUT)
            except KafkaException as e:
                log.warning("mirror: could not sync group %s's offsets on %s: %s", group,
                            self.mirror.target, e)

    def commit_record(self, record: SourceRecord, metadata: RecordMetadata | None) -> None:
        """checkpoint-latency-ms: from the checkpoint's making to its acknowledgement."""
        p = record.source_partition
        key = (p["group"], p["topic"], p["partition"])
        sensor = self.sensors.get(key)
        if sensor is None:
            sensor = self.sensors[key] = METRICS.checkpoint(self.mirror.source,
                                                            self.mirror.target, *key)
        latency = time.time() * 1000 - record.timestamp
        sensor.record(time.monotonic(), 1, latency, latency, latency, latency)

    def stop(self) -> None:
        self.stopping.set()
        with self.closing:
            self.syncs_consumer.close()
        METRICS.forget(self.sensors.values())
