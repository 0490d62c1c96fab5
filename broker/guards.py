"""What clients may not do, refused before anything is changed or persisted.

- Internal topics (``__consumer_offsets``, ``__transaction_state``) are written only by the
  coordinators: a client's Produce to them is answered INVALID_TOPIC_EXCEPTION, as Kafka does,
  so nobody can forge a group's committed offsets; deleting them or adding partitions to them is
  refused the same way (their partition count decides which coordinator owns a group).
- A CreateTopics/CreatePartitions that would host more partitions than ``max.broker.partitions``
  (the name KIP-578 proposed) is refused with INVALID_PARTITIONS before anything is persisted.
  Descriptors are no limit: segment files open lazily and idle ones close
  (`storage.open_files`), so the descriptor limit bounds open segments, not partitions.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from josefk.broker.config import BrokerConfig
from josefk.broker.control.metadata import INTERNAL_TOPICS, MetadataError
from josefk.wire import errors

if TYPE_CHECKING:
    from josefk.broker.replication.replica import ReplicaManager


def produce_topic_error(name: str) -> int:
    """INVALID_TOPIC_EXCEPTION for a client's write to an internal topic, else NONE."""
    return errors.INVALID_TOPIC_EXCEPTION if name in INTERNAL_TOPICS else errors.NONE


def check_not_internal(name: str, action: str) -> None:
    if name in INTERNAL_TOPICS:
        raise MetadataError(errors.INVALID_TOPIC_EXCEPTION,
                            f"Cannot {action} internal topic {name}.")


class Hosting(Protocol):
    """What the partition budget needs: the broker's settings and its partitions."""

    @property
    def config(self) -> BrokerConfig: ...

    @property
    def replicas(self) -> ReplicaManager: ...


def check_partition_budget(broker: Hosting, added: int) -> None:
    """Refuse ``added`` more partitions when the broker could not serve them all."""
    hosted = len(broker.replicas.partitions)
    limit = broker.config.int("max.broker.partitions")
    if added > 0 and hosted + added > limit:
        raise MetadataError(errors.INVALID_PARTITIONS,
                            f"Adding {added} partitions to the {hosted} this broker hosts would "
                            f"exceed its limit of {limit} (max.broker.partitions).")
