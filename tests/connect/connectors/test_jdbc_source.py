"""The JDBC source on SQLite and a real PostgreSQL, driven as the worker drives it: the
connector's task configs, a task started with an offset reader, poll()."""
from __future__ import annotations

import datetime
import decimal
import socket
import time

import pytest
import sqlalchemy as sa

from josefk.connect.api.config import ConfigException
from josefk.connect.api.errors import ConnectException
from josefk.connect.api.schema import Date, Decimal, Schema, Time, Timestamp, Type
from josefk.connect.connectors.jdbc import JdbcSourceConnector, JdbcSourceTask
from josefk.connect.connectors.jdbc.common import sqlalchemy_url
from tests.connect.connectors.contexts import (ConnectorContext, Offsets, SourceContext,
                                               poll_until)

UTC = datetime.timezone.utc


class Db:
    """A database under test: its connector settings, an engine to change it, and how
    Confluent names its tables (``public.t`` on PostgreSQL, ``t`` on SQLite)."""

    def __init__(self, kind: str, props: dict, schema: str | None):
        self.kind, self.props, self.schema = kind, props, schema
        password = props.get("connection.password")
        self.engine = sa.create_engine(sqlalchemy_url(props["connection.url"],
                                                      props.get("connection.user"), password))

    def fqn(self, table: str) -> str:
        return f"{self.schema}.{table}" if self.schema else table

    def run(self, *statements):
        with self.engine.begin() as conn:
            for statement in statements:
                conn.execute(sa.text(statement))


@pytest.fixture(params=["sqlite", "postgresql"])
def db(request, tmp_path):
    if request.param == "sqlite":
        d = Db("sqlite", {"connection.url": f"jdbc:sqlite:{tmp_path}/src.db"}, None)
    else:
        pg = request.getfixturevalue("postgres")
        name = request.getfixturevalue("pg_database")
        d = Db("postgresql", {"connection.url": pg.jdbc_url(name), "connection.user": pg.user,
                              "connection.password": pg.password}, "public")
    yield d
    d.engine.dispose()


def start(db: Db, offsets: Offsets | None = None, max_tasks: int = 1, **settings):
    props = {**db.props, "topic.prefix": "db-", "poll.interval.ms": "0",
             **{k.replace("_", "."): str(v) for k, v in settings.items()}}
    connector = JdbcSourceConnector()
    connector.initialize(ConnectorContext())
    connector.start(props)
    configs = connector.task_configs(max_tasks)
    tasks = []
    try:
        for config in configs:
            task = JdbcSourceTask()
            task.initialize(SourceContext(config, offsets))
            task.start(config)
            tasks.append(task)
    except ConnectException:
        stop(connector, tasks)
        raise
    return connector, configs, tasks


def stop(connector, tasks):
    for task in tasks:
        task.stop()
    connector.stop()


def ids(records):
    return [r.value.get("id") for r in records]


def test_bulk_reads_the_whole_table_each_poll_without_offsets(db):
    db.run("CREATE TABLE users (id INTEGER PRIMARY KEY, name VARCHAR(20) NOT NULL, age INTEGER)")
    db.run("INSERT INTO users VALUES (1, 'ann', 31), (2, 'bob', NULL)")
    connector, configs, [task] = start(db, mode="bulk")
    try:
        assert configs[0]["tables"] == db.fqn("users")
        records = poll_until(task, 2)
        assert [(r.value.get("name"), r.value.get("age")) for r in records] == [
            ("ann", 31), ("bob", None)]
        first = records[0]
        assert first.topic == "db-users"
        assert first.source_partition == {"protocol": "1", "table": db.fqn("users")}
        assert first.source_offset is None and first.key is None
        schema = first.value_schema
        assert schema.name == "users"
        assert [(f.name, f.schema.type, f.schema.optional) for f in schema.fields()] == [
            ("id", Type.INT32, db.kind == "sqlite"), ("name", Type.STRING, False),
            ("age", Type.INT32, True)]
        assert ids(poll_until(task, 2)) == [1, 2]  # again: bulk copies the table every time
    finally:
        stop(connector, [task])


def test_incrementing_reads_new_rows_and_a_restart_resumes_exactly(db):
    db.run("CREATE TABLE events (id INTEGER PRIMARY KEY, body TEXT)")
    db.run("INSERT INTO events VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    offsets = Offsets()
    connector, _, [task] = start(db, offsets, mode="incrementing",
                                 incrementing_column_name="id")
    try:
        records = poll_until(task, 3)
        assert ids(records) == [1, 2, 3]
        assert [r.source_offset for r in records] == [{"incrementing": n} for n in (1, 2, 3)]
        assert task.poll() is None
        db.run("INSERT INTO events VALUES (4, 'd')")
        more = poll_until(task, 1)
        assert ids(more) == [4]
        offsets.commit(records[:2])  # the worker committed only the first two
    finally:
        stop(connector, [task])
    assert offsets.offset({"protocol": "1", "table": db.fqn("events")}) == {"incrementing": 2}
    connector, _, [task] = start(db, offsets, mode="incrementing",
                                 incrementing_column_name="id")
    try:
        assert ids(poll_until(task, 2)) == [3, 4]
    finally:
        stop(connector, [task])


def test_incrementing_column_found_from_the_autoincrement_primary_key(db):
    serial = "SERIAL PRIMARY KEY" if db.kind == "postgresql" else "INTEGER PRIMARY KEY"
    db.run(f"CREATE TABLE auto (id {serial}, v TEXT)")
    db.run("INSERT INTO auto (v) VALUES ('x'), ('y')")
    connector, _, [task] = start(db, mode="incrementing")
    try:
        assert [r.source_offset for r in poll_until(task, 2)] == [
            {"incrementing": 1}, {"incrementing": 2}]
    finally:
        stop(connector, [task])


def test_a_column_added_mid_stream_is_in_the_next_records_schema(db):
    db.run("CREATE TABLE growing (id INTEGER PRIMARY KEY, name TEXT)")
    db.run("INSERT INTO growing VALUES (1, 'a')")
    connector, _, [task] = start(db, mode="incrementing", incrementing_column_name="id")
    try:
        [old] = poll_until(task, 1)
        db.run("ALTER TABLE growing ADD COLUMN rank INTEGER")
        db.run("INSERT INTO growing VALUES (2, 'b', 7)")
        [new] = poll_until(task, 1)
    finally:
        stop(connector, [task])
    assert [f.name for f in old.value_schema.fields()] == ["id", "name"]
    assert [f.name for f in new.value_schema.fields()] == ["id", "name", "rank"]
    assert new.value.get("rank") == 7 and new.source_offset == {"incrementing": 2}


def test_an_older_confluent_offset_by_table_name_alone_is_resumed(db):
    db.run("CREATE TABLE legacy (id INTEGER PRIMARY KEY)")
    db.run("INSERT INTO legacy VALUES (1), (2), (3)")
    offsets = Offsets()
    offsets.stored[(("table", "legacy"),)] = {"incrementing": 2}
    connector, _, [task] = start(db, offsets, mode="incrementing",
                                 incrementing_column_name="id")
    try:
        records = poll_until(task, 1)
        assert ids(records) == [3]
        assert records[0].source_partition == {"protocol": "1", "table": db.fqn("legacy")}
    finally:
        stop(connector, [task])


def _ts(seconds: float, micros: int = 0) -> datetime.datetime:
    return datetime.datetime(2024, 5, 1, 12, 0, 0) + datetime.timedelta(seconds=seconds,
                                                                        microseconds=micros)


def _insert_ts(db: Db, table: str, rows):
    t = sa.table(table, sa.column("id"), sa.column("v"), sa.column("ts", sa.DateTime()))
    with db.engine.begin() as conn:
        for id_, v, ts in rows:
            conn.execute(t.insert().values(id=id_, v=v, ts=ts))


def test_timestamp_incrementing_offsets_are_confluents_and_updates_come_again(db):
    db.run("CREATE TABLE items (id INTEGER PRIMARY KEY, v TEXT, ts TIMESTAMP NOT NULL)")
    _insert_ts(db, "items", [(1, "a", _ts(0, 123456)), (2, "b", _ts(0, 123456)),
                             (3, "c", _ts(5))])
    offsets = Offsets()
    connector, _, [task] = start(db, offsets, mode="timestamp+incrementing",
                                 incrementing_column_name="id", timestamp_column_name="ts")
    try:
        records = poll_until(task, 3)
        assert ids(records) == [1, 2, 3]
        millis = int(datetime.datetime(2024, 5, 1, 12, tzinfo=UTC).timestamp() * 1000)
        assert records[0].source_offset == {"incrementing": 1, "timestamp": millis + 123,
                                            "timestamp_nanos": 123456000}
        assert records[2].source_offset == {"incrementing": 3, "timestamp": millis + 5000,
                                            "timestamp_nanos": 0}
        assert records[0].value.get("ts") == datetime.datetime(2024, 5, 1, 12, 0, 0, 123456,
                                                               tzinfo=UTC)
        assert records[0].value_schema.field("ts").schema == Timestamp.SCHEMA
        offsets.commit(records[:1])
        t = sa.table("items", sa.column("id"), sa.column("ts", sa.DateTime()))
        with db.engine.begin() as conn:
            conn.execute(t.update().where(t.c.id == 1).values(ts=_ts(9)))
        assert ids(poll_until(task, 1)) == [1]  # modified: read again
    finally:
        stop(connector, [task])
    # restarted from the offset of row 1 (same timestamp as row 2, lower id): 2, 3, then 1
    connector, _, [task] = start(db, offsets, mode="timestamp+incrementing",
                                 incrementing_column_name="id", timestamp_column_name="ts")
    try:
        assert ids(poll_until(task, 3)) == [2, 3, 1]
    finally:
        stop(connector, [task])


def test_timestamp_mode_waits_the_delay_before_a_row_is_read(db):
    db.run("CREATE TABLE recent (id INTEGER PRIMARY KEY, v TEXT, ts TIMESTAMP NOT NULL)")
    now = datetime.datetime.now(UTC).replace(tzinfo=None)
    _insert_ts(db, "recent", [(1, "old", now - datetime.timedelta(hours=1)),
                              (2, "new", now)])
    connector, _, [task] = start(db, mode="timestamp", timestamp_column_name="ts",
                                 timestamp_delay_interval_ms=600_000)
    try:
        records = poll_until(task, 1)
        assert ids(records) == [1]
        assert set(records[0].source_offset) == {"timestamp", "timestamp_nanos"}
        assert task.poll() is None  # row 2 is younger than the 10 minutes' delay
    finally:
        stop(connector, [task])


def test_query_mode_has_one_task_the_prefix_as_topic_and_the_query_partition(db):
    db.run("CREATE TABLE a (id INTEGER PRIMARY KEY, x INTEGER NOT NULL)")
    db.run("INSERT INTO a VALUES (1, 10), (2, 20), (3, 30)")
    connector, configs, [task] = start(db, max_tasks=3, mode="incrementing",
                                       incrementing_column_name="id",
                                       query="SELECT id, x * 2 AS doubled FROM a",
                                       topic_prefix="joined")
    try:
        assert len(configs) == 1
        records = poll_until(task, 3)
        assert [(r.value.get("id"), r.value.get("doubled")) for r in records] == [
            (1, 20), (2, 40), (3, 60)]
        assert {r.topic for r in records} == {"joined"}
        assert records[-1].source_partition == {"query": "query"}
        assert records[-1].source_offset == {"incrementing": 3}
    finally:
        stop(connector, [task])


def test_batch_max_rows_splits_a_result_across_polls(db):
    db.run("CREATE TABLE many (id INTEGER PRIMARY KEY)")
    db.run("INSERT INTO many VALUES (1), (2), (3), (4), (5)")
    connector, _, [task] = start(db, mode="incrementing", incrementing_column_name="id",
                                 batch_max_rows=2)
    try:
        assert [ids(task.poll()) for _ in range(3)] == [[1, 2], [3, 4], [5]]
    finally:
        stop(connector, [task])


def test_tables_are_split_among_tasks_and_filtered_by_the_lists(db):
    for name in ("t1", "t2", "t3", "skip"):
        db.run(f"CREATE TABLE {name} (id INTEGER PRIMARY KEY)")
    connector, configs, tasks = start(db, max_tasks=2, mode="bulk", table_blacklist="skip")
    stop(connector, tasks)
    assert [c["tables"] for c in configs] == [f"{db.fqn('t1')},{db.fqn('t2')}", db.fqn("t3")]
    connector, configs, tasks = start(db, max_tasks=5, mode="bulk",
                                      table_whitelist=f"t3,{db.fqn('t1')}")
    stop(connector, tasks)
    assert [c["tables"] for c in configs] == [db.fqn("t1"), db.fqn("t3")]


def test_a_new_table_asks_for_new_task_configs(db):
    db.run("CREATE TABLE first (id INTEGER PRIMARY KEY)")
    connector = JdbcSourceConnector()
    context = ConnectorContext()
    connector.initialize(context)
    connector.start({**db.props, "topic.prefix": "p-", "mode": "bulk",
                     "table.poll.interval.ms": "50"})
    try:
        db.run("CREATE TABLE second (id INTEGER PRIMARY KEY)")
        deadline = time.monotonic() + 10
        while not context.reconfigurations and time.monotonic() < deadline:
            time.sleep(0.05)
        assert context.reconfigurations >= 1
        assert [c["tables"] for c in connector.task_configs(2)] == [db.fqn("first"),
                                                                     db.fqn("second")]
    finally:
        connector.stop()


def test_a_whitelisted_table_dropped_later_fails_the_connector_through_its_context(db):
    db.run("CREATE TABLE kept (id INTEGER PRIMARY KEY)")
    connector = JdbcSourceConnector()
    context = ConnectorContext()
    connector.initialize(context)
    connector.start({**db.props, "topic.prefix": "p-", "mode": "bulk",
                     "table.whitelist": "kept", "table.poll.interval.ms": "50"})
    try:
        db.run("DROP TABLE kept")
        deadline = time.monotonic() + 10
        while not context.errors and time.monotonic() < deadline:
            time.sleep(0.05)
        [error] = context.errors
        assert str(error) == "Table(s) kept in table.whitelist not found in the database"
    finally:
        connector.stop()


def test_postgres_types_and_numeric_mapping(postgres, pg_database):
    db = Db("postgresql", {"connection.url": postgres.jdbc_url(pg_database),
                           "connection.user": postgres.user,
                           "connection.password": postgres.password}, "public")
    db.run("CREATE TABLE typed (id BIGINT PRIMARY KEY, small SMALLINT, flag BOOLEAN, "
           "r REAL, d DOUBLE PRECISION, n5 NUMERIC(5,0), n12 NUMERIC(12,0), n10_2 NUMERIC(10,2),"
           " day DATE, t TIME, tstz TIMESTAMPTZ, raw BYTEA, j JSONB)")
    db.run("INSERT INTO typed VALUES (1, 2, true, 1.5, 2.25, 12345, 123456789012, 10.25, "
           "'2024-02-29', '13:14:15.5', '2024-01-01 10:00:00+02', '\\x0102', '{\"a\": 1}')")
    expected_best_fit = {"id": Schema.INT64_SCHEMA, "small": Schema.OPTIONAL_INT16_SCHEMA,
                         "flag": Schema.OPTIONAL_BOOLEAN_SCHEMA,
                         "r": Schema.OPTIONAL_FLOAT32_SCHEMA, "d": Schema.OPTIONAL_FLOAT64_SCHEMA,
                         "n5": Schema.OPTIONAL_INT32_SCHEMA, "n12": Schema.OPTIONAL_INT64_SCHEMA,
                         "n10_2": Schema.OPTIONAL_FLOAT64_SCHEMA}
    for mapping in ("best_fit", "none"):
        connector, _, [task] = start(db, mode="bulk", numeric_mapping=mapping)
        try:
            [record] = poll_until(task, 1)
        finally:
            stop(connector, [task])
        schema, value = record.value_schema, record.value
        if mapping == "best_fit":
            for name, field_schema in expected_best_fit.items():
                assert schema.field(name).schema == field_schema, name
            assert (value.get("n5"), value.get("n12"), value.get("n10_2")) == (
                12345, 123456789012, 10.25)
        else:
            assert schema.field("n10_2").schema == Decimal.builder(2).optional().build()
            assert value.get("n10_2") == decimal.Decimal("10.25")
            assert schema.field("n5").schema == Decimal.builder(0).optional().build()
    assert schema.field("day").schema == Date.builder().optional().build()
    assert value.get("day") == datetime.date(2024, 2, 29)
    assert schema.field("t").schema == Time.builder().optional().build()
    assert value.get("t") == datetime.time(13, 14, 15, 500000)
    assert value.get("tstz") == datetime.datetime(2024, 1, 1, 8, tzinfo=UTC)
    assert value.get("raw") == b"\x01\x02"
    assert value.get("j") == '{"a":1}'
    db.engine.dispose()


def test_every_user_schema_is_read_unless_schema_pattern_names_one(postgres, pg_database):
    db = Db("postgresql", {"connection.url": postgres.jdbc_url(pg_database),
                           "connection.user": postgres.user,
                           "connection.password": postgres.password}, "public")
    db.run("CREATE SCHEMA sales", "CREATE TABLE sales.orders (id INT PRIMARY KEY)",
           "CREATE TABLE public.users (id INT PRIMARY KEY)")
    connector, configs, tasks = start(db, mode="bulk")
    stop(connector, tasks)
    assert configs[0]["tables"] == "public.users,sales.orders"
    connector, configs, [task] = start(db, mode="bulk", schema_pattern="sales")
    try:
        assert configs[0]["tables"] == "sales.orders"
        db.run("INSERT INTO sales.orders VALUES (5)")
        [record] = poll_until(task, 1)
        assert record.topic == "db-orders"
        assert record.source_partition == {"protocol": "1", "table": "sales.orders"}
    finally:
        stop(connector, [task])
    db.engine.dispose()


def test_db_timezone_places_timestamps_without_zone(db):
    db.run("CREATE TABLE local (id INTEGER PRIMARY KEY, v TEXT, ts TIMESTAMP NOT NULL)")
    _insert_ts(db, "local", [(1, "x", _ts(0))])
    connector, _, [task] = start(db, mode="timestamp", timestamp_column_name="ts",
                                 db_timezone="Europe/Paris")
    try:
        [record] = poll_until(task, 1)
    finally:
        stop(connector, [task])
    assert record.value.get("ts") == datetime.datetime(2024, 5, 1, 10, tzinfo=UTC)  # CEST


def test_timestamp_granularity(db):
    db.run("CREATE TABLE g (id INTEGER PRIMARY KEY, v TEXT, ts TIMESTAMP NOT NULL)")
    _insert_ts(db, "g", [(1, "x", _ts(1, 250000))])
    nanos = (int(datetime.datetime(2024, 5, 1, 12, tzinfo=UTC).timestamp()) + 1) * 10**9 \
        + 250_000_000
    for granularity, schema, expected in (
            ("nanos_long", Schema.INT64_SCHEMA, nanos),
            ("nanos_string", Schema.STRING_SCHEMA, str(nanos)),
            ("NANOS_ISO_DATETIME_STRING", Schema.STRING_SCHEMA,
             "2024-05-01T12:00:01.250000000")):
        connector, _, [task] = start(db, mode="timestamp", timestamp_column_name="ts",
                                     timestamp_granularity=granularity)
        try:
            [record] = poll_until(task, 1)
        finally:
            stop(connector, [task])
        assert record.value_schema.field("ts").schema == schema
        assert record.value.get("ts") == expected
        assert record.source_offset == {"timestamp": nanos // 10**6,
                                        "timestamp_nanos": 250_000_000}


def test_transaction_isolation_mode_is_the_querys(postgres, pg_database):
    db = Db("postgresql", {"connection.url": postgres.jdbc_url(pg_database),
                           "connection.user": postgres.user,
                           "connection.password": postgres.password}, "public")
    connector, _, [task] = start(db, mode="bulk", transaction_isolation_mode="SERIALIZABLE",
                                 query="SELECT current_setting('transaction_isolation') AS lvl")
    try:
        [record] = poll_until(task, 1)
    finally:
        stop(connector, [task])
        db.engine.dispose()
    assert record.value.get("lvl") == "serializable"


# ---- bad input -------------------------------------------------------------------------

def test_a_wrong_password_is_a_connect_exception_with_the_cause(postgres, pg_database):
    props = {"connection.url": postgres.jdbc_url(pg_database), "connection.user": postgres.user,
             "connection.password": "wrong", "connection.attempts": "1", "mode": "bulk",
             "topic.prefix": "x"}
    with pytest.raises(ConnectException) as e:
        JdbcSourceConnector().start(props)
    message = str(e.value)
    assert "\n" not in message
    assert "password authentication failed" in message and "1 attempt(s)" in message


def test_an_unreachable_database_fails_after_the_attempts(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    props = {"connection.url": f"jdbc:postgresql://127.0.0.1:{port}/nothing",
             "connection.user": "u", "connection.password": "p", "connection.attempts": "2",
             "connection.backoff.ms": "10", "mode": "bulk", "topic.prefix": "x"}
    with pytest.raises(ConnectException, match=r"after 2 attempt\(s\): .*(refused|failed)") as e:
        JdbcSourceConnector().start(props)
    assert "\n" not in str(e.value)


def test_a_missing_table_is_named(db):
    db.run("CREATE TABLE present (id INTEGER PRIMARY KEY)")
    with pytest.raises(ConnectException, match="Table\\(s\\) absent in table.whitelist not "
                                               "found in the database"):
        start(db, mode="bulk", table_whitelist="present,absent")
    db.run("CREATE TABLE gone (id INTEGER PRIMARY KEY)")
    props = {**db.props, "topic.prefix": "p", "mode": "bulk", "tables": db.fqn("gone")}
    db.run("DROP TABLE gone")
    task = JdbcSourceTask()
    task.initialize(SourceContext(props))
    with pytest.raises(ConnectException, match=f'Table "{db.fqn("gone")}" does not exist'):
        task.start(props)


def test_failed_queries_are_retried_query_retry_attempts_times(db):
    db.run("CREATE TABLE fragile (id INTEGER PRIMARY KEY)", "INSERT INTO fragile VALUES (1)")
    connector, _, [task] = start(db, mode="incrementing", incrementing_column_name="id",
                                 query_retry_attempts=1)
    try:
        assert ids(poll_until(task, 1)) == [1]
        db.run("DROP TABLE fragile")
        assert task.poll() is None  # the first failure: tried again at the next poll
        db.run("CREATE TABLE fragile (id INTEGER PRIMARY KEY)", "INSERT INTO fragile VALUES (2)")
        assert ids(poll_until(task, 1)) == [2]  # back: the count starts again
        db.run("DROP TABLE fragile")
        assert task.poll() is None
        with pytest.raises(ConnectException, match=r"Failed to run query for table db-fragile "
                                                   r"\(2 attempts\): ") as e:
            task.poll()
        assert "\n" not in str(e.value)
    finally:
        stop(connector, [task])


def test_settings_checked_as_confluents():
    base = {"connection.url": "jdbc:sqlite::memory:", "mode": "bulk"}
    with pytest.raises(ConfigException, match="^Query mode must be specified$"):
        JdbcSourceConnector().start({"connection.url": "jdbc:sqlite::memory:"})
    with pytest.raises(ConfigException, match="Invalid value db/ for configuration topic.prefix:"
                                              " Topic prefix must not contain any character "
                                              "other than ASCII alphanumerics"):
        JdbcSourceConnector().start({**base, "topic.prefix": "db/"})
    with pytest.raises(ConfigException, match="table.whitelist and table.blacklist"):
        JdbcSourceConnector().start({**base, "table.whitelist": "a", "table.blacklist": "b"})
    assert not any(v.errors for v in JdbcSourceConnector().validate(
        {**base, "numeric.mapping": "BEST_FIT"}).values())
    [error] = JdbcSourceConnector().validate({**base, "numeric.mapping": "exact"})[
        "numeric.mapping"].errors
    assert error.startswith("Invalid value exact for configuration numeric.mapping")


class Partition(dict):
    """A source partition as the worker hands them to alter_offsets: a dict, hashable."""

    def __hash__(self):
        return hash(tuple(sorted(self.items())))


def test_offsets_may_be_altered_when_well_formed():
    connector = JdbcSourceConnector()
    assert connector.alter_offsets({}, {Partition(protocol="1", table="public.t"): {
        "incrementing": 5, "timestamp": 1, "timestamp_nanos": 0},
        Partition(query="query"): None})
    with pytest.raises(ConnectException, match="names no table"):
        connector.alter_offsets({}, {Partition(server="x"): {"incrementing": 1}})
    with pytest.raises(ConnectException, match="lsn must be among"):
        connector.alter_offsets({}, {Partition(table="t"): {"lsn": 1}})


def test_a_lost_connection_is_made_again_at_the_next_poll(postgres, pg_database):
    db = Db("postgresql", {"connection.url": postgres.jdbc_url(pg_database),
                           "connection.user": postgres.user,
                           "connection.password": postgres.password}, "public")
    db.run("CREATE TABLE t (id INT PRIMARY KEY)", "INSERT INTO t VALUES (1)")
    connector, _, [task] = start(db, mode="incrementing", incrementing_column_name="id")
    try:
        assert ids(poll_until(task, 1)) == [1]
        db.run("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
               "WHERE datname = current_database() AND pid <> pg_backend_pid()")
        db.engine.dispose()
        db.run("INSERT INTO t VALUES (2)")
        assert ids(poll_until(task, 1)) == [2]
    finally:
        stop(connector, [task])
        db.engine.dispose()


def test_a_nullable_incrementing_column_is_refused(db):
    db.run("CREATE TABLE loose (id INTEGER PRIMARY KEY, seq INTEGER)")
    with pytest.raises(ConnectException, match="using column seq on .*loose because this "
                                               "column is nullable"):
        start(db, mode="incrementing", incrementing_column_name="seq")


def test_jdbc_and_sqlalchemy_urls():
    url = sqlalchemy_url("jdbc:postgresql://db.example:5433/shop?user=u&password=p&sslmode="
                         "require&loggerLevel=OFF", None, None)
    assert (url.drivername, url.host, url.port, url.database, url.username, url.password,
            dict(url.query)) == ("postgresql+psycopg", "db.example", 5433, "shop", "u", "p",
                                 {"sslmode": "require"})
    assert sqlalchemy_url("jdbc:postgresql://h/db", "me", "secret").username == "me"
    assert sqlalchemy_url("jdbc:sqlite:/var/data/x.db", None, None).database == "/var/data/x.db"
    assert sqlalchemy_url("jdbc:sqlite::memory:", None, None).database is None
    assert sqlalchemy_url("postgresql://h/db", None, None).drivername == "postgresql+psycopg"
    assert sqlalchemy_url("sqlite:///rel.db", None, None).database == "rel.db"
    with pytest.raises(ConnectException, match="Not a JDBC or SQLAlchemy URL: nonsense"):
        sqlalchemy_url("nonsense", None, None)
