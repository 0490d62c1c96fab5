"""Spark through the Python Kafka data source against josefk, next to the ceiling: the same
Kafka client (confluent-kafka) doing the same work directly, without Spark, and next to Spark's
own JVM connector when its jar is on the session's classpath.

    .venv/bin/python -m bench.spark [--records 1000000] [--rounds 3] [--events 200000]
                                    [--only write,read,stream]

One josefk broker (subprocess, 127.0.0.1), one local[2] SparkSession. Per round, alternated (the
order of the ways rotates from round to round): a batch write of 100-byte records to a fresh
8-partition topic (a plain producer loop / ``format("pykafka")`` / ``format("kafka")``), a
batch read of such a topic, and the clickstream streaming query (Trigger.AvailableNow) over JSON
events. Warm-up rounds, the same work unrecorded, come first: a fresh JVM spends about as much
CPU compiling Spark's code as running it for its first several queries, and that falls off over
them. Besides the rates, the CPU each way spends (this process and its children but the broker:
the JVM and its Python workers for Spark; and the broker's own) per million records. Medians
per figure and their ratios to the direct figure are printed. Not part of the test suite.

Spark's JVM connector is measured when the session can load it, e.g. with
``PYSPARK_SUBMIT_ARGS="--packages org.apache.spark:spark-sql-kafka-0-10_2.13:<Spark's version>
pyspark-shell"`` (or ``--jars`` with the connector's jar and its dependencies).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from pathlib import Path

from confluent_kafka import KafkaError, Producer, TopicPartition

from bench.brokers import Josefk
from josefk.pipelines import clickstream
from josefk.pipelines.demo import create_topics, generate_events, produce_events
from josefk.pipelines.kafka_source import NAME, KafkaDataSource, client, has_jvm_connector
from josefk.pipelines.session import local_session

PARTITIONS = 8
VALUE = b"x" * 100
CAP_SECONDS = 300  # no single measurement runs longer
FIGURES = ("write", "read", "stream")
JVM = "kafka"


def produce_direct(bootstrap, topic, n) -> float:
    """Ceiling of the write: a plain producer loop, the source's settings (idempotent)."""
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


def read_spark(spark, fmt, bootstrap, topic, n) -> float:
    from pyspark.sql import functions as F

    t0 = time.perf_counter()
    (count, size), = (spark.read.format(fmt).option("kafka.bootstrap.servers", bootstrap)
                      .option("subscribe", topic).load()
                      .agg(F.count(F.lit(1)), F.sum(F.length("value"))).collect())
    took = time.perf_counter() - t0
    if (count, size) != (n, n * len(VALUE)):
        raise RuntimeError(f"Spark read {count} records ({size} bytes), expected {n}")
    return took


def write_spark(spark, fmt, bootstrap, topic, n) -> float:
    from pyspark.sql import functions as F

    df = spark.range(n, numPartitions=2).select(
        F.lit(VALUE).alias("value"), (F.col("id") % PARTITIONS).cast("int").alias("partition"))
    t0 = time.perf_counter()
    (df.write.format(fmt).mode("append").option("kafka.bootstrap.servers", bootstrap)
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


def tree_cpu(root: int, skip: int) -> float:
    """user+system CPU seconds of process ``root`` and its descendants (with the children they
    reaped), leaving out the subtree of ``skip`` (the broker)."""
    children, own = defaultdict(list), {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:  # gone meanwhile
                continue
            children[int(fields[1])].append(int(entry.name))
            own[int(entry.name)] = sum(map(int, fields[11:15]))
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        if pid != skip:
            total += own.get(pid, 0)
            todo.extend(children[pid])
    return total / os.sysconf("SC_CLK_TCK")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--events", type=int, default=200_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=2, help="unrecorded rounds first")
    ap.add_argument("--only", default=",".join(FIGURES),
                    help=f"comma-separated figures to measure, of {', '.join(FIGURES)}")
    args = ap.parse_args(argv)
    only = [f for f in FIGURES if f in args.only.split(",")]
    if set(args.only.split(",")) - set(FIGURES):
        ap.error(f"--only takes {', '.join(FIGURES)}")
    n, events = args.records, args.events
    # figure -> (records, bytes) and [(seconds, client CPU s, broker CPU s)] per recorded round
    sizes: dict[str, tuple[int, int]] = {}
    results: dict[str, list[tuple[float, float, float]]] = defaultdict(list)

    with tempfile.TemporaryDirectory(prefix="bench-spark-") as tmp:
        work = Path(tmp)
        broker = Josefk(work / "josefk", overrides={})
        broker.start()
        try:
            bootstrap = broker.bootstrap
            spark = local_session("bench-spark")
            spark.dataSource.register(KafkaDataSource)
            formats = [NAME] + ([JVM] if has_jvm_connector(spark) else [])
            if "stream" in only:
                clicks = f"bench-clicks-{uuid.uuid4().hex[:8]}"
                create_topics(bootstrap, {clicks: PARTITIONS})
                click_events = generate_events(events, minutes=60)
                produce_events(bootstrap, clicks, click_events)
                click_bytes = sum(len(json.dumps(e)) for e in click_events)

            def measure(name, run, warming):
                client_cpu = tree_cpu(os.getpid(), broker.proc.pid)
                broker_cpu = broker.cpu_seconds()
                seconds = run()
                cpu = (tree_cpu(os.getpid(), broker.proc.pid) - client_cpu,
                       broker.cpu_seconds() - broker_cpu)
                if not warming:
                    results[name].append((seconds, *cpu))
                count, size = sizes[name]
                print(f"  {name + (' (warm-up)' if warming else ''):<34} "
                      f"{count / seconds:>12,.0f} rec/s {size / seconds / 1e6:>8.1f} MB/s   "
                      f"CPU s: client {cpu[0]:5.2f} broker {cpu[1]:5.2f}", flush=True)

            for r in range(args.warmup + args.rounds):
                warming = r < args.warmup
                print(f"round {r + 1}/{args.warmup + args.rounds}"
                      f"{' (warm-up)' if warming else ''}", flush=True)
                # each kind of work: its ways (the direct one first), records and bytes
                kinds = []
                topics = {way: f"bench-{way}-{uuid.uuid4().hex[:8]}"
                          for way in ["direct"] + formats}
                if "write" in only or "read" in only:
                    create_topics(bootstrap, {t: PARTITIONS for t in topics.values()})
                if "write" in only:
                    kinds.append(([("write direct", lambda: produce_direct(
                        bootstrap, topics["direct"], n))] + [
                        (f"write Spark {fmt}", lambda fmt=fmt: write_spark(
                            spark, fmt, bootstrap, topics[fmt], n)) for fmt in formats],
                        n, n * len(VALUE)))
                if "read" in only:
                    if "write" not in only:  # every way reads what the direct loop wrote
                        produce_direct(bootstrap, topics["direct"], n)
                        topics = dict.fromkeys(topics, topics["direct"])
                    kinds.append(([("read direct", lambda: read_direct(
                        bootstrap, topics["direct"], n))] + [
                        (f"read Spark {fmt}", lambda fmt=fmt: read_spark(
                            spark, fmt, bootstrap, topics[fmt], n)) for fmt in formats],
                        n, n * len(VALUE)))
                if "stream" in only:
                    kinds.append(([
                        ("stream: read direct", lambda: read_direct(bootstrap, clicks, events)),
                        ("stream: Spark pipeline",
                         lambda: stream_spark(spark, bootstrap, clicks, events, work))],
                        events, click_bytes))
                for ways, count, size in kinds:
                    sizes.update(dict.fromkeys((name for name, _ in ways), (count, size)))
                    shift = r % len(ways)  # back to back, in an order rotating round by round
                    for name, run in ways[shift:] + ways[:shift]:
                        measure(name, run, warming)
            spark.stop()
        finally:
            broker.stop()

    print(f"\nmedians over {args.rounds} round(s) after {args.warmup} warm-up round(s); {n:,} "
          f"records of {len(VALUE)} B on {PARTITIONS} partitions, {events:,} click events (JSON) "
          "for the pipeline; CPU seconds per million records: the client's (for Spark, the JVM "
          "and its Python workers) and the broker's")
    print(f"| {'figure':<24} | {'rec/s':>10} | {'MB/s':>7} | client CPU | broker CPU | "
          "rate / direct |")
    print(f"|{'-' * 26}|{'-' * 12}|{'-' * 9}|------------|------------|---------------|")
    direct = None
    for name, (count, size) in sizes.items():  # each kind's ways in order, the direct one first
        seconds, client_cpu, broker_cpu = map(statistics.median, zip(*results[name]))
        if "direct" in name:
            direct, ratio = seconds, ""
        else:
            ratio = f"{direct / seconds:.2f}"
        print(f"| {name:<24} | {count / seconds:>10,.0f} | {size / seconds / 1e6:>7.1f} | "
              f"{client_cpu / count * 1e6:>10.2f} | {broker_cpu / count * 1e6:>10.2f} | "
              f"{ratio:>13} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
