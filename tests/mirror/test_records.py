import pytest

from josefk.mirror.records import Checkpoint, FormatError, Heartbeat, OffsetSync


def test_offset_sync_bytes():
    sync = OffsetSync("topic1", 2, 3, 4)
    assert sync.record_key().hex() == "0006" + b"topic1".hex() + "00000002"
    assert sync.record_value().hex() == "0000000000000003" "0000000000000004"
    assert OffsetSync.from_record(sync.record_key(), sync.record_value()) == sync


def test_checkpoint_bytes_with_version_header():
    checkpoint = Checkpoint("group1", "a.t", 0, 10, 11, "meta")
    assert checkpoint.record_key().hex() == ("0006" + b"group1".hex() + "0003" + b"a.t".hex()
                                             + "00000000")
    assert checkpoint.record_value().hex() == ("0000" "000000000000000a" "000000000000000b"
                                               "0004" + b"meta".hex())
    assert Checkpoint.from_record(checkpoint.record_key(), checkpoint.record_value()) == checkpoint
    assert checkpoint.connect_partition() == {"group": "group1", "topic": "a.t", "partition": 0}


def test_heartbeat_bytes_with_version_header():
    beat = Heartbeat("a", "b", 1234)
    assert beat.record_key().hex() == "0001" "61" "0001" "62"
    assert beat.record_value().hex() == "0000" "00000000000004d2"
    assert Heartbeat.from_record(beat.record_key(), beat.record_value()) == beat
    assert beat.connect_partition() == {"sourceClusterAlias": "a", "targetClusterAlias": "b"}


def test_strings_are_utf8_with_a_byte_length():
    assert OffsetSync("é", 0, 0, 0).record_key().hex() == "0002" "c3a9" "00000000"


@pytest.mark.parametrize("key,value,message", [
    (b"\x00\x05ab", bytes(16), "offset sync key ends after 4 bytes"),
    (None, bytes(16), "offset sync key is null"),
    (b"\x00\x01a\x00\x00\x00\x00", bytes(8), "offset sync value ends after 8 bytes"),
])
def test_bad_offset_syncs_are_one_line_errors(key, value, message):
    with pytest.raises(FormatError, match=message):
        OffsetSync.from_record(key, value)


def test_unknown_checkpoint_version():
    checkpoint = Checkpoint("g", "t", 0, 1, 1, "")
    with pytest.raises(FormatError, match="checkpoint value has version 1"):
        Checkpoint.from_record(checkpoint.record_key(), b"\x00\x01" + checkpoint.record_value()[2:])
