"""CreateTopics on the handler harness: what a created topic reports, and each refusal with
Kafka's code and message: a name given twice, an illegal name, an existing topic, a bad config
value, more partitions than the broker may host; validate_only creates nothing."""
from josefk.wire import errors
from josefk.wire.apis import CREATE_TOPICS
from testkit.handlers import Services, call

R = CREATE_TOPICS.Request


def topic(name, partitions=1, configs=None):
    return R.CreatableTopic(name=name, num_partitions=partitions, replication_factor=1,
                            assignments=[], configs=[R.CreatableTopicConfig(name=k, value=v)
                                                     for k, v in (configs or {}).items()])


def create(services, *topics, validate_only=False):
    resp = call(services, CREATE_TOPICS, R(topics=list(topics), validate_only=validate_only))
    return {t.name: t for t in resp.topics}


def test_a_created_topic_reports_its_shape_and_configs(services):
    created = create(services, topic("t", 3, {"cleanup.policy": "compact"}))["t"]
    assert (created.error_code, created.num_partitions, created.replication_factor) == (0, 3, 1)
    assert created.topic_id == services.metadata.topics["t"].topic_id
    assert {c.name: c.value for c in created.configs}["cleanup.policy"] == "compact"
    assert len(services.replicas.leader_partition("t", 2).log.dir.name) > 0


def test_each_refusal_is_kafkas_code_and_message(services):
    services.create_topic("exists")
    resp = call(services, CREATE_TOPICS, R(validate_only=False, topics=[
        topic("twice"), topic("twice"), topic("bad/name"), topic("exists"),
        topic("bad-config", configs={"retention.ms": "soon"})]))
    out = {t.name: t for t in resp.topics}
    # a name given twice: every copy refused, none created (Kafka's KafkaApis)
    assert [(t.error_code, t.error_message) for t in resp.topics if t.name == "twice"] == [
        (errors.INVALID_REQUEST, "Found multiple entries for this topic.")] * 2
    assert "twice" not in services.metadata.topics
    assert out["bad/name"].error_code == errors.INVALID_TOPIC_EXCEPTION
    assert (out["exists"].error_code, out["exists"].error_message) == (
        errors.TOPIC_ALREADY_EXISTS, "Topic 'exists' already exists.")
    assert (out["bad-config"].error_code, out["bad-config"].error_message) == (
        errors.INVALID_CONFIG, "Invalid value soon for configuration retention.ms")
    assert "bad/name" not in services.metadata.topics
    assert "bad-config" not in services.metadata.topics


def test_more_partitions_than_the_broker_may_host_are_refused(tmp_path):
    services = Services(tmp_path, {"max.broker.partitions": "4"})
    try:
        out = create(services, topic("big", 5))["big"]
        assert (out.error_code, out.error_message) == (
            errors.INVALID_PARTITIONS, "Adding 5 partitions to the 0 this broker hosts would "
            "exceed its limit of 4 (max.broker.partitions).")
        assert "big" not in services.metadata.topics
    finally:
        services.close()


def test_validate_only_answers_without_creating(services):
    out = create(services, topic("t", 2), validate_only=True)["t"]
    assert (out.error_code, out.num_partitions) == (0, 2)
    assert "t" not in services.metadata.topics and services.logs.get("t", 0) is None
