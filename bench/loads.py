"""What the benchmarks' producers share: ``send`` one record through a confluent-kafka
Producer, waiting for room in its queue when it is full (BufferError), and ``fill`` a topic
with ``n`` records, every one acknowledged."""
from __future__ import annotations

from confluent_kafka import Producer


def send(producer: Producer, topic: str, value, partition: int = -1, wait: float = 0.01,
         **more) -> None:
    """``producer.produce``, serving delivery reports (``poll(wait)``) while the queue is
    full."""
    while True:
        try:
            producer.produce(topic, value, partition=partition, **more)
            return
        except BufferError:
            producer.poll(wait)


def fill(producer: Producer, topic: str, n: int, value, partitions: int = 0,
         timeout: float = 120.0) -> None:
    """``n`` records of ``value`` to ``topic`` (round robin over ``partitions``, or as the
    producer places them), flushed; RuntimeError if any is not acknowledged."""
    for i in range(n):
        send(producer, topic, value, i % partitions if partitions else -1)
        if i % 1000 == 0:
            producer.poll(0)
    left = producer.flush(timeout)
    if left:
        raise RuntimeError(f"{left} of {n} records to {topic} not acknowledged")
