"""The Schema Registry converters against a real ``josefk registry`` (on the shared broker),
checked both ways with confluent-kafka's own serializers: its AvroDeserializer,
JSONDeserializer and ProtobufDeserializer read what the converters write, and the converters
read what its AvroSerializer, JSONSerializer and ProtobufSerializer write."""
from __future__ import annotations

import datetime
import decimal
import io
import json
import ssl
import uuid

import fastavro
import httpx
import pytest
from confluent_kafka.schema_registry import Schema as RegistrySchema
from confluent_kafka.schema_registry import SchemaReference, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from compat_tests.http_services import ServiceProcess, wait_until
from josefk.connect.api.config import ConfigException
from josefk.connect.api.errors import DataException
from josefk.connect.api.schema import (Date, Decimal, Schema, SchemaBuilder, Struct,
                                       Timestamp)
from josefk.connect.converters import AvroConverter, JsonSchemaConverter, ProtobufConverter
from josefk.registry.protobuf_schema import ProtobufSchema, builtin_files
from josefk.zk.local_server import free_port

ADDRESS = SchemaBuilder.struct().name("com.example.Address").field(
    "city", Schema.STRING_SCHEMA).field("zip", Schema.OPTIONAL_INT32_SCHEMA).optional().build()
USER = (SchemaBuilder.struct().name("com.example.User")
        .field("id", Schema.INT64_SCHEMA)
        .field("name", Schema.STRING_SCHEMA)
        .field("email", Schema.OPTIONAL_STRING_SCHEMA)
        .field("score", Schema.FLOAT64_SCHEMA)
        .field("active", Schema.BOOLEAN_SCHEMA)
        .field("tags", SchemaBuilder.array(Schema.STRING_SCHEMA).build())
        .field("attrs", SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.INT64_SCHEMA).build())
        .field("address", ADDRESS)
        .field("joined", Timestamp.SCHEMA)
        .build())
JOINED = datetime.datetime(2024, 5, 6, 7, 8, 9, 123000, tzinfo=datetime.timezone.utc)


def _user(**overrides) -> Struct:
    user = (Struct(USER).put("id", 42).put("name", "ann").put("score", 1.5)
            .put("active", True).put("tags", ["a", "b"]).put("attrs", {"k": 7})
            .put("address", Struct(ADDRESS).put("city", "Oslo").put("zip", 150))
            .put("joined", JOINED))
    for name, value in overrides.items():
        user.put(name, value)
    return user


def _topic() -> str:
    return f"conv-{uuid.uuid4().hex[:10]}"


def _converter(cls, registry, **settings):
    converter = cls()
    converter.configure({"schema.registry.url": registry.url, **settings}, False)
    return converter


def _ctx(topic):
    return SerializationContext(topic, MessageField.VALUE)


def test_avro_converter_output_reads_with_confluent_avro_deserializer(schema_registry):
    topic = _topic()
    client = SchemaRegistryClient({"url": schema_registry.url})
    converter = _converter(AvroConverter, schema_registry)
    data = converter.from_connect_data(topic, USER, _user())
    assert data[0] == 0
    schema_id = int.from_bytes(data[1:5], "big")
    registered = client.get_latest_version(f"{topic}-value")
    assert registered.schema_id == schema_id
    avro = json.loads(registered.schema.schema_str)
    assert (avro["type"], avro["name"], avro["namespace"]) == ("record", "User", "com.example")
    assert avro["connect.name"] == "com.example.User"
    assert avro["fields"][2] == {"name": "email", "type": ["null", "string"], "default": None}
    assert avro["fields"][8]["type"]["logicalType"] == "timestamp-millis"

    got = AvroDeserializer(client)(data, _ctx(topic))
    assert got == {"id": 42, "name": "ann", "email": None, "score": 1.5, "active": True,
                   "tags": ["a", "b"], "attrs": {"k": 7},
                   "address": {"city": "Oslo", "zip": 150}, "joined": JOINED}
    # the same schema is registered once: the second record carries the same id
    again = converter.from_connect_data(topic, USER, _user(id=43))
    assert again[1:5] == data[1:5]
    assert converter.to_connect_data(topic, again) == (USER, _user(id=43))


def test_avro_converter_reads_confluent_avro_serializer(schema_registry):
    topic = _topic()
    client = SchemaRegistryClient({"url": schema_registry.url})
    schema = json.dumps({"type": "record", "name": "Order", "namespace": "shop", "fields": [
        {"name": "id", "type": "long"},
        {"name": "note", "type": ["null", "string"], "default": None},
        {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 9,
                                   "scale": 2}},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "lines", "type": {"type": "array", "items": "string"}}]})
    data = AvroSerializer(client, schema)(
        {"id": 5, "note": None, "price": decimal.Decimal("12.30"),
         "day": datetime.date(2024, 1, 31), "lines": ["x"]}, _ctx(topic))
    connect_schema, value = _converter(AvroConverter, schema_registry).to_connect_data(topic, data)
    assert connect_schema.name == "shop.Order"
    assert connect_schema.field("note").schema == Schema.OPTIONAL_STRING_SCHEMA
    assert connect_schema.field("price").schema.name == Decimal.LOGICAL_NAME
    assert connect_schema.field("day").schema.name == Date.LOGICAL_NAME
    assert (value.get("id"), value.get("note"), value.get("price"), value.get("day"),
            value.get("lines")) == (5, None, decimal.Decimal("12.30"),
                                    datetime.date(2024, 1, 31), ["x"])


def test_json_schema_converter_both_ways(schema_registry):
    topic = _topic()
    client = SchemaRegistryClient({"url": schema_registry.url})
    converter = _converter(JsonSchemaConverter, schema_registry)
    data = converter.from_connect_data(topic, USER, _user(email="a@b.c"))
    registered = client.get_latest_version(f"{topic}-value")
    assert registered.schema.schema_type == "JSON"
    assert json.loads(registered.schema.schema_str)["title"] == "com.example.User"
    got = JSONDeserializer(None, schema_registry_client=client)(data, _ctx(topic))
    assert got == {"id": 42, "name": "ann", "email": "a@b.c", "score": 1.5, "active": True,
                   "tags": ["a", "b"], "attrs": {"k": 7},
                   "address": {"city": "Oslo", "zip": 150},
                   "joined": int(JOINED.timestamp() * 1000)}
    assert converter.to_connect_data(topic, data).value.get("address").get("city") == "Oslo"

    other = _topic()
    schema = json.dumps({"$schema": "http://json-schema.org/draft-07/schema#",
                         "title": "Order", "type": "object",
                         "properties": {"id": {"type": "integer"}, "item": {"type": "string"}},
                         "required": ["id"]})
    foreign = JSONSerializer(schema, client)({"id": 1, "item": "pen"}, _ctx(other))
    lenient = _converter(JsonSchemaConverter, schema_registry,
                         **{"use.optional.for.nonrequired": "true"})
    connect_schema, value = lenient.to_connect_data(other, foreign)
    assert connect_schema.name == "Order"
    assert connect_schema.field("id").schema == Schema.INT64_SCHEMA
    assert connect_schema.field("item").schema == Schema.OPTIONAL_STRING_SCHEMA
    assert (value.get("id"), value.get("item")) == (1, "pen")


def _message_class(proto_text: str, full_name: str):
    """The message class a consumer would generate from the registered .proto."""
    fdp = ProtobufSchema(proto_text).fdp
    pool = descriptor_pool.DescriptorPool()
    for dep in fdp.dependency:
        pool.Add(builtin_files()[dep])
    pool.Add(fdp)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(full_name))


def test_protobuf_converter_both_ways(schema_registry):
    topic = _topic()
    client = SchemaRegistryClient({"url": schema_registry.url})
    converter = _converter(ProtobufConverter, schema_registry,
                           **{"optional.for.nullables": "true"})
    data = converter.from_connect_data(topic, USER, _user())
    assert data[5] == 0  # the message-index list of the first message: one zero byte
    text = client.get_latest_version(f"{topic}-value").schema.schema_str
    assert "message User" in text and "package com.example;" in text
    User = _message_class(text, "com.example.User")
    conf = {"use.deprecated.format": False}
    got = ProtobufDeserializer(User, conf, schema_registry_client=client)(data, _ctx(topic))
    assert (got.id, got.name, got.HasField("email"), list(got.tags), dict(got.attrs),
            got.address.city, got.address.zip) == (42, "ann", False, ["a", "b"], {"k": 7},
                                                   "Oslo", 150)
    assert got.joined.ToDatetime(tzinfo=datetime.timezone.utc) == JOINED

    other = _topic()
    written = ProtobufSerializer(User, client, conf)(
        User(id=9, name="bo", email="x@y", tags=["t"]), _ctx(other))
    connect_schema, value = converter.to_connect_data(other, written)
    assert connect_schema.name == "com.example.User"
    assert (value.get("id"), value.get("name"), value.get("email"), value.get("tags"),
            value.get("address")) == (9, "bo", "x@y", ["t"], None)

    wrapped_topic = _topic()
    wrapping = _converter(ProtobufConverter, schema_registry, **{"wrapper.for.nullables": "true"})
    data = wrapping.from_connect_data(wrapped_topic, USER, _user(email="e@f"))
    text = client.get_latest_version(f"{wrapped_topic}-value").schema.schema_str
    assert "google.protobuf.StringValue email = 3;" in text
    Wrapped = _message_class(text, "com.example.User")
    got = ProtobufDeserializer(Wrapped, conf, schema_registry_client=client)(
        data, _ctx(wrapped_topic))
    assert got.email.value == "e@f" and got.address.city == "Oslo"


@pytest.mark.parametrize("strategy, subject", [
    ("io.confluent.kafka.serializers.subject.RecordNameStrategy", "{record}"),
    ("TopicRecordNameStrategy", "{topic}-{record}"),
])
def test_subject_name_strategies(schema_registry, strategy, subject):
    topic = _topic()
    record = f"r{uuid.uuid4().hex[:8]}.Rec"
    schema = SchemaBuilder.struct().name(record).field("n", Schema.INT32_SCHEMA).build()
    converter = _converter(AvroConverter, schema_registry,
                           **{"value.subject.name.strategy": strategy})
    converter.from_connect_data(topic, schema, Struct(schema).put("n", 1))
    client = SchemaRegistryClient({"url": schema_registry.url})
    assert client.get_latest_version(subject.format(topic=topic, record=record)).version == 1


def test_without_auto_register_and_with_latest_version(schema_registry):
    topic = _topic()
    schema = SchemaBuilder.struct().name("v.Rec").field("n", Schema.INT32_SCHEMA).build()
    lookup_only = _converter(AvroConverter, schema_registry, **{"auto.register.schemas": "false"})
    with pytest.raises(DataException, match=f"Failed to serialize Avro data from topic {topic}"
                                            r": .*error code: 404\d\d"):
        lookup_only.from_connect_data(topic, schema, Struct(schema).put("n", 1))

    client = SchemaRegistryClient({"url": schema_registry.url})
    registered = json.dumps({"type": "record", "name": "Rec", "namespace": "v", "fields": [
        {"name": "n", "type": "int"}, {"name": "extra", "type": "string", "default": "d"}]})
    schema_id = client.register_schema(f"{topic}-value", RegistrySchema(registered, "AVRO"))
    latest = _converter(AvroConverter, schema_registry, **{"use.latest.version": "true",
                                                           "auto.register.schemas": "false"})
    data = latest.from_connect_data(topic, schema, Struct(schema).put("n", 3))
    assert int.from_bytes(data[1:5], "big") == schema_id
    assert AvroDeserializer(client)(data, _ctx(topic)) == {"n": 3, "extra": "d"}


@pytest.fixture(scope="module")
def auth_registry(broker, tmp_path_factory):
    """A ``josefk registry`` with HTTP basic authentication (Jetty's property-file login
    module, as Confluent configures it): ann may use it, eve may not."""
    root = tmp_path_factory.mktemp("conv-auth-registry")
    (root / "password.properties").write_text("ann: ann-pw,developer\neve: eve-pw,guest\n")
    (root / "jaas.conf").write_text(
        "SchemaRegistry-Props {\n  org.eclipse.jetty.jaas.spi.PropertyFileLoginModule required\n"
        f'  file="{root / "password.properties"}";\n}};\n')
    sr = ServiceProcess("registry", {
        "kafkastore.bootstrap.servers": broker.bootstrap,
        "kafkastore.topic": "_schemas_conv_auth", "kafkastore.topic.replication.factor": 1,
        "schema.registry.group.id": "conv-auth",
        "authentication.method": "BASIC", "authentication.roles": "developer",
    }, root / "registry.log",
        env={"SCHEMA_REGISTRY_OPTS": f"-Djava.security.auth.login.config={root / 'jaas.conf'}"}
    ).start()
    wait_until(lambda: httpx.put(f"{sr.url}/config/_probe", json={"compatibility": "BACKWARD"},
                                 auth=("ann", "ann-pw"), timeout=10).status_code == 200, 30)
    yield sr
    sr.stop()


def test_basic_auth_against_a_secured_registry(auth_registry):
    topic = _topic()
    schema = SchemaBuilder.struct().name("auth.Rec").field("n", Schema.INT32_SCHEMA).build()
    host = auth_registry.url.removeprefix("http://")
    for settings in ({"schema.registry.url": f"http://ann:ann-pw@{host}"},
                     {"schema.registry.url": auth_registry.url,
                      "basic.auth.credentials.source": "USER_INFO",
                      "basic.auth.user.info": "ann:ann-pw"}):
        converter = AvroConverter()
        converter.configure(settings, False)
        data = converter.from_connect_data(topic, schema, Struct(schema).put("n", 4))
        assert converter.to_connect_data(topic, data).value.get("n") == 4
    for user_info, code in (("ann:wrong", 401), ("eve:eve-pw", 403)):
        converter = AvroConverter()
        converter.configure({"schema.registry.url": auth_registry.url,
                             "basic.auth.credentials.source": "USER_INFO",
                             "basic.auth.user.info": user_info}, False)
        with pytest.raises(DataException, match=f"error code: {code}$"):
            converter.from_connect_data(topic, schema, Struct(schema).put("n", 4))


@pytest.fixture(scope="module")
def tls_registry(broker, pki, tmp_path_factory):
    """A ``josefk registry`` on https (the test CA's server certificate)."""
    root = tmp_path_factory.mktemp("conv-tls-registry")
    sr = ServiceProcess("registry", {
        "listeners": f"https://127.0.0.1:{free_port()}",
        "ssl.keystore.type": "PEM", "ssl.keystore.location": pki.server,
        "kafkastore.bootstrap.servers": broker.bootstrap,
        "kafkastore.topic": "_schemas_conv_tls", "kafkastore.topic.replication.factor": 1,
        "schema.registry.group.id": "conv-tls"}, root / "registry.log").start()
    wait_until(lambda: httpx.put(f"{sr.url}/config/_probe", json={"compatibility": "BACKWARD"},
                                 verify=ssl.create_default_context(cafile=pki.ca),
                                 timeout=10).status_code == 200, 30)
    yield sr
    sr.stop()


def test_tls_registry_with_the_truststore(tls_registry, pki):
    topic = _topic()
    schema = SchemaBuilder.struct().name("tls.Rec").field("n", Schema.INT32_SCHEMA).build()
    converter = _converter(JsonSchemaConverter, tls_registry,
                           **{"schema.registry.ssl.truststore.location": pki.ca})
    data = converter.from_connect_data(topic, schema, Struct(schema).put("n", 8))
    assert converter.to_connect_data(topic, data).value.get("n") == 8
    untrusting = _converter(JsonSchemaConverter, tls_registry)
    with pytest.raises(DataException, match="CERTIFICATE_VERIFY_FAILED"):
        untrusting.from_connect_data(topic, schema, Struct(schema).put("n", 8))
    with pytest.raises(ConfigException, match="schema.registry.ssl.truststore.type JKS"):
        _converter(JsonSchemaConverter, tls_registry,
                   **{"schema.registry.ssl.truststore.location": pki.ca,
                      "schema.registry.ssl.truststore.type": "JKS"})


def test_schemas_with_references(schema_registry):
    """Schemas that refer to others (Avro named types, Protobuf imports) are read with what
    they refer to, fetched from the registry."""
    client = SchemaRegistryClient({"url": schema_registry.url})
    tag = uuid.uuid4().hex[:8]
    address = {"type": "record", "name": "Address", "namespace": f"ref{tag}",
               "fields": [{"name": "city", "type": "string"}]}
    client.register_schema(f"addr-{tag}", RegistrySchema(json.dumps(address), "AVRO"))
    customer = {"type": "record", "name": "Customer", "namespace": f"ref{tag}", "fields": [
        {"name": "name", "type": "string"}, {"name": "home", "type": f"ref{tag}.Address"}]}
    customer_id = client.register_schema(f"cust-{tag}-value", RegistrySchema(
        json.dumps(customer), "AVRO",
        [SchemaReference(f"ref{tag}.Address", f"addr-{tag}", 1)]))
    named: dict = {}
    fastavro.parse_schema(address, named_schemas=named)
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(customer, named_schemas=named),
                               {"name": "ann", "home": {"city": "Oslo"}})
    data = b"\x00" + customer_id.to_bytes(4, "big") + out.getvalue()
    schema, value = _converter(AvroConverter, schema_registry).to_connect_data("t", data)
    assert schema.field("home").schema.name == f"ref{tag}.Address"
    assert value.get("home").get("city") == "Oslo"

    # confluent-kafka's ProtobufSerializer registers the imported file as a reference
    F = descriptor_pb2.FieldDescriptorProto
    addr_file = descriptor_pb2.FileDescriptorProto(
        name=f"addr{tag}.proto", package=f"ref{tag}", syntax="proto3")
    addr_file.message_type.add(name="Address").field.add(
        name="city", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    cust_file = descriptor_pb2.FileDescriptorProto(
        name=f"cust{tag}.proto", package=f"ref{tag}", syntax="proto3",
        dependency=[addr_file.name])
    message = cust_file.message_type.add(name="Customer")
    message.field.add(name="name", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    message.field.add(name="home", number=2, type=F.TYPE_MESSAGE, label=F.LABEL_OPTIONAL,
                      type_name=f".ref{tag}.Address")
    pool = descriptor_pool.DescriptorPool()
    pool.Add(addr_file)
    pool.Add(cust_file)
    Customer = message_factory.GetMessageClass(pool.FindMessageTypeByName(f"ref{tag}.Customer"))
    topic = _topic()
    written = ProtobufSerializer(Customer, client, {"use.deprecated.format": False})(
        Customer(name="bo", home={"city": "Rome"}), _ctx(topic))
    assert client.get_latest_version(f"{topic}-value").schema.references
    schema, value = _converter(ProtobufConverter, schema_registry).to_connect_data(topic, written)
    assert schema.name == f"ref{tag}.Customer"
    assert (value.get("name"), value.get("home").get("city")) == ("bo", "Rome")
