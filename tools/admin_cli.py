"""`josefk topics create|list|describe|delete` against a running broker, modelled on
kafka-topics.sh."""
from __future__ import annotations

import sys

from josefk.tools.client import Client, KafkaError
from josefk.wire.types import uuid_to_base64
from josefk.wire.apis import CREATE_TOPICS, DELETE_TOPICS, DESCRIBE_CONFIGS, METADATA

TOPIC_RESOURCE = 2
TOPIC_CONFIG_SOURCE = 1


def add_commands(sub, common):
    t = sub.add_parser("topics", help="create, list, describe and delete topics")
    tsub = t.add_subparsers(dest="action", required=True)
    c = common(tsub.add_parser("create"))
    c.add_argument("--topic", required=True)
    c.add_argument("--partitions", type=int, default=-1)
    c.add_argument("--replication-factor", type=int, default=-1)
    c.add_argument("--config", action="append", default=[], metavar="KEY=VALUE")
    c.add_argument("--if-not-exists", action="store_true")
    c.set_defaults(func=topics_create)
    common(tsub.add_parser("list")).set_defaults(func=topics_list)
    d = common(tsub.add_parser("describe"))
    d.add_argument("--topic")
    d.set_defaults(func=topics_describe)
    x = common(tsub.add_parser("delete"))
    x.add_argument("--topic", required=True)
    x.add_argument("--if-exists", action="store_true")
    x.set_defaults(func=topics_delete)


def _fail(message: str) -> int:
    print(f"Error while executing topic command : {message}", file=sys.stderr)
    return 1


def _check(code, message, ok=(0,)):
    if code not in ok:
        raise KafkaError(code, message)


def topics_create(args) -> int:
    R = CREATE_TOPICS.Request
    configs = []
    for kv in args.config:
        k, _, v = kv.partition("=")
        configs.append(R.CreatableTopicConfig(name=k, value=v))
    try:
        with Client.from_args(args) as c:
            resp = c.request(CREATE_TOPICS, timeout_ms=30000, topics=[R.CreatableTopic(
                name=args.topic, num_partitions=args.partitions,
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
    for t in sorted(md.topics, key=lambda t: t.name):
        print(t.name)
    return 0


def topics_describe(args) -> int:
    try:
        with Client.from_args(args) as c:
            md = _metadata(c, [args.topic] if args.topic else None)
            for t in sorted(md.topics, key=lambda t: t.name):
                _check(t.error_code, f"Topic '{t.name}' does not exist as expected")
                print(_describe_topic(c, t))
    except (KafkaError, OSError) as e:
        return _fail(str(e))
    return 0


def _describe_topic(c, t) -> str:
    R = DESCRIBE_CONFIGS.Request
    resp = c.request(DESCRIBE_CONFIGS, resources=[R.DescribeConfigsResource(
        resource_type=TOPIC_RESOURCE, resource_name=t.name, configuration_keys=None)])
    overrides = [f"{e.name}={e.value}" for e in resp.results[0].configs
                 if e.config_source == TOPIC_CONFIG_SOURCE]
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
        lines.append(line)
    return "\n".join(lines)


def _topic_id_text(topic_id) -> str:
    return uuid_to_base64(topic_id)


def topics_delete(args) -> int:
    try:
        with Client.from_args(args) as c:
            resp = c.request(DELETE_TOPICS, topic_names=[args.topic],
                             topics=[DELETE_TOPICS.Request.DeleteTopicState(name=args.topic)],
                             timeout_ms=30000)
            r = resp.responses[0]
            if r.error_code == 3 and args.if_exists:
                return 0
            _check(r.error_code, r.error_message or f"Topic '{args.topic}' does not exist")
    except (KafkaError, OSError) as e:
        return _fail(str(e))
    return 0
