"""`josefk transactions list|describe|describe-producers|find-hanging|abort`, modelled on
kafka-transactions.sh: ListTransactions goes to every broker, DescribeTransactions to the
transactional id's coordinator, DescribeProducers and an operator's abort (WriteTxnMarkers) to the
partition's leader."""
from __future__ import annotations

import sys
import time

from josefk.tools.client import Client, KafkaError
from josefk.wire import errors
from josefk.wire.apis import (DESCRIBE_PRODUCERS, DESCRIBE_TRANSACTIONS, FIND_COORDINATOR,
                              LIST_TRANSACTIONS, METADATA, WRITE_TXN_MARKERS)

TRANSACTION_KEY = 1
DEFAULT_MAX_TIMEOUT_MS = 900000  # transaction.max.timeout.ms's default


def add_commands(sub, common):
    t = sub.add_parser("transactions", help="list, describe, find hanging and abort transactions")
    tsub = t.add_subparsers(dest="action", required=True)
    ls = common(tsub.add_parser("list"))
    ls.add_argument("--state", action="append", default=[], help="only this state (repeatable)")
    ls.set_defaults(func=transactions_list)
    d = common(tsub.add_parser("describe"))
    d.add_argument("--transactional-id", required=True, help="the transaction's id")
    d.set_defaults(func=transactions_describe)
    p = common(tsub.add_parser("describe-producers"))
    p.add_argument("--topic", required=True, help="the topic")
    p.add_argument("--partition", type=int, required=True, help="the partition")
    p.set_defaults(func=transactions_describe_producers)
    h = common(tsub.add_parser("find-hanging"))
    h.add_argument("--broker-id", type=int, help="only the partitions this broker leads "
                                                  "(default: every broker's)")
    h.add_argument("--max-transaction-timeout", type=int, default=DEFAULT_MAX_TIMEOUT_MS,
                   help="ms; open transactions older than this are checked (default 900000)")
    h.set_defaults(func=transactions_find_hanging)
    a = common(tsub.add_parser("abort"))
    a.add_argument("--topic", required=True, help="the partition's topic")
    a.add_argument("--partition", type=int, required=True, help="the partition")
    a.add_argument("--producer-id", type=int, required=True, help="the open transaction's producer")
    a.add_argument("--producer-epoch", type=int, required=True, help="its epoch")
    a.add_argument("--coordinator-epoch", type=int, default=-1,
                   help="the coordinator epoch written in the marker")
    a.set_defaults(func=transactions_abort)


def _fail(message: str) -> int:
    print(f"Error: {message}", file=sys.stderr)
    return 1


def _table(header, rows) -> None:
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    for row in (header, *rows):
        print("  ".join(str(x).ljust(w) for x, w in zip(row, widths)).rstrip())


def _cluster(bootstrap):
    """({broker id: "host:port"}, {topic: {partition: leader}}) from Metadata."""
    with Client(bootstrap) as c:
        md = c.request(METADATA, topics=None, allow_auto_topic_creation=False)
    brokers = {b.node_id: f"{b.host}:{b.port}" for b in md.brokers}
    leaders = {t.name: {p.partition_index: p.leader_id for p in t.partitions} for t in md.topics}
    return brokers, leaders


def _leader_of(bootstrap, topic, partition) -> str:
    brokers, leaders = _cluster(bootstrap)
    leader = leaders.get(topic, {}).get(partition, -1)
    if leader not in brokers:
        raise KafkaError(errors.UNKNOWN_TOPIC_OR_PARTITION, f"no leader for {topic}-{partition}")
    return brokers[leader]


def _listed(bootstrap, states=(), producer_ids=(), broker_ids=None):
    """[(transactional id, coordinator id, producer id, state)] from every broker."""
    brokers, _ = _cluster(bootstrap)
    out = []
    for bid, address in sorted(brokers.items()):
        if broker_ids is not None and bid not in broker_ids:
            continue
        with Client(address) as c:
            resp = c.request(LIST_TRANSACTIONS, state_filters=list(states),
                             producer_id_filters=list(producer_ids))
        if resp.error_code:
            raise KafkaError(resp.error_code, errors.name(resp.error_code))
        out += [(t.transactional_id, bid, t.producer_id, t.transaction_state)
                for t in resp.transaction_states]
    return sorted(out)


def transactions_list(args) -> int:
    try:
        rows = _listed(args.bootstrap_server, args.state)
    except (KafkaError, OSError) as e:
        return _fail(str(e))
    _table(["TransactionalId", "Coordinator", "ProducerId", "TransactionState"], rows)
    return 0


def _describe(bootstrap, tid):
    with Client(bootstrap) as c:
        found = c.request(FIND_COORDINATOR, key=tid, coordinator_keys=[tid],
                          key_type=TRANSACTION_KEY)
    coord = found.coordinators[0] if found.coordinators else found
    if coord.error_code:
        raise KafkaError(coord.error_code, errors.name(coord.error_code))
    with Client(f"{coord.host}:{coord.port}") as c:
        s = c.request(DESCRIBE_TRANSACTIONS, transactional_ids=[tid]).transaction_states[0]
    if s.error_code:
        raise KafkaError(s.error_code, errors.name(s.error_code))
    return coord.node_id, s


def transactions_describe(args) -> int:
    try:
        coordinator, s = _describe(args.bootstrap_server, args.transactional_id)
    except (KafkaError, OSError) as e:
        return _fail(str(e))
    start = s.transaction_start_time_ms
    duration = int(time.time() * 1000) - start if start >= 0 else None
    partitions = ",".join(f"{t.topic}-{p}" for t in s.topics for p in t.partitions)
    _table(["CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch",
            "TransactionState", "TransactionTimeoutMs", "CurrentTransactionStartTimeMs",
            "TransactionDurationMs", "TopicPartitions"],
           [[coordinator, s.transactional_id, s.producer_id, s.producer_epoch,
             s.transaction_state, s.transaction_timeout_ms, start if start >= 0 else "None",
             duration if duration is not None else "None", partitions]])
    return 0


def _producers(address, topic, partition):
    R = DESCRIBE_PRODUCERS.Request
    with Client(address) as c:
        resp = c.request(DESCRIBE_PRODUCERS, topics=[
            R.TopicRequest(name=topic, partition_indexes=[partition])])
    p = resp.topics[0].partitions[0]
    if p.error_code:
        raise KafkaError(p.error_code, errors.name(p.error_code))
    return p.active_producers


def transactions_describe_producers(args) -> int:
    try:
        producers = _producers(_leader_of(args.bootstrap_server, args.topic, args.partition),
                               args.topic, args.partition)
    except (KafkaError, OSError) as e:
        return _fail(str(e))
    _table(["ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch", "LastSequence",
            "LastTimestamp", "CurrentTransactionStartOffset"],
           [[p.producer_id, p.producer_epoch, p.coordinator_epoch, p.last_sequence,
             p.last_timestamp, p.current_txn_start_offset if p.current_txn_start_offset >= 0
             else "None"] for p in sorted(producers, key=lambda p: p.producer_id)])
    return 0


def transactions_find_hanging(args) -> int:
    """Open transactions on partitions (of one broker, or all) older than the maximum timeout
    whose producer the coordinators do not know as Ongoing: no coordinator will ever end them."""
    now = int(time.time() * 1000)
    rows = []
    try:
        brokers, leaders = _cluster(args.bootstrap_server)
        ongoing = {pid for _t, _b, pid, _s in _listed(args.bootstrap_server, ["Ongoing"])}
        for topic, parts in sorted(leaders.items()):
            for partition, leader in sorted(parts.items()):
                if leader not in brokers or (args.broker_id is not None and
                                             leader != args.broker_id):
                    continue
                for p in _producers(brokers[leader], topic, partition):
                    age = now - p.last_timestamp
                    if p.current_txn_start_offset < 0 or age < args.max_transaction_timeout:
                        continue
                    if p.producer_id in ongoing:
                        continue
                    rows.append([topic, partition, p.producer_id, p.producer_epoch,
                                 p.coordinator_epoch, p.current_txn_start_offset,
                                 p.last_timestamp, age // 60000])
    except (KafkaError, OSError) as e:
        return _fail(str(e))
    _table(["Topic", "Partition", "ProducerId", "ProducerEpoch", "CoordinatorEpoch",
            "StartOffset", "LastTimestamp", "Duration(min)"], rows)
    return 0


def transactions_abort(args) -> int:
    R = WRITE_TXN_MARKERS.Request
    markers = [R.WritableTxnMarker(
        producer_id=args.producer_id, producer_epoch=args.producer_epoch,
        transaction_result=False, coordinator_epoch=args.coordinator_epoch,
        topics=[R.WritableTxnMarker.WritableTxnMarkerTopic(
            name=args.topic, partition_indexes=[args.partition])])]
    try:
        with Client(_leader_of(args.bootstrap_server, args.topic, args.partition)) as c:
            resp = c.request(WRITE_TXN_MARKERS, markers=markers)
        code = resp.markers[0].topics[0].partitions[0].error_code
        if code:
            raise KafkaError(code, errors.name(code))
    except (KafkaError, OSError) as e:
        return _fail(str(e))
    print(f"Aborted the transaction of producer {args.producer_id} on "
          f"{args.topic}-{args.partition}")
    return 0
