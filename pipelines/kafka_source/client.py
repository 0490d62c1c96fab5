"""Everything the source asks of Kafka, through confluent-kafka (no protocol code here).

Reads come back as Arrow record batches in Spark's Kafka schema, built one column at a time
from each batch of messages the consumer hands over.
"""
from __future__ import annotations

import time
from collections import deque
from operator import length_hint

import pyarrow as pa
import pyarrow.compute as pc
from confluent_kafka import (Consumer, KafkaError, KafkaException, Message, Producer,
                             TopicPartition)

from josefk.pipelines.kafka_source.options import group_id

# Arrow types as Spark expects them back from a Python source (timestamps in µs, UTC).
HEADERS_TYPE = pa.list_(pa.field("element", pa.struct([("key", pa.string()),
                                                       ("value", pa.binary())])))
ARROW_FIELDS = [("key", pa.binary()), ("value", pa.binary()), ("topic", pa.string()),
                ("partition", pa.int32()), ("offset", pa.int64()),
                ("timestamp", pa.timestamp("us", tz="UTC")), ("timestampType", pa.int32())]
STAMP_TYPE = pa.struct([("type", pa.int32()), ("ms", pa.int64())])
# Records per consume() call and per Arrow batch: small enough that the messages are still in the
# CPU cache when their columns are built (10,000 cost about 15% more CPU per record here).
CONSUME_BATCH = 2_000
_POSITIONS = pa.array(range(CONSUME_BATCH), pa.int64())


class DataLossError(RuntimeError):
    """Offsets asked for are gone (deleted, or the topic/partition no longer exists)."""


def consumer(conf: dict) -> Consumer:
    """A consumer that only ever ``assign()``s: no group membership, no commits."""
    return Consumer({
        "group.id": group_id({}),
        # librdkafka pauses a whole second when its queue fills; Spark reads as fast as it can.
        "fetch.queue.backoff.ms": 10,
        # The Java client's default, so Spark's: aborted records are read unless asked otherwise.
        "isolation.level": "read_uncommitted",
        **conf,
        "enable.auto.commit": False,
        "enable.partition.eof": True,
        "auto.offset.reset": "error",
    })


def partitions_by_topic(conf: dict, timeout: float = 30.0) -> dict[str, list[int]]:
    """Every existing topic and its partitions (a metadata request for all topics, so nothing
    is auto-created)."""
    c = consumer(conf)
    try:
        md = c.list_topics(timeout=timeout)
    finally:
        c.close()
    return {name: sorted(t.partitions) for name, t in md.topics.items() if t.error is None}


def watermarks(conf: dict, tps, timeout: float = 30.0) -> dict[tuple[str, int], tuple[int, int]]:
    """(log start offset, high watermark) of each (topic, partition)."""
    c = consumer(conf)
    try:
        return {tp: c.get_watermark_offsets(TopicPartition(*tp), timeout=timeout, cached=False)
                for tp in tps}
    finally:
        c.close()


def offsets_for_times(conf: dict, times: dict, timeout: float = 30.0) -> dict:
    """The first offset whose timestamp is at or after each given time; -1 where none is."""
    if not times:
        return {}
    c = consumer(conf)
    try:
        found = c.offsets_for_times([TopicPartition(t, p, ts) for (t, p), ts in times.items()],
                                    timeout=timeout)
    finally:
        c.close()
    for tp in found:
        if tp.error is not None:
            raise KafkaException(tp.error)
    return {(tp.topic, tp.partition): tp.offset for tp in found}


def read_range(conf: dict, topic: str, partition: int, start: int, end: int,
               with_headers: bool, fail_on_data_loss: bool, poll_timeout: float):
    """Yield Arrow batches of the records at offsets [start, end) of one partition."""
    c = consumer(conf)
    try:
        c.assign([TopicPartition(topic, partition, start)])
        position, last_progress = start, time.monotonic()
        while position < end:
            # Ask for no more than the range holds, so the last call returns once it is read.
            records = c.consume(min(CONSUME_BATCH, end - position), timeout=1.0)
            # Events (end of partition, errors) are rare: look for them in one C-level pass.
            events = [m for m in records if m.error()] if any(map(Message.error, records)) else ()
            if events:
                records = [m for m in records if not m.error()]
            for m in events:
                err = m.error()
                if err.code() == KafkaError._PARTITION_EOF:
                    # The log ends before the range does (data lost), or at or after its end
                    # with no record left in it (control records, compaction): done.
                    position = (_lost(fail_on_data_loss, topic, partition, m.offset(), end)
                                if m.offset() < end else end)
                elif err.code() in (KafkaError.OFFSET_OUT_OF_RANGE, KafkaError._AUTO_OFFSET_RESET):
                    position = _lost(fail_on_data_loss, topic, partition, position, end)
                else:
                    raise KafkaException(err)
            if records and records[-1].offset() >= end:
                position = end  # the rest of the range holds no records (control records...)
                while records and records[-1].offset() >= end:
                    records.pop()
            if records:
                position = max(position, records[-1].offset() + 1)
                last_progress = time.monotonic()
                yield to_arrow(records, topic, partition, with_headers)
            elif time.monotonic() - last_progress > poll_timeout and position < end:
                raise TimeoutError(f"Cannot fetch records in [{position}, {end}) of "
                                   f"{topic}-{partition} within {poll_timeout:.0f} s")
    finally:
        c.close()


def _lost(fail: bool, topic, partition, offset, end) -> int:
    if fail:
        raise DataLossError(
            f"Offsets [{offset}, {end}) of {topic}-{partition} are no longer available (data "
            "deleted, or the topic recreated). Set failOnDataLoss to false to skip them.")
    return end


def to_arrow(records, topic: str, partition: int, with_headers: bool) -> pa.RecordBatch:
    """The records (all of ``topic``-``partition``) as one batch, a column at a time: one C-level
    pass over the messages per column, constants repeated by Arrow."""
    count = len(records)
    # (type, ms) pairs; librdkafka numbers the types 1 and 2, Spark and the Java client 0 and 1
    # (-1: none).
    kind, millis = pa.array(list(map(Message.timestamp, records)), STAMP_TYPE).flatten()
    columns = [
        pa.array(list(map(Message.key, records)), pa.binary()),
        pa.array(list(map(Message.value, records)), pa.binary()),
        pa.repeat(pa.scalar(topic, pa.string()), count),
        pa.repeat(pa.scalar(partition, pa.int32()), count),
        _offsets(records),
        # Arrow scalars: a Python number makes pyarrow.compute try an import on every call.
        pc.multiply(millis, pa.scalar(1000, pa.int64())).cast(ARROW_FIELDS[5][1]),
        pc.subtract(kind, pa.scalar(1, pa.int32())),
    ]
    names = [n for n, _ in ARROW_FIELDS]
    if with_headers:
        columns.append(pa.array([[{"key": k, "value": v} for k, v in (m.headers() or ())]
                                 for m in records], HEADERS_TYPE))
        names.append("headers")
    return pa.RecordBatch.from_arrays(columns, names=names)


def _offsets(records) -> pa.Array:
    """The records' offsets: first + 0, 1, 2... when they are contiguous (no compaction or
    control records among them), without asking every message."""
    first, count = records[0].offset(), len(records)
    if records[-1].offset() - first == count - 1 and count <= len(_POSITIONS):
        return pc.add(_POSITIONS.slice(0, count), pa.scalar(first, pa.int64()))
    return pa.array(list(map(Message.offset, records)), pa.int64())


class Writer:
    """Produces Arrow batches of rows (value, and optionally key, topic, partition, headers
    columns) with an idempotent producer by default, as Spark's connector does; raises on the
    first failed delivery. A batch goes to the producer a column at a time: one list per
    argument of ``produce()``, and one C-level call of it per row."""

    def __init__(self, conf: dict, topic: str | None):
        self.conf, self.topic = conf, topic

    def write(self, batches) -> int:
        failures = []
        producer = Producer({"enable.idempotence": True, "linger.ms": 5, **self.conf,
                             # only failed deliveries call back into Python
                             "delivery.report.only.error": True,
                             "on_delivery": lambda err, _msg: failures.append(err)})
        count = 0
        for batch in batches:
            produce_rows(producer, self.arguments(batch))
            count += batch.num_rows
            producer.poll(0)
            if failures:
                break
        producer.flush()
        if failures:
            raise KafkaException(failures[0])
        return count

    def arguments(self, batch: pa.RecordBatch) -> list[list]:
        """``produce()``'s positional arguments for every row: topic, value, key, partition
        (-1, librdkafka's "unassigned", where none is given) and, when some row has headers,
        callback, on_delivery, timestamp (0: now) and headers."""
        n = batch.num_rows
        names = batch.schema.names

        def column(name):
            return batch.column(names.index(name)) if name in names else None

        if self.topic is not None:
            topics = [self.topic] * n
        else:
            topic = column("topic")
            if topic.null_count:
                raise ValueError("null topic present in the data. Use the topic option for "
                                 "setting a default topic.")
            topics = topic.to_pylist()
        key, partition, headers = column("key"), column("partition"), column("headers")
        args = [topics, column("value").to_pylist(),
                [None] * n if key is None else key.to_pylist(),
                [-1] * n if partition is None else
                pc.fill_null(partition, pa.scalar(-1, pa.int32())).to_pylist()]
        if headers is not None and pc.sum(pc.list_value_length(headers)).as_py():
            none = [None] * n
            args += [none, none, [0] * n,
                     [[(h["key"], h["value"]) for h in row] if row else None
                      for row in headers.to_pylist()]]
        return args


def produce_rows(producer, arguments: list[list]) -> None:
    """``producer.produce(*row)`` for each row of ``arguments`` (one list per positional
    argument) in one C-level pass, waiting for room whenever the local queue is full."""
    n = len(arguments[0])
    while True:
        rows = [iter(a) for a in arguments]
        try:
            deque(map(producer.produce, *rows), maxlen=0)
            return
        except BufferError:  # the row that did not fit is the one before what is left
            done = n - length_hint(rows[0]) - 1
            arguments = [a[done:] for a in arguments]
            n -= done
            producer.poll(0.05)


def produce_waiting(producer, topic, **kwargs):
    """``producer.produce``, waiting for room when the local queue is full."""
    while True:
        try:
            producer.produce(topic, **kwargs)
            return
        except BufferError:  # the local queue is full: let deliveries drain it
            producer.poll(0.05)
