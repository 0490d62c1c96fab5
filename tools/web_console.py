"""`josefk console`: a server-rendered web console for a josefk cluster (standard library HTTP
server on threads, pages built from the brokers' answers on every request).

Pages: the cluster and its brokers, topics and each topic's partitions (leader, replicas, ISR,
offsets, size) and configs with their sources, a message browser (from an offset or a timestamp,
key/value/headers, JSON pretty-printed, search by key), consumer groups with members,
assignments, lag and a lag chart, broker configs. Actions (create topic, alter a topic config,
delete records, reset a group's offsets) ask for confirmation first.
"""
from __future__ import annotations

import collections
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

from josefk.tools import web_html as h
from josefk.tools.client import KafkaError
from josefk.tools.groups_cli import (commit_offsets, committed_offsets, decode_assignment,
                                     describe_group)
from josefk.tools.ops_cli import SOURCES
from josefk.tools.tool_client import EARLIEST, LATEST, ClusterClient
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
    c.add_argument("--host", default="127.0.0.1")
    c.add_argument("--port", type=int, default=8080)
    c.add_argument("--lag-interval", type=float, default=10.0,
                   help="seconds between samples of every group's lag (for the lag chart)")
    c.set_defaults(func=serve_console)


class ConsoleData:
    """What the pages show, asked from the cluster; one client, used by one thread at a time."""

    def __init__(self, bootstrap: str):
        self.bootstrap = bootstrap
        self.lock = threading.Lock()
        self.cc = ClusterClient(bootstrap, "josefk-console")
        self.lag = collections.defaultdict(lambda: collections.deque(maxlen=LAG_HISTORY))

    def call(self, fn, *args):
        """Run ``fn(cluster_client, *args)`` under the lock, reconnecting once if needed."""
        with self.lock:
            try:
                return fn(self.cc, *args)
            except (OSError, ConnectionError):
                self.cc.close()
                self.cc = ClusterClient(self.bootstrap, "josefk-console")
                return fn(self.cc, *args)

    def sample_lag(self) -> None:
        for group in self.call(list_groups):
            try:
                rows = self.call(group_lag, group)
            except KafkaError:
                continue
            self.lag[group].append((time.time(), sum(r[4] for r in rows if r[4] is not None)))


# -- questions to the cluster (each takes the ClusterClient) ----------------------------------------
def list_groups(cc) -> list[str]:
    out = set()
    for node in cc.refresh([]).brokers:
        resp = cc.broker(node.node_id).request(LIST_GROUPS, states_filter=[], types_filter=[])
        out.update(g.group_id for g in resp.groups)
    return sorted(out)


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
    """Records of ``partition`` from ``offset`` (or the first at ``timestamp``), at most
    ``limit``; with ``key``, only records whose key contains it (scanning a bounded stretch)."""
    cc.refresh([topic])
    if timestamp is not None:
        offset = cc.list_offsets(topic, [partition], timestamp)[partition]
        if offset < 0:
            return []
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
    return out


# -- pages ---------------------------------------------------------------------------------------------
def overview_page(data: ConsoleData, _query) -> str:
    md = data.call(lambda cc: cc.refresh())
    brokers = h.table(["Id", "Host", "Port", "Rack", "Controller"], [
        (h.link(f"/brokers/{b.node_id}", b.node_id), h.e(b.host), h.e(b.port), h.e(b.rack or ""),
         "yes" if b.node_id == md.controller_id else "")
        for b in sorted(md.brokers, key=lambda b: b.node_id)], "brokers")
    parts = sum(len(t.partitions) for t in md.topics)
    return h.page("Cluster", f"<p id='cluster'>Cluster id <b>{h.e(md.cluster_id)}</b>, "
                  f"controller {h.e(md.controller_id)}, {len(md.brokers)} broker(s), "
                  f"{len(md.topics)} topic(s), {parts} partition(s).</p>{brokers}")


def topics_page(data: ConsoleData, _query) -> str:
    md = data.call(lambda cc: cc.refresh())
    rows = []
    for t in sorted(md.topics, key=lambda t: t.name):
        rf = len(t.partitions[0].replica_nodes) if t.partitions else 0
        under = sum(len(p.isr_nodes) < len(p.replica_nodes) for p in t.partitions)
        rows.append((h.link(f"/topics/{t.name}", t.name), len(t.partitions), rf, under,
                     "yes" if t.is_internal else ""))
    return h.page("Topics", h.table(["Topic", "Partitions", "Replication factor",
                                     "Under-replicated", "Internal"], rows, "topics"))


def topic_page(data: ConsoleData, query, topic) -> str:
    parts, starts, ends, sizes, configs = data.call(topic_view, topic)
    rows = [(p.partition_index, p.leader_id if p.leader_id >= 0 else "none",
             ",".join(map(str, p.replica_nodes)), ",".join(map(str, p.isr_nodes)),
             starts[p.partition_index], ends[p.partition_index],
             ends[p.partition_index] - starts[p.partition_index], sizes.get(p.partition_index, 0),
             h.link(f"/topics/{topic}/messages?partition={p.partition_index}", "browse"))
            for p in parts]
    cfg_rows = [(h.e(c.name), h.e(c.value), h.e(SOURCES.get(c.config_source, c.config_source)))
                for c in configs]
    actions = (h.form(f"/topics/{topic}/config", h.field("name", "Config") +
                      h.field("value", "Value (empty: back to default)"), "Alter config",
                      "alter-config") +
               h.form(f"/topics/{topic}/delete-records",
                      h.select("partition", "Partition", [(p.partition_index, p.partition_index)
                                                          for p in parts]) +
                      h.field("offset", "Before offset"), "Delete records", "delete-records"))
    return h.page(f"Topic {topic}", f"<h2>Partitions</h2>"
                  f"{h.table(['Partition', 'Leader', 'Replicas', 'ISR', 'Start offset', 'End offset', 'Messages', 'Size (bytes)', ''], rows, 'partitions')}"
                  f"<h2>Actions</h2>{actions}<h2>Configs</h2>"
                  f"{h.table(['Name', 'Value', 'Source'], cfg_rows, 'configs')}",
                  flash=_first(query, "done"))


def messages_page(data: ConsoleData, query, topic) -> str:
    partition = int(_first(query, "partition") or 0)
    offset = _int(_first(query, "offset"))
    timestamp = _int(_first(query, "timestamp"))
    limit = min(int(_first(query, "limit") or 50), 1000)
    key = _first(query, "key") or None
    records = data.call(browse, topic, partition, offset, timestamp, limit, key)
    search = ("<form method='get' id='browse'>" +
              h.field("partition", "Partition", partition) +
              h.field("offset", "From offset", "" if offset is None else offset) +
              h.field("timestamp", "or from timestamp (ms)", "" if timestamp is None
                      else timestamp) +
              h.field("limit", "Limit", limit) + h.field("key", "Key contains", key or "") +
              "<button type='submit'>Show</button></form>")
    rows = [(r.offset, r.timestamp, h.pretty(r.key),
             "<br>".join(f"{h.e(k)}: {h.e(bytes(v).decode('utf-8', 'replace') if v is not None else 'null')}"
                         for k, v in r.headers), h.pretty(r.value)) for r in records]
    return h.page(f"Messages of {topic}-{partition}", search +
                  h.table(["Offset", "Timestamp", "Key", "Headers", "Value"], rows, "messages") +
                  f"<p id='count'>{len(records)} message(s)</p>")


def groups_page(data: ConsoleData, _query) -> str:
    rows = [(h.link(f"/groups/{h.q(g)}", g),) for g in data.call(list_groups)]
    return h.page("Consumer groups", h.table(["Group"], rows, "groups"))


def group_page(data: ConsoleData, query, group) -> str:
    def gather(cc):
        c = cc.coordinator(group)
        return describe_group(c, group), group_lag(cc, group)
    d, rows = data.call(gather)
    data.lag[group].append((time.time(), sum(r[4] for r in rows if r[4] is not None)))
    members = h.table(["Member", "Client id", "Host", "Assignment"], [
        (h.e(m.member_id), h.e(m.client_id), h.e(m.client_host),
         h.e(", ".join(f"{t}-{p}" for t, p in decode_assignment(m.member_assignment))))
        for m in d.members], "members")
    lag = h.table(["Topic", "Partition", "Committed", "Log end", "Lag", "Member"], [
        tuple(h.e("-" if v is None else v) for v in r) for r in rows], "lag")
    topics = sorted({r[0] for r in rows})
    reset = h.form(f"/groups/{h.q(group)}/reset-offsets",
                   h.select("topic", "Topic", [(t, t) for t in topics]) +
                   h.select("to", "To", [("earliest", "earliest"), ("latest", "latest"),
                                         ("offset", "offset")]) +
                   h.field("offset", "Offset"), "Reset offsets", "reset-offsets")
    return h.page(f"Group {group}", f"<p id='state'>State: <b>{h.e(d.group_state)}</b>, "
                  f"protocol {h.e(d.protocol_data or '-')}</p><h2>Members</h2>{members}"
                  f"<h2>Lag</h2>{lag}{h.lag_chart(list(data.lag[group]))}"
                  f"<h2>Actions</h2>{reset}", flash=_first(query, "done"))


def broker_page(data: ConsoleData, _query, node) -> str:
    configs = data.call(lambda cc: (cc.refresh([]), describe_configs(cc, BROKER, node,
                                                                     int(node)))[1])
    rows = [(h.e(c.name), h.e(c.value), h.e(SOURCES.get(c.config_source, c.config_source)),
             "no" if c.read_only else "yes") for c in configs]
    return h.page(f"Broker {node}", h.table(["Name", "Value", "Source", "Dynamic"], rows,
                                            "configs"))


def create_topic_page(_data, _query) -> str:
    return h.page("Create topic", h.form("/create-topic", h.field("name", "Name") +
                                         h.field("partitions", "Partitions", 1) +
                                         h.field("replication_factor", "Replication factor",
                                                 -1) +
                                         h.field("configs", "Configs (k=v,k=v)"), "Create",
                                         "create-topic"))


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
    (("brokers", "*"), broker_page),
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
        except (KafkaError, ValueError, KeyError) as e:
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
    data = ConsoleData(args.bootstrap_server)
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
    print(f"josefk console on http://{args.host}:{server.server_address[1]}/", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        stop.set()
        server.server_close()
    return 0
