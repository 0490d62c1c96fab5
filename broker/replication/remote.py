"""Tiered storage seen from the partitions (the remote log manager itself is ``tiered/``): the
`Leader` handed to it for each partition led here with remote.storage.enable, the reads below
the local log start it answers (`RemoteRead`, resolved off the event loop), and the log start
offset over remote and local data.
"""
from __future__ import annotations

import asyncio
import time

from josefk.broker.control.metadata import MetadataError
from josefk.storage import snapshots
from josefk.storage.errors import OffsetOutOfRange
from josefk.tiered import recovery
from josefk.tiered.manager import Leader, LocalSegment, NotLeading, RemoteLogManager
from josefk.tiered.metadata import uuid_text
from josefk.tiered.store import StoreError
from josefk.wire import errors
from josefk.wire.batch import read_header

RECOVERY, READ_REPLICA = "josefk.remote.recovery", "josefk.remote.readreplica"


class RemoteRead:
    """A consumer's read the local log cannot answer: filled in from the object store by
    `resolve` before the fetch is answered. ``local``: the partition, read from its local log's
    start when the remote log holds nothing from ``offset`` on (a compacted topic's last
    records there compacted away)."""

    __slots__ = ("topic", "partition", "offset", "max_bytes", "limit", "min_one", "local")

    def __init__(self, topic, partition, offset, max_bytes, limit, min_one, local=None):
        self.topic, self.partition, self.offset = topic, partition, offset
        self.max_bytes, self.limit, self.min_one = max_bytes, limit, min_one
        self.local = local

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
        cfg = part.config
        if not cfg.delete:  # compacted only: no remote segment expires
            return -1, -1, local
        return cfg.retention_ms, cfg.retention_bytes, local

    # the remote log comes from the bucket: a read replica, or a recovery not done yet
    from_bucket = bool(part.config.remote_read_replica) or (part.config.remote_recovery
                                                            and lg.log_end_offset == 0)
    loop = asyncio.get_running_loop() if from_bucket else None

    def recover(offset, state):
        asyncio.run_coroutine_threadsafe(_restart(part, offset, state), loop).result(60)

    return Leader(part.topic, part.index, part.topic_id, part.leader_epoch,
                  segments_to_copy=segments_to_copy,
                  upload_limit=lambda: part.last_stable_offset, aborted=aborted,
                  epochs=lambda: list(lg.epochs.entries), snapshot=snapshot,
                  set_copied=set_copied, retention=retention,
                  delete_below=lambda: part.remote_log_start,
                  recover=recover if from_bucket else None,
                  read_replica=bool(part.config.remote_read_replica),
                  bucket=part.config.remote_read_replica or None,
                  compacted=part.config.compact)


async def _restart(part, offset: int, state) -> None:
    """The leader's empty local log continues past the remote log read from the bucket (on
    the event loop, as every change of the log)."""
    lg = part.log
    if part.is_leader and lg.log_end_offset == lg.log_start_offset < offset:
        part.restart_at(offset, state)
        part.epoch_start_offset = offset
        part.fetches_waiting.wake()


def append_refused(part, rlm: RemoteLogManager | None) -> tuple[int, str] | None:
    """Why a produce to a topic whose remote log comes from a bucket is refused: a read
    replica is never written here; a recovered partition not before its log is rebuilt."""
    if part.config.remote_read_replica:
        return errors.POLICY_VIOLATION, (
            f"Topic {part.topic} is a read replica of bucket {part.config.remote_read_replica}: "
            "it cannot be written")
    if pending(part, rlm):
        return errors.NOT_LEADER_OR_FOLLOWER, (
            f"{part.topic}-{part.index} is being recovered from the bucket")
    return None


def check_creation_only(current: dict, new: dict) -> None:
    """A topic's remote log comes from the bucket or not from its creation on: AlterConfigs
    may not change josefk.remote.recovery nor josefk.remote.readreplica."""
    for name in (RECOVERY, READ_REPLICA):
        if current.get(name) != new.get(name):
            raise MetadataError(errors.INVALID_CONFIG,
                                f"{name} can only be set when the topic is created")


async def bucket_topic(replicas, tiered: bool, topics_by_id, name: str, configs: dict,
                       num_partitions: int, timeout_ms: int):
    """CreateTopics of a topic whose remote log is in the bucket (``josefk.remote.recovery``,
    ``josefk.remote.readreplica``): ``(its topic id there, its partition count, its configs)``,
    the count the bucket's unless asked for more. With ``tiered`` (the broker's
    remote.log.storage.system.enable), a request that comes while the broker starts waits for
    its remote log manager, as long as its timeout. Raises MetadataError."""
    def refuse(message, code=errors.INVALID_CONFIG):
        raise MetadataError(code, message)

    recover = configs.get(RECOVERY, "false").lower() == "true"
    bucket = configs.get(READ_REPLICA) or ""
    if not recover and not bucket:
        return None, num_partitions, configs
    deadline = time.monotonic() + timeout_ms / 1000
    while tiered and replicas.remote is None and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    rlm = replicas.remote
    if rlm is None:
        refuse("Tiered Storage functionality is disabled in the broker. Topic cannot be "
               f"created from remote log storage ({RECOVERY}, {READ_REPLICA}).")
    if recover and bucket:
        refuse(f"{RECOVERY} and {READ_REPLICA} cannot both be set.")
    if recover and configs.get("remote.storage.enable", "false").lower() != "true":
        refuse(f"{RECOVERY}=true needs remote.storage.enable=true.")
    store = rlm.store
    if bucket:
        try:
            store = rlm.bucket_store(bucket)
        except StoreError as e:
            refuse(f"Invalid value {bucket} for configuration {READ_REPLICA}: {e}")
        configs = {**configs, "remote.storage.enable": "true"}
    try:
        found = await asyncio.to_thread(recovery.topics_in, store, name)
    except StoreError as e:
        refuse(f"Cannot list the bucket: {e}", errors.KAFKA_STORAGE_ERROR)
    if not found:
        refuse(f"The bucket holds no remote log of topic {name}.")
    if len(found) > 1:
        refuse(f"The bucket holds {len(found)} topics named {name} (topic ids "
               f"{', '.join(sorted(map(uuid_text, found)))}): remove the stale ones.")
    (topic_id, indexes), = found.items()
    if topic_id in topics_by_id:
        refuse(f"Topic {topics_by_id[topic_id].name} has the bucket's topic id "
               f"{uuid_text(topic_id)} already.", errors.TOPIC_ALREADY_EXISTS)
    have = max(indexes) + 1
    if num_partitions == -1:
        num_partitions = have
    elif num_partitions < have:
        refuse(f"Topic {name} has {have} partitions in the bucket, not {num_partitions}.",
               errors.INVALID_PARTITIONS)
    return topic_id, num_partitions, configs


async def resolve(rlm: RemoteLogManager, results) -> None:
    """Read every `RemoteRead` of ``results`` ([[(fetch partition, ReadResult)]]) from the
    object store, on the remote log manager's reader threads; a read the remote log no longer
    holds (retention moved on meanwhile) answers OFFSET_OUT_OF_RANGE, a store failure
    KAFKA_STORAGE_ERROR, a leadership lost meanwhile NOT_LEADER_OR_FOLLOWER (retriable: the
    client looks again)."""

    pending = [res for out in results for _fp, res in out if type(res.records) is RemoteRead]

    def read(res):
        r = res.records
        try:
            data = rlm.read(r.topic, r.partition, r.offset, r.max_bytes, r.limit, r.min_one)
            if data == b"" and r.local is not None:
                data, aborted = _read_local(r)
                if res.aborted is not None:
                    res.aborted = aborted
            elif data and res.aborted is not None:  # read_committed: of the segment read
                res.aborted = rlm.aborted(r.topic, r.partition,
                                          max(r.offset, read_header(data, 0).base_offset))
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

    await asyncio.gather(*(asyncio.wrap_future(rlm.submit_read(read, res)) for res in pending))


def _read_local(r: RemoteRead) -> tuple[bytes, list]:
    """The local log's first batches and their aborted transactions (read_committed)."""
    part = r.local
    lg = part.log
    start = lg.log_start_offset
    try:
        data = bytes(lg.read(start, r.max_bytes, max_offset=r.limit, min_one=r.min_one).records)
    except OffsetOutOfRange:  # retention moved on meanwhile: the consumer asks again
        return b"", []
    return data, part.producers.aborted_between(start, r.limit) if data else []


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
