"""Producing a request's records: every record handed to the shared producer at once, one
wait for all their delivery reports."""
from __future__ import annotations

import asyncio
import time

from confluent_kafka import KafkaException

from josefk.rest.kafka import Deliveries, Kafka

QUEUE_FULL_WAIT = 0.005


async def produce(kafka: Kafka, topic: str, records: list) -> list:
    """``records``: (partition or None, key, value, headers or None, timestamp ms or None).
    Returns, per record, (error or None, partition, offset, timestamp ms)."""
    loop = asyncio.get_running_loop()
    deliveries = Deliveries(len(records), loop)
    produce_one = kafka.producer.produce
    deadline = time.monotonic() + kafka.timeout
    for i, (partition, key, value, headers, timestamp) in enumerate(records):
        kw = {"on_delivery": deliveries.callback(i)}
        if partition is not None:
            kw["partition"] = partition
        if headers:
            kw["headers"] = headers
        if timestamp is not None:
            kw["timestamp"] = timestamp
        while True:
            try:
                produce_one(topic, value, key, **kw)
                break
            except BufferError as e:  # the producer's queue is full: let it drain
                if time.monotonic() > deadline:
                    deliveries.fail(i, e)
                    break
                await asyncio.sleep(QUEUE_FULL_WAIT)
            except KafkaException as e:
                deliveries.fail(i, e.args[0] if e.args else e)
                break
    await deliveries.done
    return deliveries.results


def error_fields(err) -> tuple[int, str]:
    """Confluent's per-record error: code 2 for a retriable Kafka error, 1 otherwise."""
    retriable = getattr(err, "retriable", lambda: False)()
    return (2 if retriable else 1), str(err.str() if hasattr(err, "str") else err)
