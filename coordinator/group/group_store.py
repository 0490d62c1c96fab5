"""Group metadata on ``__consumer_offsets``: writing a group's generation and loading partitions.

Owns: turning a group into its GroupMetadata record and appending it (mapping a failed append
to the error JoinGroup/SyncGroup answer), and replaying a ``__consumer_offsets`` partition into
the catalog when this broker becomes its leader (the runtime replays the partition into
:attr:`GroupStore.replaying` between :meth:`~GroupStore.loading` and :meth:`~GroupStore.loaded`):
classic groups with their members, consumer groups (KIP-848) from their records, committed
offsets, and transactional offsets still waiting for their marker.

Must not know: the record layout (``coordinator.group.offset_store`` and the declarations in
``wire.internal_topics`` own it), nor timers: a loaded group's sessions are restarted by the
caller (``Membership.resume``).
"""
from __future__ import annotations

import logging

from ..runtime import errors
from . import consumer_records
from .group import EMPTY, STABLE, GroupMetadata, MemberMetadata
from .group_catalog import GroupCatalog
from .offset_store import GroupMemberRecord, GroupRecord, OffsetsReplay

log = logging.getLogger("josefk.coordinator")


class GroupStore:
    """Persists and loads the groups of ``catalog`` through ``store`` (an OffsetStore);
    implements :class:`coordinator.group.seams.GroupMetadataWriter`."""

    def __init__(self, catalog: GroupCatalog, store):
        self.catalog = catalog
        self.store = store
        self.replaying: OffsetsReplay | None = None   # the partition being loaded

    # ------------------------------------------------------------------ writing
    async def store_group(self, group: GroupMetadata, assignment: dict) -> int:
        partition = self.catalog.partition_for(group.group_id)
        if partition not in self.catalog.owned_partitions:
            return errors.NOT_COORDINATOR
        record = group_record(group, assignment)
        try:
            await self.store.store_group(partition, group.group_id, record, self.catalog.now())
        except Exception as e:  # noqa: BLE001
            code = getattr(e, "error_code", None)
            if code is None:
                log.error("group metadata append for %s failed", group.group_id, exc_info=e)
                return errors.UNKNOWN_SERVER_ERROR
            return errors.append_error_for_group(code)
        return errors.NONE

    # ------------------------------------------------------------------ loading
    def loading(self, partition: int) -> bool:
        """A load of ``__consumer_offsets-<partition>`` starts (False: it is owned already);
        its records go to :attr:`replaying`."""
        if partition in self.catalog.owned_partitions:
            return False
        self.catalog.loading_partitions.add(partition)
        self.replaying = OffsetsReplay(partition)
        return True

    def loaded(self, partition: int) -> list[GroupMetadata]:
        """Cache what the replay of the partition built, and own it. Groups with members come
        back Stable (like Kafka), groups without members Empty. Returns the groups it cached (a
        group already cached is not replaced from the log)."""
        catalog = self.catalog
        cached = []
        loaded, self.replaying = self.replaying.result(), None
        try:
            now = catalog.now()
            made = set()
            for gid, records in loaded.consumer_groups.items():
                group = consumer_records.replay(gid, records, now)
                if group is None:
                    continue
                if gid in loaded.groups:
                    log.warning("group %s has classic and consumer group records; loading it as "
                                "a consumer group", gid)
                group.offsets.update(loaded.offsets.get(gid, {}))
                cached += self._cache(group)
                made.add(gid)
            for gid, rec in loaded.groups.items():
                if gid in made:
                    continue
                group = group_from_record(gid, rec, now)
                group.offsets.update(loaded.offsets.get(gid, {}))
                cached += self._cache(group)
                made.add(gid)
            for gid, offsets in loaded.offsets.items():
                if gid in made:
                    continue
                group = GroupMetadata(gid, EMPTY, now)
                group.offsets.update(offsets)
                cached += self._cache(group)
            for listener in catalog.partition_listeners:
                listener.loaded(partition, loaded.records)
            for pid, txn in loaded.pending_txn.items():
                for (gid, t, p), rec in txn.items():
                    group = catalog.groups.get(gid)
                    if group is None:
                        group = catalog.add(GroupMetadata(gid, EMPTY, now))
                    group.add_txn_offsets(pid, {(t, p): rec})
        finally:
            catalog.loading_partitions.discard(partition)
            catalog.owned_partitions.add(partition)
        return cached

    def _cache(self, group: GroupMetadata) -> list[GroupMetadata]:
        if self.catalog.add(group) is not group:
            log.debug("group %s already cached; not replacing it from the log", group.group_id)
            return []
        return [group]


def group_record(group: GroupMetadata, assignment: dict) -> GroupRecord:
    """The GroupMetadata record of the group's current generation."""
    members = []
    for mid, m in group.members.items():
        members.append(GroupMemberRecord(
            member_id=mid, group_instance_id=m.group_instance_id, client_id=m.client_id,
            client_host=m.client_host, rebalance_timeout=m.rebalance_timeout_ms,
            session_timeout=m.session_timeout_ms,
            subscription=m.metadata(group.protocol_name),
            assignment=bytes(assignment.get(mid, b""))))
    ts = group.current_state_timestamp
    return GroupRecord(protocol_type=group.protocol_type or "",
                       generation=group.generation_id, protocol=group.protocol_name,
                       leader=group.leader_id, current_state_timestamp=-1 if ts is None else ts,
                       members=members)


def group_from_record(group_id: str, rec: GroupRecord, now: int) -> GroupMetadata:
    """A group as its last GroupMetadata record left it: Stable with members, else Empty."""
    group = GroupMetadata(group_id, STABLE if rec.members else EMPTY, now)
    group.generation_id = rec.generation
    group.protocol_type = rec.protocol_type or None
    group.protocol_name = rec.protocol
    group.leader_id = rec.leader
    group.current_state_timestamp = (None if rec.current_state_timestamp in (None, -1)
                                     else rec.current_state_timestamp)
    for m in rec.members:
        member = MemberMetadata(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                                m.rebalance_timeout, m.session_timeout, rec.protocol_type,
                                [(rec.protocol, m.subscription)], m.assignment)
        group.add(member, None)
    group.subscribed_topics = group.compute_subscribed_topics()
    return group
