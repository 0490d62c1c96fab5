"""The group coordinator's access to its internal topic, ``__consumer_offsets``.

Kafka creates the topic on first use (the first FindCoordinator for a group), compacted and
with offsets.topic.num.partitions partitions; the leader of a group's partition coordinates it.
"""
from __future__ import annotations

import asyncio
import logging

from josefk.broker.control.metadata import MetadataError
from josefk.broker.replication.purgatory import wait_replicated
from josefk.coordinator.runtime.errors import CoordinatorLogError
from josefk.wire import errors

log = logging.getLogger("josefk.groups")

OFFSETS_TOPIC = "__consumer_offsets"


class OffsetsTopicLog:
    """The log interface `coordinator.OffsetStore` expects, over the broker's replicas. An append
    is acknowledged once offsets.commit.required.acks is met (all the ISR by default). The
    transaction coordinator uses the same interface over ``__transaction_state``. The batches
    are the coordinators' own, appended without a client batch's checks."""

    def __init__(self, replicas, required_acks: int = -1, timeout_ms: int = 5000,
                 topic: str = OFFSETS_TOPIC):
        self.replicas = replicas
        self.required_acks = required_acks
        self.timeout_ms = timeout_ms
        self.topic = topic

    def append(self, partition: int, batch: bytearray):
        part = self.replicas.leader_partition(self.topic, partition)
        if part is None:
            raise CoordinatorLogError(errors.NOT_COORDINATOR)
        res = part.append_own(memoryview(batch), acks=self.required_acks)
        if res.error:
            raise CoordinatorLogError(res.error, res.message or "")
        if self.required_acks == -1 and not part.replicated(res.next_offset):
            return self._replicated(part, res)
        return res.base_offset

    async def _replicated(self, part, res) -> int:
        code = await wait_replicated(part, res.next_offset, self.timeout_ms)
        if code:
            # Kafka maps these to errors a committing client retries with its coordinator.
            raise CoordinatorLogError(errors.COORDINATOR_NOT_AVAILABLE
                                      if code != errors.NOT_LEADER_OR_FOLLOWER
                                      else errors.NOT_COORDINATOR)
        return res.base_offset

    def prune(self, partition: int, offset: int) -> None:
        """Drop the records below ``offset`` (no longer needed), off the event loop."""
        part = self.replicas.leader_partition(self.topic, partition)
        if part is not None:
            asyncio.get_running_loop().run_in_executor(None, part.log.delete_records_before,
                                                       offset)

    def read_batches(self, partition: int):
        part = self.replicas.get(self.topic, partition)
        return part.log.iter_batches() if part is not None else ()


class GroupTopics:
    """The topics the group coordinator assigns to consumer groups, as this broker's metadata
    knows them (``coordinator.group.seams.TopicsView``)."""

    def __init__(self, metadata):
        self.metadata = metadata
        self.version = 0
        metadata.listeners.append(self._changed)

    def _changed(self, event, topic) -> None:
        if event in ("created", "deleted"):
            self.version += 1

    def get(self, name):
        t = self.metadata.topics.get(name)
        return None if t is None else (t.topic_id, len(t.partitions))

    def name_of(self, topic_id):
        t = self.metadata.topics_by_id.get(topic_id)
        return None if t is None else t.name

    def names(self):
        return [name for name, t in self.metadata.topics.items() if not t.internal]


def ensure_offsets_topic(topics: InternalTopics):
    """``__consumer_offsets``' metadata, asking for its creation if needed (None until it
    exists; the caller answers COORDINATOR_NOT_AVAILABLE and the client retries). The group
    coordinator loads each partition when this broker becomes its leader."""
    cfg = topics.config
    return topics.ensure(
        OFFSETS_TOPIC, cfg.int("offsets.topic.num.partitions"),
        cfg.int("offsets.topic.replication.factor"),
        {"cleanup.policy": "compact", "compression.type": "producer",
         "segment.bytes": cfg.props["offsets.topic.segment.bytes"]})


class InternalTopics:
    """The coordinators' internal topics, asked for on first use: the broker's settings, its
    metadata store, and whether it runs in a cluster (a single broker's replica is all there
    is)."""

    def __init__(self, config, metadata, clustered: bool):
        self.config = config
        self.metadata = metadata
        self.clustered = clustered

    def ensure(self, name: str, partitions: int, replication: int, configs: dict):
        """An internal topic's metadata, asking for its creation if needed; None until it
        exists. As in Kafka, a cluster creates it only once ``replication`` brokers are alive."""
        md = self.metadata
        t = md.topics.get(name)
        if t is not None:
            return t
        if not self.clustered:
            replication = 1
        elif len(md.brokers) < replication:
            log.warning("%s needs %d brokers (its replication factor) and %d are alive", name,
                        replication, len(md.brokers))
            return None
        try:
            return md.request_topic(name, partitions, replication, configs)
        except MetadataError as e:
            log.error("cannot create %s: %s", name, e.message)
            return None
