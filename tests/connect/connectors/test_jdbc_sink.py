"""The JDBC sink on SQLite and a real PostgreSQL, driven as the worker drives it: put() with
SinkRecords, then reading the table back."""
from __future__ import annotations

import datetime
import decimal
import re

import pytest
import sqlalchemy as sa

from josefk.connect.api.config import ConfigException
from josefk.connect.api.errors import ConnectException, RetriableException
from josefk.connect.api.records import SinkRecord
from josefk.connect.api.schema import (Date, Decimal, Schema, SchemaBuilder, Struct, Time,
                                       Timestamp)
from josefk.connect.connectors.jdbc import JdbcSinkConnector, JdbcSinkTask
from josefk.connect.connectors.jdbc.common import sqlalchemy_url
from tests.connect.connectors.contexts import SinkContext

UTC = datetime.timezone.utc
KEY = SchemaBuilder.struct().name("Key").field("id", Schema.INT64_SCHEMA).build()
VALUE = (SchemaBuilder.struct().name("Value").field("id", Schema.INT64_SCHEMA)
         .field("name", Schema.STRING_SCHEMA).field("score", Schema.OPTIONAL_FLOAT64_SCHEMA)
         .build())


@pytest.fixture(params=["sqlite", "postgresql"])
def db(request, tmp_path):
    if request.param == "sqlite":
        props = {"connection.url": f"jdbc:sqlite:{tmp_path}/sink.db"}
    else:
        pg = request.getfixturevalue("postgres")
        props = {"connection.url": pg.jdbc_url(request.getfixturevalue("pg_database")),
                 "connection.user": pg.user, "connection.password": pg.password}
    engine = sa.create_engine(sqlalchemy_url(props["connection.url"],
                                             props.get("connection.user"),
                                             props.get("connection.password")))
    yield props, engine
    engine.dispose()


def task_for(db, **settings):
    props, _ = db
    props = {**props, **{k.replace("_", "."): str(v) for k, v in settings.items()}}
    connector = JdbcSinkConnector()
    connector.start(props)
    [config] = connector.task_configs(1)
    task = JdbcSinkTask()
    context = SinkContext(config)
    task.initialize(context)
    task.start(config)
    return task, context


def value(id_: int, name: str, score: float | None = None, schema=VALUE) -> Struct:
    s = Struct(schema).put("id", id_).put("name", name)
    return s.put("score", score) if schema.field("score") else s


def record(id_, val, offset=0, topic="people", key_schema=KEY, value_schema=VALUE):
    key = Struct(KEY).put("id", id_) if key_schema is KEY else id_
    return SinkRecord(topic, 0, key_schema, key, value_schema if val is not None else None,
                      val, offset)


def rows(db, table="people", order="id"):
    with db[1].connect() as conn:
        return [tuple(r) for r in conn.execute(sa.text(f'SELECT * FROM "{table}" ORDER BY '
                                                       f'{order}'))]


def test_insert_creates_the_table_from_the_schema(db):
    task, _ = task_for(db, auto_create="true")
    task.put([record(1, value(1, "ann", 1.5)), record(2, value(2, "bob"), 1)])
    task.stop()
    assert rows(db) == [(1, "ann", 1.5), (2, "bob", None)]
    columns = {c["name"]: c for c in sa.inspect(db[1]).get_columns("people")}
    assert not columns["name"]["nullable"] and columns["score"]["nullable"]
    assert sa.inspect(db[1]).get_pk_constraint("people")["constrained_columns"] == []


def test_upsert_by_record_key_is_idempotent(db):
    task, _ = task_for(db, auto_create="true", insert_mode="upsert", pk_mode="record_key")
    batch = [record(1, value(1, "ann")), record(2, value(2, "bob"), 1),
             record(1, value(1, "ann2", 2.0), 2)]
    task.put(batch)
    task.put(batch)  # redelivered after a crash: nothing changes
    assert rows(db) == [(1, "ann2", 2.0), (2, "bob", None)]
    task.put([record(2, value(2, "bob", 7.0), 3)])
    task.stop()
    assert rows(db) == [(1, "ann2", 2.0), (2, "bob", 7.0)]
    assert sa.inspect(db[1]).get_pk_constraint("people")["constrained_columns"] == ["id"]


def test_pk_mode_kafka_keys_rows_by_topic_partition_offset(db):
    schema = SchemaBuilder.struct().field("name", Schema.STRING_SCHEMA).build()
    task, _ = task_for(db, auto_create="true", insert_mode="upsert", pk_mode="kafka")
    batch = [SinkRecord("log", 3, None, None, schema, Struct(schema).put("name", n), o)
             for o, n in enumerate(["a", "b"], start=10)]
    task.put(batch)
    task.put(batch)
    task.stop()
    assert rows(db, "log", "__connect_offset") == [("log", 3, 10, "a"), ("log", 3, 11, "b")]


def test_pk_mode_record_value_and_a_primitive_record_key(db):
    task, _ = task_for(db, auto_create="true", insert_mode="upsert", pk_mode="record_value",
                       pk_fields="name", table_name_format="by_name_${topic}")
    task.put([record(1, value(1, "ann")), record(2, value(2, "ann"), 1)])
    task.stop()
    assert rows(db, "by_name_people", "name") == [("ann", 2, None)]
    task, _ = task_for(db, auto_create="true", insert_mode="upsert", pk_mode="record_key",
                       pk_fields="pk", table_name_format="prim")
    task.put([record(5, value(5, "x"), key_schema=Schema.INT64_SCHEMA)])
    task.stop()
    assert rows(db, "prim", "pk") == [(5, 5, "x", None)]


def test_update_mode_changes_only_existing_rows(db):
    task, _ = task_for(db, auto_create="true", insert_mode="upsert", pk_mode="record_key")
    task.put([record(1, value(1, "ann"))])
    task.stop()
    task, _ = task_for(db, insert_mode="update", pk_mode="record_key")
    task.put([record(1, value(1, "ann", 3.0), 1), record(9, value(9, "nobody"), 2)])
    task.stop()
    assert rows(db) == [(1, "ann", 3.0)]


def test_tombstones_delete_in_order_with_writes(db):
    task, _ = task_for(db, auto_create="true", insert_mode="upsert", pk_mode="record_key",
                       delete_enabled="true", batch_size=2)
    task.put([record(1, value(1, "a")), record(2, value(2, "b"), 1), record(3, value(3, "c"), 2)])
    task.put([record(1, None, 3), record(2, None, 4), record(2, value(2, "back"), 5),
              record(3, None, 6)])
    task.stop()
    assert rows(db) == [(2, "back", None)]


def test_records_the_settings_cannot_write_fail_with_confluents_messages(db):
    task, _ = task_for(db, auto_create="true", name="mirror")
    with pytest.raises(ConnectException, match=re.escape(
            "The JDBC sink connector 'mirror' is configured with 'delete.enabled=false' and "
            "'pk.mode=none' and therefore requires non-null record values that are structs, "
            "but found record at (topic='people',partition=0,offset=7,timestamp=null) with a "
            "null value and null value schema.")):
        task.put([record(1, None, 7)])
    with pytest.raises(ConnectException, match=re.escape(
            "requires record values to be structs, but found record at (topic='people',"
            "partition=0,offset=8,timestamp=null) with a String value and String value "
            "schema.")):
        task.put([SinkRecord("people", 0, None, None, Schema.STRING_SCHEMA, "text", 8)])
    task.stop()
    task, _ = task_for(db, auto_create="true", insert_mode="upsert", pk_mode="record_key",
                       delete_enabled="true", name="mirror")
    with pytest.raises(ConnectException, match=re.escape(
            "'delete.enabled=true' and 'pk.mode=record_key' and therefore requires non-null "
            "record keys, but found record at (topic='people',partition=0,offset=9,"
            "timestamp=null) with a null key and Struct key schema.")):
        task.put([SinkRecord("people", 0, KEY, None, VALUE, value(1, "a"), 9)])
    task.stop()
    assert not sa.inspect(db[1]).has_table("people")  # checked before anything is written


def test_primary_key_fields_the_records_lack_are_named(db):
    task, _ = task_for(db, auto_create="true", insert_mode="upsert", pk_mode="record_key")
    with pytest.raises(ConnectException, match=r"Need exactly one PK column defined since the "
                                               r"key schema for records is a primitive type, "
                                               r"defined columns are: \[\]"):
        task.put([record(5, value(5, "x"), key_schema=Schema.INT64_SCHEMA)])
    task.stop()
    task, _ = task_for(db, auto_create="true", insert_mode="upsert", pk_mode="record_value",
                       pk_fields="id,email")
    with pytest.raises(ConnectException, match="is RECORD_VALUE with configured PK fields "
                                               r"\['id', 'email'\], but record value schema "
                                               "does not contain field: email"):
        task.put([record(1, value(1, "a"))])
    task.stop()


def test_auto_evolve_adds_optional_and_defaulted_columns(db):
    task, _ = task_for(db, auto_create="true", auto_evolve="true", insert_mode="upsert",
                       pk_mode="record_key")
    task.put([record(1, value(1, "ann"))])
    wider = (SchemaBuilder.struct().name("Value").field("id", Schema.INT64_SCHEMA)
             .field("name", Schema.STRING_SCHEMA).field("score", Schema.OPTIONAL_FLOAT64_SCHEMA)
             .field("city", Schema.OPTIONAL_STRING_SCHEMA)
             .field("level", SchemaBuilder.int32().default_value(3).build()).build())
    task.put([record(2, Struct(wider).put("id", 2).put("name", "bob").put("city", "Oslo")
                     .put("level", 5), 1, value_schema=wider)])
    assert rows(db) == [(1, "ann", None, None, 3), (2, "bob", None, "Oslo", 5)]
    strict = (SchemaBuilder.struct().field("id", Schema.INT64_SCHEMA)
              .field("must", Schema.STRING_SCHEMA).build())
    with pytest.raises(ConnectException, match='Cannot ALTER TABLE "people" to add missing '
                                               'field must, as the field is not optional and '
                                               'does not have a default value'):
        task.put([record(3, Struct(strict).put("id", 3).put("must", "x"), 2,
                         value_schema=strict)])
    task.stop()


def test_missing_tables_and_fields_without_auto_ddl_are_named(db):
    task, _ = task_for(db)
    with pytest.raises(ConnectException, match='Table "people" is missing and auto-creation '
                                               'is disabled'):
        task.put([record(1, value(1, "a"))])
    task.stop()
    with db[1].begin() as conn:
        conn.execute(sa.text("CREATE TABLE people (id BIGINT, name TEXT)"))
    task, _ = task_for(db)
    with pytest.raises(ConnectException, match=r'Table "people" is missing fields \(score\) '
                                               r'and auto-evolution is disabled'):
        task.put([record(1, value(1, "a"))])
    task.stop()


def test_database_errors_are_retried_then_fail(db):
    task, context = task_for(db, auto_create="true", pk_mode="record_key", max_retries=1,
                             retry_backoff_ms=25)
    task.put([record(1, value(1, "a"))])
    duplicate = [record(1, value(1, "again"), 1)]
    with pytest.raises(RetriableException, match="retries left 0") as e:
        task.put(duplicate)
    assert "\n" not in str(e.value)
    assert context.timeouts == [25]
    with pytest.raises(ConnectException, match="failed after 1 retries") as e:
        task.put(duplicate)
    assert not isinstance(e.value, RetriableException)
    task.stop()
    assert rows(db) == [(1, "a", None)]


def test_a_table_dropped_under_the_sink_is_created_again_on_the_retry(db):
    task, context = task_for(db, auto_create="true", insert_mode="upsert",
                             pk_mode="record_key", retry_backoff_ms=10)
    task.put([record(1, value(1, "a"))])
    with db[1].begin() as conn:
        conn.execute(sa.text("DROP TABLE people"))
    batch = [record(2, value(2, "b"), 1)]
    with pytest.raises(RetriableException):
        task.put(batch)
    task.put(batch)  # the worker's retry of the same records
    task.stop()
    assert rows(db) == [(2, "b", None)] and context.timeouts == [10]


def test_logical_types_round_trip(db):
    schema = (SchemaBuilder.struct().field("id", Schema.INT32_SCHEMA)
              .field("amount", Decimal.schema(2)).field("day", Date.SCHEMA)
              .field("at", Time.SCHEMA).field("ts", Timestamp.SCHEMA)
              .field("flag", Schema.BOOLEAN_SCHEMA).field("raw", Schema.BYTES_SCHEMA).build())
    v = (Struct(schema).put("id", 1).put("amount", decimal.Decimal("12.34"))
         .put("day", datetime.date(2024, 2, 29)).put("at", datetime.time(1, 2, 3))
         .put("ts", datetime.datetime(2024, 1, 1, 8, 30, tzinfo=UTC)).put("flag", True)
         .put("raw", b"\x00\x01"))
    task, _ = task_for(db, auto_create="true", insert_mode="upsert", pk_mode="record_value",
                       pk_fields="id")
    task.put([SinkRecord("typed", 0, None, None, schema, v, 0)])
    task.stop()
    table = sa.Table("typed", sa.MetaData(), autoload_with=db[1])
    with db[1].connect() as conn:
        [row] = conn.execute(sa.select(table)).all()
    assert row.id == 1 and decimal.Decimal(str(row.amount)) == decimal.Decimal("12.34")
    assert row.day == datetime.date(2024, 2, 29) and row.at == datetime.time(1, 2, 3)
    assert row.ts == datetime.datetime(2024, 1, 1, 8, 30) and bool(row.flag) is True
    assert bytes(row.raw) == b"\x00\x01"


def test_connections_the_server_dropped_are_replaced(postgres, pg_database):
    props = {"connection.url": postgres.jdbc_url(pg_database), "connection.user": postgres.user,
             "connection.password": postgres.password}
    engine = sa.create_engine(sqlalchemy_url(props["connection.url"], postgres.user,
                                             postgres.password))
    task, _ = task_for((props, engine), auto_create="true")
    task.put([record(1, value(1, "a"))])
    with engine.begin() as conn:
        conn.execute(sa.text("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE "
                             "datname = current_database() AND pid <> pg_backend_pid()"))
    engine.dispose()
    task.put([record(2, value(2, "b"), 1)])
    task.stop()
    assert rows((props, engine)) == [(1, "a", None), (2, "b", None)]
    engine.dispose()


def test_the_consumer_groups_offsets_are_all_the_sinks():
    assert JdbcSinkConnector().alter_offsets({}, {("t", 0): 5}) is True


def test_settings_checked_across_fields():
    with pytest.raises(ConfigException, match="Primary key mode must be 'record_key' when "
                                              "delete support is enabled"):
        JdbcSinkConnector().start({"connection.url": "jdbc:sqlite::memory:",
                                   "delete.enabled": "true", "pk.mode": "record_value"})
    with pytest.raises(ConfigException, match="insert.mode upsert needs a primary key"):
        JdbcSinkConnector().start({"connection.url": "jdbc:sqlite::memory:",
                                   "insert.mode": "upsert"})


def test_db_timezone_writes_timestamps_as_local_times(db):
    schema = (SchemaBuilder.struct().field("id", Schema.INT32_SCHEMA)
              .field("ts", Timestamp.SCHEMA).build())
    task, _ = task_for(db, auto_create="true", db_timezone="America/New_York")
    task.put([SinkRecord("times", 0, None, None, schema, Struct(schema).put("id", 1).put(
        "ts", datetime.datetime(2024, 7, 1, 12, tzinfo=UTC)), 0)])
    task.stop()
    table = sa.Table("times", sa.MetaData(), autoload_with=db[1])
    with db[1].connect() as conn:
        assert conn.execute(sa.select(table.c.ts)).scalar() == datetime.datetime(2024, 7, 1, 8)


def test_a_wrong_password_fails_the_task_start_with_the_cause(postgres, pg_database):
    props = {"connection.url": postgres.jdbc_url(pg_database), "connection.user": postgres.user,
             "connection.password": "wrong", "connection.attempts": "1"}
    task = JdbcSinkTask()
    task.initialize(SinkContext(props))
    with pytest.raises(ConnectException, match="password authentication failed") as e:
        task.start(props)
    assert "\n" not in str(e.value)
