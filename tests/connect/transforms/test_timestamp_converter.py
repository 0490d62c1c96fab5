import datetime

import pytest

from josefk.connect.api import ConfigException, ConnectException, DataException, Schema
from josefk.connect.api import SchemaBuilder, Struct
from josefk.connect.api.schema import Date, Time, Timestamp
from josefk.connect.transforms.timestamp_converter import TimestampConverter

from tests.connect.transforms.records import configured, source

UTC = datetime.timezone.utc
MILLIS = 1_700_000_000_123
AS_DATETIME = datetime.datetime(2023, 11, 14, 22, 13, 20, 123000, tzinfo=UTC)
AS_DATE = datetime.date(2023, 11, 14)
AS_TIME = datetime.time(22, 13, 20, 123000)
FORMAT = "yyyy-MM-dd'T'HH:mm:ss.SSSZ"
AS_STRING = "2023-11-14T22:13:20.123+0000"
SCHEMAS = {"Timestamp": Timestamp.SCHEMA, "string": Schema.STRING_SCHEMA,
           "unix": Schema.INT64_SCHEMA}


def converter(target, side=TimestampConverter.Value, **settings):
    return configured(side, target_type=target, **settings)


@pytest.mark.parametrize("target,expected", [
    ("Timestamp", AS_DATETIME), ("Date", AS_DATE), ("Time", AS_TIME), ("unix", MILLIS),
    ("string", AS_STRING)])
@pytest.mark.parametrize("given", [AS_DATETIME, MILLIS, AS_STRING])
def test_schemaless_whole_value(given, target, expected):
    assert converter(target, format=FORMAT).apply(source(given)).value == expected


@pytest.mark.parametrize("schema,given", [
    (Timestamp.SCHEMA, AS_DATETIME), (Schema.INT64_SCHEMA, MILLIS),
    (Schema.STRING_SCHEMA, AS_STRING)])
@pytest.mark.parametrize("target,expected", [
    ("Timestamp", AS_DATETIME), ("unix", MILLIS), ("string", AS_STRING)])
def test_with_schema_whole_value(schema, given, target, expected):
    out = converter(target, format=FORMAT).apply(source(given, schema))
    assert out.value == expected
    assert out.value_schema == SCHEMAS[target]


def test_date_and_time_in_and_out():
    date_millis = 1_699_920_000_000
    assert converter("unix").apply(source(AS_DATE, Date.SCHEMA)).value == date_millis
    assert converter("Timestamp").apply(source(AS_TIME, Time.SCHEMA)).value == \
        datetime.datetime(1970, 1, 1, 22, 13, 20, 123000, tzinfo=UTC)
    assert converter("Date").apply(source(-1)).value == datetime.date(1969, 12, 31)


@pytest.mark.parametrize("precision,unix,millis", [
    ("seconds", 1_700_000_000, 1_700_000_000_000), ("milliseconds", MILLIS, MILLIS),
    ("microseconds", MILLIS * 1000 + 999, MILLIS), ("nanoseconds", MILLIS * 1_000_000, MILLIS),
    ("microseconds", -1999, -1)])
def test_unix_precision(precision, unix, millis):
    as_timestamp = converter("Timestamp", unix_precision=precision).apply(source(unix)).value
    assert as_timestamp == datetime.datetime(1970, 1, 1, tzinfo=UTC) + datetime.timedelta(
        milliseconds=millis)
    back = converter("unix", unix_precision=precision).apply(source(as_timestamp)).value
    assert back == (unix if precision != "microseconds" else millis * 1000)


def test_field_schemaless_and_with_schema():
    out = converter("string", field="ts", format="yyyy-MM-dd").apply(
        source({"ts": MILLIS, "other": "x"}))
    assert out.value == {"ts": "2023-11-14", "other": "x"}
    schema = (SchemaBuilder.struct().name("row").field("ts", Timestamp.builder().optional())
              .field("other", Schema.STRING_SCHEMA).build())
    transform = converter("unix", field="ts")
    out = transform.apply(source(Struct(schema).put("ts", AS_DATETIME).put("other", "x"), schema))
    assert out.value_schema.name == "row"
    assert out.value_schema.field("ts").schema == Schema.OPTIONAL_INT64_SCHEMA
    assert out.value.get("ts") == MILLIS and out.value.get("other") == "x"
    again = transform.apply(source(Struct(schema).put("other", "y"), schema))
    assert again.value_schema is out.value_schema and again.value.get("ts") is None


def test_key_side_and_nulls():
    out = converter("unix", TimestampConverter.Key).apply(source("v", key=AS_DATETIME))
    assert out.key == MILLIS and out.value == "v"
    assert converter("unix").apply(source(None)).value is None
    assert converter("unix", field="ts").apply(source(None)).value is None
    out = converter("unix").apply(source(None, Timestamp.builder().optional().build()))
    assert out.value is None and out.value_schema == Schema.OPTIONAL_INT64_SCHEMA


def test_data_errors():
    with pytest.raises(DataException, match=r"^Could not parse timestamp: value \(nope\) does not "
                                            r"match pattern \(yyyy-MM-dd\)$"):
        converter("unix", format="yyyy-MM-dd").apply(source("nope"))
    with pytest.raises(DataException, match="^TimestampConverter does not support float objects "
                                            "as timestamps$"):
        converter("unix").apply(source(1.5))
    with pytest.raises(DataException, match="^Expected Unix timestamp to be a Long, but found "
                                            "str$"):
        converter("string", format="yyyy").apply(source("2020", Schema.INT64_SCHEMA))
    with pytest.raises(DataException, match="^Expected string timestamp to be a String, but found "
                                            "int$"):
        converter("unix", format="yyyy").apply(source(5, Schema.STRING_SCHEMA))
    with pytest.raises(DataException, match="^Expected Timestamp to be a datetime.datetime, but "
                                            "found int$"):
        converter("unix").apply(source(5, Timestamp.SCHEMA))
    with pytest.raises(DataException, match="^TimestampConverter requires format option to "
                                            "parse string timestamps$"):
        converter("unix").apply(source("2024-01-01"))
    with pytest.raises(ConnectException, match=r"^Schema Schema\{INT32\} does not correspond to "
                                               r"a known timestamp type format$"):
        converter("unix").apply(source(5, Schema.INT32_SCHEMA))
    with pytest.raises(DataException, match=r"\[converting timestamp formats\], found: str$"):
        converter("unix", field="ts").apply(source("x", Schema.STRING_SCHEMA))


def test_configuration_errors():
    with pytest.raises(ConfigException, match='^Missing required configuration "target.type"'):
        configured(TimestampConverter.Value)
    with pytest.raises(ConfigException, match="^Invalid value epoch for configuration "
                                              "target.type: String must be one of: string, unix, "
                                              "Date, Time, Timestamp$"):
        converter("epoch")
    with pytest.raises(ConfigException, match="^TimestampConverter requires format option to be "
                                              "specified when using string timestamps$"):
        converter("string")
    with pytest.raises(ConfigException, match="^TimestampConverter requires a SimpleDateFormat-"
                                              "compatible pattern for string timestamps: "
                                              "bad-qq-pattern"):
        converter("string", format="bad-qq-pattern")
    with pytest.raises(ConfigException, match="unix.precision: String must be one of"):
        converter("unix", unix_precision="minutes")
