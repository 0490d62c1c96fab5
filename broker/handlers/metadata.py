"""Metadata: brokers, controller, topics with partitions (auto-creating topics if allowed)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from josefk.broker.security import acl, authorizer
from josefk.broker.security.authorizer import CLUSTER, CLUSTER_NAME, TOPIC
from josefk.broker.control.metadata import topic_name_error
from josefk.wire import errors
from josefk.wire.apis import METADATA

if TYPE_CHECKING:
    from josefk.broker.handlers.services import Services
    from josefk.wire.apis import MetadataRequest

R = METADATA.Response

def handle_metadata(broker: Services, ctx, req: MetadataRequest):
    v = ctx.version
    md = broker.metadata
    if req.topics is None or (v == 0 and not req.topics):
        # All topics: only those the client may describe, as Kafka does.
        names = [n for n in md.topics if authorizer.allowed(broker, ctx, TOPIC, n, acl.DESCRIBE)]
    else:
        names = []
        for t in req.topics:
            name = t.name
            if name is None and v >= 10:
                meta = md.topics_by_id.get(t.topic_id)
                name = meta.name if meta else None
            names.append(name if name is not None else t.topic_id)
    auto_create = req.allow_auto_topic_creation if v >= 4 else True
    want_ops = v >= 8 and req.include_topic_authorized_operations
    topics_out = [_refused(broker, ctx, name, auto_create) or _topic(
        broker, name, auto_create, authorizer.operations(broker, ctx, TOPIC, name, want_ops), v)
        for name in names]
    brokers = [R.MetadataResponseBroker(node_id=b.node_id, host=b.host, port=b.port, rack=b.rack)
               for b in (b.on(ctx.listener) for b in md.brokers.values()) if b]
    return R(brokers=brokers, cluster_id=md.cluster_id, controller_id=md.controller_id,
             topics=topics_out, cluster_authorized_operations=authorizer.operations(
                 broker, ctx, CLUSTER, CLUSTER_NAME,
                 8 <= v <= 10 and req.include_cluster_authorized_operations))


def _refused(broker: Services, ctx, name, auto_create):
    """TOPIC_AUTHORIZATION_FAILED for a topic the client may not describe (or, missing, may
    not create), else None."""
    if not isinstance(name, str):
        return None
    may = authorizer.allowed(broker, ctx, TOPIC, name, acl.DESCRIBE)
    if may and auto_create and name not in broker.metadata.topics:
        may = (authorizer.allowed(broker, ctx, CLUSTER, CLUSTER_NAME, acl.CREATE)
               or authorizer.allowed(broker, ctx, TOPIC, name, acl.CREATE))
    return None if may else R.MetadataResponseTopic(
        error_code=errors.TOPIC_AUTHORIZATION_FAILED, name=name,
        topic_authorized_operations=acl.NOT_REQUESTED)


def _topic(broker: Services, name, auto_create, topic_ops, v):
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
    # rare (a log dir failed, leaders fenced while the session is in doubt): not worth caching
    if broker.replicas.offline or broker.replicas.leadership_in_doubt():
        return _existing_topic(broker, t, topic_ops)
    return broker.topic_metadata.get(t, v, topic_ops,
                                     lambda: _existing_topic(broker, t, topic_ops))


def _existing_topic(broker: Services, t, topic_ops):
    parts = [_partition(broker, t.name, p) for p in t.partitions]
    return R.MetadataResponseTopic(name=t.name, topic_id=t.topic_id, is_internal=t.internal,
                                   partitions=parts, topic_authorized_operations=topic_ops)


class TopicMetadataCache:
    """Each topic's Metadata entry, encoded once per (version, authorized operations) and
    dropped when the metadata store reports a change of the topic (created, changed, grown,
    deleted: leaders, epochs, ISR, replicas), so answering Metadata for thousands of
    partitions costs a lookup per topic, not the building and encoding of every partition."""

    def __init__(self, store):
        self.entries = {}  # name -> (TopicMeta, partition count, {(version, ops): Encoded})
        store.listeners.append(self.invalidate)

    def invalidate(self, _event, topic) -> None:
        self.entries.pop(topic.name, None)

    def get(self, t, v, topic_ops, build):
        """The entry of topic ``t`` for version ``v``, made with ``build()`` if not cached."""
        e = self.entries.get(t.name)
        if e is None or e[0] is not t or e[1] != len(t.partitions):
            e = self.entries[t.name] = (t, len(t.partitions), {})
        enc = e[2].get((v, topic_ops))
        if enc is None:
            enc = e[2][(v, topic_ops)] = build().encoded(v)
        return enc


def _partition(broker: Services, name, p):
    if p.leader == broker.metadata.local.node_id and (name, p.index) in broker.replicas.offline:
        # Its log here cannot be served and no other replica took over (yet): no leader, this
        # broker's replica offline (as Kafka reports a partition whose only log dir failed).
        return R.MetadataResponsePartition(
            error_code=errors.LEADER_NOT_AVAILABLE, partition_index=p.index, leader_id=-1,
            leader_epoch=p.leader_epoch, replica_nodes=p.replicas, isr_nodes=[],
            offline_replicas=[broker.metadata.local.node_id])
    if p.leader == broker.metadata.local.node_id and broker.replicas.leadership_in_doubt():
        part = broker.replicas.leader_partition(name, p.index)
        if part is not None and broker.replicas.fenced(part):
            # probably cut off from the cluster: the client should find the new leader
            return R.MetadataResponsePartition(
                error_code=errors.LEADER_NOT_AVAILABLE, partition_index=p.index, leader_id=-1,
                leader_epoch=p.leader_epoch, replica_nodes=p.replicas, isr_nodes=p.isr,
                offline_replicas=p.offline)
    return R.MetadataResponsePartition(
        partition_index=p.index, leader_id=p.leader, leader_epoch=p.leader_epoch,
        replica_nodes=p.replicas, isr_nodes=p.isr, offline_replicas=p.offline,
        error_code=errors.LEADER_NOT_AVAILABLE if p.leader < 0 else errors.NONE)
