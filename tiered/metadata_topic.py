"""``__remote_log_metadata`` through Kafka clients of the broker's own listener (with the
security the broker gives them), as Kafka's
TopicBasedRemoteLogMetadataManager does (confluent-kafka, the ``tiered`` extra): the topic is
made on first use (remote.log.metadata.topic.num.partitions, .replication.factor, kept
forever), an event is produced to its metadata partition with acks=all, and a new leader reads
its metadata partition from the start to the end it has when it starts.
"""
from __future__ import annotations

import threading
import uuid

from .metadata import TOPIC, metadata_partition

TIMEOUT_S = 30.0


class TopicMetadataLog:
    def __init__(self, bootstrap_servers: str, *, partitions: int = 50, replication: int = 3,
                 client_config: dict | None = None, producer_config: dict | None = None,
                 consumer_config: dict | None = None):
        """``client_config``: librdkafka settings of the admin client (the topic's creation),
        ``producer_config`` / ``consumer_config`` of the producer and the consumer (the
        client's when None)."""
        self.bootstrap = bootstrap_servers
        self.partitions = partitions
        self.replication = replication
        self.client_config = dict(client_config or {})
        self.producer_config = self.client_config if producer_config is None \
            else dict(producer_config)
        self.consumer_config = self.client_config if consumer_config is None \
            else dict(consumer_config)
        self._producer = None
        self._ready = False
        self._lock = threading.Lock()

    def _config(self, base: dict | None = None, **extra) -> dict:
        return {"bootstrap.servers": self.bootstrap,
                **(self.client_config if base is None else base), **extra}

    def _ensure_topic(self) -> None:
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient(self._config())
        brokers = len(admin.list_topics(timeout=TIMEOUT_S).brokers)
        topic = NewTopic(TOPIC, self.partitions, max(1, min(self.replication, brokers)),
                         config={"retention.ms": "-1", "cleanup.policy": "delete"})
        try:
            admin.create_topics([topic])[TOPIC].result(TIMEOUT_S)
        except KafkaException as e:
            if e.args[0].name() != "TOPIC_ALREADY_EXISTS":
                raise RuntimeError(f"cannot create {TOPIC}: {e}") from e

    def _ready_producer(self):
        from confluent_kafka import Producer

        with self._lock:
            if not self._ready:
                self._ensure_topic()
                self._ready = True
            if self._producer is None:
                self._producer = Producer(self._config(self.producer_config, **{
                    "acks": "all", "enable.idempotence": True}))
            return self._producer

    def append(self, topic_id: uuid.UUID, partition: int, value: bytes) -> None:
        producer = self._ready_producer()
        done: list = []
        producer.produce(TOPIC, value=value,
                         partition=self.metadata_partition(topic_id, partition),
                         on_delivery=lambda err, _msg: done.append(err))
        producer.flush(TIMEOUT_S)
        if not done or done[0] is not None:
            raise RuntimeError(f"cannot write to {TOPIC}: {done[0] if done else 'timed out'}")

    def metadata_partition(self, topic_id: uuid.UUID, partition: int) -> int:
        return metadata_partition(topic_id, partition, self.partitions)

    def read(self, topic_id: uuid.UUID, partition: int):
        from confluent_kafka import Consumer, KafkaException, TopicPartition

        self._ready_producer()
        tp = TopicPartition(TOPIC, self.metadata_partition(topic_id, partition))
        consumer = Consumer(self._config(self.consumer_config, **{
            "group.id": "josefk-remote-log-metadata",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest"}))
        try:
            try:
                low, high = consumer.get_watermark_offsets(tp, timeout=TIMEOUT_S)
            except KafkaException as e:  # e.g. the topic just made, its partitions not known yet
                raise RuntimeError(f"cannot read {TOPIC}: {e}") from e
            if high <= low:
                return []
            tp.offset = low
            consumer.assign([tp])
            out = []
            while True:
                msg = consumer.poll(TIMEOUT_S)
                if msg is None:
                    raise RuntimeError(f"{TOPIC} partition {tp.partition} did not answer")
                if msg.error():
                    raise RuntimeError(f"cannot read {TOPIC}: {msg.error()}")
                if msg.value() is not None:
                    out.append(msg.value())
                if msg.offset() >= high - 1:
                    return out
        finally:
            consumer.close()

    def close(self) -> None:
        if self._producer is not None:
            self._producer.flush(TIMEOUT_S)
