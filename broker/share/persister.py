"""The way from a share-partition's leader to its share coordinator (Kafka's Persister).

A share-partition's state lives with the share coordinator of its ``__share_group_state``
partition (``coordinator.share.share_state``), which is in general another broker than the leader of
the topic-partition: the state must be written where it is replicated, and only the leader of a
``__share_group_state`` partition may append to it. So the leader reads and writes it with the
share-coordinator APIs Kafka uses between brokers (ReadShareGroupState, WriteShareGroupState,
...), answered locally when this broker is that coordinator. A coordinator moving (NOT_COORDINATOR,
COORDINATOR_NOT_AVAILABLE, a broken channel) is retried with a backoff until ``timeout_s``.
"""
from __future__ import annotations

import asyncio
import logging

from josefk.broker.channel import ChannelError, Channels
from josefk.broker.group_log import InternalTopics
from josefk.wire import errors
from josefk.wire.apis import (DELETE_SHARE_GROUP_STATE, INITIALIZE_SHARE_GROUP_STATE,
                              READ_SHARE_GROUP_STATE, READ_SHARE_GROUP_STATE_SUMMARY,
                              WRITE_SHARE_GROUP_STATE)

log = logging.getLogger("josefk.share")

SHARE_STATE_TOPIC = "__share_group_state"
_RETRIABLE = (errors.NOT_COORDINATOR, errors.COORDINATOR_NOT_AVAILABLE,
              errors.COORDINATOR_LOAD_IN_PROGRESS, errors.REQUEST_TIMED_OUT,
              errors.NOT_ENOUGH_REPLICAS, errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND)
BACKOFF_S = (0.05, 0.1, 0.2, 0.5, 1.0)


def ensure_share_state_topic(topics: InternalTopics):
    """``__share_group_state``'s metadata, asking for its creation if needed (None until it
    exists). Like Kafka: delete policy, kept forever, pruned by the share coordinator."""
    cfg = topics.config
    replication = cfg.int("share.coordinator.state.topic.replication.factor")
    min_isr = min(cfg.int("share.coordinator.state.topic.min.isr"),
                  replication if topics.clustered else 1)
    return topics.ensure(
        SHARE_STATE_TOPIC, cfg.int("share.coordinator.state.topic.num.partitions"),
        replication,
        {"cleanup.policy": "delete", "retention.ms": "-1", "compression.type": "producer",
         "min.insync.replicas": str(min_isr), "unclean.leader.election.enable": "false",
         "segment.bytes": cfg.props["share.coordinator.state.topic.segment.bytes"]})


class Persister:
    def __init__(self, topics: InternalTopics, coordinator, node_id: int,
                 channels: Channels | None, timeout_s: float = 10.0):
        """``coordinator`` is this broker's share coordinator (``coordinator.share_state``);
        ``channels`` None on a single broker, which is the coordinator of everything."""
        self.topics = topics
        self.coordinator = coordinator
        self.node_id = node_id
        self.channels = channels
        self.timeout_s = timeout_s

    def coordinator_node(self, group_id, topic_id, partition):
        """The broker id of the share coordinator, or None while there is none."""
        topic = ensure_share_state_topic(self.topics)
        if topic is None:
            return None
        index = self.coordinator.partition_for(group_id, topic_id, partition)
        if index >= len(topic.partitions):
            return None
        leader = topic.partitions[index].leader
        return leader if leader >= 0 else None

    # -- the five requests ------------------------------------------------------------------------
    async def read(self, group_id, topic_id, partition, leader_epoch):
        """(error, state epoch, start offset, [(first, last, state, count)])."""
        async def local():
            return await self.coordinator.read(group_id, topic_id, partition, leader_epoch)

        async def remote(channel):
            Q = READ_SHARE_GROUP_STATE.Request
            resp = await channel.request(READ_SHARE_GROUP_STATE, 0, Q(group_id=group_id, topics=[
                Q.ReadStateData(topic_id=topic_id, partitions=[Q.PartitionData(
                    partition=partition, leader_epoch=leader_epoch)])]))
            p = resp.results[0].partitions[0]
            return p.error_code, p.state_epoch, p.start_offset, [
                (b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
                for b in p.state_batches]

        return await self._call(group_id, topic_id, partition, local, remote, (0, -1, []))

    async def write(self, group_id, topic_id, partition, state_epoch, leader_epoch, start,
                    batches, complete) -> int:
        async def local():
            return await self.coordinator.write(group_id, topic_id, partition, state_epoch,
                                                leader_epoch, start, batches, complete)

        async def remote(channel):
            Q = WRITE_SHARE_GROUP_STATE.Request
            B = Q.StateBatch
            resp = await channel.request(WRITE_SHARE_GROUP_STATE, 1, Q(group_id=group_id, topics=[
                Q.WriteStateData(topic_id=topic_id, partitions=[Q.PartitionData(
                    partition=partition, state_epoch=state_epoch, leader_epoch=leader_epoch,
                    start_offset=start, delivery_complete_count=complete,
                    state_batches=[B(first_offset=f, last_offset=la, delivery_state=s,
                                     delivery_count=c) for f, la, s, c in batches])])]))
            return resp.results[0].partitions[0].error_code

        return await self._call(group_id, topic_id, partition, local, remote, None)

    async def initialize(self, group_id, topic_id, partition, state_epoch, start) -> int:
        async def local():
            return await self.coordinator.initialize(group_id, topic_id, partition, state_epoch,
                                                     start)

        async def remote(channel):
            Q = INITIALIZE_SHARE_GROUP_STATE.Request
            resp = await channel.request(INITIALIZE_SHARE_GROUP_STATE, 0, Q(
                group_id=group_id, topics=[Q.InitializeStateData(
                    topic_id=topic_id, partitions=[Q.PartitionData(
                        partition=partition, state_epoch=state_epoch, start_offset=start)])]))
            return resp.results[0].partitions[0].error_code

        return await self._call(group_id, topic_id, partition, local, remote, None)

    async def delete(self, group_id, topic_id, partition) -> int:
        async def local():
            return await self.coordinator.delete(group_id, topic_id, partition)

        async def remote(channel):
            Q = DELETE_SHARE_GROUP_STATE.Request
            resp = await channel.request(DELETE_SHARE_GROUP_STATE, 0, Q(
                group_id=group_id, topics=[Q.DeleteStateData(
                    topic_id=topic_id, partitions=[Q.PartitionData(partition=partition)])]))
            return resp.results[0].partitions[0].error_code

        return await self._call(group_id, topic_id, partition, local, remote, None)

    async def summary(self, group_id, topic_id, partition, leader_epoch):
        """(error, state epoch, leader epoch, start offset, delivery complete count)."""
        async def local():
            return self.coordinator.summary(group_id, topic_id, partition)

        async def remote(channel):
            Q = READ_SHARE_GROUP_STATE_SUMMARY.Request
            resp = await channel.request(READ_SHARE_GROUP_STATE_SUMMARY, 1, Q(
                group_id=group_id, topics=[Q.ReadStateSummaryData(
                    topic_id=topic_id, partitions=[Q.PartitionData(
                        partition=partition, leader_epoch=leader_epoch)])]))
            p = resp.results[0].partitions[0]
            return (p.error_code, p.state_epoch, p.leader_epoch, p.start_offset,
                    p.delivery_complete_count)

        return await self._call(group_id, topic_id, partition, local, remote, (0, -1, -1, -1))

    # -- routing and retries ----------------------------------------------------------------------
    async def _call(self, group_id, topic_id, partition, local, remote, empty):
        """``local()`` or ``remote(channel)`` at the share coordinator, retried while it moves.
        Returns their answer, or (error, *empty) / error when it cannot be reached."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout_s
        attempt = 0
        while True:
            node = self.coordinator_node(group_id, topic_id, partition)
            if node is None:
                result = errors.COORDINATOR_NOT_AVAILABLE
            elif node == self.node_id:
                result = await local()
            else:
                try:
                    result = await remote(self.channels.channel("share", node))
                except ChannelError as e:
                    log.debug("share coordinator %d unreachable: %s", node, e)
                    result = errors.COORDINATOR_NOT_AVAILABLE
            code = result if isinstance(result, int) else result[0]
            if code not in _RETRIABLE or loop.time() >= deadline:
                if isinstance(result, int) and empty is not None:
                    return (result, *empty)
                return result
            await asyncio.sleep(min(BACKOFF_S[min(attempt, len(BACKOFF_S) - 1)],
                                    max(0.0, deadline - loop.time())))
            attempt += 1
