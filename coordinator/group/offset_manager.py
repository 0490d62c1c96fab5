"""Committed offsets of every group: Kafka's OffsetMetadataManager.

Owns: OffsetCommit, TxnOffsetCommit (staged until the transaction's marker), OffsetFetch,
OffsetDelete, offset expiry (offsets.retention.minutes, checked every
offsets.retention.check.interval.ms) and the clean-up that writes tombstones and retires groups
left Empty without offsets.

Must not know: how members join or rebalance (an offset commit keeps a classic member's session
alive and a retired group's timers stop through :class:`coordinator.group.seams.MemberSessions`; a
consumer group (KIP-848) checks its members' epochs itself), nor the record layout of
``__consumer_offsets`` (the :class:`coordinator.group.offset_store.OffsetStore` writes it).
"""
from __future__ import annotations

import logging

from ..runtime import errors
from . import consumer_records
from .group import (COMPLETING_REBALANCE, DEAD, EMPTY, PREPARING_REBALANCE, STABLE,
                    UNKNOWN_MEMBER_ID, CommitRecord, GroupMetadata, OffsetAndMetadata)
from .group_catalog import GroupCatalog
from .results import OffsetFetchPartition
from .seams import MemberSessions

log = logging.getLogger("josefk.coordinator")

INT64_MAX = 0x7FFFFFFFFFFFFFFF
_EXPIRY = "offsets expiry"   # the runtime's timer of the retention check


def _utf16_len(s: str) -> int:
    return len(s.encode("utf-16-le")) // 2


class OffsetManager:
    """Offsets of the groups in ``catalog``, written through ``store`` (an OffsetStore)."""

    def __init__(self, catalog: GroupCatalog, store, sessions: MemberSessions, *,
                 retention_ms: int, retention_check_interval_ms: int, max_metadata_size: int):
        self.catalog = catalog
        self.store = store
        self.sessions = sessions
        self.offsets_retention_ms = retention_ms
        self.retention_check_interval_ms = retention_check_interval_ms
        self.max_metadata_size = max_metadata_size

    # ------------------------------------------------------------------ commit / fetch
    def _to_offset_and_metadata(self, value, now, expire) -> OffsetAndMetadata:
        offset, leader_epoch, metadata = value[0], value[1], value[2]
        commit_ts = value[3] if len(value) > 3 and value[3] not in (None, -1) else now
        return OffsetAndMetadata(
            offset=int(offset),
            leader_epoch=-1 if leader_epoch is None else int(leader_epoch),
            metadata="" if metadata is None else metadata,
            commit_timestamp=commit_ts,
            expire_timestamp=expire)

    async def commit_offsets(self, group_id, generation_id, member_id, group_instance_id,
                             retention_time_ms, offsets, api_version=None) -> dict:
        """OffsetCommit. ``offsets``: {(topic, partition): (offset, leader_epoch|-1|None,
        metadata|None[, commit_timestamp])} (the 4th item only for v1 requests).
        ``retention_time_ms`` -1/None is the default (broker retention); other values (v2-4)
        set an explicit expire timestamp like Kafka. ``generation_id`` is a consumer group
        member's epoch. Returns {(topic, partition): error}. Topic existence/authorization
        (UNKNOWN_TOPIC_OR_PARTITION) is the handler's check."""
        member_id = member_id or UNKNOWN_MEMBER_ID
        err = self.catalog.validate(group_id, "OffsetCommit")
        if err is not None:
            return {tp: err for tp in offsets}
        group = self.catalog.groups.get(group_id)
        if group is None:
            if generation_id < 0:
                # not using Kafka group management: a standalone ("simple") commit
                group = self.catalog.add(GroupMetadata(group_id, EMPTY, self.catalog.now()))
            elif api_version is not None and api_version >= 9:
                return {tp: errors.GROUP_ID_NOT_FOUND for tp in offsets}
            else:
                return {tp: errors.ILLEGAL_GENERATION for tp in offsets}
        if group.group_type == "consumer":
            err = group.validate_offset_commit(member_id, group_instance_id, generation_id,
                                               api_version)
            if err is not None:
                return {tp: err for tp in offsets}
        else:
            err = self._validate_offset_commit(group, generation_id, member_id, group_instance_id)
            if err is not None:
                return {tp: err for tp in offsets}
            state = group.state
            if state == COMPLETING_REBALANCE:
                # a valid member that has not synced yet: let it finish the rebalance first
                return {tp: errors.REBALANCE_IN_PROGRESS for tp in offsets}
            if state in (STABLE, PREPARING_REBALANCE):
                # commits are allowed while preparing; the heartbeat tells the member to rejoin
                self.sessions.extend_session(group, group.get(member_id))
        now = self.catalog.now()
        expire = (min(now + retention_time_ms, INT64_MAX)  # a huge retention never overflows
                  if retention_time_ms is not None and retention_time_ms != -1 else None)
        oms = {tp: self._to_offset_and_metadata(v, now, expire) for tp, v in offsets.items()}
        return await self._store_offsets(group, oms, now)

    def _validate_offset_commit(self, group, generation_id, member_id, instance_id):
        if group.is_state(DEAD):
            return errors.COORDINATOR_NOT_AVAILABLE
        if generation_id >= 0 or member_id != UNKNOWN_MEMBER_ID or instance_id is not None:
            err = group.validate_member(member_id, instance_id)
            if err is not None:
                return err
            if generation_id != group.generation_id:
                return errors.ILLEGAL_GENERATION
            return None
        if not group.is_state(EMPTY):
            # when the group has members only they can commit
            return errors.UNKNOWN_MEMBER_ID
        return None

    def _metadata_ok(self, metadata: str) -> bool:
        # a character is at most two UTF-16 units: short metadata needs no encoding
        return (metadata is None or 2 * len(metadata) <= self.max_metadata_size
                or _utf16_len(metadata) <= self.max_metadata_size)

    async def _store_offsets(self, group, offsets: dict, now: int) -> dict:
        valid = {tp: om for tp, om in offsets.items() if self._metadata_ok(om.metadata)}
        if not valid:
            return {tp: errors.OFFSET_METADATA_TOO_LARGE for tp in offsets}
        partition = self.catalog.partition_for(group.group_id)
        if partition not in self.catalog.owned_partitions:
            return {tp: errors.NOT_COORDINATOR for tp in offsets}
        group.prepare_offset_commit(valid)
        try:
            base_offset = await self.store.store_offsets(partition, group.group_id, valid, now)
        except Exception as e:  # noqa: BLE001 - every append failure becomes an error code
            code = getattr(e, "error_code", None)
            if code is None:
                log.error("offset commit append for group %s failed", group.group_id, exc_info=e)
                error = errors.UNKNOWN_SERVER_ERROR
            else:
                error = errors.append_error_for_commit(code)
            if not group.is_state(DEAD):
                for tp, om in valid.items():
                    group.fail_pending_offset_write(tp, om)
        else:
            error = errors.NONE
            if not group.is_state(DEAD):
                for tp, om in valid.items():
                    group.on_offset_commit_append(tp, CommitRecord(base_offset, om))
        return {tp: (error if tp in valid else errors.OFFSET_METADATA_TOO_LARGE)
                for tp in offsets}

    async def commit_txn_offsets(self, group_id, producer_id, producer_epoch, generation_id,
                                 member_id, group_instance_id, offsets) -> dict:
        """TxnOffsetCommit: offsets staged in the producer's transaction, written as a
        transactional batch; they count once the COMMIT marker reaches the group's partition
        (:meth:`complete_txn`). Members are validated like OffsetCommit when the request
        names a generation or member (KIP-447). Returns {(topic, partition): error}."""
        err = self.catalog.validate(group_id, "TxnOffsetCommit")
        if err is not None:
            return {tp: err for tp in offsets}
        group = self.catalog.groups.get(group_id)
        if group is None:
            group = self.catalog.add(GroupMetadata(group_id, EMPTY, self.catalog.now()))
        if group.is_state(DEAD):
            return {tp: errors.COORDINATOR_NOT_AVAILABLE for tp in offsets}
        if group.group_type == "consumer":
            err = group.validate_offset_commit(member_id or UNKNOWN_MEMBER_ID, group_instance_id,
                                               generation_id, transactional=True)
            if err is not None:
                return {tp: err for tp in offsets}
        elif generation_id >= 0 or member_id or group_instance_id is not None:
            err = group.validate_member(member_id or UNKNOWN_MEMBER_ID,
                                                group_instance_id)
            if err is None and generation_id != group.generation_id:
                err = errors.ILLEGAL_GENERATION
            if err is not None:
                return {tp: err for tp in offsets}
        now = self.catalog.now()
        oms = {tp: self._to_offset_and_metadata(v, now, None) for tp, v in offsets.items()}
        valid = {tp: om for tp, om in oms.items() if self._metadata_ok(om.metadata)}
        partition = self.catalog.partition_for(group_id)
        if partition not in self.catalog.owned_partitions:
            return {tp: errors.NOT_COORDINATOR for tp in offsets}
        error = errors.NONE
        if valid:
            try:
                base = await self.store.store_offsets(partition, group_id, valid, now,
                                                      producer_id, producer_epoch)
            except Exception as e:  # noqa: BLE001 - every append failure becomes an error code
                code = getattr(e, "error_code", None)
                error = (errors.UNKNOWN_SERVER_ERROR if code is None
                         else errors.append_error_for_commit(code))
            else:
                if not group.is_state(DEAD):
                    group.add_txn_offsets(producer_id, {tp: CommitRecord(base, om)
                                                        for tp, om in valid.items()})
        return {tp: (error if tp in valid else errors.OFFSET_METADATA_TOO_LARGE)
                for tp in offsets}

    def complete_txn(self, partition: int, producer_id: int, commit: bool) -> None:
        """A transaction marker was written to ``__consumer_offsets-<partition>``."""
        catalog = self.catalog
        for gid, group in catalog.groups.items():
            if producer_id in group.pending_txn_offsets and catalog.partition_for(gid) == partition:
                group.complete_txn_offsets(producer_id, commit)

    def fetch_offsets(self, group_id, partitions=None, require_stable=False, member_id=None,
                      member_epoch=-1):
        """OffsetFetch. ``partitions``: list of (topic, partition), or None for all committed.
        ``member_id``/``member_epoch`` (v9+) name the consumer group member asking (its epoch
        must be current). Returns (error, {(topic, partition): OffsetFetchPartition(offset,
        leader_epoch, metadata, error)}); unknown partitions give offset -1, epoch -1,
        metadata ""."""
        err = self.catalog.validate(group_id, "OffsetFetch")
        if err is not None:
            return err, {}
        group = self.catalog.groups.get(group_id)
        wanted = None if partitions is None else [(t, p) for t, p in partitions]
        if group is None or group.is_state(DEAD):
            return errors.NONE, {tp: OffsetFetchPartition(-1, -1, "", errors.NONE)
                                 for tp in (wanted or [])}
        if group.group_type == "consumer":
            err = group.validate_offset_fetch(member_id, member_epoch)
            if err is not None:
                return err, {}
        if wanted is None:
            wanted = list(group.offsets)
        out = {}
        for tp in wanted:
            if require_stable and group.has_pending_offset_commits_for(tp):
                out[tp] = OffsetFetchPartition(-1, -1, "", errors.UNSTABLE_OFFSET_COMMIT)
                continue
            rec = group.offsets.get(tp)
            if rec is None:
                out[tp] = OffsetFetchPartition(-1, -1, "", errors.NONE)
            else:
                om = rec.offset_and_metadata
                out[tp] = OffsetFetchPartition(om.offset, om.leader_epoch, om.metadata,
                                               errors.NONE)
        return errors.NONE, out


    async def delete_offsets(self, group_id, partitions) -> tuple[int, dict]:
        """OffsetDelete. Returns (group error, {(topic, partition): error}); partitions of topics
        a ``consumer`` group is subscribed to get GROUP_SUBSCRIBED_TO_TOPIC (the subscription is
        parsed from the members' metadata; when it cannot be parsed every topic counts as
        subscribed, like Kafka). A non-empty group of another protocol type: NON_EMPTY_GROUP."""
        err = self.catalog.validate(group_id, "OffsetDelete")
        if err is not None:
            return err, {}
        group = self.catalog.groups.get(group_id)
        if group is None or group.is_state(DEAD):
            return errors.GROUP_ID_NOT_FOUND, {}
        tps = [(t, p) for t, p in partitions]
        partition_errors = {}
        if group.is_state(EMPTY):
            eligible = tps
        elif group.is_consumer_group:
            eligible = []
            for tp in tps:
                if group.is_subscribed_to_topic(tp[0]):
                    partition_errors[tp] = errors.GROUP_SUBSCRIBED_TO_TOPIC
                else:
                    eligible.append(tp)
        else:
            return errors.NON_EMPTY_GROUP, {}
        if eligible:
            await self.cleanup_group_metadata([group], lambda g: g.remove_offsets(eligible))
            for tp in eligible:
                partition_errors[tp] = errors.NONE
        return errors.NONE, partition_errors

    # ------------------------------------------------------------------ expiry / cleanup
    def start_expiry(self) -> None:
        self._schedule_expiration()

    def stop_expiry(self) -> None:
        self.store.runtime.cancel(_EXPIRY)

    def _schedule_expiration(self):
        self.store.runtime.schedule(_EXPIRY, self.retention_check_interval_ms,
                                    self._on_expiry_timer)

    def _on_expiry_timer(self):
        if not self.catalog.active:
            return
        self.catalog.spawn(self._expire_and_reschedule())

    async def _expire_and_reschedule(self):
        try:
            await self.expire_offsets()
        finally:
            if self.catalog.active:
                self._schedule_expiration()

    async def expire_offsets(self) -> int:
        """One pass of Kafka's offset expiry (run every offsets.retention.check.interval.ms):
        drops expired offsets with tombstones and removes Empty groups left without offsets."""
        now = self.catalog.now()
        retention = self.offsets_retention_ms
        n = await self.cleanup_group_metadata(
            list(self.catalog.groups.values()), lambda g: g.remove_expired_offsets(now, retention))
        if n:
            log.info("removed %d expired offsets", n)
        return n

    async def cleanup_group_metadata(self, groups, selector) -> int:
        """Remove the offsets ``selector(group)`` picks from each group, retire groups left
        Empty without offsets (Dead, uncached, timers stopped) and write the tombstones.
        Returns how many offsets were removed."""
        removed_total = 0
        for group in groups:
            removed = selector(group)
            if group.is_state(EMPTY) and not group.has_offsets():
                log.info("group %s transitioned to Dead in generation %d", group.group_id,
                         group.generation_id)
                group.transition_to(DEAD, self.catalog.now())
            is_dead = group.is_state(DEAD)
            generation = group.generation_id
            partition = self.catalog.partition_for(group.group_id)
            if partition not in self.catalog.owned_partitions:
                continue
            delete_group = False
            if is_dead and self.catalog.groups.get(group.group_id) is group:
                del self.catalog.groups[group.group_id]
                self.sessions.cancel_timers(group)
                if group.group_type == "consumer":
                    delete_group = consumer_records.group_tombstones(group)
                else:
                    # generation 0 groups only stored offsets: no metadata record to delete
                    delete_group = generation > 0
            if removed or delete_group:
                try:
                    await self.store.store_tombstones(partition, group.group_id, list(removed),
                                                      delete_group, self.catalog.now())
                    removed_total += len(removed)
                except Exception as e:  # noqa: BLE001 - a lost tombstone is retried next pass
                    log.error("failed to append tombstones for group %s", group.group_id,
                              exc_info=e)
        return removed_total

