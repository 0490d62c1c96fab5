"""`josefk configs`, `josefk delete-records`, `josefk log-dirs`: kafka-configs.sh,
kafka-delete-records.sh and kafka-log-dirs.sh against a running broker or cluster."""
from __future__ import annotations

import argparse
import json
import sys

from josefk.broker.security.quotas import CLIENT, USER
from josefk.broker.security.sasl import SCRAM_CODES
from josefk.tools.actions import add_actions
from josefk.tools.client import KafkaError
from josefk.tools.quotas_cli import quotas_alter, quotas_describe
from josefk.tools.tool_client import ClusterClient
from josefk.tools.users_cli import users_alter, users_describe
from josefk.wire import errors
from josefk.wire.apis import (DELETE_RECORDS, DESCRIBE_CONFIGS, DESCRIBE_LOG_DIRS,
                              INCREMENTAL_ALTER_CONFIGS, LIST_CONFIG_RESOURCES)

RESOURCE_TYPES = {"topics": 2, "brokers": 4, "client-metrics": 16}
KINDS = {"topics": "topic", "brokers": "broker", "client-metrics": "client-metric"}
SOURCES = {1: "DYNAMIC_TOPIC_CONFIG", 2: "DYNAMIC_BROKER_CONFIG",
           3: "DYNAMIC_DEFAULT_BROKER_CONFIG", 4: "STATIC_BROKER_CONFIG", 5: "DEFAULT_CONFIG",
           7: "CLIENT_METRICS_CONFIG"}
DYNAMIC_SOURCES = {1, 2, 7}
SET, DELETE = 0, 1
# kafka-configs.sh's SCRAM credentials and quotas: entity type -> quota entity
QUOTA_ENTITIES = {"users": USER, "clients": CLIENT}


def add_commands(sub, common):
    c = common(sub.add_parser("configs", help="describe or alter topic and broker configs, "
                                               "client metrics subscriptions, SCRAM "
                                               "credentials and quotas (like "
                                               "kafka-configs.sh)"))
    c.add_argument("--entity-type", choices=sorted([*RESOURCE_TYPES, *QUOTA_ENTITIES]),
                   action="append", required=True,
                   help="what the configs belong to; users (SCRAM credentials and quotas) and "
                        "clients (quotas) together for a user's quotas on a client id")
    c.add_argument("--entity-name", action="append", default=[],
                   help="the topic, broker id, subscription, user or client id (one per "
                        "--entity-type, in their order)")
    c.add_argument("--entity-default", action="store_true",
                   help="the cluster-wide default of broker configs, or the default user's or "
                        "client id's quotas (for the last --entity-type)")
    add_actions(c, {"describe": (configs, "the entity's dynamic configs (every config with "
                                          "--all)"),
                    "alter": (configs, "set (--add-config) and delete (--delete-config) "
                                       "configs")})
    c.add_argument("--all", action="store_true", help="describe every config, not only the "
                                                      "dynamic ones")
    c.add_argument("--add-config", default="", metavar="K1=V1,K2=[V2,V3]",
                   help="--alter: the configs to set")
    c.add_argument("--delete-config", default="", metavar="K1,K2",
                   help="--alter: the configs to delete (back to their defaults)")

    d = common(sub.add_parser("delete-records", help="delete records up to an offset "
                                                     "(like kafka-delete-records.sh)"))
    d.add_argument("--offset-json-file", required=True,
                   help='{"partitions":[{"topic":"t","partition":0,"offset":10}],"version":1}')
    d.set_defaults(func=delete_records)

    ld = common(sub.add_parser("log-dirs", help="log dirs and partition sizes per broker "
                                                "(like kafka-log-dirs.sh)"))
    add_actions(ld, {"describe": (log_dirs, "the log dirs of the brokers")})
    ld.add_argument("--topic-list", default="", help="comma-separated topics (default: all)")
    ld.add_argument("--broker-list", default="", help="comma-separated broker ids (default: all)")


def _fail(message: str) -> int:
    print(f"Error while executing config command: {message}", file=sys.stderr)
    return 1


def _entity(args) -> tuple[int, str, str | None]:
    """(resource type, resource name, "topic t"/"broker 1", or None for the broker default)."""
    if len(args.entity_type) > 1:
        raise ValueError("only --entity-type users and clients go together")
    (etype,) = args.entity_type
    rtype = RESOURCE_TYPES[etype]
    if len(args.entity_name) > 1:
        raise ValueError("one --entity-name only")
    if args.entity_default:
        if etype != "brokers" or args.entity_name:
            raise ValueError("--entity-default is only for --entity-type brokers")
        return rtype, "", None
    if not args.entity_name:
        if etype == "client-metrics" and args.action == "describe":
            return rtype, "", None  # every subscription
        raise ValueError("--entity-name or --entity-default is required")
    return rtype, args.entity_name[0], f"{KINDS[etype]} {args.entity_name[0]}"


def _client_entities(args) -> int:
    """--entity-type users and/or clients: SCRAM credentials (``josefk users``) and quotas
    (``josefk quotas``), as kafka-configs.sh manages both."""
    names = [*args.entity_name, *([None] if args.entity_default else [])]
    types = args.entity_type
    if len(set(types)) < len(types) or len(names) > len(types) or (
            len(names) < len(types) and args.action == "alter"):
        raise ValueError("give each --entity-type its --entity-name (or --entity-default)")
    entity = dict(zip(types, names))
    unnamed = [QUOTA_ENTITIES[t] for t in types[len(names):]]  # --describe: every one
    quotas = argparse.Namespace(
        bootstrap_server=args.bootstrap_server, command_config=args.command_config,
        user=entity.get("users"), user_default="users" in entity and not entity["users"],
        client_id=entity.get("clients"),
        client_default="clients" in entity and not entity["clients"])
    one_user = list(entity) == ["users"] and entity["users"]
    if args.action == "describe":
        failed = quotas_describe(quotas, any_of=unnamed, strict=True)
        if types == ["users"] and (one_user or not names):
            failed |= users_describe(argparse.Namespace(**{
                **vars(quotas), "user": [one_user] if one_user else None}), missing_ok=True)
        return failed
    added = parse_add_config(args.add_config)
    deleted = [k.strip() for k in args.delete_config.split(",") if k.strip()]
    scram = {k: v for k, v in added.items() if k in SCRAM_CODES}
    scram_deleted = [k for k in deleted if k in SCRAM_CODES]
    if (scram or scram_deleted) and not one_user:
        raise ValueError("SCRAM credentials are only for one --entity-type users --entity-name")
    failed = 0
    if len(scram) < len(added) or len(scram_deleted) < len(deleted):
        failed |= quotas_alter(argparse.Namespace(
            **vars(quotas),
            add_config=",".join(f"{k}={v}" for k, v in added.items() if k not in scram),
            delete_config=",".join(k for k in deleted if k not in scram_deleted)))
    if scram or scram_deleted:
        failed |= users_alter(argparse.Namespace(
            bootstrap_server=args.bootstrap_server, command_config=args.command_config,
            user=[one_user], add_config=",".join(f"{k}=[{v}]" for k, v in scram.items()),
            delete_config=",".join(scram_deleted)))
    return failed


def parse_add_config(text: str) -> dict:
    """``a=1,b=[x,y],c=2`` -> {"a": "1", "b": "x,y", "c": "2"} (kafka-configs.sh's syntax)."""
    out, depth, item = {}, 0, ""
    for ch in text + ",":
        if ch == "," and depth == 0:
            if item.strip():
                k, sep, v = item.partition("=")
                if not sep:
                    raise ValueError(f"expected key=value in --add-config, got {item!r}")
                out[k.strip()] = v.strip().strip("[]")
            item = ""
            continue
        depth += ch == "["
        depth -= ch == "]"
        item += ch
    return out


def configs(args) -> int:
    try:
        if set(args.entity_type) <= set(QUOTA_ENTITIES):
            return _client_entities(args)
        rtype, name, label = _entity(args)
        with ClusterClient.from_args(args) as cc:
            c = cc.bootstrap
            if rtype == RESOURCE_TYPES["brokers"] and name:
                cc.refresh([])
                c = cc.broker(int(name))  # a broker answers for its own configs
            if args.action == "alter":
                return _alter(c, rtype, name, label, args)
            if rtype == RESOURCE_TYPES["client-metrics"] and not name:
                resp = c.request(LIST_CONFIG_RESOURCES, resource_types=[rtype])
                if resp.error_code:
                    raise KafkaError(resp.error_code, errors.name(resp.error_code))
                for r in resp.config_resources:
                    _describe(c, rtype, r.resource_name, f"client-metric {r.resource_name}",
                              args.all)
                return 0
            return _describe(c, rtype, name, label, args.all)
    except (KafkaError, OSError, ValueError) as e:
        return _fail(str(e))


def _alter(c, rtype, name, label, args) -> int:
    R = INCREMENTAL_ALTER_CONFIGS.Request
    ops = [R.AlterableConfig(name=k, config_operation=SET, value=v)
           for k, v in parse_add_config(args.add_config).items()]
    ops += [R.AlterableConfig(name=k.strip(), config_operation=DELETE, value=None)
            for k in args.delete_config.split(",") if k.strip()]
    if not ops:
        raise ValueError("--alter needs --add-config or --delete-config")
    resp = c.request(INCREMENTAL_ALTER_CONFIGS, validate_only=False, resources=[
        R.AlterConfigsResource(resource_type=rtype, resource_name=name, configs=ops)])
    r = resp.responses[0]
    if r.error_code:
        raise KafkaError(r.error_code, r.error_message or errors.name(r.error_code))
    print(f"Completed updating config for {label}." if label else
          "Completed updating default config for brokers in the cluster.")
    return 0


def _describe(c, rtype, name, label, everything) -> int:
    R = DESCRIBE_CONFIGS.Request
    resp = c.request(DESCRIBE_CONFIGS, include_synonyms=True, include_documentation=False,
                     resources=[R.DescribeConfigsResource(resource_type=rtype,
                                                          resource_name=name,
                                                          configuration_keys=None)])
    r = resp.results[0]
    if r.error_code:
        raise KafkaError(r.error_code, r.error_message or errors.name(r.error_code))
    dynamic = DYNAMIC_SOURCES if name else {3}
    entries = [e for e in r.configs if everything or e.config_source in dynamic]
    print(f"{'All' if everything else 'Dynamic'} configs for {label} are:" if label else
          "Default configs for brokers in the cluster are:")
    for e in entries:
        syn = ", ".join(f"{SOURCES.get(s.source, s.source)}:{s.name}={s.value}"
                        for s in e.synonyms)
        print(f"  {e.name}={e.value} sensitive={str(e.is_sensitive).lower()} "
              f"synonyms={{{syn}}}")
    return 0


def delete_records(args) -> int:
    try:
        with open(args.offset_json_file) as f:
            wanted = [(p["topic"], int(p["partition"]), int(p["offset"]))
                      for p in json.load(f)["partitions"]]
        R = DELETE_RECORDS.Request
        print("Executing records delete operation")
        results = []
        with ClusterClient.from_args(args) as cc:
            for topic, partition, offset in wanted:
                resp = cc.leader(topic, partition).request(
                    DELETE_RECORDS, timeout_ms=30000, topics=[R.DeleteRecordsTopic(
                        name=topic, partitions=[R.DeleteRecordsPartition(
                            partition_index=partition, offset=offset)])])
                results.append((topic, resp.topics[0].partitions[0]))
    except (KafkaError, OSError, ValueError, KeyError) as e:
        print(f"Error: {e}", file=sys.stderr)
        return 1
    print("Records delete operation completed:")
    failed = False
    for topic, p in results:
        if p.error_code:
            failed = True
            print(f"partition: {topic}-{p.partition_index}\terror: {errors.name(p.error_code)}")
        else:
            print(f"partition: {topic}-{p.partition_index}\tlow_watermark: {p.low_watermark}")
    return 1 if failed else 0


def log_dirs(args) -> int:
    R = DESCRIBE_LOG_DIRS.Request
    topics = [t for t in args.topic_list.split(",") if t]
    print("Querying brokers for log directories information")
    try:
        with ClusterClient.from_args(args) as cc:
            cc.refresh(topics or None)
            ids = ([int(b) for b in args.broker_list.split(",") if b] or sorted(cc.brokers))
            wanted = None
            if topics:
                wanted = [R.DescribableLogDirTopic(topic=t, partitions=cc.partitions(t))
                          for t in topics]
            out = []
            for b in ids:
                resp = cc.broker(b).request(DESCRIBE_LOG_DIRS, topics=wanted)
                out.append({"broker": b, "logDirs": [{
                    "logDir": d.log_dir,
                    "error": errors.name(d.error_code) if d.error_code else None,
                    "partitions": [{"partition": f"{t.name}-{p.partition_index}",
                                    "size": p.partition_size, "offsetLag": p.offset_lag,
                                    "isFuture": p.is_future_key}
                                   for t in d.topics for p in t.partitions]}
                    for d in resp.results]})
    except (KafkaError, OSError, ValueError) as e:
        print(f"Error: {e}", file=sys.stderr)
        return 1
    print(f"Received log directory information from brokers {','.join(map(str, ids))}")
    print(json.dumps({"brokers": out, "version": 1}))
    return 0
