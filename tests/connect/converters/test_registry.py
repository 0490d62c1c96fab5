"""What the registry converters share, against a small local HTTP server standing in for the
registry's REST API: the calls and their bodies, basic auth from the URL or from
basic.auth.user.info, failover across URLs, the wire format and the subject strategies."""
from __future__ import annotations

import base64
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from josefk.connect.api.config import ConfigException
from josefk.connect.api.errors import DataException
from josefk.connect.api.schema import Schema, SchemaBuilder, Struct
from josefk.connect.converters.avro import AvroConverter
from josefk.connect.converters.registry import RegistryClient, RegistryError
from josefk.zk.local_server import free_port

RECORD = SchemaBuilder.struct().name("ns.Rec").field("n", Schema.INT32_SCHEMA).build()


class Registry:
    """Registers schemas (ids from 1), answers lookups by id, records every request."""

    def __init__(self):
        self.requests, self.schemas = [], {}
        registry = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _answer(self, status, body):
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/vnd.schemaregistry.v1+json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                registry.requests.append(("POST", self.path, body,
                                          self.headers.get("Authorization")))
                if self.path.endswith("/versions"):
                    ids = {v: k for k, v in registry.schemas.items()}
                    schema_id = ids.get(body["schema"], len(registry.schemas) + 1)
                    registry.schemas[schema_id] = body["schema"]
                    return self._answer(200, {"id": schema_id})
                self._answer(404, {"error_code": 40401, "message": "Subject 'x' not found."})

            def do_GET(self):
                registry.requests.append(("GET", self.path, None,
                                          self.headers.get("Authorization")))
                schema_id = int(self.path.rsplit("/", 1)[1])
                self._answer(200, {"schema": registry.schemas[schema_id]})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)


@pytest.fixture
def registry():
    with Registry() as r:
        yield r


def avro(url, is_key=False, **settings):
    c = AvroConverter()
    c.configure({"schema.registry.url": url, **settings}, is_key)
    return c


def test_wire_format_and_calls(registry):
    c = avro(registry.url)
    data = c.from_connect_data("orders", RECORD, Struct(RECORD).put("n", 5))
    assert data == b"\x00\x00\x00\x00\x01\x0a"
    c.from_connect_data("orders", RECORD, Struct(RECORD).put("n", 6))
    method, path, body, auth = registry.requests[0]
    assert (method, path, auth) == ("POST", "/subjects/orders-value/versions", None)
    assert json.loads(body["schema"])["name"] == "Rec" and "schemaType" not in body
    assert len(registry.requests) == 1  # the id is cached per subject and schema

    reader = avro(registry.url)
    assert reader.to_connect_data("orders", data) == (RECORD, Struct(RECORD).put("n", 5))
    reader.to_connect_data("orders", data)
    assert [r[:2] for r in registry.requests[1:]] == [("GET", "/schemas/ids/1")]
    assert avro(registry.url).from_connect_data("orders", RECORD, None) is None
    assert avro(registry.url).to_connect_data("orders", None) == (None, None)


def test_key_subject_and_strategies(registry):
    avro(registry.url, is_key=True).from_connect_data("t", RECORD, Struct(RECORD).put("n", 1))
    avro(registry.url, **{"value.subject.name.strategy": "RecordNameStrategy"}) \
        .from_connect_data("t", RECORD, Struct(RECORD).put("n", 1))
    avro(registry.url, **{"value.subject.name.strategy": "TopicRecordNameStrategy"}) \
        .from_connect_data("t", RECORD, Struct(RECORD).put("n", 1))
    assert [r[1] for r in registry.requests] == [
        "/subjects/t-key/versions", "/subjects/ns.Rec/versions", "/subjects/t-ns.Rec/versions"]
    with pytest.raises(ConfigException, match="Unknown subject name strategy"):
        avro(registry.url, **{"value.subject.name.strategy": "Nope"})


def test_basic_auth_from_url_and_user_info(registry):
    host = registry.url.removeprefix("http://")
    avro(f"http://ann:s3cret@{host}").from_connect_data("t", RECORD, Struct(RECORD).put("n", 1))
    avro(registry.url, **{"basic.auth.credentials.source": "USER_INFO",
                          "basic.auth.user.info": "bob:pw"}) \
        .from_connect_data("u", RECORD, Struct(RECORD).put("n", 1))
    assert [r[3] for r in registry.requests] == [
        "Basic " + base64.b64encode(b"ann:s3cret").decode(),
        "Basic " + base64.b64encode(b"bob:pw").decode()]
    with pytest.raises(ConfigException, match="basic.auth.user.info"):
        avro(registry.url, **{"basic.auth.credentials.source": "USER_INFO"})


def test_failover_and_errors(registry):
    dead = f"http://127.0.0.1:{free_port()}"
    c = avro(f"{dead},{registry.url}")
    data = c.from_connect_data("t", RECORD, Struct(RECORD).put("n", 1))
    assert data[:5] == b"\x00\x00\x00\x00\x01"
    with pytest.raises(DataException, match="^Failed to serialize Avro data from topic t: "
                                            "Subject 'x' not found.; error code: 40401$"):
        avro(registry.url, **{"auto.register.schemas": "false"}).from_connect_data(
            "t", RECORD, Struct(RECORD).put("n", 1))
    with pytest.raises(DataException, match="^Failed to deserialize data for topic t to Avro: "
                                            "Unknown magic byte!$"):
        c.to_connect_data("t", b"\x01\x00\x00\x00\x01\x00")
    with pytest.raises(RegistryError, match="no Schema Registry at"):
        RegistryClient([dead], None, timeout=2).by_id(1)
    with pytest.raises(DataException, match="^Failed to deserialize data for topic t to Avro: "
                                            "EOFError"):
        c.to_connect_data("t", b"\x00\x00\x00\x00\x01")  # schema 1 is a record: no bytes
    with pytest.raises(DataException, match="^Failed to serialize Avro data from topic t: "
                                            "Invalid value for STRUCT: dict$"):
        c.from_connect_data("t", RECORD, {"n": 1})
    with pytest.raises(DataException, match="a schema is required"):
        c.from_connect_data("t", None, {"n": 1})
    with pytest.raises(ConfigException, match="schema.registry.url"):
        AvroConverter().configure({}, False)
    for url in ("localhost:8081", "http://h:notaport", "ftp://h"):
        with pytest.raises(ConfigException, match=f"Invalid value {url} for configuration "
                                                  "schema.registry.url"):
            avro(url)
