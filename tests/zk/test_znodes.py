"""zk.znodes against the JSON Kafka 3.x writes into ZooKeeper (literal samples of what a Kafka
broker/controller leaves in its znodes; compared as parsed dicts, key order being Jackson's)."""
import json
import uuid

import pytest

from josefk.wire.types import uuid_from_base64, uuid_to_base64
from josefk.zk import znodes as z


def as_dict(data: bytes) -> dict:
    assert isinstance(data, bytes)
    return json.loads(data)


# -- paths ------------------------------------------------------------------------------------

def test_paths():
    assert z.broker_path(3) == "/brokers/ids/3"
    assert z.topic_path("orders") == "/brokers/topics/orders"
    assert z.topic_partitions_path("orders") == "/brokers/topics/orders/partitions"
    assert z.partition_path("orders", 2) == "/brokers/topics/orders/partitions/2"
    assert z.partition_state_path("orders", 2) == "/brokers/topics/orders/partitions/2/state"
    assert z.delete_topic_path("orders") == "/admin/delete_topics/orders"
    assert z.config_entity_type_path("topics") == "/config/topics"
    assert z.config_entity_path("brokers", "<default>") == "/config/brokers/<default>"
    assert z.topic_config_path("orders") == "/config/topics/orders"
    assert z.config_change_path() == "/config/changes/config_change_"
    assert z.config_change_path("0000000007") == "/config/changes/config_change_0000000007"
    assert z.config_change_sequence("config_change_0000000012") == 12
    assert z.config_change_sequence("/config/changes/config_change_0000000003") == 3
    assert z.CONTROLLER == "/controller" and z.CONTROLLER_EPOCH == "/controller_epoch"
    assert z.CLUSTER_ID == "/cluster/id"
    assert z.LATEST_PRODUCER_ID_BLOCK == "/latest_producer_id_block"


def test_persistent_paths_are_kafkas():
    assert set(z.PERSISTENT_PATHS) == {
        "/consumers", "/brokers/ids", "/brokers/topics", "/config/changes", "/admin/delete_topics",
        "/brokers/seqid", "/isr_change_notification", "/latest_producer_id_block",
        "/log_dir_event_notification", "/config/topics", "/config/clients", "/config/users",
        "/config/brokers", "/config/ips"}


@pytest.mark.parametrize("bad", ["", "a/b", ".", ".."])
def test_paths_reject_bad_components(bad):
    with pytest.raises(ValueError):
        z.topic_path(bad)
    with pytest.raises(ValueError):
        z.config_entity_path("topics", bad)


def test_paths_reject_non_int_ids():
    with pytest.raises(ValueError):
        z.broker_path("1")
    with pytest.raises(ValueError):
        z.partition_state_path("t", True)


# -- /brokers/ids/<id> ------------------------------------------------------------------------

KAFKA_BROKER_V5 = ('{"features":{},"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},'
                   '"endpoints":["PLAINTEXT://127.0.0.1:9092"],"jmx_port":-1,"port":9092,'
                   '"host":"127.0.0.1","version":5,"timestamp":"1700000000123"}')


def test_broker_registration_matches_kafka():
    data = z.encode_broker_registration([z.Endpoint("PLAINTEXT", "127.0.0.1", 9092)],
                                        timestamp_ms=1700000000123)
    assert as_dict(data) == json.loads(KAFKA_BROKER_V5)
    assert b" " not in data  # compact, like Jackson


def test_broker_registration_with_rack_and_listeners():
    expected = {
        "features": {},
        "listener_security_protocol_map": {"INTERNAL": "PLAINTEXT", "EXTERNAL": "SASL_SSL"},
        "endpoints": ["INTERNAL://10.0.0.1:9092", "EXTERNAL://broker1.example.com:9094"],
        "rack": "eu-west-1a",
        "jmx_port": 9999,
        "port": 9092,
        "host": "10.0.0.1",
        "version": 5,
        "timestamp": "1700000000000",
    }
    data = z.encode_broker_registration(
        [z.Endpoint("INTERNAL", "10.0.0.1", 9092, "PLAINTEXT"),
         z.Endpoint("EXTERNAL", "broker1.example.com", 9094, "SASL_SSL")],
        rack="eu-west-1a", jmx_port=9999, timestamp_ms=1700000000000)
    assert as_dict(data) == expected


def test_broker_registration_without_plaintext_has_null_host():
    js = as_dict(z.encode_broker_registration([z.Endpoint("SSL", "h", 9093, "SSL")], timestamp_ms=1))
    assert js["host"] is None and js["port"] == -1
    assert "rack" not in js


def test_broker_registration_timestamp_defaults_to_now():
    js = as_dict(z.encode_broker_registration(["PLAINTEXT://localhost:9092"]))
    assert isinstance(js["timestamp"], str) and int(js["timestamp"]) > 1_600_000_000_000


def test_decode_kafka_broker_registration():
    reg = z.decode_broker_registration(1, KAFKA_BROKER_V5.encode())
    assert reg == z.BrokerRegistration(1, (z.Endpoint("PLAINTEXT", "127.0.0.1", 9092, "PLAINTEXT"),),
                                       rack=None, jmx_port=-1, timestamp_ms=1700000000123, version=5,
                                       features={})
    assert reg.endpoint("plaintext").port == 9092
    assert reg.endpoint("SSL") is None


def test_decode_broker_registration_roundtrip_ipv6_and_rack():
    eps = [z.Endpoint("CLIENT", "::1", 9092, "PLAINTEXT"), z.Endpoint("REPL", None, 9093, "SSL")]
    data = z.encode_broker_registration(eps, rack="r1", timestamp_ms=5)
    assert as_dict(data)["endpoints"] == ["CLIENT://[::1]:9092", "REPL://:9093"]
    reg = z.decode_broker_registration(7, data)
    assert reg.endpoints == tuple(eps) and reg.rack == "r1" and reg.timestamp_ms == 5


def test_decode_old_broker_registrations():
    v1 = b'{"version":1,"host":"localhost","port":9092,"jmx_port":9999,"timestamp":"2233345666"}'
    reg = z.decode_broker_registration(0, v1)
    assert reg.endpoints == (z.Endpoint("PLAINTEXT", "localhost", 9092, "PLAINTEXT"),)
    assert reg.jmx_port == 9999 and reg.version == 1
    # v2/v3 have endpoints but no protocol map: listener names are protocols
    v3 = (b'{"version":3,"host":"localhost","port":9092,"jmx_port":9999,"timestamp":"2233345666",'
          b'"endpoints":["PLAINTEXT://host1:9092","SSL://host1:9093"],"rack":"dc1"}')
    reg = z.decode_broker_registration(0, v3)
    assert [e.security_protocol for e in reg.endpoints] == ["PLAINTEXT", "SSL"]
    assert reg.rack == "dc1" and reg.features == {}
    # v5 with real features
    v5 = json.loads(KAFKA_BROKER_V5)
    v5["features"] = {"metadata.version": {"min_version": 1, "max_version": 7}}
    assert z.decode_broker_registration(0, json.dumps(v5).encode()).features == v5["features"]


def test_decode_broker_registration_errors():
    with pytest.raises(z.ZNodeError):
        z.decode_broker_registration(1, b"not json")
    with pytest.raises(z.ZNodeError):
        z.decode_broker_registration(1, b'{"version":0,"jmx_port":-1}')
    with pytest.raises(z.ZNodeError):  # CLIENT is not a protocol and there is no map
        z.decode_broker_registration(1, b'{"version":4,"jmx_port":-1,"endpoints":["CLIENT://h:1"]}')
    with pytest.raises(z.ZNodeError):
        z.decode_broker_registration(1, b'{"version":5,"jmx_port":-1,"endpoints":["garbage"],'
                                        b'"listener_security_protocol_map":{}}')


# -- /brokers/topics/<t> ----------------------------------------------------------------------

TOPIC_ID = uuid.UUID("6f1f7c8a-1c4e-4b8e-9a3f-2d6b7c9e0a11")


def test_topic_assignment_matches_kafka():
    kafka = ('{"partitions":{"0":[1,2,3],"1":[2,3,1],"2":[3,1,2]},"topic_id":"%s",'
             '"adding_replicas":{},"removing_replicas":{},"version":3}' % uuid_to_base64(TOPIC_ID))
    data = z.encode_topic_assignment({0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]}, TOPIC_ID)
    assert as_dict(data) == json.loads(kafka)
    # the topic id may be given as Kafka's text too
    assert z.encode_topic_assignment({0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]},
                                     uuid_to_base64(TOPIC_ID)) == data
    decoded = z.decode_topic_assignment(kafka.encode(), "t")
    assert decoded == z.TopicAssignment({0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]}, TOPIC_ID, {}, {}, 3)


def test_topic_assignment_with_reassignment_in_flight():
    data = z.encode_topic_assignment({0: [1, 2, 4], 1: [2, 3]}, None,
                                     adding_replicas={0: [4], 1: []}, removing_replicas={0: [3]})
    assert as_dict(data) == {"partitions": {"0": [1, 2, 4], "1": [2, 3]}, "adding_replicas": {"0": [4]},
                             "removing_replicas": {"0": [3]}, "version": 3}
    decoded = z.decode_topic_assignment(data)
    assert decoded.adding_replicas == {0: [4]} and decoded.removing_replicas == {0: [3]}
    assert decoded.topic_id is None


def test_decode_old_topic_assignments():
    # what Kafka 1.x wrote: no adding/removing, no topic id
    old = z.decode_topic_assignment(b'{"version":1,"partitions":{"1":[2,1],"0":[1,2]}}')
    assert old.partitions == {0: [1, 2], 1: [2, 1]} and list(old.partitions) == [0, 1]
    assert old.adding_replicas == {} and old.topic_id is None and old.version == 1
    empty = z.decode_topic_assignment(b"")
    assert empty.partitions == {}
    with pytest.raises(z.ZNodeError):
        z.decode_topic_assignment(b'{"version":3,"partitions":{"0":[1,"2"]}}')
    with pytest.raises(z.ZNodeError):
        z.decode_topic_assignment(b'{"version":3,"partitions":{"0":[1]},"topic_id":"nope"}')


def test_uuid_base64_roundtrip():
    for u in (TOPIC_ID, uuid.UUID(int=0), uuid.UUID(int=1), uuid.uuid4()):
        text = uuid_to_base64(u)
        assert len(text) == 22 and uuid_from_base64(text) == u
    # Kafka's Uuid.toString of the METADATA topic id (0...01)
    assert uuid_to_base64(uuid.UUID(int=1)) == "AAAAAAAAAAAAAAAAAAAAAQ"
    for bad in ("", "AAAA", "A" * 23, "AAAAAAAAAAAAAAAAAAAA+Q", "AAAAAAAAAAAAAAAAAAAA Q"):
        with pytest.raises(ValueError):
            uuid_from_base64(bad)


# -- partition state --------------------------------------------------------------------------

def test_partition_state_matches_kafka():
    kafka = '{"controller_epoch":2,"leader":1,"version":1,"leader_epoch":5,"isr":[1,3,2]}'
    data = z.encode_partition_state(leader=1, leader_epoch=5, isr=[1, 3, 2], controller_epoch=2)
    assert as_dict(data) == json.loads(kafka)
    state = z.decode_partition_state(kafka.encode(), zk_version=9)
    assert state == z.PartitionState(1, 5, [1, 3, 2], 2, z.LEADER_RECOVERED, 9)
    assert z.encode_partition_state_obj(state) == data


def test_partition_state_leader_recovery_and_no_leader():
    data = z.encode_partition_state(z.NO_LEADER, 7, [], 3, leader_recovery_state=z.LEADER_RECOVERING)
    assert as_dict(data) == {"controller_epoch": 3, "leader": -1, "version": 1, "leader_epoch": 7,
                             "isr": [], "leader_recovery_state": 1}
    assert z.decode_partition_state(data).leader_recovery_state == z.LEADER_RECOVERING
    assert z.decode_partition_state(b"") is None
    assert z.decode_partition_state(None) is None
    with pytest.raises(z.ZNodeError):
        z.decode_partition_state(b'{"version":1,"leader":1,"leader_epoch":0,"isr":[1]}')


# -- controller, epoch, cluster id ------------------------------------------------------------

def test_controller_matches_kafka():
    kafka = '{"version":2,"brokerid":2,"timestamp":"1700000000456","kraftControllerEpoch":-1}'
    assert as_dict(z.encode_controller(2, timestamp_ms=1700000000456)) == json.loads(kafka)
    assert z.decode_controller(kafka.encode()) == z.ControllerInfo(2, 1700000000456, -1, 2)
    # a Kafka 2.x/3.0-3.3 controller wrote version 1 without the KRaft epoch
    old = z.decode_controller(b'{"version":1,"brokerid":0,"timestamp":"1600000000000"}')
    assert old == z.ControllerInfo(0, 1600000000000, -1, 1)
    assert z.decode_controller(b"") is None


def test_controller_epoch_is_plain_text():
    assert z.encode_controller_epoch(17) == b"17"
    assert z.decode_controller_epoch(b"17") == 17
    assert z.decode_controller_epoch("3") == 3
    with pytest.raises(z.ZNodeError):
        z.decode_controller_epoch(b'{"epoch":1}')


def test_cluster_id_matches_kafka():
    kafka = '{"version":"1","id":"MkU3OEVBNTcwNTJENDM2Qg"}'
    assert as_dict(z.encode_cluster_id("MkU3OEVBNTcwNTJENDM2Qg")) == json.loads(kafka)
    assert z.decode_cluster_id(kafka.encode()) == "MkU3OEVBNTcwNTJENDM2Qg"
    with pytest.raises(z.ZNodeError):
        z.decode_cluster_id(b"")


# -- config -----------------------------------------------------------------------------------

def test_topic_config_matches_kafka():
    kafka = ('{"version":1,"config":{"cleanup.policy":"compact","retention.ms":"86400000",'
             '"unclean.leader.election.enable":"true"}}')
    data = z.encode_config({"cleanup.policy": "compact", "retention.ms": 86400000,
                            "unclean.leader.election.enable": True, "dropped": None})
    assert as_dict(data) == json.loads(kafka)
    assert z.decode_config(kafka.encode()) == {"cleanup.policy": "compact", "retention.ms": "86400000",
                                               "unclean.leader.election.enable": "true"}
    assert as_dict(z.encode_config({})) == {"version": 1, "config": {}}
    assert z.decode_config(b"") == {} and z.decode_config(None) == {}
    assert z.decode_config(b'{"version":1}') == {}


def test_config_change_notification_matches_kafka():
    kafka = '{"version":2,"entity_path":"topics/orders"}'
    assert as_dict(z.encode_config_change("topics", "orders")) == json.loads(kafka)
    assert z.decode_config_change(kafka.encode()) == ("topics", "orders")
    assert z.decode_config_change(b'{"version":2,"entity_path":"users/alice/clients/app"}') == \
        ("users", "alice/clients/app")
    v1 = b'{"version":1,"entity_type":"topics","entity_name":"t"}'
    assert z.decode_config_change(v1) == ("topics", "t")
    with pytest.raises(z.ZNodeError):
        z.decode_config_change(b'{"version":2,"entity_path":"topics"}')
    with pytest.raises(z.ZNodeError):
        z.decode_config_change(b'{"version":3,"entity_path":"topics/t"}')


# -- producer id block ------------------------------------------------------------------------

def test_producer_id_block_matches_kafka():
    kafka = '{"version":1,"broker":2,"block_start":"1000","block_end":"1999"}'
    assert as_dict(z.encode_producer_id_block(2, 1000, 1999)) == json.loads(kafka)
    block = z.decode_producer_id_block(kafka.encode())
    assert block == z.ProducerIdBlock(2, 1000, 1999) and block.size == 1000
    assert z.decode_producer_id_block(b"") is None
