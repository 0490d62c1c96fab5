"""The coordinator runtime (Kafka 4's ``CoordinatorRuntime``): one per internal topic, it owns
what every coordinator does with its partitions of that topic, and leaves the deciding to the
coordinator's shard.

* Loading: when this broker becomes leader of a partition, the runtime reads the partition's
  log from its start and replays every record into the shard (``replay``, and
  ``replay_end_txn`` for transaction markers), then tells the shard it is ``loaded``; when
  leadership moves away, ``unloaded``. A shard that is ``compacted`` (its records' last write
  per key is all that counts, as a compacted log keeps them) gets only each key's last write of
  the plain batches, reduced natively (``wire.recscan.latest``): replaying a million offset
  commits of a few thousand keys decodes a few thousand records.
* Writing: a request or timer decides on the shard's state and returns a
  :class:`CoordinatorResult`, its records and its response; :meth:`CoordinatorRuntime.write`
  appends the records as one batch, then applies them (``apply``: the shard replays what it
  wrote from its own objects rather than decoding the bytes again), then answers the response.
  If the append fails nothing is applied; if the partition was unloaded or loaded anew while
  the append waited (leadership moved), nothing is applied and NOT_COORDINATOR is raised.
* Timers: :meth:`schedule` runs an operation later on the injected clock, one timer per key
  (scheduling a key again replaces its timer); :meth:`shutdown` cancels them all.

Unlike Kafka, one shard object serves every partition of its topic (the coordinators keep
their state in one table), so each call names the partition.

The log interface (``InMemoryOffsetsLog`` in ``memory_log`` for tests, the broker's
``OffsetsTopicLog`` over its replicas)::

    log.append(partition: int, batch: bytearray) -> int | Awaitable[int]
        Append one magic-v2 record batch (built with base offset 0) as the partition's leader;
        the log assigns the offsets and returns the batch's base offset. May return an
        awaitable (e.g. to wait for acks=all). On failure raise an exception carrying
        ``error_code`` (a Kafka error: NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS,
        MESSAGE_TOO_LARGE, ...), e.g. ``errors.CoordinatorLogError``.
    log.read_batches(partition: int) -> Iterable[(BatchHeader, buffer)]
        Every batch from the log start to the log end in offset order; ``BatchHeader`` is
        ``wire.batch.BatchHeader`` and ``header.pos`` locates the batch inside ``buffer``.
"""
from __future__ import annotations

import logging
from typing import Any, Callable, NamedTuple, Protocol

from josefk.wire import recscan
from josefk.wire import records as wire_records

from . import errors
from .clock import AsyncioClock

log = logging.getLogger("josefk.coordinator")


class CoordinatorShard(Protocol):
    """A coordinator's state over the partitions of its topic, as the runtime drives it."""

    compacted: bool
    """True: replaying only each key's last write of the plain batches gives the same state."""

    def loading(self, partition: int) -> bool:
        """A load of ``partition`` starts: forget what is known of it, replay follows. False:
        the partition is loaded already and stays as it is."""
        ...

    def replay(self, partition: int, offset: int, producer_id: int, producer_epoch: int,
               key, value) -> None:
        """One record of the partition's log (``value`` None: a tombstone); ``producer_id`` >=
        0 for a record of a transactional batch, which counts once its marker commits it.
        ``offset``: the record's; a compacted shard gets its batch's base offset."""
        ...

    def replay_end_txn(self, partition: int, producer_id: int, producer_epoch: int,
                       commit: bool) -> None:
        """A transaction marker: the producer's transactional records count (commit) or not."""
        ...

    def loaded(self, partition: int, epoch: int) -> None:
        """The partition's records are replayed: start answering for it (``epoch``: the
        leader epoch it was loaded at, the coordinator epoch of Kafka's markers)."""
        ...

    def unloaded(self, partition: int) -> None:
        """Leadership moved away: stop answering for the partition and forget its state."""
        ...


class CoordinatorResult(NamedTuple):
    """What a write operation decided (Kafka's ``CoordinatorResult``): the records to append
    ((key bytes, value bytes or None for a tombstone), or what the coordinator's store encodes)
    and the response to answer once they are; ``apply(base offset)``, when given, makes them
    the shard's state once they are written (at that offset; -1 when there were none)."""
    records: list
    response: Any = None
    apply: Callable[[int], Any] | None = None


class CoordinatorRuntime:
    """Loads, unloads and writes the partitions of one internal topic for its shard."""

    def __init__(self, topic: str, log_, compression: int = 0):
        self.topic = topic
        self.log = log_
        self.compression = compression
        self.shard: CoordinatorShard | None = None
        self.clock = AsyncioClock()
        self.loads = 0
        self.partitions: dict[int, int] = {}   # loaded partition -> its load (a count)
        self._timers: dict = {}

    def register(self, shard: CoordinatorShard, clock=None) -> None:
        """Drive ``shard`` (one per runtime), its timers on ``clock``."""
        self.shard = shard
        if clock is not None:
            self.clock = clock

    # ------------------------------------------------------------------ loading
    def load(self, partition: int, epoch: int = 0) -> None:
        """Replay ``partition`` into the shard and hand it over (leadership came here). A
        partition whose log cannot be read is owned anyway, empty, like Kafka's group
        coordinator does (the error is logged)."""
        shard = self.shard
        if not shard.loading(partition):
            return
        try:
            self.replay(partition, shard)
        except Exception as e:  # noqa: BLE001
            log.error("error loading %s-%d", self.topic, partition, exc_info=e)
            shard.loading(partition)
        self.loads += 1
        self.partitions[partition] = self.loads
        shard.loaded(partition, epoch)

    def unload(self, partition: int) -> None:
        """Leadership moved away from ``partition``."""
        self.partitions.pop(partition, None)
        self.shard.unloaded(partition)

    def replay(self, partition: int, shard) -> None:
        """Replay the log of ``partition`` into ``shard`` (its ``compacted``, ``replay`` and
        ``replay_end_txn``)."""
        replay = shard.replay
        latest: dict = {}   # raw key -> (raw value | None, batch base offset), last writes
        for header, buf in self.log.read_batches(partition):
            if header.is_control:
                self._replay_latest(partition, latest, replay)
                for rec in wire_records.iter_records(buf, header):
                    kind, _epoch = wire_records.parse_control_record(rec)
                    shard.replay_end_txn(partition, header.producer_id, header.producer_epoch,
                                         kind == wire_records.CONTROL_COMMIT)
                    break
                continue
            if header.is_transactional:
                pid, epoch = header.producer_id, header.producer_epoch
                for rec in wire_records.iter_records(buf, header):
                    replay(partition, header.base_offset if shard.compacted else rec.offset, pid,
                           epoch, rec.key, rec.value)
                continue
            if not shard.compacted:
                for rec in wire_records.iter_records(buf, header):
                    replay(partition, rec.offset, -1, -1, rec.key, rec.value)
                continue
            try:
                recscan.latest(wire_records.records_section(buf, header), header.count, latest,
                               header.base_offset)
            except ValueError as e:
                log.warning("skipping a malformed batch at offset %d of %s-%d: %s",
                            header.base_offset, self.topic, partition, e)
        self._replay_latest(partition, latest, replay)

    @staticmethod
    def _replay_latest(partition: int, latest: dict, replay) -> None:
        for key, (value, base_offset) in latest.items():
            replay(partition, base_offset, -1, -1, key, value)
        latest.clear()

    # ------------------------------------------------------------------ writing
    def append(self, partition: int, records, now_ms: int, producer_id: int = -1,
               producer_epoch: int = -1):
        """Append ``records`` ((key, value, headers, timestamp) tuples) to ``partition`` as one
        batch, transactional with a producer id; await it for the batch's base offset. (A
        plain function returning a coroutine only when the log must be waited for.)"""
        if len(records) == 1 and not self.compression and producer_id < 0:
            key, value, _headers, timestamp = records[0]  # an OffsetCommit's one record
            batch = wire_records.one_record_batch(key, value, timestamp)
        else:
            batch = wire_records.build_batch(
                records, compression=self.compression, now_ms=now_ms, producer_id=producer_id,
                producer_epoch=producer_epoch, transactional=producer_id >= 0)
        result = self.log.append(partition, batch)
        if type(result) is not int:  # the log waits for the acks (replication)
            return result
        return _done(result)

    async def write(self, partition: int, result: CoordinatorResult, now_ms: int, append=None):
        """Append ``result``'s records, then apply them, then answer its response (see the
        module docstring). ``append(partition, records, now_ms)``: the coordinator's store that
        encodes its records and appends them as one batch (default: the records are (key,
        value) pairs). Raises the failed append's error (``error_code``), or
        CoordinatorLogError(NOT_COORDINATOR) when the partition moved while it was written."""
        offset = -1
        if result.records:
            load = self.partitions.get(partition)
            offset = await (append or self._append_pairs)(partition, result.records, now_ms)
            if self.partitions.get(partition) != load:
                raise errors.CoordinatorLogError(errors.NOT_COORDINATOR)
        if result.apply is not None:
            result.apply(offset)
        return result.response

    def _append_pairs(self, partition: int, pairs, now_ms: int):
        return self.append(partition, [(k, v, None, now_ms) for k, v in pairs], now_ms)

    # ------------------------------------------------------------------ timers
    def schedule(self, key, delay_ms: float, operation: Callable[[], Any]) -> None:
        """Run ``operation()`` in ``delay_ms`` on the clock; replaces ``key``'s pending timer."""
        old = self._timers.pop(key, None)
        if old is not None:
            old.cancel()

        def fire():
            if self._timers.get(key) is handle:
                del self._timers[key]
                operation()
        handle = self.clock.call_later(delay_ms, fire)
        self._timers[key] = handle

    def cancel(self, key) -> None:
        timer = self._timers.pop(key, None)
        if timer is not None:
            timer.cancel()

    def shutdown(self) -> None:
        """Cancel every timer and unload every partition."""
        for key in list(self._timers):
            self.cancel(key)
        for p in list(self.partitions):
            self.unload(p)


async def _done(value):
    return value
