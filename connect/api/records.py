"""Connect's records: ``SourceRecord`` (what a source task returns: its source partition and
offset beside the topic, key, value and headers), ``SinkRecord`` (what a sink task is given:
the Kafka offset and timestamp type, and the original topic-partition-offset of KIP-793 that
transforms do not change), their headers, and the ``RecordMetadata`` a source task's
``commit_record`` is told."""
from __future__ import annotations

from typing import Any, Iterator, NamedTuple

from josefk.connect.api.schema import Schema


class Header(NamedTuple):
    key: str
    schema: Schema | None
    value: Any


class Headers:
    """An ordered list of headers; a key may repeat (Connect's ConnectHeaders)."""

    __slots__ = ("_items",)

    def __init__(self, items=()):
        self._items: list[Header] = ([h if isinstance(h, Header) else Header(*h) for h in items]
                                     if items else [])

    def add(self, key: str, value, schema: Schema | None = None) -> "Headers":
        self._items.append(Header(key, schema, value))
        return self

    def add_header(self, header: Header) -> "Headers":
        self._items.append(header)
        return self

    def last_with_name(self, key: str) -> Header | None:
        for header in reversed(self._items):
            if header.key == key:
                return header
        return None

    def all_with_name(self, key: str) -> list[Header]:
        return [h for h in self._items if h.key == key]

    def remove(self, key: str) -> "Headers":
        self._items = [h for h in self._items if h.key != key]
        return self

    def retain_latest(self) -> "Headers":
        seen, kept = set(), []
        for header in reversed(self._items):
            if header.key not in seen:
                seen.add(header.key)
                kept.append(header)
        self._items = kept[::-1]
        return self

    def clear(self) -> "Headers":
        self._items.clear()
        return self

    def copy(self) -> "Headers":
        clone = Headers.__new__(Headers)
        clone._items = self._items.copy()
        return clone

    def __iter__(self) -> Iterator[Header]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __eq__(self, other):
        return isinstance(other, Headers) and self._items == other._items

    def __repr__(self):
        return f"Headers({self._items!r})"


class ConnectRecord:
    """The fields every record has. ``new_record`` makes a copy with some of them changed, the
    way transforms build their output (Connect's ``newRecord``)."""

    __slots__ = ("topic", "kafka_partition", "key_schema", "key", "value_schema", "value",
                 "timestamp", "_headers")

    def __init__(self, topic: str, kafka_partition: int | None, key_schema: Schema | None,
                 key, value_schema: Schema | None, value, timestamp: int | None = None,
                 headers: Headers | None = None):
        self.topic, self.kafka_partition = topic, kafka_partition
        self.key_schema, self.key = key_schema, key
        self.value_schema, self.value = value_schema, value
        self.timestamp = timestamp
        self._headers = headers  # None: none yet, made on first use (most records have none)

    @property
    def headers(self) -> Headers:
        headers = self._headers
        if headers is None:
            headers = self._headers = Headers()
        return headers

    @headers.setter
    def headers(self, headers: Headers | None) -> None:
        self._headers = headers

    def _fields(self) -> dict:
        return {name: getattr(self, name) for name in _all_slots(type(self))}

    def _copy(self):
        clone = object.__new__(type(self))
        clone.topic, clone.kafka_partition = self.topic, self.kafka_partition
        clone.key_schema, clone.key = self.key_schema, self.key
        clone.value_schema, clone.value = self.value_schema, self.value
        clone.timestamp = self.timestamp
        return clone

    def new_record(self, topic: str | None = None, kafka_partition: int | None = ...,
                   key_schema=..., key=..., value_schema=..., value=..., timestamp=...,
                   headers: Headers | None = None):
        """A copy of this record (of the same class) with the given fields replaced; the
        headers are copied, so the copy's may change without touching these. Transforms call
        it for every record: it assigns fields, nothing more."""
        clone = self._copy()
        if topic is not None:
            clone.topic = topic
        if kafka_partition is not ...:
            clone.kafka_partition = kafka_partition
        if key_schema is not ...:
            clone.key_schema = key_schema
        if key is not ...:
            clone.key = key
        if value_schema is not ...:
            clone.value_schema = value_schema
        if value is not ...:
            clone.value = value
        if timestamp is not ...:
            clone.timestamp = timestamp
        if headers is None and self._headers is not None:
            headers = self._headers.copy()
        clone._headers = headers
        return clone

    def __eq__(self, other):
        return type(other) is type(self) and self._fields() == other._fields()

    __hash__ = None

    def __repr__(self):
        inner = ", ".join(f"{k}={v!r}" for k, v in self._fields().items())
        return f"{type(self).__name__}{{{inner}}}"


def _all_slots(cls) -> list[str]:
    names = []
    for klass in reversed(cls.__mro__):
        names.extend(name.lstrip("_") for name in getattr(klass, "__slots__", ()))
    return names


class SourceRecord(ConnectRecord):
    """A record from a source system. ``source_partition`` and ``source_offset`` are maps of
    JSON-able primitives (str keys): where it came from, and how far the source has been read,
    which the worker stores in the offsets topic under the connector's name."""

    __slots__ = ("source_partition", "source_offset")

    def __init__(self, source_partition: dict | None, source_offset: dict | None, topic: str,
                 kafka_partition: int | None = None, key_schema: Schema | None = None,
                 key=None, value_schema: Schema | None = None, value=None,
                 timestamp: int | None = None, headers: Headers | None = None):
        ConnectRecord.__init__(self, topic, kafka_partition, key_schema, key, value_schema,
                               value, timestamp, headers)  # not super(): a record each time
        self.source_partition, self.source_offset = source_partition, source_offset

    def _copy(self):
        clone = super()._copy()
        clone.source_partition, clone.source_offset = self.source_partition, self.source_offset
        return clone


class SinkRecord(ConnectRecord):
    """A record read from Kafka for a sink task. ``original_*`` (KIP-793) keep the
    topic-partition-offset it was read at, whatever the transforms made of it."""

    __slots__ = ("kafka_offset", "timestamp_type", "original_topic", "original_kafka_partition",
                 "original_kafka_offset")

    def __init__(self, topic: str, partition: int, key_schema: Schema | None, key,
                 value_schema: Schema | None, value, kafka_offset: int,
                 timestamp: int | None = None, timestamp_type: str = "NoTimestampType",
                 headers: Headers | None = None, original_topic: str | None = None,
                 original_kafka_partition: int | None = None,
                 original_kafka_offset: int | None = None):
        ConnectRecord.__init__(self, topic, partition, key_schema, key, value_schema, value,
                               timestamp, headers)
        self.kafka_offset, self.timestamp_type = kafka_offset, timestamp_type
        self.original_topic = topic if original_topic is None else original_topic
        self.original_kafka_partition = (partition if original_kafka_partition is None
                                         else original_kafka_partition)
        self.original_kafka_offset = (kafka_offset if original_kafka_offset is None
                                      else original_kafka_offset)

    def _copy(self):
        clone = super()._copy()
        clone.kafka_offset, clone.timestamp_type = self.kafka_offset, self.timestamp_type
        clone.original_topic = self.original_topic
        clone.original_kafka_partition = self.original_kafka_partition
        clone.original_kafka_offset = self.original_kafka_offset
        return clone


class RecordMetadata(NamedTuple):
    """Where a source record was written (the producer's acknowledgement)."""
    topic: str
    partition: int
    offset: int
    timestamp: int | None


class SourceRecordBatch:
    """A josefk extension of Connect's API: a poll's records as columns, for a source whose
    keys and values are already bytes (or strings). A task's ``poll`` may return one instead
    of a list of SourceRecords; the worker then produces its rows without making a
    SourceRecord of each, unless a transformation needs them (or a converter fails on a row):
    then ``record(i)`` makes row ``i``'s.

    - ``topic``: every row's topic, or a list of one per row;
    - ``values``: one per row, in ``value_schema``; ``keys``: likewise in ``key_schema``, or
      None when no row has a key;
    - ``partitions``, ``timestamps``: None (the producer chooses; no timestamp) or one per
      row (None in a row: likewise);
    - ``headers``: None (no row has any) or one per row: None or ``(key, value)`` pairs,
      each value in ``header_schema``;
    - ``offsets``: ``(source_partition, source_offset)`` pairs, the last offset of each source
      partition the batch read. They are committed once every row of the batch is written
      (or dropped): the batch is the unit of acknowledgement; a row's SourceRecord has no
      source partition or offset of its own.

    A task that wants to know where each row was written overrides
    ``SourceTask.commit_rows`` (the batch form of ``commit_record``)."""

    __slots__ = ("topic", "values", "keys", "partitions", "timestamps", "headers",
                 "key_schema", "value_schema", "header_schema", "offsets")

    def __init__(self, topic: str | list[str], values: list, keys: list | None = None, *,
                 partitions: list[int | None] | None = None,
                 timestamps: list[int | None] | None = None,
                 headers: list[list[tuple[str, Any]] | None] | None = None,
                 key_schema: Schema | None = Schema.OPTIONAL_BYTES_SCHEMA,
                 value_schema: Schema | None = Schema.OPTIONAL_BYTES_SCHEMA,
                 header_schema: Schema | None = Schema.OPTIONAL_BYTES_SCHEMA,
                 offsets: list[tuple[dict, dict]] = ()):
        self.topic, self.values, self.keys = topic, values, keys
        self.partitions, self.timestamps, self.headers = partitions, timestamps, headers
        self.key_schema, self.value_schema = key_schema, value_schema
        self.header_schema = header_schema
        self.offsets = list(offsets)
        count = len(values)
        for name in ("keys", "partitions", "timestamps", "headers"):
            column = getattr(self, name)
            if column is not None and len(column) != count:
                raise ValueError(f"SourceRecordBatch: {len(column)} {name} for {count} values")
        if not isinstance(topic, str) and len(topic) != count:
            raise ValueError(f"SourceRecordBatch: {len(topic)} topics for {count} values")

    def __len__(self) -> int:
        return len(self.values)

    def topic_of(self, i: int) -> str:
        return self.topic if type(self.topic) is str else self.topic[i]

    def record(self, i: int) -> SourceRecord:
        """Row ``i`` as a SourceRecord (without source partition and offset)."""
        headers = self.headers[i] if self.headers is not None else None
        return SourceRecord(
            None, None, self.topic_of(i),
            self.partitions[i] if self.partitions is not None else None,
            self.key_schema, self.keys[i] if self.keys is not None else None,
            self.value_schema, self.values[i],
            self.timestamps[i] if self.timestamps is not None else None,
            None if headers is None else Headers([(k, self.header_schema, v)
                                                  for k, v in headers]))
