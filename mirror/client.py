"""What a client of the target cluster reads of MirrorMaker, as Kafka's MirrorClient and
RemoteClusterUtils: the checkpoints of the topic ``<remote>.checkpoints.internal``, and from
them a group's offsets translated to this cluster (``translate_offsets``), to move a consumer
group over on failover."""
from __future__ import annotations

import logging
import time
from typing import Iterator

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

from josefk.connect.api.errors import ConnectException
from josefk.mirror.policy import DefaultReplicationPolicy
from josefk.mirror.records import Checkpoint, FormatError

log = logging.getLogger(__name__)


def read_checkpoints(settings: dict, topic: str, timeout: float) -> Iterator[Checkpoint]:
    """Every checkpoint of ``topic`` (partition 0) to its end; ``settings``: confluent-kafka
    consumer settings of the cluster holding it."""
    reader = Consumer({"group.id": "mirror-checkpoints-reader", "enable.auto.commit": False,
                       **settings, "enable.partition.eof": True})
    try:
        reader.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            msg = reader.poll(0.5)
            if msg is None:
                continue
            if msg.error() is not None:
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    return
                raise ConnectException(f"mirror: cannot read {topic}: {msg.error()}")
            try:
                yield Checkpoint.from_record(msg.key(), msg.value())
            except FormatError as e:
                log.warning("mirror: skipped a record of %s: %s", topic, e)
        raise ConnectException(f"mirror: {topic} not read to its end in {timeout:.0f} s")
    finally:
        reader.close()


def translate_offsets(settings: dict, remote_cluster_alias: str, group: str,
                      timeout: float = 30.0,
                      policy: DefaultReplicationPolicy | None = None) -> list[TopicPartition]:
    """Group ``group``'s offsets of cluster ``remote_cluster_alias`` translated to the cluster
    ``settings`` names (Kafka's RemoteClusterUtils.translateOffsets): the last checkpoint of
    each partition, ready for ``Consumer.commit(offsets=...)``."""
    policy = policy or DefaultReplicationPolicy()
    latest: dict[tuple[str, int], Checkpoint] = {}
    for c in read_checkpoints(settings, policy.checkpoints_topic(remote_cluster_alias), timeout):
        if c.group == group:
            latest[c.topic, c.partition] = c
    return [TopicPartition(c.topic, c.partition, c.downstream_offset, metadata=c.metadata)
            for c in latest.values()]
