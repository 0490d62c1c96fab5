"""The ``_schemas`` topic through confluent-kafka: a reader thread applies every record to the
state (on the event loop, so handlers need no locks), and the primary's writes wait until the
reader has applied them, so an answer always reflects what it wrote.

Timeouts as Confluent's: ``kafkastore.timeout.ms`` (500) bounds a write (its acknowledgement,
then the reader reaching it); ``kafkastore.init.timeout.ms`` (60000) bounds creating or checking
the topic and reading it to its end, at start and when this instance becomes primary."""
from __future__ import annotations

import asyncio
import logging
import threading

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from josefk.registry.state import State

log = logging.getLogger("josefk.registry.store")


class StoreError(Exception):
    """The Kafka store failed (Confluent's 50001) or timed out (50002)."""

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code


class KafkaStore:
    def __init__(self, kafka: dict, topic: str, replication_factor: int, timeout_ms: int,
                 init_timeout_ms: int, state: State):
        self.kafka, self.topic, self.state = kafka, topic, state
        self.replication_factor = replication_factor
        self.timeout = timeout_ms / 1000
        self.init_timeout = init_timeout_ms / 1000
        self.offset = 0  # the next offset the reader will apply
        self.waiters: list[tuple[int, asyncio.Future]] = []
        self.stopping = threading.Event()
        self.loop = None
        self.consumer = self.producer = self.watermarks = None
        self.threads: list[threading.Thread] = []

    async def start(self) -> None:
        self.loop = asyncio.get_running_loop()
        await self.loop.run_in_executor(None, self._ensure_topic)
        self.consumer = Consumer({**self.kafka, "group.id": "schema-registry-reader",
                                  "enable.auto.commit": False, "enable.partition.eof": False})
        self.consumer.assign([TopicPartition(self.topic, 0, 0)])
        # Its own client: a watermark query on the reader's consumer can wait behind consume().
        self.watermarks = Consumer({**self.kafka, "group.id": "schema-registry-reader"})
        self.producer = Producer({**self.kafka, "acks": "all", "enable.idempotence": True,
                                  "linger.ms": 0})
        for target in (self._read_loop, self._delivery_loop):
            t = threading.Thread(target=target, daemon=True, name=target.__name__)
            t.start()
            self.threads.append(t)
        await self.caught_up()

    def _ensure_topic(self) -> None:
        admin = AdminClient(self.kafka)
        md = admin.list_topics(timeout=self.init_timeout)
        if self.topic in md.topics and not md.topics[self.topic].error:
            if len(md.topics[self.topic].partitions) != 1:
                raise StoreError(50001, f"topic {self.topic} must have exactly one partition")
            return
        rf = max(1, min(self.replication_factor, len(md.brokers)))
        futures = admin.create_topics([NewTopic(self.topic, 1, rf,
                                                config={"cleanup.policy": "compact"})])
        try:
            futures[self.topic].result(self.init_timeout)
        except KafkaException as e:
            if "TOPIC_ALREADY_EXISTS" not in str(e):
                raise StoreError(50001, f"cannot create {self.topic}: {e}") from None

    def _read_loop(self) -> None:
        while not self.stopping.is_set():
            try:
                msgs = self.consumer.consume(num_messages=1000, timeout=0.2)
            except (KafkaException, RuntimeError) as e:
                if self.stopping.is_set():
                    return
                log.warning("reading %s: %s", self.topic, e)
                continue
            records = [(m.offset(), m.key(), m.value()) for m in msgs if not m.error()]
            if records:
                self.loop.call_soon_threadsafe(self._apply, records)

    def _apply(self, records) -> None:
        for offset, key, value in records:
            if offset >= self.offset:
                self.state.apply(key, value)
                self.offset = offset + 1
        ready = [w for w in self.waiters if w[0] <= self.offset]
        self.waiters = [w for w in self.waiters if w[0] > self.offset]
        for _, fut in ready:
            if not fut.done():
                fut.set_result(None)

    def _delivery_loop(self) -> None:
        while not self.stopping.is_set():
            self.producer.poll(0.1)

    async def wait_applied(self, offset: int, timeout: float) -> None:
        """Until the records below ``offset`` are in the state."""
        if self.offset >= offset:
            return
        fut = self.loop.create_future()
        self.waiters.append((offset, fut))
        try:
            await asyncio.wait_for(fut, timeout)
        except asyncio.TimeoutError:
            raise StoreError(50002, f"timed out reading {self.topic} up to offset {offset}") \
                from None

    async def caught_up(self) -> None:
        """Until everything in the topic now is in the state (within the init timeout)."""
        tp = TopicPartition(self.topic, 0)
        try:
            _low, high = await self.loop.run_in_executor(
                None, lambda: self.watermarks.get_watermark_offsets(tp,
                                                                    timeout=self.init_timeout))
        except KafkaException as e:
            raise StoreError(50001, f"cannot read the end of {self.topic}: {e}") from None
        await self.wait_applied(high, self.init_timeout)

    async def write(self, key: bytes, value: bytes | None) -> None:
        """Produce one record and wait until the reader has applied it."""
        fut = self.loop.create_future()

        def delivered(err, msg):
            if err:
                self.loop.call_soon_threadsafe(_settle, fut, StoreError(50001, str(err)))
            else:
                self.loop.call_soon_threadsafe(_settle, fut, msg.offset())

        try:
            self.producer.produce(self.topic, value=value, key=key, partition=0,
                                  on_delivery=delivered)
        except (KafkaException, BufferError) as e:
            raise StoreError(50001, f"cannot write to {self.topic}: {e}") from None
        try:
            offset = await asyncio.wait_for(fut, self.timeout)
        except asyncio.TimeoutError:
            raise StoreError(50002, f"timed out writing to {self.topic}") from None
        await self.wait_applied(offset + 1, self.timeout)

    def stop(self) -> None:
        self.stopping.set()
        for t in self.threads:
            t.join(timeout=5)
        if self.producer is not None:
            self.producer.flush(2)
        for client in (self.consumer, self.watermarks):
            if client is not None:
                client.close()


def _settle(fut: asyncio.Future, result) -> None:
    if fut.done():
        return
    if isinstance(result, Exception):
        fut.set_exception(result)
    else:
        fut.set_result(result)
