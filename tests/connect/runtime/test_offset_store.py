import json

import pytest

from josefk.connect.api.config import ConfigException
from josefk.connect.runtime.offset_store import (FileOffsetStore, OffsetState, offset_key,
                                                 offset_value, parse_offset_key)


def test_the_offsets_topic_layout_is_compact_json_as_kafka_writes_it():
    assert offset_key("file-src", {"filename": "/tmp/a"}) == b'["file-src",{"filename":"/tmp/a"}]'
    assert offset_value({"position": 42}) == b'{"position":42}'
    assert offset_value(None) is None
    assert parse_offset_key(b'["c",{"p":1}]') == ("c", {"p": 1})
    assert parse_offset_key(b'{"not":"connect"}') is None


def test_offsets_survive_a_new_store_on_the_same_file(tmp_path):
    path = tmp_path / "offsets.json"
    store = FileOffsetStore(str(path))
    store.put("a", [({"f": "x"}, {"position": 1}), ({"f": "y"}, {"position": 2})])
    store.put("b", [({"f": "x"}, {"position": 9})])
    store.put("a", [({"f": "y"}, None)])
    again = FileOffsetStore(str(path))
    assert again.get("a", [{"f": "x"}, {"f": "y"}]) == [{"position": 1}, None]
    assert again.all("b") == [({"f": "x"}, {"position": 9})]
    assert json.loads(path.read_text()) == {'["a",{"f":"x"}]': {"position": 1},
                                            '["b",{"f":"x"}]': {"position": 9}}
    assert again.records("a", [({"f": "x"}, None)]) == [(b'["a",{"f":"x"}]', None)]
    assert again.topic is None


@pytest.mark.parametrize("content", ["[1,2]", "\xac\xed\x00\x05sr"])  # Kafka's is Java's
def test_a_file_that_is_not_an_offsets_file_is_refused_in_one_line(tmp_path, content):
    path = tmp_path / "offsets.json"
    path.write_text(content)
    with pytest.raises(ConfigException, match=f"Invalid value {path} for configuration "
                       f"offset.storage.file.filename: not an offsets file"):
        FileOffsetStore(str(path))


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
