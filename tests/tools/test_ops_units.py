"""Unit tests of the operator tools' pure parts: kafka-configs.sh's --add-config syntax, the
console producer's line parsing, the console consumer's formatter, broker config validation and
the metrics' histogram buckets."""
from __future__ import annotations

import json

import pytest

from josefk.tools.console_cli import Formatter, LineReader
from josefk.broker.dynamic import validate_broker_configs
from josefk.broker.control.metadata import MetadataError
from josefk.broker.metrics import BUCKETS_MS, Histogram
from josefk.tools.ops_cli import parse_add_config
from josefk.wire import errors
from josefk.wire.records import Record


def test_add_config_syntax():
    assert parse_add_config("a=1,b=[x,y],c=2") == {"a": "1", "b": "x,y", "c": "2"}
    assert parse_add_config("") == {}
    with pytest.raises(ValueError):
        parse_add_config("novalue")


def test_line_reader_keys_headers_and_null_marker():
    read = LineReader({"parse.key": "true", "key.separator": ":", "parse.headers": "true",
                       "headers.delimiter": "|", "null.marker": "NULL"})
    assert read("h1:a,h2:NULL|k:v") == (b"k", b"v", [("h1", b"a"), ("h2", None)])
    assert read("|NULL:v") == (None, b"v", [])
    assert LineReader({})("plain\tline") == (None, b"plain\tline", [])
    with pytest.raises(ValueError):
        LineReader({"parse.key": "true"})("no separator")


def test_formatter_default_and_json():
    r = Record(7, 1700000000000, b"k", b"v", [("h", b"x")])
    fmt = Formatter("default", {"print.key": "true", "print.offset": "true",
                                "print.headers": "true", "print.timestamp": "true",
                                "print.partition": "true"}, "t")
    assert fmt(2, r, "CreateTime") == "CreateTime:1700000000000\tPartition:2\tOffset:7\th:x\tk\tv\n"
    assert Formatter("default", {}, "t")(0, Record(0, 0, None, None), "CreateTime") == "null\n"
    out = json.loads(Formatter("json", {}, "t")(1, r, "LogAppendTime"))
    assert out == {"topic": "t", "partition": 1, "offset": 7, "timestamp": 1700000000000,
                   "timestampType": "LogAppendTime", "headers": {"h": "x"}, "key": "k",
                   "value": "v"}


def test_broker_config_validation_names_the_key():
    from josefk.broker.config import BrokerConfig

    defaults = BrokerConfig({}).topic_defaults()
    validate_broker_configs({"log.retention.ms": "1000", "log.cleanup.policy": "compact",
                             "log.cleaner.threads": "2", "message.max.bytes": "100"}, defaults,
                            cleaner_threads=1)
    for bad in ({"log.dirs": "/x"}, {"log.retention.ms": "soon"},
                {"log.cleanup.policy": "shred"}, {"log.cleaner.threads": "many"},
                {"log.retention.hours": None}, {"log.cleaner.threads": "0"},
                {"log.cleaner.threads": "3"}):
        with pytest.raises(MetadataError) as e:
            validate_broker_configs(bad, defaults, cleaner_threads=1)
        assert e.value.code == errors.INVALID_CONFIG and next(iter(bad)) in e.value.message


def test_cleaner_threads_move_within_half_and_double():
    from josefk.broker.config import BrokerConfig

    defaults = BrokerConfig({}).topic_defaults()
    for ok in ("2", "4", "8"):
        validate_broker_configs({"log.cleaner.threads": ok}, defaults, cleaner_threads=4)
    for bad, why in (("1", "less than half the current value 4"),
                     ("9", "more than double the current value 4")):
        with pytest.raises(MetadataError) as e:
            validate_broker_configs({"log.cleaner.threads": bad}, defaults, cleaner_threads=4)
        assert why in e.value.message


def test_histogram_buckets_are_cumulative():
    h = Histogram()
    for ms in (0.1, 0.7, 3, 3, 20000):
        h.observe(ms)
    buckets = dict(h.buckets())
    assert buckets["0.5"] == 1 and buckets["1"] == 2 and buckets["5"] == 4
    assert buckets["10000"] == 4 and buckets["+Inf"] == 5
    assert len(buckets) == len(BUCKETS_MS) and h.sum == pytest.approx(20006.8)


def test_throttled_replicas_lists_are_validated_as_kafka_does():
    from josefk.broker.config import BrokerConfig
    from josefk.broker.configs import validate_topic_configs

    defaults = BrokerConfig({}).topic_defaults()
    for ok in ("*", "", "0:1,1:2", " 0:1 , 3:3"):
        validate_topic_configs({"leader.replication.throttled.replicas": ok}, defaults)
    for bad in ("all", "0:x", "0-1", "*,0:1"):
        with pytest.raises(MetadataError) as e:
            validate_topic_configs({"follower.replication.throttled.replicas": bad}, defaults)
        assert e.value.code == errors.INVALID_CONFIG
        assert "must be the literal '*' or a list of replicas" in e.value.message
