"""Tiered storage seen from the partitions (the remote log manager itself is ``tiered/``): the
`Leader` handed to it for each partition led here with remote.storage.enable, the reads below
the local log start it answers (`RemoteRead`, resolved off the event loop), and the log start
offset over remote and local data.
"""
from __future__ import annotations

import asyncio

from josefk.storage import snapshots
from josefk.tiered.manager import Leader, LocalSegment, NotLeading, RemoteLogManager
from josefk.tiered.store import StoreError
from josefk.wire import errors


class RemoteRead:
    """A consumer's read the local log cannot answer: filled in from the object store by
    `resolve` before the fetch is answered."""

    __slots__ = ("topic", "partition", "offset", "max_bytes", "limit", "min_one")

    def __init__(self, topic, partition, offset, max_bytes, limit, min_one):
        self.topic, self.partition, self.offset = topic, partition, offset
        self.max_bytes, self.limit, self.min_one = max_bytes, limit, min_one

    def __len__(self):
        return 0


def tiered(part) -> bool:
    """The partition keeps data in the remote log: remote.storage.enable on a broker with
    remote.log.storage.system.enable, whether its remote log manager started yet or not."""
    return part.config.remote_storage_enable and part.manager.remote_enabled


def log_start_offset(part, rlm: RemoteLogManager | None) -> int:
    """The partition's log start: its first remote offset (or the DeleteRecords point past
    it) when remote segments exist below the local log; on a follower rebuilt from the
    remote copy, the leader's log start it learned then; else the local log start."""
    local = part.log.log_start_offset
    if not tiered(part):
        return local
    segs = None if rlm is None else rlm.remote_of(part.topic, part.index)
    if segs is None:
        return local if part.remote_log_start < 0 else min(part.remote_log_start, local)
    start = segs.start_offset
    if start is None:
        return local
    return min(max(start, part.remote_log_start), local)


def pending(part, rlm: RemoteLogManager | None) -> bool:
    """Remote data may exist but this leader has not loaded its metadata yet (just elected,
    or the broker just started and its remote log manager not yet: the partitions serve
    before the object store answers): reads below the local log and the log start wait
    (REPLICA_NOT_AVAILABLE, retriable, as Kafka answers while its metadata manager
    initializes)."""
    return tiered(part) and (rlm is None or rlm.remote_of(part.topic, part.index) is None)


def leader_of(part) -> Leader:
    lg = part.log

    def segments_to_copy(after, limit):
        return [LocalSegment(*s) for s in lg.rolled_segments(after, limit)]

    def aborted(start, end):
        return [a for a in part.producers.aborted if a[1] < end and a[2] >= start]

    def snapshot(offset):
        path = lg.dir / f"{offset:020d}{snapshots.SUFFIX}"
        return path if path.exists() else None

    def set_copied(offset):
        lg.remote_copied_end = offset

    def retention():
        copied = -1 if lg.remote_copied_end is None else lg.remote_copied_end
        local = sum(size for base, _mtime, size in lg.segment_times() if base > copied)
        return part.config.retention_ms, part.config.retention_bytes, local

    return Leader(part.topic, part.index, part.topic_id, part.leader_epoch,
                  segments_to_copy=segments_to_copy,
                  upload_limit=lambda: part.last_stable_offset, aborted=aborted,
                  epochs=lambda: list(lg.epochs.entries), snapshot=snapshot,
                  set_copied=set_copied, retention=retention,
                  delete_below=lambda: part.remote_log_start)


async def resolve(rlm: RemoteLogManager, results) -> None:
    """Read every `RemoteRead` of ``results`` ([[(fetch partition, ReadResult)]]) from the
    object store, in worker threads; a read the remote log no longer holds (retention moved
    on meanwhile) answers OFFSET_OUT_OF_RANGE, a store failure KAFKA_STORAGE_ERROR, a
    leadership lost meanwhile NOT_LEADER_OR_FOLLOWER (retriable: the client looks again)."""

    pending = [res for out in results for _fp, res in out if type(res.records) is RemoteRead]

    def read(res):
        r = res.records
        try:
            data = rlm.read(r.topic, r.partition, r.offset, r.max_bytes, r.limit, r.min_one)
            if data and res.aborted is not None:  # read_committed
                res.aborted = rlm.aborted(r.topic, r.partition, r.offset)
        except StoreError:
            res.error, res.records = errors.KAFKA_STORAGE_ERROR, None
            return
        except NotLeading:
            res.error, res.records = errors.NOT_LEADER_OR_FOLLOWER, None
            return
        if data is None:
            res.error, res.records = errors.OFFSET_OUT_OF_RANGE, None
        else:
            res.records = data

    await asyncio.gather(*(asyncio.to_thread(read, res) for res in pending))


def offset_for_timestamp(part, rlm: RemoteLogManager, timestamp: int):
    """ListOffsets by timestamp from the remote log: ``(hit or None, error code)``."""
    try:
        return rlm.offset_for_timestamp(part.topic, part.index, timestamp,
                                        part.log_start_offset), errors.NONE
    except StoreError:
        return None, errors.KAFKA_STORAGE_ERROR
    except NotLeading:
        return None, errors.NOT_LEADER_OR_FOLLOWER


def has_remote(results) -> bool:
    return any(type(res.records) is RemoteRead for out in results for _fp, res in out)
