"""The worker's Kafka clients get Java-named settings in librdkafka's names."""
from josefk.connect.runtime.worker_config import WorkerConfig, to_librdkafka


def test_java_client_settings_in_librdkafkas_names():
    assert to_librdkafka({"bootstrap.servers": "h:1", "max.request.size": "2000000",
                          "fetch.max.wait.ms": "50", "metadata.max.age.ms": "500",
                          "max.poll.records": "10", "linger.ms": "5"}) == {
        "bootstrap.servers": "h:1", "message.max.bytes": "2000000",
        "fetch.wait.max.ms": "50", "topic.metadata.refresh.interval.ms": "500",
        "linger.ms": "5", "security.protocol": "PLAINTEXT"}


def test_shared_then_the_kinds_own_then_a_connectors_overrides():
    config = WorkerConfig({"bootstrap.servers": "h:1", "metadata.max.age.ms": "1000",
                           "offset.storage.file.filename": "/tmp/x",
                           "consumer.metadata.max.age.ms": "500",
                           "producer.linger.ms": "7"}, distributed=False)
    consumer = config.client_settings("consumer", {"fetch.min.bytes": "10"})
    assert consumer["topic.metadata.refresh.interval.ms"] == "500"
    assert consumer["fetch.min.bytes"] == "10" and "linger.ms" not in consumer
    producer = config.client_settings("producer")
    assert producer["topic.metadata.refresh.interval.ms"] == "1000"
    assert producer["linger.ms"] == "7"
