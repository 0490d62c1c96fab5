"""Inter-broker APIs: the controller's LeaderAndIsr, UpdateMetadata and StopReplica to brokers;
AlterPartition, ControlledShutdown and ElectLeaders to the controller; OffsetForLeaderEpoch.

On a broker without ZooKeeper there is no controller but itself: requests meant for a
controller are answered as Kafka answers them in that case, and the controller's requests are
refused with STALE_CONTROLLER_EPOCH (no controller may steer it).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import asyncio
import logging

from josefk.broker.security import acl
from josefk.broker.security.authorizer import CLUSTER, CLUSTER_NAME, TOPIC, allowed
from josefk.broker.replication.replica import PartitionState
from josefk.storage.errors import StorageError
from josefk.wire import errors
from josefk.wire.apis import (ALTER_PARTITION, CONTROLLED_SHUTDOWN, ELECT_LEADERS, LEADER_AND_ISR,
                              OFFSET_FOR_LEADER_EPOCH, STOP_REPLICA, UPDATE_METADATA)
from josefk.zk.client import ZkClosed

if TYPE_CHECKING:
    from josefk.broker.handlers.services import Services
    from josefk.wire.apis import (AlterPartitionRequest,
                                  ControlledShutdownRequest,
                                  ElectLeadersRequest,
                                  LeaderAndIsrRequest,
                                  OffsetForLeaderEpochRequest,
                                  StopReplicaRequest,
                                  UpdateMetadataRequest)


log = logging.getLogger("josefk.replication")
FULL = 1  # LeaderAndIsr type: every partition of the broker (sent when it joins)
YIELD_EVERY = 500  # partitions of a LeaderAndIsr applied between turns of the event loop


def _controller_request_error(broker: Services, req) -> int:
    """Kafka's checks of a request from the controller: not meant for an earlier registration
    of this broker (KIP-380; e.g. one that reached it late over a connection from before a
    network partition, and would overwrite newer state), and not from an older controller."""
    if broker.cluster is None:
        return errors.STALE_CONTROLLER_EPOCH
    if 0 <= getattr(req, "broker_epoch", -1) < broker.cluster.metadata.broker_epoch:
        return errors.STALE_BROKER_EPOCH
    return broker.cluster.check_controller_epoch(req.controller_epoch)


async def handle_leader_and_isr(broker: Services, ctx, req: LeaderAndIsrRequest):
    R = LEADER_AND_ISR.Response
    v = ctx.version
    if v >= 2:
        items = [(ts.topic_name, ts.topic_id if v >= 5 else None, ps)
                 for ts in req.topic_states for ps in ts.partition_states]
    else:
        items = [(ps.topic_name, None, ps) for ps in req.ungrouped_partition_states]
    err = _controller_request_error(broker, req)
    results = {}
    if not err:
        try:
            await _apply_roles(broker, req, items, v, results)
        except ZkClosed:  # this broker is stopping: its roles no longer matter
            err = errors.BROKER_NOT_AVAILABLE
    if v >= 5:
        by_id: dict = {}
        for topic, topic_id, ps in items:
            by_id.setdefault(topic_id, []).append(R.LeaderAndIsrTopicError.LeaderAndIsrPartitionError(
                partition_index=ps.partition_index,
                error_code=err or results.get((topic, ps.partition_index), errors.NONE)))
        return R(error_code=err, topics=[R.LeaderAndIsrTopicError(topic_id=k, partition_errors=e)
                                         for k, e in by_id.items()])
    return R(error_code=err, partition_errors=[R.LeaderAndIsrPartitionError(
        topic_name=topic, partition_index=ps.partition_index,
        error_code=err or results.get((topic, ps.partition_index), errors.NONE))
        for topic, _tid, ps in items])


async def _apply_roles(broker: Services, req, items, v, results) -> None:
    """Take the roles ``items`` give; each partition's error into ``results``."""
    cluster = broker.cluster
    for b in req.live_leaders:
        cluster.leader_endpoints[b.broker_id] = (b.host_name, b.port)
    # one read of each topic's configs per request, not one per partition (a ZooKeeper round
    # trip when the topic overrides none)
    configs_of = {t: await broker.metadata.topic_configs(t) for t in {t for t, _i, _ps in items}}
    await _create_logs(broker, items, configs_of)
    for n, (topic, topic_id, ps) in enumerate(items):
        if n and n % YIELD_EVERY == 0:
            await asyncio.sleep(0)  # thousands of partitions: other requests are served between
        part = broker.replicas.get(topic, ps.partition_index)
        # Stale: an older leader epoch, or the same with no newer partition epoch (the same
        # leader epoch with a newer one is an ISR change this broker missed, e.g. the answer
        # to its AlterPartition lost on the way: it applies)
        if part is not None and (ps.leader_epoch, ps.partition_epoch) <= \
                (part.leader_epoch, part.partition_epoch):
            results[(topic, ps.partition_index)] = errors.STALE_CONTROLLER_EPOCH
            continue
        if broker.config.node_id not in ps.replicas:
            results[(topic, ps.partition_index)] = errors.UNKNOWN_TOPIC_OR_PARTITION
            continue
        served = broker.replicas.apply(PartitionState(
            topic, ps.partition_index, ps.leader, ps.leader_epoch, ps.isr, ps.replicas,
            ps.partition_epoch, topic_id), configs_of[topic])
        results[(topic, ps.partition_index)] = (errors.NONE if served is not None
                                                else errors.KAFKA_STORAGE_ERROR)
    if v >= 5 and req.type == FULL:
        _delete_strays(broker, {(t, ps.partition_index) for t, _i, ps in items})
    if v >= 2:
        cluster.session.roles_received(req.broker_epoch)


async def _create_logs(broker: Services, items, configs_of: dict):
    """The logs of partitions new to this broker, made off the event loop (a topic of
    thousands of partitions takes seconds); a log that cannot be made is reported by
    ``apply``, which tries again."""
    me = broker.config.node_id
    by_topic: dict[str, list[int]] = {}
    for topic, _tid, ps in items:
        if me in ps.replicas:
            by_topic.setdefault(topic, []).append(ps.partition_index)
    for topic, indexes in by_topic.items():
        try:
            await broker.replicas.create_logs(topic, indexes, configs_of[topic])
        except (StorageError, OSError):  # InvalidConfig included
            pass


def _delete_strays(broker: Services, assigned):
    """A full LeaderAndIsr lists every partition this broker should host: logs kept here for
    topics the cluster no longer has (deleted while this broker was away) go."""
    known = broker.metadata.topics
    strays = [(topic, index, True) for topic, index in list(broker.logs.all_logs())
              if (topic, index) not in assigned and topic not in known]
    for topic, index, _delete in strays:
        log.info("deleting stray log %s-%d (its topic no longer exists)", topic, index)
    broker.replicas.stop_replicas(strays)


def handle_update_metadata(broker: Services, ctx, req: UpdateMetadataRequest):
    err = _controller_request_error(broker, req)
    if not err:
        if ctx.version < 5:
            return UPDATE_METADATA.Response(error_code=errors.UNSUPPORTED_VERSION)
        broker.cluster.metadata.apply_update_metadata(req)  # only a cluster's store has a cache
    return UPDATE_METADATA.Response(error_code=err)


def handle_stop_replica(broker: Services, ctx, req: StopReplicaRequest):
    R = STOP_REPLICA.Response
    v = ctx.version
    if v >= 3:
        items = [(ts.topic_name, ps.partition_index, ps.delete_partition)
                 for ts in req.topic_states for ps in ts.partition_states]
    elif v >= 1:
        items = [(t.name, p, req.delete_partitions) for t in req.topics
                 for p in t.partition_indexes]
    else:
        items = [(p.topic_name, p.partition_index, req.delete_partitions)
                 for p in req.ungrouped_partitions]
    err = _controller_request_error(broker, req)
    if not err:
        broker.replicas.stop_replicas(items)
    return R(error_code=err, partition_errors=[
        R.StopReplicaPartitionError(topic_name=t, partition_index=p, error_code=err)
        for t, p, _d in items])


async def handle_alter_partition(broker: Services, ctx, req: AlterPartitionRequest):
    R = ALTER_PARTITION.Response
    v = ctx.version
    controller = broker.cluster.controller if broker.cluster else None
    if controller is None or not controller.active:
        return R(error_code=errors.NOT_CONTROLLER, topics=[])
    by_id = broker.metadata.topics_by_id
    items, names = [], {}
    for t in req.topics:
        name = t.topic_name if v < 2 else (by_id[t.topic_id].name if t.topic_id in by_id else None)
        names[name] = t.topic_id
        for p in t.partitions:
            isr = p.new_isr if v < 3 else [b.broker_id for b in p.new_isr_with_epochs]
            items.append((name, p.partition_index, p.leader_epoch, p.partition_epoch, isr))
    result = await controller.alter_partition(req.broker_id, req.broker_epoch, items)
    if result is None:
        return R(error_code=errors.NOT_CONTROLLER, topics=[])
    if isinstance(result, int):
        return R(error_code=result, topics=[])
    by_topic: dict = {}
    for name, index, code, st in result:
        by_topic.setdefault(name, []).append(R.TopicData.PartitionData(
            partition_index=index, error_code=code, leader_id=st.leader if st else -1,
            leader_epoch=st.leader_epoch if st else -1, isr=st.isr if st else [],
            partition_epoch=st.zk_version if st else -1))
    return R(error_code=errors.NONE, topics=[
        R.TopicData(topic_name=name or "", topic_id=names.get(name), partitions=ps)
        for name, ps in by_topic.items()])


async def handle_controlled_shutdown(broker: Services, ctx, req: ControlledShutdownRequest):
    R = CONTROLLED_SHUTDOWN.Response
    controller = broker.cluster.controller if broker.cluster else None
    if controller is None or not controller.active:
        return R(error_code=errors.NOT_CONTROLLER, remaining_partitions=[])
    code, remaining = await controller.controlled_shutdown(
        req.broker_id, req.broker_epoch if ctx.version >= 2 else -1)
    return R(error_code=code, remaining_partitions=[
        R.RemainingPartition(topic_name=t, partition_index=p) for t, p in remaining])


async def handle_elect_leaders(broker: Services, ctx, req: ElectLeadersRequest):
    R = ELECT_LEADERS.Response
    v = ctx.version
    controller = broker.cluster.controller if broker.cluster else None
    wanted = None if req.topic_partitions is None else [
        (t.topic, p) for t in req.topic_partitions for p in t.partitions]
    if controller is None:  # a single broker leads everything it hosts: nothing to elect
        results = {tp: (errors.ELECTION_NOT_NEEDED if broker.replicas.get(*tp) else
                        errors.UNKNOWN_TOPIC_OR_PARTITION, None) for tp in wanted or []}
    elif not controller.active:
        return R(error_code=errors.NOT_CONTROLLER, replica_election_results=[])
    else:
        results = await controller.elect_leaders(req.election_type if v >= 1 else 0, wanted)
        if results is None:
            return R(error_code=errors.NOT_CONTROLLER, replica_election_results=[])
    if wanted is None:  # Kafka lists only the partitions it elected when asked for all
        results = {tp: r for tp, r in results.items() if r[0] == errors.NONE}
    by_topic: dict = {}
    for (t, p), (code, msg) in results.items():
        by_topic.setdefault(t, []).append(R.ReplicaElectionResult.PartitionResult(
            partition_id=p, error_code=code, error_message=msg))
    return R(error_code=errors.NONE, replica_election_results=[
        R.ReplicaElectionResult(topic=t, partition_result=ps) for t, ps in by_topic.items()])


def handle_offset_for_leader_epoch(broker: Services, ctx, req: OffsetForLeaderEpochRequest):
    R = OFFSET_FOR_LEADER_EPOCH.Response
    from_follower = ctx.version >= 3 and req.replica_id >= 0
    cluster_action = allowed(broker, ctx, CLUSTER, CLUSTER_NAME, acl.CLUSTER_ACTION)
    topics_out = []
    for t in req.topics:
        parts = []
        may = cluster_action or allowed(broker, ctx, TOPIC, t.topic, acl.DESCRIBE)
        for p in t.partitions:
            part = broker.replicas.get(t.topic, p.partition)
            if not may:
                code = errors.TOPIC_AUTHORIZATION_FAILED
            elif part is None:
                code = broker.replicas.not_hosted_error(t.topic, p.partition)
            elif not part.is_leader and not from_follower:
                code = errors.NOT_LEADER_OR_FOLLOWER
            else:
                code = part.check_leader_epoch(p.current_leader_epoch)
            if code:
                parts.append(R.OffsetForLeaderTopicResult.EpochEndOffset(
                    error_code=code, partition=p.partition))
                continue
            epoch, end = part.log.end_offset_for_epoch(p.leader_epoch)
            parts.append(R.OffsetForLeaderTopicResult.EpochEndOffset(
                partition=p.partition, leader_epoch=epoch, end_offset=end))
        topics_out.append(R.OffsetForLeaderTopicResult(topic=t.topic, partitions=parts))
    return R(topics=topics_out)
