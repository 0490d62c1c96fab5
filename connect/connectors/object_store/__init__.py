"""The object-storage sink, with Confluent's S3 sink settings (``S3SinkConnector``): records
of each topic partition are buffered and written as whole files to a bucket of any
S3-compatible endpoint (``store.url``; AWS without it) or to a local directory
(``store.url=file:///path``), named as Confluent's:
``<topics.dir>/<topic>/<encoded partition>/<topic>+<partition>+<start offset>.<ext>``.

Exactly once by construction: a topic partition's buffer is written when ``flush.size``
records are in it or a rotation interval has passed, every file of it uploaded whole, and
``pre_commit`` gives the worker offsets only up to what is uploaded. A file's name is its
first record's offset, so a batch read again after a crash is written again under the same
names, replacing what was there. On ``open``, where every batch is one file (the
DefaultPartitioner, or a time-based one with ``rotate.interval.ms``), the task lists the
partition's files and rewinds the consumer to the newest file's start: that file is written
again whole and nothing before it twice, whatever the committed offsets say. An upload that
fails is retried (RetriableException), the records already buffered passed over."""
from __future__ import annotations

import datetime
import logging
import re
import time
import zoneinfo

from josefk.connect.api.config import ConfigDef, Importance, Range, ValidString
from josefk.connect.api.config import Type as T
from josefk.connect.api.connector import SinkConnector, SinkTask, TopicPartition
from josefk.connect.api.errors import ConnectException, DataException, RetriableException
from josefk.connect.api.records import SinkRecord
from josefk.connect.connectors.cause import one_line
from josefk.connect.connectors.object_store.formats import FORMATS, HEADERS, KEY, VALUE
from josefk.connect.connectors.object_store.partitioners import (PARTITIONERS,
                                                                 DefaultPartitioner,
                                                                 TimeBasedPartitioner)
from josefk.tiered.store import LocalStore, ObjectStore, S3Store, StoreError

log = logging.getLogger("josefk.connect.object_store")

VERSION = "10.5.0"
_S3 = "S3"
_STORAGE = "Storage"
_PARTITIONER = "Partitioner"


def config() -> ConfigDef:
    return (ConfigDef()
            .define("s3.bucket.name", T.STRING, None, importance=Importance.HIGH, group=_S3,
                    documentation="The S3 Bucket (not needed for a file:// store.url).")
            .define("s3.region", T.STRING, "us-west-2", importance=Importance.MEDIUM, group=_S3,
                    documentation="The AWS region to be used the connector.")
            .define("aws.access.key.id", T.STRING, "", importance=Importance.HIGH, group=_S3,
                    documentation="The AWS access key ID used to authenticate personal AWS "
                                  "credentials.")
            .define("aws.secret.access.key", T.PASSWORD, "", importance=Importance.HIGH,
                    group=_S3, documentation="The secret access key used to authenticate "
                                             "personal AWS credentials.")
            .define("store.url", T.STRING, None, importance=Importance.HIGH, group=_STORAGE,
                    documentation="Store's connection URL: an S3-compatible endpoint "
                                  "(http[s]://host:port), or file:///path for a local "
                                  "directory; none: AWS S3.")
            .define("topics.dir", T.STRING, "topics", importance=Importance.HIGH,
                    group=_STORAGE, documentation="Top level directory to store the data "
                                                  "ingested from Kafka.")
            .define("directory.delim", T.STRING, "/", importance=Importance.MEDIUM,
                    group=_STORAGE, documentation="Directory delimiter pattern")
            .define("file.delim", T.STRING, "+", importance=Importance.MEDIUM, group=_STORAGE,
                    documentation="File delimiter pattern")
            .define("filename.offset.zero.pad.width", T.INT, 10, validator=Range.at_least(0),
                    importance=Importance.LOW, group=_STORAGE,
                    documentation="Width to zero-pad offsets in store's filenames if offsets "
                                  "are too short in order to provide fixed-width filenames "
                                  "that can be ordered by simple lexicographic sorting.")
            .define("format.class", T.CLASS, validator=ValidString(FORMATS),
                    importance=Importance.HIGH, group=_STORAGE,
                    documentation="The format class to use when writing data to the store.")
            .define("store.kafka.keys", T.BOOLEAN, False, importance=Importance.LOW,
                    group=_STORAGE, documentation="Enable or disable writing keys to storage. "
                                                  "The keys of a file's records are written "
                                                  "beside it, <file>.keys.<ext>.")
            .define("store.kafka.headers", T.BOOLEAN, False, importance=Importance.LOW,
                    group=_STORAGE, documentation="Enable or disable writing headers to "
                                                  "storage, beside each file: "
                                                  "<file>.headers.<ext>.")
            .define("keys.format.class", T.CLASS,
                    "io.confluent.connect.s3.format.avro.AvroFormat",
                    validator=ValidString(FORMATS), importance=Importance.LOW, group=_STORAGE,
                    documentation="The format class to use when writing keys to the store.")
            .define("headers.format.class", T.CLASS,
                    "io.confluent.connect.s3.format.avro.AvroFormat",
                    validator=ValidString(FORMATS), importance=Importance.LOW, group=_STORAGE,
                    documentation="The format class to use when writing headers to the "
                                  "store.")
            .define("flush.size", T.INT, validator=Range.at_least(1),
                    importance=Importance.HIGH, group=_STORAGE,
                    documentation="Number of records written to store before invoking file "
                                  "commits.")
            .define("rotate.interval.ms", T.LONG, -1, importance=Importance.HIGH,
                    group=_STORAGE,
                    documentation="The time interval in milliseconds to invoke file commits. "
                                  "The time of a record is the partitioner's timestamp "
                                  "extractor's (the wall clock for the other partitioners); a "
                                  "file is committed when a record's time is this much past "
                                  "its first record's. -1: disabled.")
            .define("rotate.schedule.interval.ms", T.LONG, -1, importance=Importance.MEDIUM,
                    group=_STORAGE,
                    documentation="The time interval in milliseconds to periodically invoke "
                                  "file commits, on the wall clock, aligned in timezone. "
                                  "-1: disabled.")
            .define("s3.compression.type", T.STRING, "none",
                    validator=ValidString(["none", "gzip"]), importance=Importance.LOW,
                    group=_S3, documentation="Compression type for files written to S3. "
                                             "Applied when using JsonFormat.")
            .define("s3.compression.level", T.INT, -1, validator=Range.between(-1, 9),
                    importance=Importance.LOW, group=_S3,
                    documentation="Compression level for files written to S3 (gzip): -1 "
                                  "the default, 0 none to 9 the best.")
            .define("behavior.on.null.values", T.STRING, "fail",
                    validator=ValidString.in_ignore_case("fail", "ignore"),
                    importance=Importance.LOW, group=_S3,
                    documentation="How to handle records with a null value (i.e. Kafka "
                                  "tombstone records). Valid options are 'ignore' and "
                                  "'fail'.")
            .define("retry.backoff.ms", T.LONG, 5000, validator=Range.at_least(0),
                    importance=Importance.LOW, group=_STORAGE,
                    documentation="How long to wait in milliseconds before attempting the "
                                  "first retry of a failed upload.")
            .define("avro.codec", T.STRING, "null",
                    validator=ValidString(["null", "deflate", "snappy", "bzip2", "xz",
                                           "zstandard"]),
                    importance=Importance.LOW, group=_STORAGE,
                    documentation="The Avro compression codec to be used for output files.")
            .define("parquet.codec", T.STRING, "snappy",
                    validator=ValidString(["none", "snappy", "gzip", "brotli", "lz4", "zstd"]),
                    importance=Importance.LOW, group=_STORAGE,
                    documentation="The Parquet compression codec to be used for output files.")
            .define("partitioner.class", T.CLASS,
                    "io.confluent.connect.storage.partitioner.DefaultPartitioner",
                    validator=ValidString(PARTITIONERS), importance=Importance.HIGH,
                    group=_PARTITIONER, documentation="The partitioner to use when writing "
                                                      "data to the store.")
            .define("partition.field.name", T.LIST, "", importance=Importance.MEDIUM,
                    group=_PARTITIONER, documentation="The name of the partitioning field "
                                                      "when FieldPartitioner is used.")
            .define("path.format", T.STRING, "", importance=Importance.MEDIUM,
                    group=_PARTITIONER,
                    documentation="This configuration is used to set the format of the data "
                                  "directories when partitioning with TimeBasedPartitioner "
                                  "(a Joda-Time pattern, e.g. 'year'=YYYY/'month'=MM).")
            .define("partition.duration.ms", T.LONG, -1, importance=Importance.MEDIUM,
                    group=_PARTITIONER,
                    documentation="The duration of a partition milliseconds used by "
                                  "TimeBasedPartitioner.")
            .define("locale", T.STRING, "", importance=Importance.MEDIUM, group=_PARTITIONER,
                    documentation="The locale to use when partitioning with "
                                  "TimeBasedPartitioner.")
            .define("timezone", T.STRING, "", importance=Importance.MEDIUM, group=_PARTITIONER,
                    documentation="The timezone to use when partitioning with "
                                  "TimeBasedPartitioner.")
            .define("timestamp.extractor", T.STRING, "Wallclock",
                    importance=Importance.MEDIUM, group=_PARTITIONER,
                    documentation="The extractor that gets the timestamp for records when "
                                  "partitioning with TimeBasedPartitioner: Wallclock, Record "
                                  "or RecordField.")
            .define("timestamp.field", T.STRING, "timestamp", importance=Importance.MEDIUM,
                    group=_PARTITIONER,
                    documentation="The record field to be used as timestamp by the timestamp "
                                  "extractor."))


def open_store(props: dict) -> ObjectStore:
    """The store ``store.url`` names; a bucket that is not there is a ConnectException."""
    url = props["store.url"]
    if url and url.startswith("file://"):
        return LocalStore(url[len("file://"):])
    bucket = props["s3.bucket.name"]
    if not bucket:
        raise ConnectException("s3.bucket.name is required (store.url is not a file:// URL)")
    secret = props["aws.secret.access.key"]
    store = S3Store(bucket, endpoint=url or None, region=props["s3.region"],
                    access_key=props["aws.access.key.id"] or None,
                    secret_key=getattr(secret, "value", secret) or None)
    try:
        store.list(f"{props['topics.dir']}/.bucket-check/")
    except StoreError as e:
        raise ConnectException(f"Non-existent S3 bucket: {bucket} ({one_line(e)})") from e
    return store


class S3SinkConnector(SinkConnector):
    """Every task has the connector's settings; the worker spreads the partitions."""

    def version(self) -> str:
        return VERSION

    def start(self, props: dict[str, str]) -> None:
        """Check the settings here, so a wrong one fails the connector, not each task."""
        values = config().parse(props)
        FORMATS[values["format.class"]](values)
        PARTITIONERS[values["partitioner.class"]](values)
        self.props = dict(props)

    def task_class(self):
        return S3SinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self.props) for _ in range(max_tasks)]

    def stop(self) -> None:
        """Nothing to release: the tasks hold the store."""

    def config(self) -> ConfigDef:
        return config()


class _Batch:
    """What a topic partition has buffered: records per encoded partition, in order."""

    __slots__ = ("files", "count", "start", "first_time", "encoded")

    def __init__(self):
        self.files: dict[str, list[SinkRecord]] = {}
        self.count = 0
        self.start: int | None = None
        self.first_time: int | None = None
        self.encoded: str | None = None


class S3SinkTask(SinkTask):
    def version(self) -> str:
        return VERSION

    def start(self, props: dict[str, str]) -> None:
        values = config().parse(props)
        self.topics_dir = values["topics.dir"].strip("/")
        self.delim, self.file_delim = values["directory.delim"], values["file.delim"]
        self.pad = values["filename.offset.zero.pad.width"]
        self.flush_size = values["flush.size"]
        self.format = FORMATS[values["format.class"]](values)
        self.views = [(VALUE, self.format)]
        if values["store.kafka.keys"]:
            self.views.append((KEY, FORMATS[values["keys.format.class"]](values)))
        if values["store.kafka.headers"]:
            self.views.append((HEADERS, FORMATS[values["headers.format.class"]](values)))
        self.partitioner = PARTITIONERS[values["partitioner.class"]](values)
        time_based = isinstance(self.partitioner, TimeBasedPartitioner)
        self.time_of = self.partitioner.extractor.extract if time_based else None
        self.rotate_ms = values["rotate.interval.ms"] if time_based else -1
        if values["rotate.interval.ms"] > 0 and not time_based:
            log.warning("rotate.interval.ms is set to %sms but partitioner is not an instance "
                        "of TimeBasedPartitioner. This property is ignored.",
                        values["rotate.interval.ms"])
        self.schedule_ms = values["rotate.schedule.interval.ms"]
        if self.schedule_ms > 0:
            try:
                self.zone = zoneinfo.ZoneInfo(values["timezone"])
            except (zoneinfo.ZoneInfoNotFoundError, ValueError) as e:
                raise ConnectException("rotate.schedule.interval.ms needs a timezone, not "
                                       f"{values['timezone']!r}") from e
        # Where every batch is one file, the newest file in the store starts the newest batch.
        self.one_file_per_batch = (isinstance(self.partitioner, DefaultPartitioner)
                                   or self.rotate_ms > 0)
        self.store = open_store(values)
        self.retry_backoff_ms = values["retry.backoff.ms"]
        self.ignore_nulls = values["behavior.on.null.values"].lower() == "ignore"
        self.batches: dict[TopicPartition, _Batch] = {}
        self.last_offset: dict[TopicPartition, int] = {}
        self.next_schedule: dict[TopicPartition, int] = {}
        self._name = re.compile(
            rf"(?:^|{re.escape(self.delim)})(?P<topic>[^{re.escape(self.delim)}]+)"
            rf"{re.escape(self.file_delim)}(?P<partition>\d+){re.escape(self.file_delim)}"
            rf"(?P<offset>\d+){re.escape(self.format.extension)}$")

    # ---- partitions --------------------------------------------------------------------

    def open(self, partitions: list[TopicPartition]) -> None:
        rewinds = {}
        now = _now_ms()
        for tp in partitions:
            tp = TopicPartition(*tp)
            if tp in self.batches:
                continue
            self._new_partition(tp, now)
            if self.one_file_per_batch:
                newest = self._newest_file_start(tp)
                if newest is not None:
                    rewinds[tp] = newest
        if rewinds:
            log.info("rewinding to the newest files in the store: %s", rewinds)
            self.context.offset(rewinds)

    def _new_partition(self, tp: TopicPartition, now: int) -> _Batch:
        batch = self.batches[tp] = _Batch()
        self.last_offset.pop(tp, None)
        self._schedule(tp, now)
        return batch

    def _newest_file_start(self, tp: TopicPartition) -> int | None:
        where = (self.partitioner.path(tp.topic, self.partitioner.encode_partition(tp.partition))
                 if isinstance(self.partitioner, DefaultPartitioner) else tp.topic)
        prefix = f"{self.topics_dir}{self.delim}{where}{self.delim}"
        try:
            keys = self.store.list(prefix)
        except StoreError as e:
            raise ConnectException(f"cannot list {prefix} in the store: {one_line(e)}") from e
        newest = None
        for key in keys:
            m = self._name.search(key)
            if m and m["topic"] == tp.topic and int(m["partition"]) == tp.partition:
                offset = int(m["offset"])
                newest = offset if newest is None else max(newest, offset)
        return newest

    def close(self, partitions: list[TopicPartition]) -> None:
        # Not uploaded, not committed: read again by whoever is given the partition.
        for tp in partitions:
            tp = TopicPartition(*tp)
            self.batches.pop(tp, None)
            self.next_schedule.pop(tp, None)
            self.last_offset.pop(tp, None)

    def stop(self) -> None:
        self.batches.clear()

    # ---- records -----------------------------------------------------------------------

    def put(self, records: list[SinkRecord]) -> None:
        """Buffer the records, writing each batch as rotation says. An upload that fails is
        a RetriableException: the worker puts the same records again after
        ``retry.backoff.ms``, and those already buffered are passed over."""
        now = _now_ms()
        encode, time_of, last = self.partitioner.encode, self.time_of, self.last_offset
        batches, flush_size = self.batches, self.flush_size
        timed = self.rotate_ms > 0 or self.schedule_ms > 0
        for tp, batch in list(batches.items()):
            if batch.count >= flush_size:  # its upload failed in the last put
                self._write(tp, batch)
        for record in records:
            tp = (record.topic, record.kafka_partition)  # equal to its TopicPartition
            batch = batches.get(tp)
            if batch is None:  # not opened: the worker always opens first
                batch = self._new_partition(TopicPartition(*tp), now)
            elif record.kafka_offset <= last.get(tp, -1):
                continue
            if record.value is None:
                if not self.ignore_nulls:
                    raise ConnectException(
                        f"Null valued records are not writeable with current "
                        f"behavior.on.null.values 'fail' (record {tp[0]}-{tp[1]}"
                        f"@{record.kafka_offset})")
                continue
            when = time_of(record) if time_of is not None else None
            encoded = encode(record)
            files = batch.files.get(encoded)
            if batch.count and (timed or files and files[-1].value_schema is not
                                record.value_schema) \
                    and self._rotates(tp, batch, files, record, encoded, when, now):
                batch = self._write(tp, batch)
                files = None
            if files is None:
                files = batch.files[encoded] = []
            files.append(record)
            last[tp] = record.kafka_offset
            if batch.count == 0:
                batch.start, batch.first_time = record.kafka_offset, when
            batch.encoded = encoded
            batch.count += 1
            if batch.count >= flush_size:
                self._write(tp, batch)
        self._rotate_on_schedule(now)

    def _write(self, tp: tuple[str, int], batch: _Batch) -> _Batch:
        """Upload the batch's files; the partition's next, empty batch."""
        try:
            self._commit(tp, batch)
        except StoreError as e:
            self.context.timeout(self.retry_backoff_ms)
            raise RetriableException(f"cannot upload the files of {tp[0]}-{tp[1]} "
                                     f"from offset {batch.start}: {one_line(e)}") from e
        batch = self.batches[tp] = _Batch()
        return batch

    def _rotates(self, tp, batch: _Batch, files, record, encoded, when, now) -> bool:
        """Whether the batch is written before ``record``: a new value schema for its file
        (Confluent's schema.compatibility NONE), ``rotate.interval.ms`` past the batch's first
        record's time or a new time partition, the scheduled rotation's time."""
        if files and files[-1].value_schema is not record.value_schema and \
                files[-1].value_schema != record.value_schema:
            return True
        if self.rotate_ms > 0 and (when - batch.first_time >= self.rotate_ms
                                   or encoded != batch.encoded) or self._scheduled(tp, now):
            self._schedule(tp, now)
            return True
        return False

    def _scheduled(self, tp, now: int) -> bool:
        return self.schedule_ms > 0 and now >= self.next_schedule[tp]

    def _schedule(self, tp: TopicPartition, now: int) -> None:
        """The next ``rotate.schedule.interval.ms`` boundary after ``now``, counted from the
        start of the day in the zone (Confluent's getNextTimeAdjustedByDay)."""
        if self.schedule_ms <= 0:
            return
        local = datetime.datetime.fromtimestamp(now / 1000, self.zone)
        midnight = int(local.replace(hour=0, minute=0, second=0, microsecond=0)
                       .timestamp() * 1000)
        self.next_schedule[tp] = midnight + ((now - midnight) // self.schedule_ms + 1) \
            * self.schedule_ms

    def _rotate_on_schedule(self, now: int) -> None:
        """Without records to put: the batches whose scheduled rotation is due."""
        if self.schedule_ms <= 0:
            return
        for tp, batch in list(self.batches.items()):
            if batch.count and self._scheduled(tp, now):
                self._schedule(tp, now)
                self._write(tp, batch)

    def _commit(self, tp: tuple[str, int], batch: _Batch) -> None:
        """Write and upload every file of the batch (a StoreError if one cannot be); only
        then is it committable."""
        topic, partition = tp
        for encoded, records in batch.files.items():
            base = (f"{self.topics_dir}{self.delim}{self.partitioner.path(topic, encoded)}"
                    f"{self.delim}{topic}{self.file_delim}{partition}{self.file_delim}"
                    f"{records[0].kafka_offset:0{self.pad}d}")
            for view, fmt in reversed(self.views):  # the value's file last
                key = f"{base}{view.extension}{fmt.extension}"
                try:
                    data = fmt.write(records, view)
                except DataException as e:
                    raise ConnectException(f"cannot write {key}: {e}") from e
                self.store.put(key, data)

    # ---- commits -----------------------------------------------------------------------

    def flush(self, current_offsets):
        """Nothing: files are written when rotation says, and ``pre_commit`` tells the worker
        how far that is."""

    def pre_commit(self, current_offsets: dict[TopicPartition, int]) -> dict[TopicPartition,
                                                                             int]:
        try:
            self._rotate_on_schedule(_now_ms())
        except RetriableException as e:
            log.warning("%s; the offsets stay before it", e)
        committable = {}
        for tp, offset in current_offsets.items():
            tp = TopicPartition(*tp)
            batch = self.batches.get(tp)
            if batch is not None:
                committable[tp] = batch.start if batch.count else offset
        return committable


def _now_ms() -> int:
    return int(time.time() * 1000)
