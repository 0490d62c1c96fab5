"""The PostgreSQL change data capture connector against a real PostgreSQL (wal_level=logical):
the snapshot, then the stream, in Debezium's shapes; acknowledgements moving the slot; a
restart after a crash replaying without a gap or a duplicate."""
from __future__ import annotations

import datetime
import decimal
import json
import socket
import time

import psycopg
import pytest

from josefk.connect.api.errors import ConnectException, RetriableException
from josefk.connect.api.schema import Date, Schema, Timestamp, Type
from josefk.connect.connectors.postgres_cdc import PostgresConnector, PostgresConnectorTask
from josefk.connect.converters.json import JsonConverter
from josefk.connect.connectors.postgres_cdc.pgoutput import parse_lsn
from tests.connect.connectors.contexts import (ConnectorContext, Offsets, SourceContext,
                                               poll_until)

ENVELOPE_FIELDS = ["before", "after", "source", "op", "ts_ms", "ts_us", "ts_ns", "transaction"]
SOURCE_FIELDS = ["version", "connector", "name", "ts_ms", "snapshot", "db", "sequence", "ts_us",
                 "ts_ns", "schema", "table", "txId", "lsn", "xmin"]


class Pg:
    def __init__(self, server, database):
        self.server, self.database = server, database
        self.conn = psycopg.connect(server.dsn(database), autocommit=True)
        self.props = {"database.hostname": server.host, "database.port": str(server.port),
                      "database.user": server.user, "database.password": server.password,
                      "database.dbname": database, "topic.prefix": "shop",
                      "slot.name": f"s_{database}"[:63], "publication.name": f"p_{database}",
                      "poll.interval.ms": "100", "slot.retry.delay.ms": "50"}

    def run(self, *statements):
        for statement in statements:
            self.conn.execute(statement)

    def tx(self, *statements):
        with self.conn.transaction():
            for statement in statements:
                self.conn.execute(statement)

    def slot_flushed(self) -> int:
        (lsn,) = self.conn.execute("SELECT confirmed_flush_lsn FROM pg_replication_slots "
                                   "WHERE slot_name = %s", (self.props["slot.name"],)).fetchone()
        return parse_lsn(str(lsn))


@pytest.fixture
def pg(postgres, pg_database):
    p = Pg(postgres, pg_database)
    yield p
    p.conn.close()


def start(pg: Pg, offsets: Offsets | None = None, **settings) -> PostgresConnectorTask:
    props = {**pg.props, **{k.replace("_", "."): str(v) for k, v in settings.items()}}
    connector = PostgresConnector()
    connector.initialize(ConnectorContext())
    connector.start(props)
    [config] = connector.task_configs(3)
    task = PostgresConnectorTask()
    task.initialize(SourceContext(config, offsets))
    task.start(config)
    return task


def ack(task, offsets: Offsets, records) -> None:
    """What the worker does once records are in Kafka: commit_record each, store the offsets,
    then commit()."""
    for r in records:
        task.commit_record(r, None)
    offsets.commit(records)
    task.commit()


def summary(records):
    """(op, key id, after's name) per record; tombstones as ('tombstone', id, None)."""
    out = []
    for r in records:
        key = r.key.get("id") if r.key is not None else None
        if r.value is None:
            out.append(("tombstone", key, None))
        else:
            after = r.value.get("after")
            out.append((r.value.get("op"), key, after.get("name") if after else None))
    return out


def test_snapshot_then_stream_in_debeziums_envelope(pg):
    pg.run("CREATE TABLE customers (id SERIAL PRIMARY KEY, name TEXT NOT NULL, email TEXT)",
           "INSERT INTO customers (name, email) VALUES ('ann', 'a@x'), ('bob', NULL)")
    offsets = Offsets()
    task = start(pg, offsets)
    try:
        snapshot = poll_until(task, 2)
        assert summary(snapshot) == [("r", 1, "ann"), ("r", 2, "bob")]
        first = snapshot[0]
        assert first.topic == "shop.public.customers"
        assert first.source_partition == {"server": "shop"}
        assert [f.name for f in first.value_schema.fields()] == ENVELOPE_FIELDS
        assert first.value_schema.name == "shop.public.customers.Envelope"
        assert first.value_schema.field("after").schema.name == "shop.public.customers.Value"
        assert first.key_schema.name == "shop.public.customers.Key"
        assert [f.name for f in first.key_schema.fields()] == ["id"]
        source = first.value.get("source")
        assert [f.name for f in source.schema.fields()] == SOURCE_FIELDS
        assert source.schema.name == "io.debezium.connector.postgresql.Source"
        assert (source.get("connector"), source.get("name"), source.get("db"),
                source.get("schema"), source.get("table")) == (
            "postgresql", "shop", pg.database, "public", "customers")
        assert [r.value.get("source").get("snapshot") for r in snapshot] == ["first", "last"]
        assert snapshot[0].source_offset["snapshot"] is True
        assert [r.source_offset["last_snapshot_record"] for r in snapshot] == [False, True]
        assert first.value.get("before") is None and first.value.get("ts_ms") > 0

        pg.run("INSERT INTO customers (name) VALUES ('cy')",
               "UPDATE customers SET email = 'b@x' WHERE id = 2",
               "DELETE FROM customers WHERE id = 1")
        pg.tx("INSERT INTO customers (name) VALUES ('dee')",
              "UPDATE customers SET name = 'dee2' WHERE name = 'dee'")
        stream = poll_until(task, 6)
        assert summary(stream) == [("c", 3, "cy"), ("u", 2, "bob"), ("d", 1, None),
                                   ("tombstone", 1, None), ("c", 4, "dee"), ("u", 4, "dee2")]
        insert, update, delete, tombstone = stream[:4]
        assert update.value.get("after").get("email") == "b@x"
        assert delete.value.get("before").get("id") == 1
        assert tombstone.value_schema is None and tombstone.key == delete.key
        for r in (insert, update, delete):
            s = r.value.get("source")
            assert s.get("snapshot") == "false" and s.get("txId") > 0 and s.get("lsn") > 0
            commit = r.source_offset["lsn_commit"]
            assert json.loads(s.get("sequence")) == [None if commit is None else str(commit),
                                                     str(s.get("lsn"))]
            assert set(r.source_offset) == {"lsn_proc", "lsn_commit", "lsn", "txId", "ts_usec"}
            assert r.source_offset["lsn"] == s.get("lsn")
            assert r.source_offset["txId"] == s.get("txId")
        # lsn_commit: the last transaction read through (none before the first one's commit)
        assert insert.source_offset["lsn_commit"] is None
        assert json.loads(insert.value.get("source").get("sequence"))[0] is None
        assert update.source_offset["lsn_commit"] > insert.source_offset["lsn"]
        # one transaction: one txId, one lsn_commit, LSNs rising
        assert stream[4].source_offset["txId"] == stream[5].source_offset["txId"]
        assert stream[4].source_offset["lsn_commit"] == stream[5].source_offset["lsn_commit"]
        assert stream[4].source_offset["lsn"] < stream[5].source_offset["lsn"]
        ack(task, offsets, snapshot + stream)
    finally:
        task.stop()


def test_the_events_through_the_json_converter_read_as_debeziums(pg):
    pg.run("CREATE TABLE customers (id INT PRIMARY KEY, name TEXT NOT NULL, "
           "price NUMERIC(6,2))")
    task = start(pg, snapshot_mode="never")
    try:
        task.poll()
        pg.run("INSERT INTO customers VALUES (1004, 'anne', 1.50)")
        [record] = poll_until(task, 1)
    finally:
        task.stop()
    plain, enveloped = JsonConverter(), JsonConverter()
    plain.configure({"schemas.enable": "false"}, is_key=False)
    enveloped.configure({"schemas.enable": "true"}, is_key=True)
    value = json.loads(plain.from_connect_data(record.topic, record.value_schema, record.value))
    assert list(value) == ENVELOPE_FIELDS and list(value["source"]) == SOURCE_FIELDS
    assert value["after"] == {"id": 1004, "name": "anne", "price": "AJY="}  # 150, scale 2
    assert (value["before"], value["op"], value["transaction"]) == (None, "c", None)
    assert value["source"]["snapshot"] == "false" and value["source"]["xmin"] is None
    key = json.loads(enveloped.from_connect_data(record.topic, record.key_schema, record.key))
    assert key == {"schema": {"type": "struct", "fields": [
        {"type": "int32", "optional": False, "field": "id"}], "optional": False,
        "name": "shop.public.customers.Key"}, "payload": {"id": 1004}}


def test_the_slot_moves_only_to_acknowledged_records_and_a_crash_replays_the_rest(pg):
    pg.run("CREATE TABLE customers (id INT PRIMARY KEY, name TEXT NOT NULL)")
    offsets = Offsets()
    task = start(pg, offsets, snapshot_mode="never")
    try:
        assert task.poll() is None  # replication started, nothing yet
        start_lsn = pg.slot_flushed()
        for i in range(1, 6):
            pg.run(f"INSERT INTO customers VALUES ({i}, 'n{i}')")
        records = poll_until(task, 5)
        assert [r.key.get("id") for r in records] == [1, 2, 3, 4, 5]
        task.poll()
        assert pg.slot_flushed() == start_lsn  # nothing acknowledged: the slot stays
        ack(task, offsets, records[:2])
        task.poll()  # the polling thread tells the server
        assert pg.slot_flushed() == records[1].source_offset["lsn"]
    finally:
        task.stop()  # a crash: 3, 4 and 5 were never acknowledged
    task = start(pg, offsets, snapshot_mode="never")
    try:
        replayed = poll_until(task, 3)
        assert [r.key.get("id") for r in replayed] == [3, 4, 5]  # no gap, no duplicate
        pg.run("INSERT INTO customers VALUES (6, 'n6')")
        assert [r.key.get("id") for r in poll_until(task, 1)] == [6]
    finally:
        task.stop()


def test_interleaved_transactions_replay_in_commit_order_without_a_gap(pg):
    pg.run("CREATE TABLE t (id INT PRIMARY KEY)")
    offsets = Offsets()
    task = start(pg, offsets, snapshot_mode="never")
    other = psycopg.connect(pg.server.dsn(pg.database))
    try:
        task.poll()
        other.execute("INSERT INTO t VALUES (10)")  # a transaction left open: its change
        pg.run("INSERT INTO t VALUES (11)")  # comes first in the WAL, its commit last
        other.execute("INSERT INTO t VALUES (12)")
        other.commit()
        records = poll_until(task, 3)
        assert [r.key.get("id") for r in records] == [11, 10, 12]  # commit order
        assert records[1].source_offset["lsn"] < records[0].source_offset["lsn"]
        ack(task, offsets, records[:1])
        task.poll()
    finally:
        other.close()
        task.stop()
    task = start(pg, offsets, snapshot_mode="never")
    try:
        assert [r.key.get("id") for r in poll_until(task, 2)] == [10, 12]
        assert task.poll() is None
    finally:
        task.stop()


def test_a_lost_replication_connection_is_made_again_without_a_gap_or_a_repeat(pg):
    pg.run("CREATE TABLE t (id INT PRIMARY KEY)")
    task = start(pg, snapshot_mode="never")
    try:
        task.poll()
        pg.run("INSERT INTO t VALUES (1)", "INSERT INTO t VALUES (2)")
        assert [r.key.get("id") for r in poll_until(task, 2)] == [1, 2]
        pg.run("SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots "
               "WHERE slot_name = '%s'" % pg.props["slot.name"])
        pg.run("INSERT INTO t VALUES (3)")
        records, retried = [], []
        deadline = time.monotonic() + 20
        while not records and time.monotonic() < deadline:
            try:
                records = task.poll() or []
            except RetriableException as e:  # the worker polls again, as Connect's does
                retried.append(str(e))
        assert [r.key.get("id") for r in records] == [3]
        [message] = retried
        assert message.startswith("The replication connection was lost (") and "\n" not in message
        pg.run("INSERT INTO t VALUES (4)")
        assert [r.key.get("id") for r in poll_until(task, 1)] == [4]
    finally:
        task.stop()


def test_an_unfinished_snapshot_is_taken_again_then_streaming_follows(pg):
    pg.run("CREATE TABLE t (id INT PRIMARY KEY, name TEXT)",
           "INSERT INTO t SELECT g, 'r' || g FROM generate_series(1, 5) g")
    offsets = Offsets()
    task = start(pg, offsets, max_batch_size=2)
    try:
        first = task.poll()
        assert [r.key.get("id") for r in first] == [1, 2]
        ack(task, offsets, first)
    finally:
        task.stop()
    pg.run("INSERT INTO t VALUES (6, 'later')")
    task = start(pg, offsets, max_batch_size=10)
    try:
        records = poll_until(task, 6)
        # the snapshot again (the slot already exists: no exported snapshot, so row 6 may
        # come in it and again from the stream), then the stream
        ids = [r.key.get("id") for r in records]
        assert ids[:5] == [1, 2, 3, 4, 5] and set(ids) == {1, 2, 3, 4, 5, 6}
        assert records[-1].value.get("op") in ("r", "c")
    finally:
        task.stop()


def test_when_needed_snapshots_again_when_the_slot_is_gone(pg):
    pg.run("CREATE TABLE t (id INT PRIMARY KEY, name TEXT)", "INSERT INTO t VALUES (1, 'a')")
    offsets = Offsets()
    task = start(pg, offsets)
    try:
        ack(task, offsets, poll_until(task, 1))
    finally:
        task.stop()
    task = start(pg, offsets, snapshot_mode="when_needed")  # the slot is there: stream only
    try:
        assert task.poll() is None
    finally:
        task.stop()
    pg.run("SELECT pg_drop_replication_slot(%s)" % repr(pg.props["slot.name"]))
    task = start(pg, offsets, snapshot_mode="when_needed")
    try:
        assert [(r.value.get("op"), r.key.get("id")) for r in poll_until(task, 1)] == [("r", 1)]
    finally:
        task.stop()


def test_initial_only_stops_after_the_snapshot_and_the_slot_can_go_with_the_task(pg):
    pg.run("CREATE TABLE t (id INT PRIMARY KEY)", "INSERT INTO t VALUES (1), (2)")
    task = start(pg, snapshot_mode="initial_only", slot_drop_on_stop="true")
    try:
        assert [r.key.get("id") for r in poll_until(task, 2)] == [1, 2]
        pg.run("INSERT INTO t VALUES (3)")
        assert task.poll() is None and task.poll() is None  # no streaming
    finally:
        task.stop()
    assert pg.conn.execute("SELECT count(*) FROM pg_replication_slots WHERE slot_name = %s",
                           (pg.props["slot.name"],)).fetchone() == (0,)


def test_replica_identity_decides_what_before_holds(pg):
    pg.run("CREATE TABLE plain (id INT PRIMARY KEY, name TEXT NOT NULL, note TEXT)",
           "CREATE TABLE full_rows (id INT PRIMARY KEY, name TEXT NOT NULL, note TEXT)",
           "ALTER TABLE full_rows REPLICA IDENTITY FULL")
    task = start(pg, snapshot_mode="never")
    try:
        task.poll()
        for table in ("plain", "full_rows"):
            pg.run(f"INSERT INTO {table} VALUES (1, 'a', 'n')",
                   f"UPDATE {table} SET name = 'b' WHERE id = 1",
                   f"DELETE FROM {table} WHERE id = 1")
        records = [r for r in poll_until(task, 8) if r.value is not None]
        plain_update, plain_delete, full_update, full_delete = (
            records[1], records[2], records[4], records[5])
        assert plain_update.value.get("before") is None
        before = plain_delete.value.get("before")  # only the key: Debezium's fallbacks
        assert (before.get("id"), before.get("name"), before.get("note")) == (1, "", None)
        before = full_update.value.get("before")
        assert (before.get("id"), before.get("name"), before.get("note")) == (1, "a", "n")
        assert full_delete.value.get("before").get("name") == "b"
    finally:
        task.stop()


def test_an_unchanged_toasted_value_is_debeziums_placeholder(pg):
    pg.run("CREATE TABLE docs (id INT PRIMARY KEY, body TEXT, n INT)")
    task = start(pg, snapshot_mode="never")
    try:
        task.poll()
        # random text does not compress: it is stored out of line, and not sent unchanged
        pg.run("INSERT INTO docs SELECT 1, string_agg(md5(g::text), '') , 0 "
               "FROM generate_series(1, 500) g",
               "UPDATE docs SET n = 1 WHERE id = 1")
        insert, update = poll_until(task, 2)
    finally:
        task.stop()
    assert len(insert.value.get("after").get("body")) == 16000
    assert update.value.get("after").get("body") == "__debezium_unavailable_value"
    assert update.value.get("after").get("n") == 1


def test_a_primary_key_change_is_a_delete_a_tombstone_and_a_create(pg):
    pg.run("CREATE TABLE k (id INT PRIMARY KEY, name TEXT NOT NULL)",
           "INSERT INTO k VALUES (1, 'one')")
    task = start(pg, snapshot_mode="no_data")
    try:
        task.poll()
        pg.run("UPDATE k SET id = 2 WHERE id = 1")
        assert summary(poll_until(task, 3)) == [("d", 1, None), ("tombstone", 1, None),
                                                ("c", 2, "one")]
        pg.run("TRUNCATE k", "INSERT INTO k VALUES (3, 'three')")
        # truncates are passed over, as Debezium's default skipped.operations=t
        assert summary(poll_until(task, 1)) == [("c", 3, "three")]
    finally:
        task.stop()


def test_filters_and_a_filtered_publication(pg):
    pg.run("CREATE SCHEMA inv", "CREATE TABLE inv.keep (id INT PRIMARY KEY, name TEXT)",
           "CREATE TABLE inv.skip_me (id INT PRIMARY KEY, name TEXT)",
           "CREATE TABLE public.other (id INT PRIMARY KEY, name TEXT)",
           "INSERT INTO inv.keep VALUES (1, 'k')", "INSERT INTO inv.skip_me VALUES (1, 's')",
           "INSERT INTO public.other VALUES (1, 'o')")
    task = start(pg, table_include_list="inv\\..*", table_exclude_list="inv.skip_me",
                 publication_autocreate_mode="filtered", tombstones_on_delete="false")
    try:
        assert [r.topic for r in poll_until(task, 1)] == ["shop.inv.keep"]
        (tables,) = pg.conn.execute(
            "SELECT array_agg(schemaname || '.' || tablename) FROM pg_publication_tables "
            "WHERE pubname = %s", (pg.props["publication.name"],)).fetchone()
        assert tables == ["inv.keep"]
        pg.run("DELETE FROM inv.keep", "DELETE FROM inv.skip_me", "DELETE FROM public.other")
        records = poll_until(task, 1)
        assert [(r.topic, r.value.get("op")) for r in records] == [("shop.inv.keep", "d")]
        assert task.poll() is None  # and no tombstone
    finally:
        task.stop()


def snapshot_and_stream(pg: Pg, table: str, row: str) -> list:
    """The same ``row`` (ids 1 and 2) as the snapshot gives it and as the stream does."""
    pg.run(f"INSERT INTO {table} VALUES (1, {row})")
    task = start(pg)
    try:
        [snap] = poll_until(task, 1)
        pg.run(f"INSERT INTO {table} VALUES (2, {row})")
        [streamed] = poll_until(task, 1)
    finally:
        task.stop()
    return [snap, streamed]


def test_column_types_are_debeziums_in_the_snapshot_and_the_stream(pg):
    pg.run("CREATE DOMAIN positive AS INT CHECK (VALUE > 0)",
           "CREATE TABLE typed (id BIGINT PRIMARY KEY, flag BOOLEAN, small SMALLINT, "
           "price NUMERIC(10,2), free NUMERIC, f REAL, d DOUBLE PRECISION, day DATE, "
           "at TIME, ts TIMESTAMP, tstz TIMESTAMPTZ, raw BYTEA, doc JSONB, u UUID, "
           "dom positive NOT NULL)")
    row = ("true, 7, 12.50, 3.14159, 1.5, 2.25, '2024-02-29', '13:14:15.5', "
           "'2024-01-01 10:00:00.123456', '2024-01-01 10:00:00+02', '\\x0102', "
           "'{\"a\": 1}', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', 9")
    for record in snapshot_and_stream(pg, "typed", row):
        after = record.value.get("after")
        schema = after.schema
        price = schema.field("price").schema
        assert (price.name, price.parameters) == (
            "org.apache.kafka.connect.data.Decimal",
            {"scale": "2", "connect.decimal.precision": "10"})
        assert after.get("price") == decimal.Decimal("12.50")
        free = after.get("free")
        assert free.schema.name == "io.debezium.data.VariableScaleDecimal"
        assert (free.get("scale"), int.from_bytes(free.get("value"), "big", signed=True)) == (
            5, 314159)
        assert (after.get("flag"), after.get("small"), after.get("f"), after.get("d")) == (
            True, 7, 1.5, 2.25)
        assert schema.field("small").schema.type is Type.INT16
        assert schema.field("f").schema.type is Type.FLOAT32
        assert schema.field("day").schema.name == "io.debezium.time.Date"
        assert after.get("day") == 19782
        assert schema.field("at").schema.name == "io.debezium.time.MicroTime"
        assert after.get("at") == (13 * 3600 + 14 * 60 + 15) * 1_000_000 + 500_000
        assert schema.field("ts").schema.name == "io.debezium.time.MicroTimestamp"
        assert after.get("ts") == 1_704_103_200_123_456
        assert schema.field("tstz").schema.name == "io.debezium.time.ZonedTimestamp"
        assert after.get("tstz") == "2024-01-01T08:00:00Z"
        assert after.get("raw") == b"\x01\x02"
        assert schema.field("doc").schema.name == "io.debezium.data.Json"
        assert json.loads(after.get("doc")) == {"a": 1}
        assert schema.field("u").schema.name == "io.debezium.data.Uuid"
        assert after.get("u") == "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"
        assert schema.field("dom").schema == Schema.INT32_SCHEMA and after.get("dom") == 9


def test_intervals_enums_and_arrays_are_debeziums_and_ranges_are_text(pg):
    pg.run("CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy')",
           "CREATE TABLE shaped (id INT PRIMARY KEY, span INTERVAL, feel mood NOT NULL, "
           "ints INT[], words TEXT[], prices NUMERIC(6,2)[], days DATE[], r INT4RANGE)")
    row = ("'1 year 2 months 3 days 04:05:06.5', 'happy', '{1,NULL,3}', "
           "'{\"a b\",NULL,\"x\\\"y\",z}', '{1.5,2}', '{2024-02-29}', '[1,5)'")
    for record in snapshot_and_stream(pg, "shaped", row):
        after = record.value.get("after")
        schema = after.schema
        assert schema.field("span").schema.name == "io.debezium.time.MicroDuration"
        # 14 months of 30.4375 days, 3 days, 4 h 5 min 6.5 s
        assert after.get("span") == 37_091_106_500_000
        feel = schema.field("feel").schema
        assert (feel.name, feel.parameters, feel.optional) == (
            "io.debezium.data.Enum", {"allowed": "sad,ok,happy"}, False)
        assert after.get("feel") == "happy"
        assert schema.field("ints").schema.value_schema == Schema.OPTIONAL_INT32_SCHEMA
        assert after.get("ints") == [1, None, 3]
        assert after.get("words") == ["a b", None, 'x"y', "z"]
        assert after.get("prices") == [decimal.Decimal("1.50"), decimal.Decimal("2.00")]
        assert schema.field("days").schema.value_schema.name == "io.debezium.time.Date"
        assert after.get("days") == [19782]
        assert schema.field("r").schema.type is Type.STRING and after.get("r") == "[1,5)"
    task = start(pg, interval_handling_mode="string",
                 slot_name=f"{pg.props['slot.name'][:55]}_s")
    try:
        records = poll_until(task, 2)
    finally:
        task.stop()
    span = records[0].value.get("after")
    assert span.schema.field("span").schema.name == "io.debezium.time.Interval"
    assert span.get("span") == "P1Y2M3DT4H5M6.5S"


def test_decimal_handling_and_time_precision_modes(pg):
    pg.run("CREATE TABLE m (id INT PRIMARY KEY, price NUMERIC(10,2), day DATE, at TIME, "
           "ts TIMESTAMP)",
           "INSERT INTO m VALUES (1, 12.50, '2024-02-29', '13:14:15.5', '2024-01-01 10:00:00')")
    expected = {
        ("double", "connect"): (12.5, datetime.date(2024, 2, 29), datetime.time(13, 14, 15, 500000),
                                datetime.datetime(2024, 1, 1, 10, tzinfo=datetime.timezone.utc)),
        ("string", "adaptive_time_microseconds"): (
            "12.50", 19782, (13 * 3600 + 14 * 60 + 15) * 1_000_000 + 500_000,
            1_704_103_200_000_000)}
    for n, ((decimals, times), values) in enumerate(expected.items()):
        task = start(pg, decimal_handling_mode=decimals, time_precision_mode=times,
                     slot_name=f"{pg.props['slot.name'][:55]}_{n}")
        try:
            [record] = poll_until(task, 1)
        finally:
            task.stop()
        after = record.value.get("after")
        assert tuple(after.get(c) for c in ("price", "day", "at", "ts")) == values
        if times == "connect":
            assert after.schema.field("day").schema == Date.builder().optional().build()
            assert after.schema.field("ts").schema == Timestamp.builder().optional().build()
        else:
            assert after.schema.field("at").schema.name == "io.debezium.time.MicroTime"


def test_heartbeats_carry_the_position_past_uncaptured_changes(pg):
    pg.run("CREATE TABLE seen (id INT PRIMARY KEY)", "CREATE TABLE unseen (id INT PRIMARY KEY)")
    offsets = Offsets()
    task = start(pg, offsets, snapshot_mode="never", table_include_list="public.seen",
                 heartbeat_interval_ms=1)
    try:
        task.poll()
        pg.run("INSERT INTO unseen VALUES (1)")
        (end,) = pg.conn.execute("SELECT pg_current_wal_lsn()").fetchone()
        beats = []
        for _ in range(50):
            beats = [r for r in task.poll() or [] if r.topic == "__debezium-heartbeat.shop"]
            if beats and beats[-1].source_offset["lsn"] >= parse_lsn(str(end)):
                break
        heartbeat = beats[-1]
        assert heartbeat.key.get("serverName") == "shop"
        assert heartbeat.key_schema.name == "io.debezium.connector.common.ServerNameKey"
        assert heartbeat.value_schema.name == "io.debezium.connector.common.Heartbeat"
        assert heartbeat.value.get("ts_ms") > 0
        ack(task, offsets, beats)
        task.poll()
        assert pg.slot_flushed() == heartbeat.source_offset["lsn"]
    finally:
        task.stop()


def test_a_column_added_mid_stream_appears_in_the_next_events(pg):
    pg.run("CREATE TABLE evolving (id INT PRIMARY KEY, name TEXT NOT NULL)")
    task = start(pg, snapshot_mode="never")
    try:
        task.poll()
        pg.run("INSERT INTO evolving VALUES (1, 'before')",
               "ALTER TABLE evolving ADD COLUMN rank INT",
               "INSERT INTO evolving VALUES (2, 'after')",
               "UPDATE evolving SET rank = 5 WHERE id = 2")
        old, new, updated = poll_until(task, 3)
    finally:
        task.stop()
    assert [f.name for f in old.value.get("after").schema.fields()] == ["id", "name"]
    after = new.value.get("after")
    assert [f.name for f in after.schema.fields()] == ["id", "name", "rank"]
    assert after.schema.field("rank").schema.optional and after.get("rank") is None
    assert updated.value.get("after").get("rank") == 5


# ---- bad input -------------------------------------------------------------------------

def test_a_wrong_password_is_one_line(pg):
    with pytest.raises(ConnectException) as e:
        start(pg, database_password="wrong")
    assert "password authentication failed" in str(e.value) and "\n" not in str(e.value)


def test_an_unreachable_server_is_one_line(pg):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(ConnectException, match=f"Couldn't connect to PostgreSQL at "
                                               f"127.0.0.1:{port}/") as e:
        start(pg, database_port=port)
    assert "\n" not in str(e.value)


def test_a_slot_in_use_and_a_missing_publication_are_named(pg):
    pg.run("CREATE TABLE t (id INT PRIMARY KEY)")
    task = start(pg, snapshot_mode="never")
    try:
        task.poll()
        with pytest.raises(ConnectException, match=f'Replication slot "{pg.props["slot.name"]}"'
                                                   f' is active'):
            start(pg, snapshot_mode="never", slot_max_retries=2)
    finally:
        task.stop()
    with pytest.raises(ConnectException, match="Publication 'nope' does not exist and "
                                               "publication.autocreate.mode is disabled"):
        start(pg, publication_name="nope", publication_autocreate_mode="disabled")


def test_validate_connects_as_debezium_does(pg):
    results = PostgresConnector().validate({**pg.props, "database.password": "wrong"})
    [error] = results["database.hostname"].errors
    assert error.startswith("Error while validating connector config: Couldn't connect to "
                            "PostgreSQL") and "password authentication failed" in error
    assert not any(v.errors for v in PostgresConnector().validate(pg.props).values())
    missing = PostgresConnector().validate({"topic.prefix": "x"})
    assert missing["database.hostname"].errors == [
        'Missing required configuration "database.hostname" which has no default value.']
