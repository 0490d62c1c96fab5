"""The offsets topic's records: exact bytes, and read-back whatever order a partition's keys
were written in."""
from josefk.connect.runtime.offset_store import OffsetState, offset_key, offset_value


def test_offset_records_in_kafkas_bytes():
    assert offset_key("local-file-source", {"filename": "/tmp/in.txt"}) == (
        b'["local-file-source",{"filename":"/tmp/in.txt"}]')
    assert offset_value({"position": 1234}) == b'{"position":1234}'
    assert offset_value(None) is None


def test_read_back_and_removal():
    s = OffsetState()
    s.apply(b'["c",{"db":"x","table":"t"}]', b'{"id":5}')
    s.apply(b'["c",{"table":"t","db":"x"}]', b'{"id":9}')  # the same partition
    s.apply(b'["d",{"p":1}]', b'{"o":1}')
    assert list(s.offsets["c"].values()) == [({"table": "t", "db": "x"}, {"id": 9})]
    s.apply(b'["d",{"p":1}]', None)
    assert s.offsets["d"] == {}


def test_foreign_keys_are_ignored():
    s = OffsetState()
    s.apply(b'{"not":"a pair"}', b"{}")
    s.apply(b"junk", b"{}")
    s.apply(b'["c",{"p":1}]', b"not json")
    assert s.offsets == {}
