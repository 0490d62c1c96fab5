"""Produce-side validation of a client's record set, as Kafka's LogValidator does it.

Beyond the batch headers (``wire.batch.validate_batches``: framing, magic, CRC, count against
lastOffsetDelta) every record is walked: count and sizes consistent with the batch, offset
deltas 0..count-1, well-formed keys, values and headers, a key on every record of a compacted
topic. A compressed batch must name a known codec and decompress. The walk is native
(``wire/_recscan.c``), so the hot path does no Python work per record.

Raises CorruptRecord (CORRUPT_MESSAGE) for framing, CRC, codec and decompression failures and
InvalidRecord (INVALID_RECORD, with the offending record's index) for bad records.
"""
from __future__ import annotations

from wire import _recscan
from wire.batch import HEADER_SIZE, BatchHeader, InvalidRecord, validate_batches
from wire.records import CODEC_NAMES, NONE, UnsupportedCodec, decompress


def validate_records(buf, compacted: bool = False) -> list[BatchHeader]:
    """Check every batch and record of ``buf``; returns the batch headers."""
    headers = validate_batches(buf)
    mv = memoryview(buf)
    for h in headers:
        codec = h.compression
        if codec not in CODEC_NAMES:
            raise UnsupportedCodec(f"unknown compression codec {codec}")
        section = mv[h.pos + HEADER_SIZE:h.pos + h.size]
        data = section if codec == NONE else decompress(codec, section)
        result = _recscan.scan(data, h.count, compacted)
        if result[0] >= 0:
            index, message = result
            raise InvalidRecord(f"batch at offset {h.pos} of the request: record {index}: "
                                f"{message}", [(index, message)])
    return headers
