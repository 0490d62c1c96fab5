"""A sink task's loop (Kafka's WorkerSinkTask): a confluent-kafka Consumer in the group
``connect-<connector>`` (auto commit off) reads ``topics`` or ``topics.regex``; each message
goes through the converters (key, value, headers) and the transformations into a SinkRecord
(KIP-793's original topic, partition and offset kept), and the batch to ``put``. Every
``offset.flush.interval.ms`` (or when the task asks) ``pre_commit`` is given the offsets
consumed so far, flushes, and the offsets it returns are committed: a sink's offsets are
committed only once its data is durable. A rebalance commits then ``close``s the partitions
taken away and ``open``s those given."""
from __future__ import annotations

import logging
import time

from confluent_kafka import Consumer, KafkaError, TopicPartition as KafkaTopicPartition

from josefk.connect.api.connector import SinkTask, TopicPartition
from josefk.connect.api.errors import ConnectException, RetriableException
from josefk.connect.api.records import Headers, SinkRecord
from josefk.connect.converters.simple import inline_reader
from josefk.connect.runtime.errors import ProcessingContext, Stage
from josefk.connect.runtime.worker_task import WorkerTask

log = logging.getLogger("josefk.connect.sink")

_TIMESTAMP_TYPES = {1: "CreateTime", 2: "LogAppendTime"}
MAX_POLL_RECORDS = 500  # the Java consumer's max.poll.records default: a put's batch at most


def consumer_defaults(connector: str, client_id: str) -> dict:
    """Connect's sink consumer settings (Worker.baseConsumerConfigs). librdkafka stops
    fetching for ``fetch.queue.backoff.ms`` (1 s) whenever its prefetch queue is full, where
    the Java consumer fetches again as soon as its records are taken: 10 ms is near that."""
    return {"group.id": f"connect-{connector}", "enable.auto.commit": False,
            "auto.offset.reset": "earliest", "client.id": client_id,
            "fetch.queue.backoff.ms": 10}


def subscription(config) -> list[str]:
    """``topics``, or ``topics.regex`` as librdkafka's regex subscription (``^...``), made
    to match whole topic names as Java's ``Pattern.matcher().matches()`` does."""
    if config["topics.regex"]:
        return [f"^({config['topics.regex']})$"]
    return [t for t in config["topics"] if t]


def poll_records(consumer, max_records: int, timeout: float) -> list:
    """The Java consumer's poll: wait up to ``timeout`` for a first message, then take what
    else is already fetched, up to ``max_records`` (librdkafka's ``consume`` would wait for
    ``max_records`` until the timeout: a slow topic's records would sit in its queue)."""
    first = consumer.poll(timeout)
    if first is None:
        return []
    return [first, *consumer.consume(max_records - 1, 0)] if max_records > 1 else [first]


class SinkContext:
    """The task's SinkTaskContext."""

    def __init__(self, worker_task: "WorkerSinkTask"):
        self._w = worker_task

    def configs(self) -> dict[str, str]:
        return self._w.task_props

    def offset(self, offsets: dict[TopicPartition, int]) -> None:
        self._w.rewinds.update(offsets)

    def timeout(self, timeout_ms: int) -> None:
        self._w.retry_timeout = timeout_ms / 1000

    def assignment(self) -> set[TopicPartition]:
        return set(self._w.assignment)

    def pause(self, *partitions: TopicPartition) -> None:
        self._w.paused_by_task.update(partitions)
        self._w.apply_pauses()

    def resume(self, *partitions: TopicPartition) -> None:
        self._w.paused_by_task.difference_update(partitions)
        self._w.consumer.resume([KafkaTopicPartition(t, p) for t, p in partitions
                                 if TopicPartition(t, p) in self._w.assignment])

    def request_commit(self) -> None:
        self._w.commit_requested = True

    def errant_record_reporter(self):
        return self._w.errant_reporter


class ErrantRecordReporter:
    """KIP-610: a task's own failures with a record, handled as the error settings say
    (reported, then skipped or the task failed)."""

    def __init__(self, worker_task: "WorkerSinkTask"):
        self._w = worker_task

    def report(self, record: SinkRecord, error: Exception) -> None:
        message = self._w.messages.get((record.original_topic, record.original_kafka_partition,
                                        record.original_kafka_offset))
        self._w.operator.execute_failed(ProcessingContext(consumed=message), Stage.TASK_PUT,
                                        type(self._w.task), error)


class WorkerSinkTask(WorkerTask):
    kind = "sink"

    def __init__(self, id, task: SinkTask, task_props, listener, target, pipeline, operator,
                 stopping, *, consumer_settings: dict, topics: list[str], flush_interval_ms: int,
                 metrics, dlq=None, errant_reporting: bool = False,
                 max_poll_records: int = MAX_POLL_RECORDS):
        super().__init__(id, task, task_props, listener, target, pipeline, operator, stopping)
        self.consumer_settings, self.topics = consumer_settings, topics
        self.flush_interval = flush_interval_ms / 1000
        self.metrics, self.dlq = metrics, dlq
        self.max_poll_records = max_poll_records
        self.consumer: Consumer | None = None
        self.closing = False  # the consumer's close() serves its last callbacks
        self.assignment: set[TopicPartition] = set()
        self.current: dict[TopicPartition, int] = {}     # next offsets, after put
        self.committed: dict[TopicPartition, int] = {}
        self.rewinds: dict[TopicPartition, int] = {}
        self.paused_by_task: set[TopicPartition] = set()
        self.paused_for_retry = False
        self.retry_timeout = 0.0
        self.batch: list[SinkRecord] = []
        self.batch_offsets: dict[TopicPartition, int] = {}   # the batch's next offsets
        self.messages: dict = {}    # (topic, partition, offset) -> message, this batch's
        self.commit_requested = False
        self.next_commit = time.monotonic() + self.flush_interval
        self.topics_used: set[str] = set()
        # KIP-610: a reporter when there is somewhere to report to (the DLQ or the log)
        self.errant_reporter = ErrantRecordReporter(self) if errant_reporting else None

    # ---- lifecycle -------------------------------------------------------------------------
    def initialize_task(self) -> None:
        if not self.topics:
            raise ConnectException("Sink tasks require a list of topics or a topics.regex.")
        self.consumer = Consumer(self.consumer_settings, logger=log)
        self.consumer.subscribe(self.topics, on_assign=self._on_assign,
                                on_revoke=self._on_revoke, on_lost=self._on_lost)
        self.task.initialize(SinkContext(self))
        self.task.start(self.task_props)

    def iteration(self) -> None:
        if self.commit_requested or time.monotonic() >= self.next_commit:
            self.commit_offsets()
        self._apply_rewinds()
        if not self.batch:
            self._poll(1.0)
        if self.batch:
            self._deliver()

    def paused_iteration(self) -> bool:
        if self.commit_requested or time.monotonic() >= self.next_commit:
            self.commit_offsets()
        self._poll(0.5)  # keeps the group membership; every partition is paused
        return True

    def on_pause(self) -> None:
        self.consumer.pause([KafkaTopicPartition(t, p) for t, p in self.assignment])

    def on_resume(self) -> None:
        self.consumer.resume([KafkaTopicPartition(t, p) for t, p in self.assignment
                              if (t, p) not in self.paused_by_task])

    def close(self, started: bool) -> None:
        if self.consumer is None:
            return
        try:
            if started and not self.failed:
                self.commit_offsets()
                if self.assignment:
                    self._close_partitions(list(self.assignment))
        finally:
            self.closing = True
            self.consumer.close()

    # ---- the loop --------------------------------------------------------------------------
    def _poll(self, timeout: float) -> None:
        messages = poll_records(self.consumer, self.max_poll_records, timeout)
        if not messages:
            return
        records, offsets = [], {}
        self.messages = {}
        p = self.pipeline
        key_to, value_to = p.key_converter.to_connect_data, p.value_converter.to_connect_data
        # Kafka's ByteArray and String converters read inline (no call, no SchemaAndValue)
        key_read, value_read = inline_reader(p.key_converter), inline_reader(p.value_converter)
        key_schema, key_encoding = key_read or (None, None)
        value_schema, value_encoding = value_read or (None, None)
        staged = bool(p.chain.stages)
        reporting = self.errant_reporter is not None
        used = self.topics_used
        new, types = object.__new__, _TIMESTAMP_TYPES
        run_topic = run_partition = last_offset = None  # the messages of one partition in a row
        for m in messages:
            error = m.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    continue
                if error.fatal():
                    raise ConnectException(f"Consumer error: {error.str()}")
                # librdkafka's other errors are events it recovers from (a broker down, a
                # topic not there yet), as the Java consumer retries them
                log.warning("%s consumer error: %s", self, error.str())
                continue
            topic, partition, offset = m.topic(), m.partition(), m.offset()
            if partition != run_partition or topic != run_topic:
                if run_topic is not None:
                    offsets[run_topic, run_partition] = last_offset + 1
                run_topic, run_partition = topic, partition
                if topic not in used:
                    used.add(topic)
                    self.listener.on_topic_used(self.id, topic)
            last_offset = offset
            if staged:
                record = self._record(m)
            else:
                try:
                    key = m.key()
                    if key_read is None:
                        key_schema, key = key_to(topic, key)
                    elif key_encoding is not None and key is not None:
                        key = key.decode(key_encoding, "replace")
                    value = m.value()
                    if value_read is None:
                        value_schema, value = value_to(topic, value)
                    elif value_encoding is not None and value is not None:
                        value = value.decode(value_encoding, "replace")
                    raw = m.headers()
                    ts_type, ts = m.timestamp()
                    # SinkRecord(...) without its __init__: a third of a record's cost
                    record = new(SinkRecord)
                    record.topic = record.original_topic = topic
                    record.kafka_partition = record.original_kafka_partition = partition
                    record.kafka_offset = record.original_kafka_offset = offset
                    record.key_schema, record.key = key_schema, key
                    record.value_schema, record.value = value_schema, value
                    if ts_type in types:
                        record.timestamp, record.timestamp_type = ts, types[ts_type]
                    else:
                        record.timestamp, record.timestamp_type = None, "NoTimestampType"
                    record._headers = None if raw is None else self._headers(topic, raw)
                except Exception:  # again, each stage under the error operator
                    record = self._record(m)
            if record is not None:
                records.append(record)
                if reporting:
                    self.messages[(topic, partition, offset)] = m
        if run_topic is not None:
            offsets[run_topic, run_partition] = last_offset + 1
        self.metrics.read.inc(len(messages))
        self.batch = records
        self.batch_offsets = {TopicPartition(*tp): o for tp, o in offsets.items()}
        if not records:  # every message dropped or skipped
            self.current.update(self.batch_offsets)

    def _record(self, m) -> SinkRecord | None:
        """The message as a SinkRecord after conversion and transformations; None when it
        was dropped or failed (the failure tolerated)."""
        p, op = self.pipeline, self.operator
        context = ProcessingContext(consumed=m)
        topic = m.topic()
        key = op.execute(context, Stage.KEY_CONVERTER, type(p.key_converter),
                         p.key_converter.to_connect_data, topic, m.key())
        value = op.execute(context, Stage.VALUE_CONVERTER, type(p.value_converter),
                           p.value_converter.to_connect_data, topic, m.value())
        raw = m.headers()
        headers = None if raw is None else op.execute(
            context, Stage.HEADER_CONVERTER, type(p.header_converter), self._headers, topic, raw)
        if context.failed:
            return None
        ts_type, ts = m.timestamp()
        record = SinkRecord(topic, m.partition(), key.schema, key.value, value.schema,
                            value.value, m.offset(),
                            ts if ts_type in _TIMESTAMP_TYPES else None,
                            _TIMESTAMP_TYPES.get(ts_type, "NoTimestampType"), headers)
        return p.transform(record, op, context)

    def _headers(self, topic: str, raw) -> Headers:
        headers = Headers()
        convert = self.pipeline.header_converter.to_connect_header
        for key, value in raw:
            converted = convert(topic, key, value)
            headers.add(key, converted.value, converted.schema)
        return headers

    def _deliver(self) -> None:
        if self.retry_timeout:
            if self.stopping.wait(self.retry_timeout):
                return
            self.retry_timeout = 0.0
        try:
            self.task.put(list(self.batch))
        except RetriableException as e:
            log.error("%s RetriableException from SinkTask: %s", self, e)
            self._pause_for_retry()
            return
        except Exception as e:
            raise ConnectException("Exiting WorkerSinkTask due to unrecoverable exception.") \
                from e
        self.metrics.send.inc(len(self.batch))
        self.current.update(self.batch_offsets)
        self.batch, self.messages, self.batch_offsets = [], {}, {}
        if self.paused_for_retry:
            self.paused_for_retry = False
            if self.target.value == "STARTED":
                self.on_resume()

    def _pause_for_retry(self) -> None:
        """The same batch is given to ``put`` again; the consumer keeps its membership with
        every partition paused meanwhile."""
        self.paused_for_retry = True
        self.on_pause()
        if not self.retry_timeout:  # put again soon; meanwhile the consumer stays alive
            self.consumer.poll(0.1)

    def apply_pauses(self) -> None:
        self.consumer.pause([KafkaTopicPartition(t, p) for t, p in self.paused_by_task
                             if (t, p) in self.assignment])

    def _apply_rewinds(self) -> None:
        if not self.rewinds:
            return
        for tp, offset in list(self.rewinds.items()):
            if tp in self.assignment:
                self.consumer.seek(KafkaTopicPartition(tp.topic, tp.partition, offset))
                self.current[tp] = offset
                del self.rewinds[tp]

    # ---- commits and rebalances -----------------------------------------------------------
    def commit_offsets(self, partitions: list[TopicPartition] | None = None) -> None:
        """``pre_commit`` with the offsets consumed (and put) so far, then commit what it
        returns (of assigned partitions, and only what moved)."""
        self.commit_requested = False
        self.next_commit = time.monotonic() + self.flush_interval
        current = {tp: o for tp, o in self.current.items()
                   if partitions is None or tp in partitions}
        started = time.monotonic()
        try:
            wanted = self.task.pre_commit(dict(current))
        except Exception as e:
            log.error("%s Offset commit failed, rewinding to last committed offsets", self,
                      exc_info=e)
            for tp, offset in self.committed.items():
                self.rewinds[tp] = offset
            return
        if self.dlq is not None:
            self.dlq.flush(30)
        to_commit = {tp: o for tp, o in (wanted or {}).items()
                     if tp in self.assignment and self.committed.get(tp) != o}
        if not to_commit:
            return
        self.consumer.commit(offsets=[KafkaTopicPartition(t, p, o)
                                      for (t, p), o in to_commit.items()],
                             asynchronous=False)
        self.committed.update(to_commit)
        self.metrics.committed((time.monotonic() - started) * 1000)

    def _on_assign(self, consumer, partitions) -> None:
        if self.closing:  # an assignment the group answered while the task went away
            return
        added = [TopicPartition(p.topic, p.partition) for p in partitions]
        self.assignment.update(added)
        committed = consumer.committed(partitions, timeout=30)
        for p in committed:
            if p.offset >= 0:
                self.committed[TopicPartition(p.topic, p.partition)] = p.offset
        self.task.open(added)
        if self.target.value == "PAUSED" or self.paused_for_retry:
            consumer.pause(partitions)
        self.apply_pauses()

    def _on_revoke(self, consumer, partitions) -> None:
        revoked = [tp for tp in (TopicPartition(p.topic, p.partition) for p in partitions)
                   if tp in self.assignment]  # not those closed already on the way out
        if not revoked:
            return
        if not self.failed:
            self.commit_offsets(revoked)
        self._close_partitions(revoked)

    def _on_lost(self, consumer, partitions) -> None:
        self._close_partitions([tp for tp in (TopicPartition(p.topic, p.partition)
                                              for p in partitions) if tp in self.assignment])

    def _close_partitions(self, partitions: list[TopicPartition]) -> None:
        try:
            self.task.close(partitions)
        finally:
            for tp in partitions:
                self.assignment.discard(tp)
                self.current.pop(tp, None)
                self.committed.pop(tp, None)
                self.batch_offsets.pop(tp, None)
            self.batch = [r for r in self.batch if (r.original_topic,
                                                    r.original_kafka_partition) in self.assignment]
