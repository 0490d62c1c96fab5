"""``python -m bench.databases``: the database connectors beside their libraries' ceilings
(issue 29's benchmark), on a local PostgreSQL (testkit/postgres.py). Per round the two ways
of each alternate; medians of the rounds.

- **cdc**: a process inserts rows at a fixed rate (``--rates``; one small transaction every
  10 ms, each row carrying its insert time) for ``--seconds``. Read from a fresh slot by the
  CDC connector's task (``PostgresConnectorTask.poll``: pgoutput decoded into Debezium
  change events, acknowledged as the worker does) or by psycopg2 directly (the replication
  protocol with pgoutput, each Insert's tuple parsed): rows/s read, end-to-end latency
  (insert to event) p50/p99, the reader's CPU seconds.
- **jdbc**: ``--rows`` SinkRecords (Structs of an id, two strings and a double; 10,000 keys,
  so most are updates) upserted in batches of 500 by ``JdbcSinkTask.put``, or the same rows
  as tuples through psycopg's ``executemany`` of ``INSERT ... ON CONFLICT DO UPDATE``, a
  transaction a batch: rows/s and the batch latency p50/p99.

- **cdc pipeline** (``--pipeline``, a third way beside those two): the whole path as users
  run it, a ``josefk connect --standalone`` process with the CDC connector (JsonConverter,
  schemas disabled) producing to a josefk broker process, and a consumer of the change-event
  topic: latency from the insert to the consumer's poll.

The first two measure the connectors' own work, without a broker or a worker (bench.connect
has those); the pipeline measures everything together on the same two cores.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import select
import statistics
import struct
import tempfile
import time
import uuid
from pathlib import Path

import psycopg
import psycopg2
import psycopg2.extras

from confluent_kafka import Consumer

from bench.brokers import Josefk, cleanup_dir
from bench.connect import Worker, create_topic
from josefk.connect.api.records import SinkRecord
from josefk.connect.api.schema import Schema, SchemaBuilder, Struct
from josefk.connect.connectors.jdbc.sink import JdbcSinkTask
from josefk.connect.connectors.postgres_cdc.connector import PostgresConnectorTask
from testkit.postgres import LocalPostgres

BATCH, KEYS = 500, 10_000
ROW = (SchemaBuilder.struct().name("bench.Account")
       .field("id", Schema.INT64_SCHEMA).field("owner", Schema.STRING_SCHEMA)
       .field("plan", Schema.STRING_SCHEMA).field("balance", Schema.FLOAT64_SCHEMA).build())


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


# -- cdc ---------------------------------------------------------------------------------

def insert_at_rate(dsn: str, rate: int, seconds: float) -> None:
    """``rate`` rows a second for ``seconds``, a transaction every 10 ms (run in a process)."""
    with psycopg.connect(dsn, autocommit=True) as db:
        # the server runs with synchronous_commit off: a commit would reach the walsenders
        # only at the WAL writer's next round (200 ms)
        db.execute("SET synchronous_commit = on")
        start, done = time.time(), 0
        while (now := time.time()) - start < seconds:
            due = int(rate * (now - start)) - done
            if due > 0:
                db.execute("INSERT INTO events (sent, note) SELECT %s, 'change ' || g "
                           "FROM generate_series(1, %s) g", (now, due))
                done += due
            time.sleep(max(0.0, 0.01 - (time.time() - now)))
        due = int(rate * seconds) - done
        if due > 0:
            db.execute("INSERT INTO events (sent, note) SELECT %s, 'change ' || g "
                       "FROM generate_series(1, %s) g", (time.time(), due))


class _Reading:
    """One timed run: the inserting process started, latencies collected until ``expected``;
    rows/s from the first row's insert to the last one's reading."""

    def __init__(self, pg: LocalPostgres, db: str, rate: int, seconds: float):
        self.expected = int(rate * seconds)
        self.latencies: list[float] = []
        self.inserter = multiprocessing.get_context("spawn").Process(
            target=insert_at_rate, args=(pg.dsn(db), rate, seconds))
        self.deadline = time.monotonic() + seconds + 60

    def __enter__(self):
        self.cpu, self.first, self.last = time.process_time(), float("inf"), 0.0
        self.inserter.start()
        return self

    def add(self, sent: list[float]) -> bool:
        now = time.time()
        if sent:
            self.first = min(self.first, sent[0])
            self.last = now
        self.latencies += [now - s for s in sent]
        if time.monotonic() > self.deadline:
            raise TimeoutError(f"{len(self.latencies)} of {self.expected} rows read in time")
        return len(self.latencies) < self.expected

    def __exit__(self, *exc):
        self.inserter.join(60)
        if self.inserter.is_alive():
            self.inserter.kill()
            self.inserter.join()
        self.cpu = time.process_time() - self.cpu

    def result(self) -> dict:
        return {"rows/s": len(self.latencies) / (self.last - self.first),
                "p50 ms": percentile(self.latencies, 0.5) * 1000,
                "p99 ms": percentile(self.latencies, 0.99) * 1000, "cpu s": self.cpu}


def cdc_connector(pg: LocalPostgres, db: str, rate: int, seconds: float) -> dict:
    slot = f"bench_{uuid.uuid4().hex[:8]}"
    task = PostgresConnectorTask()
    task.start(_cdc_settings(pg, db, "bench", slot))
    try:
        with _Reading(pg, db, rate, seconds) as reading:
            going = True
            while going:
                records = task.poll() or []
                going = reading.add([r.value.get("after").get("sent") for r in records
                                     if r.value is not None])
                for r in records:
                    task.commit_record(r, None)
                task.commit()
    finally:
        task.stop()
        _drop_slot(pg, db, slot)
    return reading.result()


def _cdc_settings(pg: LocalPostgres, db: str, prefix: str, slot: str) -> dict:
    return {"database.hostname": pg.host, "database.port": str(pg.port),
            "database.user": pg.user, "database.password": pg.password,
            "database.dbname": db, "topic.prefix": prefix, "slot.name": slot,
            "publication.name": "bench", "snapshot.mode": "never", "poll.interval.ms": "100"}


def cdc_pipeline(pg: LocalPostgres, db: str, rate: int, seconds: float, bootstrap: str,
                 root: Path) -> dict:
    name = f"bench_{uuid.uuid4().hex[:8]}"
    topic = f"{name}.public.events"
    create_topic(bootstrap, topic)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": name,
                         "enable.auto.commit": False, "auto.offset.reset": "earliest",
                         "fetch.wait.max.ms": 50})
    consumer.subscribe([topic])
    json_values = "org.apache.kafka.connect.json.JsonConverter"
    worker = Worker(root, name, {
        "bootstrap.servers": bootstrap, "key.converter": json_values,
        "value.converter": json_values, "key.converter.schemas.enable": "false",
        "value.converter.schemas.enable": "false",
        "offset.storage.file.filename": str(root / f"{name}.offsets"),
        "offset.flush.interval.ms": "1000"}, [{
            "name": name, "tasks.max": "1",
            "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
            **_cdc_settings(pg, db, name, name)}])
    try:
        deadline = time.monotonic() + 60  # the slot made: rows inserted from now on stream
        while not any(t.get("state") == "RUNNING" for t in worker.tasks(name)):
            if time.monotonic() > deadline:
                raise TimeoutError(f"the CDC task never ran: see {root / (name + '.log')}")
            time.sleep(0.2)
        time.sleep(1.0)
        worker_cpu = worker.cpu()
        with _Reading(pg, db, rate, seconds) as reading:
            going = True
            while going:
                going = reading.add([json.loads(m.value())["after"]["sent"]
                                     for m in consumer.consume(1000, 0.1)
                                     if not m.error() and m.value()])
        reading.cpu += worker.cpu() - worker_cpu  # the consumer's and the worker's
    finally:
        worker.stop()
        consumer.close()
        _drop_slot(pg, db, name)
    return reading.result()


def cdc_direct(pg: LocalPostgres, db: str, rate: int, seconds: float) -> dict:
    slot = f"bench_{uuid.uuid4().hex[:8]}"
    conn = psycopg2.connect(pg.dsn(db), connection_factory=psycopg2.extras.LogicalReplicationConnection)
    cur = conn.cursor()
    cur.create_replication_slot(slot, output_plugin="pgoutput")
    cur.start_replication(slot, decode=False, options={"proto_version": "1",
                                                       "publication_names": "bench"})
    try:
        with _Reading(pg, db, rate, seconds) as reading:
            going, sent, last = True, [], 0
            while going:
                message = cur.read_message()
                if message is not None:
                    payload = message.payload
                    if payload[:1] == b"I":
                        sent.append(float(_tuple_texts(payload, 6)[1]))
                    last = message.data_start
                    continue
                going = reading.add(sent)
                sent = []
                if last:
                    cur.send_feedback(flush_lsn=last)
                select.select([conn], [], [], 0.1)
    finally:
        conn.close()
        _drop_slot(pg, db, slot)
    return reading.result()


def _tuple_texts(payload: bytes, at: int) -> list[str | None]:
    """pgoutput's TupleData from ``at``: each column's text (None for null)."""
    (count,) = struct.unpack_from("!H", payload, at)
    at += 2
    out = []
    for _ in range(count):
        kind = payload[at:at + 1]
        at += 1
        if kind == b"t":
            (size,) = struct.unpack_from("!I", payload, at)
            out.append(payload[at + 4:at + 4 + size].decode())
            at += 4 + size
        else:
            out.append(None)
    return out


def _drop_slot(pg: LocalPostgres, db: str, slot: str) -> None:
    with psycopg.connect(pg.dsn(db), autocommit=True) as conn:
        deadline = time.monotonic() + 10
        while conn.execute("SELECT active FROM pg_replication_slots WHERE slot_name = %s",
                           (slot,)).fetchone() == (True,) and time.monotonic() < deadline:
            time.sleep(0.05)
        conn.execute("SELECT pg_drop_replication_slot(%s)", (slot,))


# -- jdbc sink ---------------------------------------------------------------------------

def accounts(n: int) -> list[tuple]:
    return [(i % KEYS, f"owner-{i % KEYS}", ("free", "team", "pro")[i % 3], i * 0.5)
            for i in range(n)]


def sink_records(rows: list[tuple]) -> list[SinkRecord]:
    out = []
    for offset, row in enumerate(rows):
        value = Struct(ROW)
        for field, v in zip(("id", "owner", "plan", "balance"), row):
            value.put(field, v)
        out.append(SinkRecord("accounts", 0, None, None, ROW, value, offset))
    return out


def _fresh_table(pg: LocalPostgres, db: str, table: str) -> None:
    with psycopg.connect(pg.dsn(db), autocommit=True) as conn:
        conn.execute(f"DROP TABLE IF EXISTS {table}")
        conn.execute(f"CREATE TABLE {table} (id BIGINT PRIMARY KEY, owner TEXT NOT NULL, "
                     "plan TEXT NOT NULL, balance DOUBLE PRECISION NOT NULL)")


def _timed_batches(write, items: list) -> dict:
    latencies = []
    start = time.perf_counter()
    for i in range(0, len(items), BATCH):
        began = time.perf_counter()
        write(items[i:i + BATCH])
        latencies.append(time.perf_counter() - began)
    seconds = time.perf_counter() - start
    return {"rows/s": len(items) / seconds, "p50 ms": percentile(latencies, 0.5) * 1000,
            "p99 ms": percentile(latencies, 0.99) * 1000}


def jdbc_connector(pg: LocalPostgres, db: str, records: list[SinkRecord]) -> dict:
    _fresh_table(pg, db, "accounts")
    task = JdbcSinkTask()
    task.start({"connection.url": pg.jdbc_url(db), "connection.user": pg.user,
                "connection.password": pg.password, "topics": "accounts",
                "insert.mode": "upsert", "pk.mode": "record_value", "pk.fields": "id",
                "batch.size": str(BATCH)})
    try:
        return _timed_batches(task.put, records)
    finally:
        task.stop()


def jdbc_direct(pg: LocalPostgres, db: str, rows: list[tuple]) -> dict:
    _fresh_table(pg, db, "accounts")
    sql = ("INSERT INTO accounts (id, owner, plan, balance) VALUES (%s, %s, %s, %s) "
           "ON CONFLICT (id) DO UPDATE SET owner = EXCLUDED.owner, plan = EXCLUDED.plan, "
           "balance = EXCLUDED.balance")
    with psycopg.connect(pg.dsn(db)) as conn:
        def write(batch):
            with conn.transaction(), conn.cursor() as cur:
                cur.executemany(sql, batch)
        return _timed_batches(write, rows)


# -- the runs ----------------------------------------------------------------------------

def report(label: str, runs: dict[str, list[dict]]) -> None:
    medians = {kind: {m: statistics.median(r[m] for r in rs) for m in rs[0]}
               for kind, rs in runs.items()}
    for kind, values in medians.items():
        print(f"{label} median {kind:9s}: " + "  ".join(f"{m} {v:,.1f}"
                                                      for m, v in values.items()), flush=True)
    direct = medians["direct"]["rows/s"]
    for kind in medians.keys() - {"direct"}:
        print(f"{label} {kind}/direct rows/s {medians[kind]['rows/s'] / direct:.2f}",
              flush=True)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.databases")
    parser.add_argument("--only", choices=("cdc", "jdbc"))
    parser.add_argument("--rates", default="2000,10000")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--pipeline", action="store_true",
                        help="cdc also through a josefk broker and a josefk connect worker")
    args = parser.parse_args(argv)
    pg = LocalPostgres()
    root = Path(tempfile.mkdtemp(prefix="bench-databases-"))
    broker = Josefk(root, {"offsets.topic.replication.factor": 1,
                           "group.initial.rebalance.delay.ms": 0}) if args.pipeline else None
    try:
        pg.start()
        if broker is not None:
            broker.start()
        db = pg.create_database("bench")
        with psycopg.connect(pg.dsn(db), autocommit=True) as conn:
            conn.execute("CREATE TABLE events (id BIGSERIAL PRIMARY KEY, "
                         "sent DOUBLE PRECISION NOT NULL, note TEXT NOT NULL)")
            conn.execute("CREATE PUBLICATION bench FOR TABLE events")
        if args.only in (None, "cdc"):
            for rate in (int(r) for r in args.rates.split(",")):
                ways = {"connector": cdc_connector, "direct": cdc_direct}
                if broker is not None:
                    ways["pipeline"] = lambda *a: cdc_pipeline(*a, broker.bootstrap, root)
                runs = {kind: [] for kind in ways}
                for r in range(args.rounds):
                    for kind, run in ways.items():
                        result = run(pg, db, rate, args.seconds)
                        runs[kind].append(result)
                        print(f"cdc {rate}/s round {r + 1} {kind:9s}: " + "  ".join(
                            f"{m} {v:,.1f}" for m, v in result.items()), flush=True)
                report(f"cdc {rate}/s", runs)
        if args.only in (None, "jdbc"):
            rows = accounts(args.rows)
            records = sink_records(rows)
            runs = {"connector": [], "direct": []}
            for r in range(args.rounds):
                for kind, run in (("connector", lambda: jdbc_connector(pg, db, records)),
                                  ("direct", lambda: jdbc_direct(pg, db, rows))):
                    result = run()
                    runs[kind].append(result)
                    print(f"jdbc round {r + 1} {kind:9s}: " + "  ".join(
                        f"{m} {v:,.1f}" for m, v in result.items()), flush=True)
            report("jdbc upsert", runs)
    finally:
        if broker is not None:
            broker.stop()
        pg.stop()
        cleanup_dir(root)


if __name__ == "__main__":
    main()
