"""Spark through the Python Kafka data source against josefk, next to the ceiling: the same
Kafka client (confluent-kafka) doing the same work directly, without Spark.

    .venv/bin/python -m bench.spark [--records 1000000] [--rounds 3] [--events 200000]

One josefk broker (subprocess, 127.0.0.1), one local[2] SparkSession. Per round, alternated
(ceiling, Spark): a batch read of an 8-partition topic of 100-byte records, a batch write of as
many records, and the clickstream streaming query (Trigger.AvailableNow) over JSON events.
Warm-up rounds, the same work unrecorded, come first: a fresh JVM spends about as much CPU
compiling Spark's code as running it for its first several queries, and that falls off over
them. Medians per figure and Spark/ceiling ratios are printed. Not part of the test suite.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

from confluent_kafka import KafkaError, Producer, TopicPartition

from bench.brokers import Josefk
from josefk.pipelines import clickstream
from josefk.pipelines.demo import create_topics, generate_events, produce_events
from josefk.pipelines.kafka_source import NAME, client, kafka_format
from josefk.pipelines.session import local_session

PARTITIONS = 8
VALUE = b"x" * 100
CAP_SECONDS = 300  # no single measurement runs longer


def produce_direct(bootstrap, topic, n) -> float:
    """Ceiling of the write: one Python producer, the source's settings (idempotent)."""
    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5})
    t0 = time.perf_counter()
    for i in range(n):
        client.produce_waiting(p, topic, value=VALUE, partition=i % PARTITIONS)
        if i % 10_000 == 0 and time.perf_counter() - t0 > CAP_SECONDS:
            raise RuntimeError("direct produce over the time cap")
    if p.flush(60):
        raise RuntimeError("direct produce: records left undelivered")
    return time.perf_counter() - t0


def read_direct(bootstrap, topic, n) -> float:
    """Ceiling of the read: one consumer, the source's settings, every partition assigned,
    each value touched, until n records are read."""
    c = client.consumer({"bootstrap.servers": bootstrap})
    c.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    t0, seen, size = time.perf_counter(), 0, 0
    try:
        while seen < n:
            # no more than is left: a call for more waits out its timeout at the end
            for m in c.consume(min(client.CONSUME_BATCH, n - seen), timeout=1.0):
                if m.error() is None:
                    seen += 1
                    size += len(m.value())
                elif m.error().code() != KafkaError._PARTITION_EOF:
                    raise RuntimeError(m.error())
            if time.perf_counter() - t0 > CAP_SECONDS:
                raise RuntimeError(f"direct read over the time cap at {seen}/{n}")
        return time.perf_counter() - t0
    finally:
        c.close()


def read_spark(spark, bootstrap, topic, n) -> float:
    from pyspark.sql import functions as F

    t0 = time.perf_counter()
    (count, size), = (spark.read.format(NAME).option("kafka.bootstrap.servers", bootstrap)
                      .option("subscribe", topic).load()
                      .agg(F.count(F.lit(1)), F.sum(F.length("value"))).collect())
    took = time.perf_counter() - t0
    if (count, size) != (n, n * len(VALUE)):
        raise RuntimeError(f"Spark read {count} records ({size} bytes), expected {n}")
    return took


def write_spark(spark, bootstrap, topic, n) -> float:
    from pyspark.sql import functions as F

    df = spark.range(n, numPartitions=2).select(
        F.lit(VALUE).alias("value"), (F.col("id") % PARTITIONS).cast("int").alias("partition"))
    t0 = time.perf_counter()
    (df.write.format(NAME).mode("append").option("kafka.bootstrap.servers", bootstrap)
     .option("topic", topic).save())
    return time.perf_counter() - t0


def stream_spark(spark, bootstrap, topic, n, work: Path) -> float:
    sink = f"bench-views-{uuid.uuid4().hex[:8]}"
    create_topics(bootstrap, {sink: 1})
    t0 = time.perf_counter()
    query = clickstream.stream(spark, bootstrap, topic, sink, work / f"ckpt-{sink}")
    query.awaitTermination(CAP_SECONDS)
    took = time.perf_counter() - t0
    if query.isActive or query.exception() is not None:
        query.stop()
        raise RuntimeError(f"streaming query did not finish: {query.exception()}")
    rows = sum(p["numInputRows"] for p in query.recentProgress)
    if rows != n:
        raise RuntimeError(f"streaming query read {rows} events, expected {n}")
    return took


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--events", type=int, default=200_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=2, help="unrecorded rounds first")
    args = ap.parse_args(argv)
    n, events = args.records, args.events
    results: dict[str, list[float]] = {}
    warming = False

    def note(name, seconds, count, size):
        if warming:
            name += " (warm-up)"
        else:
            results.setdefault(name, []).append(seconds)
        print(f"  {name:<34} {count / seconds:>12,.0f} rec/s {size / seconds / 1e6:>8.1f} MB/s",
              flush=True)

    with tempfile.TemporaryDirectory(prefix="bench-spark-") as tmp:
        work = Path(tmp)
        broker = Josefk(work / "josefk", overrides={})
        broker.start()
        try:
            bootstrap = broker.bootstrap
            spark = local_session("bench-spark")
            assert kafka_format(spark) == NAME
            clicks = f"bench-clicks-{uuid.uuid4().hex[:8]}"
            create_topics(bootstrap, {clicks: PARTITIONS})
            click_events = generate_events(events, minutes=60)
            produce_events(bootstrap, clicks, click_events)
            click_bytes = sum(len(json.dumps(e)) for e in click_events)
            for r in range(args.warmup + args.rounds):
                warming = r < args.warmup
                print(f"round {r + 1}/{args.warmup + args.rounds}"
                      f"{' (warm-up)' if warming else ''}", flush=True)
                direct_topic, spark_topic = (f"bench-{kind}-{uuid.uuid4().hex[:8]}"
                                             for kind in ("direct", "spark"))
                create_topics(bootstrap, {direct_topic: PARTITIONS, spark_topic: PARTITIONS})
                note("write direct", produce_direct(bootstrap, direct_topic, n), n, n * 100)
                note("write Spark", write_spark(spark, bootstrap, spark_topic, n), n, n * 100)
                note("read direct", read_direct(bootstrap, direct_topic, n), n, n * 100)
                note("read Spark", read_spark(spark, bootstrap, spark_topic, n), n, n * 100)
                note("stream: read direct", read_direct(bootstrap, clicks, events), events,
                     click_bytes)
                note("stream: Spark pipeline", stream_spark(spark, bootstrap, clicks, events, work),
                     events, click_bytes)
            spark.stop()
        finally:
            broker.stop()

    print(f"\nmedians over {args.rounds} round(s) after {args.warmup} warm-up round(s); {n:,} "
          f"records of 100 B on {PARTITIONS} partitions, {events:,} click events (JSON) for the "
          "pipeline")
    print(f"| {'figure':<24} | {'rec/s':>10} | {'MB/s':>7} | Spark/ceiling |")
    print(f"|{'-' * 26}|{'-' * 12}|{'-' * 9}|---------------|")
    counts = {"write": n, "read": n, "stream": events}
    for kind, direct, via in (("write", "write direct", "write Spark"),
                              ("read", "read direct", "read Spark"),
                              ("stream", "stream: read direct", "stream: Spark pipeline")):
        size = (click_bytes if kind == "stream" else n * 100)
        med = {k: statistics.median(results[k]) for k in (direct, via)}
        for k in (direct, via):
            ratio = f"{med[direct] / med[via]:.2f}" if k == via else ""
            print(f"| {k:<24} | {counts[kind] / med[k]:>10,.0f} | {size / med[k] / 1e6:>7.1f} | "
                  f"{ratio:>13} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
