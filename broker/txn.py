"""The transaction coordinator's access to the cluster: its ``__transaction_state`` topic and the
partitions it writes markers to.

Markers go to each partition's leader as the metadata cache names it (kept current by the
controller's UpdateMetadata in cluster mode; on a single broker the local store names this broker
for everything): this broker's own partitions are written directly, the others through
WriteTxnMarkers on an inter-broker channel. A partition whose write failed (leader moving, broker
down) is tried again after a backoff until it has its marker; a partition whose topic is gone
needs none.
"""
from __future__ import annotations

import asyncio
import logging
from typing import Protocol

from josefk.broker.channel import ChannelError, Channels
from josefk.broker.control.metadata import MetadataStore
from josefk.broker.group_log import OFFSETS_TOPIC, InternalTopics
from josefk.broker.replication.leaders import Leaders
from josefk.broker.replication.purgatory import wait_all_replicated
from josefk.wire import errors
from josefk.wire.apis import WRITE_TXN_MARKERS

log = logging.getLogger("josefk.txn")

TXN_TOPIC = "__transaction_state"
# Test-only: the coordinator writes PrepareCommit/PrepareAbort, answers EndTxn, and then never
# sends the markers, so a test can crash the broker exactly in those states.
HOLD_MARKERS = "josefk.test.hold.txn.markers"
MARKER_RETRY_BACKOFF_S = 0.1
# Errors after which a partition needs no marker from us: its topic is gone, or a newer
# producer epoch has already ended the transaction there.
_GIVE_UP = (errors.UNKNOWN_TOPIC_OR_PARTITION, errors.INVALID_PRODUCER_EPOCH)


def ensure_txn_topic(topics: InternalTopics):
    """``__transaction_state``'s metadata, asking for its creation if needed (None until then)."""
    cfg = topics.config
    replication = cfg.int("transaction.state.log.replication.factor")
    min_isr = min(cfg.int("transaction.state.log.min.isr"), replication if topics.clustered else 1)
    return topics.ensure(
        TXN_TOPIC, cfg.int("transaction.state.log.num.partitions"), replication,
        {"cleanup.policy": "compact", "compression.type": "uncompressed",
         "min.insync.replicas": str(min_isr), "unclean.leader.election.enable": "false",
         "segment.bytes": cfg.props["transaction.state.log.segment.bytes"]})


class TxnCompletion(Protocol):
    """The group coordinator, told when a transaction's offsets are committed or aborted."""

    def complete_txn(self, partition: int, producer_id: int, commit: bool) -> None: ...


async def write_markers_locally(replicas: Leaders, groups: TxnCompletion, producer_id,
                                producer_epoch, commit, coordinator_epoch, partitions) -> dict:
    """Append the markers to the partitions this broker leads, waiting for the ISR (Kafka writes
    markers with acks=all). Returns {(topic, partition): error}."""
    out = {}
    written = []
    for t, p in partitions:
        part = replicas.leader_partition(t, p)
        if part is None:
            out[(t, p)] = replicas.not_hosted_error(t, p)
            continue
        res = part.write_marker(producer_id, producer_epoch, commit, coordinator_epoch)
        out[(t, p)] = res.error
        if not res.error:
            written.append(((t, p), part, res.next_offset))
    codes = await wait_all_replicated([(part, nxt) for _tp, part, nxt in written], 30000)
    for (tp, _part, _nxt), code in zip(written, codes):
        out[tp] = code
        if not code and tp[0] == OFFSETS_TOPIC:
            groups.complete_txn(tp[1], producer_id, commit)
    return out


class TxnMarkerWriter:
    """``write_markers`` for `coordinator.TransactionCoordinator`."""

    def __init__(self, replicas: Leaders, groups: TxnCompletion, metadata: MetadataStore,
                 node_id: int, channels: Channels | None, hold: bool = False):
        """``channels`` None on a single broker; ``hold`` is the test-only HOLD_MARKERS."""
        self.replicas = replicas
        self.groups = groups
        self.metadata = metadata
        self.node_id = node_id
        self.channels = channels
        self.hold = hold

    async def __call__(self, producer_id, producer_epoch, commit, coordinator_epoch,
                       partitions) -> bool:
        """True once every partition has its marker (or needs none); False as soon as a leader
        answers TRANSACTION_COORDINATOR_FENCED: a newer coordinator owns the transaction, so
        this one stops (as Kafka's TransactionMarkerRequestCompletionHandler does)."""
        if self.hold:
            log.warning("%s: holding the markers of producer %d", HOLD_MARKERS, producer_id)
            await asyncio.Event().wait()  # until the broker stops
        remaining = list(partitions)
        while True:
            by_leader: dict[int, list] = {}
            unknown = []  # not in the metadata cache: gone, or not learnt yet; asked anyway
            for t, p in remaining:
                meta = self.metadata.topics.get(t)
                if meta is not None and p < len(meta.partitions):
                    by_leader.setdefault(meta.partitions[p].leader, []).append((t, p))
                else:
                    unknown.append((t, p))
            results = await asyncio.gather(*(
                self._send(leader, tps, producer_id, producer_epoch, commit, coordinator_epoch)
                for leader, tps in by_leader.items()))
            results.append(await self._unknown(unknown))
            remaining = []
            for res in results:
                for tp, code in res.items():
                    if code == errors.TRANSACTION_COORDINATOR_FENCED:
                        log.warning("coordinator epoch %d fenced on %s-%d: leaving the %s of "
                                    "producer %d to the newer coordinator", coordinator_epoch,
                                    tp[0], tp[1], "commit" if commit else "abort", producer_id)
                        return False
                    if code in _GIVE_UP:
                        log.warning("no %s marker for producer %d on %s-%d: %s",
                                    "COMMIT" if commit else "ABORT", producer_id, tp[0], tp[1],
                                    errors.name(code))
                    elif code:
                        remaining.append(tp)
            if not remaining:
                return True
            await asyncio.sleep(MARKER_RETRY_BACKOFF_S)

    async def _unknown(self, tps) -> dict:
        """Partitions the metadata cache does not name: their topic is gone (no marker needed)
        only if the cluster says so; until then they are tried again."""
        if not tps:
            return {}
        known = await self.metadata.topics_exist({t for t, _p in tps})
        return {(t, p): errors.NOT_LEADER_OR_FOLLOWER if known.get(t)
                else errors.UNKNOWN_TOPIC_OR_PARTITION for t, p in tps}

    async def _send(self, leader, tps, producer_id, producer_epoch, commit, coordinator_epoch):
        if leader == self.node_id:
            return await write_markers_locally(self.replicas, self.groups, producer_id,
                                               producer_epoch, commit, coordinator_epoch, tps)
        failed = {tp: errors.NOT_LEADER_OR_FOLLOWER for tp in tps}
        if leader < 0 or self.channels is None:
            return failed
        R = WRITE_TXN_MARKERS.Request
        by_topic: dict[str, list[int]] = {}
        for t, p in tps:
            by_topic.setdefault(t, []).append(p)
        req = R(markers=[R.WritableTxnMarker(
            producer_id=producer_id, producer_epoch=producer_epoch, transaction_result=commit,
            coordinator_epoch=coordinator_epoch,
            topics=[R.WritableTxnMarker.WritableTxnMarkerTopic(name=t, partition_indexes=ps)
                    for t, ps in by_topic.items()])])
        try:
            resp = await self.channels.channel("txn", leader).request(
                WRITE_TXN_MARKERS, WRITE_TXN_MARKERS.max_version, req)
        except ChannelError as e:
            log.info("WriteTxnMarkers to broker %d failed: %s", leader, e)
            return failed
        return {(t.name, p.partition_index): p.error_code
                for m in resp.markers for t in m.topics for p in t.partitions}
