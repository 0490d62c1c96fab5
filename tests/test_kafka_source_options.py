"""The Python Kafka source's option parsing and offset arithmetic (no Spark, no broker)."""
from __future__ import annotations

import pytest

from pipelines.kafka_source import options as opt
from pipelines.kafka_source.options import KafkaOptionError
from pipelines.kafka_source.source import _cap, _from_json, _to_json

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
