"""``josefk mirror create-link | list-links | delete-link | create-topic | promote | failover |
reverse | resume-partition``: cluster links and mirror topics (docs/mirror.md, "Mirror topics"), as Confluent's
``kafka-cluster-links`` and ``kafka-mirrors`` do, over the Kafka protocol to the destination
cluster (``--bootstrap-server``): a link is a config resource of josefk's type
``CLUSTER_LINK`` (100) there, a mirror topic a topic with ``josefk.mirror.link`` and
``josefk.mirror.state``; the destination's brokers do the mirroring (`josefk.broker.links`).
``reverse`` runs on the old source, its link pointing at the promoted side."""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from josefk.broker.config import parse_properties
from josefk.tools.client import Client, KafkaError
from josefk.tools.tool_client import ClusterClient
from josefk.wire import errors
from josefk.wire.apis import (ALTER_CONFIGS, CREATE_TOPICS, DESCRIBE_CONFIGS,
                              INCREMENTAL_ALTER_CONFIGS, LIST_CONFIG_RESOURCES, METADATA)
from josefk.wire.types import ZERO_UUID, uuid_to_base64

CLUSTER_LINK, TOPIC = 100, 2
LINK, STATE, ACTIVE, STOPPED = "josefk.mirror.link", "josefk.mirror.state", "ACTIVE", "STOPPED"
SOURCE_ID = "josefk.mirror.source.topic.id"
STOPPED_AT = "josefk.mirror.stopped.offsets"
RESUME = "josefk.mirror.resume"  # "<nonce>:<partitions>", read by each partition's leader
PARTITIONS_KEY = "josefk.mirror.partitions"  # a link's partitions led by the broker asked
# the link's settings that are client settings for the source (broker.links.SECURITY_CONFIGS)
SECURITY_CONFIGS = ("sasl.mechanism", "ssl.truststore.location", "ssl.truststore.type",
                    "ssl.truststore.certificates", "ssl.ca.location", "ssl.keystore.location",
                    "ssl.keystore.type", "ssl.endpoint.identification.algorithm")
TOPIC_CONFIG_SOURCE = 1
LATEST = -1
SET, DELETE = 0, 1
POLL_S = 0.2


class MirrorError(Exception):
    pass


COMMANDS = ("create-link", "list-links", "delete-link", "create-topic", "promote", "failover",
            "reverse", "resume-partition")


def main(argv: list[str]) -> int:
    """``josefk mirror COMMAND ...``: one link command; 0, or 1 with its error printed."""
    parser = argparse.ArgumentParser(prog="josefk mirror")
    add_commands(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    try:
        args.func(args)
        return 0
    except (KafkaError, MirrorError, OSError, ValueError) as e:
        print(f"Error: {e}", file=sys.stderr)
        return 1


def add_commands(sub) -> None:
    """The link and mirror topic commands (`COMMANDS`)."""
    def command(name, help_, func):
        p = sub.add_parser(name, help=help_)
        p.add_argument("--bootstrap-server", required=True,
                       help="the destination cluster (the link's and mirror topics' home)")
        p.set_defaults(func=func)
        return p

    p = command("create-link", "create a cluster link to a source cluster", create_link)
    p.add_argument("--link", required=True)
    p.add_argument("--config", action="append", default=[], metavar="KEY=VALUE",
                   help="a link config, e.g. bootstrap.servers=SOURCE:9092 (repeatable)")
    p.add_argument("--config-file", help="a properties file of link configs")
    command("list-links", "list the cluster links", list_links)
    p = command("delete-link", "delete a cluster link (none of its mirrors active)",
                delete_link)
    p.add_argument("--link", required=True)
    def source_config(p):
        p.add_argument("--source-command-config", metavar="FILE",
                       help="client settings for the source cluster beyond the link's own "
                            "(its sasl.jaas.config, which the link does not show)")

    p = command("create-topic", "create a mirror topic of a source topic", create_topic)
    p.add_argument("--link", required=True)
    p.add_argument("--topic", required=True)
    p.add_argument("--replication-factor", type=int, default=-1)
    source_config(p)
    p = command("resume-partition", "resume mirror partitions that stopped (the source's log "
                                    "start passed them, or the source topic was recreated) at "
                                    "the source's log start; what is skipped is logged and "
                                    "counted", resume_partition)
    p.add_argument("--link", required=True)
    p.add_argument("--topic", required=True)
    p.add_argument("--partition", type=int, action="append", default=[],
                   help="a stopped partition (repeatable; default: every stopped one)")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds (default 60)")
    source_config(p)
    for name, help_ in (("promote", "stop mirroring once caught up with the source; the "
                                    "topic becomes writable"),
                        ("failover", "stop mirroring now, without the source; the topic "
                                     "becomes writable")):
        p = command(name, help_, promote if name == "promote" else failover)
        p.add_argument("--topic", required=True)
        p.add_argument("--timeout", type=float, default=60.0, help="seconds (default 60)")
        if name == "promote":
            source_config(p)
    p = command("reverse", "fail back: the topic here mirrors the promoted one the link "
                           "names, from where that one stopped", reverse)
    p.add_argument("--link", required=True, help="a link here to the promoted side")
    p.add_argument("--topic", required=True)
    source_config(p)


def _check(code, message) -> None:
    if code:
        raise KafkaError(code, message or errors.name(code))


def _source_topic(src: Client, topic: str):
    """The source's Metadata of ``topic`` (an error if it has none)."""
    R = METADATA.Request
    t = src.request(METADATA, allow_auto_topic_creation=False, topics=[
        R.MetadataRequestTopic(name=topic)]).topics[0]
    _check(t.error_code, f"source topic {topic}: {errors.name(t.error_code)}")
    return t


def _describe(c: Client, rtype: int, name: str, keys: list[str] | None = None) -> dict:
    R = DESCRIBE_CONFIGS.Request
    r = c.request(DESCRIBE_CONFIGS, include_synonyms=False, include_documentation=False,
                  resources=[R.DescribeConfigsResource(resource_type=rtype, resource_name=name,
                                                       configuration_keys=keys)]).results[0]
    _check(r.error_code, r.error_message)
    return {e.name: e.value for e in r.configs
            if rtype != TOPIC or e.config_source == TOPIC_CONFIG_SOURCE}


def _alter_all(c: Client, rtype: int, name: str, configs: dict) -> None:
    R = ALTER_CONFIGS.Request
    r = c.request(ALTER_CONFIGS, validate_only=False, resources=[R.AlterConfigsResource(
        resource_type=rtype, resource_name=name, configs=[
            R.AlterableConfig(name=k, value=v) for k, v in configs.items()])]).responses[0]
    _check(r.error_code, r.error_message)


def _links(c: Client) -> list[str]:
    resp = c.request(LIST_CONFIG_RESOURCES, resource_types=[CLUSTER_LINK])
    _check(resp.error_code, None)
    return sorted(r.resource_name for r in resp.config_resources)


def create_link(args) -> None:
    configs = parse_properties(Path(args.config_file).read_text()) if args.config_file else {}
    for kv in args.config:
        k, sep, v = kv.partition("=")
        if not sep:
            raise ValueError(f"--config {kv}: expected KEY=VALUE")
        configs[k.strip()] = v.strip()
    with Client(args.bootstrap_server, "josefk-mirror") as c:
        if args.link in _links(c):
            raise MirrorError(f"Cluster link {args.link} already exists")
        _alter_all(c, CLUSTER_LINK, args.link, configs)
    print(f"Cluster link '{args.link}' creation successfully completed.")


def _source(dest: Client, link: str, args) -> tuple[str, dict]:
    """The link's source cluster: its bootstrap servers and client settings (the link's own,
    then ``--source-command-config``'s)."""
    configs = _describe(dest, CLUSTER_LINK, link)
    props = {k: configs[k] for k in ("security.protocol", *SECURITY_CONFIGS) if configs.get(k)}
    path = getattr(args, "source_command_config", None)
    if path:
        props.update(parse_properties(Path(path).read_text()))
    return configs["bootstrap.servers"], props


def partition_status(bootstrap: str, link: str) -> list[dict]:
    """The state and lag of link ``link``'s mirror partitions, from each broker leading some
    (DescribeConfigs of the link, asking for `PARTITIONS_KEY`), by topic and partition."""
    out = []
    with ClusterClient(bootstrap, "josefk-mirror") as c:
        c.refresh([])
        for node in sorted(c.brokers):
            out += json.loads(_describe(c.broker(node), CLUSTER_LINK, link,
                                        [PARTITIONS_KEY]).get(PARTITIONS_KEY) or "[]")
    return sorted(out, key=lambda s: (s["topic"], s["partition"]))


def _shown(value) -> str:
    return "-" if value is None else str(value)


def list_links(args) -> None:
    """Each link, then each of its mirror partitions: its state and its lag in records, bytes
    and milliseconds."""
    with Client(args.bootstrap_server, "josefk-mirror") as c:
        names = _links(c)
        sources = {name: _describe(c, CLUSTER_LINK, name).get("bootstrap.servers")
                   for name in names}
    for name in names:
        print(f"Link name: '{name}', bootstrap.servers: '{sources[name]}'")
        for st in partition_status(args.bootstrap_server, name):
            state = "ACTIVE" if st["failure"] is None else f"STOPPED ({st['failure']})"
            print(f"\tTopic: {st['topic']}\tPartition: {st['partition']}\tState: {state}\t"
                  f"LagRecords: {_shown(st['lag_records'])}\t"
                  f"LagBytes: {_shown(st['lag_bytes'])}\tLagMs: {_shown(st['lag_ms'])}\t"
                  f"SkippedOffsets: {st['skipped']}")


def delete_link(args) -> None:
    with Client(args.bootstrap_server, "josefk-mirror") as c:
        if args.link not in _links(c):
            raise MirrorError(f"Cluster link {args.link} does not exist")
        _alter_all(c, CLUSTER_LINK, args.link, {})
    print(f"Cluster link '{args.link}' deletion successfully completed.")


def create_topic(args) -> None:
    with Client(args.bootstrap_server, "josefk-mirror") as dest:
        source_servers, props = _source(dest, args.link, args)
        with Client(source_servers, "josefk-mirror", props=props) as src:
            t = _source_topic(src, args.topic)
            configs = {k: v for k, v in _describe(src, TOPIC, args.topic).items()
                       if not k.startswith("josefk.mirror.")}  # a mirror's own, there
        configs.update({LINK: args.link, STATE: ACTIVE})
        if t.topic_id != ZERO_UUID:  # a source that has topic ids: a recreated one is noticed
            configs[SOURCE_ID] = uuid_to_base64(t.topic_id)
        R = CREATE_TOPICS.Request
        r = dest.request(CREATE_TOPICS, timeout_ms=30000, validate_only=False, topics=[
            R.CreatableTopic(name=args.topic, num_partitions=len(t.partitions),
                             replication_factor=args.replication_factor, assignments=[],
                             configs=[R.CreatableTopicConfig(name=k, value=v)
                                      for k, v in configs.items()])]).topics[0]
        _check(r.error_code, r.error_message)
    print(f"Created mirror topic {args.topic} ({len(t.partitions)} partitions) on cluster "
          f"link {args.link}.")


def _ends(bootstrap: str, topic: str, props: dict | None = None) -> dict[int, int]:
    with ClusterClient(bootstrap, "josefk-mirror", props=props) as c:
        return c.list_offsets(topic, c.partitions(topic), LATEST)


def _until(check, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise MirrorError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(POLL_S)


def _stop(args, wait_for_source: bool) -> dict[int, int]:
    """Stop the mirror topic (once caught up with the source's end, if asked) and return the
    destination's end offset per partition once every leader stopped mirroring."""
    with Client(args.bootstrap_server, "josefk-mirror") as dest:
        configs = _describe(dest, TOPIC, args.topic)
        if configs.get(STATE) != ACTIVE or not configs.get(LINK):
            raise MirrorError(f"Topic {args.topic} is not an active mirror topic")
        if wait_for_source:
            source, props = _source(dest, configs[LINK], args)
            target = _ends(source, args.topic, props)
            _until(lambda: all(_ends(args.bootstrap_server, args.topic).get(p, -1) >= end
                               for p, end in target.items()), args.timeout,
                   f"{args.topic} to reach the source's end offsets {target}")
        _alter_topic(dest, args.topic, {STATE: STOPPED})
    with ClusterClient(args.bootstrap_server, "josefk-mirror") as c:
        leaders = {p.leader_id for p in c.refresh([args.topic]).topics[0].partitions}
        _until(lambda: all(_describe(c.broker(b), TOPIC, args.topic).get(STATE) == STOPPED
                           for b in leaders), args.timeout,
               f"every leader of {args.topic} to stop mirroring")
    # the leaders stopped appending: the ends settle once their followers have it all
    last: list = [None]

    def settled():
        ends = _ends(args.bootstrap_server, args.topic)
        done, last[0] = ends == last[0], ends
        return ends if done else None
    ends = _until(settled, args.timeout, f"the end offsets of {args.topic} to settle")
    with Client(args.bootstrap_server, "josefk-mirror") as dest:  # where a reverse starts
        _alter_topic(dest, args.topic, {STOPPED_AT: ",".join(f"{p}:{o}" for p, o in
                                                             sorted(ends.items()))})
    return ends


def _alter_topic(c: Client, topic: str, wanted: dict) -> None:
    """Set (a value) or delete (None) some of ``topic``'s configs."""
    R = INCREMENTAL_ALTER_CONFIGS.Request
    r = c.request(INCREMENTAL_ALTER_CONFIGS, validate_only=False, resources=[
        R.AlterConfigsResource(resource_type=TOPIC, resource_name=topic, configs=[
            R.AlterableConfig(name=k, config_operation=SET if v is not None else DELETE,
                              value=v) for k, v in wanted.items()])])
    _check(r.responses[0].error_code, r.responses[0].error_message)


def _report(args, verb: str, ends: dict[int, int]) -> None:
    print(f"Topic {args.topic} {verb}: mirroring stopped, the topic is writable.")
    for p, end in sorted(ends.items()):
        print(f"Partition: {p}\tOffset: {end}")


def promote(args) -> None:
    _report(args, "promoted", _stop(args, wait_for_source=True))


def failover(args) -> None:
    _report(args, "failed over", _stop(args, wait_for_source=False))


def reverse(args) -> None:
    """Fail back: the topic here (the old source) becomes a mirror of the topic the link
    names (the promoted or failed-over mirror), from where that one stopped mirroring; refused
    where this side has records past that point (they were never mirrored: they would be
    overwritten)."""
    with Client(args.bootstrap_server, "josefk-mirror") as here:
        other, props = _source(here, args.link, args)
        with Client(other, "josefk-mirror", props=props) as there:
            configs = _describe(there, TOPIC, args.topic)
            t = _source_topic(there, args.topic)
        if configs.get(STATE) != STOPPED or not configs.get(STOPPED_AT):
            raise MirrorError(f"Topic {args.topic} at {other} is not a promoted or failed-over "
                              "mirror topic")
        stopped = {int(p): int(o) for p, _, o in
                   (entry.partition(":") for entry in configs[STOPPED_AT].split(","))}
        ahead = {p: end for p, end in _ends(args.bootstrap_server, args.topic).items()
                 if end > stopped.get(p, 0)}
        if ahead:
            raise MirrorError(
                f"Topic {args.topic} has records here past where {other} stopped mirroring "
                f"it ({', '.join(f'partition {p}: {end} > {stopped.get(p, 0)}' for p, end in sorted(ahead.items()))}): "
                "they were never mirrored and a reverse would lose them")
        _alter_topic(here, args.topic, {
            LINK: args.link, STATE: ACTIVE, STOPPED_AT: None,
            SOURCE_ID: uuid_to_base64(t.topic_id) if t.topic_id != ZERO_UUID else None})
    print(f"Topic {args.topic} now mirrors {other} over cluster link {args.link}, from "
          + ", ".join(f"partition {p} offset {o}" for p, o in sorted(stopped.items())) + ".")


def resume_partition(args) -> None:
    """Resume stopped partitions of mirror topic ``args.topic`` at the source's log start (the
    topic config RESUME, read by each partition's leader; the source topic's id is taken
    anew, for a topic recreated there), and wait until their leaders did."""
    def stopped():
        return {st["partition"]: st for st in partition_status(args.bootstrap_server, args.link)
                if st["topic"] == args.topic and st["failure"] is not None}

    with Client(args.bootstrap_server, "josefk-mirror") as dest:
        configs = _describe(dest, TOPIC, args.topic)
        if configs.get(STATE) != ACTIVE or configs.get(LINK) != args.link:
            raise MirrorError(f"Topic {args.topic} is not an active mirror topic of cluster "
                              f"link {args.link}")
        before = stopped()
        wanted = set(args.partition) or set(before)
        if not wanted or not wanted <= set(before):
            raise MirrorError(f"No stopped partition {sorted(wanted - set(before)) or ''} of "
                              f"{args.topic} to resume (stopped: {sorted(before) or 'none'})")
        source, props = _source(dest, args.link, args)
        with Client(source, "josefk-mirror", props=props) as src:
            t = _source_topic(src, args.topic)
        command = f"{time.time_ns()}:{','.join(map(str, sorted(wanted)))}"
        _alter_topic(dest, args.topic, {
            RESUME: command,
            SOURCE_ID: uuid_to_base64(t.topic_id) if t.topic_id != ZERO_UUID else None})

    def done():
        now = {st["partition"]: st for st in partition_status(args.bootstrap_server, args.link)
               if st["topic"] == args.topic}
        if all(p in now and now[p]["failure"] is None and now[p]["resumes"] > before[p]["resumes"]
               for p in wanted):
            return now
        return None
    resumed = _until(done, args.timeout,
                     f"the leaders of {args.topic} to resume partitions {sorted(wanted)}")
    print(f"Topic {args.topic}: mirroring resumed at the source's log start.")
    for p in sorted(wanted):
        print(f"Partition: {p}\tWas: {before[p]['failure']}\t"
              f"SkippedOffsets: {resumed[p]['skipped'] - before[p]['skipped']}")
