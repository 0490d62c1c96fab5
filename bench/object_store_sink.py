"""``python -m bench.object_store_sink``: the object-storage sink's Parquet throughput beside
its ceiling (issue 29's benchmark), on a local SeaweedFS (testkit/seaweedfs.py).

Per round, the same rows (an id, two strings, a double, a timestamp; ~100 bytes as JSON) are
written to a fresh bucket twice, alternating:

- **sink**: SinkRecords with a Connect schema (Structs, as the worker's converters give them)
  through ``S3SinkTask.put`` with ``flush.size`` rows a file, Parquet (snappy);
- **direct**: the same rows as Python dicts through pyarrow (``Table.from_pylist``,
  ``write_table``, snappy) and the same client's upload (``tiered/store.py``'s S3Store), one
  object per ``flush.size`` rows: the ceiling of the libraries used directly.

MB/s of Parquet uploaded (10^6 bytes of objects), rows/s, medians and the ratio sink/direct
(goal: 0.5 or more).
"""
from __future__ import annotations

import argparse
import datetime
import io
import statistics
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from josefk.connect.api.records import SinkRecord
from josefk.connect.api.schema import Schema, SchemaBuilder, Struct, Timestamp
from josefk.connect.connectors.object_store import S3SinkTask
from josefk.tiered.store import S3Store
from testkit.seaweedfs import seaweedfs

ORDER = (SchemaBuilder.struct().name("bench.Order")
         .field("id", Schema.INT64_SCHEMA).field("customer", Schema.STRING_SCHEMA)
         .field("item", Schema.STRING_SCHEMA).field("amount", Schema.FLOAT64_SCHEMA)
         .field("at", Timestamp.builder().build()).build())
EPOCH = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)


def rows(n: int) -> list[dict]:
    return [{"id": i, "customer": f"customer-{i % 997}", "item": f"item-{i % 31}",
             "amount": i * 0.25, "at": EPOCH + datetime.timedelta(milliseconds=i)}
            for i in range(n)]


def records(data: list[dict]) -> list[SinkRecord]:
    out = []
    for offset, row in enumerate(data):
        value = Struct(ORDER)
        for name, v in row.items():
            value.put(name, v)
        out.append(SinkRecord("orders", 0, None, None, ORDER, value, offset))
    return out


class _Context:
    def assignment(self):
        return set()

    def offset(self, offsets):
        """A fresh bucket: nothing to rewind to."""

    def timeout(self, timeout_ms):
        """No retries in a benchmark: a failed upload ends it."""


def bucket_bytes(store: S3Store) -> int:
    return sum(len(store.get(k)) for k in store.list("topics/"))


def run_sink(s3, bucket: str, recs: list[SinkRecord], flush: int) -> tuple[float, int]:
    store = S3Store(bucket, endpoint=s3.endpoint, access_key=s3.access_key,
                    secret_key=s3.secret_key)
    store.ensure_bucket()
    task = S3SinkTask()
    task.initialize(_Context())
    task.start({"s3.bucket.name": bucket, "store.url": s3.endpoint, "s3.region": s3.region,
                "aws.access.key.id": s3.access_key, "aws.secret.access.key": s3.secret_key,
                "flush.size": str(flush), "topics": "orders",
                "format.class": "io.confluent.connect.s3.format.parquet.ParquetFormat"})
    start = time.perf_counter()
    for i in range(0, len(recs), 500):  # the worker's batches (max.poll.records)
        task.put(recs[i:i + 500])
    seconds = time.perf_counter() - start
    task.stop()
    return seconds, bucket_bytes(store)


def run_direct(s3, bucket: str, data: list[dict], flush: int) -> tuple[float, int]:
    store = S3Store(bucket, endpoint=s3.endpoint, access_key=s3.access_key,
                    secret_key=s3.secret_key)
    store.ensure_bucket()
    start = time.perf_counter()
    for i in range(0, len(data) - flush + 1, flush):
        out = io.BytesIO()
        pq.write_table(pa.Table.from_pylist(data[i:i + flush]), out, compression="snappy")
        store.put(f"topics/orders/partition=0/orders+0+{i:010d}.snappy.parquet",
                  out.getvalue())
    seconds = time.perf_counter() - start
    return seconds, bucket_bytes(store)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.object_store_sink")
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--flush-size", type=int, default=50_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    data = rows(args.rows)
    recs = records(data)
    results: dict[str, list[tuple[float, int]]] = {"sink": [], "direct": []}
    with tempfile.TemporaryDirectory(prefix="bench-s3sink-") as tmp, \
            seaweedfs(Path(tmp)) as s3:
        for r in range(args.rounds):
            for kind, run in (("sink", lambda b: run_sink(s3, b, recs, args.flush_size)),
                              ("direct", lambda b: run_direct(s3, b, data, args.flush_size))):
                seconds, size = run(f"bench-{kind}-{r}")
                results[kind].append((seconds, size))
                print(f"round {r + 1} {kind:6s}: {args.rows / seconds:10.0f} rows/s "
                      f"{size / 1e6 / seconds:7.1f} MB/s ({size / 1e6:.1f} MB)", flush=True)
    medians = {kind: statistics.median(size / 1e6 / s for s, size in runs)
               for kind, runs in results.items()}
    print(f"median sink {medians['sink']:.1f} MB/s, direct {medians['direct']:.1f} MB/s, "
          f"sink/direct {medians['sink'] / medians['direct']:.2f} (goal 0.5)")


if __name__ == "__main__":
    main()
