"""The web console's small pieces: Confluent's Protobuf message indexes (against the bytes
confluent-kafka's serializer writes), the registry settings taken from the console's options,
JSON and raw renderings, the lag chart's axes, and its registry client's authentication,
fail-over and errors (against a local HTTP server)."""
from __future__ import annotations

import base64
import html
import io
import json
import re
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
from google.protobuf import descriptor_pb2

from josefk.tools import web_html as h
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


def test_raw_shows_text_json_or_hex():
    assert h.raw(None) == "<i class='muted'>null</i>"
    assert h.raw(b"plain <b>") == "<pre>plain &lt;b&gt;</pre>"
    assert "pre class='json" in h.raw(b'{"a": 1}')
    assert "00 00 00 00 01 02" in h.raw(b"\x00\x00\x00\x00\x01\x02")  # control characters
    assert "ff fe" in h.raw(b"\xff\xfe")  # not UTF-8


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
