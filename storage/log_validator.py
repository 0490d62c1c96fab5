"""The one pass a leader's records take before the log (Kafka's LogValidator): validation,
conversion of message formats v0/v1, timestamps. ``Log.append`` then only writes.

A client's v2 batches: headers (``wire.batch.validate_batches``: framing, magic, CRC, count
against lastOffsetDelta), max.message.bytes (before the records are looked at, as Kafka does),
then every record, walked natively (``wire.recscan``): count and sizes consistent with the
batch, offset deltas 0..count-1, well-formed keys, values and headers, a key on every record
of a compacted topic, timestamps within the topic's window (``message.timestamp.before.max.ms``
/ ``after.max.ms``). A compressed batch must name a known codec and decompress, to at most
``MAX_DECOMPRESSED`` bytes. A Produce v0-2 message set is converted to one v2 batch
(``wire.legacy.to_records``) and its records checked as they are converted.

The timestamps are made final here, with at most one CRC computation per batch: on a
LogAppendTime topic maxTimestamp becomes now, with the timestamp-type bit; on a CreateTime topic
a maxTimestamp that is not the records' largest (Sarama 1.22 sends -1) is rewritten so that
lookups by timestamp find the batch. What is left are baseOffset and partitionLeaderEpoch,
outside the CRC: the log writes them under its lock (`ValidatedRecords.assign_offsets`), at the
positions found here, without parsing the bytes again.

Raises CorruptRecord (CORRUPT_MESSAGE) for framing, CRC, codec and decompression failures,
RecordTooLarge (MESSAGE_TOO_LARGE) for a batch over max.message.bytes, and InvalidRecord
(INVALID_RECORD) or InvalidTimestamp (INVALID_TIMESTAMP), with the index and message of every
bad record of the batch (KIP-467), for bad records.
"""
from __future__ import annotations

import struct
import time

from josefk.wire import legacy, recscan
from josefk.wire.batch import (HEADER_SIZE, MAGIC_OFFSET, TIMESTAMP_TYPE_FLAG, BatchHeader, InvalidRecord,
                               InvalidTimestamp, read_header, set_max_timestamp,
                               validate_batches)
from josefk.wire.records import CODEC_NAMES, NONE, UnsupportedCodec, build_batch, decompress

from .config import LogConfig
from .errors import RecordTooLarge

_I64_MIN, _I64_MAX = -(1 << 63), (1 << 63) - 1
_UNBOUNDED = (_I64_MIN, _I64_MAX)  # the timestamp deltas accepted without a window
# Records of one batch may decompress to this much at most: a small compressed batch cannot
# make the broker allocate gigabytes (Kafka streams instead; we walk the records in one piece).
MAX_DECOMPRESSED = 128 << 20
NO_TIMESTAMP = -1

_offset = struct.Struct(">q")
_epoch = struct.Struct(">i")
_EPOCH_OFFSET = 12


def _now_ms() -> int:
    return int(time.time() * 1000)


class ValidatedRecords:
    """Batches ready for ``Log.append``: checked, in format v2, timestamps and CRCs final.

    ``buf`` (writable) holds the ``batches``; ``count`` is the number of offsets they take;
    ``now_ms`` is the time of the validation, which the log also rolls by;
    ``log_append_time_ms`` the time stamped into them on a LogAppendTime topic, else -1."""

    __slots__ = ("buf", "batches", "count", "now_ms", "log_append_time_ms")

    def __init__(self, buf, batches: list[BatchHeader], count: int, now_ms: int,
                 log_append_time: bool):
        self.buf = buf
        self.batches = batches
        self.count = count
        self.now_ms = now_ms
        self.log_append_time_ms = now_ms if log_append_time else NO_TIMESTAMP

    def assign_offsets(self, base_offset: int, leader_epoch: int) -> int:
        """Write baseOffset (from ``base_offset`` on) and partitionLeaderEpoch into every batch
        (the headers follow); returns the offset after the last one. Neither field is under the
        CRC."""
        buf = self.buf
        pack_offset = _offset.pack_into
        pack_epoch = _epoch.pack_into
        off = base_offset
        for h in self.batches:
            pos = h.pos
            pack_offset(buf, pos, off)
            pack_epoch(buf, pos + _EPOCH_OFFSET, leader_epoch)
            h.base_offset = off
            h.leader_epoch = leader_epoch
            off += h.last_offset_delta + 1
        return off


def validate_records(records, config: LogConfig, *, now_ms: int | None = None,
                     old_formats: bool = False) -> ValidatedRecords:
    """Validate a client's record set for a topic of ``config`` and make its timestamps final.
    ``old_formats`` (Produce v0-2): message formats v0/v1 are converted to one v2 batch, as
    Kafka converts them to the log's format; Kafka does not check the magic for these
    versions, so v2 batches sent with them are taken as they are."""
    if now_ms is None:
        now_ms = _now_ms()
    if old_formats and not (len(records) > MAGIC_OFFSET and records[MAGIC_OFFSET] == 2):
        return _convert(records, config, now_ms)
    batches = validate_batches(records)
    _check_sizes(batches, config)
    log_append_time = config.message_timestamp_type == "LogAppendTime"
    window = config.timestamp_window()
    compacted = config.compact
    mv = memoryview(records)
    count = 0
    for h in batches:
        codec = h.compression
        if codec not in CODEC_NAMES:
            raise UnsupportedCodec(f"unknown compression codec {codec}")
        lo, hi = _UNBOUNDED if window is None else _delta_range(window, now_ms,
                                                                  h.base_timestamp)
        section = mv[h.pos + HEADER_SIZE:h.pos + h.size]
        data = section if codec == NONE else decompress(codec, section, MAX_DECOMPRESSED)
        max_delta, bad, structural = recscan.scan(data, h.count, compacted, lo, hi)
        if bad:
            _refuse(h, bad, structural)
        if log_append_time:
            set_max_timestamp(records, h, now_ms, log_append_time=True)
        elif (max_delta is not None and not h.attributes & TIMESTAMP_TYPE_FLAG
              and h.max_timestamp != h.base_timestamp + max_delta):
            set_max_timestamp(records, h, h.base_timestamp + max_delta, log_append_time=False)
        count += h.count  # = lastOffsetDelta + 1, as validate_batches checked
    return ValidatedRecords(records, batches, count, now_ms, log_append_time)


def own_records(batch, config: LogConfig, *, now_ms: int | None = None) -> ValidatedRecords:
    """One batch the broker built itself (the coordinators' records, transaction markers): well
    formed by construction, so only max.message.bytes and LogAppendTime apply."""
    if now_ms is None:
        now_ms = _now_ms()
    h = read_header(batch, 0)
    _check_sizes([h], config)
    log_append_time = config.message_timestamp_type == "LogAppendTime"
    if log_append_time:
        set_max_timestamp(batch, h, now_ms, log_append_time=True)
    return ValidatedRecords(batch, [h], h.last_offset_delta + 1, now_ms, log_append_time)


def _check_sizes(batches, config: LogConfig) -> None:
    limit = config.max_message_bytes
    for h in batches:
        if h.size > limit:
            raise RecordTooLarge(f"batch of {h.size} bytes exceeds max.message.bytes {limit}")


def _delta_range(window, now_ms: int, base_timestamp: int) -> tuple[int, int]:
    """The timestamp deltas a batch's records may have, ``window`` being ``(before_ms,
    after_ms)`` around now."""
    before, after = window
    return (max(_I64_MIN, now_ms - before - base_timestamp),
            min(_I64_MAX, now_ms + after - base_timestamp))


def _convert(message_set, config: LogConfig, now_ms: int) -> ValidatedRecords:
    """A Produce v0-2 message set as one v2 batch (Kafka's convertAndAssignOffsetsNonCompressed
    and its compressed twin): its records are checked as the walk of a v2 batch checks them,
    with the same errors."""
    records, codec = legacy.to_records(message_set)
    log_append_time = config.message_timestamp_type == "LogAppendTime"
    buf = build_batch(records, compression=codec, now_ms=now_ms, log_append_time=log_append_time)
    h = read_header(buf, 0)
    _check_sizes([h], config)
    window = config.timestamp_window()
    if config.compact or window is not None:  # else no record can fail
        _check_converted(records, h, config.compact, window, now_ms)
    return ValidatedRecords(buf, [h], h.count, now_ms, log_append_time)


def _check_converted(records, h: BatchHeader, compacted: bool, window, now_ms: int) -> None:
    lo, hi = _UNBOUNDED if window is None else _delta_range(window, now_ms, h.base_timestamp)
    bad = []
    for i, (key, _value, _headers, ts) in enumerate(records):
        if compacted and key is None:
            bad.append((i, "Compacted topic cannot accept message without key", False))
        delta = ts - h.base_timestamp
        # v0 messages carry no timestamp: Kafka checks only records that have one
        if ts != legacy.NO_TIMESTAMP and (delta < lo or delta > hi):
            bad.append((i, f"Timestamp delta {delta} of record {i} is out of the range "
                           f"[{lo}, {hi}] the topic accepts", True))
    if bad:
        _refuse(h, bad, False)


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
