"""Partitions this broker hosts: appends (with acks and idempotence), reads, delayed fetch.

A `Partition` wraps a storage `Log`. On one broker the ISR is just this broker, so the high
watermark follows the log end offset right after each append; replication will make it lag.
"""
from __future__ import annotations

import asyncio
import logging

from broker.producer_state import ProducerStateTable
from storage.config import LogConfig
from storage.errors import InvalidConfig, OffsetOutOfRange, RecordTooLarge, StorageError
from wire import errors
from wire.batch import CorruptRecord, InvalidRecord
from wire.validate import validate_records

log = logging.getLogger("josefk.replica")


class AppendResult:
    __slots__ = ("error", "base_offset", "log_start_offset", "message", "record_errors")

    def __init__(self, error, base_offset=-1, log_start_offset=-1, message=None,
                 record_errors=()):
        self.error = error
        self.base_offset = base_offset
        self.log_start_offset = log_start_offset
        self.message = message
        self.record_errors = record_errors  # (index in batch, message) pairs


class ReadResult:
    __slots__ = ("error", "records", "high_watermark", "last_stable_offset", "log_start_offset")

    def __init__(self, error, records=None, high_watermark=-1, log_start_offset=-1):
        self.error = error
        self.records = records
        self.high_watermark = high_watermark
        self.last_stable_offset = high_watermark
        self.log_start_offset = log_start_offset


class Partition:
    __slots__ = ("topic", "index", "log", "leader_epoch", "producers", "waiters", "config",
                 "min_insync")

    def __init__(self, topic, index, log_, leader_epoch, config: LogConfig, min_insync: int):
        self.topic = topic
        self.index = index
        self.log = log_
        self.leader_epoch = leader_epoch
        self.config = config
        self.min_insync = min_insync
        self.producers = ProducerStateTable()
        self.producers.load(log_)
        self.waiters: list[asyncio.Future] = []

    @property
    def isr_size(self) -> int:
        return 1

    def append(self, records, acks: int) -> AppendResult:
        lg = self.log
        try:
            batches = validate_records(records, self.config.compact,
                                       self.config.timestamp_window())
        except CorruptRecord as e:
            return AppendResult(errors.CORRUPT_MESSAGE, message=str(e))
        except InvalidRecord as e:
            return AppendResult(e.error_code, message=str(e), record_errors=e.record_errors)
        if acks == -1 and self.isr_size < self.min_insync:
            return AppendResult(errors.NOT_ENOUGH_REPLICAS)
        h = batches[0]
        idempotent = h.producer_id >= 0
        if idempotent:
            if len(batches) > 1:
                return AppendResult(errors.INVALID_RECORD,
                                    message="idempotent produce must carry exactly one batch")
            err, duplicate = self.producers.check(h)
            if err:
                return AppendResult(err, log_start_offset=lg.log_start_offset)
            if duplicate is not None:
                return AppendResult(errors.NONE, duplicate[0], lg.log_start_offset)
        try:
            first, last = lg.append(records, batches, leader_epoch=self.leader_epoch)
        except RecordTooLarge as e:
            return AppendResult(errors.MESSAGE_TOO_LARGE, message=str(e))
        except OSError as e:  # disk full, file too large, I/O error: nothing was appended
            log.warning("append to %s-%d failed: %s", self.topic, self.index, e)
            return AppendResult(errors.KAFKA_STORAGE_ERROR, message=f"Disk error when trying "
                                f"to access log file on disk: {e.strerror or e}")
        if idempotent:
            self.producers.update(h, first, last)
        lg.high_watermark = lg.log_end_offset
        self.wake()
        return AppendResult(errors.NONE, first, lg.log_start_offset)

    def wake(self):
        waiters = self.waiters
        if waiters:
            self.waiters = []
            for f in waiters:
                if not f.done():
                    f.set_result(None)

    def read(self, offset: int, max_bytes: int, min_one: bool) -> ReadResult:
        lg = self.log
        hwm = lg.high_watermark
        try:
            data = lg.read(offset, max_bytes, max_offset=hwm, min_one=min_one)
        except OffsetOutOfRange:
            return ReadResult(errors.OFFSET_OUT_OF_RANGE, None, hwm, lg.log_start_offset)
        return ReadResult(errors.NONE, data.records, hwm, lg.log_start_offset)

    def check_leader_epoch(self, current_leader_epoch: int) -> int:
        if current_leader_epoch < 0 or current_leader_epoch == self.leader_epoch:
            return errors.NONE
        if current_leader_epoch < self.leader_epoch:
            return errors.FENCED_LEADER_EPOCH
        return errors.UNKNOWN_LEADER_EPOCH


def topic_log_config(broker_config, topic_meta) -> LogConfig:
    return LogConfig.from_props(topic_meta.configs, broker_config.topic_defaults())


class ReplicaManager:
    def __init__(self, broker_config, log_manager, metadata):
        self.config = broker_config
        self.logs = log_manager
        self.metadata = metadata
        self.partitions: dict[tuple[str, int], Partition] = {}
        self.offline: set[tuple[str, int]] = set()
        for t in metadata.topics.values():
            self._host(t)
        metadata.listeners.append(self.on_metadata)

    def _host(self, t):
        try:
            cfg = topic_log_config(self.config, t)
        except InvalidConfig as e:
            return self._offline(t, t.partitions, e)
        min_insync = cfg.min_insync_replicas
        for p in t.partitions:
            key = (t.name, p.index)
            part = self.partitions.get(key)
            if part is None:
                try:
                    lg = self.logs.get_or_create(t.name, p.index, cfg)
                except (StorageError, OSError) as e:
                    self._offline(t, [p], e)
                    continue
                # This broker leads every partition it hosts, and the ISR is itself alone: all
                # the log holds was acknowledged.
                lg.high_watermark = lg.log_end_offset
                self.partitions[key] = Partition(t.name, p.index, lg, p.leader_epoch, cfg,
                                                 min_insync)
            else:
                part.config = cfg
                part.min_insync = min_insync
                part.log.config = cfg

    def _offline(self, t, parts, reason):
        """A partition whose stored state cannot be loaded is reported and left out; the
        broker serves every other one."""
        log.error("partitions %s of topic %s are offline: %s", [p.index for p in parts], t.name,
                  reason)
        self.offline.update((t.name, p.index) for p in parts)

    def on_metadata(self, event, t):
        if event == "deleted":
            for p in t.partitions:
                part = self.partitions.pop((t.name, p.index), None)
                if part is not None:
                    part.wake()
            self.logs.delete(t.name, [p.index for p in t.partitions])
        else:
            self._host(t)

    def get(self, topic: str, index: int) -> Partition | None:
        return self.partitions.get((topic, index))

    def watch(self, partitions) -> "DataWaiter":
        """Start watching ``partitions`` for appends (see `DataWaiter`)."""
        return DataWaiter(partitions)


class DataWaiter:
    """A future woken by the next append to any of the watched partitions. Registering happens
    at construction, synchronously, so no append can slip in before the wait begins."""

    __slots__ = ("partitions", "future")

    def __init__(self, partitions):
        self.partitions = partitions
        self.future = asyncio.get_running_loop().create_future()
        for p in partitions:
            p.waiters.append(self.future)

    async def wait(self, timeout_s: float) -> None:
        """Sleep until an append or ``timeout_s`` passes, then stop watching."""
        try:
            if timeout_s > 0:
                await asyncio.wait_for(self.future, timeout_s)
        except asyncio.TimeoutError:
            pass
        finally:
            for p in self.partitions:
                try:
                    p.waiters.remove(self.future)
                except ValueError:
                    pass
