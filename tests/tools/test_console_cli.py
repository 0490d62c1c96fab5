"""tools/console_cli.py: the console producer's line parsing and the console consumer's formatter."""
import json

import pytest

from josefk.tools.console_cli import Formatter, LineReader
from josefk.wire.records import Record


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
