"""`josefk console`: a server-rendered web console for a josefk cluster (standard library HTTP
server on threads, pages built from the brokers' and the Schema Registry's answers on every
request; the pages carry their own stylesheet and script and load nothing from elsewhere).

Pages: the cluster and its brokers, topics with their record counts and sizes, each topic's
partitions (leader, replicas, ISR, offsets, size), configs with their sources (filtered, the
ones set anywhere marked) and the topic's schemas, a message browser (every partition at once
or one, newest first, oldest first, from an offset or a time, page by page, a live tail, search
in keys and values; one line a record, opening onto JSON pretty-printed; records in Confluent's
wire format decoded with their Avro, JSON Schema or Protobuf schema from the registry),
consumer groups with members, topics, lag and coordinator, each with its assignments, lag per
partition and a lag chart, broker configs, ACLs, SCRAM users and client quotas, and the Schema
Registry's subjects, versions and schemas (``--schema-registry`` or ``schema.registry.url``),
and Kafka Connect's connectors, tasks and offsets (``--connect-url``, through Connect's REST API).
Actions (create, delete a topic, add partitions, produce a record, alter a topic config, delete
records, reset a group's offsets, add or delete an ACL or a SCRAM credential, set a quota;
restart, pause, resume, stop or delete a connector, restart a task, reset its offsets) ask
for confirmation first, and are refused to pages of other sites.
"""
from __future__ import annotations

import collections
import json
import os
import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlencode, urlsplit

from josefk.broker.config import parse_properties
from josefk.broker.security import authorizer as az
from josefk.broker.security.quotas import CLIENT, FETCH as FETCH_RATE, PRODUCE as PRODUCE_RATE
from josefk.broker.security.quotas import REQUEST as REQUEST_RATE, USER
from josefk.broker.security.sasl import (MIN_ITERATIONS, SCRAM_CODES, SCRAM_MECHANISMS,
                                         salted_password)
from josefk.tools import web_html as h
from josefk.tools.client import KafkaError
from josefk.tools.web_connect import (ConnectClient, ConnectError, connect_client, connect_page,
                                      connect_urls, connector_page, delete_action, pause_action,
                                      reset_connector_offsets_action, restart_action,
                                      restart_task_action, resume_action, stop_action)
from josefk.tools.groups_cli import (commit_offsets, committed_offsets, decode_assignment,
                                     describe_group)
from josefk.tools.ops_cli import SOURCES
from josefk.tools.quotas_cli import entity_text
from josefk.tools.tool_client import EARLIEST, LATEST, ClusterClient, partition_for_key
from josefk.tools.web_schemas import (PROTOBUF, Decoder, RegistryClient, RegistryError,
                                      registry_settings, schema_type)
from josefk.wire import errors
from josefk.wire.apis import (ALTER_CLIENT_QUOTAS, ALTER_USER_SCRAM_CREDENTIALS, CREATE_ACLS,
                              CREATE_PARTITIONS, CREATE_TOPICS, DELETE_ACLS, DELETE_RECORDS,
                              DELETE_TOPICS, DESCRIBE_ACLS, DESCRIBE_CLIENT_QUOTAS,
                              DESCRIBE_CONFIGS, DESCRIBE_GROUPS, DESCRIBE_LOG_DIRS,
                              DESCRIBE_USER_SCRAM_CREDENTIALS, INCREMENTAL_ALTER_CONFIGS,
                              LIST_GROUPS, LIST_OFFSETS)
from josefk.wire.records import build_batch

TOPIC, BROKER = 2, 4
DEFAULT_SOURCE = 5  # DEFAULT_CONFIG: a config nobody set
BROWSE_SCAN_LIMIT = 10_000  # records a page of the browser looks through at most
BROWSE_ROUNDS = 200  # fetch rounds it makes at most
LAZY_ROUNDS = 4  # rounds that read only the partitions drained
FETCH_BYTES, FETCH_PARTITION_BYTES = 16 << 20, 256 << 10  # what one of its fetches reads
EARLIEST_LOCAL = -4  # ListOffsets: the local log's start (KIP-1005, tiered storage)
LAG_HISTORY = 360


def add_commands(sub, common):
    c = common(sub.add_parser("console", help="serve the web console"))
    c.add_argument("--host", default="127.0.0.1", help="the address to serve on")
    c.add_argument("--port", type=int, default=8080, help="the port to serve on")
    c.add_argument("--lag-interval", type=float, default=10.0,
                   help="seconds between samples of every group's lag (for the lag chart)")
    c.add_argument("--schema-registry", metavar="URL",
                   help="the Schema Registry to show and decode records with (else "
                        "schema.registry.url in the --command-config file, if any)")
    c.add_argument("--connect-url", action="append", default=[], metavar="URL",
                   type=connect_urls,
                   help="a Kafka Connect worker's REST API to show and act on (repeatable, or "
                        "a comma-separated list: the workers of one Connect cluster; "
                        "http://user:password@host:8083 for basic authentication)")
    c.set_defaults(func=serve_console)


class ConsoleData:
    """What the pages show, asked from the cluster (one client, used by one thread at a time),
    from the Schema Registry and from Kafka Connect, if there are."""

    def __init__(self, bootstrap: str, props: dict | None = None,
                 registry: RegistryClient | None = None, connect: ConnectClient | None = None):
        self.bootstrap, self.props = bootstrap, props
        self.lock = threading.Lock()
        self.cc = ClusterClient(bootstrap, "josefk-console", props)
        self.lag = collections.defaultdict(lambda: collections.deque(maxlen=LAG_HISTORY))
        self.registry = registry
        self.decoder = Decoder(registry) if registry else None
        self.connect = connect

    def call(self, fn, *args):
        """Run ``fn(cluster_client, *args)`` under the lock, reconnecting once if needed."""
        with self.lock:
            try:
                return fn(self.cc, *args)
            except (OSError, ConnectionError):
                self.cc.close()
                self.cc = ClusterClient(self.bootstrap, "josefk-console", self.props)
                return fn(self.cc, *args)

    def sample_lag(self) -> None:
        now = time.time()
        for group, _state, _node, _members, _topics, lag in self.call(groups_view):
            self.lag[group].append((now, lag))


# -- questions to the cluster (each takes the ClusterClient) ----------------------------------------
def list_groups(cc) -> list[tuple[str, str, int]]:
    """(group id, state, coordinator) of every group of the cluster (each broker lists the
    groups it coordinates)."""
    out = {}
    for node in cc.refresh([]).brokers:
        resp = cc.broker(node.node_id).request(LIST_GROUPS, states_filter=[], types_filter=[])
        out.update((g.group_id, (g.group_state, node.node_id)) for g in resp.groups)
    return [(g, state, node) for g, (state, node) in sorted(out.items())]


def offsets_of(cc, tps, timestamp) -> dict:
    """{(topic, partition): offset} for ``timestamp`` (EARLIEST, LATEST), one ListOffsets per
    leader for every topic together; partitions whose leader or offset is unknown are left
    out (a topic deleted since its offsets were committed)."""
    R = LIST_OFFSETS.Request
    by_leader: dict[int, tuple] = {}  # id(client) -> (client, {topic: [partitions]})
    for t, p in tps:
        try:
            leader = cc.leader(t, p)
        except KafkaError:
            continue
        by_leader.setdefault(id(leader), (leader, {}))[1].setdefault(t, []).append(
            R.ListOffsetsPartition(partition_index=p, timestamp=timestamp,
                                   current_leader_epoch=-1))
    out = {}
    for leader, topics in by_leader.values():
        resp = leader.request(LIST_OFFSETS, replica_id=-1, isolation_level=0, topics=[
            R.ListOffsetsTopic(name=t, partitions=ps) for t, ps in topics.items()])
        out.update(((t.name, p.partition_index), p.offset) for t in resp.topics
                   for p in t.partitions if not p.error_code)
    return out


def lag_rows(committed: dict, owner: dict, partitions: dict, starts: dict,
             ends: dict) -> list[tuple]:
    """(topic, partition, committed, log end, lag, member) for every partition of every topic
    the group has committed an offset on or is assigned (``partitions``: {topic: [partition]}
    as the cluster knows them). A partition without a committed offset lags by its whole log,
    from the log start (kafka-consumer-groups shows '-' there, but the group has all of it to
    read); lag is None where the log end is unknown."""
    topics = {t for t, _ in committed} | {t for t, _ in owner}
    tps = set(committed) | set(owner) | {(t, p) for t in topics for p in partitions.get(t, ())}
    rows = []
    for t, p in sorted(tps):
        done, end = committed.get((t, p)), ends.get((t, p))
        base = done if done is not None else starts.get((t, p))
        rows.append((t, p, done, end, None if end is None or base is None else
                     max(end - base, 0), owner.get((t, p))))
    return rows


def total_lag(rows) -> int:
    return sum(r[4] for r in rows if r[4] is not None)


def group_lag(cc, group, description=None) -> list[tuple]:
    """``lag_rows`` of ``group`` (``description``: its DescribeGroups answer, if asked)."""
    c = cc.coordinator(group)
    committed = committed_offsets(c, group)
    d = description or describe_group(c, group)
    owner = {tp: m.member_id for m in d.members for tp in decode_assignment(m.member_assignment)}
    return _lag_of(cc, [(committed, owner)])[0]


def _lag_of(cc, groups) -> list[list[tuple]]:
    """``lag_rows`` of several groups' (committed, owner), asking every leader once."""
    partitions = partitions_of(cc, {t for committed, owner in groups
                                    for t, _ in [*committed, *owner]})
    tps = [(t, p) for t, ps in partitions.items() for p in ps]
    starts, ends = offsets_of(cc, tps, EARLIEST), offsets_of(cc, tps, LATEST)
    return [lag_rows(committed, owner, partitions, starts, ends) for committed, owner in groups]


def partitions_of(cc, topics) -> dict:
    """{topic: [partition]} of those of ``topics`` the cluster has (a group keeps the offsets
    of a topic deleted since): one Metadata request, one a topic if that one fails."""
    try:
        cc.refresh(sorted(topics))
        known = topics
    except KafkaError:
        known = []
        for t in sorted(topics):
            try:
                cc.refresh([t])
                known.append(t)
            except KafkaError:
                continue
    return {t: cc.partitions(t) for t in known}


def groups_view(cc) -> list[tuple]:
    """(group, state, coordinator, members, topics, total lag) of every group, each
    coordinator asked once for its groups' descriptions."""
    listed = list_groups(cc)
    by_node: dict[int, list[str]] = {}
    for g, _state, node in listed:
        by_node.setdefault(node, []).append(g)
    described = {}
    for node, names in by_node.items():
        resp = cc.broker(node).request(DESCRIBE_GROUPS, groups=names,
                                       include_authorized_operations=False)
        described.update((d.group_id, d) for d in resp.groups if not d.error_code)
    gathered = []
    for g, _state, node in listed:
        try:
            committed = committed_offsets(cc.broker(node), g)
        except KafkaError:
            committed = {}
        d = described.get(g)
        owner = {tp: m.member_id for m in (d.members if d else [])
                 for tp in decode_assignment(m.member_assignment)}
        gathered.append((committed, owner))
    lags = _lag_of(cc, gathered)
    return [(g, state, node, len(described[g].members) if g in described else 0,
             sorted({r[0] for r in rows}), total_lag(rows))
            for (g, state, node), rows in zip(listed, lags)]


def topics_view(cc) -> tuple:
    """(metadata, {(topic, partition): records}, {topic: bytes}) of the whole cluster: one
    ListOffsets per leader and DescribeLogDirs per broker for every topic together. Records
    are log end minus log start (what compaction removed still counts)."""
    md = cc.refresh()
    tps = [(t.name, p.partition_index) for t in md.topics for p in t.partitions]
    starts, ends = offsets_of(cc, tps, EARLIEST), offsets_of(cc, tps, LATEST)
    counts = {tp: ends[tp] - starts[tp] for tp in tps if tp in starts and tp in ends}
    by_topic: dict[str, int] = collections.Counter()
    for (t, _p), n in log_sizes(cc, md.brokers, None).items():
        by_topic[t] += n
    return md, counts, by_topic


def log_sizes(cc, brokers, topics) -> dict:
    """{(topic, partition): bytes of its largest replica} from every broker's DescribeLogDirs
    of ``topics`` (DescribableLogDirTopic entries; None: all)."""
    sizes: dict[tuple, int] = {}
    for b in brokers:
        for d in cc.broker(b.node_id).request(DESCRIBE_LOG_DIRS, topics=topics).results:
            for tt in d.topics:
                for p in tt.partitions:
                    key = (tt.name, p.partition_index)
                    sizes[key] = max(sizes.get(key, 0), p.partition_size)
    return sizes


def describe_configs(cc, rtype, name, node=None):
    R = DESCRIBE_CONFIGS.Request
    c = cc.broker(node) if node is not None else cc.bootstrap
    r = c.request(DESCRIBE_CONFIGS, include_synonyms=True, include_documentation=False,
                  resources=[R.DescribeConfigsResource(resource_type=rtype, resource_name=name,
                                                       configuration_keys=None)]).results[0]
    if r.error_code:
        raise KafkaError(r.error_code, r.error_message)
    return r.configs


def topic_view(cc, topic):
    """(partitions, log starts, ends, local sizes, configs, tiered) of ``topic``; ``tiered``,
    for a topic with remote.storage.enable, is (local log starts, remote log sizes), else
    None."""
    md = cc.refresh([topic])
    t = cc.topics[topic]
    parts = sorted(t.partitions, key=lambda p: p.partition_index)
    ids = [p.partition_index for p in parts]
    starts = cc.list_offsets(topic, ids, EARLIEST)
    ends = cc.list_offsets(topic, ids, LATEST)
    R = DESCRIBE_LOG_DIRS.Request
    sizes = {p: n for (_t, p), n in log_sizes(cc, md.brokers, [R.DescribableLogDirTopic(
        topic=topic, partitions=ids)]).items()}
    configs = describe_configs(cc, TOPIC, topic)
    tiered = None
    if any(c.name == "remote.storage.enable" and c.value == "true" for c in configs):
        tiered = (cc.list_offsets(topic, ids, EARLIEST_LOCAL),
                  cc.remote_log_sizes(t.topic_id, ids))
    return parts, starts, ends, sizes, configs, tiered


# -- the message browser: several partitions read together, page by page ------------------------
SEEKS = ("newest", "oldest", "offset", "timestamp")


@dataclass
class BrowsePage:
    """A page of records, ``records`` as (partition, record); ``cursor``: where the next page
    starts in each partition (it reads below it going back from the newest, else from it);
    ``more``: whether records remain past the cursor; ``scanned``: records looked at."""
    records: list
    cursor: dict
    more: bool
    scanned: int


def merge_page(read, starts: dict, bounds: dict, newest: bool, limit: int,
               match=None, scan_limit: int = BROWSE_SCAN_LIMIT) -> BrowsePage:
    """The next ``limit`` records of several partitions merged by timestamp (each partition's
    in offset order): from ``starts`` ({partition: offset}) up to ``bounds`` (log end offsets),
    or going back from ``starts`` down to ``bounds`` (log start offsets) when ``newest``;
    ``match(record)`` picks records (a search), looking at ``scan_limit`` records at most.
    ``read({partition: (lo, hi)})`` answers every record of each range, in offset order.
    Each partition is read in windows that double as it is drained, so a page reads about
    ``limit`` records from the partitions it shows whichever way they are spread; after
    ``LAZY_ROUNDS`` the partitions running short are read on together, so a long search
    takes a few rounds, not one a partition."""
    cursor = dict(starts)
    edge = dict(starts)  # the next window starts (or, going back, ends) here
    buffers = {p: collections.deque() for p in starts}
    window = {p: max(1, -(-limit // max(len(starts), 1))) for p in starts}
    most = max(limit, scan_limit // max(len(starts), 1))  # the largest window
    out, scanned, rounds = [], 0, 0

    def left(p):
        return edge[p] > bounds[p] if newest else edge[p] < bounds[p]
    while len(out) < limit and scanned < scan_limit:
        if any(not buffers[p] and left(p) for p in starts):
            if rounds >= BROWSE_ROUNDS:
                break
            rounds += 1
            ranges = {}
            # after a few rounds, every partition short of its next window reads on too
            # (else partitions drained one after another take a round each)
            wide = rounds > LAZY_ROUNDS
            for p in (p for p in starts if left(p) and (
                    not buffers[p] or wide and len(buffers[p]) < window[p])):
                if newest:
                    ranges[p] = (max(bounds[p], edge[p] - window[p]), edge[p])
                else:
                    ranges[p] = (edge[p], min(bounds[p], edge[p] + window[p]))
                window[p] = min(window[p] * 2, most)
            for p, records in read(ranges).items():
                lo, hi = ranges[p]
                buffers[p].extend(reversed(records) if newest else records)
                edge[p] = lo if newest else hi
            continue
        heads = [(buf[0].timestamp, p, buf[0].offset) for p, buf in buffers.items() if buf]
        if not heads:
            break
        _ts, p, _off = max(heads) if newest else min(heads)
        r = buffers[p].popleft()
        scanned += 1
        cursor[p] = r.offset if newest else r.offset + 1
        if match is None or match(r):
            out.append((p, r))
    for p in starts:  # all it read was shown or passed over (control records, gaps)
        if not buffers[p]:
            cursor[p] = edge[p]
    more = any(cursor[p] > bounds[p] if newest else cursor[p] < bounds[p] for p in starts)
    return BrowsePage(out, cursor, more, scanned)


def browse(cc, topic, partition, seek, offset, timestamp, cursor, limit, match) -> tuple:
    """(the topic's partitions, the partitions shown, a BrowsePage) of ``topic``: partition
    ``partition`` (None: all), newest first, oldest first, from ``offset`` or from
    ``timestamp`` (ms) on, continuing from ``cursor`` (a page's) when given."""
    cc.refresh([topic])
    partitions = cc.partitions(topic)
    shown = partitions if partition is None else [partition]
    if partition is not None and partition not in partitions:
        raise KafkaError(errors.UNKNOWN_TOPIC_OR_PARTITION, f"{topic}-{partition}")
    first = cc.list_offsets(topic, shown, EARLIEST)
    ends = cc.list_offsets(topic, shown, LATEST)
    newest = seek == "newest"
    if cursor:
        starts = {p: max(first[p], min(ends[p], cursor.get(p, ends[p] if newest else
                                                          first[p]))) for p in shown}
    elif newest:
        starts = ends
    elif seek == "timestamp":
        at = cc.list_offsets(topic, shown, timestamp)
        starts = {p: ends[p] if at[p] < 0 else at[p] for p in shown}
    elif seek == "offset":
        starts = {p: max(first[p], min(ends[p], offset)) for p in shown}
    else:
        starts = first
    page = merge_page(lambda ranges: cc.read_ranges(topic, ranges, FETCH_BYTES,
                                                    FETCH_PARTITION_BYTES), starts,
                      first if newest else ends, newest, limit, match)
    return partitions, shown, page


def record_matcher(text: str | None, where: str):
    """A search's test: ``text`` (ASCII letters in either case) in the record's key, its
    value, or either (``where``: key, value, any); None without ``text``."""
    if not text:
        return None
    needle = text.encode().lower()

    def has(data):
        return data is not None and needle in bytes(data).lower()
    if where == "key":
        return lambda r: has(r.key)
    if where == "value":
        return lambda r: has(r.value)
    return lambda r: has(r.key) or has(r.value)


def parse_cursor(text: str | None) -> dict:
    """A page's cursor, ``partition:offset`` pairs separated by commas."""
    out = {}
    for pair in (text or "").split(","):
        if pair.strip():
            p, _, off = pair.partition(":")
            out[int(p)] = int(off)
    return out


def cursor_text(cursor: dict) -> str:
    return ",".join(f"{p}:{off}" for p, off in sorted(cursor.items()))


# -- pages ---------------------------------------------------------------------------------------------
def overview_page(data: ConsoleData, _query) -> str:
    md = data.call(lambda cc: cc.refresh())
    groups = data.call(list_groups)
    brokers = h.table(["Id", "Host", "Port", "Rack", "Controller"], [
        (h.link(f"/brokers/{b.node_id}", b.node_id), h.e(b.host), h.e(b.port), h.e(b.rack or ""),
         h.badge("controller", "ok") if b.node_id == md.controller_id else "")
        for b in sorted(md.brokers, key=lambda b: b.node_id)], "brokers")
    tiles = [("brokers", len(md.brokers)), ("controller", h.e(md.controller_id)),
             ("topics", h.link("/topics", len(md.topics))),
             ("partitions", sum(len(t.partitions) for t in md.topics)),
             ("consumer groups", h.link("/groups", len(groups)))]
    if data.registry:
        try:
            tiles.append(("schema subjects", h.link("/schemas", len(data.registry.subjects()))))
        except RegistryError:
            tiles.append(("schema subjects", "<span class='muted'>unreachable</span>"))
    return h.page("Cluster", f"<p id='cluster' class='muted'>Cluster id <b>{h.e(md.cluster_id)}"
                  f"</b></p>{h.stats(tiles)}{h.card('Brokers', brokers)}", "cluster")


def topics_page(data: ConsoleData, query) -> str:
    md, counts, sizes = data.call(topics_view)
    needle = _first(query, "filter") or ""
    rows = []
    for t in sorted(md.topics, key=lambda t: t.name):
        if needle not in t.name:
            continue
        rf = len(t.partitions[0].replica_nodes) if t.partitions else 0
        under = sum(len(p.isr_nodes) < len(p.replica_nodes) for p in t.partitions)
        records = sum(counts.get((t.name, p.partition_index), 0) for p in t.partitions)
        rows.append((h.link(f"/topics/{h.q(t.name)}", t.name), len(t.partitions), rf, under,
                     f"{records:,}", h.size(sizes.get(t.name, 0)),
                     h.badge("internal") if t.is_internal else ""))
    toolbar = (f"<div class='toolbar'><form class='bar' method='get' id='filter'>"
               f"{h.field('filter', 'Name contains', needle, size=24)}"
               f"<button type='submit'>Filter</button></form>"
               f"<a class='button' href='/create-topic'>Create topic</a></div>")
    return h.page("Topics", h.card("", toolbar + h.table(
        ["Topic", "Partitions", "Replication factor", "Under-replicated", "Messages", "Size",
         ""], rows, "topics", num={1, 2, 3, 4, 5})), "topics", flash=_first(query, "done"))


def config_table(configs, table_id: str = "configs", dynamic: bool = False) -> str:
    """Configs with their sources, a filter, and the ones set anywhere (not defaults) marked,
    with a box to show only those; ``dynamic``: a column saying whether each can change at
    run time (broker configs)."""
    rows, marks = [], []
    for c in sorted(configs, key=lambda c: c.name):
        source = SOURCES.get(c.config_source, c.config_source)
        row = (h.e(c.name), "<span class='muted'>(sensitive)</span>" if c.is_sensitive else
               h.e(c.value), h.e(source))
        rows.append(row + (("no" if c.read_only else "yes",) if dynamic else ()))
        marks.append("override" if c.config_source not in (DEFAULT_SOURCE, 0) else "")
    headers = ["Name", "Value", "Source"] + (["Dynamic"] if dynamic else [])
    return h.filter_box(table_id) + h.table(headers, rows, table_id, classes=marks)


def topic_page(data: ConsoleData, query, topic) -> str:
    parts, starts, ends, sizes, configs, tiered = data.call(topic_view, topic)
    rows = [(p.partition_index, p.leader_id if p.leader_id >= 0 else "none",
             ",".join(map(str, p.replica_nodes)), ",".join(map(str, p.isr_nodes)),
             starts[p.partition_index], ends[p.partition_index],
             ends[p.partition_index] - starts[p.partition_index], sizes.get(p.partition_index, 0),
             h.link(f"/topics/{h.q(topic)}/messages?partition={p.partition_index}", "browse"))
            for p in parts]
    headers = ["Partition", "Leader", "Replicas", "ISR", "Start offset", "End offset",
               "Messages", "Size (bytes)", ""]
    num = {0, 4, 5, 6, 7}
    tiles = [("partitions", len(parts)),
             ("replication factor", len(parts[0].replica_nodes) if parts else 0),
             ("messages", f"{sum(r[6] for r in rows):,}"),
             ("size", h.size(sum(sizes.values()))),
             ("under-replicated", sum(len(p.isr_nodes) < len(p.replica_nodes) for p in parts))]
    if tiered is not None:  # tiered storage: the local log's start and the remote log's size
        local_starts, remote_sizes = tiered
        rows = [(*r[:5], local_starts[r[0]], r[5], r[6], r[7], remote_sizes[r[0]], r[8])
                for r in rows]
        headers[5:8] = ["Local start offset", "End offset", "Messages", "Local size (bytes)",
                        "Remote size (bytes)"]
        num = {0, 4, 5, 6, 7, 8, 9}
        tiles[3:4] = [("local size", h.size(sum(sizes.values()))),
                      ("remote size", h.size(sum(remote_sizes.values())))]
    choices = [("", "by key (murmur2)")] + [(p.partition_index, p.partition_index)
                                            for p in parts]
    at = f"/topics/{h.q(topic)}"
    actions = h.actions([
        ("Produce a record", h.form(
            f"{at}/produce", h.select("partition", "Partition", choices) +
            h.field("key", "Key (empty: null)", size=16) + h.textarea("value", "Value", 2, 30) +
            h.textarea("headers", "Headers (name=value, one a line)", 2, 30), "Produce",
            "produce")),
        ("Alter a config", h.form(f"{at}/config", h.field("name", "Config", size=22) +
                                  h.field("value", "Value (empty: back to default)"),
                                  "Alter config", "alter-config")),
        ("Add partitions", h.form(f"{at}/partitions", h.field(
            "count", "Partitions in all", len(parts), "number", size=6), "Add partitions",
            "add-partitions")),
        ("Delete records", h.form(
            f"{at}/delete-records", h.select("partition", "Partition", [
                (p.partition_index, p.partition_index) for p in parts]) +
            h.field("offset", "Before offset"), "Delete records", "delete-records",
            danger=True)),
        ("Delete the topic", h.form(f"{at}/delete", "", "Delete topic", "delete-topic",
                                    danger=True))])
    schemas = h.card("Schemas", topic_schemas(data, topic)) if data.registry else ""
    browse_link = (f"<p><a class='button' href='{at}/messages'>Browse messages</a></p>")
    return h.page(topic, h.stats(tiles) + browse_link + schemas +
                  h.card("Partitions", h.table(headers, rows, "partitions", num=num)) +
                  h.card("Actions", actions) +
                  h.card("Configs", config_table(configs)),
                  "topics", [("Topics", "/topics")], flash=_first(query, "done"))


def topic_schemas(data: ConsoleData, topic: str) -> str:
    """The latest schemas of the topic's key and value subjects (TopicNameStrategy)."""
    rows = []
    for part in ("key", "value"):
        subject = f"{topic}-{part}"
        try:
            v = data.registry.version(subject, "latest")
        except RegistryError as err:
            if err.code == 40401:
                continue
            return f"<p class='muted' id='topic-schemas'>{h.e(err)}</p>"
        rows.append((part, h.link(f"/schemas/{h.q(subject)}", subject),
                     h.link(f"/schemas/{h.q(subject)}/versions/{v['version']}", v["version"]),
                     type_badge(v), h.link(f"/schemas/ids/{v['id']}", v["id"])))
    if not rows:
        return (f"<p class='muted' id='topic-schemas'>No schemas registered under "
                f"{h.e(topic)}-key or {h.e(topic)}-value.</p>")
    return h.table(["Of", "Subject", "Latest version", "Type", "Id"], rows, "topic-schemas")


def messages_page(data: ConsoleData, query, topic) -> str:
    chosen = _first(query, "partition") or "all"
    partition = None if chosen == "all" else int(chosen)
    offset = _int(_first(query, "offset"))
    timestamp = _int(_first(query, "timestamp"))
    seek = _first(query, "seek") or ("offset" if offset is not None else
                                     "timestamp" if timestamp is not None else "newest")
    if seek not in SEEKS or (seek == "offset" and offset is None) or \
            (seek == "timestamp" and timestamp is None):
        raise ValueError(f"seek {seek} needs {'an offset' if seek == 'offset' else 'a time'}"
                         if seek in SEEKS else f"seek must be one of {', '.join(SEEKS)}")
    limit = max(1, min(int(_first(query, "limit") or 50), 1000))
    text, where = _first(query, "q") or "", _first(query, "in") or "any"
    cursor = parse_cursor(_first(query, "cursor"))
    live = _first(query, "live") == "1" and seek == "newest" and not cursor
    partitions, shown, page = data.call(browse, topic, partition, seek, offset, timestamp,
                                        cursor, limit, record_matcher(text, where))
    form = ("<form method='get' id='browse' class='bar'>" +
            h.select("partition", "Partition", [("all", "all")] + [(p, p) for p in partitions],
                     chosen) +
            h.select("seek", "Show", [("newest", "newest first"), ("oldest", "oldest first"),
                                      ("offset", "from offset"), ("timestamp", "from time")],
                     seek) +
            h.field("offset", "Offset", "" if offset is None else offset, size=8,
                    extra=" data-seek='offset'") +
            "<label>Time<input type='datetime-local' step='1' id='from-time' "
            "data-ms-target='timestamp' data-seek='timestamp'></label>" +
            h.field("timestamp", "or ms", "" if timestamp is None else timestamp, size=13,
                    extra=" data-seek='timestamp'") +
            h.field("limit", "Limit", limit, size=4) +
            h.field("q", "Search", text, size=14) +
            h.select("in", "in", [("any", "key or value"), ("key", "key"), ("value", "value")],
                     where) +
            f"<label>Live<input type='checkbox' name='live' value='1'"
            f"{' checked' if live else ''}></label>"
            "<button type='submit'>Show</button></form>")
    failures: dict = {}  # what the registry could not answer, asked once per page
    with_headers = any(r.headers for _p, r in page.records)  # else no column for them
    rows = [(p, r.offset, h.timestamp(r.timestamp),
             record_cell(data, r.key, topic, True, failures),
             record_cell(data, r.value, topic, False, failures)) +
            ((headers_cell(r.headers),) if with_headers else ()) for p, r in page.records]
    when = "<span>Timestamp (<span class='tz'>UTC</span>)</span>"
    base = {k: v[0] for k, v in query.items() if k not in ("cursor", "live")}
    pager = [f"<span id='count' class='muted'>{len(rows)} message(s)"
             f"{f', {page.scanned:,} looked at' if text else ''}</span>"]
    if cursor:
        pager.append(h.link("?" + urlencode(base), "First page"))
    if page.more:
        later = urlencode({**base, "cursor": cursor_text(page.cursor)})
        pager.append(f"<a id='next' href='?{h.e(later)}'>"
                     f"{'Older' if seek == 'newest' else 'Newer'} &rarr;</a>")
    what = topic if partition is None else f"{topic}-{partition}"
    results = (f"<div id='results'{' data-live=2000' if live else ''}>" + h.table(
        ["Partition", "Offset", when, "Key", "Value"] + ["Headers"] * with_headers, rows,
        "messages", num={0, 1}) + f"<div class='pager'>{''.join(pager)}</div></div>")
    return h.page(f"Messages of {what}", h.card("", form) + h.card("", results),
                  "topics", [("Topics", "/topics"), (topic, f"/topics/{h.q(topic)}")])


def headers_cell(headers) -> str:
    if not headers:
        return ""
    text = ", ".join(f"{k}: {bytes(v).decode('utf-8', 'replace') if v is not None else 'null'}"
                     for k, v in headers)
    return f"<span class='line' title='{h.e(text)}'>{h.e(text)}</span>"


def record_cell(data: ConsoleData, raw: bytes | None, topic: str, is_key: bool,
                failures: dict) -> str:
    """A key or value on one line: decoded with its schema when it is in the wire format,
    else as it is; all of it (and the raw bytes) a click away."""
    decoded = data.decoder.decode(raw, topic, is_key, failures) if data.decoder else None
    if decoded is None:
        return h.record(raw)
    if decoded.error:
        return f"<div class='note'>{h.e(decoded.error)}</div>{h.record(raw)}"
    kind, subject = decoded.schema_type, decoded.subject
    parts = []
    if subject:
        parts.append(h.link(f"/schemas/{h.q(subject)}/versions/{decoded.version}",
                            f"{subject} v{decoded.version}"))
    parts.append(h.link(f"/schemas/ids/{decoded.schema_id}", f"id {decoded.schema_id}"))
    if decoded.message_type:
        parts.append(h.e(decoded.message_type))
    return (f"<div class='schema-of'>{h.badge(kind, kind)} {' · '.join(parts)}</div>" +
            h.json_value(decoded.value, f"<details class='raw'><summary>raw bytes</summary>"
                                        f"{h.hexdump(bytes(raw))}</details>"))


def groups_page(data: ConsoleData, query) -> str:
    rows = [(h.link(f"/groups/{h.q(g)}", g), h.e(state or ""), members,
             h.e(", ".join(topics)), f"{lag:,}", h.link(f"/brokers/{node}", node))
            for g, state, node, members, topics, lag in data.call(groups_view)]
    return h.page("Consumer groups", h.card("", h.table(
        ["Group", "State", "Members", "Topics", "Lag", "Coordinator"], rows, "groups",
        num={2, 4, 5})), "groups", flash=_first(query, "done"))


def group_page(data: ConsoleData, query, group) -> str:
    def gather(cc):
        c = cc.coordinator(group)
        d = describe_group(c, group)
        return d, group_lag(cc, group, d), cc.coordinator_id(group)
    d, rows, coordinator = data.call(gather)
    total = total_lag(rows)
    data.lag[group].append((time.time(), total))
    members = h.table(["Member", "Client id", "Host", "Assignment"], [
        (h.e(m.member_id), h.e(m.client_id), h.e(m.client_host),
         h.e(", ".join(f"{t}-{p}" for t, p in decode_assignment(m.member_assignment))))
        for m in d.members], "members")
    lag = h.table(["Topic", "Partition", "Committed", "Log end", "Lag", "Member"], [
        tuple(h.e("-" if v is None else v) for v in r) for r in rows], "lag", num={1, 2, 3, 4},
        classes=["uncommitted" if r[2] is None else "" for r in rows])
    topics = sorted({r[0] for r in rows})
    reset = h.form(f"/groups/{h.q(group)}/reset-offsets",
                   h.select("topic", "Topic", [(t, t) for t in topics]) +
                   h.select("to", "To", [("earliest", "earliest"), ("latest", "latest"),
                                         ("offset", "offset")]) +
                   h.field("offset", "Offset"), "Reset offsets", "reset-offsets", danger=True)
    tiles = [("state", f"<span id='state'>{h.e(d.group_state)}</span>"),
             ("protocol", h.e(d.protocol_data or "-")), ("members", len(d.members)),
             ("coordinator", h.link(f"/brokers/{coordinator}", coordinator)),
             ("total lag (messages)", f"{total:,}")]
    note = ("<p class='muted' id='lag-note'>A partition without a committed offset (-) lags "
            "by its whole log, from its start.</p>" if any(r[2] is None for r in rows) else "")
    return h.page(group, h.stats(tiles) + h.card("Lag", h.lag_chart(list(data.lag[group])) +
                                                 lag + note) +
                  h.card("Members", members) + h.card("Actions", reset),
                  "groups", [("Consumer groups", "/groups")], flash=_first(query, "done"))


def broker_page(data: ConsoleData, _query, node) -> str:
    configs = data.call(lambda cc: (cc.refresh([]), describe_configs(cc, BROKER, node,
                                                                     int(node)))[1])
    return h.page(f"Broker {node}", h.card("Configs", config_table(configs, dynamic=True)),
                  "cluster", [("Cluster", "/")])


def create_topic_page(_data, _query) -> str:
    return h.page("Create topic", h.card("", h.form(
        "/create-topic", h.field("name", "Name", size=30) +
        h.field("partitions", "Partitions", 1, size=6) +
        h.field("replication_factor", "Replication factor", -1, size=6) +
        h.field("configs", "Configs (k=v,k=v)", size=30), "Create", "create-topic")),
        "topics", [("Topics", "/topics")])


# -- security: ACLs, SCRAM users, client quotas -----------------------------------------------
SECURITY_TABS = (("acls", "/acls", "ACLs"), ("users", "/users", "Users"),
                 ("quotas", "/quotas", "Quotas"))
QUOTA_KEYS = (PRODUCE_RATE, FETCH_RATE, REQUEST_RATE, "controller_mutation_rate")


def security_page(title: str, tab: str, body: str, query) -> str:
    tabs = "".join(f"<a href='{href}'{' class=active' if name == tab else ''}>{text}</a>"
                   for name, href, text in SECURITY_TABS)
    return h.page(title, f"<nav class='subnav'>{tabs}</nav>{body}", "security",
                  flash=_first(query, "done"))


def _answer(resp):
    """A describe answer's error, raised."""
    _check(resp.error_code, resp.error_message)
    return resp


def acls_page(data: ConsoleData, query) -> str:
    try:
        resp = data.call(lambda cc: _answer(cc.bootstrap.request(
            DESCRIBE_ACLS, resource_type_filter=az.ANY_RESOURCE, resource_name_filter=None,
            pattern_type_filter=az.ANY_PATTERN, principal_filter=None, host_filter=None,
            operation=az.ANY_OPERATION, permission_type=az.ANY_PERMISSION)))
    except KafkaError as err:
        return security_page("ACLs", "acls", h.card("", f"<p id='acls-error'>{h.e(err)}</p>"),
                             query)
    rows = []
    for r in sorted(resp.resources, key=lambda r: (r.resource_type, r.resource_name)):
        for a in r.acls:
            fields = {"resource_type": r.resource_type, "resource_name": r.resource_name,
                      "pattern": r.pattern_type, "principal": a.principal, "host": a.host,
                      "operation": a.operation, "permission": a.permission_type}
            rows.append((h.e(a.principal), h.e(a.host),
                         h.e(az.OPERATION_NAMES.get(a.operation, a.operation)),
                         h.e(az.PERMISSION_NAMES.get(a.permission_type, a.permission_type)),
                         h.e(az.RESOURCE_NAMES.get(r.resource_type, r.resource_type)),
                         h.e(r.resource_name),
                         h.e(az.PATTERN_NAMES.get(r.pattern_type, r.pattern_type)),
                         h.hidden_form("/acls/delete", fields, "Delete")))
    add = h.form("/acls", h.field("principal", "Principal", "User:", size=16) +
                 h.field("host", "Host", "*", size=8) +
                 h.select("operation", "Operation", sorted(
                     (code, name) for code, name in az.OPERATION_NAMES.items())) +
                 h.select("permission", "Permission", [(az.ALLOW, "Allow"), (az.DENY, "Deny")]) +
                 h.select("resource_type", "Resource", [(az.TOPIC, "Topic"), (az.GROUP, "Group"),
                                                        (az.CLUSTER, "Cluster"),
                                                        (az.TRANSACTIONAL_ID, "TransactionalId")]) +
                 h.field("resource_name", "Name", size=16) +
                 h.select("pattern", "Pattern", sorted(az.PATTERN_NAMES.items())),
                 "Add ACL", "add-acl")
    return security_page("ACLs", "acls", h.card("", h.table(
        ["Principal", "Host", "Operation", "Permission", "Resource", "Name", "Pattern", ""],
        rows, "acls")) + h.card("Add an ACL", add), query)


def users_page(data: ConsoleData, query) -> str:
    resp = data.call(lambda cc: _answer(cc.bootstrap.request(DESCRIBE_USER_SCRAM_CREDENTIALS,
                                                             users=None)))
    rows = [(h.e(r.user), h.e(SCRAM_MECHANISMS.get(i.mechanism, i.mechanism)), i.iterations,
             h.hidden_form("/users/delete", {"user": r.user, "mechanism":
                                             SCRAM_MECHANISMS.get(i.mechanism)}, "Delete"))
            for r in sorted(resp.results, key=lambda r: r.user) if not r.error_code
            for i in r.credential_infos]
    add = h.form("/users", h.field("user", "User", size=16) +
                 h.select("mechanism", "Mechanism", [(m, m) for m in SCRAM_CODES]) +
                 h.field("password", "Password", kind="password", size=16) +
                 h.field("iterations", "Iterations", 8192, "number", size=6),
                 "Add or change", "add-user")
    return security_page("Users", "users", h.card("SCRAM credentials", h.table(
        ["User", "Mechanism", "Iterations", ""], rows, "users", num={2})) +
        h.card("Add a user or change a password", add), query)


def quotas_page(data: ConsoleData, query) -> str:
    resp = data.call(lambda cc: _answer(cc.bootstrap.request(DESCRIBE_CLIENT_QUOTAS,
                                                             components=[], strict=False)))
    rows = [(h.e(entity_text([(d.entity_type, d.entity_name) for d in q.entity])),
             h.e(v.key), h.e(int(v.value) if v.value.is_integer() else v.value))
            for q in resp.entries or [] for v in sorted(q.values, key=lambda v: v.key)]
    alter = h.form("/quotas", h.select("entity_type", "Entity", [(USER, "user"),
                                                                 (CLIENT, "client-id")]) +
                   h.field("entity_name", "Name (empty: the default)", size=16) +
                   h.select("key", "Quota", [(k, k) for k in QUOTA_KEYS]) +
                   h.field("value", "Value (empty: remove)", size=10),
                   "Set quota", "set-quota")
    return security_page("Quotas", "quotas", h.card("Client quotas", h.table(
        ["Entity", "Quota", "Value"], rows, "quotas", num={2})) +
        h.card("Set or remove a quota", alter), query)


# -- Schema Registry pages -------------------------------------------------------------------
NO_REGISTRY = ("<section class='card' id='no-registry'><p>No Schema Registry is configured."
               "</p><p class='muted'>Start the console with <code>--schema-registry URL</code>, "
               "or put <code>schema.registry.url</code> (and <code>schema.registry.basic.auth"
               ".user.info</code>, <code>schema.registry.ssl.*</code> as needed) in its "
               "<code>--command-config</code> file.</p></section>")


def registry_page(fn):
    """A Schema Registry page: the registry's pages explain how to configure one when the
    console has none."""
    def page(data: ConsoleData, query, *args) -> str:
        if data.registry is None:
            return h.page("Schema Registry", NO_REGISTRY, "schemas")
        return fn(data, data.registry, query, *args)
    return page


def _level(registry: RegistryClient, own: str | None, overall: str | None = None) -> str:
    if own:
        return h.e(own)
    return f"{h.e(overall or registry.global_level())} <span class='muted'>(global)</span>"


def type_badge(answer: dict) -> str:
    kind = schema_type(answer)
    return h.badge(kind, kind)


def _schema_html(version: dict) -> str:
    if schema_type(version) == PROTOBUF:
        return h.proto_block(version["schema"])
    try:
        return h.json_block(json.loads(version["schema"]), "block")
    except ValueError:
        return f"<pre class='block'>{h.e(version['schema'])}</pre>"


@registry_page
def schemas_page(data: ConsoleData, registry: RegistryClient, query) -> str:
    needle = _first(query, "filter") or ""
    latest = [s for s in registry.latest_schemas() if needle in s["subject"]]
    overall = registry.global_level()
    with ThreadPoolExecutor(8) as pool:
        levels = list(pool.map(registry.subject_level, [s["subject"] for s in latest]))
    rows = [(h.link(f"/schemas/{h.q(s['subject'])}", s["subject"]),
             type_badge(s),
             h.link(f"/schemas/{h.q(s['subject'])}/versions/{s['version']}", s["version"]),
             h.link(f"/schemas/ids/{s['id']}", s["id"]), _level(registry, own, overall))
            for s, own in zip(latest, levels)]
    tiles = [("subjects", len(rows)), ("global compatibility", h.e(overall)),
             ("mode", h.e(registry.mode())), ("registry", h.e(registry.url))]
    toolbar = (f"<div class='toolbar'><form class='bar' method='get' id='filter'>"
               f"{h.field('filter', 'Subject contains', needle, size=24)}"
               f"<button type='submit'>Filter</button></form></div>")
    return h.page("Schema Registry", h.stats(tiles) + h.card("", toolbar + h.table(
        ["Subject", "Type", "Latest version", "Id", "Compatibility"], rows, "subjects",
        num={2, 3})), "schemas")


@registry_page
def subject_page(data: ConsoleData, registry: RegistryClient, query, subject) -> str:
    numbers = registry.versions(subject)
    with ThreadPoolExecutor(8) as pool:
        versions = list(pool.map(lambda n: registry.version(subject, n), numbers))
    latest = versions[-1]
    rows = [(h.link(f"/schemas/{h.q(subject)}/versions/{v['version']}", v["version"]),
             h.link(f"/schemas/ids/{v['id']}", v["id"]),
             type_badge(v),
             h.e(", ".join(r["name"] for r in v.get("references", []))))
            for v in reversed(versions)]
    tiles = [("type", type_badge(latest)), ("latest version", latest["version"]),
             ("versions", len(versions)),
             ("compatibility", _level(registry, registry.subject_level(subject)))]
    return h.page(subject, h.stats(tiles) + h.card("Versions", h.table(
        ["Version", "Id", "Type", "References"], rows, "versions", num={0, 1})) +
        h.card(f"Schema, version {latest['version']}", _schema_html(latest)),
        "schemas", [("Schema Registry", "/schemas")])


@registry_page
def version_page(data: ConsoleData, registry: RegistryClient, query, subject, version) -> str:
    v = registry.version(subject, version)
    pager = " ".join(f"<b>{n}</b>" if n == v["version"] else
                     h.link(f"/schemas/{h.q(subject)}/versions/{n}", n)
                     for n in registry.versions(subject))
    refs = h.table(["Name", "Subject", "Version"], [
        (h.e(r["name"]), h.link(f"/schemas/{h.q(r['subject'])}", r["subject"]),
         h.link(f"/schemas/{h.q(r['subject'])}/versions/{r['version']}", r["version"]))
        for r in v["references"]], "references") if v.get("references") else \
        "<p class='muted'>This schema references no other.</p>"
    users = ", ".join(h.link(f"/schemas/ids/{i}", i)
                      for i in registry.referenced_by(subject, v["version"])) or "none"
    tiles = [("type", type_badge(v)), ("version", v["version"]),
             ("id", h.link(f"/schemas/ids/{v['id']}", v["id"])),
             ("compatibility", _level(registry, registry.subject_level(subject)))]
    return h.page(f"{subject} version {v['version']}", h.stats(tiles) +
                  f"<p id='pager'>Versions: {pager}</p>" +
                  h.card("Schema", _schema_html(v)) +
                  h.card("References", refs + f"<p id='referenced-by'>Referenced by schema "
                                               f"ids: {users}</p>"),
                  "schemas", [("Schema Registry", "/schemas"),
                              (subject, f"/schemas/{h.q(subject)}")])


@registry_page
def schema_id_page(data: ConsoleData, registry: RegistryClient, query, schema_id) -> str:
    schema_id = int(schema_id)
    schema = registry.schema(schema_id)
    uses = h.table(["Subject", "Version"], [
        (h.link(f"/schemas/{h.q(u['subject'])}", u["subject"]),
         h.link(f"/schemas/{h.q(u['subject'])}/versions/{u['version']}", u["version"]))
        for u in registry.uses(schema_id)], "uses")
    return h.page(f"Schema id {schema_id}", h.stats([("type", type_badge(schema))]) +
                  h.card("Registered as", uses) + h.card("Schema", _schema_html(schema)),
                  "schemas", [("Schema Registry", "/schemas")])


# -- actions (POST, confirmed) ---------------------------------------------------------------------
def create_topic_action(data, form):
    R = CREATE_TOPICS.Request
    name = form["name"]
    configs = [R.CreatableTopicConfig(name=k.strip(), value=v.strip()) for k, _, v in
               (kv.partition("=") for kv in form.get("configs", "").split(",") if kv.strip())]

    def run(cc):
        r = cc.bootstrap.request(CREATE_TOPICS, timeout_ms=30000, validate_only=False, topics=[
            R.CreatableTopic(name=name, num_partitions=int(form["partitions"]),
                             replication_factor=int(form["replication_factor"]),
                             assignments=[], configs=configs)]).topics[0]
        _check(r.error_code, r.error_message)
    return (f"Create topic {name} with {form['partitions']} partition(s)?", run,
            f"/topics/{name}?done=created")


def alter_config_action(data, form, topic):
    name, value = form["name"], form.get("value", "")
    R = INCREMENTAL_ALTER_CONFIGS.Request
    op = R.AlterableConfig(name=name, config_operation=0 if value else 1,
                           value=value or None)

    def run(cc):
        r = cc.bootstrap.request(INCREMENTAL_ALTER_CONFIGS, validate_only=False, resources=[
            R.AlterConfigsResource(resource_type=TOPIC, resource_name=topic,
                                   configs=[op])]).responses[0]
        _check(r.error_code, r.error_message)
    what = f"Set {name}={value} on topic {topic}?" if value else \
        f"Remove the override of {name} on topic {topic}?"
    return what, run, f"/topics/{topic}?done=config+changed"


def delete_records_action(data, form, topic):
    partition, offset = int(form["partition"]), int(form["offset"])
    R = DELETE_RECORDS.Request

    def run(cc):
        cc.refresh([topic])
        p = cc.leader(topic, partition).request(DELETE_RECORDS, timeout_ms=30000, topics=[
            R.DeleteRecordsTopic(name=topic, partitions=[R.DeleteRecordsPartition(
                partition_index=partition, offset=offset)])]).topics[0].partitions[0]
        _check(p.error_code, f"{topic}-{partition}")
    return (f"Delete the records of {topic}-{partition} below offset {offset}?", run,
            f"/topics/{topic}?done=records+deleted")


def reset_offsets_action(data, form, group):
    topic, to = form["topic"], form["to"]

    def run(cc):
        cc.refresh([topic])
        parts = cc.partitions(topic)
        if to == "offset":
            targets = {p: int(form["offset"]) for p in parts}
        else:
            targets = cc.list_offsets(topic, parts, EARLIEST if to == "earliest" else LATEST)
        c = cc.coordinator(group)
        state = describe_group(c, group).group_state
        if state not in ("Empty", "Dead"):
            raise KafkaError(errors.NON_EMPTY_GROUP, f"group {group} is {state}: stop its "
                                                     "consumers first")
        commit_offsets(c, group, {(topic, p): off for p, off in targets.items()})
    where = form.get("offset") if to == "offset" else to
    return (f"Reset the offsets of group {group} on {topic} to {where}?", run,
            f"/groups/{h.q(group)}?done=offsets+reset")


def delete_topic_action(data, form, topic):
    def run(cc):
        r = cc.bootstrap.request(DELETE_TOPICS, topic_names=[topic], timeout_ms=30000, topics=[
            DELETE_TOPICS.Request.DeleteTopicState(name=topic)]).responses[0]
        _check(r.error_code, r.error_message)
    return (f"Delete topic {topic} and all its records?", run,
            f"/topics?done=topic+{h.q(topic)}+deleted")


def create_partitions_action(data, form, topic):
    count = int(form["count"])
    R = CREATE_PARTITIONS.Request

    def run(cc):
        r = cc.bootstrap.request(CREATE_PARTITIONS, timeout_ms=30000, validate_only=False,
                                 topics=[R.CreatePartitionsTopic(name=topic, count=count,
                                                                 assignments=None)]).results[0]
        _check(r.error_code, r.error_message)
    return (f"Increase the partitions of {topic} to {count}?", run,
            f"/topics/{h.q(topic)}?done=partitions+added")


def produce_action(data, form, topic):
    """One record, as a producer with acks=all sends it: to the partition chosen, else by
    its key's murmur2 hash, else (no key) to a random partition."""
    key = form.get("key", "").encode() or None
    value = form.get("value", "").encode()
    headers = []
    for line in form.get("headers", "").splitlines():
        if line.strip():
            name, sep, text = line.partition("=")
            if not sep:
                raise ValueError(f"header {line!r} is not name=value")
            headers.append((name.strip(), text.encode()))
    chosen = form.get("partition", "")

    def run(cc):
        cc.refresh([topic])
        n = len(cc.partitions(topic))
        partition = int(chosen) if chosen else partition_for_key(key, n) if key is not None \
            else random.randrange(n)
        offset = cc.produce(topic, partition, build_batch([(key, value, headers, None)]),
                            acks=-1)
        return f"produced+to+partition+{partition}+at+offset+{offset}"
    where = f"partition {chosen}" if chosen else "its partition"
    return (f"Produce a record ({len(value)} bytes) to {topic}, {where}?", run,
            f"/topics/{h.q(topic)}?done=")


def add_acl_action(data, form):
    Q = CREATE_ACLS.Request
    binding = _acl_fields(form)

    def run(cc):
        r = cc.bootstrap.request(CREATE_ACLS, creations=[Q.AclCreation(
            resource_type=binding["resource_type"], resource_name=binding["resource_name"],
            resource_pattern_type=binding["pattern"], principal=binding["principal"],
            host=binding["host"], operation=binding["operation"],
            permission_type=binding["permission"])]).results[0]
        _check(r.error_code, r.error_message)
    return f"Add the ACL {_acl_text(binding)}?", run, "/acls?done=ACL+added"


def delete_acl_action(data, form):
    Q = DELETE_ACLS.Request
    binding = _acl_fields(form)

    def run(cc):
        r = cc.bootstrap.request(DELETE_ACLS, filters=[Q.DeleteAclsFilter(
            resource_type_filter=binding["resource_type"],
            resource_name_filter=binding["resource_name"],
            pattern_type_filter=binding["pattern"], principal_filter=binding["principal"],
            host_filter=binding["host"], operation=binding["operation"],
            permission_type=binding["permission"])]).filter_results[0]
        _check(r.error_code, r.error_message)
    return f"Delete the ACL {_acl_text(binding)}?", run, "/acls?done=ACL+deleted"


def _acl_fields(form) -> dict:
    out = {k: int(form[k]) for k in ("resource_type", "pattern", "operation", "permission")}
    out.update(principal=form["principal"], host=form.get("host") or az.WILDCARD,
               resource_name=az.CLUSTER_NAME if out["resource_type"] == az.CLUSTER
               else form["resource_name"])
    return out


def _acl_text(b: dict) -> str:
    return (f"{b['principal']} from {b['host']}: "
            f"{az.PERMISSION_NAMES.get(b['permission'], b['permission'])} "
            f"{az.OPERATION_NAMES.get(b['operation'], b['operation'])} on "
            f"{az.RESOURCE_NAMES.get(b['resource_type'], b['resource_type'])} "
            f"{b['resource_name']} ({az.PATTERN_NAMES.get(b['pattern'], b['pattern'])})")


def add_user_action(data, form):
    """A SCRAM credential, salted and hashed here as kafka-configs does: only the salted
    password goes to the broker."""
    R = ALTER_USER_SCRAM_CREDENTIALS.Request
    user, mechanism = form["user"], form["mechanism"]
    iterations = int(form.get("iterations") or MIN_ITERATIONS)
    if mechanism not in SCRAM_CODES:
        raise ValueError(f"unknown SCRAM mechanism {mechanism}")
    salt = os.urandom(32)
    upsertion = R.ScramCredentialUpsertion(
        name=user, mechanism=SCRAM_CODES[mechanism], iterations=iterations, salt=salt,
        salted_password=salted_password(mechanism, form["password"], salt, iterations))
    return (f"Set the {mechanism} password of user {user}?",
            _alter_scram(upsertions=[upsertion]), "/users?done=user+updated")


def delete_user_action(data, form):
    R = ALTER_USER_SCRAM_CREDENTIALS.Request
    user, mechanism = form["user"], form["mechanism"]
    deletion = R.ScramCredentialDeletion(name=user, mechanism=SCRAM_CODES.get(mechanism, 0))
    return (f"Delete the {mechanism} credential of user {user}?",
            _alter_scram(deletions=[deletion]), "/users?done=credential+deleted")


def _alter_scram(upsertions=(), deletions=()):
    def run(cc):
        r = cc.bootstrap.request(ALTER_USER_SCRAM_CREDENTIALS, upsertions=list(upsertions),
                                 deletions=list(deletions)).results[0]
        _check(r.error_code, r.error_message)
    return run


def set_quota_action(data, form):
    R = ALTER_CLIENT_QUOTAS.Request
    entity = [(form["entity_type"], form.get("entity_name") or None)]
    key, value = form["key"], form.get("value", "").strip()
    op = R.EntryData.OpData(key=key, value=float(value) if value else 0.0, remove=not value)

    def run(cc):
        r = cc.bootstrap.request(ALTER_CLIENT_QUOTAS, validate_only=False, entries=[
            R.EntryData(entity=[R.EntryData.EntityData(entity_type=t, entity_name=n)
                                for t, n in entity], ops=[op])]).entries[0]
        _check(r.error_code, r.error_message)
    what = f"Set {key}={value} for {entity_text(entity)}?" if value else \
        f"Remove {key} of {entity_text(entity)}?"
    return what, run, "/quotas?done=quota+changed"


def _check(code, message):
    """An answer's error, raised with Kafka's name for it and the broker's message."""
    if code:
        raise KafkaError(code, f"{errors.name(code)}: {message}" if message else
                         errors.name(code))


def _first(query, name):
    v = query.get(name)
    return v[0] if v else None


def _int(text):
    return int(text) if text not in (None, "") else None


GET_ROUTES = [  # (path segments pattern, page); "*" matches one segment
    ((), overview_page), (("topics",), topics_page), (("groups",), groups_page),
    (("create-topic",), create_topic_page), (("topics", "*"), topic_page),
    (("topics", "*", "messages"), messages_page), (("groups", "*"), group_page),
    (("brokers", "*"), broker_page), (("schemas",), schemas_page),
    (("schemas", "ids", "*"), schema_id_page), (("schemas", "*"), subject_page),
    (("schemas", "*", "versions", "*"), version_page), (("acls",), acls_page),
    (("users",), users_page), (("quotas",), quotas_page), (("connect",), connect_page),
    (("connect", "*"), connector_page),
]
POST_ROUTES = [
    (("create-topic",), create_topic_action), (("topics", "*", "config"), alter_config_action),
    (("topics", "*", "delete-records"), delete_records_action),
    (("groups", "*", "reset-offsets"), reset_offsets_action),
    (("topics", "*", "delete"), delete_topic_action),
    (("topics", "*", "partitions"), create_partitions_action),
    (("topics", "*", "produce"), produce_action),
    (("acls",), add_acl_action), (("acls", "delete"), delete_acl_action),
    (("users",), add_user_action), (("users", "delete"), delete_user_action),
    (("quotas",), set_quota_action), (("connect", "*", "restart"), restart_action),
    (("connect", "*", "pause"), pause_action), (("connect", "*", "resume"), resume_action),
    (("connect", "*", "stop"), stop_action), (("connect", "*", "delete"), delete_action),
    (("connect", "*", "reset-offsets"), reset_connector_offsets_action),
    (("connect", "*", "tasks", "*", "restart"), restart_task_action),
]


def _route(routes, path):
    parts = tuple(unquote(s) for s in path.strip("/").split("/") if s)
    for pattern, fn in routes:
        if len(pattern) == len(parts) and all(p == "*" or p == s for p, s in zip(pattern, parts)):
            return fn, [s for p, s in zip(pattern, parts) if p == "*"]
    return None, []


class Handler(BaseHTTPRequestHandler):
    data: ConsoleData = None  # set by serve_console

    def log_message(self, fmt, *args):  # quiet; errors show on the pages
        pass

    def _send(self, status, body: str = "", location: str | None = None):
        raw = body.encode()
        self.send_response(status)
        if location:
            self.send_header("Location", location)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def _failed(self, e: Exception):
        """A page saying what failed: the cluster's or the registry's answer, or that the
        cluster does not answer."""
        if isinstance(e, OSError):
            return self._send(502, h.page("Error", "", error=f"cluster at "
                                          f"{self.data.bootstrap} unreachable: {e}"))
        self._send(200, h.page("Error", "", error=str(e)))

    def _same_origin(self) -> bool:
        """Whether a POST comes from the console's own pages (a browser names the page's
        origin, or at least whether it is the same site): changes asked by another site's
        page (cross-site request forgery) are refused."""
        origin = self.headers.get("Origin")
        if origin and origin != "null":  # a proxy in front may name the host it was asked for
            return urlsplit(origin).netloc in (self.headers.get("Host"),
                                               self.headers.get("X-Forwarded-Host"))
        return self.headers.get("Sec-Fetch-Site", "same-origin") in ("same-origin", "none")

    def do_GET(self):
        url = urlsplit(self.path)
        fn, args = _route(GET_ROUTES, url.path)
        if fn is None:
            return self._send(404, h.page("Not found", ""))
        try:
            self._send(200, fn(self.data, parse_qs(url.query), *args))
        except (KafkaError, RegistryError, ConnectError, ValueError, KeyError, OSError) as e:
            self._failed(e)

    def do_POST(self):
        fn, args = _route(POST_ROUTES, urlsplit(self.path).path)
        if fn is None:
            return self._send(404, h.page("Not found", ""))
        if not self._same_origin():
            return self._send(403, h.page("Forbidden", "", error="a change must come from "
                                                                 "the console's own pages"))
        length = int(self.headers.get("Content-Length") or 0)
        form = {k: v[0] for k, v in parse_qs(self.rfile.read(length).decode(),
                                              keep_blank_values=True).items()}
        try:
            what, run, done = fn(self.data, form, *args)
            if form.get("confirm") != "yes":
                fields = {k: v for k, v in form.items() if k != "confirm"}
                return self._send(200, h.page("Confirm", h.confirmation(self.path, what,
                                                                        fields)))
            result = self.data.call(run)
            self._send(303, "", location=done + (result or ""))
        except (KafkaError, ConnectError, ValueError, KeyError, OSError) as e:
            self._failed(e)


def serve_console(args) -> int:
    props = parse_properties(Path(args.command_config).read_text()) if args.command_config \
        else {}
    settings = registry_settings(args.schema_registry, props)
    data = ConsoleData(args.bootstrap_server, props,
                       RegistryClient(settings) if settings else None,
                       connect_client(args.connect_url))
    Handler.data = data
    server = ThreadingHTTPServer((args.host, args.port), Handler)
    stop = threading.Event()

    def sampler():
        while not stop.wait(args.lag_interval):
            try:
                data.sample_lag()
            except (KafkaError, OSError):
                pass
    threading.Thread(target=sampler, daemon=True).start()
    print(f"josefk console on http://{args.host}:{server.server_address[1]}/" +
          (f" (Schema Registry {data.registry.url})" if data.registry else "") +
          (f" (Connect {data.connect.url})" if data.connect else ""), flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        stop.set()
        server.server_close()
    return 0
