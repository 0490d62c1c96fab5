"""The web console's small pieces: Confluent's Protobuf message indexes (against the bytes
confluent-kafka's serializer writes), the registry settings taken from the console's options,
JSON and one-line record renderings, the lag chart's axes, the message browser's merging of
partitions page by page and the lag of partitions without a committed offset, and its registry
client's authentication, fail-over and errors (against a local HTTP server)."""
from __future__ import annotations

import base64
import collections
import html
import io
import json
import re
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
from google.protobuf import descriptor_pb2

from josefk.tools import web_html as h
from josefk.tools.web_console import (cursor_text, lag_rows, merge_page, parse_cursor,
                                      record_matcher, total_lag)
from josefk.tools.web_schemas import (RegistryClient, RegistryError, message_indexes,
                                      message_name, registry_settings)


@pytest.mark.parametrize("indexes", [[0], [1], [0, 0], [1, 0], [3, 2, 1], [70, 200], [5000]])
def test_message_indexes_read_what_the_serializer_writes(indexes):
    buf = io.BytesIO()
    ProtobufSerializer._encode_varints(buf, indexes)
    written = buf.getvalue()
    assert message_indexes(written + b"\x0a\x01x") == (indexes, len(written))


def test_message_indexes_refuse_a_negative_count():
    with pytest.raises(ValueError):
        message_indexes(b"\x01\x00")


def test_message_name_walks_the_nesting():
    fdp = descriptor_pb2.FileDescriptorProto(package="shop")
    fdp.message_type.add(name="A")
    b = fdp.message_type.add(name="B")
    b.nested_type.add(name="C").nested_type.add(name="D")
    assert message_name(fdp, [0]) == "shop.A"
    assert message_name(fdp, [1, 0, 0]) == "shop.B.C.D"
    with pytest.raises(ValueError):
        message_name(fdp, [2])


def test_registry_settings_from_the_option_or_the_client_properties():
    assert registry_settings(None, {}) is None
    assert registry_settings("http://r:8081", {}) == {"url": "http://r:8081"}
    props = {"schema.registry.url": "https://r:8081",
             "schema.registry.basic.auth.user.info": "u:p",
             "schema.registry.ssl.truststore.location": "/ca.pem"}
    assert registry_settings(None, props) == {"url": "https://r:8081",
                                              "basic.auth.user.info": "u:p",
                                              "ssl.ca.location": "/ca.pem"}
    assert registry_settings("http://other:1", props)["url"] == "http://other:1"


def _text(markup: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", markup))


def test_json_block_is_indented_and_marked():
    value = {"a": [1, -2.5e3, True, None], "say \"<hi>\"": "x: 1"}
    block = h.json_block(value)
    assert json.loads(_text(block)) == value and "\n  " in _text(block)
    assert "<span class='k'>&quot;a&quot;</span>:" in block
    assert "<span class='n'>-2500.0</span>" in block and "<span class='b'>true</span>" in block
    assert "<span class='s'>&quot;x: 1&quot;</span>" in block


def test_record_is_one_line_opening_onto_all_of_it():
    assert h.record(None) == "<i class='muted'>null</i>"
    assert h.record(b"plain <b>") == "<span class='line'>plain &lt;b&gt;</span>"
    obj = h.record(b'{"a": [1, 2], "b": "x"}')
    summary, full = obj.split("</summary>")
    assert _text(summary) == '{"a": [1, 2], "b": "x"}' and "class='json line'" in summary
    assert json.loads(_text(full)) == {"a": [1, 2], "b": "x"} and "\n  " in _text(full)
    long = "word " * 100
    assert _text(h.record(long.encode()).split("</summary>")[1]) == long
    hexed = h.record(b"\x00\x00\x00\x00\x01\x02")  # control characters
    assert "6 bytes: 00 00 00 00 01 02" in _text(hexed) and "pre class='hex'" in hexed
    assert "ff fe" in h.record(b"\xff\xfe")  # not UTF-8
    assert h.json_value(42) == "<code class='json line'><span class='n'>42</span></code>"


Rec = collections.namedtuple("Rec", "offset timestamp key value")


def _logs():
    """Partition 0: offsets 0-9 at even times, 1: offsets 0-4 at odd times; 2 is empty; each
    log starts at 0 but 0's, which starts at 2 (records deleted)."""
    logs = {0: [Rec(o, 2 * o, b"k%d" % o, b"zero %d" % o) for o in range(2, 10)],
            1: [Rec(o, 2 * o + 1, None, b"one %d" % o) for o in range(5)], 2: []}
    first, ends = {0: 2, 1: 0, 2: 0}, {0: 10, 1: 5, 2: 0}
    reads = []

    def read(ranges):
        reads.append(dict(ranges))
        return {p: [r for r in logs[p] if lo <= r.offset < hi] for p, (lo, hi) in ranges.items()}
    return logs, first, ends, read, reads


def _pages(read, starts, bounds, newest, limit, match=None):
    out, cursor = [], dict(starts)
    for _ in range(20):
        page = merge_page(read, cursor, bounds, newest, limit, match)
        out.append([(p, r.offset) for p, r in page.records])
        cursor = page.cursor
        if not page.more:
            return out
    raise AssertionError("no last page")


def test_newest_first_merges_partitions_by_time_page_by_page():
    logs, first, ends, read, reads = _logs()
    pages = _pages(read, ends, first, True, 4)
    assert pages[0] == [(0, 9), (0, 8), (0, 7), (0, 6)]
    everything = [(p, r.offset) for p, r in sorted(
        ((p, r) for p, rs in logs.items() for r in rs), key=lambda x: -x[1].timestamp)]
    assert [tp for page in pages for tp in page] == everything  # no gap, no repeat
    assert [len(p) for p in pages] == [4, 4, 4, 1]
    # Each partition is read in windows below what it showed: never below its log start.
    assert all(lo >= first[p] and hi <= ends[p] for r in reads for p, (lo, hi) in r.items())


def test_oldest_first_and_from_an_offset():
    logs, first, ends, read, _ = _logs()
    pages = _pages(read, first, ends, False, 5)
    assert pages[0] == [(1, 0), (1, 1), (0, 2), (1, 2), (0, 3)]
    assert sum(map(len, pages)) == 13
    page = merge_page(read, {0: 8, 1: 4, 2: 0}, ends, False, 50)
    assert [(p, r.offset) for p, r in page.records] == [(1, 4), (0, 8), (0, 9)]
    assert not page.more and page.cursor == {0: 10, 1: 5, 2: 0}


def test_a_search_looks_at_keys_and_values_within_its_bound():
    _, first, ends, read, _ = _logs()
    in_value = record_matcher("ONE", "any")
    page = merge_page(read, first, ends, False, 50, in_value)
    assert [(p, r.offset) for p, r in page.records] == [(1, o) for o in range(5)]
    assert page.scanned == 13 and not page.more
    page = merge_page(read, first, ends, False, 50, record_matcher("k3", "key"))
    assert [(p, r.offset) for p, r in page.records] == [(0, 3)]
    assert merge_page(read, first, ends, False, 50, record_matcher("k3", "value")).records == []
    # Bounded: after 4 records looked at, the page ends and its cursor continues the search.
    page = merge_page(read, first, ends, False, 50, in_value, scan_limit=4)
    assert page.scanned == 4 and page.more
    assert [(p, r.offset) for p, r in page.records] == [(1, 0), (1, 1), (1, 2)]
    rest = merge_page(read, page.cursor, ends, False, 50, in_value)
    assert [(p, r.offset) for p, r in rest.records] == [(1, 3), (1, 4)]


def test_a_long_search_reads_many_partitions_in_a_few_rounds():
    """50 partitions whose records all share one time (a burst): the merge drains them one
    after another, yet a search through all 2,000 takes a dozen fetch rounds, not one a
    partition, and reads each record about once."""
    logs = {p: [Rec(o, 1000, b"k", b"v") for o in range(40)] for p in range(50)}
    reads = []

    def read(ranges):
        reads.append(sum(hi - lo for lo, hi in ranges.values()))
        return {p: logs[p][lo:hi] for p, (lo, hi) in ranges.items()}
    ends, starts = {p: 40 for p in logs}, {p: 0 for p in logs}
    page = merge_page(read, ends, starts, True, 50, record_matcher("nowhere", "any"))
    assert page.records == [] and page.scanned == 2000 and not page.more
    assert len(reads) <= 12 and sum(reads) == 2000, reads


def test_cursor_text_round_trip():
    assert parse_cursor(cursor_text({3: 10, 0: 5})) == {0: 5, 3: 10}
    assert cursor_text({3: 10, 0: 5}) == "0:5,3:10" and parse_cursor("") == {}


def test_lag_counts_partitions_without_a_committed_offset_from_the_log_start():
    """The issue's case: a group committed on partitions 0 and 2 of a topic but never on 1,
    whose 513 records all wait (its log starts at 7 after a deletion): 20 + 513 + 0."""
    committed = {("t", 0): 80, ("t", 2): 50}
    partitions = {"t": [0, 1, 2], "other": [0]}
    starts = {("t", 0): 0, ("t", 1): 7, ("t", 2): 0}
    ends = {("t", 0): 100, ("t", 1): 520, ("t", 2): 50}
    rows = lag_rows(committed, {}, partitions, starts, ends)
    assert rows == [("t", 0, 80, 100, 20, None), ("t", 1, None, 520, 513, None),
                    ("t", 2, 50, 50, 0, None)]
    assert total_lag(rows) == 533
    # An assigned partition of a topic the cluster no longer knows: no log end, no lag.
    rows = lag_rows({}, {("gone", 0): "m1"}, partitions, starts, ends)
    assert rows == [("gone", 0, None, None, None, "m1")] and total_lag(rows) == 0


def test_nice_ticks_and_compact_numbers():
    assert h.nice_ticks(7) == [0, 2, 4, 6, 8]
    assert h.nice_ticks(0) == [0, 1]
    assert h.nice_ticks(1234) == [0, 500, 1000, 1500]
    assert [h.compact(v) for v in (0, 950, 1500, 2_000_000)] == ["0", "950", "1.5k", "2M"]


def test_lag_chart_axes():
    samples = [(1_000_000.0 + i * 10, v) for i, v in enumerate([0, 5, 1200, 40])]
    svg = h.lag_chart(samples)
    assert "lag (messages)" in svg and "1.5k" in svg
    ticks = re.findall(r"data-ms='(\d+)' data-fmt='time'", svg)
    assert [int(t) for t in ticks] == [1_000_000_000 + i * 5000 for i in range(7)]
    assert "4 samples over 30 s; now 40 messages behind" in svg
    assert h.lag_chart(samples[:1]).startswith("<p id='lag-chart'>")


class _Registry(BaseHTTPRequestHandler):
    """Answers GET /subjects to user:secret only, as Confluent's registry answers errors."""

    def log_message(self, *args):
        pass

    def do_GET(self):
        ok = self.headers.get("Authorization") == "Basic " + base64.b64encode(
            b"user:secret").decode()
        status, body = (200, ["a", "b"]) if ok else (401, {"error_code": 401,
                                                            "message": "Unauthorized"})
        raw = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/vnd.schemaregistry.v1+json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)


@pytest.fixture
def registry_url():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Registry)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_registry_client_authenticates_fails_over_and_reports_errors(registry_url):
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    dead = f"http://127.0.0.1:{closed.getsockname()[1]}"  # bound, not listening: refused
    client = RegistryClient({"url": f"{dead},{registry_url}", "basic.auth.user.info":
                             "user:secret"})
    assert client.subjects() == ["a", "b"]
    with pytest.raises(RegistryError) as err:
        RegistryClient({"url": registry_url}).subjects()
    assert (err.value.status, err.value.code, str(err.value)) == (401, 401, "Unauthorized")
    with pytest.raises(RegistryError) as err:
        RegistryClient({"url": dead}).subjects()
    assert err.value.status is None and f"Schema Registry at {dead} unreachable" in str(err.value)
    closed.close()


@pytest.mark.josefk_topic(partitions=2)
def test_browse_steps_over_transaction_markers_in_every_partition(josefk_broker, josefk_topic):
    """On a broker: committed transactions leave a control record after each partition's
    records; the browser reads around them, newest first a record a page, and oldest first."""
    from confluent_kafka import Producer

    from josefk.tools.tool_client import ClusterClient
    from josefk.tools.web_console import browse

    topic = josefk_topic
    p = Producer({"bootstrap.servers": josefk_broker.bootstrap_servers,
                  "transactional.id": f"web-{topic}"})
    p.init_transactions(30)
    now = int(time.time() * 1000)
    for batch in ([("a", 0), ("b", 0), ("c", 1)], [("d", 0)]):
        p.begin_transaction()
        for value, partition in batch:
            now += 1
            p.produce(topic, value=value.encode(), partition=partition, timestamp=now)
        p.commit_transaction(30)
    with ClusterClient(josefk_broker.bootstrap_servers, "test") as cc:
        assert cc.list_offsets(topic, [0, 1], -1) == {0: 5, 1: 2}  # with the markers
        seen, cursor = [], {}
        for _ in range(6):
            _all, shown, page = browse(cc, topic, None, "newest", None, None, cursor, 1, None)
            seen += [(part, r.offset, bytes(r.value)) for part, r in page.records]
            cursor = page.cursor
            if not page.more:
                break
        assert shown == [0, 1]
        assert seen == [(0, 3, b"d"), (1, 0, b"c"), (0, 1, b"b"), (0, 0, b"a")]
        _all, _shown, page = browse(cc, topic, None, "oldest", None, None, {}, 10, None)
        assert [bytes(r.value) for _p, r in page.records] == [b"a", b"b", b"c", b"d"]
        assert page.cursor == {0: 5, 1: 2} and not page.more  # past the last markers
        _all, _shown, page = browse(cc, topic, 1, "offset", 1, None, {}, 10, None)
        assert page.records == [] and page.cursor == {1: 2} and not page.more
