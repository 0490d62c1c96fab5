"""Issue 29's demo: PostgreSQL -> change data capture -> josefk -> Parquet in object storage ->
Spark. ``scripts/demo-cdc-lake.sh`` runs it; ``compat_tests/connect/test_cdc_lake.py`` runs
its core (``run``) on the test session's servers.

    python -m testkit.cdc_lake

starts a PostgreSQL (testkit/postgres.py), a SeaweedFS (testkit/seaweedfs.py) and a josefk
broker, then ``run``: a ``josefk connect --standalone`` worker with Debezium's PostgreSQL
connector and Confluent's S3 sink writing Parquet; rows inserted, updated and deleted; the
files awaited; Spark reading them back. Every process is stopped at the end, failed or not.
"""
from __future__ import annotations

import contextlib
import io
import json
import select
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

BUCKET = "lake"
JSON = "org.apache.kafka.connect.json.JsonConverter"
# (statement, events it makes): the snapshot's two rows, then the changes streamed
CHANGES = [
    ("INSERT INTO customers VALUES (3, 'cyd', 'gold')", 1),
    ("UPDATE customers SET tier = 'gold' WHERE id = 1", 1),
    ("INSERT INTO customers VALUES (4, 'dee', 'basic')", 1),
    ("DELETE FROM customers WHERE id = 2", 1),  # and a tombstone, which the sink skips
    ("UPDATE customers SET name = 'cyd2' WHERE id = 3", 1),
]
SNAPSHOT = [(1, "ann", "basic"), (2, "bob", "silver")]


def _worker(work: Path, bootstrap: str, postgres, database: str, s3) -> list:
    topic_prefix = database  # its own topic: a broker shared with other tests may hold "shop.*"
    worker = work / "worker.properties"
    worker.write_text(f"bootstrap.servers={bootstrap}\n"
                      f"offset.storage.file.filename={work / 'offsets.json'}\n"
                      "listeners=http://127.0.0.1:0\noffset.flush.interval.ms=500\n"
                      f"key.converter={JSON}\nvalue.converter={JSON}\n")
    cdc = {"name": "shop-cdc",
           "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
           "database.hostname": postgres.host, "database.port": str(postgres.port),
           "database.user": postgres.user, "database.password": postgres.password,
           "database.dbname": database, "topic.prefix": topic_prefix,
           "table.include.list": "public.customers",
           "slot.name": f"lake_{database}"[:63], "publication.name": f"lake_{database}"}
    sink = {"name": "shop-lake", "connector.class": "io.confluent.connect.s3.S3SinkConnector",
            "topics": f"{topic_prefix}.public.customers", "s3.bucket.name": BUCKET,
            "s3.region": s3.region, "store.url": s3.endpoint,
            "aws.access.key.id": s3.access_key, "aws.secret.access.key": s3.secret_key,
            "format.class": "io.confluent.connect.s3.format.parquet.ParquetFormat",
            "flush.size": "3", "rotate.schedule.interval.ms": "1000", "timezone": "UTC",
            "behavior.on.null.values": "ignore"}
    files = []
    for c in (cdc, sink):
        path = work / f"{c['name']}.json"
        path.write_text(json.dumps(c))
        files.append(str(path))
    return [sys.executable, "-m", "josefk", "connect", "--standalone", str(worker), *files]


@contextlib.contextmanager
def _process(args: list, log: Path, started: str, timeout: float = 60):
    """``args`` running until the block ends (SIGTERM, then SIGKILL), once a line of its
    output starts with ``started``; its output kept in ``log``."""
    with open(log, "w") as out:
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=out, text=True,
                                start_new_session=True)
    try:
        deadline = time.monotonic() + timeout
        while True:
            ready, _, _ = select.select([proc.stdout], [], [], max(0.0, deadline - time.monotonic()))
            line = proc.stdout.readline() if ready else ""
            if line.startswith(started):
                break
            if not ready or proc.poll() is not None:
                raise RuntimeError(f"{args[2:4]} did not start: see {log}")
        yield proc
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)
        proc.stdout.close()


def _parquet_rows(store) -> int:
    import pyarrow.parquet as pq

    return sum(pq.read_metadata(io.BytesIO(store.get(k))).num_rows
               for k in store.list("topics/") if k.endswith(".parquet"))


def run(postgres, database: str, s3, bootstrap: str, spark, work: Path,
        timeout: float = 90) -> list:
    """The pipeline on running servers: every change event of ``database``'s customers table,
    as Spark reads it from the Parquet files, in commit order (``op``, the row's id, name and
    tier: the row after the change, or before it for a delete)."""
    import psycopg

    from josefk.tiered.store import S3Store

    store = S3Store(BUCKET, endpoint=s3.endpoint, region=s3.region, access_key=s3.access_key,
                    secret_key=s3.secret_key)
    store.ensure_bucket()
    with psycopg.connect(postgres.dsn(database), autocommit=True) as db:
        db.execute("CREATE TABLE customers (id INT PRIMARY KEY, name TEXT NOT NULL, tier TEXT)")
        db.execute("ALTER TABLE customers REPLICA IDENTITY FULL")  # deletes carry the old row
        db.cursor().executemany("INSERT INTO customers VALUES (%s, %s, %s)", SNAPSHOT)
        expected = len(SNAPSHOT) + sum(n for _, n in CHANGES)
        with _process(_worker(work, bootstrap, postgres, database, s3), work / "connect.log",
                      "josefk connect started on"):
            deadline = time.monotonic() + timeout
            while _parquet_rows(store) < len(SNAPSHOT):
                if time.monotonic() > deadline:
                    raise TimeoutError(f"the snapshot never reached the bucket: see {work}")
                time.sleep(0.5)
            for statement, _ in CHANGES:
                db.execute(statement)
            while (found := _parquet_rows(store)) < expected:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{found} of {expected} change events in the bucket "
                                       f"after {timeout} s: see {work}")
                time.sleep(0.5)
    local = work / "lake"
    for key in store.list("topics/"):
        target = local / key
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(store.get(key))
    events = spark.read.parquet(str(local / "topics"))
    return [tuple(r) for r in events.selectExpr(
        "op", "coalesce(after.id, before.id) AS id", "coalesce(after.name, before.name) AS name",
        "coalesce(after.tier, before.tier) AS tier", "source.lsn AS lsn")
        .orderBy("lsn", "id").collect()]


def main() -> None:
    from josefk.pipelines.demo import local_broker
    from josefk.pipelines.session import local_session
    from testkit.postgres import LocalPostgres
    from testkit.seaweedfs import seaweedfs

    with tempfile.TemporaryDirectory(prefix="cdc-lake-") as tmp, \
            contextlib.ExitStack() as stack:
        work = Path(tmp)
        postgres = LocalPostgres()
        stack.callback(postgres.stop)
        postgres.start()
        database = postgres.create_database(f"shop_{uuid.uuid4().hex[:8]}")
        print(f"PostgreSQL on {postgres.host}:{postgres.port}, database {database}")
        s3 = stack.enter_context(seaweedfs(work / "s3"))
        print(f"SeaweedFS S3 on {s3.endpoint}")
        bootstrap = stack.enter_context(local_broker(work / "broker"))
        print(f"josefk broker on {bootstrap}")
        spark = local_session("cdc-lake-demo")
        stack.callback(spark.stop)
        rows = run(postgres, database, s3, bootstrap, spark, work)
        print(f"\nSpark read {len(rows)} change events from s3://{BUCKET}/topics/:")
        print(f"  {'op':<3}{'id':>3}  {'name':<6}{'tier':<8}lsn")
        for op, id_, name, tier, lsn in rows:
            print(f"  {op:<3}{id_:>3}  {name:<6}{tier or '':<8}{lsn}")


if __name__ == "__main__":
    main()
