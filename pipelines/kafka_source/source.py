"""A PySpark Python data source with the options, schema and behaviour of Spark's Kafka connector.

Batch and streaming reads plan one Spark partition per Kafka partition and offset range; the
streaming offsets are ``{"topic": {"partition": offset}}`` JSON that Spark checkpoints, so a
restarted query resumes exactly where it stopped. Writes take the connector's columns.
"""
from __future__ import annotations

import time

from pyspark.sql.datasource import (DataSource, DataSourceArrowWriter, DataSourceReader,
                                    DataSourceStreamArrowWriter, DataSourceStreamReader,
                                    InputPartition, WriterCommitMessage)
from pyspark.sql.streaming.datasource import (ReadAllAvailable, ReadMaxRows,
                                              SupportsTriggerAvailableNow)
from pyspark.sql.types import (ArrayType, BinaryType, IntegerType, LongType, StringType,
                               StructField, StructType, TimestampType)

from josefk.pipelines.kafka_source import client
from josefk.pipelines.kafka_source import options as opt
from josefk.pipelines.kafka_source.options import EARLIEST, LATEST, KafkaOptionError

NAME = "pykafka"

SCHEMA = StructType([
    StructField("key", BinaryType()),
    StructField("value", BinaryType()),
    StructField("topic", StringType()),
    StructField("partition", IntegerType()),
    StructField("offset", LongType()),
    StructField("timestamp", TimestampType()),
    StructField("timestampType", IntegerType()),
])
HEADERS = StructField("headers", ArrayType(StructType([
    StructField("key", StringType()), StructField("value", BinaryType())])))


class KafkaDataSource(DataSource):
    """``format("pykafka")``: Spark's ``format("kafka")`` without the JVM connector."""

    @classmethod
    def name(cls):
        return NAME

    def schema(self):
        if opt.flag(self.options, "includeHeaders", False):
            return StructType(SCHEMA.fields + [HEADERS])
        return SCHEMA

    def reader(self, schema):
        return BatchReader(Settings(self.options, streaming=False))

    def streamReader(self, schema):
        return StreamReader(Settings(self.options, streaming=True))

    def writer(self, schema, overwrite):
        return BatchWriter(_writer(self.options, schema))

    def streamWriter(self, schema, overwrite):
        return StreamWriter(_writer(self.options, schema))


class Settings:
    """The checked read options, and the offset resolution both kinds of read share."""

    def __init__(self, options, streaming: bool):
        self.conf = {**opt.client_config(options), "group.id": opt.group_id(options)}
        self.strategy = opt.Strategy(options)
        self.fail_on_data_loss = opt.flag(options, "failOnDataLoss", True)
        self.with_headers = opt.flag(options, "includeHeaders", False)
        self.starting = opt.offset_spec(options, "startingOffsets",
                                        "latest" if streaming else "earliest")
        self.timestamps = opt.timestamp_spec(options, "starting")
        self.by_timestamp_fallback = opt.no_match_strategy(options)
        self.ending = opt.offset_spec(options, "endingOffsets", "latest")
        self.ending_timestamps = opt.timestamp_spec(options, "ending")
        self.max_per_trigger = opt.positive_int(options, "maxOffsetsPerTrigger")
        self.min_per_trigger = opt.positive_int(options, "minOffsetsPerTrigger")
        self.max_trigger_delay_ms = opt.duration_ms(options, "maxTriggerDelay", "15m")
        self.min_partitions = opt.positive_int(options, "minPartitions")
        self.max_records_per_partition = opt.positive_int(options, "maxRecordsPerPartition")
        self.poll_timeout = int(opt.get(options, "kafkaConsumer.pollTimeoutMs", 120000)) / 1000
        if streaming:
            for name in ("endingOffsets", "endingTimestamp", "endingOffsetsByTimestamp"):
                if opt.get(options, name) is not None:
                    raise KafkaOptionError(f"Option '{name}' is for batch queries only")
        if not streaming and self.starting == "latest":
            raise KafkaOptionError("Starting offset can't be latest for batch queries")
        if not streaming and self.ending == "earliest":
            raise KafkaOptionError("Ending offset can't be earliest for batch queries")
        for spec in (self.starting, self.ending):
            if isinstance(spec, dict) and self.strategy.kind == "assign":
                extra = set(spec) - self.strategy.assigned
                if extra:
                    raise KafkaOptionError(f"Offsets given for partitions not assigned: "
                                           f"{sorted(extra)}")

    def partitions(self):
        """The (topic, partition) pairs to read now; a named topic that does not exist is
        data loss (an error with failOnDataLoss, else skipped)."""
        existing = client.partitions_by_topic(self.conf)
        missing = [t for t in self.strategy.wanted_topics(existing) if t not in existing]
        if missing and self.fail_on_data_loss:
            raise client.DataLossError(f"Topic(s) {missing} do not exist (set failOnDataLoss "
                                       "to false to read the others)")
        return self.strategy.select(existing)

    def start_offsets(self, tps, marks) -> dict:
        """Concrete starting offsets for ``tps`` from startingTimestamp(s) or startingOffsets."""
        if self.timestamps is None:
            return self._resolve(self.starting, tps, marks, EARLIEST)
        out = self._by_time(self.timestamps, tps, marks)
        unmatched = [tp for tp, off in out.items() if off is None]
        if unmatched and self.by_timestamp_fallback != "latest":
            raise KafkaOptionError(f"No offset of {unmatched[0][0]}-{unmatched[0][1]} has a "
                                   "timestamp at or after the starting timestamp (set "
                                   "startingOffsetsByTimestampStrategy to latest)")
        return {tp: marks[tp][1] if off is None else off for tp, off in out.items()}

    def end_offsets(self, tps, marks) -> dict:
        """Concrete ending offsets from endingTimestamp(s) (latest where no record is that
        late, as in Spark) or endingOffsets."""
        if self.ending_timestamps is None:
            return self._resolve(self.ending, tps, marks, LATEST)
        return {tp: marks[tp][1] if off is None else off
                for tp, off in self._by_time(self.ending_timestamps, tps, marks).items()}

    def _by_time(self, spec, tps, marks) -> dict:
        """The first offset at or after each partition's timestamp; None where there is none."""
        times = ({tp: spec for tp in tps} if isinstance(spec, int)
                 else {tp: ts for tp, ts in spec.items() if tp in tps})
        found = client.offsets_for_times(self.conf, times)
        return {tp: found[tp] if found.get(tp, -1) >= 0 else None for tp in tps}

    @staticmethod
    def _resolve(spec, tps, marks, unnamed) -> dict:
        """Offsets from "earliest", "latest" or JSON (``unnamed`` for partitions it omits)."""
        out = {}
        for tp in tps:
            low, high = marks[tp]
            if isinstance(spec, str):
                off = EARLIEST if spec == "earliest" else LATEST
            else:
                off = spec.get(tp, unnamed)
            out[tp] = low if off == EARLIEST else high if off == LATEST else off
        return out

    def checked_start(self, tp, start, marks) -> int:
        """``start``, moved up to the log start offset when data was deleted below it (an
        error with failOnDataLoss)."""
        low = marks[tp][0]
        if start < low:
            if self.fail_on_data_loss:
                raise client.DataLossError(
                    f"Offsets [{start}, {low}) of {tp[0]}-{tp[1]} were deleted before they "
                    "were read. Set failOnDataLoss to false to skip them.")
            return low
        return start

    def ranges(self, starts: dict, ends: dict, marks) -> list[InputPartition]:
        out = []
        for tp in sorted(ends):
            start = self.checked_start(tp, starts.get(tp, marks[tp][0]), marks)
            if ends[tp] > start:
                out.append((tp, start, ends[tp]))
        return [OffsetRange(tp[0], tp[1], start, end) for tp, start, end
                in split(out, self.min_partitions, self.max_records_per_partition)]


def split(ranges, min_partitions=None, max_records=None) -> list:
    """``ranges`` ((topic, partition), start, end) cut into more Spark partitions, as Spark's
    connector does: with ``minPartitions`` above the number of ranges, each range gets a share
    of it in proportion to its size (ranges whose share rounds to one stay whole and are left
    out of the proportion); with ``maxRecordsPerPartition``, no piece is longer than that."""
    wanted = {}
    if min_partitions and len(ranges) < min_partitions:
        total = sum(end - start for _, start, end in ranges)
        share = {r[0]: _share(r[2] - r[1], total, min_partitions) for r in ranges}
        whole = [r for r in ranges if share[r[0]] == 1]
        rest = total - sum(end - start for _, start, end in whole)
        parts = max(min_partitions - len(whole), 1)
        wanted = {tp: 1 if share[tp] == 1 else _share(end - start, rest, parts)
                  for tp, start, end in ranges}
    out = []
    for tp, start, end in ranges:
        n = max(wanted.get(tp, 1), -(-(end - start) // max_records) if max_records else 1)
        left = end - start
        for i in range(n):  # even pieces; the last ones take the rounding
            size = left // (n - i)
            if size:
                out.append((tp, start, start + size))
            start, left = start + size, left - size
    return out


def _share(size: int, total: int, parts: int) -> int:
    return max(int(size / total * parts + 0.5), 1)  # rounding half up, as Java's Math.round


class OffsetRange(InputPartition):
    """One Spark partition: offsets [start, end) of one Kafka partition."""

    def __init__(self, topic, partition, start, end):
        super().__init__((topic, partition, start, end))
        self.topic, self.partition, self.start, self.end = topic, partition, start, end


def _read(settings: Settings, r: OffsetRange):
    if not isinstance(r, OffsetRange):  # Spark's stand-in partition when a read plans none
        return iter(())
    return client.read_range(settings.conf, r.topic, r.partition, r.start, r.end,
                             settings.with_headers, settings.fail_on_data_loss,
                             settings.poll_timeout)


class BatchReader(DataSourceReader):
    def __init__(self, settings: Settings):
        self.settings = settings

    def partitions(self):
        s = self.settings
        tps = s.partitions()
        marks = client.watermarks(s.conf, tps)
        return s.ranges(s.start_offsets(tps, marks), s.end_offsets(tps, marks), marks)

    def read(self, partition):
        return _read(self.settings, partition)


def _to_json(offsets: dict) -> dict:
    out = {}
    for (t, p), off in sorted(offsets.items()):
        out.setdefault(t, {})[str(p)] = off
    return out


def _from_json(offsets: dict) -> dict:
    return {(t, int(p)): off for t, parts in offsets.items() for p, off in parts.items()}


class StreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, settings: Settings):
        self.settings = settings
        self.target = None  # the latest offsets when a Trigger.AvailableNow query started
        self.last_trigger_ms = 0  # when the last batch was let through (minOffsetsPerTrigger)

    def initialOffset(self):
        s = self.settings
        tps = s.partitions()
        return _to_json(s.start_offsets(tps, client.watermarks(s.conf, tps)))

    def _latest(self) -> dict:
        s = self.settings
        tps = s.partitions()
        return {tp: high for tp, (_, high) in client.watermarks(s.conf, tps).items()}

    def prepareForTriggerAvailableNow(self):
        self.target = self._latest()

    def getDefaultReadLimit(self):
        n = self.settings.max_per_trigger
        return ReadMaxRows(n) if n else ReadAllAvailable()

    def reportLatestOffset(self):
        return _to_json(self._latest())

    def latestOffset(self, start, limit):
        begin = _from_json(start)
        latest = self.target if self.target is not None else self._latest()
        # Partitions that appeared since the start are read from their beginning, as Spark does.
        end = {tp: max(off, begin.get(tp, 0)) for tp, off in latest.items()}
        if self._delay(begin, end):
            return start
        if isinstance(limit, ReadMaxRows):
            end = _cap(begin, end, limit.max_rows)
        return _to_json(end)

    def _delay(self, begin: dict, end: dict) -> bool:
        """Whether to skip this trigger: fewer than minOffsetsPerTrigger new records and less
        than maxTriggerDelay since the last batch. Not with Trigger.AvailableNow, whose query
        ends at the first skipped trigger (it would leave the last records unread)."""
        s = self.settings
        if s.min_per_trigger is None or self.target is not None:
            return False
        now = int(time.time() * 1000)
        waiting = sum(off - begin.get(tp, 0) for tp, off in end.items())
        if now - self.last_trigger_ms < s.max_trigger_delay_ms and waiting < s.min_per_trigger:
            return True
        self.last_trigger_ms = now
        return False

    def partitions(self, start, end):
        s = self.settings
        ends = _from_json(end)
        marks = client.watermarks(s.conf, list(ends))
        starts = {tp: off for tp, off in _from_json(start).items() if tp in ends}
        return s.ranges({tp: starts.get(tp, marks[tp][0]) for tp in ends}, ends, marks)

    def read(self, partition):
        return _read(self.settings, partition)

    def commit(self, end):
        pass  # offsets live in Spark's checkpoint; nothing is committed to Kafka


def _cap(begin: dict, end: dict, max_rows: int) -> dict:
    """Spread ``max_rows`` over the partitions in proportion to what each has waiting."""
    waiting = {tp: off - begin.get(tp, 0) for tp, off in end.items()}
    total = sum(waiting.values())
    if total <= max_rows:
        return end
    out, left = {}, max_rows
    for tp in sorted(end):
        share = min(waiting[tp], left, max(1, waiting[tp] * max_rows // total))
        out[tp] = begin.get(tp, 0) + share
        left -= share
    return out


# The columns a write takes and their types, as Spark's connector checks them.
WRITE_TYPES = {"topic": ("string",), "key": ("string", "binary"), "value": ("string", "binary"),
               "headers": (HEADERS.dataType.simpleString(),), "partition": ("int",)}


def _writer(options, schema) -> client.Writer:
    conf = opt.client_config(options)
    topic = opt.target_topic(options)
    types = {f.name: f.dataType.simpleString() for f in schema.fields}
    if "value" not in types:
        raise KafkaOptionError("Required attribute 'value' not found")
    if topic is None and "topic" not in types:
        raise KafkaOptionError("topic option required when no 'topic' attribute is present. "
                               "Use the topic option for setting a topic.")
    for name, allowed in WRITE_TYPES.items():
        if name in types and types[name] not in allowed and not (name == "topic" and topic):
            raise KafkaOptionError(f"{name} attribute unsupported type {types[name]}. {name} "
                                   f"must be a(n) {' or '.join(allowed)}")
    return client.Writer(conf, topic)


class Written(WriterCommitMessage):
    def __init__(self, count):
        self.count = count


class BatchWriter(DataSourceArrowWriter):
    def __init__(self, writer: client.Writer):
        self.writer = writer

    def write(self, iterator):
        return Written(self.writer.write(iterator))


class StreamWriter(DataSourceStreamArrowWriter):
    def __init__(self, writer: client.Writer):
        self.writer = writer

    def write(self, iterator):
        return Written(self.writer.write(iterator))

    def commit(self, messages, batchId):
        pass  # every row was acknowledged by the broker before write() returned

    def abort(self, messages, batchId):
        pass  # rows already delivered stay (at-least-once, as with Spark's connector)
