"""The record walk of ``wire/_recscan.c`` in plain Python, for where the native helper could not be
built (no C compiler): the same functions with the same results, errors and messages, only slower
(a produce pays a few microseconds per record). `josefk.wire.recscan` picks one of the two."""
from __future__ import annotations

_MASK64 = (1 << 64) - 1


class _Malformed(Exception):
    pass


def _varint(buf, pos: int, end: int, max_bytes: int) -> tuple[int, int]:
    """A zigzag varint of at most ``max_bytes`` bytes at ``pos``: (value, next position)."""
    v = shift = 0
    for _ in range(max_bytes):
        if pos >= end:
            raise _Malformed
        b = buf[pos]
        pos += 1
        v = (v | (b & 0x7F) << shift) & _MASK64
        if not b & 0x80:
            return (v >> 1) ^ -(v & 1), pos
        shift += 7
    raise _Malformed


def _sized(buf, pos: int, end: int, nullable: bool) -> tuple[int, int]:
    """A length-prefixed field: (length, position past it); -1 (null) when ``nullable``."""
    n, pos = _varint(buf, pos, end, 5)
    if n == -1 and nullable:
        return n, pos
    if n < 0 or n > end - pos:
        raise _Malformed
    return n, pos + n


def scan(data, count: int, need_key, min_ts: int, max_ts: int):
    """See ``wire/_recscan.c``: (max timestamp delta or None, [(index, message, is timestamp
    error)], structural)."""
    buf = bytes(data)
    end = len(buf)
    errors = []
    pos = 0
    max_delta = None
    for i in range(count):
        try:
            length, pos = _varint(buf, pos, end, 5)
            if length < 0 or length > end - pos:
                raise _Malformed
        except _Malformed:
            return None, [(i, f"Found invalid record structure: record {i} of {count} does not "
                              "fit in the batch", False)], True
        rec, rec_end = pos, pos + length
        pos = rec_end
        if rec >= rec_end:
            return None, [(i, "Found invalid record structure: empty record", False)], True
        rec += 1  # attributes: unused in v2
        try:
            ts_delta, rec = _varint(buf, rec, rec_end, 10)
            offset_delta, rec = _varint(buf, rec, rec_end, 5)
        except _Malformed:
            return None, [(i, "Found invalid record structure", False)], True
        if offset_delta != i:
            return None, [(i, f"Invalid offset delta {offset_delta} of record {i} (expected {i})",
                           False)], True
        try:
            klen, rec = _sized(buf, rec, rec_end, True)
            _vlen, rec = _sized(buf, rec, rec_end, True)
            hcount, rec = _varint(buf, rec, rec_end, 5)
            if hcount < 0:
                raise _Malformed
        except _Malformed:
            return None, [(i, "Found invalid record structure: bad key, value or header count",
                           False)], True
        for h in range(hcount):
            try:
                _n, rec = _sized(buf, rec, rec_end, False)
                _n, rec = _sized(buf, rec, rec_end, True)
            except _Malformed:
                return None, [(i, f"Found invalid record structure: bad header {h}", False)], True
        if rec != rec_end:
            return None, [(i, f"Invalid record size: expected to read {length} bytes in record "
                              f"payload, but instead read {rec - (rec_end - length)}", False)], True
        if need_key and klen < 0:
            errors.append((i, "Compacted topic cannot accept message without key", False))
        if ts_delta < min_ts or ts_delta > max_ts:
            errors.append((i, f"Timestamp delta {ts_delta} of record {i} is out of the range "
                              f"[{min_ts}, {max_ts}] the topic accepts", True))
        if max_delta is None or ts_delta > max_delta:
            max_delta = ts_delta
    if pos != end:
        return None, [(count, "Incorrect declared batch size, records still remaining in file",
                       False)], True
    return max_delta, errors, False


def latest(data, count: int, into: dict, tag) -> None:
    """See ``wire/_recscan.c``: ``into[key] = (value or None, tag)`` for each keyed record, the
    key moved to the end of the dict's order."""
    if not isinstance(into, dict):
        raise TypeError("latest() argument 3 must be dict")
    buf = bytes(data)
    end = len(buf)
    pos = 0
    try:
        for _ in range(count):
            length, pos = _varint(buf, pos, end, 5)
            if length < 1 or length > end - pos:
                raise _Malformed
            rec, rec_end = pos + 1, pos + length  # past the attributes
            pos = rec_end
            _skip, rec = _varint(buf, rec, rec_end, 10)
            _skip, rec = _varint(buf, rec, rec_end, 5)
            klen, rec = _sized(buf, rec, rec_end, True)
            if klen == -1:
                continue  # keyless: nothing a replay keeps
            key = buf[rec - klen:rec]
            vlen, rec = _sized(buf, rec, rec_end, True)
            into.pop(key, None)
            into[key] = (buf[rec - vlen:rec] if vlen >= 0 else None, tag)
    except _Malformed:
        raise ValueError("malformed record") from None


def buffer(n: int) -> bytearray:
    """A bytearray of ``n`` bytes (the native one skips zeroing them)."""
    if n < 0:
        raise ValueError("negative buffer size")
    return bytearray(n)
