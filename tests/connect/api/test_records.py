import pytest

from josefk.connect.api import Header, Headers, Schema, SinkRecord, SourceRecord, SourceRecordBatch


def test_new_record_copies_with_changes_and_its_own_headers():
    r = SourceRecord({"file": "a"}, {"pos": 3}, "t", 0, None, None, Schema.STRING_SCHEMA, "v",
                     timestamp=5, headers=Headers().add("h", "1"))
    c = r.new_record(topic="u", value="w")
    assert type(c) is SourceRecord and (c.topic, c.value, c.kafka_partition) == ("u", "w", 0)
    assert (c.source_partition, c.source_offset, c.timestamp) == ({"file": "a"}, {"pos": 3}, 5)
    c.headers.add("x", "2")
    assert len(r.headers) == 1 and len(c.headers) == 2
    assert r.new_record(key=None) == r  # unchanged fields keep their values


def test_sink_records_keep_where_they_were_read_through_transforms():
    r = SinkRecord("orders", 2, None, b"k", None, b"v", 41)
    moved = r.new_record(topic="orders-copy", kafka_partition=0)
    assert (moved.topic, moved.kafka_partition, moved.kafka_offset) == ("orders-copy", 0, 41)
    assert (moved.original_topic, moved.original_kafka_partition,
            moved.original_kafka_offset) == ("orders", 2, 41)


def test_headers_keep_order_and_repeats():
    h = Headers().add("a", 1).add("b", 2).add("a", 3)
    assert [x.value for x in h.all_with_name("a")] == [1, 3]
    assert h.last_with_name("a").value == 3 and h.last_with_name("z") is None
    assert [x.key for x in h.copy().retain_latest()] == ["b", "a"]
    assert [x.key for x in h.remove("a")] == ["b"]


def test_a_batch_row_as_a_record_and_columns_of_the_wrong_length_refused():
    batch = SourceRecordBatch(["a", "b"], [b"1", b"2"], [None, b"k"], partitions=[None, 3],
                              timestamps=[None, 7], headers=[None, [("h", b"v")]],
                              offsets=[({"p": 0}, {"o": 1})])
    assert len(batch) == 2 and batch.topic_of(1) == "b"
    record = batch.record(1)
    assert (record.topic, record.kafka_partition, record.key, record.value, record.timestamp) \
        == ("b", 3, b"k", b"2", 7)
    assert record.key_schema == record.value_schema == Schema.OPTIONAL_BYTES_SCHEMA
    assert list(record.headers) == [Header("h", Schema.OPTIONAL_BYTES_SCHEMA, b"v")]
    assert record.source_partition is None and batch.record(0)._headers is None
    with pytest.raises(ValueError, match="1 keys for 2 values"):
        SourceRecordBatch("t", [b"1", b"2"], [b"k"])
    with pytest.raises(ValueError, match="3 topics for 2 values"):
        SourceRecordBatch(["a", "b", "c"], [b"1", b"2"])
