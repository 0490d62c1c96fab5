"""The database connectors in a standalone worker on a josefk broker, with Kafka's JsonConverter
and real confluent-kafka clients: PostgreSQL changes as Debezium events in commit order, a
table copied by the JDBC source into a topic and by the JDBC sink into a second database row
for row (tombstones delete), each connector resuming after a restart without a gap or a
duplicate."""
from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time

import psycopg
import pytest
import sqlalchemy as sa
from confluent_kafka import Consumer, Producer

from josefk.connect.runtime.herder import BadRequest
from josefk.connect.runtime.plugins import Plugins
from josefk.connect.runtime.standalone import StandaloneHerder
from josefk.connect.runtime.worker_config import WorkerConfig
from testkit.waiting import until

JSON = "org.apache.kafka.connect.json.JsonConverter"
KEY_SCHEMA = json.dumps({"fields": [{"field": "id", "optional": False, "type": "int32"}],
                         "name": "shop.public.customers.Key", "optional": False,
                         "type": "struct"}, sort_keys=True)


def herder(bootstrap: str, tmp_path) -> StandaloneHerder:
    config = WorkerConfig({"bootstrap.servers": bootstrap,
                           "offset.storage.file.filename": str(tmp_path / "offsets.json"),
                           "key.converter": JSON, "value.converter": JSON,
                           "offset.flush.interval.ms": "200"}, distributed=False)
    config.worker_id = "127.0.0.1:8083"
    return StandaloneHerder(config, None, Plugins())


async def running(h: StandaloneHerder, name: str) -> None:
    async def check():
        status = await h.connector_status(name)
        states = [t["state"] for t in status["tasks"]]
        assert "FAILED" not in states, status
        return states and all(s == "RUNNING" for s in states)
    await until(check, what=f"{name}'s tasks running")


class Topic:
    """Reads a topic from the start: (partition, key, value) as JSON (None for tombstones)."""

    def __init__(self, bootstrap: str, topic: str):
        self.consumer = Consumer({"bootstrap.servers": bootstrap,
                                  "group.id": f"check-{topic}-{time.monotonic()}",
                                  "auto.offset.reset": "earliest"})
        self.consumer.subscribe([topic])
        self.messages = []

    def read(self, count: int, timeout: float = 30.0) -> list:
        deadline = time.monotonic() + timeout
        while len(self.messages) < count and time.monotonic() < deadline:
            m = self.consumer.poll(0.2)
            if m is not None and m.error() is None:
                self.messages.append((m.partition(), json.loads(m.key()) if m.key() else None,
                                      json.loads(m.value()) if m.value() is not None else None))
        return self.messages

    def by_key(self) -> dict:
        """Each key's values (keys as their payload's JSON), in the order of its partition:
        commit order per key."""
        found: dict = {}
        for _, key, value in self.messages:
            found.setdefault(json.dumps(key["payload"], sort_keys=True), []).append(value)
        return found

    def close(self):
        self.consumer.close()


class Workers:
    """``josefk connect --standalone`` processes running one connector, one after another."""

    def __init__(self, bootstrap: str, tmp_path, connector: dict):
        self.worker = tmp_path / "worker.properties"
        self.worker.write_text(f"bootstrap.servers={bootstrap}\n"
                               f"offset.storage.file.filename={tmp_path / 'offsets.json'}\n"
                               "listeners=http://127.0.0.1:0\noffset.flush.interval.ms=200\n"
                               f"key.converter={JSON}\nvalue.converter={JSON}\n")
        self.connector = tmp_path / "connector.json"
        self.connector.write_text(json.dumps(connector))
        self.processes: list[subprocess.Popen] = []

    def launch(self) -> None:
        p = subprocess.Popen([sys.executable, "-m", "josefk", "connect", "--standalone",
                              str(self.worker), str(self.connector)], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True, start_new_session=True)
        self.processes.append(p)
        line = p.stdout.readline()  # bounded by the test's timeout
        assert line.startswith("josefk connect started on"), line

    def kill(self) -> None:
        self.processes[-1].kill()
        self.processes[-1].wait(10)

    def stop(self) -> None:
        for p in self.processes:
            if p.poll() is None:
                p.terminate()
                p.wait(30)


def test_postgres_changes_arrive_as_debezium_events_and_resume_after_a_restart(
        target, postgres, pg_database, tmp_path):
    db = psycopg.connect(postgres.dsn(pg_database), autocommit=True)
    db.execute("CREATE TABLE customers (id INT PRIMARY KEY, name TEXT NOT NULL)")
    db.execute("INSERT INTO customers VALUES (1, 'ann')")
    cdc = {"name": "pg-cdc", "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
           "database.hostname": postgres.host, "database.port": str(postgres.port),
           "database.user": postgres.user, "database.password": postgres.password,
           "database.dbname": pg_database, "topic.prefix": "shop",
           "slot.name": f"slot_{pg_database}"[:63], "publication.name": f"pub_{pg_database}",
           "slot.retry.delay.ms": "100"}
    topic = Topic(target.bootstrap, "shop.public.customers")

    async def run(before, changes, expected):
        h = herder(target.bootstrap, tmp_path)
        await h.start([cdc])
        try:
            await running(h, "pg-cdc")
            await asyncio.to_thread(topic.read, before)  # the snapshot is in
            for statement in changes:
                db.execute(statement)
            await asyncio.to_thread(topic.read, expected)
            await asyncio.sleep(1.0)  # offset flushes: the last records' offsets stored
        finally:
            await h.stop()

    try:
        asyncio.run(run(1, ["INSERT INTO customers VALUES (2, 'bob')",
                            "UPDATE customers SET name = 'ann2' WHERE id = 1"], 3))
        asyncio.run(run(3, ["DELETE FROM customers WHERE id = 2"], 5))
        time.sleep(1.0)  # anything replayed twice would have arrived by now
        topic.read(6, timeout=1.0)  # a sixth would be an event twice
    finally:
        topic.close()
        db.close()
    events = {key: [v["payload"]["op"] if v else None for v in values]
              for key, values in topic.by_key().items()}
    assert events == {'{"id": 1}': ["r", "u"], '{"id": 2}': ["c", "d", None]}
    assert {json.dumps(k["schema"], sort_keys=True) for _, k, _ in topic.messages} == {
        KEY_SCHEMA}
    created = next(v for _, k, v in topic.messages if v and v["payload"]["op"] == "c")
    assert created["schema"]["name"] == "shop.public.customers.Envelope"
    payload = created["payload"]
    assert payload["after"] == {"id": 2, "name": "bob"} and payload["before"] is None
    assert payload["source"]["connector"] == "postgresql"
    assert payload["source"]["table"] == "customers" and payload["source"]["lsn"] > 0


def test_a_table_copied_through_a_topic_into_another_database_row_for_row(
        josefk_broker, postgres, pg_database, tmp_path):
    source_url = postgres.jdbc_url(pg_database)
    engine = sa.create_engine(f"postgresql+psycopg://{postgres.user}:{postgres.password}@"
                              f"{postgres.host}:{postgres.port}/{pg_database}")
    target = tmp_path / "mirror.db"
    with engine.begin() as conn:
        conn.execute(sa.text("CREATE TABLE items (id INT PRIMARY KEY, name TEXT NOT NULL, "
                             "price NUMERIC(8,2))"))
        conn.execute(sa.text("INSERT INTO items VALUES (1, 'a', 1.50), (2, 'b', NULL)"))
    source = {"name": "jdbc-source", "connector.class": "io.confluent.connect.jdbc.JdbcSourceConnector",
              "connection.url": source_url, "connection.user": postgres.user,
              "connection.password": postgres.password, "mode": "incrementing",
              "incrementing.column.name": "id", "table.whitelist": "items",
              "topic.prefix": "pg-", "poll.interval.ms": "100"}
    sink = {"name": "jdbc-sink", "connector.class": "io.confluent.connect.jdbc.JdbcSinkConnector",
            "connection.url": f"jdbc:sqlite:{target}", "topics": "pg-items",
            "insert.mode": "upsert", "pk.mode": "record_value", "pk.fields": "id",
            "auto.create": "true"}

    def mirrored():
        if not target.exists():
            return []
        with sa.create_engine(f"sqlite:///{target}").connect() as conn:
            try:
                return [tuple(r) for r in conn.execute(sa.text(
                    "SELECT id, name, price FROM \"pg-items\" ORDER BY id"))]
            except sa.exc.OperationalError:
                return []

    async def run(inserts, expected):
        h = herder(josefk_broker.bootstrap_servers, tmp_path)
        await h.start([source, sink])
        try:
            await running(h, "jdbc-source")
            with engine.begin() as conn:
                for statement in inserts:
                    conn.execute(sa.text(statement))
            await until(lambda: len(mirrored()) >= expected, what=f"{expected} rows")
            await asyncio.sleep(0.5)
        finally:
            await h.stop()

    asyncio.run(run([], 2))
    asyncio.run(run(["INSERT INTO items VALUES (3, 'c', 9.99)"], 3))
    engine.dispose()
    rows = mirrored()
    assert [(i, n, None if p is None else float(p)) for i, n, p in rows] == [
        (1, "a", 1.5), (2, "b", None), (3, "c", 9.99)]
    topic = Topic(josefk_broker.bootstrap_servers, "pg-items")
    try:
        time.sleep(0.5)
        messages = topic.read(4, timeout=2.0)
    finally:
        topic.close()
    assert sorted(v["payload"]["id"] for _, _, v in messages) == [1, 2, 3]  # none twice


@pytest.mark.parametrize("target", ["single", "spread"], indirect=True)
def test_tombstones_delete_mirrored_rows(target, new_topic, tmp_path):
    cluster, topic = target, new_topic()
    target = tmp_path / "keys.db"
    key_schema = {"type": "struct", "optional": False,
                  "fields": [{"field": "id", "type": "int64", "optional": False}]}
    value_schema = {"type": "struct", "optional": False,
                    "fields": [{"field": "id", "type": "int64", "optional": False},
                               {"field": "name", "type": "string", "optional": False}]}
    producer = Producer({"bootstrap.servers": cluster.bootstrap})

    def send(id_, name):
        key = json.dumps({"schema": key_schema, "payload": {"id": id_}})
        value = None if name is None else json.dumps(
            {"schema": value_schema, "payload": {"id": id_, "name": name}})
        producer.produce(topic, key=key, value=value, partition=0)

    for id_, name in ((1, "a"), (2, "b"), (1, None), (3, "c"), (2, "b2")):
        send(id_, name)
    assert producer.flush(15) == 0
    sink = {"name": "keyed-sink", "connector.class": "JdbcSinkConnector",
            "connection.url": f"jdbc:sqlite:{target}", "topics": topic,
            "table.name.format": "mirror", "insert.mode": "upsert", "pk.mode": "record_key",
            "delete.enabled": "true", "auto.create": "true"}

    def rows():
        if not target.exists():
            return []
        with sa.create_engine(f"sqlite:///{target}").connect() as conn:
            try:
                return [tuple(r) for r in conn.execute(sa.text(
                    "SELECT id, name FROM mirror ORDER BY id"))]
            except sa.exc.OperationalError:
                return []

    async def run():
        h = herder(cluster.bootstrap, tmp_path)
        await h.start([sink])
        try:
            await until(lambda: rows() == [(2, "b2"), (3, "c")], what="the mirrored rows")
        finally:
            await h.stop()

    asyncio.run(run())


def test_a_worker_killed_mid_stream_resumes_the_changes_without_a_gap(
        josefk_broker, postgres, pg_database, tmp_path):
    """``josefk connect --standalone`` with the CDC connector, kill -9 while rows change: the
    next worker goes on from the committed offsets, and every change arrives, in commit order
    (those after the last offset flush may come twice: at least once, as Debezium's)."""
    db = psycopg.connect(postgres.dsn(pg_database), autocommit=True)
    db.execute("CREATE TABLE t (id INT PRIMARY KEY)")
    slot = f"slot_{pg_database}"[:63]
    workers = Workers(josefk_broker.bootstrap_servers, tmp_path, {
        "name": "cdc", "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
        "database.hostname": postgres.host, "database.port": str(postgres.port),
        "database.user": postgres.user, "database.password": postgres.password,
        "database.dbname": pg_database, "topic.prefix": "killed", "slot.name": slot,
        "publication.name": f"pub_{pg_database}", "slot.retry.delay.ms": "200",
        "snapshot.mode": "never"})
    topic = Topic(josefk_broker.bootstrap_servers, "killed.public.t")

    def launch():
        workers.launch()
        deadline = time.monotonic() + 30
        while not db.execute("SELECT active FROM pg_replication_slots WHERE slot_name = %s",
                             (slot,)).fetchone() == (True,):
            assert time.monotonic() < deadline, "the task never started streaming"
            time.sleep(0.1)

    def insert():  # one row every 20 ms, through the kill and the restart
        with psycopg.connect(postgres.dsn(pg_database), autocommit=True) as conn:
            for i in range(1, 61):
                conn.execute(f"INSERT INTO t VALUES ({i})")
                time.sleep(0.02)

    inserting = threading.Thread(target=insert)
    try:
        launch()
        inserting.start()
        topic.read(10)
        workers.kill()  # kill -9, mid-stream
        launch()
        deadline = time.monotonic() + 60
        while {k["payload"]["id"] for _, k, _ in topic.messages} != set(range(1, 61)):
            assert time.monotonic() < deadline, "changes missing after the restart"
            topic.read(len(topic.messages) + 1, timeout=1.0)
    finally:
        if inserting.is_alive():
            inserting.join(30)
        workers.stop()
        topic.close()
        db.close()
    for partition in {p for p, _, _ in topic.messages}:  # each change, in commit order
        firsts = list(dict.fromkeys(k["payload"]["id"] for p, k, _ in topic.messages
                                    if p == partition))
        assert firsts == sorted(firsts)
    assert all(v["payload"]["op"] == "c" for _, _, v in topic.messages)


def test_a_sink_killed_mid_batch_leaves_each_row_once_after_the_restart(
        josefk_broker, josefk_topic, postgres, pg_database, tmp_path):
    """The JDBC sink upserting into PostgreSQL, its worker killed with SIGKILL part way: the
    next one redelivers from the committed consumer offsets and the table ends exactly as the
    topic says, each key once with its last value."""
    schema = {"type": "struct", "optional": False,
              "fields": [{"field": "id", "type": "int32", "optional": False},
                         {"field": "version", "type": "int32", "optional": False}]}
    producer = Producer({"bootstrap.servers": josefk_broker.bootstrap_servers})
    for version in range(3):
        for id_ in range(300):
            producer.produce(josefk_topic, partition=0, value=json.dumps(
                {"schema": schema, "payload": {"id": id_, "version": version}}))
    assert producer.flush(15) == 0
    workers = Workers(josefk_broker.bootstrap_servers, tmp_path, {
        "name": "pg-sink", "connector.class": "io.confluent.connect.jdbc.JdbcSinkConnector",
        "connection.url": postgres.jdbc_url(pg_database), "connection.user": postgres.user,
        "connection.password": postgres.password, "topics": josefk_topic,
        "table.name.format": "versions", "insert.mode": "upsert", "pk.mode": "record_value",
        "pk.fields": "id", "auto.create": "true", "batch.size": "50",
        # the killed worker's member leaves the group when its session times out
        "consumer.override.session.timeout.ms": "6000",
        "consumer.override.heartbeat.interval.ms": "1000"})
    db = psycopg.connect(postgres.dsn(pg_database), autocommit=True)

    def count(sql):
        try:
            return db.execute(sql).fetchone()[0]
        except psycopg.errors.UndefinedTable:
            return 0

    try:
        workers.launch()
        deadline = time.monotonic() + 30
        while count("SELECT count(*) FROM versions WHERE version > 0") == 0:
            assert time.monotonic() < deadline, "nothing written"
            time.sleep(0.02)
        workers.kill()  # part way through the second pass over the keys
        workers.launch()
        deadline = time.monotonic() + 60
        while count("SELECT count(*) FROM versions WHERE version = 2") < 300:
            assert time.monotonic() < deadline, "the restarted sink did not finish"
            time.sleep(0.1)
        rows = db.execute("SELECT id, version FROM versions ORDER BY id").fetchall()
    finally:
        workers.stop()
        db.close()
    assert rows == [(i, 2) for i in range(300)]


def test_a_source_killed_mid_table_resumes_from_its_offset_without_a_gap(
        josefk_broker, postgres, pg_database, tmp_path):
    """The JDBC source's worker killed with SIGKILL while it copies a table in batches: the
    next one resumes at the stored incrementing offset; every row arrives (those after the
    last offset flush may come twice)."""
    db = psycopg.connect(postgres.dsn(pg_database), autocommit=True)
    db.execute("CREATE TABLE big (id INT PRIMARY KEY)")
    db.execute("INSERT INTO big SELECT generate_series(1, 3000)")
    workers = Workers(josefk_broker.bootstrap_servers, tmp_path, {
        "name": "big-source", "connector.class": "io.confluent.connect.jdbc.JdbcSourceConnector",
        "connection.url": postgres.jdbc_url(pg_database), "connection.user": postgres.user,
        "connection.password": postgres.password, "mode": "incrementing",
        "incrementing.column.name": "id", "topic.prefix": f"{pg_database}-",
        "batch.max.rows": "20", "poll.interval.ms": "100"})
    topic = Topic(josefk_broker.bootstrap_servers, f"{pg_database}-big")
    store = tmp_path / "offsets.json"

    def stored() -> int:  # the incrementing offset in the worker's offsets file
        values = json.loads(store.read_text()).values() if store.exists() else ()
        return max((v["incrementing"] for v in values if v), default=0)

    try:
        workers.launch()
        topic.read(200)
        deadline = time.monotonic() + 30
        while stored() < 100:
            assert time.monotonic() < deadline, "no offset stored"
            time.sleep(0.05)
        workers.kill()
        resumed_after = stored()
        workers.launch()
        deadline = time.monotonic() + 60
        while {v["payload"]["id"] for _, _, v in topic.messages} != set(range(1, 3001)):
            assert time.monotonic() < deadline, "rows missing after the restart"
            topic.read(len(topic.messages) + 100, timeout=1.0)
    finally:
        workers.stop()
        topic.close()
        db.close()
    ids = [v["payload"]["id"] for _, _, v in topic.messages]
    # the second worker started after the stored offset: rows up to it came once
    assert all(ids.count(i) == 1 for i in range(1, resumed_after + 1))


def test_a_wrong_password_refuses_the_cdc_connector_and_fails_the_jdbc_one_with_the_cause(
        josefk_broker, postgres, pg_database, tmp_path):
    """As on a JVM worker: Debezium's validation connects, so the CDC connector is refused
    with the cause; the JDBC source, whose validation does not, is FAILED with it, and the
    worker goes on."""
    cdc = {"name": "bad-cdc", "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
           "database.hostname": postgres.host, "database.port": str(postgres.port),
           "database.user": postgres.user, "database.password": "wrong",
           "database.dbname": pg_database, "topic.prefix": "bad"}
    jdbc = {"name": "bad-jdbc", "connector.class": "io.confluent.connect.jdbc.JdbcSourceConnector",
            "connection.url": postgres.jdbc_url(pg_database), "connection.user": postgres.user,
            "connection.password": "wrong", "connection.attempts": "1", "mode": "bulk",
            "topic.prefix": "bad-"}

    async def run():
        h = herder(josefk_broker.bootstrap_servers, tmp_path)
        await h.start([])
        try:
            with pytest.raises(BadRequest, match="Error while validating connector config: "
                                                      "Couldn't connect to PostgreSQL .* password "
                                                      "authentication failed"):
                await h.put_connector_config("bad-cdc", cdc, False)
            await h.put_connector_config("bad-jdbc", jdbc, False)

            async def failed():
                status = await h.connector_status("bad-jdbc")
                return status if status["connector"]["state"] == "FAILED" else None
            return await until(failed, what="the connector FAILED")
        finally:
            await h.stop()

    status = asyncio.run(run())
    assert "password authentication failed" in status["connector"]["trace"]


def test_a_column_added_mid_stream_reaches_the_cdc_events_and_nothing_is_lost(
        josefk_broker, postgres, pg_database, tmp_path):
    """ALTER TABLE ... ADD COLUMN while the connector streams: the changes before it keep the
    old row schema, those after it carry the new optional column, none is missing and the
    task stays RUNNING (pgoutput sends the new Relation before the first change after it)."""
    db = psycopg.connect(postgres.dsn(pg_database), autocommit=True)
    db.execute("CREATE TABLE people (id INT PRIMARY KEY, name TEXT NOT NULL)")
    db.execute("INSERT INTO people VALUES (1, 'ann')")
    cdc = {"name": "evolving-cdc",
           "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
           "database.hostname": postgres.host, "database.port": str(postgres.port),
           "database.user": postgres.user, "database.password": postgres.password,
           "database.dbname": pg_database, "topic.prefix": pg_database,
           "slot.name": f"slot_{pg_database}"[:63], "publication.name": f"pub_{pg_database}"}
    topic = Topic(josefk_broker.bootstrap_servers, f"{pg_database}.public.people")

    async def run():
        h = herder(josefk_broker.bootstrap_servers, tmp_path)
        await h.start([cdc])
        try:
            await running(h, "evolving-cdc")
            await asyncio.to_thread(topic.read, 1)
            for statement in ("INSERT INTO people VALUES (2, 'bob')",
                              "ALTER TABLE people ADD COLUMN email TEXT",
                              "INSERT INTO people VALUES (3, 'cyd', 'cyd@example.com')",
                              "UPDATE people SET email = 'ann@example.com' WHERE id = 1"):
                db.execute(statement)
            await asyncio.to_thread(topic.read, 4)
            await running(h, "evolving-cdc")
        finally:
            await h.stop()

    try:
        asyncio.run(run())
        topic.read(5, timeout=1.0)  # a fifth would be an event twice
    finally:
        topic.close()
        db.close()
    events = [(v["payload"]["op"], v["payload"]["after"]) for _, _, v in topic.messages]
    assert events == [("r", {"id": 1, "name": "ann"}), ("c", {"id": 2, "name": "bob"}),
                      ("c", {"id": 3, "name": "cyd", "email": "cyd@example.com"}),
                      ("u", {"id": 1, "name": "ann", "email": "ann@example.com"})]

    def after_fields(value):
        after = next(f for f in value["schema"]["fields"] if f["field"] == "after")
        return [(f["field"], f["optional"]) for f in after["fields"]]
    assert after_fields(topic.messages[1][2]) == [("id", False), ("name", False)]
    assert after_fields(topic.messages[2][2]) == [("id", False), ("name", False),
                                                  ("email", True)]


def test_a_field_added_mid_topic_fails_the_jdbc_sink_with_the_cause_until_it_may_evolve(
        josefk_broker, josefk_topic, postgres, pg_database, tmp_path):
    """Records gain an optional field part way through the topic. With auto.evolve off the
    task is FAILED with the missing column named and the worker goes on; once the connector
    may evolve the table, every record lands: none lost, each key once."""
    v1 = {"type": "struct", "optional": False, "name": "people",
          "fields": [{"field": "id", "type": "int32", "optional": False},
                     {"field": "name", "type": "string", "optional": False}]}
    v2 = {**v1, "fields": [*v1["fields"], {"field": "email", "type": "string",
                                           "optional": True}]}
    producer = Producer({"bootstrap.servers": josefk_broker.bootstrap_servers})
    for id_ in range(1, 4):
        producer.produce(josefk_topic, partition=0, value=json.dumps(
            {"schema": v1, "payload": {"id": id_, "name": f"n{id_}"}}))
    for id_ in range(4, 7):
        producer.produce(josefk_topic, partition=0, value=json.dumps(
            {"schema": v2, "payload": {"id": id_, "name": f"n{id_}", "email": f"{id_}@x"}}))
    assert producer.flush(15) == 0
    sink = {"name": "evolving-sink", "connector.class": "io.confluent.connect.jdbc.JdbcSinkConnector",
            "connection.url": postgres.jdbc_url(pg_database), "connection.user": postgres.user,
            "connection.password": postgres.password, "topics": josefk_topic,
            "table.name.format": "people", "insert.mode": "upsert", "pk.mode": "record_value",
            "pk.fields": "id", "auto.create": "true", "auto.evolve": "false"}
    db = psycopg.connect(postgres.dsn(pg_database), autocommit=True)
    db.prepare_threshold = None  # the table's columns change under the query

    def rows():
        try:
            return db.execute("SELECT * FROM people ORDER BY id").fetchall()
        except psycopg.errors.UndefinedTable:
            return []

    async def run():
        h = herder(josefk_broker.bootstrap_servers, tmp_path)
        await h.start([sink])
        try:
            async def failed():
                status = await h.connector_status("evolving-sink")
                return next((t for t in status["tasks"] if t["state"] == "FAILED"), None)
            task = await until(failed, what="the sink's task FAILED")
            await h.put_connector_config("evolving-sink", {**sink, "auto.evolve": "true"}, True)
            await until(lambda: len(rows()) == 6, what="every record in the table")
            await running(h, "evolving-sink")
            return task
        finally:
            await h.stop()

    try:
        task = asyncio.run(run())
        table = rows()
    finally:
        db.close()
    assert 'Table "people" is missing fields (email) and auto-evolution is disabled' in \
        task["trace"]
    assert table == [(i, f"n{i}", None) for i in range(1, 4)] + [
        (i, f"n{i}", f"{i}@x") for i in range(4, 7)]
