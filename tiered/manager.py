"""The remote log manager (Kafka's RemoteLogManager): for every partition this broker leads
with ``remote.storage.enable``, a task on the manager's threads copies each rolled segment
above the highest copied offset to the object store (with its indexes, producer-state
snapshot, leader-epoch checkpoint and transaction index), records it in
``__remote_log_metadata`` and deletes remote segments past the topic's total retention or below
a DeleteRecords; reads below the local log start are served from the store through a bounded
cache of fixed-size chunks.

Nothing here runs on the event loop: the broker calls `read` from a worker thread, and the
copies run on the manager's own thread. The produce path does not know this module.
"""
from __future__ import annotations

import logging
import struct
import threading
import time
import uuid
from bisect import bisect_right
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Protocol

from josefk.wire.batch import HEADER_SIZE, read_header
from josefk.wire.records import iter_records

from . import compacted, metadata as md, recovery
from .store import ObjectStore, StoreError

log = logging.getLogger("josefk.tiered")

_IDX = struct.Struct(">ii")
_TIME = struct.Struct(">qi")  # .timeindex entry: timestamp, relative offset
_TXN = struct.Struct(">hqqqq")  # Kafka's .txnindex entry: version, pid, first, last, LSO


class NotLeading(Exception):
    """A remote read of a partition this manager does not lead (any more), or not loaded yet."""


class MetadataLog(Protocol):
    """Where the metadata events go and come back from: ``__remote_log_metadata``."""

    def append(self, topic_id: uuid.UUID, partition: int, value: bytes) -> None:
        """Write one event to the user partition's metadata partition; returns once it is
        acknowledged by every in-sync replica. Raises on failure."""

    def read(self, topic_id: uuid.UUID, partition: int) -> Iterable[bytes]:
        """Every event written so far to the user partition's metadata partition (events of
        other partitions included: the caller filters)."""

    def metadata_partition(self, topic_id: uuid.UUID, partition: int) -> int:
        """Which metadata partition holds the user partition's events."""


@dataclass
class LocalSegment:
    """A rolled segment as the copy needs it: its files and offsets."""
    base_offset: int
    next_offset: int
    log_path: Path
    index_path: Path
    timeindex_path: Path
    size: int
    max_timestamp: int


class Leader:
    """One partition led here with remote storage on: what the broker hands the manager.

    ``segments_to_copy(after, limit)`` lists the rolled segments holding offsets past
    ``after`` and wholly below ``limit``; ``upload_limit()`` is the last stable offset;
    ``aborted(start, end)`` the aborted transactions [(pid, first, last)] in a range;
    ``epochs()`` the leader-epoch entries [(epoch, start offset)]; ``snapshot(offset)`` the
    producer-state snapshot file at an offset, if kept; ``set_copied(offset)`` tells the local
    log what local retention may delete; ``retention()`` gives (retention.ms, retention.bytes,
    local bytes above the remote end); ``delete_below()`` the log start DeleteRecords asked.
    ``recover(offset, state)``, given for a partition whose remote log comes from the bucket
    (topic recovery, a read replica: ``read_replica``, of ``bucket`` when not the broker's
    own), restarts its empty local log at
    ``offset`` with ``state`` (leader epochs, producer-state snapshot) or none. A
    ``compacted`` partition's segments the cleaner rewrote after their copy are copied again
    (`compacted.recopy`)."""

    def __init__(self, topic: str, partition: int, topic_id: uuid.UUID, leader_epoch: int, *,
                 segments_to_copy, upload_limit, aborted, epochs, snapshot, set_copied,
                 retention, delete_below, recover=None, read_replica=False, compacted=False,
                 bucket=None):
        self.topic, self.partition, self.topic_id = topic, partition, topic_id
        self.leader_epoch = leader_epoch
        self.segments_to_copy = segments_to_copy
        self.upload_limit = upload_limit
        self.aborted = aborted
        self.epochs = epochs
        self.snapshot = snapshot
        self.set_copied = set_copied
        self.retention = retention
        self.delete_below = delete_below
        self.recover = recover
        self.read_replica = read_replica
        self.bucket = bucket  # a read replica's bucket when not the broker's own
        self.compacted = compacted  # cleanup.policy has compact: the cleaner rewrites segments
        self.remote: md.PartitionSegments | None = None  # loaded by the first task
        self.stopped = False
        # Kafka's RemoteCopyLagBytes / Segments: rolled and not copied yet; RemoteDeleteLag*:
        # remote segments past retention not deleted yet
        self.copy_lag_bytes = self.copy_lag_segments = 0
        self.delete_lag_bytes = self.delete_lag_segments = 0


def object_prefix(topic: str, partition: int, topic_id: uuid.UUID) -> str:
    return f"{topic}-{partition}-{md.uuid_text(topic_id)}/"


def object_keys(prefix: str, seg: md.RemoteSegment) -> dict[str, str]:
    """The objects of a remote segment, by Kafka's file suffix."""
    stem = f"{prefix}{seg.start_offset:020d}-{md.uuid_text(seg.segment_id)}"
    return {s: stem + s for s in (".log", ".index", ".timeindex", ".snapshot",
                                  ".leader_epoch_checkpoint", ".txnindex")}


class ChunkCache:
    """An LRU of ``chunk_bytes``-aligned ranges of remote segment files, at most
    ``max_bytes`` in all: a consumer reading from offset 0 makes one request per chunk."""

    def __init__(self, store: ObjectStore, chunk_bytes: int, max_bytes: int):
        self.store = store
        self.chunk = chunk_bytes
        self.max_bytes = max_bytes
        self._chunks: OrderedDict[tuple[str, str, int], bytes] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()
        self.requests = 0  # object-store GETs made, for the metrics and the benchmark

    def read(self, key: str, start: int, end: int, store: ObjectStore | None = None) -> bytes:
        """Bytes ``[start, end)`` of object ``key`` (``end`` at most its size) of ``store``
        (the cache's own by default: a read replica's bucket shares the bound)."""
        store = store or self.store
        parts = []
        first = start // self.chunk
        for i in range(first, (end - 1) // self.chunk + 1):
            data = self._chunk(store, key, i)
            lo = start - i * self.chunk if i == first else 0
            parts.append(data[lo:end - i * self.chunk])
        return b"".join(parts)

    def _chunk(self, store: ObjectStore, key: str, i: int) -> bytes:
        at = (store.bucket, key, i)
        with self._lock:
            data = self._chunks.get(at)
            if data is not None:
                self._chunks.move_to_end(at)
                return data
        data = store.get(key, i * self.chunk, (i + 1) * self.chunk)
        with self._lock:
            self.requests += 1
            if at not in self._chunks:
                self._chunks[at] = data
                self._size += len(data)
            while self._size > self.max_bytes and self._chunks:
                _k, old = self._chunks.popitem(last=False)
                self._size -= len(old)
        return data

    def forget(self, key: str) -> None:
        with self._lock:
            for k in [k for k in self._chunks if k[1] == key]:
                self._size -= len(self._chunks.pop(k))


class TopicStats:
    """Kafka's remote-storage meters of one topic (BrokerTopicMetrics' Remote*PerSec), as
    totals; the manager's threads add to them."""

    __slots__ = ("copy_bytes", "copy_requests", "copy_errors", "fetch_bytes", "fetch_requests",
                 "fetch_errors", "delete_requests")

    def __init__(self):
        for name in self.__slots__:
            setattr(self, name, 0)


class RemoteLogManager:
    def __init__(self, store: ObjectStore, metadata_log: MetadataLog, node_id: int, *,
                 interval_ms: int = 30000, cache_bytes: int = 64 << 20,
                 chunk_bytes: int = 1 << 20, copy_bytes_per_second: float = float("inf"),
                 reader_threads: int = 10, now_ms: Callable[[], int] | None = None,
                 open_bucket: Callable[[str], ObjectStore] | None = None):
        self.store = store
        self.open_bucket = open_bucket  # another bucket of the same endpoint (read replicas)
        self._stores: dict[str, ObjectStore] = {}
        self.metadata_log = metadata_log
        self.node_id = node_id
        self.interval_ms = interval_ms
        self.cache = ChunkCache(store, chunk_bytes, cache_bytes)
        self.now_ms = now_ms or (lambda: int(time.time() * 1000))
        self.leaders: dict[tuple[str, int], Leader] = {}
        self._deletions: list[tuple[str, int, uuid.UUID, int]] = []
        self._indexes: OrderedDict[tuple[str, uuid.UUID], object] = OrderedDict()
        self._lock = threading.Lock()
        self._wake = threading.Event()  # a new leader to serve, or the close
        self._closing = threading.Event()
        self._thread: threading.Thread | None = None
        self._closed = False
        self.stats: dict[str, TopicStats] = {}
        self.copy_bytes_per_second = copy_bytes_per_second
        self._copy_allowed_at = 0.0  # monotonic time the next copy may start (the quota)
        # Kafka's remote log reader pool (remote.log.reader.threads) and what its
        # RemoteLogReaderTaskQueueSize / AvgIdlePercent and the task thread's
        # RemoteLogManagerTasksAvgIdlePercent are computed from: seconds busy, in all
        self.reader_threads = reader_threads
        self.readers = ThreadPoolExecutor(reader_threads, "josefk-remote-reader")
        self.reads_waiting = 0
        self.read_busy_s = 0.0
        self.task_busy_s = 0.0

    # -- leadership -------------------------------------------------------------------------------
    def lead(self, leader: Leader) -> None:
        """Lead a partition (again, at a new leader epoch: what this broker loaded and wrote
        meanwhile stays current)."""
        with self._lock:
            old = self.leaders.get((leader.topic, leader.partition))
            if old is not None:
                old.stopped = True
                leader.remote = old.remote
            self.leaders[(leader.topic, leader.partition)] = leader
        self._wake.set()

    def resign(self, topic: str, partition: int) -> None:
        with self._lock:
            old = self.leaders.pop((topic, partition), None)
        if old is not None:
            old.stopped = True

    def delete_partition(self, topic: str, partition: int, topic_id: uuid.UUID,
                         leader_epoch: int) -> None:
        """The partition is deleted: its remote log goes at the next pass (Kafka's
        RemotePartitionDeleteMetadataRecord, DELETE_PARTITION_STARTED then FINISHED)."""
        self.resign(topic, partition)
        with self._lock:
            self._deletions.append((topic, partition, topic_id, leader_epoch))
        self._wake.set()

    def bucket_store(self, bucket: str) -> ObjectStore:
        """The store of ``bucket``: this broker's own, or another of its endpoint (made once,
        then kept). Raises StoreError when the engine has no other buckets."""
        if bucket == self.store.bucket:
            return self.store
        with self._lock:
            store = self._stores.get(bucket)
            if store is None:
                if self.open_bucket is None:
                    raise StoreError(f"this broker's remote storage has no bucket {bucket}")
                store = self._stores[bucket] = self.open_bucket(bucket)
            return store

    def store_of(self, leader: Leader) -> ObjectStore:
        return self.store if leader.bucket is None else self.bucket_store(leader.bucket)

    def remote_of(self, topic: str, partition: int) -> md.PartitionSegments | None:
        """The partition's remote segments, once this broker leads it and loaded them."""
        leader = self.leaders.get((topic, partition))
        return None if leader is None else leader.remote

    # -- the task thread ------------------------------------------------------------------------------
    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="josefk-remote-log",
                                        daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._closed = True
        self._closing.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(30)
        self.readers.shutdown(wait=False, cancel_futures=True)

    def submit_read(self, fn, *args):
        """Run ``fn(*args)`` on the reader pool (a concurrent future), counted in its queue
        until a reader takes it and in its busy time while it runs."""
        with self._lock:
            self.reads_waiting += 1

        def run():
            started = time.monotonic()
            with self._lock:
                self.reads_waiting -= 1
            try:
                return fn(*args)
            finally:
                with self._lock:
                    self.read_busy_s += time.monotonic() - started

        return self.readers.submit(run)

    def _run(self) -> None:
        while not self._closed:
            started = time.monotonic()
            self.run_once()
            self.task_busy_s += time.monotonic() - started
            self._wake.wait(self.interval_ms / 1000)
            self._wake.clear()

    def topic_stats(self, topic: str) -> TopicStats:
        st = self.stats.get(topic)
        if st is None:
            st = self.stats.setdefault(topic, TopicStats())
        return st

    def run_once(self) -> None:
        """One pass: the deleted partitions' remote logs, then for each partition led here
        load, copy, expire (each partition's failure is logged and retried at the next
        pass)."""
        with self._lock:
            deletions, self._deletions = self._deletions, []
        for item in deletions:
            try:
                self._delete_partition(*item)
            except (OSError, RuntimeError) as e:
                log.warning("deleting the remote log of %s-%d: %s (retried)", item[0], item[1],
                            e)
                with self._lock:
                    self._deletions.append(item)
        events: dict[int, list[bytes]] = {}  # metadata partitions read in this pass
        for leader in list(self.leaders.values()):
            if self._closed:
                return
            try:
                if leader.read_replica:
                    recovery.follow(self, leader)
                    continue
                self._load(leader, events)
                self._copy(leader)
                if leader.compacted:
                    compacted.recopy(self, leader)
                self._expire(leader)
            except (OSError, RuntimeError) as e:
                log.warning("remote log task of %s-%d: %s (retried)", leader.topic,
                            leader.partition, e)
                self.topic_stats(leader.topic).copy_errors += 1
            except Exception:
                log.exception("remote log task of %s-%d failed", leader.topic,
                              leader.partition)

    def _load(self, leader: Leader, events: dict[int, list[bytes]] | None = None) -> None:
        """Fold the partition's metadata events into its remote segments (a metadata
        partition is read once per pass however many partitions it serves)."""
        if leader.remote is not None:
            return
        mlog = self.metadata_log
        key = mlog.metadata_partition(leader.topic_id, leader.partition)
        values = None if events is None else events.get(key)
        if values is None:
            values = list(mlog.read(leader.topic_id, leader.partition))
            if events is not None:
                events[key] = values
        segs = md.fold(values, leader.topic_id, leader.partition)
        # uploads and deletions a crash interrupted: their objects go, their events end
        for seg in segs.unfinished():
            self._delete_segment(leader, segs, seg)
        if leader.recover is not None:
            recovery.recover(self, leader, segs)
        leader.remote = segs
        leader.set_copied(segs.end_offset)
        log.info("%s-%d: %d remote segment(s), remote log [%s, %d]", leader.topic,
                 leader.partition, len(segs.copied()), segs.start_offset, segs.end_offset)

    def _delete_partition(self, topic: str, partition: int, topic_id: uuid.UUID,
                          leader_epoch: int) -> None:
        leader = Leader(topic, partition, topic_id, leader_epoch, segments_to_copy=None,
                        upload_limit=None, aborted=None, epochs=None, snapshot=None,
                        set_copied=lambda offset: None, retention=None, delete_below=None)
        self._publish_partition(leader, md.DELETE_PARTITION_STARTED)
        self._load(leader)
        for seg in leader.remote.copied():
            self._delete_segment(leader, leader.remote, seg)
        prefix = object_prefix(topic, partition, topic_id)
        self.store.delete(self.store.list(prefix))  # anything no event names
        self._publish_partition(leader, md.DELETE_PARTITION_FINISHED)
        log.info("%s-%d: remote log deleted", topic, partition)

    def _publish_partition(self, leader: Leader, state: int) -> None:
        record, msg = md.partition_delete(leader, self.node_id, state, self.now_ms())
        self.metadata_log.append(leader.topic_id, leader.partition, md.serialize(record, msg))

    # -- copy ------------------------------------------------------------------------------------------
    def _copy(self, leader: Leader) -> None:
        """Copy the rolled segments not yet remote, oldest first."""
        segs = leader.remote
        pending = leader.segments_to_copy(segs.end_offset, leader.upload_limit())
        leader.copy_lag_bytes = sum(s.size for s in pending)
        leader.copy_lag_segments = len(pending)
        for local in pending:
            self._wait_for_quota()
            if leader.stopped or self._closed:
                break
            self._copy_segment(leader, local)
            leader.copy_lag_bytes -= local.size
            leader.copy_lag_segments -= 1
            self._copy_allowed_at = max(self._copy_allowed_at, time.monotonic()) \
                + local.size / self.copy_bytes_per_second

    def _wait_for_quota(self) -> None:
        """remote.log.manager.copy.max.bytes.per.second: the copies, one after the other,
        average at most that rate (a close ends the wait)."""
        delay = self._copy_allowed_at - time.monotonic()
        if delay > 0:
            self._closing.wait(delay)

    def _copy_segment(self, leader: Leader, local: LocalSegment) -> None:
        segs = leader.remote
        sid = uuid.uuid4()
        history = [(e, o) for e, o in leader.epochs() if o < local.next_offset]
        epochs = segment_epochs(history, local.base_offset, local.next_offset)
        aborted = leader.aborted(local.base_offset, local.next_offset)
        seg = md.RemoteSegment(sid, local.base_offset, local.next_offset - 1,
                               local.max_timestamp, local.size, epochs, md.COPY_SEGMENT_STARTED,
                               not aborted)
        self._publish(leader, segs, md.segment_metadata(leader, self.node_id, seg,
                                                        self.now_ms()))
        try:
            self._upload(leader, local, seg, history, aborted)
        except OSError:
            # half in the bucket: its objects go and its events end (a crash leaves this to
            # the next leader's load), then the copy is tried again at the next pass
            try:
                self._delete_segment(leader, segs, seg)
            except (OSError, RuntimeError) as e:
                log.warning("cannot clean up the failed copy of %s-%d at %d: %s", leader.topic,
                            leader.partition, seg.start_offset, e)
            raise
        if leader.compacted and not compacted.unchanged(leader, local):
            self._delete_segment(leader, segs, seg)  # the cleaner swapped it mid-upload
            return
        self._publish(leader, segs, md.segment_update(leader, self.node_id, seg,
                                                      md.COPY_SEGMENT_FINISHED, self.now_ms()))
        st = self.topic_stats(leader.topic)
        st.copy_bytes += local.size
        st.copy_requests += 1
        leader.set_copied(seg.end_offset)
        log.info("%s-%d: copied segment [%d, %d] (%d bytes) as %s", leader.topic,
                 leader.partition, seg.start_offset, seg.end_offset, seg.size, sid)

    def _upload(self, leader: Leader, local: LocalSegment, seg: md.RemoteSegment, history,
                aborted) -> None:
        """The segment's six objects: its leader-epoch checkpoint is the partition's epochs up
        to the segment's end, as Kafka's (what a follower rebuilding its state from the
        segment needs); the transaction index's last stable offsets are the markers'
        offsets."""
        keys = object_keys(object_prefix(leader.topic, leader.partition, leader.topic_id), seg)
        self.store.put(keys[".log"], local.log_path)
        self.store.put(keys[".index"], local.index_path)
        self.store.put(keys[".timeindex"], local.timeindex_path)
        snapshot = leader.snapshot(local.next_offset)
        self.store.put(keys[".snapshot"], snapshot if snapshot is not None else b"")
        self.store.put(keys[".leader_epoch_checkpoint"], _epoch_checkpoint(history))
        self.store.put(keys[".txnindex"], b"".join(
            _TXN.pack(0, pid, first, last, last) for pid, first, last in aborted))

    def _publish(self, leader: Leader, segs: md.PartitionSegments, event) -> None:
        record, msg = event
        self.metadata_log.append(leader.topic_id, leader.partition, md.serialize(record, msg))
        segs.apply(record, msg)

    # -- retention -----------------------------------------------------------------------------------
    def _expire(self, leader: Leader) -> None:
        """Delete the remote segments past retention.ms, beyond retention.bytes over the
        whole log (remote and local), or wholly below the log start DeleteRecords set."""
        segs = leader.remote
        copied = segs.copied()
        if not copied:
            return
        retention_ms, retention_bytes, local_bytes = leader.retention()
        now = self.now_ms()
        excess = (segs.size + local_bytes - retention_bytes) if retention_bytes >= 0 else -1
        below = leader.delete_below()
        doomed = []
        for seg in copied:
            if seg.end_offset < below:
                pass
            elif retention_ms >= 0 and now - seg.max_timestamp_ms > retention_ms:
                pass
            elif excess >= seg.size:
                pass
            else:
                break
            doomed.append(seg)
            excess -= seg.size
        leader.delete_lag_bytes = sum(seg.size for seg in doomed)
        leader.delete_lag_segments = len(doomed)
        for seg in doomed:
            if leader.stopped:
                return
            self._delete_segment(leader, segs, seg)
            leader.delete_lag_bytes -= seg.size
            leader.delete_lag_segments -= 1

    def _delete_segment(self, leader: Leader, segs, seg: md.RemoteSegment) -> None:
        if seg.state != md.DELETE_SEGMENT_STARTED:
            self._publish(leader, segs, md.segment_update(
                leader, self.node_id, seg, md.DELETE_SEGMENT_STARTED, self.now_ms()))
        keys = list(object_keys(object_prefix(leader.topic, leader.partition, leader.topic_id),
                                seg).values())
        self.store.delete(keys)
        self.cache.forget(keys[0])
        with self._lock:
            self._indexes.pop(("index", seg.segment_id), None)
            self._indexes.pop(("txn", seg.segment_id), None)
            self._indexes.pop(("time", seg.segment_id), None)
        self._publish(leader, segs, md.segment_update(
            leader, self.node_id, seg, md.DELETE_SEGMENT_FINISHED, self.now_ms()))
        self.topic_stats(leader.topic).delete_requests += 1
        log.info("%s-%d: deleted remote segment [%d, %d]", leader.topic, leader.partition,
                 seg.start_offset, seg.end_offset)

    # -- reads ------------------------------------------------------------------------------------------
    def read(self, topic: str, partition: int, offset: int, max_bytes: int, limit: int,
             min_one: bool = True) -> bytes | None:
        """The batches from the one holding ``offset``, out of the remote segment that holds
        it (or the next one after a hole): at most ``max_bytes`` but, with ``min_one``, the
        first batch whole; none at or past ``limit``. None when no remote segment holds it
        (retention moved on); NotLeading when this broker does not serve the partition's
        remote log."""
        st = self.topic_stats(topic)
        st.fetch_requests += 1
        try:
            data = self._read(topic, partition, offset, max_bytes, limit, min_one)
        except StoreError:
            st.fetch_errors += 1
            raise
        if data:
            st.fetch_bytes += len(data)
        return data

    def _read(self, topic, partition, offset, max_bytes, limit, min_one):
        leader = self.leaders.get((topic, partition))
        if leader is None or leader.remote is None:
            raise NotLeading(f"{topic}-{partition}")
        seg = leader.remote.segment_for(offset)
        if seg is None:
            return None
        while True:  # a segment with nothing from ``offset`` on (compacted away): the next
            data = self._read_segment(leader, seg, offset, max_bytes, limit, min_one)
            if data or seg.end_offset + 1 >= limit:
                return data
            seg = leader.remote.segment_for(seg.end_offset + 1)
            if seg is None:
                return b""

    def _read_segment(self, leader, seg, offset, max_bytes, limit, min_one) -> bytes:
        keys = object_keys(object_prefix(leader.topic, leader.partition, leader.topic_id), seg)
        key, size, cache = keys[".log"], seg.size, self.cache
        store = self.store_of(leader)
        at = self._position(store, keys[".index"], seg, offset)
        while True:  # to the batch holding ``offset`` (the index points at or before it)
            if at + HEADER_SIZE > size:
                return b""
            h = read_header(cache.read(key, at, at + HEADER_SIZE, store), 0)
            if h.last_offset >= offset:
                break
            at += h.size
        first = at
        while at + HEADER_SIZE <= size:
            h = read_header(cache.read(key, at, at + HEADER_SIZE, store), 0)
            taken = at - first
            if h.base_offset >= limit or (taken + h.size > max_bytes
                                          and (taken > 0 or not min_one)):
                break
            at += h.size
        return cache.read(key, first, at, store) if at > first else b""

    def aborted(self, topic: str, partition: int, offset: int) -> list[tuple[int, int]]:
        """``[(producer id, first offset)]`` of the aborted transactions that a read_committed
        read from ``offset`` out of the remote segment holding it must drop: from that
        segment's ``.txnindex`` (which names every aborted transaction with records in the
        segment, wherever its marker is), those not over before ``offset``."""
        leader = self.leaders.get((topic, partition))
        if leader is None or leader.remote is None:
            raise NotLeading(f"{topic}-{partition}")
        seg = leader.remote.segment_for(offset)
        if seg is None or seg.txn_index_empty:
            return []
        def parse(raw):
            return [(pid, first, last) for _v, pid, first, last, _lso
                    in _TXN.iter_unpack(raw[:len(raw) - len(raw) % _TXN.size])]

        key = object_keys(object_prefix(topic, partition, leader.topic_id), seg)[".txnindex"]
        store = self.store_of(leader)
        entries = self._cached(("txn", seg.segment_id), lambda: parse(store.get(key)))
        return [(pid, first) for pid, first, last in entries if last >= offset]

    def follower_state(self, topic: str, partition: int, topic_id: uuid.UUID,
                       offset: int) -> tuple[list[tuple[int, int]], bytes] | None:
        """What a follower restarting its log at ``offset`` (the leader's local log start)
        needs of the state below it, from the remote segment that ends just before (KIP-405):
        ``(leader epochs [(epoch, start offset)], producer-state snapshot)``, or None when no
        copied segment ends there. Reads the metadata and the bucket, never writes them."""
        segs = md.fold(self.metadata_log.read(topic_id, partition), topic_id, partition)
        seg = next((s for s in reversed(segs.copied()) if s.end_offset == offset - 1), None)
        if seg is None:
            return None
        keys = object_keys(object_prefix(topic, partition, topic_id), seg)
        epochs = _parse_epoch_checkpoint(self.store.get(keys[".leader_epoch_checkpoint"]))
        return epochs, self.store.get(keys[".snapshot"])

    def has_timestamp(self, topic: str, partition: int, timestamp: int,
                      start: int) -> bool:
        """Whether a remote segment (from the log start ``start``) holds a record at or past
        ``timestamp``: ListOffsets by timestamp then answers from the remote log."""
        segs = self.remote_of(topic, partition)
        return segs is not None and any(
            s.max_timestamp_ms >= timestamp and s.end_offset >= start for s in segs.copied())

    def max_timestamp(self, topic: str, partition: int, start: int) -> int | None:
        """The largest record timestamp of the remote segments holding offsets at or past
        the log start ``start`` (ListOffsets MAX_TIMESTAMP), or None."""
        segs = self.remote_of(topic, partition)
        if segs is None:
            return None
        return max((s.max_timestamp_ms for s in segs.copied()
                    if s.end_offset >= start and s.max_timestamp_ms >= 0), default=None)

    def offset_for_timestamp(self, topic: str, partition: int, timestamp: int,
                             start: int) -> tuple[int, int] | None:
        """``(offset, timestamp)`` of the first remote record at or past ``start`` whose
        timestamp is at least ``timestamp`` (the remote time index finds where to look), or
        None."""
        leader = self.leaders.get((topic, partition))
        if leader is None or leader.remote is None:
            raise NotLeading(f"{topic}-{partition}")
        cache, store = self.cache, self.store_of(leader)
        for seg in leader.remote.copied():
            if seg.max_timestamp_ms < timestamp or seg.end_offset < start:
                continue
            keys = object_keys(object_prefix(topic, partition, leader.topic_id), seg)
            times = self._cached(("time", seg.segment_id), lambda: _time_entries(
                store.get(keys[".timeindex"]), seg.start_offset))
            j = bisect_right([ts for ts, _o in times], timestamp) - 1
            at = self._position(store, keys[".index"], seg,
                                max(times[j][1] if j >= 0 else 0, start))
            while at + HEADER_SIZE <= seg.size:
                h = read_header(cache.read(keys[".log"], at, at + HEADER_SIZE, store), 0)
                if h.max_timestamp >= timestamp and h.last_offset >= start:
                    data = cache.read(keys[".log"], at, at + h.size, store)
                    for r in iter_records(data, read_header(data, 0)):
                        if r.offset >= start and r.timestamp >= timestamp:
                            return r.offset, r.timestamp
                at += h.size
        return None

    def _cached(self, key, load):
        """A remote segment's parsed index, kept for the next reads (the last 1024)."""
        with self._lock:
            value = self._indexes.get(key)
            if value is not None:
                self._indexes.move_to_end(key)
                return value
        value = load()
        with self._lock:
            self._indexes[key] = value
            while len(self._indexes) > 1024:
                self._indexes.popitem(last=False)
        return value

    def _position(self, store: ObjectStore, index_key: str, seg: md.RemoteSegment,
                  offset: int) -> int:
        """A position in the segment at or before the batch holding ``offset``, from its
        remote offset index (each entry: the last offset of the batch at a position)."""
        def parse(raw):
            offs, poss = [], []
            for rel, p in _IDX.iter_unpack(raw[:len(raw) - len(raw) % 8]):
                offs.append(seg.start_offset + rel)
                poss.append(p)
            return offs, poss

        entries = self._cached(("index", seg.segment_id),
                               lambda: parse(store.get(index_key)))
        offs, poss = entries
        i = bisect_right(offs, offset - 1) - 1  # the last batch wholly below ``offset``
        return poss[i] if i >= 0 else 0


def _parse_epoch_checkpoint(raw: bytes) -> list[tuple[int, int]]:
    lines = raw.decode().split("\n")
    try:
        return [(int(e), int(o)) for e, o in (line.split() for line in lines[2:2 + int(lines[1])])]
    except (IndexError, ValueError):
        raise StoreError("a remote leader-epoch checkpoint that cannot be read") from None


def _time_entries(raw: bytes, base: int) -> list[tuple[int, int]]:
    """A time index's entries as (timestamp, offset)."""
    return [(ts, base + rel) for ts, rel in _TIME.iter_unpack(raw[:len(raw) - len(raw) % 12])]


def _epochs_in(entries, start: int, end: int):
    """The leader epochs of entries [(epoch, start offset)] that cover [start, end)."""
    out = []
    for k, (epoch, offset) in enumerate(entries):
        nxt = entries[k + 1][1] if k + 1 < len(entries) else None
        if offset < end and (nxt is None or nxt > start):
            out.append((epoch, offset))
    return out


def segment_epochs(history, start: int, end: int) -> list[tuple[int, int]]:
    """A segment's leader epochs [(epoch, first offset in the segment)] for [start, end) out of
    the partition's ``history``, as its metadata record names them."""
    return [(e, max(o, start)) for e, o in _epochs_in(history, start, end)]


def _epoch_checkpoint(epochs) -> bytes:
    return ("0\n%d\n" % len(epochs) + "".join(f"{e} {o}\n" for e, o in epochs)).encode()
