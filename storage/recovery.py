"""Opening a partition's log dir: what is on disk after a clean stop or a crash, made consistent.

Owns the clean-shutdown marker (written by ``Log.close``, read and removed here), the choice of
the segments to check (from the recovery point after a crash, none after a clean stop),
rebuilding indexes that do not match their segment, cutting a torn tail, finishing a
compaction swap a crash interrupted (``<base>.log.swap``, see ``Log.replace_segments``) and
removing the leftovers of interrupted writes (``.cleaned``, ``.deleted``, ``.tmp``).

Must not know appends, reads or retention (``log.py``) nor how compaction chooses what to keep
(``compaction.py``): it hands back segments and offsets, and ``Log`` takes it from there.
"""
from __future__ import annotations

import logging
import os
from bisect import bisect_right
from pathlib import Path
from typing import NamedTuple

from . import snapshots
from .segment import Scan, Segment, _fsync, _fsync_dir, _unlink, file_prefix

log = logging.getLogger(__name__)

CLEAN_SHUTDOWN_FILE = ".clean_shutdown"


class LoadedLog(NamedTuple):
    segments: list  # oldest first; every one but the last parked
    log_start_offset: int
    high_watermark: int
    log_end_offset: int  # also the recovery point: everything below is on disk, synced
    created: bool  # the dir was empty and got its first segment (the dir needs an fsync)
    recovered: list  # the segments scanned batch by batch (those past the recovery point)


def load(d: Path, index_interval: int, lock, lso_hint, recovery_point, hwm_hint) -> LoadedLog:
    """Open the segments of ``d``, recovering those a crash may have left torn. The offsets
    come from the hints (the log dir's checkpoints) when given, else from the clean-shutdown
    marker, else Kafka's defaults (start of the first segment, 0, log start offset)."""
    marker = d / CLEAN_SHUTDOWN_FILE
    clean = marker.exists()
    saved = _read_marker(marker) if clean else {}
    names = os.listdir(d)
    for n in names:
        if n.endswith(".cleaned") or n.endswith(".deleted") or n.endswith(".tmp"):
            _unlink(d / n)
    bases = sorted(int(n[:20]) for n in names
                   if n.endswith(".log") and len(n) == 24 and n[:20].isdigit())
    for n in names:
        if n.endswith(".log.swap") and len(n) == 29 and n[:20].isdigit():
            bases = _finish_swap(d, int(n[:20]), bases)
    known = {file_prefix(b) for b in bases}
    for n in os.listdir(d):
        if (n.endswith(".index") or n.endswith(".timeindex")) and n.split(".")[0] not in known:
            _unlink(d / n)

    recover_from = len(bases)
    if not clean:
        rp = recovery_point if recovery_point is not None else 0
        recover_from = max(0, bisect_right(bases, rp) - 1)
    segments: list[Segment] = []
    recovered = []
    for k, b in enumerate(bases):
        seg, ok = Segment.open(d, b, index_interval, lock)
        segments.append(seg)
        if k >= recover_from:
            truncated = seg.recover()
            recovered.append(seg)
            if truncated and k + 1 < len(bases):
                log.warning("recovery: deleting %d segment(s) of %s after the truncated one",
                            len(bases) - k - 1, d)
                for b2 in bases[k + 1:]:
                    s2 = Segment(d, b2, index_interval, lock=lock)
                    s2.delete()
                break
        elif not ok:
            log.warning("rebuilding the indexes of %s", seg.log_path)
            seg.recover()
    # sanity: a closed segment's time index cannot point past the next segment
    for k in range(len(segments) - 1):
        s = segments[k]
        if s.offset_of_max_timestamp >= segments[k + 1].base_offset:
            s.recover()
    created = not segments
    if created:
        start = max(lso_hint or 0, int(saved.get("log_start_offset", 0)))
        # at offset 0 nothing is lost if it crashes before its first write: its files wait for it
        segments.append(Segment.create(d, start, index_interval, lock, lazy=start == 0))
    last = segments[-1]
    ok, last_off = (True, None) if created else last.tail_is_clean()
    if not ok:
        log.warning("the tail of %s is not a sequence of whole batches; recovering",
                    last.log_path)
        last.recover()
        recovered.append(last)
        last_off = last.last_offset()
    leo = last.base_offset if last_off is None else last_off + 1

    lso = segments[0].base_offset
    for v in (lso_hint, saved.get("log_start_offset")):
        if v is not None:
            lso = max(lso, int(v))
    lso = min(lso, leo)
    hwm = hwm_hint if hwm_hint is not None else saved.get("high_watermark")
    hwm = lso if hwm is None else int(hwm)
    hwm = min(max(hwm, lso), leo)
    for s in recovered:
        for fd in s.fds():
            _fsync(fd)
    for s in segments[:-1]:  # reopened when read; only the active one is written
        s.park()
    snapshots.delete_above(d, leo)
    if clean:
        marker.unlink()
        _fsync_dir(d)
    return LoadedLog(segments, lso, hwm, leo, created, [s for s in recovered if s in segments])


def write_clean_marker(d: Path, log_start_offset: int, high_watermark: int,
                       log_end_offset: int) -> None:
    """Record a clean stop: the next ``load`` checks no segment and takes these offsets.
    Losing it in a crash only costs a recovery (from a recovery point that is the log end
    now), so its rename is not synced."""
    tmp = d / (CLEAN_SHUTDOWN_FILE + ".tmp")
    tmp.write_text(f"log_start_offset={log_start_offset}\nhigh_watermark={high_watermark}\n"
                   f"log_end_offset={log_end_offset}\n")
    os.rename(tmp, d / CLEAN_SHUTDOWN_FILE)


def _finish_swap(d: Path, base: int, bases: list[int]) -> list[int]:
    """Complete a compaction swap interrupted by a crash: ``<base>.log.swap`` replaces every
    segment whose base offset lies in [base, last offset of the swap file]."""
    swap = d / (file_prefix(base) + ".log.swap")
    fd = os.open(swap, os.O_RDONLY)
    try:
        last = None
        for h, _ in Scan(fd, 0, os.fstat(fd).st_size):
            last = h.last_offset
    finally:
        os.close(fd)
    last = base if last is None else last
    keep = []
    for b in bases:
        if base <= b <= last:
            for ext in (".log", ".index", ".timeindex"):
                _unlink(d / (file_prefix(b) + ext))
        else:
            keep.append(b)
    for ext in (".index", ".timeindex"):
        _unlink(d / (file_prefix(base) + ext))
    os.rename(swap, d / (file_prefix(base) + ".log"))
    log.warning("completed an interrupted compaction swap at offset %d in %s", base, d)
    return sorted(keep + [base])


def _read_marker(path: Path) -> dict:
    out = {}
    try:
        for line in path.read_text().splitlines():
            k, sep, v = line.partition("=")
            if sep and v.strip().lstrip("-").isdigit():
                out[k.strip()] = int(v)
    except OSError:
        pass
    return out
