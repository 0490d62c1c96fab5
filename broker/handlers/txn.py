"""Transaction APIs: translate requests to `coordinator.TransactionCoordinator` calls (and the
group coordinator's for TxnOffsetCommit, the partitions' for markers and producers) and back.

ACLs as Kafka's KafkaApis checks them: Write on the TransactionalId for the producer's requests
(plus Write on every topic added, Read on the group for offsets), Describe on it for
DescribeTransactions and ListTransactions (which lists only those), Read on the topic for
DescribeProducers, ClusterAction for the broker-to-broker forms."""
from __future__ import annotations

from typing import TYPE_CHECKING

from josefk.broker.security import acl
from josefk.broker.security.authorizer import (CLUSTER, CLUSTER_NAME, GROUP, TOPIC,
                                               TRANSACTIONAL_ID, allowed)
from josefk.broker.group_log import OFFSETS_TOPIC, ensure_offsets_topic
from josefk.broker.control.metadata import INTERNAL_TOPICS, partition_exists
from josefk.broker.txn import write_markers_locally
from josefk.coordinator.txn.txn_log import STATE_NAMES
from josefk.wire import errors
from josefk.wire.apis import (ADD_OFFSETS_TO_TXN, ADD_PARTITIONS_TO_TXN, DESCRIBE_PRODUCERS,
                              DESCRIBE_TRANSACTIONS, END_TXN, LIST_TRANSACTIONS, TXN_OFFSET_COMMIT,
                              WRITE_TXN_MARKERS)

if TYPE_CHECKING:
    from josefk.broker.handlers.services import Services
    from josefk.wire.apis import (AddOffsetsToTxnRequest,
                                  AddPartitionsToTxnRequest,
                                  DescribeProducersRequest,
                                  DescribeTransactionsRequest,
                                  EndTxnRequest,
                                  ListTransactionsRequest,
                                  TxnOffsetCommitRequest,
                                  WriteTxnMarkersRequest)

_CLIENT_VERSIONS = 3  # AddPartitionsToTxn v0-3 come from producers, v4+ from brokers


def _topic_results(R, topics, codes):
    TR = R.AddPartitionsToTxnTopicResult
    return [TR(name=t.name, results_by_partition=[
        TR.AddPartitionsToTxnPartitionResult(partition_index=p,
                                             partition_error_code=codes[(t.name, p)])
        for p in t.partitions]) for t in topics]


def _may_write_txn(broker: Services, ctx, tid) -> bool:
    return allowed(broker, ctx, TRANSACTIONAL_ID, tid, acl.WRITE)


async def _add_partitions(broker: Services, ctx, tid, pid, epoch, topics,
                          verify_only=False) -> dict:
    """{(topic, partition): error} for one transaction. Partitions of topics the client may not
    write (internal ones included) or does not know fail the whole request (the others answer
    OPERATION_NOT_ATTEMPTED), as in Kafka."""
    wanted = [(t.name, p) for t in topics for p in t.partitions]
    denied = {t for t, _p in wanted
              if t in INTERNAL_TOPICS or not allowed(broker, ctx, TOPIC, t, acl.WRITE)}
    failed = {tp: errors.TOPIC_AUTHORIZATION_FAILED if tp[0] in denied
              else errors.UNKNOWN_TOPIC_OR_PARTITION for tp in wanted
              if tp[0] in denied or not partition_exists(broker.metadata, *tp)}
    if failed:
        return {tp: failed.get(tp, errors.OPERATION_NOT_ATTEMPTED) for tp in wanted}
    if verify_only:
        code, txn = broker.txn.describe(tid)
        return {tp: code or (errors.NONE if txn.producer_id == pid and tp in txn.partitions
                             else errors.INVALID_TXN_STATE) for tp in wanted}
    code = await broker.txn.add_partitions(tid, pid, epoch, wanted)
    return {tp: code for tp in wanted}


async def handle_add_partitions_to_txn(broker: Services, ctx, req: AddPartitionsToTxnRequest):
    R = ADD_PARTITIONS_TO_TXN.Response
    if ctx.version <= _CLIENT_VERSIONS:
        tid, topics = req.v3_and_below_transactional_id, req.v3_and_below_topics
        if not _may_write_txn(broker, ctx, tid):
            codes = {(t.name, p): errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
                     for t in topics for p in t.partitions}
        else:
            codes = await _add_partitions(broker, ctx, tid, req.v3_and_below_producer_id,
                                          req.v3_and_below_producer_epoch, topics)
        return R(results_by_topic_v3_and_below=_topic_results(R, topics, codes))
    if not allowed(broker, ctx, CLUSTER, CLUSTER_NAME, acl.CLUSTER_ACTION):
        return R(error_code=errors.CLUSTER_AUTHORIZATION_FAILED)
    results = []
    for t in req.transactions:
        codes = await _add_partitions(broker, ctx, t.transactional_id, t.producer_id,
                                      t.producer_epoch, t.topics, t.verify_only)
        results.append(R.AddPartitionsToTxnResult(transactional_id=t.transactional_id,
                                                  topic_results=_topic_results(R, t.topics,
                                                                               codes)))
    return R(results_by_transaction=results)


async def handle_add_offsets_to_txn(broker: Services, ctx, req: AddOffsetsToTxnRequest):
    R = ADD_OFFSETS_TO_TXN.Response
    if not _may_write_txn(broker, ctx, req.transactional_id):
        return R(error_code=errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    if not allowed(broker, ctx, GROUP, req.group_id, acl.READ):
        return R(error_code=errors.GROUP_AUTHORIZATION_FAILED)
    if ensure_offsets_topic(broker.internal_topics) is None:
        return R(error_code=errors.COORDINATOR_NOT_AVAILABLE)
    tp = (OFFSETS_TOPIC, broker.groups.partition_for(req.group_id))
    code = await broker.txn.add_partitions(req.transactional_id, req.producer_id,
                                           req.producer_epoch, [tp])
    return R(error_code=code)


async def handle_end_txn(broker: Services, ctx, req: EndTxnRequest):
    if not _may_write_txn(broker, ctx, req.transactional_id):
        return END_TXN.Response(error_code=errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    code = await broker.txn.end_txn(req.transactional_id, req.producer_id, req.producer_epoch,
                                    req.committed)
    return END_TXN.Response(error_code=code)


async def handle_txn_offset_commit(broker: Services, ctx, req: TxnOffsetCommitRequest):
    R = TXN_OFFSET_COMMIT.Response
    v = ctx.version
    offsets, codes = {}, {}
    denied = (errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
              if not _may_write_txn(broker, ctx, req.transactional_id)
              else errors.GROUP_AUTHORIZATION_FAILED
              if not allowed(broker, ctx, GROUP, req.group_id, acl.READ) else errors.NONE)
    for t in req.topics:
        may_read = allowed(broker, ctx, TOPIC, t.name, acl.READ)
        for p in t.partitions:
            tp = (t.name, p.partition_index)
            if denied or not may_read:
                codes[tp] = denied or errors.TOPIC_AUTHORIZATION_FAILED
            elif not partition_exists(broker.metadata, *tp):
                codes[tp] = errors.UNKNOWN_TOPIC_OR_PARTITION
            else:
                offsets[tp] = (p.committed_offset, p.committed_leader_epoch if v >= 2 else -1,
                               p.committed_metadata)
    if offsets:
        codes.update(await broker.groups.commit_txn_offsets(
            req.group_id, req.producer_id, req.producer_epoch,
            req.generation_id if v >= 3 else -1, req.member_id if v >= 3 else "",
            req.group_instance_id if v >= 3 else None, offsets))
    return R(topics=[R.TxnOffsetCommitResponseTopic(name=t.name, partitions=[
        R.TxnOffsetCommitResponseTopic.TxnOffsetCommitResponsePartition(
            partition_index=p.partition_index, error_code=codes[(t.name, p.partition_index)])
        for p in t.partitions]) for t in req.topics])


async def handle_write_txn_markers(broker: Services, ctx, req: WriteTxnMarkersRequest):
    R = WRITE_TXN_MARKERS.Response
    MR = R.WritableTxnMarkerResult
    TR = MR.WritableTxnMarkerTopicResult
    out = []
    for m in req.markers:
        tps = [(t.name, p) for t in m.topics for p in t.partition_indexes]
        codes = await write_markers_locally(broker.replicas, broker.groups, m.producer_id,
                                            m.producer_epoch, m.transaction_result,
                                            m.coordinator_epoch, tps)
        out.append(MR(producer_id=m.producer_id, topics=[TR(name=t.name, partitions=[
            TR.WritableTxnMarkerPartitionResult(partition_index=p,
                                                error_code=codes[(t.name, p)])
            for p in t.partition_indexes]) for t in m.topics]))
    return R(markers=out)


def handle_describe_transactions(broker: Services, ctx, req: DescribeTransactionsRequest):
    R = DESCRIBE_TRANSACTIONS.Response
    S = R.TransactionState
    out = []
    for tid in req.transactional_ids:
        code, txn = (broker.txn.describe(tid)
                     if allowed(broker, ctx, TRANSACTIONAL_ID, tid, acl.DESCRIBE)
                     else (errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, None))
        if txn is None:
            out.append(S(error_code=code, transactional_id=tid, transaction_state="",
                         transaction_start_time_ms=-1, producer_id=-1, producer_epoch=-1))
            continue
        by_topic: dict[str, list[int]] = {}
        for t, p in sorted(txn.partitions):  # only the topics the client may describe
            if allowed(broker, ctx, TOPIC, t, acl.DESCRIBE):
                by_topic.setdefault(t, []).append(p)
        out.append(S(transactional_id=tid, transaction_state=txn.state_name,
                     transaction_timeout_ms=txn.timeout_ms,
                     transaction_start_time_ms=txn.start_ms, producer_id=txn.producer_id,
                     producer_epoch=txn.producer_epoch,
                     topics=[S.TopicData(topic=t, partitions=ps) for t, ps in by_topic.items()]))
    return R(transaction_states=out)


def handle_list_transactions(broker: Services, ctx, req: ListTransactionsRequest):
    R = LIST_TRANSACTIONS.Response
    known = set(STATE_NAMES.values())
    states = set(req.state_filters)
    txns = broker.txn.list(states & known, set(req.producer_id_filters),
                           req.duration_filter if ctx.version >= 1 else -1)
    if states and not states & known:
        txns = []
    txns = [t for t in txns
            if allowed(broker, ctx, TRANSACTIONAL_ID, t.transactional_id, acl.DESCRIBE)]
    return R(unknown_state_filters=sorted(states - known), transaction_states=[
        R.TransactionState(transactional_id=t.transactional_id, producer_id=t.producer_id,
                           transaction_state=t.state_name) for t in txns])


def handle_describe_producers(broker: Services, ctx, req: DescribeProducersRequest):
    R = DESCRIBE_PRODUCERS.Response
    PR = R.TopicResponse.PartitionResponse
    topics = []
    for t in req.topics:
        parts = []
        may_read = allowed(broker, ctx, TOPIC, t.name, acl.READ)
        for index in t.partition_indexes:
            if not may_read:
                parts.append(PR(partition_index=index,
                                error_code=errors.TOPIC_AUTHORIZATION_FAILED))
                continue
            part = broker.replicas.leader_partition(t.name, index)
            if part is None:
                parts.append(PR(partition_index=index,
                                error_code=broker.replicas.not_hosted_error(t.name, index)))
                continue
            parts.append(PR(partition_index=index, active_producers=[
                PR.ProducerState(producer_id=pid, producer_epoch=e.epoch,
                                 last_sequence=e.last_seq, last_timestamp=e.last_timestamp,
                                 coordinator_epoch=e.coordinator_epoch,
                                 current_txn_start_offset=e.txn_first_offset)
                for pid, e in part.producers.producers.items()]))
        topics.append(R.TopicResponse(name=t.name, partitions=parts))
    return R(topics=topics)
