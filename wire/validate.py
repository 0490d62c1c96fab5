"""Produce-side validation of a client's record set, as Kafka's LogValidator does it.

Beyond the batch headers (``wire.batch.validate_batches``: framing, magic, CRC, count against
lastOffsetDelta) every record is walked: count and sizes consistent with the batch, offset
deltas 0..count-1, well-formed keys, values and headers, a key on every record of a compacted
topic, timestamps within the topic's window (``message.timestamp.before.max.ms`` /
``after.max.ms``). A compressed batch must name a known codec and decompress, to at most
``MAX_DECOMPRESSED`` bytes. The walk is native
(``wire/_recscan.c``), so the hot path does no Python work per record.

Raises CorruptRecord (CORRUPT_MESSAGE) for framing, CRC, codec and decompression failures and
InvalidRecord (INVALID_RECORD) or InvalidTimestamp (INVALID_TIMESTAMP), with the index and
message of every bad record of the batch (KIP-467), for bad records.
"""
from __future__ import annotations

import time

from josefk.wire import recscan
from josefk.wire.batch import (HEADER_SIZE, TIMESTAMP_TYPE_FLAG, BatchHeader, InvalidRecord,
                               InvalidTimestamp, set_max_timestamp, validate_batches)
from josefk.wire.records import CODEC_NAMES, NONE, UnsupportedCodec, decompress

_I64_MIN, _I64_MAX = -(1 << 63), (1 << 63) - 1
# Records of one batch may decompress to this much at most: a small compressed batch cannot
# make the broker allocate gigabytes (Kafka streams instead; we walk the records in one piece).
MAX_DECOMPRESSED = 128 << 20


def validate_records(buf, compacted: bool = False, timestamp_window=None,
                     now_ms: int | None = None, headers=None) -> list[BatchHeader]:
    """Check every batch and record of ``buf``; returns the batch headers (``headers``: those
    `validate_batches` already returned for it). ``timestamp_window`` is ``(before_ms,
    after_ms)`` around ``now_ms``, or None (no bound). A CreateTime batch whose maxTimestamp is
    not its records' largest timestamp (Sarama 1.22 sends -1) gets it rewritten, as Kafka's
    LogValidator does, so that lookups by timestamp find it."""
    if headers is None:
        headers = validate_batches(buf)
    mv = memoryview(buf)
    if timestamp_window is not None and now_ms is None:
        now_ms = int(time.time() * 1000)
    for h in headers:
        codec = h.compression
        if codec not in CODEC_NAMES:
            raise UnsupportedCodec(f"unknown compression codec {codec}")
        lo, hi = _I64_MIN, _I64_MAX
        if timestamp_window is not None:
            before, after = timestamp_window
            lo = max(_I64_MIN, now_ms - before - h.base_timestamp)
            hi = min(_I64_MAX, now_ms + after - h.base_timestamp)
        section = mv[h.pos + HEADER_SIZE:h.pos + h.size]
        data = section if codec == NONE else decompress(codec, section, MAX_DECOMPRESSED)
        max_delta, bad, structural = recscan.scan(data, h.count, compacted, lo, hi)
        if bad:
            _refuse(h, bad, structural)
        if (max_delta is not None and not h.attributes & TIMESTAMP_TYPE_FLAG
                and h.max_timestamp != h.base_timestamp + max_delta):
            set_max_timestamp(buf, h, h.base_timestamp + max_delta, log_append_time=False)
    return headers


def _refuse(h: BatchHeader, bad, structural: bool):
    """Raise what Kafka answers for the record errors ``bad`` [(index, message, timestamp)] of
    one batch: every bad record is listed; the partition's error is INVALID_TIMESTAMP if one of
    them has a timestamp out of range, else INVALID_RECORD."""
    record_errors = [(index, message) for index, message, _ts in bad]
    if structural:
        index, message = record_errors[0]
        raise InvalidRecord(f"batch at offset {h.pos} of the request: record {index}: {message}",
                            record_errors)
    if any(ts for _i, _m, ts in bad):
        raise InvalidTimestamp("One or more records have been rejected due to invalid timestamp",
                               record_errors)
    shown = ", ".join(f"RecordError(batchIndex={i}, message='{m}')" for i, m in record_errors[:3])
    raise InvalidRecord(f"One or more records have been rejected due to {len(bad)} record "
                        "errors in total, and only showing the first three errors at most: "
                        f"[{shown}]", record_errors)
