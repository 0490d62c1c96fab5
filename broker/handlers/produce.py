"""Produce: authorise each topic, hand the batches to the replica manager
(`ReplicaManager.append_records`: offsets assigned, no per-record work, acks=all waiting for
the ISR within timeout_ms) and map its results to the answer. The request is answered
synchronously whenever nothing has to wait, as on a single broker.

Produce v0-2 carry message formats v0/v1: those (and only those) are stored as one v2 batch
(``wire.legacy``), as Kafka converts them to the log's format.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from josefk.broker.security import acl
from josefk.broker.security.authorizer import TOPIC, TRANSACTIONAL_ID, allowed
from josefk.broker.guards import produce_topic_error
from josefk.broker.replication.replica import AppendResult
from josefk.broker.handlers import NO_RESPONSE
from josefk.wire import errors
from josefk.wire.apis import PRODUCE

if TYPE_CHECKING:
    from josefk.broker.handlers.services import Services
    from josefk.wire.apis import ProduceRequest

R = PRODUCE.Response
_VALID_ACKS = (0, 1, -1)
_LEADER_HINT_VERSION = 10
_OLD_FORMATS_BEFORE = 3  # Produce versions below this may carry message formats v0/v1


def handle_produce(broker: Services, ctx, req: ProduceRequest):
    acks = req.acks
    topics = []  # (topic data, the error refusing all of it) in request order
    appends = []  # (name, partition data) of the topics appended to
    # a transactional producer needs Write on its transactional id for every partition
    txn_denied = (req.transactional_id is not None and not allowed(
        broker, ctx, TRANSACTIONAL_ID, req.transactional_id, acl.WRITE))
    for td in req.topic_data:
        name = td.name
        topic_error = (errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED if txn_denied
                       else produce_topic_error(name) or broker.topic_error_for_produce(name)
                       if allowed(broker, ctx, TOPIC, name, acl.WRITE)
                       else errors.TOPIC_AUTHORIZATION_FAILED)
        if acks not in _VALID_ACKS:
            topic_error = errors.INVALID_REQUIRED_ACKS
        if not topic_error:
            appends.append((name, td.partition_data))
        topics.append((td, topic_error))

    def respond(results):
        return _response(broker, ctx, acks, topics, results)

    return broker.replicas.append_records(appends, acks, req.timeout_ms, respond,
                                          old_formats=ctx.version < _OLD_FORMATS_BEFORE)


def _response(broker: Services, ctx, acks, topics, results):
    if acks == 0:
        return NO_RESPONSE
    appended = iter(results)
    topics_out = []
    hints = False
    for td, topic_error in topics:
        name = td.name
        answers = (zip(td.partition_data, next(appended)) if not topic_error
                   else [(pd, AppendResult(topic_error)) for pd in td.partition_data])
        parts_out = []
        for pd, res in answers:
            if res.appended:  # acks=all may have failed after the append: its offsets stay
                out = R.PartitionProduceResponse(
                    index=pd.index, error_code=res.error, base_offset=res.base_offset,
                    log_append_time_ms=res.log_append_time,
                    log_start_offset=res.log_start_offset)
            else:
                out = R.PartitionProduceResponse(
                    index=pd.index, error_code=res.error, base_offset=-1, log_append_time_ms=-1,
                    log_start_offset=-1, error_message=res.message,
                    record_errors=[R.BatchIndexAndErrorMessage(
                        batch_index=i, batch_index_error_message=m)
                        for i, m in res.record_errors])
                if res.error == errors.NOT_LEADER_OR_FOLLOWER:
                    hints = _leader_hint(broker, ctx, out, name, pd.index) or hints
            parts_out.append(out)
        topics_out.append(R.TopicProduceResponse(name=name, partition_responses=parts_out))
    return R(responses=topics_out,
             node_endpoints=_endpoints(broker, ctx, topics_out) if hints else [])


def _leader_hint(broker: Services, ctx, out, topic, index) -> bool:
    """KIP-951: tell a v10+ client the partition's current leader with the error."""
    if ctx.version < _LEADER_HINT_VERSION:
        return False
    t = broker.metadata.topics.get(topic)
    if t is None or not 0 <= index < len(t.partitions) or \
            t.partitions[index].leader < 0 or \
            t.partitions[index].leader == broker.metadata.local.node_id:
        return False  # no leader known, or this broker (fenced: the client must look again)
    p = t.partitions[index]
    out.current_leader = R.PartitionProduceResponse.LeaderIdAndEpoch(
        leader_id=p.leader, leader_epoch=p.leader_epoch)
    return True


def _endpoints(broker: Services, ctx, topics_out):
    brokers = {i: b.on(ctx.listener) for i, b in broker.metadata.brokers.items()}
    brokers = {i: b for i, b in brokers.items() if b is not None}
    ids = {p.current_leader.leader_id for t in topics_out for p in t.partition_responses
           if p.current_leader is not None and p.current_leader.leader_id in brokers}
    return [R.NodeEndpoint(node_id=i, host=brokers[i].host, port=brokers[i].port,
                           rack=brokers[i].rack) for i in sorted(ids)]
