"""What clients may not do, refused before anything is changed or persisted.

- Internal topics (``__consumer_offsets``, ``__transaction_state``) are written only by the
  coordinators: a client's Produce to them is answered INVALID_TOPIC_EXCEPTION, as Kafka does,
  so nobody can forge a group's committed offsets; deleting them or adding partitions to them is
  refused the same way (their partition count decides which coordinator owns a group).
- A CreateTopics/CreatePartitions that would host more partitions than the broker can open
  files for is refused with INVALID_PARTITIONS instead of exhausting the descriptor limit (and
  blocking the event loop while it tries).
"""
from __future__ import annotations

import resource

from broker.metadata import INTERNAL_TOPICS, MetadataError
from wire import errors

FDS_PER_PARTITION = 3  # the active segment's .log, .index and .timeindex
RESERVED_FDS = 1024  # connections, checkpoints, compaction


def produce_topic_error(name: str) -> int:
    """INVALID_TOPIC_EXCEPTION for a client's write to an internal topic, else NONE."""
    return errors.INVALID_TOPIC_EXCEPTION if name in INTERNAL_TOPICS else errors.NONE


def check_not_internal(name: str, action: str) -> None:
    if name in INTERNAL_TOPICS:
        raise MetadataError(errors.INVALID_TOPIC_EXCEPTION,
                            f"Cannot {action} internal topic {name}.")


def max_partitions(config) -> int:
    """``max.broker.partitions`` if set (the name KIP-578 proposed), else as many as the
    process's descriptor limit allows."""
    explicit = config.get("max.broker.partitions")
    if explicit is not None:
        return config.int("max.broker.partitions")
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        soft = 1 << 20
    return max(0, soft - RESERVED_FDS) // FDS_PER_PARTITION


def check_partition_budget(broker, added: int) -> None:
    """Refuse ``added`` more partitions when the broker could not serve them all."""
    hosted = len(broker.replicas.partitions)
    limit = max_partitions(broker.config)
    if added > 0 and hosted + added > limit:
        raise MetadataError(errors.INVALID_PARTITIONS,
                            f"Adding {added} partitions to the {hosted} this broker hosts would "
                            f"exceed its limit of {limit} (max.broker.partitions, or what the "
                            f"open-file limit allows).")
