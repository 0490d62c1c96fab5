"""The sink loop's records, on a real broker: Kafka's ByteArray and String converters read
inline make the same SinkRecords as the converters called and the constructor; the batch's
offsets are the next of each partition."""
import threading
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition as KafkaTopicPartition

from josefk.connect.api.connector import SinkTask, TopicPartition
from josefk.connect.api.records import Headers, SinkRecord
from josefk.connect.converters.header import SimpleHeaderConverter
from josefk.connect.converters.simple import ByteArrayConverter, StringConverter
from josefk.connect.runtime.errors import RetryWithToleranceOperator
from josefk.connect.runtime.metrics import ConnectMetrics, TaskMetrics
from josefk.connect.runtime.seams import ConnectorTaskId, TargetState
from josefk.connect.runtime.sink_task import WorkerSinkTask
from josefk.connect.runtime.worker_task import Pipeline


class CalledStringConverter(StringConverter):
    """A subclass: not read inline, its to_connect_data called for every message."""


def converter(cls, is_key):
    c = cls()
    c.configure({}, is_key)
    return c


def worker_task(bootstrap, key_converter, value_converter):
    headers = SimpleHeaderConverter()
    headers.configure({})
    w = WorkerSinkTask(ConnectorTaskId("inline", 0), SinkTask(), {}, None, TargetState.STARTED,
                       Pipeline(key_converter, value_converter, headers),
                       RetryWithToleranceOperator(0, 0, False), threading.Event(),
                       consumer_settings={}, topics=[], flush_interval_ms=60000,
                       metrics=TaskMetrics(ConnectMetrics(), ("inline", "0"), sink=True))
    w.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "inline",
                           "enable.auto.commit": False})
    w.topics_used = set()
    w.listener = type("Listener", (), {"on_topic_used": lambda self, id, topic: None})()
    return w


def expected(m, key_converter, value_converter) -> SinkRecord:
    key, value = (key_converter.to_connect_data(m.topic(), m.key()),
                  value_converter.to_connect_data(m.topic(), m.value()))
    headers = None if m.headers() is None else Headers(
        [(k, *SimpleHeaderConverter().to_connect_header(m.topic(), k, v)) for k, v in m.headers()])
    return SinkRecord(m.topic(), m.partition(), key.schema, key.value, value.schema, value.value,
                      m.offset(), m.timestamp()[1], "CreateTime", headers)


@pytest.mark.parametrize("key_cls,value_cls", [
    (ByteArrayConverter, StringConverter), (StringConverter, ByteArrayConverter),
    (CalledStringConverter, CalledStringConverter)])
def test_records_read_inline_are_the_records_the_converters_make(
        josefk_broker, key_cls, value_cls):
    topic = f"inline-{key_cls.__name__}-{value_cls.__name__}-{time.monotonic_ns()}"
    josefk_broker.create_topic(topic, partitions=2)
    p = Producer({"bootstrap.servers": josefk_broker.bootstrap_servers})
    for i in range(6):
        p.produce(topic, "é%d" % i if i % 3 else None, None if i == 4 else b"k%d" % i,
                  partition=i % 2, timestamp=1000 + i,
                  headers=[("h", b"%d" % i)] if i % 2 else None)
    assert p.flush(15) == 0
    key_converter, value_converter = converter(key_cls, True), converter(value_cls, False)
    w = worker_task(josefk_broker.bootstrap_servers, key_converter, value_converter)
    w.consumer.assign([KafkaTopicPartition(topic, 0, 0), KafkaTopicPartition(topic, 1, 0)])
    records, offsets, deadline = [], {}, time.monotonic() + 20
    try:
        while len(records) < 6 and time.monotonic() < deadline:
            w._poll(1.0)
            records += w.batch
            offsets.update(w.batch_offsets)
            w.batch = []
        check = Consumer({"bootstrap.servers": josefk_broker.bootstrap_servers,
                          "group.id": "inline-check"})
        check.assign([KafkaTopicPartition(topic, 0, 0), KafkaTopicPartition(topic, 1, 0)])
        messages = []
        while len(messages) < 6 and time.monotonic() < deadline:
            messages += [m for m in check.consume(6, 1.0) if m.error() is None]
        check.close()
    finally:
        w.consumer.close()
    key = lambda r: (r.kafka_partition, r.kafka_offset)  # noqa: E731
    assert sorted(records, key=key) == sorted(
        (expected(m, key_converter, value_converter) for m in messages), key=key)
    assert offsets == {TopicPartition(topic, 0): 3, TopicPartition(topic, 1): 3}
