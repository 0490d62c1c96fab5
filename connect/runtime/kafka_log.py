"""A compacted topic read to its end and appended to (Kafka Connect's KafkaBasedLog), over
confluent-kafka: the three internal topics' stores are built on it.

``start()`` creates the topic when it is missing (compacted, the configured partitions and
replication factor, -1 for the brokers' defaults) and refuses an existing one that is not
compacted with Kafka's message; a consumer assigned every partition reads it from the start on
a thread and hands each record to ``on_record``; ``read_to_end()`` returns once every record
written before the call has been handed over. ``send`` appends with ``acks=all``."""
from __future__ import annotations

import json
import logging
import threading
import time
from typing import Callable, NamedTuple

from confluent_kafka import (OFFSET_BEGINNING, Consumer, IsolationLevel, KafkaError,
                             KafkaException, Producer, TopicPartition)
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic, OffsetSpec

from josefk.connect.api.config import ConfigException
from josefk.connect.api.errors import ConnectException

log = logging.getLogger("josefk.connect.kafka_log")

CREATE_TIMEOUT_S = 30.0
POLL_S = 0.1


class TopicSpec(NamedTuple):
    """How the store's topic is made and named in errors: ``setting`` is the worker setting
    that names it (``config.storage.topic``), ``purpose`` what it keeps, as Kafka words it."""
    name: str
    setting: str
    purpose: str
    partitions: int
    replication_factor: int


OnRecord = Callable[[bytes | None, bytes | None, int, int], None]


def to_json(value) -> bytes:
    """JSON as Kafka's JsonConverter with ``schemas.enable=false`` writes it: compact, UTF-8."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def worker_log(config, setting: str, purpose: str, on_record: OnRecord, partitions: int,
               suffix: str, name: str | None = None,
               clients: dict[str, dict] | None = None) -> KafkaBasedLog:
    """The log of the internal topic the worker setting ``setting`` names (its
    ``<prefix>.replication.factor`` with it), clients named ``<group.id>-<suffix>`` as
    Kafka's. ``name`` and ``clients`` (settings per "producer", "consumer", "admin"): another
    topic made as that one (a connector's own offsets topic, KIP-618), its clients' settings."""
    prefix = setting.rsplit(".", 1)[0]
    spec = TopicSpec(name or config[setting], setting, purpose, partitions,
                     config[f"{prefix}.replication.factor"])
    client_id = {"client.id": f"{config['group.id']}-{suffix}"}
    settings = clients or {kind: config.client_settings(kind)
                           for kind in ("producer", "consumer", "admin")}
    return KafkaBasedLog(spec, {**settings["producer"], **client_id},
                         {**settings["consumer"], **client_id},
                         {**settings["admin"], **client_id}, on_record)


class TopicBackedStore:
    """A store whose state (``apply(key, value)``) is folded, under a lock, from the records
    of the internal topic the worker setting ``setting`` names, as they are read."""

    def __init__(self, state, config, setting: str, purpose: str, partitions: int,
                 suffix: str, name: str | None = None, clients: dict[str, dict] | None = None):
        self._state = state
        self._lock = threading.Lock()
        self.log = worker_log(config, setting, purpose, self._on_record, partitions, suffix,
                              name, clients)

    def _on_record(self, key, value, _partition, _offset):
        with self._lock:
            self._state.apply(key, value)

    def start(self) -> None:
        self.log.start()

    def stop(self) -> None:
        self.log.stop()


class KafkaBasedLog:
    """``on_record(key, value, partition, offset)`` is called on the reading thread, in each
    partition's order."""

    def __init__(self, spec: TopicSpec, producer: dict, consumer: dict, admin: dict,
                 on_record: OnRecord):
        self.spec, self.on_record = spec, on_record
        self._admin_conf = admin
        self._producer_conf = {**producer, "acks": "all", "enable.idempotence": False,
                               # Java's default partitioner: murmur2 of the key, as Kafka's
                               # workers place the offsets topic's records
                               "partitioner": "murmur2_random"}
        self._consumer_conf = {"group.id": f"connect-{spec.name}", **consumer,
                               "enable.auto.commit": False, "enable.partition.eof": False,
                               "auto.offset.reset": "earliest"}
        self.producer: Producer | None = None
        self.consumer: Consumer | None = None
        self.admin: AdminClient | None = None
        self.partitions: list[int] = []
        self._positions: dict[int, int] = {}
        self._moved = threading.Condition()
        self._stopping = threading.Event()
        self._failure: BaseException | None = None
        self._thread: threading.Thread | None = None

    def start(self, timeout: float = CREATE_TIMEOUT_S) -> None:
        self.partitions = self._ensure_topic(timeout)
        self.producer = Producer(self._producer_conf)
        self.consumer = Consumer(self._consumer_conf)
        self.consumer.assign([TopicPartition(self.spec.name, p, OFFSET_BEGINNING)
                              for p in self.partitions])
        self._positions = {p: 0 for p in self.partitions}
        self._thread = threading.Thread(target=self._read, daemon=True,
                                        name=f"KafkaBasedLog-{self.spec.name}")
        self._thread.start()
        self.read_to_end(timeout)

    def _ensure_topic(self, timeout: float) -> list[int]:
        admin = self.admin = AdminClient(self._admin_conf)
        name = self.spec.name
        meta = self._describe(admin, timeout)
        if meta is None or meta.error is not None:
            new = NewTopic(name, num_partitions=self.spec.partitions,
                           replication_factor=self.spec.replication_factor,
                           config={"cleanup.policy": "compact"})
            try:
                admin.create_topics([new], operation_timeout=timeout)[name].result(timeout)
                log.info("Created topic %s for %s", name, self.spec.purpose)
            except KafkaException as e:
                if e.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                    raise ConnectException(f"Unable to create topic '{name}': "
                                           f"{e.args[0].str()}") from None
        self._check_compacted(admin, timeout)
        deadline = time.monotonic() + timeout
        while True:
            meta = self._describe(admin, timeout)
            if meta is not None and meta.error is None and meta.partitions:
                return sorted(meta.partitions)
            if time.monotonic() > deadline:
                raise ConnectException("Could not look up partition metadata for offset "
                                       "backing store topic in allotted period. This could "
                                       "indicate a connectivity issue, unavailable topic "
                                       "partitions, or if this is your first use of the topic "
                                       "it may have taken too long to create.")
            time.sleep(POLL_S)

    def _describe(self, admin: AdminClient, timeout: float):
        # Every topic's metadata: asking for this one alone would have the broker create it
        # (librdkafka's admin and producer allow auto-creation), not compacted.
        return admin.list_topics(timeout=timeout).topics.get(self.spec.name)

    def _check_compacted(self, admin: AdminClient, timeout: float) -> None:
        resource = ConfigResource(ConfigResource.Type.TOPIC, self.spec.name)
        entries = admin.describe_configs([resource])[resource].result(timeout)
        policy = entries["cleanup.policy"].value if "cleanup.policy" in entries else "delete"
        policies = {p.strip() for p in (policy or "").split(",") if p.strip()}
        if policies != {"compact"}:
            s = self.spec
            raise ConfigException(
                f"Topic '{s.name}' supplied via the '{s.setting}' property is required to have "
                f"'cleanup.policy=compact' to guarantee consistency and durability of "
                f"{s.purpose}, but found the topic currently has 'cleanup.policy="
                f"{','.join(sorted(policies))}'. Continuing would likely result in eventually "
                f"losing {s.purpose} and problems restarting this Connect cluster in the "
                f"future. Change the '{s.setting}' property in the Connect worker "
                f"configurations to use a topic with 'cleanup.policy=compact'.")

    def _read(self) -> None:
        consumer = self.consumer
        tps = [TopicPartition(self.spec.name, p) for p in self.partitions]
        while not self._stopping.is_set():
            try:
                messages = consumer.consume(500, POLL_S)
                for m in messages:
                    if m.error():
                        if m.error().code() != KafkaError._PARTITION_EOF:
                            log.warning("reading %s: %s", self.spec.name, m.error().str())
                        continue
                    self.on_record(m.key(), m.value(), m.partition(), m.offset())
                    with self._moved:
                        self._positions[m.partition()] = m.offset() + 1
                # Past control records and compacted gaps too, where no record came.
                moved = {tp.partition: tp.offset for tp in consumer.position(tps)
                         if tp.offset >= 0}
                with self._moved:
                    for p, offset in moved.items():
                        self._positions[p] = max(self._positions[p], offset)
                    self._moved.notify_all()
            except Exception as e:  # noqa: BLE001 - reported to read_to_end's callers
                log.error("the reader of %s stopped: %r", self.spec.name, e)
                with self._moved:
                    self._failure = e
                    self._moved.notify_all()
                return

    def end_offsets(self, timeout: float) -> dict[int, int]:
        """Each partition's end (the last stable offset: a transaction's records count once
        committed), from the admin client as Kafka's KafkaBasedLog asks its admin."""
        if self.admin is None:
            raise ConnectException(f"{self.spec.name}: the log is stopped")
        wanted = {TopicPartition(self.spec.name, p): OffsetSpec.latest() for p in self.partitions}
        deadline = time.monotonic() + timeout
        while True:  # retriable errors retried, as Kafka's (a topic new to its leader)
            futures = self.admin.list_offsets(
                wanted, isolation_level=IsolationLevel.READ_COMMITTED, request_timeout=timeout)
            try:
                return {tp.partition: f.result(timeout).offset for tp, f in futures.items()}
            except KafkaException as e:
                error = e.args[0] if e.args else None
                retriable = error is not None and (error.retriable() or error.code() in (
                    KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError.LEADER_NOT_AVAILABLE,
                    KafkaError.NOT_LEADER_FOR_PARTITION))
                if not retriable or time.monotonic() > deadline:
                    raise
            time.sleep(POLL_S)

    def read_to_end(self, timeout: float = CREATE_TIMEOUT_S) -> None:
        """Wait until every record written before this call has been handed to
        ``on_record``; TimeoutError when that takes longer than ``timeout`` seconds. A
        stopped log reads no more: what it read is what it has."""
        if self._stopping.is_set():
            return
        deadline = time.monotonic() + timeout
        ends = self.end_offsets(timeout)
        with self._moved:
            while True:
                if self._failure is not None:
                    raise ConnectException(f"reading {self.spec.name}: {self._failure!r}")
                if all(self._positions[p] >= end for p, end in ends.items()):
                    return
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"Timed out reading {self.spec.name} to its end")
                self._moved.wait(min(left, POLL_S * 5))

    def send(self, key: bytes | None, value: bytes | None, partition: int | None = None,
             on_delivery: Callable[[Exception | None], None] | None = None) -> None:
        def delivered(err, _msg):
            if on_delivery is not None:
                on_delivery(None if err is None else ConnectException(err.str()))
            elif err is not None:
                log.error("writing to %s failed: %s", self.spec.name, err.str())

        kwargs = {} if partition is None else {"partition": partition}
        producer = self._producer()
        producer.produce(self.spec.name, value=value, key=key, on_delivery=delivered, **kwargs)
        producer.poll(0)

    def flush(self, timeout: float = CREATE_TIMEOUT_S) -> None:
        if self._producer().flush(timeout):
            raise TimeoutError(f"Timed out writing to {self.spec.name}")

    def _producer(self) -> Producer:
        if self.producer is None:
            raise ConnectException(f"{self.spec.name}: the log is stopped")
        return self.producer

    def stop(self) -> None:
        """Stop reading, write what is pending and let go of the clients (their threads end
        with them, not when the garbage collector finds the log)."""
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self.producer is not None:
            self.producer.flush(5)
        if self.consumer is not None:
            self.consumer.close()
        self.producer = self.consumer = self.admin = None
