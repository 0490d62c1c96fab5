"""A source task's loop (Kafka's WorkerSourceTask and, with exactly-once support,
ExactlyOnceWorkerSourceTask): ``poll`` -> transformations -> converters (key, value, headers)
-> a confluent-kafka Producer; ``commit_record`` once Kafka acknowledged a record (or a
transform or the error handling dropped it); every ``offset.flush.interval.ms`` the offsets
of the records that are acknowledged, with every record before them of the same source
partition, go to the OffsetStore, then the task's ``commit``.

With exactly-once support (KIP-618) the task's producer is transactional
(``transactional.id`` ``<group.id>-<connector>-<task>``) and writes the offsets itself to the
offsets topic in the same transaction as the records; ``transaction.boundary`` says when a
transaction commits: after each poll's batch, every interval, or when the connector says
(TransactionContext)."""
from __future__ import annotations

import json
import logging
import random
import re
import time
from collections import deque
from functools import partial

from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from josefk.connect.api.connector import SourceTask
from josefk.connect.api.errors import ConnectException, RetriableException
from josefk.connect.api.records import RecordMetadata, SourceRecord, SourceRecordBatch
from josefk.connect.converters.simple import as_is, inline_encoding
from josefk.connect.runtime.errors import ProcessingContext, Stage
from josefk.connect.runtime.fencing import transactional_id
from josefk.connect.runtime.seams import ConnectorTaskId
from josefk.connect.runtime.worker_task import WorkerTask

log = logging.getLogger("josefk.connect.source")


def producer_defaults(client_id: str) -> dict:
    """Connect's source producer settings (Worker.baseProducerConfigs): every record
    acknowledged by all replicas, retried without end, one request in flight, idempotence off
    (Connect turns it on only for exactly-once tasks), no linger (Java's default), and keyed
    records partitioned by the Java producer's murmur2 hash."""
    return {"acks": "all", "enable.idempotence": False, "max.in.flight": 1, "linger.ms": 0,
            "delivery.timeout.ms": 2147483647, "client.id": client_id,
            "partitioner": "murmur2_random"}


def transactional_settings(group_id: str, id: ConnectorTaskId) -> dict:
    """What an exactly-once source task's producer adds to those (KIP-618): its transactional
    id, idempotence, and deliveries bounded by the transaction's timeout (60 s), as librdkafka
    wants."""
    return {"transactional.id": transactional_id(group_id, id.connector, id.task),
            "enable.idempotence": True, "delivery.timeout.ms": 60000}


class StickyPartitioner:
    """Where the Java producer puts records without key or partition (KIP-794's uniform
    sticky partitioner): one partition of the topic until ``batch.size`` bytes went to it,
    then another one at random. librdkafka's stickiness is by time and ends with linger.ms=0;
    the partition counts come from the producer's metadata, refreshed every five minutes
    (the Java client's metadata.max.age.ms)."""

    BATCH_SIZE = 16384
    MAX_AGE = 300.0

    def __init__(self, producer):
        self.producer = producer
        self.topics: dict[str, list] = {}   # topic -> [partitions, current, bytes, fetched at]

    def choose(self, topic: str, partition: int | None, key, value) -> int:
        """The partition a record goes to: its own, else librdkafka's partitioner (-1) for a
        keyed record (murmur2, as Java's), else the sticky one."""
        if partition is not None:
            return partition
        if key is not None:
            return -1
        return self.partition(topic, len(value or b""))

    def partition(self, topic: str, size: int) -> int:
        """The partition for a keyless record of ``size`` bytes; -1: let the producer
        choose (the topic's partitions are not known)."""
        state = self.topics.get(topic)
        if state is None:
            count = self._count(topic)
            if not count:
                return -1
            state = self.topics[topic] = [count, random.randrange(count), 0, time.monotonic()]
        if state[2] >= self.BATCH_SIZE:
            count = state[0]
            state[1] = (state[1] + random.randrange(1, count)) % count if count > 1 else 0
            state[2] = 0
        state[2] += size
        return state[1]

    def expire(self) -> None:
        """Forget the partition counts older than MAX_AGE (read again on their next record);
        called once per batch of records, not per record."""
        now = time.monotonic()
        for topic in [t for t, state in self.topics.items() if now - state[3] > self.MAX_AGE]:
            del self.topics[topic]

    def _count(self, topic: str) -> int:
        try:
            found = self.producer.list_topics(topic, timeout=10).topics.get(topic)
        except KafkaException:
            return 0
        return len(found.partitions) if found is not None and found.error is None else 0


class OffsetReader:
    """The task's OffsetStorageReader over its ConnectorOffsetStore."""

    def __init__(self, store, connector: str):
        self.store, self.connector = store, connector

    def offset(self, partition: dict) -> dict | None:
        return self.offsets([partition])[0]

    def offsets(self, partitions: list[dict]) -> list[dict | None]:
        return self.store.get(self.connector, list(partitions))


class TransactionContext:
    """``transaction.boundary=connector``: the task asks to commit or abort, after the
    current batch or after a given record."""

    def __init__(self):
        self.commit_requested = self.abort_requested = False
        self.commit_after: list[SourceRecord] = []
        self.abort_after: list[SourceRecord] = []

    def commit_transaction(self, record: SourceRecord | None = None) -> None:
        if record is None:
            self.commit_requested = True
        else:
            self.commit_after.append(record)

    def abort_transaction(self, record: SourceRecord | None = None) -> None:
        if record is None:
            self.abort_requested = True
        else:
            self.abort_after.append(record)

    def after(self, record: SourceRecord) -> str | None:
        """"abort" or "commit" when the connector asked for it after this record."""
        for requests, what in ((self.abort_after, "abort"), (self.commit_after, "commit")):
            for i, asked in enumerate(requests):
                if asked is record:
                    del requests[i]
                    return what
        return None


class SourceContext:
    def __init__(self, props, reader, transactions):
        self._props, self._reader, self._transactions = props, reader, transactions

    def configs(self) -> dict[str, str]:
        return self._props

    def offset_storage_reader(self) -> OffsetReader:
        return self._reader

    def transaction_context(self) -> TransactionContext | None:
        return self._transactions


# How long a transaction's init, commit or abort may block: the transaction's own timeout
# (librdkafka's transaction.timeout.ms default), as the Java producer blocks up to max.block.ms.
TRANSACTION_TIMEOUT = 60.0
_PURGED = (KafkaError._PURGE_QUEUE, KafkaError._PURGE_INFLIGHT)


def _partition_key(partition: dict) -> str:
    return json.dumps(partition, sort_keys=True, separators=(",", ":"))


class SubmittedBatch:
    """The records of one send, sharing one delivery callback (``delivered``): how many went
    to the producer and how many of those Kafka acknowledged, or the error handling let go
    (``on_error(err, msg)`` true). Done once every record sent is accounted for."""

    __slots__ = ("sent", "acked", "on_error")

    def __init__(self, on_error):
        self.sent = self.acked = 0
        self.on_error = on_error

    def delivered(self, err, msg) -> None:
        if err is None or self.on_error(err, msg):
            self.acked += 1

    @property
    def done(self) -> bool:
        return self.acked >= self.sent


class SubmittedRows(SubmittedBatch):
    """A SourceRecordBatch being sent, as one SubmittedBatch: its rows from ``next`` on are
    still to go (the producer's queue was full). With ``on_done`` (the task's
    ``commit_rows``), each row's delivery callback keeps where it was written, and
    ``on_done(rows, written)`` is called once every row is sent and accounted for."""

    __slots__ = ("rows", "next", "written", "on_done")

    def __init__(self, on_error, rows: SourceRecordBatch, on_done=None):
        super().__init__(on_error)
        self.rows, self.next, self.on_done = rows, 0, on_done
        self.written = [-1] * len(rows) if on_done is not None else None

    def row_delivered(self, i: int, err, msg) -> None:
        if err is None:
            self.written[i] = msg.offset()
            self.acked += 1
        elif self.on_error(err, msg):
            self.acked += 1
        self.maybe_done()

    def maybe_done(self) -> None:
        if self.on_done is not None and self.next >= len(self.rows) and self.done:
            on_done, self.on_done = self.on_done, None
            on_done(self.rows, self.written)


class SubmittedRecords:
    """Batches sent and not yet committed, per source partition, in order (Kafka's
    SubmittedRecords, a batch of records where it has one record): the offsets safe to commit
    are the last ones of each partition's prefix of batches that are done."""

    def __init__(self):
        self.pending: dict[str, deque] = {}      # partition key -> deque of (batch, offset)
        self.partitions: dict[str, dict] = {}    # partition key -> a copy of the partition
        self.last: tuple = (None, None, None)    # (partition, a copy of it, its key)

    def key(self, partition: dict) -> str:
        """``partition``'s key; the last one's again while a connector passes the same,
        unchanged dict (as most do for every record of a source partition)."""
        last, copy, key = self.last
        if partition is not last or partition != copy:
            key = _partition_key(partition)
            copy = dict(partition)
            self.last = (partition, copy, key)
            self.partitions.setdefault(key, copy)
        return key

    def submit(self, batch: SubmittedBatch, records: list[SourceRecord]) -> None:
        """``records`` (sent or dropped) belong to ``batch``: the last offset of each of their
        source partitions waits for it."""
        self.submit_offsets(batch, ((r.source_partition, r.source_offset) for r in records))

    def submit_offsets(self, batch: SubmittedBatch, offsets) -> None:
        """``offsets``, (source partition, source offset) pairs in order, wait for
        ``batch``: the last of each source partition."""
        last_offsets, last, key = {}, None, None
        for partition, offset in offsets:
            if partition is not None and offset is not None:
                if partition is not last:  # one dict is one partition within a batch
                    last, key = partition, self.key(partition)
                last_offsets[key] = offset
        for k, offset in last_offsets.items():
            entries = self.pending.get(k)
            if entries is None:
                entries = self.pending[k] = deque()
            entries.append((batch, offset))

    def committable(self) -> list[tuple[dict, dict]]:
        """Pop the done prefix of each partition's batches; the last offset of each."""
        found = []
        for key, entries in self.pending.items():
            last = None
            while entries and entries[0][0].done:
                last = entries.popleft()[1]
            if last is not None:
                found.append((self.partitions[key], last))
        return found


class TopicCreation:
    """KIP-158: topics created as ``topic.creation.<group>.*`` say, before the first record
    to a topic that does not exist: the first group (``topic.creation.groups``' order)
    whose include regexes match and exclude ones do not, else ``default``."""

    def __init__(self, admin: AdminClient, config):
        self.admin, self.known = admin, set()
        groups = [g for g in config["topic.creation.groups"] if g != "default"]
        self.groups = []
        for group in groups + ["default"]:
            prefix = f"topic.creation.{group}."
            include = [re.compile(p) for p in config.get(prefix + "include", [])] \
                if group != "default" else [re.compile(".*")]
            exclude = [re.compile(p) for p in config.get(prefix + "exclude", [])] \
                if group != "default" else []
            props = {k[len(prefix):]: v for k, v in config.props.items()
                     if k.startswith(prefix) and k[len(prefix):] not in
                     ("include", "exclude", "replication.factor", "partitions")}
            self.groups.append((include, exclude, config[prefix + "partitions"],
                                config[prefix + "replication.factor"], props))

    def ensure(self, topic: str) -> None:
        if topic in self.known:
            return
        metadata = self.admin.list_topics(topic=None, timeout=30)
        if topic not in metadata.topics:
            for include, exclude, partitions, replication, props in self.groups:
                if (any(p.fullmatch(topic) for p in include)
                        and not any(p.fullmatch(topic) for p in exclude)):
                    break
            future = self.admin.create_topics(
                [NewTopic(topic, partitions, replication, config=props)])[topic]
            try:
                future.result(30)
                log.info("Created topic %s (%d partitions, replication factor %d)", topic,
                         partitions, replication)
            except KafkaException as e:
                if e.args[0].code() != 36:  # TOPIC_ALREADY_EXISTS: created meanwhile
                    raise ConnectException(f"Unable to create topic {topic}: {e}") from e
        self.known.add(topic)


class WorkerSourceTask(WorkerTask):
    kind = "source"
    stop_from_caller = True

    def __init__(self, id, task: SourceTask, task_props, listener, target, pipeline, operator,
                 stopping, *, producer_settings: dict, offset_store, flush_interval_ms: int,
                 flush_timeout_ms: int, metrics, topic_creation: TopicCreation | None = None,
                 transactional: dict | None = None):
        super().__init__(id, task, task_props, listener, target, pipeline, operator, stopping)
        self.producer_settings = producer_settings
        self.offset_store, self.metrics = offset_store, metrics
        self.flush_interval = flush_interval_ms / 1000
        self.flush_timeout = flush_timeout_ms / 1000
        self.topic_creation = topic_creation
        self.transactional = transactional  # {"boundary": poll/interval/connector} with EOS
        self.transactions = (TransactionContext() if transactional and
                             transactional["boundary"] == "connector" else None)
        self.submitted = SubmittedRecords()
        self.to_send: list[SourceRecord] | None = None
        self.producer: Producer | None = None
        self.producer_error: str | None = None
        self.next_commit = time.monotonic() + self.flush_interval
        self.topics_used: set[str] = set()
        self.in_transaction = False
        self.txn_offsets: dict[str, tuple[dict, dict]] = {}
        # SourceTask's commit_record does nothing: no RecordMetadata per record for it
        self.commits_records = type(task).commit_record is not SourceTask.commit_record
        self.commits_rows = type(task).commit_rows is not SourceTask.commit_rows

    # ---- lifecycle -------------------------------------------------------------------------
    def initialize_task(self) -> None:
        self.producer = Producer(self.producer_settings)
        self.sticky = StickyPartitioner(self.producer)
        if self.transactional:
            self.producer.init_transactions(TRANSACTION_TIMEOUT)
        self.offset_store.start()
        reader = OffsetReader(self.offset_store, self.id.connector)
        self.task.initialize(SourceContext(self.task_props, reader, self.transactions))
        self.task.start(self.task_props)

    def iteration(self) -> None:
        if self.producer_error:
            raise ConnectException(self.producer_error)
        if self.to_send is None:
            self.to_send = self._poll()
        if self.to_send:
            self._send()
        self.producer.poll(0 if self.to_send else 0.001)
        if self.transactional:
            self._maybe_end_transaction()
        elif time.monotonic() >= self.next_commit:
            self.commit_offsets()

    def close(self, started: bool) -> None:
        if self.producer is None:
            return
        try:
            if self.transactional:
                if self.in_transaction and not self.failed:
                    self._commit_transaction()
                elif self.in_transaction:
                    self.producer.abort_transaction(TRANSACTION_TIMEOUT)
            elif started and not self.failed:
                self.producer.flush(self.flush_timeout)
                self.commit_offsets()
        finally:
            self.producer.flush(0)
            self.offset_store.stop()

    # ---- the loop --------------------------------------------------------------------------
    def _poll(self) -> list[SourceRecord] | SubmittedRows | None:
        try:
            records = self.task.poll()
        except RetriableException as e:
            log.warning("%s failed to poll records from SourceTask. Will retry operation.",
                        self, exc_info=e)
            return None
        if not records:
            return None
        self.metrics.poll.inc(len(records))
        if isinstance(records, SourceRecordBatch):
            return SubmittedRows(self._send_failed, records,
                                 self._commit_rows if self.commits_rows else None)
        return records

    def _send(self) -> None:
        if isinstance(self.to_send, SubmittedRows):
            return self._send_rows()
        records, self.to_send = self.to_send, None
        p, chain = self.pipeline, self.pipeline.chain.stages
        key_from = p.key_converter.from_connect_data
        value_from = p.value_converter.from_connect_data
        produce, choose = self.producer.produce, self.sticky.choose
        transactional, creation, used = self.transactional, self.topic_creation, self.topics_used
        self.sticky.expire()
        batch = SubmittedBatch(self._send_failed)
        # one callback for the batch; one per record only for a task's commit_record
        delivered = None if self.commits_records else batch.delivered
        record_delivered = self._delivered_record
        written, full = 0, False
        for i, record in enumerate(records):
            if chain:
                converted = self._process(record)
            else:
                try:
                    # _headers: None for a record without any (no Headers made for it)
                    topic, headers = record.topic, record._headers
                    converted = (record, topic,
                                 key_from(topic, record.key_schema, record.key, headers),
                                 value_from(topic, record.value_schema, record.value, headers),
                                 self._headers(topic, headers) if headers else None)
                except Exception:  # again, each stage under the error operator
                    converted = self._process(record)
            if converted is None:
                self._dropped(record)
                continue
            transformed, topic, key, value, headers = converted
            if creation is not None:
                creation.ensure(topic)
            if transactional:
                self._ensure_transaction()
            partition = choose(topic, transformed.kafka_partition, key, value)
            try:
                # positional (no kwargs dict): the fifth is on_delivery's alias "callback"
                produce(topic, value, key, partition,
                        delivered or partial(record_delivered, batch, record), None,
                        transformed.timestamp or 0, headers)
            except BufferError:
                self.to_send = records[i:]  # the producer's queue is full: again after poll
                records, full = records[:i], True
                break
            written += 1
            if topic not in used:
                used.add(topic)
                self.listener.on_topic_used(self.id, topic)
            if transactional:
                self._track_transaction(record)
        batch.sent = written
        if not transactional:
            self.submitted.submit(batch, records)
        if written:
            self.metrics.write.inc(written)
        if full:
            self.producer.poll(0.1)
        elif transactional and transactional["boundary"] == "poll":
            self._commit_transaction()

    def _send_rows(self) -> None:
        """A SourceRecordBatch's rows from where the last send stopped: straight to the
        producer (the converters called only where they change something), each row made a
        SourceRecord only for a transformation chain or a row a converter failed on."""
        sending, self.to_send = self.to_send, None
        rows = sending.rows
        p = self.pipeline
        per_record = bool(p.chain.stages)
        no_keys = rows.keys is None and rows.key_schema is None  # null, whatever the converter
        key_from = None if no_keys or as_is(p.key_converter, rows.key_schema) \
            else p.key_converter.from_connect_data
        value_from = None if as_is(p.value_converter, rows.value_schema) \
            else p.value_converter.from_connect_data
        header_from = None if as_is(p.header_converter, rows.header_schema) \
            else p.header_converter.from_connect_header
        # StringConverter's work on a str done inline (no call)
        key_encoding, value_encoding = (inline_encoding(p.key_converter),
                                        inline_encoding(p.value_converter))
        key_schema, value_schema, header_schema = (rows.key_schema, rows.value_schema,
                                                   rows.header_schema)
        topics = None if type(rows.topic) is str else rows.topic
        topic = rows.topic
        keys, values, partitions = rows.keys, rows.values, rows.partitions
        timestamps, all_headers = rows.timestamps, rows.headers
        produce, choose = self.producer.produce, self.sticky.choose
        transactional, creation, used = self.transactional, self.topic_creation, self.topics_used
        self.sticky.expire()
        delivered = sending.delivered if sending.written is None else None
        row_delivered = sending.row_delivered
        if transactional:
            self._ensure_transaction()
        written, full, count = 0, False, len(rows)
        for i in range(sending.next, count):
            fast = not per_record
            if fast:
                try:
                    if topics is not None:
                        topic = topics[i]
                    key = None if keys is None else keys[i]
                    if key_from is not None:
                        if key_encoding is not None and type(key) is str:
                            key = key.encode(key_encoding, "replace")
                        else:
                            key = key_from(topic, key_schema, key, None)
                    value = values[i]
                    if value_from is not None:
                        if value_encoding is not None and type(value) is str:
                            value = value.encode(value_encoding, "replace")
                        else:
                            value = value_from(topic, value_schema, value, None)
                    headers = None if all_headers is None else all_headers[i]
                    if headers and header_from is not None:
                        headers = [(k, header_from(topic, k, header_schema, v))
                                   for k, v in headers]
                    partition = None if partitions is None else partitions[i]
                    timestamp = None if timestamps is None else timestamps[i]
                except Exception:  # again, each stage under the error operator
                    fast = False
            if not fast:
                converted = self._process(rows.record(i))
                if converted is None:
                    continue  # dropped: acknowledged with the batch, -1 in commit_rows
                record, topic, key, value, headers = converted
                partition, timestamp = record.kafka_partition, record.timestamp
            if creation is not None:
                creation.ensure(topic)
            partition = choose(topic, partition, key, value)
            try:
                produce(topic, value, key, partition,
                        delivered or partial(row_delivered, i), None, timestamp or 0,
                        headers or None)
            except BufferError:
                sending.next, full = i, True
                self.to_send = sending
                break
            written += 1
            if topic not in used:
                used.add(topic)
                self.listener.on_topic_used(self.id, topic)
        sending.sent += written
        if written:
            self.metrics.write.inc(written)
        if full:
            self.producer.poll(0.1)
            return
        sending.next = count
        if transactional:
            for partition_, offset in rows.offsets:
                self.txn_offsets[self.submitted.key(partition_)] = (partition_, offset)
        else:
            self.submitted.submit_offsets(sending, rows.offsets)
        sending.maybe_done()
        if transactional and transactional["boundary"] == "poll":
            self._commit_transaction()

    def _commit_rows(self, rows: SourceRecordBatch, written: list[int]) -> None:
        try:
            self.task.commit_rows(rows, written)
        except Exception as e:
            log.error("%s Exception thrown while calling task.commitRows()", self, exc_info=e)

    def _process(self, record: SourceRecord):
        """(the record transformed, its topic, key, value, headers), each stage run by the
        error operator; None when a stage dropped it or failed (tolerated)."""
        context = ProcessingContext(source_record=record)
        transformed = self.pipeline.transform(record, self.operator, context)
        converted = None if transformed is None else self._convert(transformed, context)
        return None if converted is None else (transformed, *converted)

    def _convert(self, record: SourceRecord, context: ProcessingContext):
        p, op = self.pipeline, self.operator
        topic = record.topic
        headers = converted_headers = record._headers
        if headers:
            converted_headers = op.execute(context, Stage.HEADER_CONVERTER,
                                           type(p.header_converter), self._headers, topic,
                                           headers)
        key = op.execute(context, Stage.KEY_CONVERTER, type(p.key_converter),
                         p.key_converter.from_connect_data, topic, record.key_schema,
                         record.key, headers)
        value = op.execute(context, Stage.VALUE_CONVERTER, type(p.value_converter),
                           p.value_converter.from_connect_data, topic, record.value_schema,
                           record.value, headers)
        if context.failed:
            return None
        return topic, key, value, converted_headers if headers else None

    def _headers(self, topic: str, headers) -> list[tuple[str, bytes | None]]:
        convert = self.pipeline.header_converter.from_connect_header
        return [(h.key, convert(topic, h.key, h.schema, h.value)) for h in headers]

    def _dropped(self, record: SourceRecord) -> None:
        """A transform or the error handling dropped ``record``: its offset counts (with the
        batch's, or in the transaction), as acknowledged."""
        if self.transactional:
            self._ensure_transaction()
            self._track_transaction(record)
        if self.commits_records:
            self._commit_record(record, None)

    def _send_failed(self, err, msg) -> bool:
        """A record Kafka did not take: True when the error handling lets it go (as if
        acknowledged), else the task fails on its next iteration."""
        if err.code() in _PURGED and self.transactional:
            return False  # its transaction was aborted: the record is dropped with it
        if self.operator.tolerance_all:
            log.error("%s failed to send record to %s: %s", self, msg.topic(), err)
            return True
        if self.producer_error is None:
            self.producer_error = (f"Unrecoverable exception from producer send "
                                   f"callback: {err.str()}")
        return False

    def _delivered_record(self, batch: SubmittedBatch, record: SourceRecord, err, msg) -> None:
        """The delivery callback of a task with its own ``commit_record``."""
        if err is None:
            batch.acked += 1
            ts = msg.timestamp()[1]
            self._commit_record(record, RecordMetadata(msg.topic(), msg.partition(),
                                                       msg.offset(), ts if ts > 0 else None))
        elif self._send_failed(err, msg):
            batch.acked += 1
            self._commit_record(record, None)

    def _commit_record(self, record, metadata) -> None:
        try:
            self.task.commit_record(record, metadata)
        except Exception as e:
            log.error("%s Exception thrown while calling task.commitRecord()", self, exc_info=e)

    def commit_offsets(self) -> None:
        """Store the offsets of the acknowledged records, then the task's ``commit``."""
        self.next_commit = time.monotonic() + self.flush_interval
        started = time.monotonic()
        offsets = self.submitted.committable()
        if offsets:
            self.offset_store.put(self.id.connector, offsets)
        self.metrics.committed((time.monotonic() - started) * 1000)
        try:
            self.task.commit()
        except Exception as e:
            log.error("%s Exception thrown while calling task.commit()", self, exc_info=e)

    # ---- exactly-once (KIP-618) -----------------------------------------------------------
    def _ensure_transaction(self) -> None:
        if not self.in_transaction:
            self.producer.begin_transaction()
            self.in_transaction = True

    def _track_transaction(self, record: SourceRecord) -> None:
        if record.source_partition is not None and record.source_offset is not None:
            self.txn_offsets[self.submitted.key(record.source_partition)] = (
                record.source_partition, record.source_offset)
        if self.transactions is not None:
            asked = self.transactions.after(record)
            if asked == "commit":
                self._commit_transaction()
            elif asked == "abort":
                self._abort_transaction()

    def _maybe_end_transaction(self) -> None:
        boundary = self.transactional["boundary"]
        if boundary == "interval" and time.monotonic() >= self.next_commit:
            self._commit_transaction()
        elif boundary == "connector" and self.to_send is None:
            if self.transactions.abort_requested:
                self.transactions.abort_requested = False
                self._abort_transaction()
            elif self.transactions.commit_requested:
                self.transactions.commit_requested = False
                self._commit_transaction()

    def _commit_transaction(self) -> None:
        self.next_commit = time.monotonic() + self.flush_interval
        if not self.in_transaction:
            return
        started = time.monotonic()
        offsets = list(self.txn_offsets.values())
        for key, value in self.offset_store.records(self.id.connector, offsets):
            self.producer.produce(self.offset_store.topic, key=key, value=value)
        self.producer.commit_transaction(TRANSACTION_TIMEOUT)
        self.offset_store.copy_to_secondary(self.id.connector, offsets)
        self.in_transaction, self.txn_offsets = False, {}
        self.metrics.committed((time.monotonic() - started) * 1000)
        try:
            self.task.commit()
        except Exception as e:
            log.error("%s Exception thrown while calling task.commit()", self, exc_info=e)

    def _abort_transaction(self) -> None:
        if self.in_transaction:
            self.producer.abort_transaction(TRANSACTION_TIMEOUT)
        self.in_transaction, self.txn_offsets = False, {}
