"""The clickstream job: page views per page in 1-minute event-time windows.

Input: JSON events ``{"user": "u1", "page": "/home", "ts": <epoch ms>}`` on a topic.
Output: JSON ``{"window_start": ..., "window_end": ..., "page": ..., "views": n}`` on another
topic, keyed by ``<window_start>|<page>``.

- ``stream(...)`` runs it as a Structured Streaming query with a 2-minute watermark in append
  mode: a window is written once, when the watermark has passed its end; later events for it
  are dropped.
- ``backfill(...)`` runs the same counts as a batch job over an offset range (every window in
  the range, as batch queries have no watermark).
- ``export_parquet(...)`` writes a topic's offset range to Parquet.
"""
from __future__ import annotations

import json

from pyspark.sql import functions as F

from josefk.pipelines.kafka_source import kafka_format

EVENT_SCHEMA = "user STRING, page STRING, ts LONG"
WINDOW = "1 minute"
WATERMARK = "2 minutes"


def _source(spark, reader, bootstrap, topic):
    return (reader.format(kafka_format(spark)).option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", topic))


def parse(raw):
    """Kafka rows to (user, page, event_time) rows; unparseable events are dropped."""
    events = raw.select(F.from_json(F.col("value").cast("string"), EVENT_SCHEMA).alias("e"))
    return (events.select("e.user", "e.page",
                          F.timestamp_millis(F.col("e.ts")).alias("event_time"))
            .where(F.col("page").isNotNull() & F.col("event_time").isNotNull()))


def count_views(events):
    counted = events.groupBy(F.window("event_time", WINDOW), "page").agg(
        F.count(F.lit(1)).alias("views"))
    start = F.date_format("window.start", "yyyy-MM-dd'T'HH:mm:ss'Z'")
    end = F.date_format("window.end", "yyyy-MM-dd'T'HH:mm:ss'Z'")
    return counted.select(
        F.concat_ws("|", start, "page").alias("key"),
        F.to_json(F.struct(start.alias("window_start"), end.alias("window_end"), "page",
                           "views")).alias("value"))


def stream(spark, bootstrap, source_topic, sink_topic, checkpoint, available_now=True,
           max_offsets_per_trigger=None):
    """Start the streaming query (``startingOffsets`` earliest on its first run; afterwards the
    checkpoint decides) and return it."""
    reader = _source(spark, spark.readStream, bootstrap, source_topic) \
        .option("startingOffsets", "earliest")
    if max_offsets_per_trigger:
        reader = reader.option("maxOffsetsPerTrigger", str(max_offsets_per_trigger))
    counts = count_views(parse(reader.load()).withWatermark("event_time", WATERMARK))
    writer = (counts.writeStream.format(kafka_format(spark)).outputMode("append")
              .option("kafka.bootstrap.servers", bootstrap).option("topic", sink_topic)
              .option("checkpointLocation", str(checkpoint)))
    if available_now:
        writer = writer.trigger(availableNow=True)
    return writer.start()


def _range(spark, bootstrap, topic, starting, ending):
    return (_source(spark, spark.read, bootstrap, topic)
            .option("startingOffsets", json.dumps(starting) if starting else "earliest")
            .option("endingOffsets", json.dumps(ending) if ending else "latest").load())


def backfill(spark, bootstrap, source_topic, sink_topic, starting=None, ending=None) -> int:
    """Count the events at offsets [starting, ending) (Spark's per-partition JSON; None for
    earliest/latest) and write the windows to ``sink_topic``; returns how many."""
    counts = count_views(parse(_range(spark, bootstrap, source_topic, starting, ending)))
    counts.cache()
    (counts.write.format(kafka_format(spark)).mode("append")
     .option("kafka.bootstrap.servers", bootstrap).option("topic", sink_topic).save())
    n = counts.count()
    counts.unpersist()
    return n


def export_parquet(spark, bootstrap, topic, path, starting=None, ending=None) -> int:
    """Write the records at offsets [starting, ending) of ``topic`` to Parquet at ``path``
    (key and value as strings, with their Kafka coordinates); returns how many."""
    rows = _range(spark, bootstrap, topic, starting, ending).select(
        F.col("key").cast("string").alias("key"), F.col("value").cast("string").alias("value"),
        "topic", "partition", "offset", "timestamp")
    rows.write.mode("overwrite").parquet(str(path))
    return spark.read.parquet(str(path)).count()
