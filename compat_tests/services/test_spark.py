"""A real local Spark (``local[2]``, one session for the whole module) reading and writing josefk
topics through the project's Python Kafka data source, and the clickstream pipeline on top.

Spark on two shared cores is slow: the data sets are small and the tests few.
"""
from __future__ import annotations

import json
import time
import uuid
from collections import Counter
from datetime import datetime, timezone

import pytest
from pyspark.errors import PySparkException

from compat_tests.helpers import produce_values, producer, read_from_beginning
from josefk.pipelines import clickstream
from josefk.pipelines.demo import generate_events, produce_events
from josefk.pipelines.kafka_source import NAME

pytestmark = pytest.mark.slow


def _read(spark, bootstrap, **options):
    reader = spark.read.format(NAME).option("kafka.bootstrap.servers", bootstrap)
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load()


def test_batch_write_then_read_with_explicit_offsets(spark, broker, new_topic):
    topic = new_topic(partitions=2)
    n = 20
    rows = [(f"k{i}", f"v{i}", i % 2, [(f"h{i}", f"x{i}".encode())]) for i in range(n)]
    df = spark.createDataFrame(
        rows, "key string, value string, partition int, "
              "headers array<struct<key:string,value:binary>>")
    before = datetime.now(timezone.utc).replace(tzinfo=None)
    (df.write.format(NAME).mode("append").option("kafka.bootstrap.servers", broker.bootstrap)
     .option("topic", topic).save())
    after = datetime.now(timezone.utc).replace(tzinfo=None)

    everything = json.dumps({topic: {"0": 0, "1": 0}})
    got = _read(spark, broker.bootstrap, assign=json.dumps({topic: [0, 1]}),
                startingOffsets=everything, endingOffsets=json.dumps({topic: {"0": -1, "1": -1}}),
                includeHeaders="true").collect()
    assert len(got) == n
    by_value = {r.value.decode(): r for r in got}
    assert set(by_value) == {f"v{i}" for i in range(n)}
    for i in range(n):
        r = by_value[f"v{i}"]
        assert (r.key, r.topic, r.partition) == (f"k{i}".encode(), topic, i % 2)
        assert [(h.key, h.value) for h in r.headers] == [(f"h{i}", f"x{i}".encode())]
        assert r.timestampType == 0  # CreateTime
        assert before.replace(microsecond=0) <= r.timestamp <= after
    for p in (0, 1):  # offsets are dense from 0 in each partition
        assert sorted(r.offset for r in got if r.partition == p) == list(range(n // 2))

    middle = _read(spark, broker.bootstrap, subscribe=topic,
                   startingOffsets=json.dumps({topic: {"0": 2, "1": 9}}),
                   endingOffsets=json.dumps({topic: {"0": 5, "1": -1}}))
    assert sorted((r.partition, r.offset) for r in middle.collect()) == \
        [(0, 2), (0, 3), (0, 4), (1, 9)]
    assert "headers" not in middle.columns


def test_transactional_topic_reads_uncommitted_by_default_as_spark_does(spark, broker,
                                                                       new_topic):
    """Commit and abort markers leave gaps in the offsets; aborted records show unless
    kafka.isolation.level is read_committed (the Java client's default is read_uncommitted)."""
    topic = new_topic()
    p = producer(broker.bootstrap, transactional_id="spark-" + uuid.uuid4().hex[:8])
    p.init_transactions(30)
    for commit, values in ((True, ["a0", "a1", "a2"]), (False, ["b0", "b1"]), (True, ["c0"])):
        p.begin_transaction()
        for v in values:
            p.produce(topic, v.encode(), partition=0)
        assert p.flush(30) == 0  # written before the end (an abort drops what is unsent)
        p.commit_transaction(30) if commit else p.abort_transaction(30)
    p.begin_transaction()  # left open: read_committed stops before it
    p.produce(topic, b"d0", partition=0)
    assert p.flush(30) == 0
    # a0..a2 at 0-2, commit marker 3, b0 b1 at 4-5, abort marker 6, c0 at 7, commit marker 8,
    # d0 at 9 (open)
    every = _read(spark, broker.bootstrap, subscribe=topic).collect()
    assert sorted((r.offset, r.value) for r in every) == \
        [(0, b"a0"), (1, b"a1"), (2, b"a2"), (4, b"b0"), (5, b"b1"), (7, b"c0"), (9, b"d0")]
    committed = _read(spark, broker.bootstrap, subscribe=topic,
                      **{"kafka.isolation.level": "read_committed"}).collect()
    assert sorted((r.offset, r.value) for r in committed) == \
        [(0, b"a0"), (1, b"a1"), (2, b"a2"), (7, b"c0")]
    p.abort_transaction(30)


def test_starting_timestamp_reads_from_the_first_later_record(spark, broker, new_topic):
    topic = new_topic(partitions=1)
    produce_values(broker.bootstrap, topic, 1, 0, 3, tag="early")
    time.sleep(0.05)
    cut = int(time.time() * 1000)
    produce_values(broker.bootstrap, topic, 1, 3, 2, tag="late")
    got = _read(spark, broker.bootstrap, subscribe=topic, startingTimestamp=str(cut))
    assert sorted(r.value for r in got.collect()) == [b"late3", b"late4"]


def test_connector_batch_options(spark, broker, new_topic):
    """endingTimestamp, endingOffsetsByTimestamp, startingOffsetsByTimestampStrategy,
    minPartitions, maxRecordsPerPartition, kafka.group.id and groupIdPrefix."""
    topic = new_topic(partitions=2)
    produce_values(broker.bootstrap, topic, 2, 0, 6, tag="early")
    cuts = []
    for tag, start, n in (("mid", 6, 6), ("late", 12, 4)):
        time.sleep(0.05)
        cuts.append(int(time.time() * 1000))
        produce_values(broker.bootstrap, topic, 2, start, n, tag=tag)
    everything = {f"{tag}{i}".encode() for tag, i in [*(("early", i) for i in range(6)),
                                                       *(("mid", i) for i in range(6, 12)),
                                                       *(("late", i) for i in range(12, 16))]}

    def values(**options):
        return sorted(r.value for r in _read(spark, broker.bootstrap, subscribe=topic,
                                             **options).collect())

    mid = sorted(f"mid{i}".encode() for i in range(6, 12))
    assert values(startingTimestamp=str(cuts[0]), endingTimestamp=str(cuts[1])) == mid
    # No record of partition 1 is that late: it is read to its end, as Spark does.
    by_partition = json.dumps({topic: {"0": cuts[1], "1": cuts[1] + 3_600_000}})
    assert values(endingOffsetsByTimestamp=by_partition) == sorted(
        v for v in everything if not (v.startswith(b"late") and int(v[4:]) % 2 == 0))

    future = str(cuts[1] + 3_600_000)
    assert values(startingTimestamp=future, startingOffsetsByTimestampStrategy="latest") == []
    with pytest.raises(PySparkException, match="startingOffsetsByTimestampStrategy"):
        values(startingTimestamp=future)

    for options, spark_partitions in (({"minPartitions": "6"}, 6),
                                      ({"maxRecordsPerPartition": "3"}, 6),
                                      ({"minPartitions": "3", "maxRecordsPerPartition": "5"}, 4)):
        df = _read(spark, broker.bootstrap, subscribe=topic, **options)
        assert df.rdd.getNumPartitions() == spark_partitions, options
        rows = df.collect()
        assert sorted(r.value for r in rows) == sorted(everything)  # each record once
        assert sorted((r.partition, r.offset) for r in rows) == \
            [(p, o) for p in (0, 1) for o in range(8)]

    assert values(**{"kafka.group.id": "nightly-etl"}) == sorted(everything)
    assert values(groupIdPrefix="nightly") == sorted(everything)


def test_stream_min_offsets_per_trigger_and_max_trigger_delay(spark, broker, new_topic,
                                                              tmp_path):
    source = new_topic(partitions=1)
    produce_values(broker.bootstrap, source, 1, 0, 2, tag="a")

    def start(name, delay):
        stream = (spark.readStream.format(NAME).option("kafka.bootstrap.servers", broker.bootstrap)
                  .option("subscribe", source).option("startingOffsets", "earliest")
                  .option("minOffsetsPerTrigger", "5").option("maxTriggerDelay", delay).load())
        return (stream.select("value").writeStream.format("memory").queryName(name)
                .option("checkpointLocation", str(tmp_path / name))
                .trigger(processingTime="200 milliseconds").start())

    def wait_for(name, n):
        deadline = time.monotonic() + 120
        while spark.table(name).count() < n:
            assert time.monotonic() < deadline, f"{name}: fewer than {n} rows"
            time.sleep(0.2)

    def batches(query):
        return [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]

    waiting = start("min_rows", "1h")
    try:
        wait_for("min_rows", 2)  # the first trigger always runs, as in Spark
        produce_values(broker.bootstrap, source, 1, 2, 3, tag="b")
        time.sleep(2)  # ten triggers: 3 new records are fewer than 5, no batch
        assert spark.table("min_rows").count() == 2, waiting.recentProgress
        produce_values(broker.bootstrap, source, 1, 5, 2, tag="c")
        wait_for("min_rows", 7)
        assert batches(waiting) == [2, 5], waiting.recentProgress
    finally:
        waiting.stop()

    delayed = start("delayed", "2s")
    try:
        wait_for("delayed", 7)
        produce_values(broker.bootstrap, source, 1, 7, 1, tag="d")
        wait_for("delayed", 8)  # one record, fewer than 5: let through by maxTriggerDelay
        assert batches(delayed) == [7, 1], delayed.recentProgress
    finally:
        delayed.stop()


def _sink_values(bootstrap, topic, n):
    return sorted(m.value() for m in read_from_beginning(bootstrap, topic, 1, n))


def test_stream_available_now_resumes_from_checkpoint(spark, broker, new_topic, tmp_path):
    source, sink = new_topic(partitions=2), new_topic(partitions=1)
    checkpoint = tmp_path / "checkpoint"

    def run_once(max_per_trigger):
        stream = (spark.readStream.format(NAME).option("kafka.bootstrap.servers", broker.bootstrap)
                  .option("subscribe", source).option("startingOffsets", "earliest")
                  .option("maxOffsetsPerTrigger", str(max_per_trigger)).load())
        query = (stream.select("key", "value").writeStream.format(NAME)
                 .option("kafka.bootstrap.servers", broker.bootstrap).option("topic", sink)
                 .option("checkpointLocation", str(checkpoint))
                 .trigger(availableNow=True).start())
        query.awaitTermination(240)
        assert not query.isActive and query.exception() is None
        return [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]

    first = produce_values(broker.bootstrap, source, 2, 0, 10, tag="a")
    batches = run_once(max_per_trigger=6)
    assert sum(batches) == 10 and max(batches) <= 6 and len(batches) >= 2
    assert _sink_values(broker.bootstrap, sink, 10) == sorted(first.values())

    second = produce_values(broker.bootstrap, source, 2, 10, 5, tag="b")
    assert sum(run_once(max_per_trigger=100)) == 5  # only the new records
    assert _sink_values(broker.bootstrap, sink, 15) == sorted([*first.values(),
                                                               *second.values()])


def _expected_closed_windows(events):
    """Page views per (1-minute window, page) for the windows the 2-minute watermark closed:
    those ending at or before the latest event time minus two minutes."""
    watermark = max(e["ts"] for e in events) - 120_000
    counts = Counter()
    for e in events:
        start = e["ts"] - e["ts"] % 60_000
        if start + 60_000 <= watermark:
            counts[(_iso(start), e["page"])] += 1
    return dict(counts)


def _iso(ms):
    return datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _windows(bootstrap, topic, n):
    out = {}
    for m in read_from_beginning(bootstrap, topic, 1, n):
        r = json.loads(m.value())
        assert m.key().decode() == f"{r['window_start']}|{r['page']}"
        out[(r["window_start"], r["page"])] = r["views"]
    return out


def test_clickstream_counts_match_plain_python(spark, broker, new_topic, tmp_path):
    clicks, live, backfilled = new_topic(partitions=3), new_topic(), new_topic()
    events = generate_events(300, minutes=6)
    produce_events(broker.bootstrap, clicks, events)

    query = clickstream.stream(spark, broker.bootstrap, clicks, live, tmp_path / "checkpoint")
    query.awaitTermination(240)
    assert query.exception() is None
    expected = _expected_closed_windows(events)
    assert _windows(broker.bootstrap, live, len(expected)) == expected

    everything = Counter((_iso(e["ts"] - e["ts"] % 60_000), e["page"]) for e in events)
    written = clickstream.backfill(spark, broker.bootstrap, clicks, backfilled,
                                   starting={clicks: {"0": 0, "1": 0, "2": 0}},
                                   ending={clicks: {"0": -1, "1": -1, "2": -1}})
    assert written == len(everything)
    assert _windows(broker.bootstrap, backfilled, written) == dict(everything)

    exported = clickstream.export_parquet(spark, broker.bootstrap, clicks, tmp_path / "pq",
                                          ending={clicks: {"0": 10, "1": -1, "2": -1}})
    table = {(r.partition, r.offset, r.value) for r in spark.read.parquet(str(tmp_path / "pq"))
             .collect()}
    source = {(r.partition, r.offset, r.value.decode())
              for r in _read(spark, broker.bootstrap, subscribe=clicks).collect()}
    assert len(source) == len(events)
    assert table == {r for r in source if r[0] != 0 or r[1] < 10} and exported == len(table)
    assert sorted(o for p, o, _ in table if p == 0) == list(range(10))


@pytest.mark.parametrize("options, message", [
    ({"subscribe": "no-such-topic-here"}, "do not exist"),
    ({"subscribe": "t", "startingOffsets": '{"t": {"0": 1'}, "'startingOffsets' is not valid JSON"),
    ({"subscribe": "t", "startingOffsets": "[1, 2]"}, "must be a JSON object of topics"),
])
def test_bad_options_fail_clearly(spark, broker, options, message):
    with pytest.raises(PySparkException, match=message):
        _read(spark, broker.bootstrap, **options).collect()


def test_missing_bootstrap_servers_fails_clearly(spark):
    with pytest.raises(PySparkException, match="'kafka.bootstrap.servers' must be specified"):
        spark.read.format(NAME).option("subscribe", "t").load().collect()


def test_unknown_topic_without_fail_on_data_loss_reads_nothing(spark, broker, new_topic):
    topic = new_topic(partitions=1)
    produce_values(broker.bootstrap, topic, 1, 0, 2)
    got = _read(spark, broker.bootstrap, subscribe=f"{topic},no-such-topic-either",
                failOnDataLoss="false")
    assert got.count() == 2


@pytest.mark.parametrize("columns, message", [
    (["CAST(id AS INT) AS value"],
     r"value attribute unsupported type int. value must be a\(n\) string or binary"),
    (["'v' AS value", "CAST(id AS STRING) AS partition"],
     r"partition attribute unsupported type string. partition must be a\(n\) int"),
    (["'v' AS value", "'k' AS key", "array(1) AS headers"], "headers attribute unsupported type"),
])
def test_bad_write_columns_fail_clearly(spark, broker, new_topic, columns, message):
    df = spark.range(3).selectExpr(*columns)
    with pytest.raises(PySparkException, match=message):
        (df.write.format(NAME).mode("append").option("kafka.bootstrap.servers", broker.bootstrap)
         .option("topic", new_topic()).save())


def test_write_by_topic_column_with_keys_and_no_partition(spark, broker, new_topic):
    """Rows name their topics; rows without a partition go by their key's hash."""
    topics = [new_topic(partitions=3), new_topic(partitions=3)]
    rows = [(topics[i % 2], f"k{i % 4}", f"v{i}") for i in range(40)]
    (spark.createDataFrame(rows, "topic string, key string, value string").write.format(NAME)
     .mode("append").option("kafka.bootstrap.servers", broker.bootstrap).save())
    for topic in topics:
        got = _read(spark, broker.bootstrap, subscribe=topic).collect()
        assert sorted(r.value.decode() for r in got) == sorted(v for t, _, v in rows if t == topic)
        assert len({(r.key, r.partition) for r in got}) == len({r.key for r in got}) == 2
