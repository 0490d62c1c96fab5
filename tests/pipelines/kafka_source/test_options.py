"""The Python Kafka source's option parsing and offset arithmetic (no Spark, no broker)."""
from __future__ import annotations

import pytest

from josefk.pipelines.kafka_source import options as opt
from josefk.pipelines.kafka_source.options import KafkaOptionError
from josefk.pipelines.kafka_source.source import Settings, _cap, _from_json, _to_json, split

BOOT = {"kafka.bootstrap.servers": "127.0.0.1:9092"}


def test_client_config_strips_the_prefix_and_requires_bootstrap_servers():
    conf = opt.client_config({**BOOT, "kafka.client.id": "job", "subscribe": "t"})
    assert conf == {"bootstrap.servers": "127.0.0.1:9092", "client.id": "job"}
    with pytest.raises(KafkaOptionError, match="'kafka.bootstrap.servers' must be specified"):
        opt.client_config({"subscribe": "t"})
    with pytest.raises(KafkaOptionError, match="auto.offset.reset"):
        opt.client_config({**BOOT, "kafka.auto.offset.reset": "earliest"})


def test_exactly_one_strategy():
    with pytest.raises(KafkaOptionError, match="Exactly one of"):
        opt.Strategy({})
    with pytest.raises(KafkaOptionError, match="Exactly one of"):
        opt.Strategy({"subscribe": "a", "assign": '{"a": [0]}'})
    existing = {"a": [0, 1], "b": [0], "ab": [0], "__consumer_offsets": [0]}
    assert opt.Strategy({"subscribe": "a, b"}).select(existing) == [("a", 0), ("a", 1), ("b", 0)]
    assert opt.Strategy({"subscribePattern": "a.*"}).select(existing) == \
        [("a", 0), ("a", 1), ("ab", 0)]
    assigned = opt.Strategy({"assign": '{"a": [1, 5], "c": [0]}'})
    assert assigned.select(existing) == [("a", 1)]  # partitions that exist
    assert assigned.wanted_topics(existing) == ["a", "c"]


def test_offset_specs():
    assert opt.offset_spec({}, "startingOffsets", "earliest") == "earliest"
    assert opt.offset_spec({"startingOffsets": " LATEST "}, "startingOffsets", None) == "latest"
    assert opt.offset_spec({"startingOffsets": '{"t": {"0": 23, "1": -2}}'},
                           "startingOffsets", None) == {("t", 0): 23, ("t", 1): -2}
    with pytest.raises(KafkaOptionError, match="not valid JSON"):
        opt.offset_spec({"startingOffsets": '{"t": {"0": 1'}, "startingOffsets", None)
    with pytest.raises(KafkaOptionError, match="JSON object of topics"):
        opt.offset_spec({"startingOffsets": "[1]"}, "startingOffsets", None)
    with pytest.raises(KafkaOptionError, match="bad partition or offset"):
        opt.offset_spec({"endingOffsets": '{"t": {"x": 1}}'}, "endingOffsets", None)


def test_starting_timestamp_wins_over_per_partition_timestamps():
    both = {"startingTimestamp": "1000", "startingOffsetsByTimestamp": '{"t": {"0": 5}}'}
    assert opt.timestamp_spec(both) == 1000
    assert opt.timestamp_spec({"startingOffsetsByTimestamp": '{"t": {"0": 5}}'}) == {("t", 0): 5}
    assert opt.timestamp_spec({}) is None
    with pytest.raises(KafkaOptionError, match="startingTimestamp"):
        opt.timestamp_spec({"startingTimestamp": "yesterday"})


def test_ending_timestamps_are_read_like_the_starting_ones():
    both = {"endingTimestamp": "2000", "endingOffsetsByTimestamp": '{"t": {"1": 7}}',
            "startingTimestamp": "1000"}
    assert opt.timestamp_spec(both, "ending") == 2000
    assert opt.timestamp_spec({"endingOffsetsByTimestamp": '{"t": {"1": 7}}'}, "ending") == \
        {("t", 1): 7}
    assert opt.timestamp_spec({"startingTimestamp": "1000"}, "ending") is None
    with pytest.raises(KafkaOptionError, match="endingTimestamp"):
        opt.timestamp_spec({"endingTimestamp": "soon"}, "ending")
    with pytest.raises(KafkaOptionError, match="for batch queries only"):
        Settings({**BOOT, "subscribe": "t", "endingTimestamp": "5"}, streaming=True)


def test_starting_offsets_by_timestamp_strategy():
    assert opt.no_match_strategy({}) == "error"
    assert opt.no_match_strategy({"startingOffsetsByTimestampStrategy": "LATEST"}) == "latest"
    with pytest.raises(KafkaOptionError, match="'error' or 'latest'"):
        opt.no_match_strategy({"startingOffsetsByTimestampStrategy": "earliest"})


def test_trigger_delay_durations_as_spark_writes_them():
    assert opt.duration_ms({}, "maxTriggerDelay", "15m") == 900_000
    for text, ms in (("30s", 30_000), ("500ms", 500), ("2h", 7_200_000), ("250", 250),
                     ("1 min", 60_000), ("1d", 86_400_000)):
        assert opt.duration_ms({"maxTriggerDelay": text}, "maxTriggerDelay", "15m") == ms
    with pytest.raises(KafkaOptionError, match="duration"):
        opt.duration_ms({"maxTriggerDelay": "soon"}, "maxTriggerDelay", "15m")


def test_group_id_from_kafka_group_id_or_the_prefix():
    source = {**BOOT, "subscribe": "t"}
    assert Settings({**source, "kafka.group.id": "etl", "groupIdPrefix": "x"},
                    streaming=False).conf["group.id"] == "etl"
    mine = Settings({**source, "groupIdPrefix": "nightly"}, streaming=True).conf["group.id"]
    assert mine.startswith("nightly-") and len(mine) > len("nightly-")
    default = Settings(source, streaming=False).conf["group.id"]
    assert default.startswith("spark-kafka-source-") and default != \
        Settings(source, streaming=False).conf["group.id"]  # unique per query


def _sizes(ranges):
    return [(tp[1], end - start) for tp, start, end in ranges]


def test_min_partitions_splits_big_ranges_in_proportion():
    ranges = [(("t", 0), 0, 100), (("t", 1), 0, 10), (("t", 2), 5, 6)]
    assert split(ranges) == ranges == split(ranges, min_partitions=3)
    pieces = split(ranges, min_partitions=8)
    # Partitions 1 and 2 are small enough to stay whole; partition 0 takes the other 6 parts.
    assert _sizes(pieces) == [(0, 16), (0, 16), (0, 17), (0, 17), (0, 17), (0, 17), (1, 10),
                              (2, 1)]
    assert [(s, e) for tp, s, e in pieces if tp == ("t", 0)] == \
        [(0, 16), (16, 32), (32, 49), (49, 66), (66, 83), (83, 100)]  # contiguous, no overlap
    assert split([(("t", 0), 0, 3)], min_partitions=5) == \
        [(("t", 0), 0, 1), (("t", 0), 1, 2), (("t", 0), 2, 3)]  # no empty pieces


def test_max_records_per_partition_caps_every_piece():
    ranges = [(("t", 0), 10, 110), (("t", 1), 0, 30)]
    assert _sizes(split(ranges, max_records=30)) == [(0, 25)] * 4 + [(1, 30)]
    assert _sizes(split(ranges, min_partitions=3, max_records=60)) == [(0, 50), (0, 50), (1, 30)]


def test_flags_and_limits():
    assert opt.flag({"failOnDataLoss": "False"}, "failOnDataLoss", True) is False
    with pytest.raises(KafkaOptionError, match="true or false"):
        opt.flag({"includeHeaders": "yes"}, "includeHeaders", False)
    assert opt.positive_int({"maxOffsetsPerTrigger": "10"}, "maxOffsetsPerTrigger") == 10
    with pytest.raises(KafkaOptionError, match="positive integer"):
        opt.positive_int({"maxOffsetsPerTrigger": "0"}, "maxOffsetsPerTrigger")


def test_max_offsets_per_trigger_is_spread_by_what_each_partition_has_waiting():
    begin = {("t", 0): 0, ("t", 1): 10}
    end = {("t", 0): 100, ("t", 1): 40, ("t", 2): 60}  # partition 2 is new: read from 0
    capped = _cap(begin, end, 19)
    assert sum(capped[tp] - begin.get(tp, 0) for tp in end) == 19
    assert all(begin.get(tp, 0) <= capped[tp] <= end[tp] for tp in end)
    assert capped[("t", 0)] - 0 > capped[("t", 1)] - 10  # more waiting, bigger share
    assert _cap(begin, end, 1000) == end


def test_offsets_round_trip_through_spark_checkpoint_json():
    offsets = {("a", 0): 5, ("a", 1): 0, ("b", 3): 7}
    as_json = _to_json(offsets)
    assert as_json == {"a": {"0": 5, "1": 0}, "b": {"3": 7}}
    assert _from_json(as_json) == offsets
