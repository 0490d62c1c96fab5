"""Log compaction (cleanup.policy with "compact"): one pass over one log's closed segments, as
Kafka's Cleaner does it.

Owns the choice of what is cleanable (closed segments below the high watermark and the first
open transaction, older than min.compaction.lag.ms, dirty enough), the latest offset of every
key, rewriting groups of segments (merged up to segment.bytes) without superseded records,
keyless records, tombstones older than delete.retention.ms, aborted transactions' data and the
markers of transactions left without data (Kafka's KIP-534 horizon), and what one log's
compaction remembers between passes (`CleaningState`).

Must not know how the log appends, reads or recovers: a pass reads a pinned copy of the segment
list (`Log.pin_segments`) outside the log's lock and hands each rewritten file to
`Log.replace_segments`, which swaps it in unless the log was truncated meanwhile. The threads
that run the passes are ``cleaner.py``'s.
"""
from __future__ import annotations

import os
import time

from josefk.wire.batch import TIMESTAMP_TYPE_FLAG, TRANSACTIONAL_FLAG, read_header
from josefk.wire.records import CONTROL_ABORT, build_batch, iter_records, parse_control_record

from .segment import INT32_MAX, SCAN_CHUNK, Scan, _fsync, _unlink, file_prefix, write_all


class CleaningState:
    """What compaction remembers of one log between passes, for this process's life."""

    __slots__ = ("clean_offset", "tombstones_due_ms", "markers_emptied")

    def __init__(self):
        self.clean_offset = 0  # offsets below were cleaned
        self.tombstones_due_ms = None  # when a kept tombstone becomes removable
        # (offset, producer id) of each marker whose transaction has no data left -> since
        # when; the marker goes delete.retention.ms later
        self.markers_emptied: dict[tuple[int, int], int] = {}


def compact(log, now_ms: int | None = None) -> int:
    """Compact ``log``'s closed segments (see ``Log.compact``). Returns the bytes reclaimed."""
    cfg = log.config
    if not cfg.compact:
        return 0
    if now_ms is None:
        now_ms = int(time.time() * 1000)
    pinned = log.pin_segments()
    if pinned is None:
        return 0
    segs, sizes, fds, hwm, generation = pinned
    try:
        return _compact(log, cfg, now_ms, segs, sizes, fds, hwm, generation)
    finally:
        for fd in fds:
            os.close(fd)


def _compact(log, cfg, now_ms, segs, sizes, fds, hwm, generation) -> int:
    state = log.cleaning
    # 1. transactions: which batches were aborted, where the first open transaction starts,
    # the data batches of each marker's transaction
    aborted: set[int] = set()
    pending: dict[int, list[int]] = {}
    txn_batches: dict[int, list[int]] = {}
    for seg, fd, size in zip(segs, fds, sizes):
        for h, _ in Scan(fd, 0, size):
            if not h.attributes & TRANSACTIONAL_FLAG:
                continue
            if h.is_control:
                data = os.pread(fd, h.size, h.pos)
                for r in iter_records(data, read_header(data, 0)):
                    kind, _epoch = parse_control_record(r)
                    started = txn_batches[h.base_offset] = pending.pop(h.producer_id, [])
                    if kind == CONTROL_ABORT:
                        aborted.update(started)
            else:
                pending.setdefault(h.producer_id, []).append(h.base_offset)
    first_unstable = min((v[0] for v in pending.values() if v), default=None)

    # 2. cleanable prefix of closed segments
    limit = hwm if first_unstable is None else min(hwm, first_unstable)
    n = 0
    while n < len(segs) - 1:
        seg = segs[n]
        if segs[n + 1].base_offset > limit:
            break
        if cfg.min_compaction_lag_ms > 0 and \
                now_ms - seg.largest_timestamp() < cfg.min_compaction_lag_ms:
            break
        n += 1
    if n == 0:
        return 0
    total = sum(sizes[:n])
    dirty = sum(sizes[k] for k in range(n) if segs[k + 1].base_offset > state.clean_offset)
    due = state.tombstones_due_ms
    if (dirty == 0 or dirty / total < cfg.min_cleanable_dirty_ratio) and \
            (due is None or now_ms < due):
        return 0

    # 3. latest offset of every key in the cleanable range
    latest: dict[bytes, int] = {}
    for k in range(n):
        for h, data in Scan(fds[k], 0, sizes[k], data=True):
            if h.is_control or h.base_offset in aborted:
                continue
            for r in iter_records(data, read_header(data, 0)):
                if r.key is not None:
                    latest[r.key] = r.offset

    # 4. group consecutive segments (by original size) and rewrite each group
    groups = []
    cur: list[int] = []
    cur_size = 0
    for k in range(n):
        upper = segs[k + 1].base_offset - 1
        if cur and (cur_size + sizes[k] > cfg.segment_bytes
                    or upper - segs[cur[0]].base_offset > INT32_MAX):
            groups.append(cur)
            cur, cur_size = [], 0
        cur.append(k)
        cur_size += sizes[k]
    if cur:
        groups.append(cur)

    reclaimed = 0
    horizon = now_ms - cfg.delete_retention_ms
    due = [None]
    emptied = state.markers_emptied
    txns = _TxnCleaning(txn_batches, emptied, now_ms, cfg.delete_retention_ms)
    for group in groups:
        old_size = sum(sizes[k] for k in group)
        txns.removed = []
        result = _clean_group(log.dir, cfg, [segs[k] for k in group], [fds[k] for k in group],
                              [sizes[k] for k in group], latest, aborted, horizon, due, txns)
        if result is None:
            continue
        tmp, headers, new_size = result
        if not log.replace_segments(tmp, [segs[k] for k in group], headers, generation):
            # the log changed under us: what later groups assumed may not hold, and data
            # this pass meant to drop may still be there
            for key in txns.noted:
                emptied.pop(key, None)
            break
        reclaimed += old_size - new_size
        if txns.removed and log.on_markers_removed is not None:
            log.on_markers_removed([off for off, _pid in txns.removed])
        for key in txns.removed:
            emptied.pop(key, None)

    def remember():
        state.clean_offset = max(state.clean_offset, segs[n].base_offset)
        state.tombstones_due_ms = min((t for t in (due[0], txns.due) if t is not None),
                                      default=None)

    log.unless_truncated_since(generation, remember)
    return reclaimed


def _clean_group(directory, cfg, group, fds, sizes, latest, aborted, horizon, due, txns):
    """Write what ``group`` keeps into ``<base>.log.cleaned``: (path, headers, size), or None
    when nothing would change."""
    base = group[0].base_offset
    tmp = directory / (file_prefix(base) + ".log.cleaned")
    out_fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    headers = []
    pos = 0
    out = bytearray()
    changed = len(group) > 1  # merging segments is worth a rewrite by itself
    try:
        for seg, fd, size in zip(group, fds, sizes):
            drop_tombstones = seg.largest_timestamp() < horizon
            for h, data in Scan(fd, 0, size, data=True):
                if h.base_offset in aborted and not h.is_control:
                    txns.dropped.add(h.base_offset)
                    changed = True
                    continue
                if h.is_control:
                    if txns.marker_removable(h):
                        changed = True
                        continue
                    piece = data
                else:
                    recs = list(iter_records(data, read_header(data, 0)))
                    keep = [r for r in recs
                            if r.key is not None and latest.get(r.key) == r.offset
                            and not (r.value is None and drop_tombstones)]
                    if not drop_tombstones and any(r.value is None for r in keep):
                        t = seg.largest_timestamp() + cfg.delete_retention_ms + 1
                        due[0] = t if due[0] is None else min(due[0], t)
                    if len(keep) == len(recs):
                        piece = data
                    elif not keep:
                        txns.dropped.add(h.base_offset)
                        changed = True
                        continue
                    else:
                        changed = True
                        piece = build_batch(
                            [(r.key, r.value, r.headers, r.timestamp) for r in keep],
                            base_offset=h.base_offset,
                            offset_deltas=[r.offset - h.base_offset for r in keep],
                            compression=h.compression, producer_id=h.producer_id,
                            producer_epoch=h.producer_epoch, base_sequence=h.base_sequence,
                            transactional=h.is_transactional,
                            partition_leader_epoch=h.leader_epoch,
                            log_append_time=bool(h.attributes & TIMESTAMP_TYPE_FLAG),
                            now_ms=h.max_timestamp)
                nh = read_header(piece, 0)
                nh.pos = pos
                headers.append(nh)
                out += piece
                pos += nh.size
                if len(out) >= SCAN_CHUNK:
                    write_all(out_fd, out)
                    out.clear()
        if not changed:
            os.close(out_fd)
            _unlink(tmp)
            return None
        if out:
            write_all(out_fd, out)
        _fsync(out_fd)
    except BaseException:
        os.close(out_fd)
        _unlink(tmp)
        raise
    os.close(out_fd)
    return tmp, headers, pos


class _TxnCleaning:
    """One compaction pass's view of transaction markers: a marker whose transaction has no
    data batch left (all dropped now or before) is noted with the time it was first seen so,
    and removed once that is more than delete.retention.ms ago, so a reader that saw the data
    before it went still finds the marker; ``due`` is when the next noted marker becomes
    removable."""

    def __init__(self, txn_batches, emptied, now_ms, retention_ms):
        self.txn_batches = txn_batches  # marker offset -> its transaction's data batches
        self.emptied = emptied  # (marker offset, producer id) -> when its data was all gone
        for key in [k for k in emptied if k[0] not in txn_batches]:
            del emptied[key]  # markers no longer in the log
        self.now_ms, self.retention_ms = now_ms, retention_ms
        self.dropped: set[int] = set()  # data batches this pass removes
        self.removed: list[tuple[int, int]] = []  # markers removed from the current group
        self.noted: list[tuple[int, int]] = []  # markers first seen without data in this pass
        self.due = None

    def marker_removable(self, h) -> bool:
        if not all(b in self.dropped for b in self.txn_batches.get(h.base_offset, ())):
            return False
        key = (h.base_offset, h.producer_id)
        since = self.emptied.get(key)
        if since is None:
            since = self.emptied[key] = self.now_ms
            self.noted.append(key)
        if self.now_ms - since > self.retention_ms:
            self.removed.append(key)
            return True
        t = since + self.retention_ms + 1
        self.due = t if self.due is None else min(self.due, t)
        return False
