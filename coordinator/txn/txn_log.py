"""Transaction metadata records on the compacted ``__transaction_state`` topic, in Kafka's format,
so Kafka's tools can read our log. The layout is declared in
``wire.internal_topics.transaction_state`` (Kafka's TransactionLogKey/Value); this module maps it
to :class:`TxnRecord`. We write value v0 as Kafka 3.x does (null partitions in the Empty state);
we read v0 and v1. A null value (tombstone) removes the transactional id.
"""
from __future__ import annotations

from josefk.wire.internal_topics.transaction_state import TRANSACTION_LOG, TRANSACTION_STATE

VALUE_VERSION = 0

# TransactionState ids as Kafka stores them.
EMPTY, ONGOING, PREPARE_COMMIT, PREPARE_ABORT, COMPLETE_COMMIT, COMPLETE_ABORT, DEAD, \
    PREPARE_EPOCH_FENCE = range(8)
STATE_NAMES = {EMPTY: "Empty", ONGOING: "Ongoing", PREPARE_COMMIT: "PrepareCommit",
               PREPARE_ABORT: "PrepareAbort", COMPLETE_COMMIT: "CompleteCommit",
               COMPLETE_ABORT: "CompleteAbort", DEAD: "Dead",
               PREPARE_EPOCH_FENCE: "PrepareEpochFence"}

_Partitions = TRANSACTION_LOG.Value.PartitionsSchema


class TxnRecord:
    """One TransactionLogValue."""

    __slots__ = ("producer_id", "producer_epoch", "timeout_ms", "state", "partitions",
                 "update_ms", "start_ms")

    def __init__(self, producer_id, producer_epoch, timeout_ms, state, partitions, update_ms,
                 start_ms):
        self.producer_id, self.producer_epoch = producer_id, producer_epoch
        self.timeout_ms, self.state = timeout_ms, state
        self.partitions = partitions  # set of (topic, partition)
        self.update_ms, self.start_ms = update_ms, start_ms


def txn_key(transactional_id: str) -> bytes:
    return TRANSACTION_LOG.key(transactional_id=transactional_id)


def txn_value(rec: TxnRecord) -> bytes:
    partitions = None
    if rec.state != EMPTY:
        by_topic: dict[str, list[int]] = {}
        for t, p in sorted(rec.partitions):
            by_topic.setdefault(t, []).append(p)
        partitions = [_Partitions(topic=t, partition_ids=ps) for t, ps in by_topic.items()]
    return TRANSACTION_LOG.value(
        VALUE_VERSION, producer_id=rec.producer_id, producer_epoch=rec.producer_epoch,
        transaction_timeout_ms=rec.timeout_ms, transaction_status=rec.state,
        transaction_partitions=partitions, transaction_last_update_timestamp_ms=rec.update_ms,
        transaction_start_timestamp_ms=rec.start_ms)


def read_txn_key(key) -> str:
    """Raises DecodeError for a key that is not one of ``__transaction_state``."""
    return TRANSACTION_STATE.read_key(key)[1].transactional_id


def read_txn_value(value) -> TxnRecord | None:
    if value is None:
        return None
    _version, v = TRANSACTION_LOG.read_value(value)
    partitions = {(t.topic, p) for t in v.transaction_partitions or () for p in t.partition_ids}
    return TxnRecord(v.producer_id, v.producer_epoch, v.transaction_timeout_ms,
                     v.transaction_status, partitions, v.transaction_last_update_timestamp_ms,
                     v.transaction_start_timestamp_ms)
