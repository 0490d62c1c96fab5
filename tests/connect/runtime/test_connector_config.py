"""Connector settings and the validation body (Connect's ConfigInfos), without a broker."""
import pytest

from josefk.connect.api.config import ConfigException
from josefk.connect.runtime.connector_config import (ConnectorConfig, config_errors,
                                                     enriched_def, validate)
from josefk.connect.runtime.herder import BadRequest
from josefk.connect.runtime.plugins import Plugins
from josefk.connect.runtime.worker_config import WorkerConfig
from tests.connect.runtime import doubles

DEFINITION_KEYS = ["name", "type", "required", "default_value", "importance", "documentation",
                   "group", "width", "display_name", "dependents", "order"]
VALUE_KEYS = ["name", "value", "recommended_values", "errors", "visible"]


@pytest.fixture
def plugins():
    return Plugins(doubles.PLUGINS)


def worker(**props):
    return WorkerConfig({"offset.storage.file.filename": "offsets.json", **props}, False)


def by_name(body):
    return {c["value"]["name"] if c["value"] else c["definition"]["name"]: c
            for c in body["configs"]}


def test_a_missing_required_field_and_a_wrong_type_in_connects_body(plugins):
    body = validate(plugins, worker(), {"connector.class": "FileStreamSource", "name": "src",
                                        "tasks.max": "abc", "file": "/tmp/in.txt"})
    assert list(body) == ["name", "error_count", "groups", "configs"]
    assert body["name"] == "FileStreamSource"
    assert body["groups"][:4] == ["Common", "Transforms", "Predicates", "Error Handling"]
    for config in body["configs"]:
        assert list(config) == ["definition", "value"]
        assert list(config["definition"]) == DEFINITION_KEYS
        assert list(config["value"]) == VALUE_KEYS
    configs = by_name(body)
    assert configs["tasks.max"]["value"]["errors"] == [  # the validator sees null, as Kafka's
        "Invalid value abc for configuration tasks.max: Not a number of type INT",
        "Invalid value null for configuration tasks.max: Value must be non-null"]
    assert configs["tasks.max"]["definition"] == {
        "name": "tasks.max", "type": "INT", "required": False, "default_value": "1",
        "importance": "HIGH", "documentation": "Maximum number of tasks to use for this "
        "connector.", "group": "Common", "width": "SHORT", "display_name": "Tasks max",
        "dependents": [], "order": 3}
    assert configs["topic"]["value"] == {
        "name": "topic", "value": None, "recommended_values": [],
        "errors": ['Missing required configuration "topic" which has no default value.'],
        "visible": True}
    assert configs["topic"]["definition"]["required"] is True
    assert configs["file"]["value"]["errors"] == []
    assert configs["errors.tolerance"]["value"]["value"] == "none"
    assert body["error_count"] == 3
    assert config_errors(body) == (
        "Connector configuration is invalid and contains the following 3 error(s):\n"
        "Invalid value abc for configuration tasks.max: Not a number of type INT\n"
        "Invalid value null for configuration tasks.max: Value must be non-null\n"
        "Missing required configuration \"topic\" which has no default value.\n"
        "You can also find the above list of errors at the endpoint "
        "`/connector-plugins/{connectorType}/config/validate`")


def test_a_sink_needs_exactly_one_of_topics_and_topics_regex(plugins):
    neither = by_name(validate(plugins, worker(), {"connector.class": "FileStreamSink",
                                                   "name": "s"}))
    assert neither["topics"]["value"]["errors"] == [
        "Must configure one of topics or topics.regex"]
    both = by_name(validate(plugins, worker(), {"connector.class": "FileStreamSink",
                                                "name": "s", "topics": "a", "topics.regex": "b.*"}))
    assert both["topics.regex"]["value"]["errors"] == [
        "topics and topics.regex are mutually exclusive options, but both are set."]
    dlq = by_name(validate(plugins, worker(), {
        "connector.class": "FileStreamSink", "name": "s", "topics": "a,dead",
        "errors.deadletterqueue.topic.name": "dead"}))
    assert dlq["topics"]["value"]["errors"] == [
        "The DLQ topic 'dead' may not be included in the list of topics ('topics=[a, dead]') "
        "consumed by the connector"]


def test_client_overrides_follow_the_workers_policy(plugins):
    props = {"connector.class": "FileStreamSink", "name": "s", "topics": "a",
             "consumer.override.max.poll.records": "10"}
    allowed = by_name(validate(plugins, worker(), props))
    assert allowed["consumer.override.max.poll.records"]["value"]["errors"] == []
    refused = validate(plugins, worker(**{"connector.client.config.override.policy": "None"}),
                       props)
    assert refused["error_count"] == 1
    assert by_name(refused)["consumer.override.max.poll.records"] == {
        "definition": None, "value": {
            "name": "consumer.override.max.poll.records", "value": "10",
            "recommended_values": [], "visible": True, "errors": [
                "The 'None' policy does not allow 'max.poll.records' to be overridden in the "
                "connector configuration."]}}


def test_transforms_are_enriched_with_their_own_settings(plugins):
    body = by_name(validate(plugins, worker(), {
        "connector.class": "FileStreamSink", "name": "s", "topics": "a", "transforms": "x,y",
        "transforms.x.type": "NoSuchTransform", "transforms.y.type": "RegexRouter",
        "transforms.y.regex": "(.*)"}))
    assert body["transforms.x.type"]["definition"]["group"] == "Transforms: x"
    assert body["transforms.x.type"]["value"]["errors"] == [
        "Invalid value NoSuchTransform for configuration transforms.x.type: Class "
        "NoSuchTransform could not be found."]
    assert "transforms.x.negate" not in body  # an unknown type declares nothing more
    assert body["transforms.y.negate"]["value"]["value"] == "false"
    assert body["transforms.y.replacement"]["value"]["errors"] == [
        'Missing required configuration "transforms.y.replacement" which has no default '
        'value.']


def test_an_unknown_or_missing_connector_class_is_a_bad_request(plugins):
    with pytest.raises(BadRequest, match="Failed to find any class that implements Connector "
                       "and which name matches Nope, available connectors are: .*"
                       "org.apache.kafka.connect.file.FileStreamSinkConnector"):
        validate(plugins, worker(), {"connector.class": "Nope"})
    with pytest.raises(BadRequest, match="contains no connector type"):
        validate(plugins, worker(), {"name": "x"})


def test_topic_creation_groups_are_declared_when_used(plugins):
    props = {"connector.class": "FileStreamSource", "name": "s", "topic": "t",
             "topic.creation.groups": "compacted",
             "topic.creation.default.replication.factor": "1",
             "topic.creation.default.partitions": "3",
             "topic.creation.compacted.include": "c-.*"}
    config = ConnectorConfig(plugins, props, sink=False)
    assert config["topic.creation.default.partitions"] == 3
    assert config["topic.creation.compacted.include"] == ["c-.*"]
    assert config["topic.creation.compacted.partitions"] == -1
    assert "topic.creation.default.partitions" not in enriched_def(
        plugins, props, sink=False, topic_creation_enabled=False).keys
    with pytest.raises(ConfigException, match="topic.creation.default.partitions"):
        ConnectorConfig(plugins, dict(props, **{"topic.creation.default.partitions": "0"}),
                        sink=False)


def test_exactly_once_preflight_checks_on_a_worker_with_exactly_once_support(plugins):
    eos = WorkerConfig({"group.id": "g", "config.storage.topic": "c",
                        "offset.storage.topic": "o", "status.storage.topic": "s",
                        "exactly.once.source.support": "enabled"}, True)
    stdin = by_name(validate(plugins, eos, {
        "connector.class": "FileStreamSource", "name": "s", "topic": "t",
        "exactly.once.support": "required", "transaction.boundary": "connector"}))
    assert stdin["exactly.once.support"]["value"]["errors"] == [
        "The connector does not support exactly-once semantics with the provided "
        "configuration."]
    assert stdin["transaction.boundary"]["value"]["errors"] == [
        "The connector does not support connector-defined transaction boundaries with the "
        "given configuration. Please reconfigure it to use a different transaction boundary "
        "definition."]
    file = by_name(validate(plugins, eos, {
        "connector.class": "FileStreamSource", "name": "s", "topic": "t", "file": "/f",
        "exactly.once.support": "required"}))
    assert file["exactly.once.support"]["value"]["errors"] == []
    assert by_name(validate(plugins, worker(), {
        "connector.class": "FileStreamSource", "name": "s", "topic": "t",
        "exactly.once.support": "required"}))["exactly.once.support"]["value"]["errors"] == []
