"""The group coordinator's access to its internal topic, ``__consumer_offsets``.

Kafka creates the topic on first use (the first FindCoordinator for a group), compacted and
with offsets.topic.num.partitions partitions; the leader of a group's partition coordinates it.
"""
from __future__ import annotations

import logging

from broker.metadata import MetadataError
from coordinator.errors import CoordinatorLogError
from wire import errors

log = logging.getLogger("josefk.groups")

OFFSETS_TOPIC = "__consumer_offsets"


class OffsetsTopicLog:
    """The log interface `coordinator.OffsetStore` expects, over the broker's replicas. An append
    is acknowledged once offsets.commit.required.acks is met (all the ISR by default)."""

    def __init__(self, replicas, required_acks: int = -1, timeout_ms: int = 5000):
        self.replicas = replicas
        self.required_acks = required_acks
        self.timeout_ms = timeout_ms

    def append(self, partition: int, batch: bytearray):
        part = self.replicas.leader_partition(OFFSETS_TOPIC, partition)
        if part is None:
            raise CoordinatorLogError(errors.NOT_COORDINATOR)
        res = part.append(memoryview(batch), acks=self.required_acks)
        if res.error:
            raise CoordinatorLogError(res.error, res.message or "")
        if self.required_acks == -1 and not part.replicated(res.next_offset):
            return self._replicated(part, res)
        return res.base_offset

    async def _replicated(self, part, res) -> int:
        code = await part.wait_replicated(res.next_offset, self.timeout_ms)
        if code:
            # Kafka maps these to errors a committing client retries with its coordinator.
            raise CoordinatorLogError(errors.COORDINATOR_NOT_AVAILABLE
                                      if code != errors.NOT_LEADER_OR_FOLLOWER
                                      else errors.NOT_COORDINATOR)
        return res.base_offset

    def read_batches(self, partition: int):
        part = self.replicas.get(OFFSETS_TOPIC, partition)
        return part.log.iter_batches() if part is not None else ()


def ensure_offsets_topic(broker):
    """``__consumer_offsets``' metadata, asking for its creation if needed (None until it
    exists; the caller answers COORDINATOR_NOT_AVAILABLE and the client retries). The group
    coordinator loads each partition when this broker becomes its leader."""
    md = broker.metadata
    t = md.topics.get(OFFSETS_TOPIC)
    if t is not None:
        return t
    cfg = broker.config
    rf = cfg.int("offsets.topic.replication.factor")
    if broker.cluster is None:
        rf = 1  # the single broker: its own replica is all there is
    elif len(md.brokers) < rf:
        log.warning("%s needs %d brokers (offsets.topic.replication.factor) and %d are alive",
                    OFFSETS_TOPIC, rf, len(md.brokers))
        return None
    try:
        return md.request_topic(
            OFFSETS_TOPIC, cfg.int("offsets.topic.num.partitions"), rf,
            {"cleanup.policy": "compact", "compression.type": "producer",
             "segment.bytes": cfg.props["offsets.topic.segment.bytes"]})
    except MetadataError as e:
        log.error("cannot create %s: %s", OFFSETS_TOPIC, e.message)
        return None
