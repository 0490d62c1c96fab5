"""The share coordinator (KIP-932): the persisted state of every share-partition, kept on the
compacted-by-pruning ``__share_group_state`` topic, as Kafka's ShareCoordinator keeps it.

A share-partition (group, topic id, partition) maps to one ``__share_group_state`` partition
(Kafka's ``abs("group:topicId:partition".hashCode()) % share.coordinator.state.topic.num.
partitions``); the broker leading that partition answers for it. What it keeps per
share-partition: the state epoch (bumped when an admin resets the start offset), the leader
epoch of the partition leader that last read or wrote it (an older leader is fenced), the start
offset and the state batches past it. Each write is a ShareUpdate record holding the batches it
changed; every ``share.coordinator.snapshot.update.records.per.snapshot`` updates, or when the
leader epoch changes, a ShareSnapshot holds the whole state instead, so a replay starts at the
latest snapshot and records older than every key's latest snapshot can be pruned.

Writes for one share-partition run one at a time, each through the topic's coordinator runtime:
its record is appended, then the new state applied (this coordinator is the runtime's shard:
loading a partition replays its records into ``replay``).

Must not know: the wire or the broker; records reach the log through the interface
``coordinator.runtime.runtime`` documents (``append`` / ``read_batches``, plus ``prune``).
"""
from __future__ import annotations

import asyncio
import logging
import uuid

from josefk.wire.internal_topics.share_group_state import (SHARE_GROUP_STATE, SHARE_SNAPSHOT,
                                                           SHARE_UPDATE)
from josefk.wire.types import DecodeError, uuid_to_base64

from ..runtime import errors
from ..runtime.clock import AsyncioClock
from ..runtime.partitions import java_string_hash
from ..runtime.runtime import CoordinatorResult, CoordinatorRuntime

log = logging.getLogger("josefk.share")

DEFAULTS = {
    "share.coordinator.state.topic.num.partitions": 50,
    "share.coordinator.snapshot.update.records.per.snapshot": 500,
    "share.coordinator.state.topic.prune.interval.ms": 300000,
}
_Batch = SHARE_SNAPSHOT.Value.StateBatch
_UpdateBatch = SHARE_UPDATE.Value.StateBatch
TERMINAL = (2, 4)  # ACKNOWLEDGED, ARCHIVED
PERSISTED = (0, 2, 4)  # the states a leader writes: AVAILABLE and the terminal ones
INT32_MAX = 2**31 - 1
TOPIC = "__share_group_state"


def valid_batches(batches) -> bool:
    """State batches (first offset, last offset, state, delivery count) a leader can have
    written: offset ranges from 0 up, persisted states, delivery counts an INT16 holds."""
    return all(0 <= first <= last and state in PERSISTED and 0 <= count <= 32767
               for first, last, state, count in batches)


def coordinator_key(group_id: str, topic_id: uuid.UUID, partition: int) -> str:
    """Kafka's SharePartitionKey.asCoordinatorKey()."""
    return f"{group_id}:{uuid_to_base64(topic_id)}:{partition}"


def state_partition_for(group_id: str, topic_id: uuid.UUID, partition: int,
                        num_partitions: int) -> int:
    return (java_string_hash(coordinator_key(group_id, topic_id, partition)) & 0x7FFFFFFF) \
        % num_partitions


class ShareState:
    """What the coordinator holds for one share-partition."""

    __slots__ = ("state_epoch", "leader_epoch", "start", "batches", "snapshot_epoch",
                 "updates", "complete", "created", "snapshot_offset")

    def __init__(self, state_epoch=0, leader_epoch=-1, start=-1, batches=(), snapshot_epoch=0,
                 complete=-1, created=0):
        self.state_epoch = state_epoch
        self.leader_epoch = leader_epoch
        self.start = start
        self.batches = list(batches)  # [(first, last, delivery state, delivery count)]
        self.snapshot_epoch = snapshot_epoch
        self.updates = 0  # updates since the last snapshot
        self.complete = complete  # DeliveryCompleteCount as last written, -1 when unknown
        self.created = created
        self.snapshot_offset = -1  # where its latest snapshot is in the log

    def copy(self) -> "ShareState":
        s = ShareState(self.state_epoch, self.leader_epoch, self.start, self.batches,
                       self.snapshot_epoch, self.complete, self.created)
        s.updates, s.snapshot_offset = self.updates, self.snapshot_offset
        return s

    def merge(self, start: int, batches) -> None:
        """Kafka's combining of a write into the state: a new start offset (-1: unchanged)
        drops what is below it, and the written batches replace what they overlap."""
        if start >= 0:
            self.start = start
        out = []
        for b in self.batches:
            if b[1] >= self.start:
                out.append((max(b[0], self.start), *b[1:]))
        for nb in sorted(batches):
            if nb[1] < self.start:
                continue
            nb = (max(nb[0], self.start), *nb[1:])
            kept = []
            for b in out:
                if b[1] < nb[0] or b[0] > nb[1]:
                    kept.append(b)
                    continue
                if b[0] < nb[0]:
                    kept.append((b[0], nb[0] - 1, b[2], b[3]))
                if b[1] > nb[1]:
                    kept.append((nb[1] + 1, b[1], b[2], b[3]))
            kept.append(nb)
            out = sorted(kept)
        self.batches = out


class ShareCoordinator:
    """The share coordinator for the ``__share_group_state`` partitions this broker leads."""

    def __init__(self, config, state_log, clock=None, may_serve=None):
        cfg = dict(DEFAULTS)
        for k in DEFAULTS:
            v = config.get(k) if config is not None else None
            if v not in (None, ""):
                cfg[k] = int(v)
        self.num_partitions = cfg["share.coordinator.state.topic.num.partitions"]
        self.snapshot_every = cfg["share.coordinator.snapshot.update.records.per.snapshot"]
        self.prune_interval_ms = cfg["share.coordinator.state.topic.prune.interval.ms"]
        self.clock = clock if clock is not None else AsyncioClock()
        self.runtime = CoordinatorRuntime(TOPIC, state_log)
        self.runtime.register(self, self.clock)
        self.may_serve = may_serve or (lambda _partition: True)
        self.states: dict[tuple, ShareState] = {}
        self.owned: set[int] = set()
        self.active = False
        self._locks: dict[tuple, asyncio.Lock] = {}
        self._replayed = 0   # records replayed into the partition being loaded

    @property
    def log(self):
        return self.runtime.log

    def partition_for(self, group_id, topic_id, partition) -> int:
        return state_partition_for(group_id, topic_id, partition, self.num_partitions)

    # ------------------------------------------------------------------ life cycle
    def startup(self) -> None:
        self.active = True
        self._schedule_prune()

    def shutdown(self) -> None:
        self.active = False
        self.runtime.shutdown()

    def load_partition(self, partition: int) -> None:
        """Replay ``__share_group_state-<partition>``: a snapshot replaces a key's state, an
        update merges into it, a tombstone deletes it."""
        self.runtime.load(partition)

    def unload_partition(self, partition: int) -> None:
        self.runtime.unload(partition)

    def _partition_of(self, key) -> int:
        return self.partition_for(*key)

    # ------------------------------------------------------------------ the runtime's shard
    compacted = False   # an update merges into its key's state: every record counts

    def loading(self, partition: int) -> bool:
        if partition in self.owned:
            return False
        self.unloaded(partition)
        self._replayed = 0
        return True

    def replay(self, partition, offset, _producer_id, _producer_epoch, raw_key, raw_value) -> None:
        try:
            record, k = SHARE_GROUP_STATE.read_key(raw_key)
            key = (k.group_id, k.topic_id, k.partition)
            if raw_value is None:
                self.states.pop(key, None)
                return
            _v, value = record.read_value(raw_value)
        except DecodeError as e:
            log.warning("skipping an undecodable record at offset %d of "
                        "__share_group_state-%d: %s", offset, partition, e)
            return
        self._replay(key, record, value, offset)
        self._replayed += 1

    def replay_end_txn(self, *_marker) -> None:
        pass  # the share coordinator's log has no transactions

    def loaded(self, partition: int, _epoch: int) -> None:
        self.owned.add(partition)
        log.info("loaded __share_group_state-%d: %d records", partition, self._replayed)

    def unloaded(self, partition: int) -> None:
        self.owned.discard(partition)
        for key in [k for k in self.states if self._partition_of(k) == partition]:
            del self.states[key]

    def _replay(self, key, record, v, offset: int) -> None:
        if record is SHARE_SNAPSHOT:
            st = ShareState(v.state_epoch, v.leader_epoch, v.start_offset,
                            [(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
                             for b in v.state_batches], v.snapshot_epoch,
                            v.delivery_complete_count, v.create_timestamp)
            st.snapshot_offset = offset
            self.states[key] = st
            return
        st = self.states.get(key)
        if st is None:
            return  # an update without its snapshot (pruned away): nothing to merge into
        st.merge(v.start_offset, [(b.first_offset, b.last_offset, b.delivery_state,
                                   b.delivery_count) for b in v.state_batches])
        st.leader_epoch = max(st.leader_epoch, v.leader_epoch)
        st.complete = v.delivery_complete_count
        st.updates += 1

    # ------------------------------------------------------------------ requests
    def check(self, group_id, topic_id, partition) -> int:
        """The error a share-coordinator request answers for this share-partition, or NONE."""
        if not self.active:
            return errors.COORDINATOR_NOT_AVAILABLE
        p = self.partition_for(group_id, topic_id, partition)
        if p not in self.owned or not self.may_serve(p):
            return errors.NOT_COORDINATOR
        return errors.NONE

    async def read(self, group_id, topic_id, partition, leader_epoch):
        """ReadShareGroupState: (error, state epoch, start offset, batches). A share-partition
        never written reads as start offset -1 (not initialized). A newer leader epoch is
        recorded, fencing the leader before it."""
        code = self.check(group_id, topic_id, partition)
        if code:
            return code, 0, -1, []
        key = (group_id, topic_id, partition)
        async with self._lock(key):
            st = self.states.get(key)
            if st is None:
                return errors.NONE, 0, -1, []
            if leader_epoch < st.leader_epoch:
                return errors.FENCED_LEADER_EPOCH, 0, -1, []
            if leader_epoch > st.leader_epoch:
                code = await self._write(key, st, leader_epoch, -1, [], st.complete)
                if code:
                    return code, 0, -1, []
                st = self.states[key]
            return errors.NONE, st.state_epoch, st.start, list(st.batches)

    async def write(self, group_id, topic_id, partition, state_epoch, leader_epoch, start,
                    batches, complete=-1) -> int:
        """WriteShareGroupState: merge ``batches`` and ``start`` into the state."""
        code = self.check(group_id, topic_id, partition)
        if code:
            return code
        if not valid_batches(batches):
            return errors.INVALID_REQUEST
        key = (group_id, topic_id, partition)
        async with self._lock(key):
            st = self.states.get(key)
            if st is None:
                st = ShareState(state_epoch, leader_epoch, created=self.clock.now_ms())
            elif state_epoch < st.state_epoch:
                return errors.FENCED_STATE_EPOCH
            elif leader_epoch < st.leader_epoch:
                return errors.FENCED_LEADER_EPOCH
            return await self._write(key, st, leader_epoch, start, batches, complete)

    async def initialize(self, group_id, topic_id, partition, state_epoch, start) -> int:
        """InitializeShareGroupState: a fresh state at ``start`` (-1: the partition leader picks
        it, by share.auto.offset.reset) under a newer state epoch; what was there is gone."""
        code = self.check(group_id, topic_id, partition)
        if code:
            return code
        key = (group_id, topic_id, partition)
        async with self._lock(key):
            old = self.states.get(key)
            if old is not None and state_epoch <= old.state_epoch:
                return errors.FENCED_STATE_EPOCH
            st = ShareState(state_epoch, old.leader_epoch if old else -1, start,
                            created=self.clock.now_ms())
            return await self._append_state(key, st)

    async def delete(self, group_id, topic_id, partition) -> int:
        """DeleteShareGroupState: tombstones for the share-partition's records."""
        code = self.check(group_id, topic_id, partition)
        if code:
            return code
        key = (group_id, topic_id, partition)
        async with self._lock(key):
            if key not in self.states:
                return errors.NONE
            fields = dict(group_id=group_id, topic_id=topic_id, partition=partition)
            return await self._commit(key, [(SHARE_SNAPSHOT.key(**fields), None),
                                            (SHARE_UPDATE.key(**fields), None)],
                                      lambda _offset: self.states.pop(key, None))

    def summary(self, group_id, topic_id, partition):
        """ReadShareGroupStateSummary: (error, state epoch, leader epoch, start offset,
        delivery complete count)."""
        code = self.check(group_id, topic_id, partition)
        if code:
            return code, 0, -1, -1, -1
        st = self.states.get((group_id, topic_id, partition))
        if st is None:
            return errors.NONE, 0, -1, -1, -1
        complete = sum(b[1] - b[0] + 1 for b in st.batches if b[2] in TERMINAL)
        return errors.NONE, st.state_epoch, st.leader_epoch, st.start, min(complete, INT32_MAX)

    # ------------------------------------------------------------------ writing
    def _lock(self, key) -> asyncio.Lock:
        lock = self._locks.get(key)
        if lock is None:
            lock = self._locks[key] = asyncio.Lock()
        return lock

    async def _write(self, key, st, leader_epoch, start, batches, complete) -> int:
        new = st.copy()
        snapshot = (key not in self.states or new.updates + 1 >= self.snapshot_every
                    or leader_epoch != st.leader_epoch)
        new.leader_epoch = leader_epoch
        new.merge(start, batches)
        new.complete = complete
        if snapshot:
            return await self._append_state(key, new)
        new.updates += 1
        group_id, topic_id, partition = key
        record = (SHARE_UPDATE.key(group_id=group_id, topic_id=topic_id, partition=partition),
                  SHARE_UPDATE.value(0, snapshot_epoch=new.snapshot_epoch,
                                     leader_epoch=leader_epoch, start_offset=start,
                                     delivery_complete_count=complete,
                                     state_batches=[_UpdateBatch(
                                         first_offset=b[0], last_offset=b[1],
                                         delivery_state=b[2], delivery_count=b[3])
                                         for b in batches]))
        return await self._commit(key, [record], lambda _offset: self._take(key, new))

    async def _append_state(self, key, st: ShareState) -> int:
        st.snapshot_epoch += 1 if key in self.states else 0
        st.updates = 0
        group_id, topic_id, partition = key
        now = self.clock.now_ms()
        record = (SHARE_SNAPSHOT.key(group_id=group_id, topic_id=topic_id, partition=partition),
                  SHARE_SNAPSHOT.value(0, snapshot_epoch=st.snapshot_epoch,
                                       state_epoch=st.state_epoch, leader_epoch=st.leader_epoch,
                                       start_offset=st.start,
                                       delivery_complete_count=st.complete,
                                       create_timestamp=st.created or now, write_timestamp=now,
                                       state_batches=[_Batch(
                                           first_offset=b[0], last_offset=b[1],
                                           delivery_state=b[2], delivery_count=b[3])
                                           for b in st.batches]))
        return await self._commit(key, [record], lambda offset: self._take(key, st, offset))

    async def _commit(self, key, records, apply) -> int:
        """Append ``records`` for ``key``, then ``apply(base offset)``; NONE or the error."""
        try:
            return await self.runtime.write(self.partition_for(*key), CoordinatorResult(
                records, errors.NONE, apply), self.clock.now_ms())
        except Exception as e:  # noqa: BLE001
            return _append_error(e)

    def _take(self, key, new: ShareState, snapshot_offset: int | None = None) -> None:
        """``new`` is the key's state (written at ``snapshot_offset`` when it is a snapshot)."""
        if snapshot_offset is not None:
            new.snapshot_offset = snapshot_offset
        self.states[key] = new

    # ------------------------------------------------------------------ pruning
    def prunable(self, partition: int) -> int:
        """The offset below which ``partition``'s records are no longer needed: every key's
        latest snapshot is at or past it (-1: none yet)."""
        offsets = [st.snapshot_offset for k, st in self.states.items()
                   if self._partition_of(k) == partition]
        if not offsets or min(offsets) < 0:
            return -1
        return min(offsets)

    def _schedule_prune(self) -> None:
        if self.active and self.prune_interval_ms > 0:
            self.runtime.schedule("prune", self.prune_interval_ms, self._prune)

    def _prune(self) -> None:
        for p in list(self.owned):
            offset = self.prunable(p)
            if offset > 0 and self.may_serve(p):
                self.runtime.log.prune(p, offset)
        self._schedule_prune()


def _append_error(e: Exception) -> int:
    code = getattr(e, "error_code", None)
    if code is None:
        log.error("__share_group_state append failed", exc_info=e)
        return errors.UNKNOWN_SERVER_ERROR
    return errors.append_error_for_commit(code)
