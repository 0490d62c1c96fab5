"""Metadata: brokers, controller, topics with partitions (auto-creating topics if allowed)."""
from __future__ import annotations

from broker import acl
from broker.metadata import topic_name_error
from wire import errors
from wire.apis import METADATA

R = METADATA.Response

def handle_metadata(broker, ctx, req):
    v = ctx.version
    md = broker.metadata
    if req.topics is None or (v == 0 and not req.topics):
        names = [n for n in md.topics]
    else:
        names = []
        for t in req.topics:
            name = t.name
            if name is None and v >= 10:
                meta = md.topics_by_id.get(t.topic_id)
                name = meta.name if meta else None
            names.append(name if name is not None else t.topic_id)
    auto_create = req.allow_auto_topic_creation if v >= 4 else True
    topic_ops = acl.authorized(acl.TOPIC, v >= 8 and req.include_topic_authorized_operations)
    topics_out = [_topic(broker, name, auto_create, topic_ops) for name in names]
    brokers = [R.MetadataResponseBroker(node_id=b.node_id, host=b.host, port=b.port, rack=b.rack)
               for b in md.brokers.values()]
    return R(brokers=brokers, cluster_id=md.cluster_id, controller_id=md.controller_id,
             topics=topics_out, cluster_authorized_operations=acl.authorized(
                 acl.CLUSTER, 8 <= v <= 10 and req.include_cluster_authorized_operations))


def _topic(broker, name, auto_create, topic_ops):
    md = broker.metadata
    if not isinstance(name, str):  # an unknown topic id
        return R.MetadataResponseTopic(error_code=errors.UNKNOWN_TOPIC_ID, name=None,
                                       topic_id=name, topic_authorized_operations=acl.NOT_REQUESTED)
    t = md.topics.get(name)
    if t is None:
        if topic_name_error(name):
            code = errors.INVALID_TOPIC_EXCEPTION
        elif not auto_create:
            code = errors.UNKNOWN_TOPIC_OR_PARTITION
        else:
            t = broker.auto_create_topic(name)
            # Being created in a cluster: the client retries, as with Kafka.
            code = (errors.LEADER_NOT_AVAILABLE if broker.config.bool("auto.create.topics.enable")
                    else errors.UNKNOWN_TOPIC_OR_PARTITION)
        if t is None:
            return R.MetadataResponseTopic(error_code=code, name=name,
                                           topic_authorized_operations=acl.NOT_REQUESTED)
    parts = [_partition(broker, name, p) for p in t.partitions]
    return R.MetadataResponseTopic(name=name, topic_id=t.topic_id, is_internal=t.internal,
                                   partitions=parts, topic_authorized_operations=topic_ops)


def _partition(broker, name, p):
    if (name, p.index) in broker.replicas.offline:
        # Its log could not be loaded: no leader, this broker's replica offline (as Kafka
        # reports a partition whose only log dir failed).
        return R.MetadataResponsePartition(
            error_code=errors.LEADER_NOT_AVAILABLE, partition_index=p.index, leader_id=-1,
            leader_epoch=p.leader_epoch, replica_nodes=p.replicas, isr_nodes=[],
            offline_replicas=[broker.metadata.local.node_id])
    return R.MetadataResponsePartition(
        partition_index=p.index, leader_id=p.leader, leader_epoch=p.leader_epoch,
        replica_nodes=p.replicas, isr_nodes=p.isr, offline_replicas=p.offline,
        error_code=errors.LEADER_NOT_AVAILABLE if p.leader < 0 else errors.NONE)
