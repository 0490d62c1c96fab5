"""Opaque state snapshots kept beside a log, as Kafka's ``<offset>.snapshot`` files.

The log's owner (the broker's producer-state table) supplies the bytes; the log writes them at
every segment roll and at clean shutdown, named by the offset they are valid up to (state of
every batch below it), keeps the newest ``KEEP``, and drops any above the log end after
recovery or truncation. Start-up then replays only the batches after the newest snapshot.
"""
from __future__ import annotations

import os
from pathlib import Path

SUFFIX = ".snapshot"
KEEP = 2


def _offsets(d: Path) -> list[int]:
    return sorted(int(n[:20]) for n in os.listdir(d)
                  if n.endswith(SUFFIX) and len(n) == 20 + len(SUFFIX) and n[:20].isdigit())


def _path(d: Path, offset: int) -> Path:
    return d / f"{offset:020d}{SUFFIX}"


def write(d: Path, offset: int, data: bytes, keep_above: int | None = None) -> None:
    """Write the snapshot at ``offset`` and drop all but the newest ``KEEP``, except those
    above ``keep_above`` (a tiered log's snapshots not copied to the remote log yet)."""
    tmp = d / f"{offset:020d}{SUFFIX}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, _path(d, offset))
    for old in _offsets(d)[:-KEEP]:
        if keep_above is None or old <= keep_above:
            _path(d, old).unlink(missing_ok=True)


def rewrite(d: Path, fn) -> None:
    """Replace every snapshot's bytes with ``fn(bytes)`` (same offsets), atomically each."""
    for offset in _offsets(d):
        write(d, offset, fn(_path(d, offset).read_bytes()))


def latest(d: Path) -> tuple[int, bytes] | None:
    """``(offset, data)`` of the newest snapshot, or None."""
    offsets = _offsets(d)
    if not offsets:
        return None
    return offsets[-1], _path(d, offsets[-1]).read_bytes()


def delete_above(d: Path, offset: int) -> None:
    """Drop snapshots of state past ``offset`` (the log no longer holds what they describe)."""
    for o in _offsets(d):
        if o > offset:
            _path(d, o).unlink(missing_ok=True)
