"""The leader's side of share groups (Kafka's SharePartitionManager): share sessions, ShareFetch
and ShareAcknowledge over the `SharePartition` of each (group, topic-partition) this broker
leads, and their state's persistence through the `Persister`.

A share-partition is made on the first fetch for it: its state is read from the share
coordinator (a start offset of -1 means none yet: share.auto.offset.reset picks it and it is
written back). Every change (acquisition, acknowledgement, release, expired lock) is written
before the request that made it is answered; writes of one share-partition go one at a time,
and the changes made while one is out go together in the next. A write that fails fences the
share-partition: it is dropped and read again on the next fetch, so the persisted state stays
the truth.

A fetch reads the log batch by batch (as Fetch does, file ranges where large), acquires whole
batches and answers with their bytes and the acquired ranges; it waits up to max_wait_ms for
records to arrive or come back. A session (group, member) opened on a connection that closes
releases its records at once (they count as delivered: a consumer that died with them could
have been killed by one of them); closing the session in order releases them uncounted, as
Kafka does.
"""
from __future__ import annotations

import asyncio
import logging
import os
import time
from typing import TYPE_CHECKING, Protocol

from josefk.broker import group_configs
from josefk.broker.replication.leaders import FencedLeaders
from josefk.broker.replication.purgatory import DelayedFetch
from josefk.broker.share.partition import SharePartition, StateError
from josefk.storage.log import FileRegion
from josefk.wire import errors
from josefk.wire.batch import HEADER_SIZE, iter_headers, read_header

if TYPE_CHECKING:
    from josefk.broker.share.persister import Persister

log = logging.getLogger("josefk.share")

INITIAL_EPOCH, FINAL_EPOCH = 0, -1
ZERO_COPY_MIN = 16 * 1024
READ_COMMITTED = "read_committed"


def next_epoch(epoch: int) -> int:
    return 1 if epoch >= 0x7FFFFFFF else epoch + 1


class ShareSession:
    __slots__ = ("group_id", "member_id", "epoch", "partitions", "connection")

    def __init__(self, group_id, member_id, connection):
        self.group_id, self.member_id = group_id, member_id
        self.epoch = 1
        self.partitions: set[tuple] = set()  # (topic id, partition)
        self.connection = connection


class SharedPartition:
    """A `SharePartition` with what it takes to serve it: the replica, the leader epoch it was
    made under, its initialization and its writes."""

    def __init__(self, manager, group_id, part, topic_id, sp: SharePartition):
        self.manager = manager
        self.group_id = group_id
        self.part = part
        self.topic_id = topic_id
        self.leader_epoch = part.leader_epoch
        self.sp = sp
        self.ready = asyncio.get_running_loop().create_future()
        self.error = errors.NONE  # set once fenced: the entry is dropped
        self._waiting: list[asyncio.Future] = []
        self._writer = None

    @property
    def key(self):
        return (self.group_id, self.part.topic, self.part.index)

    def persist(self) -> asyncio.Future:
        """A future resolving to the error code of the write that includes every change made
        so far."""
        fut = asyncio.get_running_loop().create_future()
        if self.error:
            fut.set_result(self.error)
            return fut
        self._waiting.append(fut)
        if self._writer is None:
            self._writer = asyncio.ensure_future(self._write_loop())
        return fut

    async def _write_loop(self) -> None:
        try:
            while self._waiting:
                waiters, self._waiting = self._waiting, []
                sp = self.sp
                code = await self.manager.persister.write(
                    self.group_id, self.topic_id, self.part.index, sp.state_epoch,
                    self.leader_epoch, sp.start, sp.state_batches(),
                    sp.delivery_complete_count())
                if code:
                    log.warning("share-partition %s-%s-%d: state write failed (%s): fenced",
                                *self.key, errors.name(code))
                    self.manager.fence(self, _fenced_error(code))
                for f in waiters:
                    if not f.done():
                        f.set_result(_fenced_error(code) if code else errors.NONE)
                if code:
                    for f in self._waiting:
                        f.set_result(self.error)
                    self._waiting = []
        finally:
            self._writer = None

    def close(self) -> None:
        for r in self.sp.runs:
            if r.lock is not None and r.lock.timer is not None:
                r.lock.timer.cancel()


def _fenced_error(code: int) -> int:
    """What a fetch or acknowledgement answers when the state could not be written."""
    if code in (errors.FENCED_LEADER_EPOCH, errors.FENCED_STATE_EPOCH):
        return errors.NOT_LEADER_OR_FOLLOWER
    return code


class TopicIds(Protocol):
    """The metadata's topics by id."""

    topics_by_id: dict


class GroupSettings(Protocol):
    """A group's effective configs (`group_configs.GroupConfigs`)."""

    def get(self, group_id: str, name: str) -> str: ...
    def int(self, group_id: str, name: str) -> int: ...


class SharePartitionManager:
    def __init__(self, replicas: FencedLeaders, metadata: TopicIds, configs: GroupSettings,
                 persister: Persister, clock, max_sessions: int):
        self.replicas = replicas
        self.metadata = metadata
        self.configs = configs
        self.persister = persister
        self.clock = clock
        self.partitions: dict[tuple, SharedPartition] = {}  # (group, topic, index)
        self.sessions: dict[tuple, ShareSession] = {}  # (group, member)
        self.max_sessions = max_sessions

    def _may_serve(self, topic: str, index: int) -> bool:
        """False while this broker's leadership of the partition is fenced (its ZooKeeper
        session in doubt): another leader's share-partition may deliver the same records."""
        return not self.replicas.fenced_leader(topic, index)

    # ------------------------------------------------------------------ share-partitions
    def lock_ms(self, group_id: str) -> int:
        return self.configs.int(group_id, "share.record.lock.duration.ms")

    def shared(self, group_id, topic, index, topic_id) -> SharedPartition | int:
        """The share-partition of ``group_id`` on this leader's ``topic``-``index``, made (and
        its initialization started: ``ready``) if needed; else the error to answer."""
        part = self.replicas.leader_partition(topic, index)
        if part is None:
            return self.replicas.not_hosted_error(topic, index)
        if not self._may_serve(topic, index):
            return errors.NOT_LEADER_OR_FOLLOWER
        key = (group_id, topic, index)
        entry = self.partitions.get(key)
        if entry is not None and (entry.part is not part or entry.leader_epoch != part.leader_epoch):
            self.fence(entry, errors.NOT_LEADER_OR_FOLLOWER)
            entry = None
        if entry is None:
            cfg = self.configs
            sp = SharePartition(self.clock, cfg.int(group_id, "share.delivery.count.limit"),
                                cfg.int(group_id, "share.record.lock.duration.ms"),
                                cfg.int(group_id, "share.partition.max.record.locks"))
            entry = self.partitions[key] = SharedPartition(self, group_id, part, topic_id, sp)
            sp.on_available = part.fetches_waiting.wake
            sp.on_change = lambda e=entry: e.persist()
            asyncio.ensure_future(self._initialize(entry))
        return entry

    async def _initialize(self, entry: SharedPartition) -> None:
        code, state_epoch, start, batches = await self.persister.read(
            entry.group_id, entry.topic_id, entry.part.index, entry.leader_epoch)
        lg = entry.part.log
        if not code:
            if start < 0:
                start = self._reset_offset(entry)
                entry.sp.load(start, state_epoch, [])
                code = await entry.persist()
            else:
                entry.sp.load(max(start, lg.log_start_offset), state_epoch, batches)
        if code:
            log.warning("share-partition %s-%s-%d cannot be initialized: %s", *entry.key,
                        errors.name(code))
            self.fence(entry, _fenced_error(code))
        if not entry.ready.done():
            entry.ready.set_result(None)

    def _reset_offset(self, entry: SharedPartition) -> int:
        """Where a share group starts on a partition it never read: share.auto.offset.reset."""
        how, duration_ms = group_configs.auto_offset_reset(
            self.configs.get(entry.group_id, group_configs.AUTO_OFFSET_RESET)) or ("latest", 0)
        lg = entry.part.log
        if how == "earliest":
            return lg.log_start_offset
        if how == "by_duration":
            found = lg.offset_for_timestamp(int(time.time() * 1000) - duration_ms,
                                            max_offset=lg.high_watermark)
            return found[0] if found is not None else lg.high_watermark
        return lg.high_watermark

    def fence(self, entry: SharedPartition, code: int) -> None:
        entry.error = code or errors.NOT_LEADER_OR_FOLLOWER
        if self.partitions.get(entry.key) is entry:
            del self.partitions[entry.key]
        entry.close()
        if not entry.ready.done():
            entry.ready.set_result(None)

    def partition_moved(self, topic: str, index: int) -> None:
        """This broker no longer leads ``topic``-``index``: its share-partitions go."""
        for entry in [e for k, e in self.partitions.items() if k[1:] == (topic, index)]:
            self.fence(entry, errors.NOT_LEADER_OR_FOLLOWER)

    def shutdown(self) -> None:
        for entry in list(self.partitions.values()):
            self.fence(entry, errors.NOT_LEADER_OR_FOLLOWER)
        self.sessions.clear()

    # ------------------------------------------------------------------ sessions
    def session_for(self, group_id, member_id, epoch, connection, partitions, forgotten,
                    has_acks: bool):
        """The share session of a ShareFetch (KIP-932's session epochs): (error, session)."""
        key = (group_id, member_id)
        session = self.sessions.get(key)
        if epoch == INITIAL_EPOCH:
            if has_acks:
                return errors.INVALID_REQUEST, None
            if session is None and len(self.sessions) >= self.max_sessions:
                return errors.SHARE_SESSION_LIMIT_REACHED, None
            session = self.sessions[key] = ShareSession(group_id, member_id, connection)
            session.partitions.update(partitions)
            return errors.NONE, session
        if session is None:
            return errors.SHARE_SESSION_NOT_FOUND, None
        if epoch == FINAL_EPOCH:
            return errors.NONE, session
        if epoch != session.epoch:
            return errors.INVALID_SHARE_SESSION_EPOCH, None
        session.partitions.update(partitions)
        session.partitions.difference_update(forgotten)
        session.epoch = next_epoch(session.epoch)
        session.connection = connection
        return errors.NONE, session

    def acknowledge_session(self, group_id, member_id, epoch, connection):
        """The session of a ShareAcknowledge: (error, session)."""
        if epoch == INITIAL_EPOCH:
            return errors.INVALID_SHARE_SESSION_EPOCH, None
        session = self.sessions.get((group_id, member_id))
        if session is None:
            return errors.SHARE_SESSION_NOT_FOUND, None
        if epoch != FINAL_EPOCH:
            if epoch != session.epoch:
                return errors.INVALID_SHARE_SESSION_EPOCH, None
            session.epoch = next_epoch(session.epoch)
            session.connection = connection
        return errors.NONE, session

    async def release_session(self, session: ShareSession, delivered: bool) -> None:
        """The member's session ends: what it holds becomes available again."""
        if self.sessions.get((session.group_id, session.member_id)) is session:
            del self.sessions[(session.group_id, session.member_id)]
        writes = []
        for entry in [e for (g, _t, _i), e in self.partitions.items() if g == session.group_id]:
            if entry.ready.done() and not entry.error \
                    and entry.sp.release_member(session.member_id, delivered):
                writes.append(entry.persist())
                entry.part.fetches_waiting.wake()
        if writes:
            await asyncio.gather(*writes)
        if not any(g == session.group_id for g, _m in self.sessions):
            # the group has no member here any more (Kafka's onGroupEmpty): its share-partitions
            # are read again when next used, so an admin's change of their state is seen
            for entry in [e for (g, _t, _i), e in self.partitions.items()
                          if g == session.group_id and not e._writer]:
                self.fence(entry, errors.NOT_LEADER_OR_FOLLOWER)

    def connection_closed(self, connection) -> None:
        for session in [s for s in self.sessions.values() if s.connection is connection]:
            log.info("share session of %s in group %s: its connection closed, releasing its "
                     "records", session.member_id, session.group_id)
            asyncio.ensure_future(self.release_session(session, delivered=True))

    # ------------------------------------------------------------------ acknowledging
    def acknowledge(self, group_id, member_id, acks: dict, renew: bool) -> dict:
        """Apply ``acks`` {(topic, index, topic id): [(first, last, types)]}: {same key: error,
        or the future of the write that persists them}. Not awaiting here lets a ShareFetch's
        acquisitions join the same write."""
        out = {}
        renew = renew and self.configs.get(group_id, "share.renew.acknowledge.enable") == "true"
        for (topic, index, topic_id), batches in acks.items():
            if not self._may_serve(topic, index):
                out[(topic, index, topic_id)] = errors.NOT_LEADER_OR_FOLLOWER
                continue
            entry = self.partitions.get((group_id, topic, index))
            if entry is None or not entry.ready.done() or entry.error:
                part = self.replicas.leader_partition(topic, index)
                out[(topic, index, topic_id)] = (errors.INVALID_RECORD_STATE if part is not None
                                                 else self.replicas.not_hosted_error(topic, index))
                continue
            try:
                if entry.sp.acknowledge(member_id, batches, renew):
                    entry.part.fetches_waiting.wake()
            except StateError as e:
                out[(topic, index, topic_id)] = e.code
                continue
            out[(topic, index, topic_id)] = entry.persist()
        return out

    # ------------------------------------------------------------------ fetching
    async def fetch(self, group_id, member_id, partitions, max_wait_ms, max_bytes, max_records,
                    strict: bool = False):
        """Acquire records for ``member_id`` from ``partitions`` {(topic id, index)} (its
        session's), waiting up to ``max_wait_ms`` for some; at most ``max_records`` if
        ``strict``, else whole batches up to the one that reaches it. Returns {(topic id,
        index): (error, records, acquired)}."""
        by_id = self.metadata.topics_by_id
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max_wait_ms / 1000
        loading = {}  # share-partitions being initialized: the others are answered meanwhile
        while True:
            out = {}
            got = 0
            remaining = max_bytes
            watched = []
            for topic_id, index in sorted(partitions, key=lambda k: (str(k[0]), k[1])):
                meta = by_id.get(topic_id)
                if meta is None:
                    out[(topic_id, index)] = (errors.UNKNOWN_TOPIC_ID, None, [])
                    continue
                # the entry waited for, even if fenced since: its error is the answer
                entry = loading.pop((topic_id, index), None) \
                    or self.shared(group_id, meta.name, index, topic_id)
                if not isinstance(entry, int) and not entry.ready.done():
                    loading[(topic_id, index)] = entry
                    continue
                if not isinstance(entry, int) and entry.error:
                    entry = entry.error
                if isinstance(entry, int):
                    out[(topic_id, index)] = (entry, None, [])
                    continue
                if got >= max_records or remaining <= 0:
                    watched.append(entry.part)
                    continue
                code, records, acquired, n = self._acquire(entry, member_id,
                                                           max_records - got, remaining, strict)
                if code:
                    out[(topic_id, index)] = (code, None, [])
                    continue
                watched.append(entry.part)
                if acquired:
                    got += n
                    remaining -= len(records)
                    out[(topic_id, index)] = (errors.NONE, records, acquired, entry.persist())
            if got or loop.time() >= deadline or not (watched or loading):
                break
            waiting = DelayedFetch(watched)  # new records, or a share-partition loaded
            for entry in loading.values():
                entry.ready.add_done_callback(waiting.wake)
            await waiting.wait(deadline - loop.time())
        result = {}
        for key, value in out.items():
            if len(value) == 4:
                code, records, acquired, write = value
                code = await write
                if code:  # not persisted: these records are not delivered
                    if type(records) is FileRegion:
                        records.close()
                    value = (code, None, [])
                else:
                    value = (errors.NONE, records, acquired)
            result[key] = value
        return result

    def _acquire(self, entry: SharedPartition, member_id, max_records, max_bytes, strict):
        """Read from the share-partition's next fetch offset and acquire what came back:
        (error, records, acquired ranges, count)."""
        part, sp = entry.part, entry.sp
        committed = self.configs.get(entry.group_id, "share.isolation.level") == READ_COMMITTED
        for _attempt in range(2):
            offset = sp.next_fetch_offset()
            res = part.read(offset, max_bytes, min_one=True, zero_copy_min=ZERO_COPY_MIN,
                            read_committed=committed)
            if res.error == errors.OFFSET_OUT_OF_RANGE and offset < res.log_start_offset:
                sp.move_start(res.log_start_offset)  # retention moved the log's start
                continue
            break
        if res.error:
            return res.error, None, [], 0
        records = res.records
        if not records:
            return errors.NONE, None, [], 0
        seen = []  # the headers read: only as far as the acquisition goes
        aborted = _Aborted(part) if committed else None

        def batches():
            for h, pos in _headers(records):
                seen.append((h, pos))
                yield (h.base_offset, h.last_offset,
                       not h.is_control and (aborted is None or not aborted(h)))

        acquired = sp.acquire(member_id, offset, batches(), max_records, strict)
        if not acquired:
            if type(records) is FileRegion:
                records.close()
            return errors.NONE, None, [], 0
        records = _cut(records, seen, acquired[-1][1])
        return errors.NONE, records, acquired, sum(b - a + 1 for a, b, _c in acquired)


def _headers(records):
    """(BatchHeader, position) of the whole batches in ``records`` (bytes or a file range), in
    order, read one header at a time as they are wanted."""
    if type(records) is not FileRegion:
        for h in iter_headers(records):
            yield h, h.pos
        return
    pos = 0
    while pos + HEADER_SIZE <= records.length:
        h = read_header(os.pread(records.fd, HEADER_SIZE, records.offset + pos))
        if h.size < HEADER_SIZE or pos + h.size > records.length:
            return
        yield h, pos
        pos += h.size


def _cut(records, headers, last_offset: int):
    """``records`` up to the end of the batch holding ``last_offset``."""
    end = 0
    for h, pos in headers:
        if h.base_offset > last_offset:
            break
        end = pos + h.size
    if type(records) is FileRegion:
        records.length = end
        return records
    return records[:end]


class _Aborted:
    """Whether a batch belongs to an aborted transaction (read_committed)."""

    def __init__(self, part):
        self.part = part
        self.txns = None

    def __call__(self, h) -> bool:
        if not h.is_transactional:
            return False
        if self.txns is None:
            self.txns = {}
            for pid, first, last in self.part.producers.aborted:
                if last >= h.base_offset:
                    self.txns.setdefault(pid, []).append((first, last))
        return any(first <= h.base_offset <= last for first, last in self.txns.get(h.producer_id, ()))
