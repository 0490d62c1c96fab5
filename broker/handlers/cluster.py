"""DescribeCluster and DescribeTopicPartitions (KIP-966), used by Kafka 3.7+ admin tools."""
from __future__ import annotations

from typing import TYPE_CHECKING

from josefk.broker.security import acl
from josefk.broker.security.authorizer import CLUSTER, CLUSTER_NAME, TOPIC, allowed, operations
from josefk.wire import errors
from josefk.wire.apis import DESCRIBE_CLUSTER, DESCRIBE_TOPIC_PARTITIONS

if TYPE_CHECKING:
    from josefk.broker.handlers.services import Services
    from josefk.wire.apis import DescribeClusterRequest, DescribeTopicPartitionsRequest


def handle_describe_cluster(broker: Services, ctx, req: DescribeClusterRequest):
    R = DESCRIBE_CLUSTER.Response
    md = broker.metadata
    if ctx.version >= 1 and req.endpoint_type != 1:  # only brokers are described, not controllers
        return R(error_code=errors.UNSUPPORTED_ENDPOINT_TYPE,
                 error_message="The target does not support endpoint type "
                               f"{req.endpoint_type}", endpoint_type=req.endpoint_type)
    return R(endpoint_type=1, cluster_id=md.cluster_id, controller_id=md.controller_id,
             brokers=[R.DescribeClusterBroker(broker_id=b.node_id, host=b.host, port=b.port,
                                              rack=b.rack)
                      for b in (b.on(ctx.listener) for b in md.brokers.values()) if b],
             cluster_authorized_operations=operations(
                 broker, ctx, CLUSTER, CLUSTER_NAME, req.include_cluster_authorized_operations),
             error_message=None)


def handle_describe_topic_partitions(broker: Services, ctx, req: DescribeTopicPartitionsRequest):
    R = DESCRIBE_TOPIC_PARTITIONS.Response
    md = broker.metadata
    # Kafka answers the set of names, in order: a name asked twice is described once.
    names = sorted({t.name for t in req.topics}) if req.topics else [
        n for n in sorted(md.topics) if allowed(broker, ctx, TOPIC, n, acl.DESCRIBE)]
    cursor = req.cursor
    if cursor is not None:
        names = [n for n in names if n >= cursor.topic_name]
    budget = req.response_partition_limit if req.response_partition_limit > 0 else 2000
    topics_out = []
    next_cursor = None
    for name in names:
        meta = md.topics.get(name)
        may = allowed(broker, ctx, TOPIC, name, acl.DESCRIBE)
        if meta is None or not may:
            topics_out.append(R.DescribeTopicPartitionsResponseTopic(
                error_code=errors.UNKNOWN_TOPIC_OR_PARTITION if may
                else errors.TOPIC_AUTHORIZATION_FAILED, name=name,
                topic_authorized_operations=acl.NOT_REQUESTED))
            continue
        start = (max(0, cursor.partition_index)
                 if cursor is not None and name == cursor.topic_name else 0)
        parts = meta.partitions[start:]
        if len(parts) > budget:
            next_cursor = R.Cursor(topic_name=name, partition_index=start + budget)
            parts = parts[:budget]
        budget -= len(parts)
        topics_out.append(R.DescribeTopicPartitionsResponseTopic(
            name=name, topic_id=meta.topic_id, is_internal=meta.internal,
            topic_authorized_operations=operations(broker, ctx, TOPIC, name, True),
            partitions=[R.DescribeTopicPartitionsResponsePartition(
                partition_index=p.index, leader_id=p.leader, leader_epoch=p.leader_epoch,
                replica_nodes=p.replicas, isr_nodes=p.isr,
                # Nullable in the schema, but Kafka always sends lists here (empty without
                # KIP-966's ELR) and the Java AdminClient's describeTopics throws on null.
                eligible_leader_replicas=[], last_known_elr=[], offline_replicas=[])
                for p in parts]))
        if next_cursor is not None:
            break
        if budget <= 0 and name != names[-1]:
            next_cursor = R.Cursor(topic_name=names[names.index(name) + 1], partition_index=0)
            break
    return R(topics=topics_out, next_cursor=next_cursor)
