"""``josefk registry`` with confluent-kafka's SchemaRegistryClient and serializers, plain HTTP
for Confluent's API and error codes, and two instances sharing one _schemas topic."""
from __future__ import annotations

import base64
import json
import uuid

import httpx
import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.schema_registry import Schema, SchemaReference, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from compat_tests.http_services import SR, ServiceProcess, wait_primary, wait_until

LEVELS = ("BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE", "FULL",
          "FULL_TRANSITIVE", "NONE")


def _subject(prefix="s"):
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def _roundtrip(bootstrap, topic, serializer, deserializer, values):
    """Produce ``values`` serialized, consume them back deserialized."""
    p = Producer({"bootstrap.servers": bootstrap})
    ctx = SerializationContext(topic, MessageField.VALUE)
    for v in values:
        p.produce(topic, serializer(v, ctx))
    assert p.flush(15) == 0
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": topic,
                  "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    out = []
    try:
        wait_until(lambda: out.extend(deserializer(m.value(), ctx) for m in
                                      c.consume(10, 1.0) if not m.error()) or
                   len(out) >= len(values), 30)
    finally:
        c.close()
    return out


def test_avro_roundtrip(broker, new_topic, schema_registry):
    topic = new_topic()
    client = SchemaRegistryClient({"url": schema_registry.url})
    schema = json.dumps({"type": "record", "name": "User", "namespace": "t", "fields": [
        {"name": "name", "type": "string"}, {"name": "age", "type": ["null", "int"],
                                             "default": None},
        {"name": "tags", "type": {"type": "array", "items": "string"}}]})
    values = [{"name": "ann", "age": 31, "tags": ["a"]}, {"name": "bo", "age": None, "tags": []}]
    got = _roundtrip(broker.bootstrap, topic, AvroSerializer(client, schema),
                     AvroDeserializer(client), values)
    assert got == values
    latest = client.get_latest_version(f"{topic}-value")
    assert latest.version == 1 and json.loads(latest.schema.schema_str)["name"] == "User"


def test_json_schema_roundtrip(broker, new_topic, schema_registry):
    topic = new_topic()
    client = SchemaRegistryClient({"url": schema_registry.url})
    schema = json.dumps({"$schema": "http://json-schema.org/draft-07/schema#",
                         "title": "Order", "type": "object",
                         "properties": {"id": {"type": "integer"}, "item": {"type": "string"}},
                         "required": ["id"]})
    values = [{"id": 1, "item": "x"}, {"id": 2}]
    got = _roundtrip(broker.bootstrap, topic, JSONSerializer(schema, client),
                     JSONDeserializer(schema, schema_registry_client=client), values)
    assert got == values
    assert client.get_latest_version(f"{topic}-value").schema.schema_type == "JSON"


def _user_message():
    """A generated-code-free Protobuf message class (file user.proto, importing a
    well-known type)."""
    fdp = descriptor_pb2.FileDescriptorProto(
        name=f"user_{uuid.uuid4().hex[:6]}.proto", package="compat.t", syntax="proto3",
        dependency=["google/protobuf/timestamp.proto"])
    m = fdp.message_type.add(name="User")
    F = descriptor_pb2.FieldDescriptorProto
    m.field.add(name="name", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    m.field.add(name="ids", number=2, type=F.TYPE_INT64, label=F.LABEL_REPEATED)
    m.field.add(name="at", number=3, type=F.TYPE_MESSAGE, label=F.LABEL_OPTIONAL,
                type_name=".google.protobuf.Timestamp")
    pool = descriptor_pool.DescriptorPool()
    from google.protobuf import timestamp_pb2

    pool.AddSerializedFile(timestamp_pb2.DESCRIPTOR.serialized_pb)
    pool.Add(fdp)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("compat.t.User"))


def test_protobuf_roundtrip(broker, new_topic, schema_registry):
    topic = new_topic()
    client = SchemaRegistryClient({"url": schema_registry.url})
    User = _user_message()
    conf = {"use.deprecated.format": False}
    values = [User(name="ann", ids=[1, 2]), User(name="bo")]
    values[1].at.seconds = 1700000000
    got = _roundtrip(broker.bootstrap, topic, ProtobufSerializer(User, client, conf),
                     ProtobufDeserializer(User, conf, schema_registry_client=client), values)
    assert got == values
    text = client.get_latest_version(f"{topic}-value").schema.schema_str
    assert "message User" in text and 'import "google/protobuf/timestamp.proto";' in text


# -- compatibility, per schema type: expected answers from Confluent's documentation ----------
def _rec(*fields):
    return json.dumps({"type": "record", "name": "R", "fields": list(fields)})


A = {"name": "a", "type": "string"}
B_DEFAULT = {"name": "b", "type": "int", "default": 0}
B = {"name": "b", "type": "int"}
ENUM2 = json.dumps({"type": "enum", "name": "E", "symbols": ["X", "Y"]})
ENUM3 = json.dumps({"type": "enum", "name": "E", "symbols": ["X", "Y", "Z"]})
ALL = set(LEVELS)
BACKWARDS = {"BACKWARD", "BACKWARD_TRANSITIVE", "NONE"}
FORWARDS = {"FORWARD", "FORWARD_TRANSITIVE", "NONE"}

# (case, schemas registered in order, the levels under which the last one is accepted)
AVRO_CASES = [
    ("field added with default", [_rec(A), _rec(A, B_DEFAULT)], ALL),
    ("field added without default", [_rec(A), _rec(A, B)], FORWARDS),
    ("field with default removed", [_rec(A, B_DEFAULT), _rec(A)], ALL),
    ("field without default removed", [_rec(A, B), _rec(A)], BACKWARDS),
    ("int promoted to long", [json.dumps("int"), json.dumps("long")], BACKWARDS),
    ("long narrowed to int", [json.dumps("long"), json.dumps("int")], FORWARDS),
    ("enum symbol added", [ENUM2, ENUM3], BACKWARDS),
    ("enum symbol removed", [ENUM3, ENUM2], FORWARDS),
    ("field type changed", [_rec(A), _rec({"name": "a", "type": "int"})], {"NONE"}),
    ("transitive: compatible with the latest only",
     [_rec(A), _rec(A, B_DEFAULT), _rec(A, B)],
     {"BACKWARD", "FORWARD", "FORWARD_TRANSITIVE", "FULL", "NONE"}),
]


def _obj(props, required=(), closed=False):
    out = {"type": "object", "properties": props}
    if required:
        out["required"] = list(required)
    if closed:
        out["additionalProperties"] = False
    return json.dumps(out)


S, I, N = {"type": "string"}, {"type": "integer"}, {"type": "number"}
JSON_CASES = [
    ("property added to an open content model", [_obj({"a": S}), _obj({"a": S, "b": I})],
     FORWARDS),
    ("property added to a closed content model",
     [_obj({"a": S}, closed=True), _obj({"a": S, "b": I}, closed=True)], BACKWARDS),
    ("property removed from an open content model", [_obj({"a": S, "b": I}), _obj({"a": S})],
     BACKWARDS),
    ("property removed from a closed content model",
     [_obj({"a": S, "b": I}, closed=True), _obj({"a": S}, closed=True)], FORWARDS),
    ("required property added", [_obj({"a": S, "b": I}), _obj({"a": S, "b": I}, ["b"])],
     FORWARDS),
    ("integer widened to number", [json.dumps(I), json.dumps(N)], BACKWARDS),
    ("enum extended", [json.dumps({"enum": ["x", "y"]}), json.dumps({"enum": ["x", "y", "z"]})],
     BACKWARDS),
    ("maxLength decreased", [json.dumps({"type": "string", "maxLength": 10}),
                             json.dumps({"type": "string", "maxLength": 5})], FORWARDS),
    ("type changed", [json.dumps(S), json.dumps(I)], {"NONE"}),
]


def _proto(body, package="p", syntax="proto3"):
    return f'syntax = "{syntax}";\npackage {package};\n{body}\n'


PROTO_CASES = [
    ("field added", [_proto("message M { string a = 1; }"),
                     _proto("message M { string a = 1; int32 b = 2; }")], ALL),
    ("field removed", [_proto("message M { string a = 1; int32 b = 2; }"),
                       _proto("message M { string a = 1; }")], ALL),
    ("field renamed", [_proto("message M { string a = 1; }"),
                       _proto("message M { string renamed = 1; }")], ALL),
    ("int32 to int64 (same wire group)", [_proto("message M { int32 a = 1; }"),
                                          _proto("message M { int64 a = 1; }")], ALL),
    ("int32 to string", [_proto("message M { int32 a = 1; }"),
                         _proto("message M { string a = 1; }")], {"NONE"}),
    ("enum constant added", [_proto("enum E { X = 0; } message M { E e = 1; }"),
                             _proto("enum E { X = 0; Y = 1; } message M { E e = 1; }")], ALL),
    ("message removed", [_proto("message M { int32 a = 1; } message N { int32 b = 1; }"),
                         _proto("message M { int32 a = 1; }")], FORWARDS),
    ("required field added (proto2)",
     [_proto("message M { optional int32 a = 1; }", syntax="proto2"),
      _proto("message M { optional int32 a = 1; required int32 b = 2; }", syntax="proto2")],
     {"NONE"}),
    ("package changed", [_proto("message M { int32 a = 1; }"),
                         _proto("message M { int32 a = 1; }", package="q")], {"NONE"}),
    ("two fields moved into one oneof",
     [_proto("message M { int32 a = 1; int32 b = 2; }"),
      _proto("message M { oneof o { int32 a = 1; int32 b = 2; } }")], FORWARDS),
]


def _compat_cases():
    for schema_type, cases in (("AVRO", AVRO_CASES), ("JSON", JSON_CASES),
                               ("PROTOBUF", PROTO_CASES)):
        for name, schemas, accepted in cases:
            yield pytest.param(schema_type, schemas, accepted, id=f"{schema_type}-{name}")


@pytest.mark.parametrize("schema_type,schemas,accepted", list(_compat_cases()))
def test_compatibility_levels(schema_registry, schema_type, schemas, accepted):
    """Each case under each of the seven levels: the last schema is accepted exactly under
    ``accepted`` (the compatibility check and the registration agree)."""
    url = schema_registry.url
    with httpx.Client(base_url=url, headers={"Content-Type": SR}, timeout=20) as http:
        for level in LEVELS:
            subject = _subject(f"compat-{level.lower()}")
            r = http.put(f"/config/{subject}", json={"compatibility": level})
            assert r.status_code == 200, r.text
            for earlier in schemas[:-1]:
                r = http.post(f"/subjects/{subject}/versions",
                              json={"schema": earlier, "schemaType": schema_type})
                assert r.status_code == 200, r.text
            body = {"schema": schemas[-1], "schemaType": schema_type}
            check = http.post(f"/compatibility/subjects/{subject}/versions/latest?verbose=true",
                              json=body).json()
            r = http.post(f"/subjects/{subject}/versions", json=body)
            expected = level in accepted
            assert check["is_compatible"] is expected, (level, check)
            if expected:
                assert r.status_code == 200, (level, r.text)
            else:
                assert (r.status_code, r.json()["error_code"]) == (409, 409), (level, r.text)


# -- the API and its errors ---------------------------------------------------------------
def test_subject_versions_lookup_and_deletes(schema_registry):
    client = SchemaRegistryClient({"url": schema_registry.url})
    subject = _subject()
    unique = {"name": f"u{uuid.uuid4().hex[:8]}", "type": "string"}  # in no other test
    v1 = Schema(_rec(unique), "AVRO")
    v2 = Schema(_rec(unique, B_DEFAULT), "AVRO")
    id1 = client.register_schema(subject, v1)
    assert client.register_schema(subject, v1) == id1  # the same schema: the same id
    id2 = client.register_schema(subject, v2)
    assert id2 != id1
    other = _subject()
    assert client.register_schema(other, v1) == id1  # the same schema in another subject
    assert client.get_versions(subject) == [1, 2]
    assert client.lookup_schema(subject, v2).version == 2
    http = httpx.Client(base_url=schema_registry.url, timeout=20)
    assert http.get(f"/schemas/ids/{id1}/versions").json() == sorted(
        [{"subject": subject, "version": 1}, {"subject": other, "version": 1}],
        key=lambda x: x["subject"])
    assert json.loads(http.get(f"/subjects/{subject}/versions/1/schema").text)["name"] == "R"
    # soft delete a version, then the subject; hard delete needs a soft delete first
    assert http.delete(f"/subjects/{subject}/versions/2?permanent=true").json()[
        "error_code"] == 40407
    assert http.delete(f"/subjects/{subject}/versions/2").json() == 2
    assert http.delete(f"/subjects/{subject}/versions/2").json()["error_code"] == 40406
    assert client.get_versions(subject) == [1]
    assert http.get(f"/subjects/{subject}/versions?deleted=true").json() == [1, 2]
    assert http.delete(f"/subjects/{subject}?permanent=true").json()["error_code"] == 40405
    assert http.delete(f"/subjects/{subject}").json() == [1]
    assert http.delete(f"/subjects/{subject}").json()["error_code"] == 40404
    assert subject not in http.get("/subjects").json()
    assert subject in http.get("/subjects?deleted=true").json()
    assert http.delete(f"/subjects/{subject}?permanent=true").json() == [1, 2]
    assert http.get(f"/subjects/{subject}/versions").json()["error_code"] == 40401
    assert http.get(f"/schemas/ids/{id1}").status_code == 200  # still used by `other`


def test_references_and_config(schema_registry):
    client = SchemaRegistryClient({"url": schema_registry.url})
    addr = _subject("address")
    client.register_schema(addr, Schema(json.dumps(
        {"type": "record", "name": "Address", "namespace": "x",
         "fields": [{"name": "city", "type": "string"}]}), "AVRO"))
    user = _subject("user")
    ref = SchemaReference("x.Address", addr, 1)
    uid = client.register_schema(user, Schema(json.dumps(
        {"type": "record", "name": "User", "namespace": "x",
         "fields": [{"name": "home", "type": "x.Address"}]}), "AVRO", [ref]))
    http = httpx.Client(base_url=schema_registry.url, timeout=20)
    assert http.get(f"/subjects/{addr}/versions/1/referencedby").json() == [uid]
    assert http.delete(f"/subjects/{addr}/versions/1").json()["error_code"] == 42206
    assert http.get(f"/schemas/ids/{uid}").json()["references"] == [
        {"name": "x.Address", "subject": addr, "version": 1}]
    # config: per subject, falling back to the global level
    assert http.get(f"/config/{user}").json()["error_code"] == 40408
    assert http.get(f"/config/{user}?defaultToGlobal=true").json() == {
        "compatibilityLevel": "BACKWARD"}
    assert http.put(f"/config/{user}", json={"compatibility": "full"}).json() == {
        "compatibility": "FULL"}
    assert http.get(f"/config/{user}").json() == {"compatibilityLevel": "FULL"}
    assert http.put(f"/config/{user}", json={"compatibility": "SIDEWAYS"}).json()[
        "error_code"] == 42203
    assert http.get("/schemas/types").json() == ["JSON", "PROTOBUF", "AVRO"]
    assert http.get(f"/mode/{user}").json()["error_code"] == 40409
    assert http.put(f"/mode/{user}", json={"mode": "READONLY"}).json() == {"mode": "READONLY"}
    r = http.post(f"/subjects/{user}/versions", json={"schema": json.dumps("string")})
    assert r.json()["error_code"] == 42205
    assert http.put(f"/mode/{user}", json={"mode": "FAST"}).json()["error_code"] == 42204


def test_normalize_as_confluent_defines_it(schema_registry):
    """normalize=true (query parameter, or the subject's config): property order (Avro, JSON
    Schema), import order (Protobuf) and reference order no longer make schemas differ."""
    client = SchemaRegistryClient({"url": schema_registry.url})
    http = httpx.Client(base_url=schema_registry.url, headers={"Content-Type": SR}, timeout=20)
    tag = uuid.uuid4().hex[:8]
    # (neither of each pair is in normalized form, so without normalize they differ)
    avro = {"type": "record", "name": f"N{tag}", "x.owner": "a", "a.team": "b", "m.x": 1,
            "aliases": ["Old2", "Old1", "Old3"], "fields": [{"name": "f", "type": "int"}]}
    avro_reordered = {"fields": [{"type": "int", "name": "f"}], "m.x": 1, "a.team": "b",
                      "aliases": ["Old3", "Old1", "Old2"], "x.owner": "a", "type": "record",
                      "name": f"N{tag}"}
    jsons = {"type": "object", "title": tag, "properties": {"b": {"type": "string"}, "a": I}}
    jsons_reordered = {"title": tag, "properties": {"a": I, "b": {"type": "string"}},
                       "type": "object"}
    imports = [f'import "google/protobuf/{name}.proto";' for name in ("timestamp", "any",
                                                                       "duration")]
    body = (f"message M{tag} {{ google.protobuf.Timestamp at = 1; "
            f"google.protobuf.Duration d = 2; google.protobuf.Any x = 3; }}")
    proto = f'syntax = "proto3";\n{imports[0]}\n{imports[1]}\n{imports[2]}\n{body}\n'
    proto_reordered = f'syntax = "proto3";\n{imports[2]}\n{imports[0]}\n{imports[1]}\n{body}\n'
    for schema_type, first, second in (("AVRO", json.dumps(avro), json.dumps(avro_reordered)),
                                       ("JSON", json.dumps(jsons), json.dumps(jsons_reordered)),
                                       ("PROTOBUF", proto, proto_reordered)):
        subject = _subject(f"norm-{schema_type.lower()}")
        schema_id = client.register_schema(subject, Schema(first, schema_type),
                                           normalize_schemas=True)
        assert client.lookup_schema(subject, Schema(second, schema_type),
                                    normalize_schemas=True).schema_id == schema_id
        r = http.post(f"/subjects/{subject}", json={"schema": second, "schemaType": schema_type})
        assert r.json()["error_code"] == 40403, (schema_type, r.text)  # without: different
        r = http.post(f"/subjects/{subject}/versions?normalize=true",
                      json={"schema": second, "schemaType": schema_type})
        assert r.json() == {"id": schema_id}, (schema_type, r.text)
        assert http.get(f"/subjects/{subject}/versions").json() == [1]
    # the references' order, and normalize as the subject's configuration
    ref_subjects = []
    for name in ("RefA", "RefB"):
        ref_subjects.append(_subject(name.lower()))
        client.register_schema(ref_subjects[-1], Schema(json.dumps(
            {"type": "record", "name": f"{name}{tag}", "fields": [{"name": "v", "type": "int"}]}
        ), "AVRO"))
    refs = [{"name": f"{n}{tag}", "subject": s, "version": 1}
            for n, s in zip(("RefA", "RefB"), ref_subjects)]
    using = json.dumps({"type": "record", "name": f"U{tag}", "fields": [
        {"name": "a", "type": f"RefA{tag}"}, {"name": "b", "type": f"RefB{tag}"}]})
    subject = _subject("norm-refs")
    assert http.put(f"/config/{subject}", json={"normalize": True}).json() == {"normalize": True}
    assert http.get(f"/config/{subject}").json() == {"normalize": True}
    assert http.get(f"/config/{subject}?defaultToGlobal=true").json() == {
        "compatibilityLevel": "BACKWARD", "normalize": True}
    first = http.post(f"/subjects/{subject}/versions", json={"schema": using, "references": refs})
    again = http.post(f"/subjects/{subject}/versions",
                      json={"schema": using, "references": refs[::-1]})
    assert first.status_code == 200 and again.json() == first.json(), again.text
    assert http.get(f"/subjects/{subject}/versions").json() == [1]
    assert http.put(f"/config/{subject}", json={"compatibility": "FULL"}).json() == {
        "normalize": True, "compatibility": "FULL"}
    assert http.delete(f"/config/{subject}").json() == {"normalize": True,
                                                         "compatibilityLevel": "FULL"}
    assert http.delete(f"/config/{subject}").json()["error_code"] == 40401
    assert http.delete(f"/mode/{subject}").json()["error_code"] == 40401
    # a read-only subject's configuration cannot change either
    assert http.put(f"/mode/{subject}", json={"mode": "READONLY"}).status_code == 200
    assert http.put(f"/config/{subject}", json={"compatibility": "NONE"}).json()[
        "error_code"] == 42205
    assert http.delete(f"/mode/{subject}").json() == {"mode": "READONLY"}


def test_protobuf_references(schema_registry):
    """A .proto importing others by reference (which import their own): registered, checked
    for compatibility against its earlier version, served serialized."""
    http = httpx.Client(base_url=schema_registry.url, headers={"Content-Type": SR}, timeout=20)
    tag = uuid.uuid4().hex[:6]

    def register(subject, text, refs=()):
        r = http.post(f"/subjects/{subject}/versions", json={
            "schemaType": "PROTOBUF", "schema": _proto(text, f"p{tag}"),
            "references": [{"name": n, "subject": s, "version": 1} for n, s in refs]})
        return r

    assert register(f"geo-{tag}", "message Point { double lat = 1; }").status_code == 200
    geo = ("geo.proto", f"geo-{tag}")
    assert register(f"addr-{tag}", 'import "geo.proto";\nmessage Address { Point at = 1; }',
                    [geo]).status_code == 200
    addr = ("address.proto", f"addr-{tag}")
    v1 = 'import "address.proto";\nmessage Customer { Address home = 1; }'
    r = register(f"cust-{tag}", v1, [addr])
    assert r.status_code == 200, r.text
    v2 = 'import "address.proto";\nmessage Customer { Address home = 1; string name = 2; }'
    assert register(f"cust-{tag}", v2, [addr]).status_code == 200
    bad = 'import "address.proto";\nmessage Customer { string home = 1; string name = 2; }'
    assert register(f"cust-{tag}", bad, [addr]).json()["error_code"] == 409
    assert register(f"cust-{tag}", v1).json()["error_code"] == 42201  # the import unresolved
    fdp = descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(
        http.get(f"/schemas/ids/{r.json()['id']}?format=serialized").json()["schema"]))
    assert list(fdp.dependency) == ["address.proto"]


def test_bad_input_gets_confluent_errors(schema_registry):
    http = httpx.Client(base_url=schema_registry.url, timeout=20)
    subject = _subject()

    def post(path, content, ctype=SR):
        return http.post(path, content=content, headers={"Content-Type": ctype})

    cases = [
        (post(f"/subjects/{subject}/versions", json.dumps({"schema": "{not json"})), 422, 42201),
        (post(f"/subjects/{subject}/versions", json.dumps({"schema": '{"type":"recrd"}'})),
         422, 42201),
        (post(f"/subjects/{subject}/versions", json.dumps(
            {"schema": "message M { int32 a = ; }", "schemaType": "PROTOBUF"})), 422, 42201),
        (post(f"/subjects/{subject}/versions", json.dumps(
            {"schema": '{"type": 5}', "schemaType": "JSON"})), 422, 42201),
        (post(f"/subjects/{subject}/versions", "{oops"), 400, 400),
        (post(f"/subjects/{subject}/versions", json.dumps({"schema": '"int"'}), "text/plain"),
         415, 415),
        (post(f"/subjects/{subject}/versions", json.dumps(
            {"schema": '"int"', "references": [{"name": "n", "subject": "none", "version": 1}]})),
         422, 42201),
        (http.get(f"/subjects/{subject}/versions/1"), 404, 40401),
        (http.get("/schemas/ids/987654321"), 404, 40403),
        (http.get("/nowhere"), 404, 404),
    ]
    for r, status, code in cases:
        assert (r.status_code, r.json()["error_code"]) == (status, code), r.text
    assert post(f"/subjects/{subject}/versions", json.dumps({"schema": '"int"'})).status_code \
        == 200
    assert http.get(f"/subjects/{subject}/versions/0").json()["error_code"] == 42202
    assert http.get(f"/subjects/{subject}/versions/7").json()["error_code"] == 40402
    r = post(f"/subjects/{subject}", json.dumps({"schema": '"long"'}))
    assert r.json()["error_code"] == 40403
    big = json.dumps({"schema": json.dumps({"type": "enum", "name": "Big", "symbols": [
        f"S{i}" for i in range(2_000_000)]})})
    r = post(f"/subjects/{subject}/versions", big)
    assert (r.status_code, r.json()["error_code"]) == (413, 413)
    assert http.get(f"/subjects/{subject}/versions").json() == [1]  # nothing else disturbed


def test_two_instances_share_state_and_fail_over(broker, tmp_path):
    """Two registries on one topic: writes through either are seen by both; the primary is
    killed, the other takes over; ids never collide."""
    topic, group = f"_schemas_{uuid.uuid4().hex[:8]}", f"registry-{uuid.uuid4().hex[:8]}"
    props = {"kafkastore.bootstrap.servers": broker.bootstrap, "kafkastore.topic": topic,
             "schema.registry.group.id": group, "kafkastore.topic.replication.factor": 1,
             "kafkagroup.session.timeout.ms": 6000, "kafkagroup.heartbeat.interval.ms": 1000}
    first = ServiceProcess("registry", props, tmp_path / "first.log").start()
    second = ServiceProcess("registry", props, tmp_path / "second.log").start()
    try:
        wait_primary(first.url)
        wait_primary(second.url)
        ids = {}
        for i, sr in enumerate((first, second, first, second)):
            subject = f"ha-{i}"
            r = httpx.post(f"{sr.url}/subjects/{subject}/versions", timeout=20,
                           json={"schema": _rec({"name": f"f{i}", "type": "int"})})
            assert r.status_code == 200, r.text
            ids[subject] = r.json()["id"]
            for other in (first, second):  # visible on both
                wait_until(lambda: httpx.get(f"{other.url}/subjects/{subject}/versions/1")
                           .json()["id"] == ids[subject])
        assert len(set(ids.values())) == 4
        primary = min((first, second), key=lambda s: s.url)  # the smallest URL is elected
        survivor = second if primary is first else first
        primary.kill()
        wait_primary(survivor.url, timeout=40)
        r = httpx.post(f"{survivor.url}/subjects/ha-after/versions", timeout=20,
                       json={"schema": _rec({"name": "after", "type": "int"})})
        assert r.status_code == 200, r.text
        assert r.json()["id"] not in ids.values()
        assert r.json()["id"] > max(ids.values())
        for subject, schema_id in ids.items():
            assert httpx.get(f"{survivor.url}/subjects/{subject}/versions/1").json()[
                "id"] == schema_id
        # a restarted instance reads everything back, with the same ids
        primary.start()
        wait_until(lambda: httpx.get(f"{primary.url}/subjects/ha-after/versions/1").json()[
            "id"] == r.json()["id"])
    finally:
        first.stop()
        second.stop()
