"""`josefk topics --create|--list|--describe|--alter|--delete` (or `create`, `list`...) against a
running broker, modelled on kafka-topics.sh."""
from __future__ import annotations

import re
import sys

from josefk.tools.actions import add_actions
from josefk.tools.client import Client, KafkaError
from josefk.tools.tool_client import ClusterClient
from josefk.wire import errors
from josefk.wire.types import uuid_to_base64
from josefk.wire.apis import (CREATE_PARTITIONS, CREATE_TOPICS, DELETE_TOPICS, DESCRIBE_CONFIGS,
                              DESCRIBE_LOG_DIRS, LIST_OFFSETS, METADATA)

TOPIC_RESOURCE = 2
TOPIC_CONFIG_SOURCE = 1


def add_commands(sub, common):
    t = common(sub.add_parser("topics", help="create, list, describe and delete topics "
                                             "(like kafka-topics.sh)"))
    add_actions(t, {"create": (topics_create, "create a topic"),
                    "list": (topics_list, "list the topics"),
                    "describe": (topics_describe, "describe the topic, or every topic"),
                    "alter": (topics_alter, "add partitions to a topic (--partitions)"),
                    "delete": (topics_delete, "delete a topic")},
                requires={"create": ["topic"], "alter": ["topic", "partitions"],
                          "delete": ["topic"]})
    t.add_argument("--topic", help="the topic; for --list a regular expression")
    t.add_argument("--exclude-internal", action="store_true",
                   help="--list: leave out internal topics (__consumer_offsets...)")
    t.add_argument("--partitions", type=int,
                   help="--create: the number of partitions (default: the broker's "
                        "num.partitions), the bucket's with josefk.remote.recovery or "
                        "josefk.remote.readreplica; --alter: the new number of partitions")
    t.add_argument("--replication-factor", type=int, default=-1,
                   help="--create: replicas of each partition (default: the broker's "
                        "default.replication.factor)")
    t.add_argument("--config", action="append", default=[], metavar="KEY=VALUE",
                   help="--create: a topic config (repeatable)")
    t.add_argument("--if-not-exists", action="store_true",
                   help="--create: do nothing when the topic exists")
    t.add_argument("--if-exists", action="store_true",
                   help="--delete: do nothing when the topic does not exist")


def _fail(message: str) -> int:
    print(f"Error while executing topic command : {message}", file=sys.stderr)
    return 1


def _does_not_exist(topic: str) -> str:
    return f"Topic '{topic}' does not exist as expected"  # kafka-topics.sh's words


def _check(code, message, ok=(0,)):
    if code not in ok:
        raise KafkaError(code, message)


def topics_create(args) -> int:
    R = CREATE_TOPICS.Request
    configs = []
    for kv in args.config:
        k, _, v = kv.partition("=")
        configs.append(R.CreatableTopicConfig(name=k, value=v))
    partitions = -1 if args.partitions is None else args.partitions  # -1: the broker's default
    try:
        with Client.from_args(args) as c:
            resp = c.request(CREATE_TOPICS, timeout_ms=30000, topics=[R.CreatableTopic(
                name=args.topic, num_partitions=partitions,
                replication_factor=args.replication_factor, configs=configs)])
            r = resp.topics[0]
            if r.error_code == 36 and args.if_not_exists:
                return 0
            _check(r.error_code, r.error_message)
    except (KafkaError, OSError) as e:
        return _fail(str(e))
    print(f"Created topic {args.topic}.")
    return 0


def _metadata(c, topics=None):
    R = METADATA.Request
    req_topics = None if topics is None else [R.MetadataRequestTopic(name=t) for t in topics]
    return c.request(METADATA, topics=req_topics, allow_auto_topic_creation=False)


def topics_list(args) -> int:
    try:
        with Client.from_args(args) as c:
            md = _metadata(c)
    except (KafkaError, OSError) as e:
        return _fail(str(e))
    wanted = re.compile(args.topic) if args.topic else None
    for t in sorted(md.topics, key=lambda t: t.name):
        if (wanted is None or wanted.fullmatch(t.name)) and not (
                t.is_internal and args.exclude_internal):
            print(t.name)
    return 0


def topics_describe(args) -> int:
    try:
        with ClusterClient.from_args(args) as cc:
            c = cc.bootstrap
            md = _metadata(c, [args.topic] if args.topic else None)
            cc.brokers = {b.node_id: (b.host, b.port) for b in md.brokers}
            for t in sorted(md.topics, key=lambda t: t.name):
                if t.error_code == errors.UNKNOWN_TOPIC_OR_PARTITION:
                    return _fail(_does_not_exist(t.name))
                _check(t.error_code, errors.name(t.error_code))
                print(_describe_topic(cc, t))
    except (KafkaError, OSError) as e:
        return _fail(str(e))
    return 0


# a tiered partition's offsets, asked of its leader (ListOffsets): the log's start (remote data
# included), the local log's start (KIP-1005), the last offset copied to the remote log, the end
TIERED_OFFSETS = (("LogStartOffset", -2), ("LocalLogStartOffset", -4), ("TieredOffset", -5),
                  ("EndOffset", -1))


def _tiered_columns(cc, t) -> dict[int, str]:
    """Per partition of tiered topic ``t``: its offsets (TIERED_OFFSETS), the size of its
    local log on the leader (DescribeLogDirs) and of its remote log (its copied segments in
    ``__remote_log_metadata``), as columns of its line."""
    by_leader: dict[int, list[int]] = {}
    for p in t.partitions:
        if p.leader_id >= 0:
            by_leader.setdefault(p.leader_id, []).append(p.partition_index)
    out: dict[int, list[str]] = {}
    Q, D = LIST_OFFSETS.Request, DESCRIBE_LOG_DIRS.Request
    for leader, indexes in by_leader.items():
        lc = cc.broker(leader)
        for name, ts in TIERED_OFFSETS:  # one timestamp a request: a partition once in each
            resp = lc.request(LIST_OFFSETS, replica_id=-1, isolation_level=0, topics=[
                Q.ListOffsetsTopic(name=t.name, partitions=[Q.ListOffsetsPartition(
                    partition_index=i, current_leader_epoch=-1, timestamp=ts)
                    for i in indexes])])
            for p in resp.topics[0].partitions:
                value = errors.name(p.error_code) if p.error_code else p.offset
                out.setdefault(p.partition_index, []).append(f"{name}: {value}")
        dirs = lc.request(DESCRIBE_LOG_DIRS, topics=[
            D.DescribableLogDirTopic(topic=t.name, partitions=indexes)])
        for d in dirs.results:
            for dt in d.topics:
                for p in dt.partitions:
                    if not p.is_future_key:
                        out.setdefault(p.partition_index, []).append(
                            f"LocalSize: {p.partition_size}")
    indexes = [p.partition_index for p in t.partitions]
    for i, size in cc.remote_log_sizes(t.topic_id, indexes).items():
        out.setdefault(i, []).append(f"RemoteSize: {size}")
    return {i: "".join(f"\t{col}" for col in cols) for i, cols in out.items()}


def _describe_topic(cc, t) -> str:
    R = DESCRIBE_CONFIGS.Request
    resp = cc.bootstrap.request(DESCRIBE_CONFIGS, resources=[R.DescribeConfigsResource(
        resource_type=TOPIC_RESOURCE, resource_name=t.name, configuration_keys=None)])
    overrides = [f"{e.name}={e.value}" for e in resp.results[0].configs
                 if e.config_source == TOPIC_CONFIG_SOURCE]
    tiered = _tiered_columns(cc, t) if "remote.storage.enable=true" in overrides else {}
    parts = sorted(t.partitions, key=lambda p: p.partition_index)
    rf = len(parts[0].replica_nodes) if parts else 0
    lines = [f"Topic: {t.name}\tTopicId: {_topic_id_text(t.topic_id)}\tPartitionCount: "
             f"{len(parts)}\tReplicationFactor: {rf}\tConfigs: {','.join(overrides)}"]
    for p in parts:
        leader = p.leader_id if p.leader_id >= 0 else "none"
        line = (f"\tTopic: {t.name}\tPartition: {p.partition_index}\tLeader: {leader}"
                f"\tReplicas: {','.join(map(str, p.replica_nodes))}"
                f"\tIsr: {','.join(map(str, p.isr_nodes))}")
        if p.offline_replicas:
            line += f"\tOffline: {','.join(map(str, p.offline_replicas))}"
        lines.append(line + tiered.get(p.partition_index, ""))
    return "\n".join(lines)


def _topic_id_text(topic_id) -> str:
    return uuid_to_base64(topic_id)


def topics_alter(args) -> int:
    R = CREATE_PARTITIONS.Request
    try:
        with Client.from_args(args) as c:
            resp = c.request(CREATE_PARTITIONS, timeout_ms=30000, validate_only=False, topics=[
                R.CreatePartitionsTopic(name=args.topic, count=args.partitions,
                                        assignments=None)])
            r = resp.results[0]
            if r.error_code == errors.UNKNOWN_TOPIC_OR_PARTITION:
                return _fail(_does_not_exist(args.topic))
            _check(r.error_code, r.error_message or errors.name(r.error_code))
    except (KafkaError, OSError) as e:
        return _fail(str(e))
    return 0


def topics_delete(args) -> int:
    try:
        with Client.from_args(args) as c:
            resp = c.request(DELETE_TOPICS, topic_names=[args.topic],
                             topics=[DELETE_TOPICS.Request.DeleteTopicState(name=args.topic)],
                             timeout_ms=30000)
            r = resp.responses[0]
            if r.error_code == errors.UNKNOWN_TOPIC_OR_PARTITION:
                return 0 if args.if_exists else _fail(_does_not_exist(args.topic))
            _check(r.error_code, r.error_message)
    except (KafkaError, OSError) as e:
        return _fail(str(e))
    return 0
