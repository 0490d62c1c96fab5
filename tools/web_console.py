"""`josefk console`: a server-rendered web console for a josefk cluster (standard library HTTP
server on threads, pages built from the brokers' and the Schema Registry's answers on every
request; the pages carry their own stylesheet and script and load nothing from elsewhere).

Pages: the cluster and its brokers, topics and each topic's partitions (leader, replicas, ISR,
offsets, size), configs with their sources and the topic's schemas, a message browser (from an
offset or a time, key/value/headers, JSON pretty-printed, search by key; records in Confluent's
wire format decoded with their Avro, JSON Schema or Protobuf schema from the registry),
consumer groups with members, assignments, lag and a lag chart, broker configs, and the Schema
Registry's subjects, versions and schemas (``--schema-registry`` or ``schema.registry.url``).
Actions (create topic, alter a topic config, delete records, reset a group's offsets) ask for
confirmation first.
"""
from __future__ import annotations

import collections
import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

from josefk.broker.config import parse_properties
from josefk.tools import web_html as h
from josefk.tools.client import KafkaError
from josefk.tools.groups_cli import (commit_offsets, committed_offsets, decode_assignment,
                                     describe_group)
from josefk.tools.ops_cli import SOURCES
from josefk.tools.tool_client import EARLIEST, LATEST, ClusterClient
from josefk.tools.web_schemas import (PROTOBUF, Decoder, RegistryClient, RegistryError,
                                      registry_settings, schema_type)
from josefk.wire import errors
from josefk.wire.apis import (CREATE_TOPICS, DELETE_RECORDS, DESCRIBE_CONFIGS, DESCRIBE_LOG_DIRS,
                              INCREMENTAL_ALTER_CONFIGS, LIST_GROUPS)
from josefk.wire.batch import iter_headers
from josefk.wire.records import iter_records

TOPIC, BROKER = 2, 4
BROWSE_SCAN_LIMIT = 10_000  # records a key search looks through at most
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
    c.set_defaults(func=serve_console)


class ConsoleData:
    """What the pages show, asked from the cluster (one client, used by one thread at a time)
    and from the Schema Registry, if there is one."""

    def __init__(self, bootstrap: str, props: dict | None = None,
                 registry: RegistryClient | None = None):
        self.bootstrap, self.props = bootstrap, props
        self.lock = threading.Lock()
        self.cc = ClusterClient(bootstrap, "josefk-console", props)
        self.lag = collections.defaultdict(lambda: collections.deque(maxlen=LAG_HISTORY))
        self.registry = registry
        self.decoder = Decoder(registry) if registry else None

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
        for group, _state in self.call(list_groups):
            try:
                rows = self.call(group_lag, group)
            except KafkaError:
                continue
            self.lag[group].append((time.time(), sum(r[4] for r in rows if r[4] is not None)))


# -- questions to the cluster (each takes the ClusterClient) ----------------------------------------
def list_groups(cc) -> list[tuple[str, str]]:
    """(group id, state) of every group of the cluster."""
    out = {}
    for node in cc.refresh([]).brokers:
        resp = cc.broker(node.node_id).request(LIST_GROUPS, states_filter=[], types_filter=[])
        out.update((g.group_id, g.group_state) for g in resp.groups)
    return sorted(out.items())


def group_lag(cc, group) -> list[tuple]:
    """(topic, partition, committed, log end, lag, member) rows of ``group``."""
    c = cc.coordinator(group)
    committed = committed_offsets(c, group)
    d = describe_group(c, group)
    owner = {tp: m.member_id for m in d.members for tp in decode_assignment(m.member_assignment)}
    tps = sorted(set(committed) | set(owner))
    ends = {}
    for topic in {t for t, _ in tps}:
        cc.refresh([topic])
        ends.update({(topic, p): off for p, off in cc.list_offsets(
            topic, [p for t, p in tps if t == topic], LATEST).items()})
    return [(t, p, committed.get((t, p)), ends.get((t, p)),
             ends[(t, p)] - committed[(t, p)] if (t, p) in committed and (t, p) in ends
             else None, owner.get((t, p))) for t, p in tps]


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
    md = cc.refresh([topic])
    t = cc.topics[topic]
    parts = sorted(t.partitions, key=lambda p: p.partition_index)
    ids = [p.partition_index for p in parts]
    starts = cc.list_offsets(topic, ids, EARLIEST)
    ends = cc.list_offsets(topic, ids, LATEST)
    sizes = {}
    R = DESCRIBE_LOG_DIRS.Request
    for b in md.brokers:
        resp = cc.broker(b.node_id).request(DESCRIBE_LOG_DIRS, topics=[
            R.DescribableLogDirTopic(topic=topic, partitions=ids)])
        for d in resp.results:
            for tt in d.topics:
                for p in tt.partitions:
                    key = p.partition_index
                    sizes[key] = max(sizes.get(key, 0), p.partition_size)
    return parts, starts, ends, sizes, describe_configs(cc, TOPIC, topic)


def browse(cc, topic, partition, offset, timestamp, limit, key):
    """The topic's partitions, and the records of ``partition`` from ``offset`` (or the first
    at ``timestamp``), at most ``limit``; with ``key``, only records whose key contains it
    (scanning a bounded stretch)."""
    cc.refresh([topic])
    partitions = cc.partitions(topic)
    if timestamp is not None:
        offset = cc.list_offsets(topic, [partition], timestamp)[partition]
        if offset < 0:
            return partitions, []
    elif offset is None:
        offset = cc.list_offsets(topic, [partition], EARLIEST)[partition]
    end = cc.list_offsets(topic, [partition], LATEST)[partition]
    out, scanned, pos = [], 0, {(topic, partition): offset}
    needle = key.encode() if key else None
    while pos[(topic, partition)] < end and len(out) < limit and scanned < BROWSE_SCAN_LIMIT:
        before = pos[(topic, partition)]
        for _t, _p, records, _hwm in cc.fetch(pos, max_wait_ms=0):
            for hd in iter_headers(records):
                if hd.last_offset < pos[(topic, partition)] or hd.is_control:
                    continue
                for r in iter_records(records, hd):
                    if r.offset < before or len(out) >= limit:
                        continue
                    scanned += 1
                    if needle is None or (r.key is not None and needle in bytes(r.key)):
                        out.append(r)
                pos[(topic, partition)] = hd.last_offset + 1
        if pos[(topic, partition)] == before:
            break
    return partitions, out


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
    md = data.call(lambda cc: cc.refresh())
    needle = _first(query, "filter") or ""
    rows = []
    for t in sorted(md.topics, key=lambda t: t.name):
        if needle not in t.name:
            continue
        rf = len(t.partitions[0].replica_nodes) if t.partitions else 0
        under = sum(len(p.isr_nodes) < len(p.replica_nodes) for p in t.partitions)
        rows.append((h.link(f"/topics/{h.q(t.name)}", t.name), len(t.partitions), rf, under,
                     h.badge("internal") if t.is_internal else ""))
    toolbar = (f"<div class='toolbar'><form class='bar' method='get' id='filter'>"
               f"{h.field('filter', 'Name contains', needle, size=24)}"
               f"<button type='submit'>Filter</button></form>"
               f"<a class='button' href='/create-topic'>Create topic</a></div>")
    return h.page("Topics", h.card("", toolbar + h.table(
        ["Topic", "Partitions", "Replication factor", "Under-replicated", ""], rows, "topics",
        num={1, 2, 3})), "topics")


def topic_page(data: ConsoleData, query, topic) -> str:
    parts, starts, ends, sizes, configs = data.call(topic_view, topic)
    rows = [(p.partition_index, p.leader_id if p.leader_id >= 0 else "none",
             ",".join(map(str, p.replica_nodes)), ",".join(map(str, p.isr_nodes)),
             starts[p.partition_index], ends[p.partition_index],
             ends[p.partition_index] - starts[p.partition_index], sizes.get(p.partition_index, 0),
             h.link(f"/topics/{h.q(topic)}/messages?partition={p.partition_index}", "browse"))
            for p in parts]
    tiles = [("partitions", len(parts)),
             ("replication factor", len(parts[0].replica_nodes) if parts else 0),
             ("messages", f"{sum(r[6] for r in rows):,}"),
             ("size", h.size(sum(sizes.values()))),
             ("under-replicated", sum(len(p.isr_nodes) < len(p.replica_nodes) for p in parts))]
    cfg_rows = [(h.e(c.name), h.e(c.value), h.e(SOURCES.get(c.config_source, c.config_source)))
                for c in configs]
    actions = (h.form(f"/topics/{h.q(topic)}/config", h.field("name", "Config", size=24) +
                      h.field("value", "Value (empty: back to default)"), "Alter config",
                      "alter-config") + "<br>" +
               h.form(f"/topics/{h.q(topic)}/delete-records",
                      h.select("partition", "Partition", [(p.partition_index, p.partition_index)
                                                          for p in parts]) +
                      h.field("offset", "Before offset"), "Delete records", "delete-records",
                      danger=True))
    schemas = h.card("Schemas", topic_schemas(data, topic)) if data.registry else ""
    browse_link = (f"<p><a class='button' href='/topics/{h.q(topic)}/messages'>Browse messages"
                   f"</a></p>")
    return h.page(topic, h.stats(tiles) + browse_link + schemas +
                  h.card("Partitions", h.table(
                      ["Partition", "Leader", "Replicas", "ISR", "Start offset", "End offset",
                       "Messages", "Size (bytes)", ""], rows, "partitions", num={0, 4, 5, 6, 7})) +
                  h.card("Actions", actions) +
                  h.card("Configs", h.table(["Name", "Value", "Source"], cfg_rows, "configs")),
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
    partition = int(_first(query, "partition") or 0)
    offset = _int(_first(query, "offset"))
    timestamp = _int(_first(query, "timestamp"))
    limit = min(int(_first(query, "limit") or 50), 1000)
    key = _first(query, "key") or None
    partitions, records = data.call(browse, topic, partition, offset, timestamp, limit, key)
    search = ("<form method='get' id='browse' class='bar'>" +
              h.select("partition", "Partition", [(p, p) for p in partitions], partition) +
              h.field("offset", "From offset", "" if offset is None else offset, size=10) +
              "<label>or from time<input type='datetime-local' step='1' id='from-time' "
              "data-ms-target='timestamp'></label>" +
              h.field("timestamp", "or from timestamp (ms)", "" if timestamp is None
                      else timestamp) +
              h.field("limit", "Limit", limit, size=5) +
              h.field("key", "Key contains", key or "") +
              "<button type='submit'>Show</button></form>")
    failures: dict = {}  # what the registry could not answer, asked once per page
    rows = [(r.offset, h.timestamp(r.timestamp),
             record_cell(data, r.key, topic, True, failures),
             "<br>".join(f"{h.e(k)}: {h.e(bytes(v).decode('utf-8', 'replace') if v is not None else 'null')}"
                         for k, v in r.headers),
             record_cell(data, r.value, topic, False, failures)) for r in records]
    when = "<span>Timestamp (<span class='tz'>UTC</span>)</span>"
    return h.page(f"Messages of {topic}-{partition}", h.card("", search) + h.card("", h.table(
        ["Offset", when, "Key", "Headers", "Value"], rows, "messages", num={0}) +
        f"<p id='count' class='muted'>{len(records)} message(s)</p>"),
        "topics", [("Topics", "/topics"), (topic, f"/topics/{h.q(topic)}")])


def record_cell(data: ConsoleData, raw: bytes | None, topic: str, is_key: bool,
                failures: dict) -> str:
    """A key or value: decoded with its schema when it is in the wire format, else raw."""
    decoded = data.decoder.decode(raw, topic, is_key, failures) if data.decoder else None
    if decoded is None:
        return h.raw(raw)
    if decoded.error:
        return f"<div class='note'>{h.e(decoded.error)}</div>{h.raw(raw)}"
    kind, subject = decoded.schema_type, decoded.subject
    parts = []
    if subject:
        parts.append(h.link(f"/schemas/{h.q(subject)}/versions/{decoded.version}",
                            f"{subject} v{decoded.version}"))
    parts.append(h.link(f"/schemas/ids/{decoded.schema_id}", f"id {decoded.schema_id}"))
    if decoded.message_type:
        parts.append(h.e(decoded.message_type))
    return (f"<div class='schema-of'>{h.badge(kind, kind)} {' · '.join(parts)}</div>"
            f"{h.json_block(decoded.value)}"
            f"<details class='raw'><summary>raw bytes</summary>{h.hexdump(bytes(raw))}"
            f"</details>")


def groups_page(data: ConsoleData, _query) -> str:
    rows = [(h.link(f"/groups/{h.q(g)}", g), h.e(state or "")) for g, state in
            data.call(list_groups)]
    return h.page("Consumer groups", h.card("", h.table(["Group", "State"], rows, "groups")),
                  "groups")


def group_page(data: ConsoleData, query, group) -> str:
    def gather(cc):
        c = cc.coordinator(group)
        return describe_group(c, group), group_lag(cc, group)
    d, rows = data.call(gather)
    total = sum(r[4] for r in rows if r[4] is not None)
    data.lag[group].append((time.time(), total))
    members = h.table(["Member", "Client id", "Host", "Assignment"], [
        (h.e(m.member_id), h.e(m.client_id), h.e(m.client_host),
         h.e(", ".join(f"{t}-{p}" for t, p in decode_assignment(m.member_assignment))))
        for m in d.members], "members")
    lag = h.table(["Topic", "Partition", "Committed", "Log end", "Lag", "Member"], [
        tuple(h.e("-" if v is None else v) for v in r) for r in rows], "lag", num={1, 2, 3, 4})
    topics = sorted({r[0] for r in rows})
    reset = h.form(f"/groups/{h.q(group)}/reset-offsets",
                   h.select("topic", "Topic", [(t, t) for t in topics]) +
                   h.select("to", "To", [("earliest", "earliest"), ("latest", "latest"),
                                         ("offset", "offset")]) +
                   h.field("offset", "Offset"), "Reset offsets", "reset-offsets", danger=True)
    tiles = [("state", f"<span id='state'>{h.e(d.group_state)}</span>"),
             ("protocol", h.e(d.protocol_data or "-")), ("members", len(d.members)),
             ("total lag (messages)", f"{total:,}")]
    return h.page(group, h.stats(tiles) + h.card("Lag", h.lag_chart(list(data.lag[group])) +
                                                 lag) +
                  h.card("Members", members) + h.card("Actions", reset),
                  "groups", [("Consumer groups", "/groups")], flash=_first(query, "done"))


def broker_page(data: ConsoleData, _query, node) -> str:
    configs = data.call(lambda cc: (cc.refresh([]), describe_configs(cc, BROKER, node,
                                                                     int(node)))[1])
    rows = [(h.e(c.name), h.e(c.value), h.e(SOURCES.get(c.config_source, c.config_source)),
             "no" if c.read_only else "yes") for c in configs]
    return h.page(f"Broker {node}", h.card("Configs", h.table(
        ["Name", "Value", "Source", "Dynamic"], rows, "configs")), "cluster", [("Cluster", "/")])


def create_topic_page(_data, _query) -> str:
    return h.page("Create topic", h.card("", h.form(
        "/create-topic", h.field("name", "Name", size=30) +
        h.field("partitions", "Partitions", 1, size=6) +
        h.field("replication_factor", "Replication factor", -1, size=6) +
        h.field("configs", "Configs (k=v,k=v)", size=30), "Create", "create-topic")),
        "topics", [("Topics", "/topics")])


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


def _check(code, message):
    if code:
        raise KafkaError(code, message or errors.name(code))


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
    (("schemas", "*", "versions", "*"), version_page),
]
POST_ROUTES = [
    (("create-topic",), create_topic_action), (("topics", "*", "config"), alter_config_action),
    (("topics", "*", "delete-records"), delete_records_action),
    (("groups", "*", "reset-offsets"), reset_offsets_action),
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

    def do_GET(self):
        url = urlsplit(self.path)
        fn, args = _route(GET_ROUTES, url.path)
        if fn is None:
            return self._send(404, h.page("Not found", ""))
        try:
            self._send(200, fn(self.data, parse_qs(url.query), *args))
        except (KafkaError, RegistryError, ValueError, KeyError) as e:
            self._send(200, h.page("Error", "", error=str(e)))

    def do_POST(self):
        fn, args = _route(POST_ROUTES, urlsplit(self.path).path)
        if fn is None:
            return self._send(404, h.page("Not found", ""))
        length = int(self.headers.get("Content-Length") or 0)
        form = {k: v[0] for k, v in parse_qs(self.rfile.read(length).decode(),
                                              keep_blank_values=True).items()}
        try:
            what, run, done = fn(self.data, form, *args)
            if form.get("confirm") != "yes":
                fields = {k: v for k, v in form.items() if k != "confirm"}
                return self._send(200, h.page("Confirm", h.confirmation(self.path, what,
                                                                        fields)))
            self.data.call(run)
            self._send(303, "", location=done)
        except (KafkaError, ValueError, KeyError) as e:
            self._send(200, h.page("Error", "", error=str(e)))


def serve_console(args) -> int:
    props = parse_properties(Path(args.command_config).read_text()) if args.command_config \
        else {}
    settings = registry_settings(args.schema_registry, props)
    data = ConsoleData(args.bootstrap_server, props,
                       RegistryClient(settings) if settings else None)
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
          (f" (Schema Registry {data.registry.url})" if data.registry else ""), flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        stop.set()
        server.server_close()
    return 0
