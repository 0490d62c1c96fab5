import pytest

from josefk.connect.api.config import ConfigException
from josefk.mirror.main import run
from josefk.mirror.maker import BYTES, read_flows

MM2 = {"clusters": "primary, backup",
       "primary.bootstrap.servers": "p:9092", "primary.security.protocol": "PLAINTEXT",
       "backup.bootstrap.servers": "b:9092",
       "primary->backup.enabled": "true", "primary->backup.topics": "orders.*",
       "replication.factor": "1", "tasks.max": "4", "offset.storage.replication.factor": "1"}


def test_every_pair_is_a_flow_and_only_enabled_ones_replicate():
    flows = {(f.source, f.target): f for f in read_flows(MM2)}
    assert set(flows) == {("primary", "backup"), ("backup", "primary")}
    forward, back = flows["primary", "backup"], flows["backup", "primary"]
    assert forward.enabled and not back.enabled
    assert [c["name"] for c in forward.connectors] == [
        "MirrorSourceConnector", "MirrorCheckpointConnector", "MirrorHeartbeatConnector"]
    assert [c["connector.class"] for c in back.connectors] == [
        "org.apache.kafka.connect.mirror.MirrorHeartbeatConnector"]
    source = forward.connectors[0]
    assert source["topics"] == "orders.*" and source["tasks.max"] == "4"
    assert source["source.cluster.alias"] == "primary"
    assert source["target.cluster.alias"] == "backup"
    assert source["source.cluster.bootstrap.servers"] == "p:9092"
    assert source["source.cluster.security.protocol"] == "PLAINTEXT"
    assert source["target.cluster.bootstrap.servers"] == "b:9092"
    assert "enabled" not in source and "clusters" not in source
    assert not any(k.startswith(("primary.", "backup.", "primary->")) for k in source)
    assert "topics" not in back.connectors[0]


def test_a_clusters_client_settings_reach_its_role_in_the_connectors():
    flows = read_flows({**MM2, "primary.consumer.isolation.level": "read_committed",
                        "backup.producer.linger.ms": "5", "backup.admin.request.timeout.ms": "9"})
    source = next(f for f in flows if f.source == "primary").connectors[0]
    assert source["source.consumer.isolation.level"] == "read_committed"
    assert source["target.producer.linger.ms"] == "5"
    assert source["target.admin.request.timeout.ms"] == "9"
    assert not any(k.startswith(("source.cluster.consumer.", "target.cluster.producer."))
                   for k in source)


def test_a_flows_worker_runs_on_its_target():
    forward = next(f for f in read_flows(MM2) if f.source == "primary")
    assert forward.worker["bootstrap.servers"] == "b:9092"
    assert forward.worker["group.id"] == "primary-mm2"
    assert forward.worker["offset.storage.topic"] == "mm2-offsets.primary.internal"
    assert forward.worker["config.storage.topic"] == "mm2-configs.primary.internal"
    assert forward.worker["status.storage.topic"] == "mm2-status.primary.internal"
    assert forward.worker["offset.storage.replication.factor"] == "1"
    assert {forward.worker[k] for k in ("key.converter", "value.converter",
                                        "header.converter")} == {BYTES}


def test_only_the_named_targets():
    assert [(f.source, f.target) for f in read_flows(MM2, ["backup"])] == [("primary", "backup")]


@pytest.mark.parametrize("props,message", [
    ({}, "clusters"),
    ({"clusters": "a, b", "a.bootstrap.servers": "x:1"}, "b.bootstrap.servers"),
])
def test_bad_files(props, message):
    with pytest.raises(ConfigException, match=message):
        read_flows(props)


def test_the_command_fails_in_one_line(tmp_path, capsys):
    path = tmp_path / "mm2.properties"
    path.write_text("clusters = a\n")

    class Args:
        config, clusters, log_level, more = str(path), None, "ERROR", []
    assert run(Args) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "a.bootstrap.servers" in err
