"""The clients a real-client scenario can take as a parameter, the way ``targets.py`` makes the
cluster shape one: a scenario every client should pass takes the ``client`` fixture and runs
once with each, through the library's own producer and consumer:

* ``confluent``: confluent-kafka (librdkafka);
* ``kafka-python``: kafka-python (pure Python).

Each adapter says the same things in its library's words: ``produce`` sends records and returns
where each was acknowledged, ``consume`` reads exactly ``n`` records from the beginning of
partitions and fails on more. What only one library can express stays in its own file
(``produce_consume/test_confluent.py`` ...)."""
from __future__ import annotations

import time

from compat_tests.helpers import DeliveryLog, flush_all, producer, read_from_beginning

CLIENTS = ("confluent", "kafka-python")

# A produced record: (partition, key, value); a consumed one: (partition, offset, key, value).
Produced = tuple[int, bytes | None, bytes | None]
Consumed = tuple[int, int, bytes | None, bytes | None]


class Confluent:
    name = "confluent"

    def produce(self, bootstrap: str, topic: str, records: list[Produced],
                idempotent: bool = False) -> list[tuple[int, int]]:
        """(partition, offset) of each record, in the order the acknowledgements came."""
        p = producer(bootstrap, **{"enable.idempotence": idempotent, "acks": "all",
                                   "linger.ms": 5, "batch.num.messages": 200})
        log = DeliveryLog()
        for partition, key, value in records:
            for _ in range(1000):
                try:
                    p.produce(topic, key=key, value=value, partition=partition,
                              on_delivery=log)
                    break
                except BufferError:
                    p.poll(0.1)
            p.poll(0)
        flush_all(p, 30)
        assert log.errors == []
        return [(pt, off) for pt, off, _, _ in log.ok]

    def consume(self, bootstrap: str, topic: str, partitions: int, n: int,
                timeout: float = 40.0) -> list[Consumed]:
        msgs = read_from_beginning(bootstrap, topic, partitions, n, timeout=timeout, quiet=1.0)
        return [(m.partition(), m.offset(), m.key(), m.value()) for m in msgs]


class KafkaPython:
    name = "kafka-python"

    def produce(self, bootstrap: str, topic: str, records: list[Produced],
                idempotent: bool = False) -> list[tuple[int, int]]:
        """(partition, offset) of each record, in produce order."""
        from kafka import KafkaProducer

        p = KafkaProducer(bootstrap_servers=bootstrap, enable_idempotence=idempotent,
                          acks="all", linger_ms=5, request_timeout_ms=15000, max_block_ms=15000,
                          client_id="compat-kafka-python-producer")
        try:
            futures = [p.send(topic, key=key, value=value, partition=partition)
                       for partition, key, value in records]
            p.flush(timeout=30)
            metas = [f.get(timeout=10) for f in futures]
        finally:
            p.close(timeout=5)
        return [(m.partition, m.offset) for m in metas]

    def consume(self, bootstrap: str, topic: str, partitions: int, n: int,
                timeout: float = 40.0) -> list[Consumed]:
        from kafka import TopicPartition

        records = kafka_python_read(bootstrap, [TopicPartition(topic, p)
                                                for p in range(partitions)], n, timeout, 1.0)
        return [(r.partition, r.offset, r.key, r.value) for r in records]


def kafka_python_read(bootstrap: str, tps: list, n: int, timeout: float = 20.0,
                      quiet: float = 0.5) -> list:
    """kafka-python's ConsumerRecords of ``tps`` (explicit assign, seek to the beginning):
    exactly n, nothing more within ``quiet`` seconds."""
    from kafka import KafkaConsumer

    c = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                      auto_offset_reset="none", request_timeout_ms=15000, fetch_max_wait_ms=100,
                      client_id="compat-kafka-python-consumer")
    try:
        c.assign(tps)
        c.seek_to_beginning(*tps)
        records = []
        deadline = time.monotonic() + timeout
        while len(records) < n and time.monotonic() < deadline:
            for recs in c.poll(timeout_ms=200).values():
                records.extend(recs)
        assert len(records) >= n, f"consumed {len(records)}/{n} within {timeout}s"
        end = time.monotonic() + quiet
        while time.monotonic() < end:
            for recs in c.poll(timeout_ms=100).values():
                records.extend(recs)
        assert len(records) == n, f"{len(records) - n} unexpected extra record(s)"
        return records
    finally:
        c.close()


def kafka_python_admin(bootstrap: str):
    """kafka-python's KafkaAdminClient on ``bootstrap``."""
    from kafka import KafkaAdminClient

    return KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=15000,
                            client_id="compat-kafka-python-admin")


ADAPTERS = {"confluent": Confluent, "kafka-python": KafkaPython}
