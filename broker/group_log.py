"""The group coordinator's access to its internal topic, ``__consumer_offsets``.

Kafka creates the topic on first use (the first FindCoordinator for a group), compacted and
with offsets.topic.num.partitions partitions; this broker leads all of them, so it coordinates
every group once the topic exists.
"""
from __future__ import annotations

import logging

from broker.metadata import MetadataError
from coordinator.errors import CoordinatorLogError
from wire import errors

log = logging.getLogger("josefk.groups")

OFFSETS_TOPIC = "__consumer_offsets"


class OffsetsTopicLog:
    """The log interface `coordinator.OffsetStore` expects, over the broker's replicas."""

    def __init__(self, replicas):
        self.replicas = replicas

    def append(self, partition: int, batch: bytearray) -> int:
        part = self.replicas.get(OFFSETS_TOPIC, partition)
        if part is None:
            raise CoordinatorLogError(errors.NOT_LEADER_OR_FOLLOWER)
        res = part.append(memoryview(batch), acks=-1)
        if res.error:
            raise CoordinatorLogError(res.error, res.message or "")
        return res.base_offset

    def read_batches(self, partition: int):
        part = self.replicas.get(OFFSETS_TOPIC, partition)
        return part.log.iter_batches() if part is not None else ()


def ensure_offsets_topic(broker) -> bool:
    """Create ``__consumer_offsets`` if needed and load its partitions into the coordinator.
    Returns False if the topic cannot be created (the caller answers COORDINATOR_NOT_AVAILABLE)."""
    md = broker.metadata
    if OFFSETS_TOPIC in md.topics:
        return True
    cfg = broker.config
    try:
        md.create_topic(OFFSETS_TOPIC, cfg.int("offsets.topic.num.partitions"),
                        min(cfg.int("offsets.topic.replication.factor"), len(md.brokers)),
                        {"cleanup.policy": "compact", "compression.type": "producer",
                         "segment.bytes": cfg.props["offsets.topic.segment.bytes"]})
    except MetadataError as e:
        if e.code != errors.TOPIC_ALREADY_EXISTS:
            log.error("cannot create %s: %s", OFFSETS_TOPIC, e.message)
            return False
    for p in md.topics[OFFSETS_TOPIC].partitions:
        broker.groups.load_partition(p.index)
    return True
