"""``__remote_log_metadata``'s records as Kafka's RemoteLogMetadataSerde writes them (fixed
vectors built field by field from Kafka's JSON schemas), its partitioner, and the folding of a
partition's events into its remote segments."""
import uuid

import pytest

from josefk.tiered import metadata as md
from josefk.wire.types import DecodeError

TOPIC_ID = uuid.UUID("7b3ab4cf-6a49-4b5c-8fd1-1b2f53c1b8a2")
SEGMENT_ID = uuid.UUID("00000000-0000-0001-0000-000000000002")


class _Leader:
    topic, partition, topic_id, leader_epoch = "t", 3, TOPIC_ID, 5


def _segment(**kw):
    values = dict(segment_id=SEGMENT_ID, start_offset=0, end_offset=99,
                  max_timestamp_ms=1000, size=4096, leader_epochs=[(0, 0), (2, 50)],
                  state=md.COPY_SEGMENT_STARTED, txn_index_empty=True)
    values.update(kw)
    return md.RemoteSegment(**values)


SEGMENT_ID_ENTRY = (
    "02" "74"                                   # Name: compact string "t"
    + TOPIC_ID.hex + "00000003"                 # Id, Partition
    + "00"                                      # TopicIdPartitionEntry's tagged fields
    + SEGMENT_ID.hex + "00")                    # Id, RemoteLogSegmentIdEntry's tagged fields


def test_segment_metadata_record_vector():
    record, msg = md.segment_metadata(_Leader, 1, _segment(), now_ms=2000)
    want = bytes.fromhex(
        "00" "00"                               # api key 0, version 0 (unsigned varints)
        + SEGMENT_ID_ENTRY
        + "0000000000000000" "0000000000000063"  # StartOffset 0, EndOffset 99
        + "00000001"                            # BrokerId
        + "00000000000003e8" "00000000000007d0"  # MaxTimestampMs, EventTimestampMs
        + "03" "00000000" "0000000000000000" "00" "00000002" "0000000000000032" "00"
        + "00001000"                            # SegmentSizeInBytes
        + "00"                                  # CustomMetadata: null
        + "00"                                  # RemoteLogSegmentState COPY_SEGMENT_STARTED
        + "01" "00" "01" "01")                  # tagged: TxnIndexEmpty (tag 0) = true
    assert md.serialize(record, msg) == want
    got_record, version, got = md.deserialize(want)
    assert (got_record, version) == (md.SEGMENT_METADATA, 0)
    assert got.remote_log_segment_id.topic_id_partition.id == TOPIC_ID
    assert [(e.leader_epoch, e.offset) for e in got.segment_leader_epochs] == [(0, 0), (2, 50)]
    assert got.txn_index_empty is True


def test_segment_update_record_vector():
    record, msg = md.segment_update(_Leader, 2, _segment(), md.COPY_SEGMENT_FINISHED, 3000)
    want = bytes.fromhex(
        "01" "00" + SEGMENT_ID_ENTRY
        + "00000002" "0000000000000bb8"         # BrokerId, EventTimestampMs
        + "00" "01"                             # CustomMetadata null, COPY_SEGMENT_FINISHED
        + "00")                                 # no tagged fields at version 0
    assert md.serialize(record, msg) == want
    # version 1 carries the leader epoch and end offset as tagged fields 0 and 1
    v1 = md.serialize(record, msg, version=1)
    assert v1.startswith(bytes.fromhex("0101")) and v1.endswith(bytes.fromhex(
        "02" "00" "04" "00000005" "01" "08" "0000000000000063"))
    assert md.deserialize(v1)[2].end_offset == 99


def test_partition_delete_record_vector():
    s = md.PARTITION_DELETE.Struct
    msg = s(topic_id_partition=s.TopicIdPartitionEntry(name="t", id=TOPIC_ID, partition=3),
            broker_id=1, event_timestamp_ms=7, remote_partition_delete_state=2)
    want = bytes.fromhex("02" "00" "02" "74" + TOPIC_ID.hex + "00000003" "00"
                         + "00000001" "0000000000000007" "02" "00")
    assert md.serialize(md.PARTITION_DELETE, msg) == want
    assert md.deserialize(want)[2].remote_partition_delete_state == 2


def test_unknown_record_type_or_version_is_refused():
    with pytest.raises(DecodeError):
        md.deserialize(bytes.fromhex("0700"))
    with pytest.raises(DecodeError):
        md.deserialize(bytes.fromhex("0005"))
    for truncated in (b"", b"\x00", bytes.fromhex("0000027400")):
        with pytest.raises(DecodeError):
            md.deserialize(truncated)


def test_metadata_partition_is_kafkas():
    # Kafka: toPositive(murmur2(int bytes of Objects.hash(lsb, msb, partition))) % partitions
    tid = uuid.UUID(int=0)
    h = 31 * (31 * (31 * 1 + 0) + 0) + 7  # Long.hashCode(0) == 0
    from josefk.wire.hashing import murmur2
    want = (murmur2(h.to_bytes(4, "big")) & 0x7FFFFFFF) % 50
    assert md.metadata_partition(tid, 7, 50) == want
    spread = {md.metadata_partition(uuid.uuid4(), p, 50) for p in range(200)}
    assert len(spread) > 30


def test_uuid_text_is_kafkas_base64():
    assert md.uuid_text(uuid.UUID(int=0)) == "AAAAAAAAAAAAAAAAAAAAAA"


def _apply(segs, event):
    record, msg = event
    segs.apply(*md.deserialize(md.serialize(record, msg))[::2])


def test_partition_segments_follow_the_states():
    segs = md.PartitionSegments()
    a = _segment(segment_id=uuid.uuid4(), start_offset=0, end_offset=99)
    b = _segment(segment_id=uuid.uuid4(), start_offset=120, end_offset=199, size=100)
    for seg in (a, b):
        _apply(segs, md.segment_metadata(_Leader, 1, seg, 0))
    assert segs.copied() == [] and len(segs.unfinished()) == 2
    for seg in (a, b):
        _apply(segs, md.segment_update(_Leader, 1, seg, md.COPY_SEGMENT_FINISHED, 0))
    assert [s.start_offset for s in segs.copied()] == [0, 120]
    assert (segs.start_offset, segs.end_offset, segs.size) == (0, 199, 4196)
    assert segs.segment_for(50).start_offset == 0
    assert segs.segment_for(110).start_offset == 120  # a hole reads from the next segment
    assert segs.segment_for(200) is None
    # an out-of-order state is ignored, as Kafka's cache refuses it
    _apply(segs, md.segment_update(_Leader, 1, a, md.DELETE_SEGMENT_FINISHED, 0))
    assert segs.start_offset == 0
    _apply(segs, md.segment_update(_Leader, 1, a, md.DELETE_SEGMENT_STARTED, 0))
    assert segs.start_offset == 120 and [s.state for s in segs.unfinished()] == [2]
    _apply(segs, md.segment_update(_Leader, 1, a, md.DELETE_SEGMENT_FINISHED, 0))
    assert segs.unfinished() == [] and segs.start_offset == 120
