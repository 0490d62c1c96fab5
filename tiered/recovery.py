"""A partition's remote log read from the bucket alone, past Kafka (Redpanda's topic recovery
and read-replica topics): the old cluster's ``__remote_log_metadata`` may be gone, so the
segments are found by listing ``<topic>-<partition>-<topic id>/`` and reading each segment's
indexes.

`topics_in` names the incarnations (topic ids) of a topic the bucket holds and their
partitions; `scan` rebuilds one partition's segment list; `recover` (topic recovery) writes
them to the new cluster's metadata and restarts the empty local log past their end; `follow`
(a read replica) keeps an in-memory list up to date with what the origin uploads, and writes
nothing anywhere. Every call blocks: the remote log manager's thread runs them.
"""
from __future__ import annotations

import base64
import logging
import re
import struct
import uuid
from typing import TYPE_CHECKING

from josefk.wire.batch import HEADER_SIZE, read_header
from josefk.wire.types import DecodeError

from . import manager, metadata as md
from .store import ObjectStore, StoreError

if TYPE_CHECKING:
    from .manager import Leader, RemoteLogManager

log = logging.getLogger("josefk.tiered")

_SUFFIXES = (".log", ".index", ".timeindex", ".snapshot", ".leader_epoch_checkpoint",
             ".txnindex")
_OBJECT = re.compile(r"(\d{20})-([A-Za-z0-9_-]{22})(\.[a-z_]+)$")


def parse_uuid(text: str) -> uuid.UUID:
    """A UUID as Kafka prints it (`md.uuid_text`), back."""
    return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=="))


def topics_in(store: ObjectStore, topic: str) -> dict[uuid.UUID, set[int]]:
    """The incarnations of ``topic`` in the bucket: {topic id: its partitions}. Lists the
    bucket's top level (a prefix without a '/' is the whole bucket to the S3 engine)."""
    pattern = re.compile(re.escape(topic) + r"-(\d+)-([A-Za-z0-9_-]{22})/")
    found: dict[uuid.UUID, set[int]] = {}
    for key in store.list(topic + "-"):
        m = pattern.match(key)
        if m:
            found.setdefault(parse_uuid(m.group(2)), set()).add(int(m.group(1)))
    return found


def scan(store: ObjectStore, prefix: str, known=frozenset()) -> list[md.RemoteSegment]:
    """The complete segments under ``prefix``, by start offset, as COPY_SEGMENT_FINISHED
    metadata; a segment id in ``known`` is not read again. A segment missing one of its six
    objects, or whose ``.log`` does not end on a whole batch (an upload a crash interrupted),
    is left out, and so is one overlapping the segment before (a copy made twice: the first
    complete one is kept)."""
    objects: dict[tuple[int, str], dict[str, int]] = {}
    for key, size in store.list_sizes(prefix).items():
        m = _OBJECT.match(key[len(prefix):])
        if m:
            objects.setdefault((int(m.group(1)), m.group(2)), {})[m.group(3)] = size
    out: list[md.RemoteSegment] = []
    for (start, sid_text), sizes in sorted(objects.items()):
        sid = parse_uuid(sid_text)
        if sid in known or set(_SUFFIXES) - sizes.keys():
            continue
        if out and start <= out[-1].end_offset:
            continue
        stem = f"{prefix}{start:020d}-{sid_text}"
        try:
            seg = _read_segment(store, stem, sid, start, sizes)
        except (StoreError, DecodeError, ValueError) as e:
            log.warning("%s: skipping remote segment %s: %s", prefix, stem, e)
            continue
        if seg is not None:
            out.append(seg)
    return out


def _read_segment(store, stem, sid, start, sizes) -> md.RemoteSegment | None:
    """One segment's metadata out of its objects: its end and largest timestamp from the
    batches past its offset index's last entry (the time index's last entry is the largest
    before), its leader epochs from its checkpoint, whether it has aborted transactions."""
    size = sizes[".log"]
    if size < HEADER_SIZE:
        return None
    index = store.get(stem + ".index")
    at = struct.unpack_from(">i", index, len(index) - len(index) % 8 - 4)[0] \
        if len(index) >= 8 else 0
    times = store.get(stem + ".timeindex")
    max_ts = struct.unpack_from(">q", times, len(times) - len(times) % 12 - 12)[0] \
        if len(times) >= 12 else -1
    tail = store.get(stem + ".log", at, size)
    pos, end = 0, None
    while pos + HEADER_SIZE <= len(tail):
        h = read_header(tail, pos)
        if h.size <= 0:
            return None
        end, max_ts = h.last_offset, max(max_ts, h.max_timestamp)
        pos += h.size
    if end is None or pos != len(tail):
        return None  # cut short: not a whole segment
    history = manager._parse_epoch_checkpoint(store.get(stem + ".leader_epoch_checkpoint"))
    return md.RemoteSegment(sid, start, end, max_ts, size,
                            manager.segment_epochs(history, start, end + 1),
                            md.COPY_SEGMENT_FINISHED, sizes[".txnindex"] == 0)


def recover(rlm: RemoteLogManager, leader: Leader, segs: md.PartitionSegments) -> None:
    """Topic recovery: the segments the bucket holds and the metadata does not name are
    written to it (COPY_SEGMENT_STARTED, then FINISHED), then the partition's empty local log
    restarts past the last one with its leader epochs and producer state."""
    prefix = manager.object_prefix(leader.topic, leader.partition, leader.topic_id)
    store = rlm.store_of(leader)
    found = scan(store, prefix, known=set(segs.segments))
    for seg in found:
        rlm._publish(leader, segs, md.segment_metadata(leader, rlm.node_id, seg, rlm.now_ms()))
        rlm._publish(leader, segs, md.segment_update(leader, rlm.node_id, seg,
                                                     md.COPY_SEGMENT_FINISHED, rlm.now_ms()))
    copied = segs.copied()
    if not copied:
        log.info("%s-%d: nothing to recover under %s", leader.topic, leader.partition, prefix)
        return
    last = copied[-1]
    keys = manager.object_keys(prefix, last)
    state = (manager._parse_epoch_checkpoint(store.get(keys[".leader_epoch_checkpoint"])),
             store.get(keys[".snapshot"]))
    leader.recover(last.end_offset + 1, state)
    log.info("%s-%d: recovered %d remote segment(s) from the bucket (%d new), remote log "
             "[%d, %d]", leader.topic, leader.partition, len(copied), len(found),
             segs.start_offset, segs.end_offset)


def follow(rlm: RemoteLogManager, leader: Leader) -> None:
    """A read replica: the segments the origin uploaded since the last pass join the
    partition's remote log (in memory: this cluster writes nothing to the bucket nor to its
    metadata); those the origin deleted leave it; the local log, empty, follows the end."""
    segs = leader.remote if leader.remote is not None else md.PartitionSegments()
    prefix = manager.object_prefix(leader.topic, leader.partition, leader.topic_id)
    store = rlm.store_of(leader)
    listed = {parse_uuid(m.group(2)) for m in map(_OBJECT.match, (
        k[len(prefix):] for k in store.list(prefix))) if m}
    gone = [s for s in segs.copied() if s.segment_id not in listed]
    for seg in gone:
        segs.apply(*md.segment_update(leader, rlm.node_id, seg, md.DELETE_SEGMENT_STARTED, 0))
        segs.apply(*md.segment_update(leader, rlm.node_id, seg, md.DELETE_SEGMENT_FINISHED, 0))
    end = segs.end_offset
    fresh = [s for s in scan(store, prefix, known=set(segs.segments))
             if s.start_offset > end]
    for seg in fresh:
        segs.apply(*md.segment_metadata(leader, rlm.node_id, seg, 0))
        segs.apply(*md.segment_update(leader, rlm.node_id, seg, md.COPY_SEGMENT_FINISHED, 0))
    leader.remote = segs
    if fresh:
        leader.recover(segs.end_offset + 1, None)
        log.info("%s-%d: read replica now at [%s, %d] (%d new segment(s))", leader.topic,
                 leader.partition, segs.start_offset, segs.end_offset, len(fresh))
