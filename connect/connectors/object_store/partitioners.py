"""Confluent's storage partitioners (``partitioner.class``): where in the store a record's
file goes, below ``<topics.dir>/<topic>/``. DefaultPartitioner: ``partition=<p>``;
FieldPartitioner: ``<field>=<value>`` per ``partition.field.name``; TimeBasedPartitioner (and
its Hourly and Daily presets): the record's time, from ``timestamp.extractor``, floored to
``partition.duration.ms`` in ``timezone`` and written with ``path.format`` (a Joda-Time
pattern, as Confluent's)."""
from __future__ import annotations

import datetime
import re
import time
import zoneinfo

from josefk.connect.api.config import ConfigException
from josefk.connect.api.errors import ConnectException
from josefk.connect.api.records import SinkRecord
from josefk.connect.api.schema import Struct


class Partitioner:
    def __init__(self, props: dict):
        self.delim = props["directory.delim"]

    def encode(self, record: SinkRecord) -> str:
        raise NotImplementedError

    def path(self, topic: str, encoded: str) -> str:
        return f"{topic}{self.delim}{encoded}"


class DefaultPartitioner(Partitioner):
    def __init__(self, props):
        super().__init__(props)
        self._encoded: dict[int, str] = {}

    def encode(self, record):
        encoded = self._encoded.get(record.kafka_partition)
        if encoded is None:
            encoded = self._encoded[record.kafka_partition] = \
                self.encode_partition(record.kafka_partition)
        return encoded

    @staticmethod
    def encode_partition(partition: int) -> str:
        return f"partition={partition}"


def field_value(record: SinkRecord, name: str, setting: str):
    """A top-level field of the record's value (a Struct, or a map without schema)."""
    value = record.value
    if isinstance(value, Struct):
        field = value.schema.field(name)
        if field is not None:
            found = value.get(field)
            if found is not None:
                return found
    elif isinstance(value, dict) and value.get(name) is not None:
        return value[name]
    raise ConnectException(f"{setting} {name!r} is not a field of the value of record "
                           f"{record.topic}-{record.kafka_partition}@{record.kafka_offset}")


class FieldPartitioner(Partitioner):
    def __init__(self, props):
        super().__init__(props)
        self.fields = props["partition.field.name"]
        if not self.fields:
            raise ConnectException("FieldPartitioner needs partition.field.name")

    def encode(self, record):
        parts = []
        for name in self.fields:
            value = field_value(record, name, "partition.field.name")
            if isinstance(value, (dict, list, Struct, bytes)):
                raise ConnectException(f"partition.field.name {name!r} of record "
                                       f"{record.topic}-{record.kafka_partition}"
                                       f"@{record.kafka_offset} is not a primitive value")
            parts.append(f"{name}={str(value).lower() if isinstance(value, bool) else value}")
        return self.delim.join(parts)


# ---- time ------------------------------------------------------------------------------

class RecordTimestampExtractor:
    """The Kafka record's timestamp."""

    def __init__(self, props):
        pass

    def extract(self, record: SinkRecord) -> int:
        if record.timestamp is None or record.timestamp < 0:
            raise ConnectException(f"record {record.topic}-{record.kafka_partition}"
                                   f"@{record.kafka_offset} has no timestamp for "
                                   f"timestamp.extractor=Record")
        return record.timestamp


class WallclockTimestampExtractor:
    """The time the record is written."""

    def __init__(self, props):
        pass

    def extract(self, record: SinkRecord) -> int:
        return int(time.time() * 1000)


class RecordFieldTimestampExtractor:
    """A field of the value (``timestamp.field``): milliseconds, a Timestamp, or an ISO-8601
    string."""

    def __init__(self, props):
        self.field = props["timestamp.field"]

    def extract(self, record):
        value = field_value(record, self.field, "timestamp.field")
        if isinstance(value, datetime.datetime):
            return int(value.timestamp() * 1000)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, str):
            try:
                parsed = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
            except ValueError:
                pass
            else:
                if parsed.tzinfo is None:
                    parsed = parsed.replace(tzinfo=datetime.timezone.utc)
                return int(parsed.timestamp() * 1000)
        raise ConnectException(f"timestamp.field {self.field!r} of record {record.topic}-"
                               f"{record.kafka_partition}@{record.kafka_offset} is not a "
                               f"timestamp: {value!r}")


EXTRACTORS = {"Record": RecordTimestampExtractor, "Wallclock": WallclockTimestampExtractor,
              "RecordField": RecordFieldTimestampExtractor}
for _cls in list(EXTRACTORS.values()):
    EXTRACTORS[f"io.confluent.connect.storage.partitioner.TimeBasedPartitioner$"
               f"{_cls.__name__}"] = _cls

# Joda-Time pattern letters Confluent's path.format uses, as strftime-like renderers
_JODA = {
    "y": lambda t, n: _year(t, n), "Y": lambda t, n: _year(t, n),
    "x": lambda t, n: f"{t.isocalendar()[0] % 100:02d}" if n == 2
    else f"{t.isocalendar()[0]:0{n}d}",
    "M": lambda t, n: (t.strftime("%B") if n >= 4 else t.strftime("%b") if n == 3
                       else f"{t.month:0{n}d}"),
    "d": lambda t, n: f"{t.day:0{n}d}", "D": lambda t, n: f"{t.timetuple().tm_yday:0{n}d}",
    "H": lambda t, n: f"{t.hour:0{n}d}", "k": lambda t, n: f"{t.hour or 24:0{n}d}",
    "h": lambda t, n: f"{(t.hour % 12) or 12:0{n}d}", "K": lambda t, n: f"{t.hour % 12:0{n}d}",
    "m": lambda t, n: f"{t.minute:0{n}d}", "s": lambda t, n: f"{t.second:0{n}d}",
    "S": lambda t, n: f"{t.microsecond // 1000:03d}"[:n].ljust(n, "0"),
    "E": lambda t, n: t.strftime("%A") if n >= 4 else t.strftime("%a"),
    "e": lambda t, n: f"{t.isoweekday():0{n}d}", "a": lambda t, n: t.strftime("%p"),
    "w": lambda t, n: f"{t.isocalendar()[1]:0{n}d}",
}
_TOKEN = re.compile(r"'(?:[^']|'')*'|([A-Za-z])\1*|[^A-Za-z']+")


def _year(t: datetime.datetime, n: int) -> str:
    return f"{t.year % 100:02d}" if n == 2 else f"{t.year:0{n}d}"


def compile_path_format(pattern: str):
    """A Joda-Time pattern (``'year'=YYYY/'month'=MM``) as a function of a datetime."""
    parts = []
    for match in _TOKEN.finditer(pattern):
        text = match.group(0)
        if text.startswith("'"):
            literal = text[1:-1].replace("''", "'") if len(text) > 2 else "'"
            parts.append(lambda t, s=literal: s)
        elif match.group(1):
            render = _JODA.get(text[0])
            if render is None:
                raise ConfigException("path.format", pattern,
                                      f"pattern letter {text[0]!r} is not supported")
            parts.append(lambda t, r=render, n=len(text): r(t, n))
        else:
            parts.append(lambda t, s=text: s)
    return lambda t: "".join(p(t) for p in parts)


class TimeBasedPartitioner(Partitioner):
    PATH_FORMAT: str | None = None
    DURATION_MS: int | None = None

    def __init__(self, props):
        super().__init__(props)
        path_format = self.PATH_FORMAT or props["path.format"]
        self.duration = self.DURATION_MS or props["partition.duration.ms"]
        # Confluent's checks and messages
        if not path_format:
            raise ConfigException("path.format", path_format, "Path format cannot be empty.")
        if self.duration <= 0:
            raise ConfigException("partition.duration.ms", self.duration,
                                  "Partition duration needs to be a positive.")
        if not props["locale"]:
            raise ConfigException("locale", props["locale"], "Locale cannot be empty.")
        if not props["timezone"]:
            raise ConfigException("timezone", props["timezone"], "Timezone cannot be empty.")
        try:
            self.zone = zoneinfo.ZoneInfo(props["timezone"])
        except (zoneinfo.ZoneInfoNotFoundError, ValueError) as e:
            raise ConfigException("timezone", props["timezone"],
                                  "The datetime zone id is not recognised") from e
        name = props["timestamp.extractor"]
        if name not in EXTRACTORS:
            raise ConfigException("timestamp.extractor", name,
                                  "not one of Record, RecordField, Wallclock")
        self.extractor = EXTRACTORS[name](props)
        self.render = compile_path_format(path_format)

    def bucket(self, timestamp_ms: int) -> datetime.datetime:
        """The start of the ``partition.duration.ms`` window holding the time, in the zone
        (windows aligned on the zone's local midnight of the epoch, as Confluent's)."""
        local = datetime.datetime.fromtimestamp(timestamp_ms / 1000, self.zone)
        offset_ms = int(local.utcoffset().total_seconds() * 1000)
        start = (timestamp_ms + offset_ms) // self.duration * self.duration - offset_ms
        return datetime.datetime.fromtimestamp(start / 1000, self.zone)

    def encode(self, record):
        return self.render(self.bucket(self.extractor.extract(record)))


class HourlyPartitioner(TimeBasedPartitioner):
    PATH_FORMAT = "'year'=YYYY/'month'=MM/'day'=dd/'hour'=HH"
    DURATION_MS = 3_600_000


class DailyPartitioner(TimeBasedPartitioner):
    PATH_FORMAT = "'year'=YYYY/'month'=MM/'day'=dd"
    DURATION_MS = 86_400_000


PARTITIONERS = {f"io.confluent.connect.storage.partitioner.{cls.__name__}": cls
                for cls in (DefaultPartitioner, FieldPartitioner, TimeBasedPartitioner,
                            HourlyPartitioner, DailyPartitioner)}
PARTITIONERS.update({name.rsplit(".", 1)[1]: cls for name, cls in list(PARTITIONERS.items())})
