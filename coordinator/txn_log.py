"""Transaction metadata records on the compacted ``__transaction_state`` topic, in Kafka's format
(TransactionLogKey.json / TransactionLogValue.json), so Kafka's tools can read our log::

    key   version 0   transactional_id STRING
    value version 0   producer_id INT64, producer_epoch INT16, transaction_timeout_ms INT32,
                      transaction_status INT8,
                      transaction_partitions [topic STRING, partition_ids [INT32]] (null: none),
                      transaction_last_update_timestamp_ms INT64,
                      transaction_start_timestamp_ms INT64
          version 1   the same, flexible (compact strings/arrays, tagged fields)
    a null value (tombstone) removes the transactional id.

We write value v0 as Kafka 3.x does (null partitions in the Empty state); we read v0 and v1.
"""
from __future__ import annotations

import struct

from .offset_store import RecordFormatError, _put_string, _Reader

KEY_VERSION = 0
VALUE_VERSION = 0

# TransactionState ids as Kafka stores them.
EMPTY, ONGOING, PREPARE_COMMIT, PREPARE_ABORT, COMPLETE_COMMIT, COMPLETE_ABORT, DEAD, \
    PREPARE_EPOCH_FENCE = range(8)
STATE_NAMES = {EMPTY: "Empty", ONGOING: "Ongoing", PREPARE_COMMIT: "PrepareCommit",
               PREPARE_ABORT: "PrepareAbort", COMPLETE_COMMIT: "CompleteCommit",
               COMPLETE_ABORT: "CompleteAbort", DEAD: "Dead",
               PREPARE_EPOCH_FENCE: "PrepareEpochFence"}

_i16 = struct.Struct(">h")
_i32 = struct.Struct(">i")
_head = struct.Struct(">hqhib")
_tail = struct.Struct(">qq")


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
    out = bytearray(_i16.pack(KEY_VERSION))
    _put_string(out, transactional_id)
    return bytes(out)


def txn_value(rec: TxnRecord) -> bytes:
    out = bytearray(_head.pack(VALUE_VERSION, rec.producer_id, rec.producer_epoch,
                               rec.timeout_ms, rec.state))
    if rec.state == EMPTY:
        out += _i32.pack(-1)
    else:
        by_topic: dict[str, list[int]] = {}
        for t, p in sorted(rec.partitions):
            by_topic.setdefault(t, []).append(p)
        out += _i32.pack(len(by_topic))
        for t, ps in by_topic.items():
            _put_string(out, t)
            out += _i32.pack(len(ps))
            for p in ps:
                out += _i32.pack(p)
    out += _tail.pack(rec.update_ms, rec.start_ms)
    return bytes(out)


def read_txn_key(key) -> str:
    if key is None:
        raise RecordFormatError("__transaction_state record without a key")
    r = _Reader(key)
    version = r.int16()
    if version != KEY_VERSION:
        raise RecordFormatError(f"unknown __transaction_state key version {version}")
    return r.string()


def read_txn_value(value) -> TxnRecord | None:
    if value is None:
        return None
    r = _Reader(value)
    version = r.int16()
    if version not in (0, 1):
        raise RecordFormatError(f"unknown __transaction_state value version {version}")
    r.flexible = version >= 1
    pid, epoch, timeout, state = r.int64(), r.int16(), r.int32(), r.int8()
    partitions = set()
    n = r.uvarint() - 1 if r.flexible else r.int32()
    for _ in range(max(n, 0)):
        topic = r.string()
        for _ in range(r.array_len()):
            partitions.add((topic, r.int32()))
        r.tagged_fields()
    update_ms, start_ms = r.int64(), r.int64()
    r.tagged_fields()
    return TxnRecord(pid, epoch, timeout, state, partitions, update_ms, start_ms)
