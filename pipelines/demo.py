"""Run the clickstream pipeline end to end and print what it produced.

    python -m josefk.pipelines.demo [--bootstrap HOST:PORT] [--events N]

Without ``--bootstrap`` it starts a josefk broker of its own (127.0.0.1, a free port, a
temporary data directory) and stops it at the end. It generates click events, runs the
streaming query (Trigger.AvailableNow), the batch backfill and the Parquet export.
"""
from __future__ import annotations

import argparse
import json
import random
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from contextlib import contextmanager
from pathlib import Path

PAGES = ["/home", "/search", "/product", "/cart", "/checkout"]
START_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z, a minute boundary


def generate_events(n: int, minutes: int = 10, seed: int = 7) -> list[dict]:
    """``n`` click events spread over ``minutes`` of event time, in roughly increasing time
    order with up to 20 s of disorder (well inside the 2-minute watermark)."""
    rng = random.Random(seed)
    step = minutes * 60_000 // max(n, 1)
    return [{"user": f"u{rng.randrange(20)}", "page": rng.choice(PAGES),
             "ts": max(START_MS, START_MS + i * step + rng.randrange(-20_000, 1))}
            for i in range(n)]


def produce_events(bootstrap: str, topic: str, events) -> None:
    from confluent_kafka import Producer

    from josefk.pipelines.kafka_source.client import produce_waiting

    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for e in events:
        produce_waiting(p, topic, key=e["user"].encode(), value=json.dumps(e).encode())
        p.poll(0)
    if p.flush(30):
        raise RuntimeError("events not delivered within 30 s")


def create_topics(bootstrap: str, partitions: dict) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(t, num_partitions=n, replication_factor=1)
                                   for t, n in partitions.items()])
    for f in futures.values():
        f.result(30)


def read_topic(bootstrap: str, topic: str, timeout: float = 30.0) -> list[tuple[bytes, bytes]]:
    """Every (key, value) of ``topic`` up to its current end."""
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"demo-{uuid.uuid4()}",
                  "enable.auto.commit": False, "enable.partition.eof": True})
    try:
        parts = sorted(c.list_topics(topic, timeout=timeout).topics[topic].partitions)
        c.assign([TopicPartition(topic, p, -2) for p in parts])
        out, done, deadline = [], set(), time.monotonic() + timeout
        while len(done) < len(parts) and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                if m.error().code() != KafkaError._PARTITION_EOF:
                    raise RuntimeError(m.error())
                done.add(m.partition())
            else:
                out.append((m.key(), m.value()))
        return out
    finally:
        c.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def local_broker(data_dir: Path):
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "josefk", "broker", "--listeners", f"PLAINTEXT://127.0.0.1:{port}",
         "--log-dirs", str(data_dir), "--override", "offsets.topic.replication.factor=1"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the josefk broker did not start") from None
                time.sleep(0.2)
        yield f"127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(15)


def run(bootstrap: str, n_events: int, work: Path, keep: bool) -> None:
    from josefk.pipelines import clickstream
    from josefk.pipelines.session import local_session

    run_id = uuid.uuid4().hex[:6]
    clicks, live, backfilled = (f"clicks-{run_id}", f"page-views-{run_id}",
                                f"page-views-backfill-{run_id}")
    create_topics(bootstrap, {clicks: 3, live: 1, backfilled: 1})
    events = generate_events(n_events)
    produce_events(bootstrap, clicks, events)
    print(f"produced {len(events)} click events to {clicks}")

    spark = local_session("clickstream-demo")
    query = clickstream.stream(spark, bootstrap, clicks, live, work / "checkpoint")
    query.awaitTermination()
    rows = sorted((json.loads(v) for _, v in read_topic(bootstrap, live)),
                  key=lambda r: (r["window_start"], r["page"]))
    print(f"\nstreaming query wrote {len(rows)} closed windows to {live}:")
    for r in rows:
        print(f"  {r['window_start']}  {r['page']:<10} {r['views']}")

    n = clickstream.backfill(spark, bootstrap, clicks, backfilled)
    print(f"\nbatch backfill wrote {n} windows (closed or not) to {backfilled}")
    exported = clickstream.export_parquet(spark, bootstrap, clicks, work / "clicks.parquet")
    print(f"exported {exported} records of {clicks} to {work / 'clicks.parquet'}"
          + ("" if keep else " (removed at exit; --work-dir keeps it)"))
    spark.stop()


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bootstrap", help="a running broker (default: start one)")
    ap.add_argument("--events", type=int, default=2000)
    ap.add_argument("--work-dir", help="checkpoint and Parquet output (default: a temp dir)")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="clickstream-") as tmp:
        work = Path(args.work_dir or tmp)
        keep = args.work_dir is not None
        if args.bootstrap:
            run(args.bootstrap, args.events, work, keep)
        else:
            with local_broker(Path(tmp) / "broker-data") as bootstrap:
                print(f"started a josefk broker on {bootstrap}")
                run(bootstrap, args.events, work, keep)


if __name__ == "__main__":
    main()
