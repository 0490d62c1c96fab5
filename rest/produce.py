"""Producing a request's records through the proxy's one producer: every record handed to it
at once, one wait for all their delivery reports.

The reports are served on the event loop (``poll(0)``) every millisecond while any request
waits for them, so a callback needs no lock and no thread hands requests back to the loop. A
thread polling the producer had to take the GIL from the busy event loop for every single
report; serving them on every loop turn instead (busy polling) answered sooner on an idle
machine but took the CPU the broker and clients need on a loaded one."""
from __future__ import annotations

import asyncio
import contextlib
import time

from confluent_kafka import KafkaException, Producer

QUEUE_FULL_WAIT = 0.005
REPORTS_EVERY = 0.001  # how often delivery reports are served while requests wait (s)
ANY_PARTITION = -1  # librdkafka's RD_KAFKA_PARTITION_UA: the partitioner decides


class Reports:
    """Serves a producer's delivery reports on the event loop while requests wait for them."""

    def __init__(self, producer: Producer):
        self.producer = producer
        self.waiting = 0
        self.task: asyncio.Task | None = None

    @contextlib.contextmanager
    def awaited(self):
        """Around a request's producing and its wait for the reports (also while the
        producer's queue is full: serving reports is what empties it)."""
        self.waiting += 1
        if self.task is None or self.task.done():
            self.task = asyncio.ensure_future(self._serve())
        try:
            yield
        finally:
            self.waiting -= 1

    async def _serve(self):
        while self.waiting:
            self.producer.poll(0)
            await asyncio.sleep(REPORTS_EVERY)


class Deliveries:
    """The delivery reports of one request's records: ``callback(i)`` for record ``i``;
    ``await done`` once every report is in."""

    def __init__(self, count: int):
        self.results: list = [None] * count
        self.left = count
        self.done = asyncio.get_running_loop().create_future()
        if count == 0:
            self.done.set_result(None)

    def callback(self, i: int):
        def delivered(err, msg):
            self.results[i] = (err, msg.partition(), msg.offset(), msg.timestamp()[1])
            self._one_less()

        return delivered

    def fail(self, i: int, err):
        """Record ``i`` never reached the producer."""
        self.results[i] = (err, None, None, None)
        self._one_less()

    def _one_less(self):
        self.left -= 1
        if self.left == 0 and not self.done.done():
            self.done.set_result(None)


async def produce(producer: Producer, reports: Reports, topic: str, records: list,
                  timeout: float) -> list:
    """``records``: (partition or None, key, value, headers or None, timestamp ms or None).
    Returns, per record, (error or None, partition, offset, timestamp ms)."""
    deliveries = Deliveries(len(records))
    produce_one = producer.produce
    deadline = time.monotonic() + timeout
    with reports.awaited():
        for i, (partition, key, value, headers, timestamp) in enumerate(records):
            # positional: topic, value, key, partition, callback, on_delivery, timestamp, headers
            args = (topic, value, key, ANY_PARTITION if partition is None else partition,
                    deliveries.callback(i), None, timestamp or 0, headers)
            while True:
                try:
                    produce_one(*args)
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
