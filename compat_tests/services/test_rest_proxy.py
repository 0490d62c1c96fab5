"""``josefk rest`` with a plain HTTP client (httpx): produce in every embedded format, read back
through a consumer instance, commit and resume after a restart; v3 admin calls against what
``josefk topics`` / ``josefk groups`` show; bad input."""
from __future__ import annotations

import base64
import json
import subprocess
import sys
import threading
import uuid

import httpx
from confluent_kafka import Consumer, Producer

from compat_tests.http_services import SR, ServiceProcess, wait_until

V2 = "application/vnd.kafka.v2+json"


def _ctype(fmt):
    return {"Content-Type": f"application/vnd.kafka.{fmt}.v2+json"}


def _read_all(http, base, fmt, count, timeout=30):
    got = []
    wait_until(lambda: got.extend(http.get(f"{base}/records?timeout=1000", headers={
        "Accept": f"application/vnd.kafka.{fmt}.v2+json"}).json()) or len(got) >= count,
               timeout)
    return got


def _consumer(http, group, fmt, **conf):
    r = http.post(f"/consumers/{group}", headers={"Content-Type": V2},
                  json={"name": f"c-{uuid.uuid4().hex[:6]}", "format": fmt,
                        "auto.offset.reset": "earliest", **conf})
    assert r.status_code == 200, r.text
    return r.json()["base_uri"]


AVRO = json.dumps({"type": "record", "name": "Click", "fields": [
    {"name": "page", "type": "string"}, {"name": "n", "type": "int"}]})
JSONS = json.dumps({"type": "object", "properties": {"page": {"type": "string"},
                                                     "n": {"type": "integer"}}})
PROTO = 'syntax = "proto3";\nmessage Click { string page = 1; int32 n = 2; }\n'
VALUES = [{"page": "/a", "n": 1}, {"page": "/b", "n": 2}]


def test_produce_and_consume_every_format(rest_proxy, new_topic):
    http = httpx.Client(base_url=rest_proxy.url, timeout=30)
    cases = [
        ("binary", {"records": [{"key": base64.b64encode(b"k").decode(),
                                 "value": base64.b64encode(b"\x00\xffraw").decode()}]},
         [("k", b"\x00\xffraw")]),
        ("json", {"records": [{"key": "k1", "value": {"x": [1, 2]}}, {"value": None}]}, None),
        ("avro", {"value_schema": AVRO, "records": [{"value": v} for v in VALUES]}, None),
        ("jsonschema", {"value_schema": JSONS, "records": [{"value": v} for v in VALUES]}, None),
        ("protobuf", {"value_schema": PROTO, "records": [{"value": v} for v in VALUES]}, None),
    ]
    for fmt, body, _ in cases:
        topic = new_topic(partitions=2)
        r = http.post(f"/topics/{topic}", headers=_ctype(fmt), json=body)
        assert r.status_code == 200, (fmt, r.text)
        answer = r.json()
        assert all(o["error_code"] is None and o["offset"] >= 0 for o in answer["offsets"])
        if fmt in ("avro", "jsonschema", "protobuf"):
            assert isinstance(answer["value_schema_id"], int)
        base = _consumer(http, f"g-{topic}", fmt)
        assert http.post(f"{base}/subscription", headers={"Content-Type": V2},
                         json={"topics": [topic]}).status_code == 204
        got = _read_all(http, base, fmt, len(body["records"]))
        got.sort(key=lambda m: (m["partition"], m["offset"]))
        if fmt == "binary":
            assert [(base64.b64decode(m["key"]), base64.b64decode(m["value"])) for m in got] == \
                [(b"k", b"\x00\xffraw")]
        elif fmt == "json":
            assert sorted(json.dumps(m["value"]) for m in got) == ["null", '{"x":[1,2]}'] or \
                sorted(json.dumps(m["value"]) for m in got) == ['null', '{"x": [1, 2]}']
        else:
            assert sorted(m["value"]["page"] for m in got) == ["/a", "/b"], got
            assert sorted(int(m["value"]["n"]) for m in got) == [1, 2]
        assert http.delete(base).status_code == 204


def test_commit_and_resume_after_restart(broker, schema_registry, new_topic, tmp_path):
    topic = new_topic()
    proxy = ServiceProcess("rest", {"bootstrap.servers": broker.bootstrap},
                           tmp_path / "rest.log").start()
    try:
        http = httpx.Client(base_url=proxy.url, timeout=30)
        r = http.post(f"/topics/{topic}", headers=_ctype("json"),
                      json={"records": [{"value": i} for i in range(6)]})
        assert [o["offset"] for o in r.json()["offsets"]] == list(range(6))
        group = f"g-{topic}"
        base = _consumer(http, group, "json", **{"auto.commit.enable": "false"})
        assert http.post(f"{base}/assignments", headers={"Content-Type": V2},
                         json={"partitions": [{"topic": topic, "partition": 0}]}).status_code \
            == 204
        got = _read_all(http, base, "json", 6)
        assert [m["value"] for m in got] == list(range(6))
        # commit "consumed up to 2": the group resumes at 3
        assert http.post(f"{base}/offsets", headers={"Content-Type": V2}, json={
            "offsets": [{"topic": topic, "partition": 0, "offset": 2}]}).status_code == 200
        committed = http.request("GET", f"{base}/offsets", headers={"Content-Type": V2},
                                 json={"partitions": [{"topic": topic, "partition": 0}]}).json()
        assert committed["offsets"][0]["offset"] == 3
        # seek back to the beginning, then to offset 4
        http.post(f"{base}/positions/beginning", headers={"Content-Type": V2},
                  json={"partitions": [{"topic": topic, "partition": 0}]})
        assert [m["value"] for m in _read_all(http, base, "json", 6)] == list(range(6))
        assert http.post(f"{base}/positions", headers={"Content-Type": V2}, json={
            "offsets": [{"topic": topic, "partition": 0, "offset": 4}]}).status_code == 204
        assert [m["value"] for m in _read_all(http, base, "json", 2)] == [4, 5]
        proxy.stop()
        proxy.start()
        http = httpx.Client(base_url=proxy.url, timeout=30)
        assert http.get(f"{base.split('/consumers')[1] and base}/records").status_code == 404
        base = _consumer(http, group, "json")
        http.post(f"{base}/subscription", headers={"Content-Type": V2}, json={"topics": [topic]})
        assert [m["value"] for m in _read_all(http, base, "json", 3)] == [3, 4, 5]
        # v3: the group's lag as josefk groups describe shows it
        http.post(f"{base}/offsets", headers={"Content-Type": V2})
        cid = http.get("/v3/clusters").json()["data"][0]["cluster_id"]
        lags = http.get(f"/v3/clusters/{cid}/consumer-groups/{group}/lags").json()["data"]
        assert [(x["topic_name"], x["current_offset"], x["log_end_offset"], x["lag"])
                for x in lags] == [(topic, 6, 6, 0)]
        out = subprocess.run([sys.executable, "-m", "josefk", "groups", "describe",
                              "--bootstrap-server", broker.bootstrap, "--group", group],
                             capture_output=True, text=True, timeout=60).stdout
        assert topic in out and " 6 " in f" {out.replace(chr(10), ' ')} "
    finally:
        proxy.stop()


def test_v3_admin_matches_the_cli(rest_proxy, broker):
    http = httpx.Client(base_url=rest_proxy.url, timeout=30)
    cid = http.get("/v3/clusters").json()["data"][0]["cluster_id"]
    c = f"/v3/clusters/{cid}"
    topic = f"v3-{uuid.uuid4().hex[:8]}"
    r = http.post(f"{c}/topics", json={"topic_name": topic, "partitions_count": 3,
                                       "configs": [{"name": "retention.ms", "value": "3600000"}]})
    assert r.status_code == 201, r.text
    assert r.json()["partitions_count"] == 3
    assert http.post(f"{c}/topics", json={"topic_name": topic}).json()["error_code"] == 40002
    out = subprocess.run([sys.executable, "-m", "josefk", "topics", "describe",
                          "--bootstrap-server", broker.bootstrap, "--topic", topic],
                         capture_output=True, text=True, timeout=60).stdout
    assert "PartitionCount: 3" in out or "PartitionCount:3" in out.replace(" ", "")
    parts = http.get(f"{c}/topics/{topic}/partitions").json()["data"]
    assert [p["partition_id"] for p in parts] == [0, 1, 2]
    assert http.get(f"{c}/topics/{topic}/configs/retention.ms").json()["value"] == "3600000"
    assert http.put(f"{c}/topics/{topic}/configs/retention.ms",
                    json={"value": "7200000"}).status_code == 204
    assert http.get(f"{c}/topics/{topic}/configs/retention.ms").json()["value"] == "7200000"
    assert http.post(f"{c}/topics/{topic}/configs:alter", json={"data": [
        {"name": "retention.ms", "operation": "DELETE"}]}).status_code == 204
    assert http.get(f"{c}/topics/{topic}/configs/retention.ms").json()["is_default"] is True
    brokers = http.get(f"{c}/brokers").json()["data"]
    assert [b["port"] for b in brokers] == [broker.port]
    # records: one, and a stream of several
    r = http.post(f"{c}/topics/{topic}/records", json={
        "partition_id": 1, "headers": [{"name": "h", "value": base64.b64encode(b"v").decode()}],
        "key": {"type": "STRING", "data": "k"}, "value": {"type": "JSON", "data": {"a": 1}}})
    assert (r.json()["error_code"], r.json()["partition_id"], r.json()["offset"]) == (200, 1, 0)
    r = http.post(f"{c}/topics/{topic}/records", content=json.dumps(
        {"value": {"type": "BINARY", "data": "aGk="}}) + "\n" + json.dumps(
        {"value": {"type": "JSON", "data": 2}}))
    answers = [json.loads(line) for line in r.text.splitlines()]
    assert [a["error_code"] for a in answers] == [200, 200]
    assert http.delete(f"{c}/topics/{topic}").status_code == 204
    assert http.get(f"{c}/topics/{topic}").status_code == 404


def test_bad_input_gets_confluent_errors(rest_proxy, new_topic):
    http = httpx.Client(base_url=rest_proxy.url, timeout=30)
    topic = new_topic()
    cases = [
        (http.post(f"/topics/{topic}", headers={"Content-Type": "text/plain"}, content="x"),
         415, 415),
        (http.post(f"/topics/{topic}", headers=_ctype("json"), content="{oops"), 400, 400),
        (http.post(f"/topics/{topic}", headers=_ctype("binary"),
                   json={"records": [{"value": "not base64!"}]}), 422, 42203),
        (http.post(f"/topics/{topic}", headers=_ctype("avro"), json={"records": [{"value": 1}]}),
         422, 42202),
        (http.post(f"/topics/{topic}", headers=_ctype("avro"), json={
            "value_schema": '{"type": "nonsense"}', "records": [{"value": 1}]}), 422, 42205),
        (http.post(f"/topics/{topic}", headers=_ctype("avro"), json={
            "value_schema": '"int"', "records": [{"value": "not an int"}]}), 422, 42203),
        (http.post("/topics/no-such-topic-x1", headers=_ctype("json"),
                   json={"records": [{"value": 1}]}), 404, 40401),
        (http.post(f"/topics/{topic}/partitions/9", headers=_ctype("json"),
                   json={"records": [{"value": 1}]}), 404, 40402),
        (http.get("/consumers/g/instances/none/records"), 404, 40403),
        (http.post(f"/topics/{topic}", headers=_ctype("json"),
                   content=json.dumps({"records": [{"value": "x" * (2 << 20)}]})), 413, 413),
    ]
    for r, status, code in cases:
        assert (r.status_code, r.json()["error_code"]) == (status, code), r.text
    base = _consumer(http, f"g-{topic}", "json")
    r = http.get(f"{base}/records", headers={"Accept": "application/vnd.kafka.avro.v2+json"})
    assert (r.status_code, r.json()["error_code"]) == (406, 40601)
    name = base.rsplit("/", 1)[1]
    r = http.post(f"/consumers/g-{topic}", headers={"Content-Type": V2}, json={"name": name})
    assert r.json()["error_code"] == 40902
    # bad requests in parallel with good ones: every good one is answered
    good, errors = [], []

    def hammer(bad: bool):
        with httpx.Client(base_url=rest_proxy.url, timeout=30) as c:
            for i in range(20):
                if bad:
                    c.post(f"/topics/{topic}", headers=_ctype("json"), content="{" * 1000)
                else:
                    r = c.post(f"/topics/{topic}", headers=_ctype("json"),
                               json={"records": [{"value": i}]})
                    (good if r.status_code == 200 else errors).append(r.status_code)

    threads = [threading.Thread(target=hammer, args=(i % 2 == 0,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(good) == 40 and not errors


def test_json_consumer_never_skips_a_record_it_cannot_read(rest_proxy, broker, new_topic):
    """A record that is not JSON ends the answer before it; alone, it is Confluent's 50002, at
    every read until the consumer seeks past it. Commits cover only records answered."""
    topic = new_topic()
    p = Producer({"bootstrap.servers": broker.bootstrap})
    for value in (b'{"n": 0}', b'{"n": 1}', b"\x00not json", b'{"n": 3}'):
        p.produce(topic, value, partition=0)
    assert p.flush(15) == 0
    http = httpx.Client(base_url=rest_proxy.url, timeout=30)
    base = _consumer(http, f"g-{topic}", "json", **{"auto.commit.enable": "false"})
    part = {"partitions": [{"topic": topic, "partition": 0}]}
    assert http.post(f"{base}/assignments", headers={"Content-Type": V2},
                     json=part).status_code == 204
    accept = {"Accept": "application/vnd.kafka.json.v2+json"}
    got = _read_all(http, base, "json", 2)
    assert [(m["offset"], m["value"]) for m in got] == [(0, {"n": 0}), (1, {"n": 1})]
    r = http.post(f"{base}/offsets", headers={"Content-Type": V2})  # what was answered
    assert (r.status_code, r.json()) == (200, []), r.text  # Confluent's (empty) list
    for _ in range(2):  # not skipped: the same answer again
        r = http.get(f"{base}/records?timeout=1000", headers=accept)
        assert (r.status_code, r.json()["error_code"]) == (500, 50002), r.text
        assert "offset 2" in r.json()["message"]
    committed = http.request("GET", f"{base}/offsets", headers={"Content-Type": V2},
                             json=part).json()["offsets"]
    assert committed[0]["offset"] == 2  # the commit covered what was answered, nothing more
    assert http.post(f"{base}/positions", headers={"Content-Type": V2}, json={
        "offsets": [{"topic": topic, "partition": 0, "offset": 3}]}).status_code == 204
    assert [m["value"] for m in _read_all(http, base, "json", 1)] == [{"n": 3}]
    # Confluent's commit of given offsets: "consumed up to" the offset, with its metadata
    assert http.post(f"{base}/offsets", headers={"Content-Type": V2}, json={"offsets": [
        {"topic": topic, "partition": 0, "offset": 3, "metadata": "checkpoint"}]}).status_code \
        == 200
    committed = http.request("GET", f"{base}/offsets", headers={"Content-Type": V2},
                             json=part).json()["offsets"]
    assert (committed[0]["offset"], committed[0]["metadata"]) == (4, "checkpoint")
    assert http.delete(base).status_code == 204


def test_small_max_bytes_reads_every_record_once(rest_proxy, new_topic):
    """Records fetched beyond max_bytes, of any partition, are read by the next requests."""
    http = httpx.Client(base_url=rest_proxy.url, timeout=30)
    topic = new_topic(partitions=2)
    for partition in (0, 1):
        r = http.post(f"/topics/{topic}/partitions/{partition}", headers=_ctype("json"),
                      json={"records": [{"value": [partition, i]} for i in range(4)]})
        assert r.status_code == 200, r.text
    base = _consumer(http, f"g-{topic}", "json")
    assert http.post(f"{base}/subscription", headers={"Content-Type": V2},
                     json={"topics": [topic]}).status_code == 204
    got = []

    def read():
        r = http.get(f"{base}/records?timeout=1000&max_bytes=10",
                     headers={"Accept": "application/vnd.kafka.json.v2+json"})
        assert len(r.json()) <= 1, r.text
        got.extend(r.json())
        return len(got) >= 8

    wait_until(read, 60, interval=0)
    assert sorted(tuple(m["value"]) for m in got) == [(p, i) for p in (0, 1) for i in range(4)]
    assert http.delete(base).status_code == 204


def test_v3_kafka_errors_as_confluent_answers_them(rest_proxy):
    http = httpx.Client(base_url=rest_proxy.url, timeout=30)
    c = f"/v3/clusters/{http.get('/v3/clusters').json()['data'][0]['cluster_id']}"
    topic = f"v3e-{uuid.uuid4().hex[:8]}"
    r = http.post(f"{c}/topics", json={"topic_name": topic, "replication_factor": 3})
    assert (r.status_code, r.json()["error_code"]) == (400, 40002), r.text
    for path in (f"{c}/topics/{topic}", f"{c}/topics/{topic}/partitions",
                 f"{c}/topics/{topic}/configs"):
        r = http.get(path)
        assert (r.status_code, r.json()) == (404, {
            "error_code": 40403, "message": "This server does not host this topic-partition."})
    r = http.post(f"{c}/topics/{topic}/records", json={"value": {"type": "JSON", "data": 1}})
    assert (r.status_code, r.json()["error_code"]) == (404, 40403)
    assert http.get("/v3/clusters/nope").json()["error_code"] == 404


def test_protobuf_with_references_and_the_first_message(rest_proxy, schema_registry, new_topic):
    """A Protobuf schema importing another by reference: the proxy builds it with its
    references and produces its first message type (a request cannot name another, as with
    Confluent's proxy); a consumer instance reads it back."""
    http = httpx.Client(base_url=rest_proxy.url, timeout=30)
    sr = httpx.Client(base_url=schema_registry.url, headers={"Content-Type": SR}, timeout=20)
    tag = uuid.uuid4().hex[:6]
    dep_subject = f"address-{tag}"
    r = sr.post(f"/subjects/{dep_subject}/versions", json={"schemaType": "PROTOBUF", "schema": (
        f'syntax = "proto3";\npackage p{tag};\nmessage Address {{ string city = 1; }}\n')})
    assert r.status_code == 200, r.text
    main = (f'syntax = "proto3";\npackage p{tag};\nimport "address.proto";\n'
            f'message Customer {{ string name = 1; Address home = 2; }}\n'
            f'message Other {{ int64 n = 1; }}\n')
    r = sr.post(f"/subjects/customer-{tag}/versions", json={
        "schemaType": "PROTOBUF", "schema": main,
        "references": [{"name": "address.proto", "subject": dep_subject, "version": 1}]})
    assert r.status_code == 200, r.text
    schema_id = r.json()["id"]
    topic = new_topic()
    value = {"name": "ann", "home": {"city": "Oslo"}}
    r = http.post(f"/topics/{topic}", headers=_ctype("protobuf"),
                  json={"value_schema_id": schema_id, "records": [{"value": value}]})
    assert r.status_code == 200 and r.json()["offsets"][0]["error_code"] is None, r.text
    r = http.post(f"/topics/{topic}", headers=_ctype("protobuf"), json={
        "value_schema_id": schema_id, "records": [{"value": {"n": 5}}]})  # Other's field
    assert (r.status_code, r.json()["error_code"]) == (422, 42203), r.text
    base = _consumer(http, f"g-{topic}", "protobuf")
    http.post(f"{base}/subscription", headers={"Content-Type": V2}, json={"topics": [topic]})
    got = _read_all(http, base, "protobuf", 1)
    assert [m["value"] for m in got] == [value]
    assert http.delete(base).status_code == 204
    c = Consumer({"bootstrap.servers": rest_proxy.props["bootstrap.servers"],
                  "group.id": f"raw-{topic}", "auto.offset.reset": "earliest"})
    try:  # Confluent's wire format: magic 0, the id, message indexes [0] (written as 0)
        c.subscribe([topic])
        raw = wait_until(lambda: next((m.value() for m in c.consume(1, 1.0) if not m.error()),
                                      None), 30)
    finally:
        c.close()
    assert raw[:6] == b"\0" + schema_id.to_bytes(4, "big") + b"\0"
