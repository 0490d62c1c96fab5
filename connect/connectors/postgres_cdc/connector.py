"""Debezium's PostgreSQL connector (``io.debezium.connector.postgresql.PostgresConnector``):
logical replication with ``pgoutput`` from a slot and a publication it creates or reuses, a
consistent initial snapshot (the slot's exported snapshot) then the stream, as Debezium's
change events: topic ``<topic.prefix>.<schema>.<table>``, key the primary key struct, value
the envelope (``before``, ``after``, ``source``, ``op`` c/u/d/r, ``ts_ms``), a tombstone
after each delete. Offsets are Debezium's (``{"server": prefix}`` -> ``lsn``, ``txId``,
``ts_usec``, ...); the slot's confirmed flush LSN moves only to records the worker has
acknowledged, so a crash replays from there (events already stored are passed over) and
never skips."""
from __future__ import annotations

import collections
import json
import re
import select
import threading
import time

import psycopg2
import psycopg2.extras

from josefk.connect.api.config import ConfigDef, ConfigValue, Importance, Range, ValidString
from josefk.connect.api.config import Type as T
from josefk.connect.api.connector import SourceConnector, SourceTask
from josefk.connect.api.errors import ConnectException, RetriableException
from josefk.connect.api.records import RecordMetadata, SourceRecord
from josefk.connect.api.schema import Struct
from josefk.connect.connectors.cause import one_line
from josefk.connect.connectors.postgres_cdc import pgoutput
from josefk.connect.connectors.postgres_cdc.schema import (DEBEZIUM_VERSION, DECIMAL_MODES,
                                                           HEARTBEAT_KEY, HEARTBEAT_VALUE,
                                                           INTERVAL_MODES,
                                                           SOURCE, TIME_MODES, TableColumn,
                                                           TableSchema, is_known_type)

SNAPSHOT_MODES = ("initial", "always", "never", "no_data", "initial_only", "when_needed")
AUTOCREATE_MODES = ("all_tables", "disabled", "filtered", "no_tables")
# Sessions speak UTC and ISO dates, so the text of values is the same in both paths.
SESSION_OPTIONS = ("-c TimeZone=UTC -c DateStyle=ISO -c IntervalStyle=iso_8601 "
                   "-c extra_float_digits=3")


def config_def() -> ConfigDef:
    c = ConfigDef()
    d = "Connection"
    c.define("database.hostname", T.STRING, importance=Importance.HIGH, group=d,
             documentation="Resolvable hostname or IP address of the database server.")
    c.define("database.port", T.INT, 5432, Range.between(1, 65535), Importance.HIGH,
             "Port of the database server.", group=d)
    c.define("database.user", T.STRING, importance=Importance.HIGH, group=d,
             documentation="Name of the database user to be used when connecting.")
    c.define("database.password", T.PASSWORD, None, importance=Importance.HIGH, group=d,
             documentation="Password of the database user to be used when connecting.")
    c.define("database.dbname", T.STRING, importance=Importance.HIGH, group=d,
             documentation="The name of the database from which to stream the changes.")
    c.define("database.sslmode", T.STRING, "prefer",
             ValidString.in_("disable", "allow", "prefer", "require", "verify-ca",
                             "verify-full"), Importance.MEDIUM,
             "Whether to use an encrypted connection to the server.", group=d)
    c.define("database.connect.timeout.ms", T.INT, 30000, Range.at_least(1000),
             Importance.LOW, "Maximum time to wait for a connection.", group=d)
    c.define("topic.prefix", T.STRING, importance=Importance.HIGH, group=d,
             documentation="Topic prefix that identifies this database server; every topic "
                           "name starts with it.")
    r = "Replication"
    c.define("plugin.name", T.STRING, "pgoutput", ValidString.in_("pgoutput"), Importance.MEDIUM,
             "The logical decoding plug-in (pgoutput, the one built into PostgreSQL).", group=r)
    c.define("slot.name", T.STRING, "debezium", importance=Importance.MEDIUM, group=r,
             documentation="The name of the PostgreSQL logical decoding slot.")
    c.define("slot.drop.on.stop", T.BOOLEAN, False, importance=Importance.MEDIUM, group=r,
             documentation="Whether to drop the slot when the connector stops.")
    c.define("slot.max.retries", T.INT, 6, Range.at_least(0), Importance.LOW,
             "How many times to retry connecting to a replication slot another reader "
             "holds.", group=r)
    c.define("slot.retry.delay.ms", T.LONG, 10000, Range.at_least(0), Importance.LOW,
             "Time to wait between retry attempts on a replication slot.", group=r)
    c.define("publication.name", T.STRING, "dbz_publication", importance=Importance.MEDIUM,
             group=r, documentation="The name of the PostgreSQL publication.")
    c.define("publication.autocreate.mode", T.STRING, "all_tables", ValidString(AUTOCREATE_MODES),
             Importance.MEDIUM, "Whether and how the publication is created: all_tables, "
             "disabled, filtered (the captured tables), no_tables.", group=r)
    c.define("status.update.interval.ms", T.INT, 10000, Range.at_least(0), Importance.LOW,
             "Frequency for sending replication connection status updates to the server.",
             group=r)
    f = "Filters"
    for name, doc in (("schema.include.list", "Schemas to capture (regular expressions)."),
                      ("schema.exclude.list", "Schemas not to capture (regular expressions)."),
                      ("table.include.list", "Tables to capture, schema.table (regular "
                                             "expressions)."),
                      ("table.exclude.list", "Tables not to capture (regular expressions).")):
        c.define(name, T.LIST, "", importance=Importance.MEDIUM, group=f, documentation=doc)
    e = "Events"
    c.define("snapshot.mode", T.STRING, "initial", ValidString(SNAPSHOT_MODES), Importance.MEDIUM,
             "When to snapshot: initial, always, never/no_data, initial_only, when_needed.",
             group=e)
    c.define("decimal.handling.mode", T.STRING, "precise", ValidString(DECIMAL_MODES),
             Importance.MEDIUM, "How DECIMAL and NUMERIC values are represented: precise "
             "(Connect's Decimal), double, string.", group=e)
    c.define("time.precision.mode", T.STRING, "adaptive", ValidString(TIME_MODES),
             Importance.MEDIUM, "How time values are represented: adaptive (the column's "
             "precision), adaptive_time_microseconds, connect (Connect's Date, Time and "
             "Timestamp).", group=e)
    c.define("interval.handling.mode", T.STRING, "numeric", ValidString(INTERVAL_MODES),
             Importance.MEDIUM, "How INTERVAL values are represented: numeric (microseconds, "
             "a month 30.4375 days), string (ISO 8601, PnYnMnDTnHnMnS).", group=e)
    c.define("tombstones.on.delete", T.BOOLEAN, True, importance=Importance.MEDIUM, group=e,
             documentation="Whether delete operations are followed by a tombstone event.")
    c.define("heartbeat.interval.ms", T.INT, 0, Range.at_least(0), Importance.MEDIUM,
             "Length of an interval in milliseconds in which the connector periodically sends "
             "heartbeat messages (0: none).", group=e)
    c.define("topic.heartbeat.prefix", T.STRING, "__debezium-heartbeat",
             importance=Importance.LOW, group=e, documentation="Prefix of the heartbeat topic.")
    c.define("max.batch.size", T.INT, 2048, Range.at_least(1), Importance.MEDIUM,
             "Maximum size of each batch of source records.", group=e)
    c.define("poll.interval.ms", T.INT, 500, Range.at_least(0), Importance.MEDIUM,
             "Time to wait for new change events to appear after receiving no events.",
             group=e)
    return c


CONFIG = config_def()


def _connect(settings: dict, replication: bool = False):
    password = settings["database.password"]
    params = dict(host=settings["database.hostname"], port=settings["database.port"],
                  user=settings["database.user"], dbname=settings["database.dbname"],
                  sslmode=settings["database.sslmode"], options=SESSION_OPTIONS,
                  connect_timeout=max(1, settings["database.connect.timeout.ms"] // 1000),
                  application_name="josefk-debezium")
    if password is not None:
        params["password"] = password.value
    if replication:
        params["connection_factory"] = psycopg2.extras.LogicalReplicationConnection
    try:
        conn = psycopg2.connect(**params)
    except psycopg2.Error as e:
        raise ConnectException(f"Couldn't connect to PostgreSQL at {params['host']}:"
                               f"{params['port']}/{params['dbname']}: {one_line(e)}") from None
    if not replication:
        conn.autocommit = True
    return conn


def _patterns(items: list[str]) -> list[re.Pattern]:
    return [re.compile(p.strip(), re.IGNORECASE) for p in items if p.strip()]


class TableFilter:
    """Debezium's include/exclude lists: regular expressions matching the whole name."""

    def __init__(self, settings: dict):
        self.schemas_in = _patterns(settings["schema.include.list"])
        self.schemas_out = _patterns(settings["schema.exclude.list"])
        self.tables_in = _patterns(settings["table.include.list"])
        self.tables_out = _patterns(settings["table.exclude.list"])

    def __call__(self, schema: str, table: str) -> bool:
        name = f"{schema}.{table}"
        if self.schemas_in and not any(p.fullmatch(schema) for p in self.schemas_in):
            return False
        if any(p.fullmatch(schema) for p in self.schemas_out):
            return False
        if self.tables_in and not any(p.fullmatch(name) for p in self.tables_in):
            return False
        return not any(p.fullmatch(name) for p in self.tables_out)


_TABLES = """SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p') AND n.nspname NOT IN ('pg_catalog', 'information_schema')
  AND n.nspname NOT LIKE 'pg\\_toast%%' AND n.nspname NOT LIKE 'pg\\_temp%%' ORDER BY 1, 2"""
_COLUMNS = """SELECT a.attname, CASE WHEN t.typtype = 'd' THEN t.typbasetype ELSE a.atttypid END,
       CASE WHEN t.typtype = 'd' THEN t.typtypmod ELSE a.atttypmod END, a.attnotnull,
       array_position(i.indkey::int2[], a.attnum),
       CASE WHEN t.typtype = 'e' THEN (SELECT array_agg(e.enumlabel ORDER BY e.enumsortorder)
                                       FROM pg_enum e WHERE e.enumtypid = t.oid) END
FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
LEFT JOIN pg_index i ON i.indrelid = a.attrelid AND i.indisprimary
WHERE a.attrelid = %s AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = ''
ORDER BY a.attnum"""


def captured_tables(conn, accept: TableFilter) -> list[tuple[str, str]]:
    with conn.cursor() as cur:
        cur.execute(_TABLES)
        return [(s, t) for s, t in cur.fetchall() if accept(s, t)]


def table_columns(conn, relation: str | int) -> list[TableColumn]:
    with conn.cursor() as cur:
        if isinstance(relation, str):
            cur.execute("SELECT %s::regclass::oid", (relation,))
            relation = cur.fetchone()[0]
        cur.execute(_COLUMNS, (relation,))
        return [TableColumn(*row[:5], None if row[5] is None else tuple(row[5]))
                for row in cur.fetchall()]


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


class PostgresConnector(SourceConnector):
    def version(self) -> str:
        return DEBEZIUM_VERSION

    def config(self) -> ConfigDef:
        return CONFIG

    def task_class(self):
        return PostgresConnectorTask

    def start(self, props: dict[str, str]) -> None:
        settings = CONFIG.parse(props)
        conn = _connect(settings)
        try:
            _check_server(conn)
        finally:
            conn.close()
        self.props = dict(props)

    def validate(self, connector_configs: dict[str, str]) -> dict[str, ConfigValue]:
        """The settings' checks, then, as Debezium's, a connection to the server: its failure
        is an error of ``database.hostname``."""
        results = CONFIG.validate(connector_configs)
        if any(value.errors for value in results.values()):
            return results
        try:
            conn = _connect(CONFIG.parse(connector_configs))
            try:
                _check_server(conn)
            finally:
                conn.close()
        except ConnectException as e:
            results["database.hostname"].errors.append(
                f"Error while validating connector config: {e}")
        return results

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self.props)]  # one stream: one task, as Debezium's

    def stop(self) -> None:
        pass


def _check_server(conn) -> None:
    with conn.cursor() as cur:
        cur.execute("SHOW wal_level")
        (level,) = cur.fetchone()
    if level != "logical":
        raise ConnectException(f"Postgres server wal_level property must be 'logical' but "
                               f"is: {level}")


def _now_micros() -> int:
    return time.time_ns() // 1000


class _Pending:
    """Records handed to the worker, in order, and which it has acknowledged."""
    __slots__ = ("record", "lsn", "acked")

    def __init__(self, record, lsn):
        self.record, self.lsn, self.acked = record, lsn, False


class PostgresConnectorTask(SourceTask):
    def version(self) -> str:
        return DEBEZIUM_VERSION

    def start(self, props: dict[str, str]) -> None:
        s = self.settings = CONFIG.parse(props)
        self.prefix = s["topic.prefix"]
        self.partition = {"server": self.prefix}
        self.accept = TableFilter(s)
        self._lock = threading.Lock()  # the connections: poll's, or stop's
        self._acks = threading.Lock()  # the records in flight: poll's, commit's
        self._stopping = threading.Event()
        self._pending: collections.deque[_Pending] = collections.deque()
        self._by_record: dict[int, _Pending] = {}
        self._flush_target = self._flushed = 0
        self.conn = _connect(s)
        _check_server(self.conn)
        self.repl = _connect(s, replication=True)
        self._walsender = self.repl.get_backend_pid()
        self.cur = self.repl.cursor()
        self.tables: dict[int, TableSchema | None] = {}  # relation oid -> schema (None: not captured)
        self._tx: pgoutput.Begin | None = None
        self._last_commit: tuple[int, int, int, int] | None = None  # commit, end, xid, micros
        self._last_heartbeat = time.monotonic()
        self._streaming = False
        self._snapshot = None
        stored = self.context.offset_storage_reader().offset(self.partition) \
            if self.context is not None else None
        self.resume = self._resume_point(stored)
        self._emitted = None  # the resume point of the last streamed record given out
        # the commit LSN of the last transaction read through, Debezium's lsn_commit
        self._commit_lsn = self.resume[0] if self.resume is not None else None
        try:
            self._ensure_publication()
            slot_exists = self._check_slot()
            snapshot = self._needs_snapshot(stored, slot_exists)
            exported, consistent = (None, None) if slot_exists else self._create_slot(snapshot)
            if snapshot:
                self._snapshot = self._snapshot_rows(exported, consistent)
        except BaseException:
            self.repl.close()
            self.conn.close()
            raise

    # -- setting up ----------------------------------------------------------------------

    @staticmethod
    def _resume_point(stored: dict | None) -> tuple[int | None, int | None, int] | None:
        """(lsn_commit, txId, lsn) of the stored offset: the events it covers are passed over
        when the server replays them (the transactions committed at or before lsn_commit, and
        the stored transaction's events up to lsn)."""
        if not stored or stored.get("snapshot") or "lsn" not in stored:
            return None
        return stored.get("lsn_commit"), stored.get("txId"), stored["lsn"]

    def _stored(self, tx: pgoutput.Begin, lsn: int) -> bool:
        commit_lsn, xid, stored_lsn = self.resume
        return ((commit_lsn is not None and tx.final_lsn <= commit_lsn)
                or (tx.xid == xid and lsn <= stored_lsn))

    def _needs_snapshot(self, stored: dict | None, slot_exists: bool) -> bool:
        """Debezium's snapshot.mode: initial (and initial_only) when no snapshot finished,
        always, never/no_data, when_needed also when the slot of the offsets is gone."""
        mode = self.settings["snapshot.mode"]
        if mode in ("never", "no_data"):
            return False
        if mode == "always":
            return True
        unfinished = bool(stored and stored.get("snapshot")
                          and not stored.get("last_snapshot_record"))
        lost = mode == "when_needed" and stored is not None and not slot_exists
        return stored is None or unfinished or lost

    def _ensure_publication(self) -> None:
        s = self.settings
        name, mode = s["publication.name"], s["publication.autocreate.mode"]
        with self.conn.cursor() as cur:
            cur.execute("SELECT 1 FROM pg_publication WHERE pubname = %s", (name,))
            if cur.fetchone():
                return
            if mode == "disabled":
                raise ConnectException(f"Publication '{name}' does not exist and "
                                       f"publication.autocreate.mode is disabled")
            if mode == "all_tables":
                target = "FOR ALL TABLES"
            elif mode == "filtered":
                tables = captured_tables(self.conn, self.accept)
                if not tables:
                    raise ConnectException("No table matches the filters: cannot create a "
                                           f"filtered publication '{name}'")
                target = "FOR TABLE " + ", ".join(f"{_quote(a)}.{_quote(b)}" for a, b in tables)
            else:
                target = ""
            try:
                cur.execute(f"CREATE PUBLICATION {_quote(name)} {target}")
            except psycopg2.Error as e:
                raise ConnectException(f"Cannot create publication '{name}': {one_line(e)}") \
                    from None

    def _check_slot(self) -> bool:
        """Whether the slot exists (one that another reader holds, or of another plug-in or
        database, is an error)."""
        name = self.settings["slot.name"]
        retries = self.settings["slot.max.retries"]
        while True:
            with self.conn.cursor() as cur:
                cur.execute("SELECT plugin, active, database FROM pg_replication_slots "
                            "WHERE slot_name = %s", (name,))
                row = cur.fetchone()
            if row is None or not row[1]:
                break
            if retries == 0 or self._stopping.wait(self.settings["slot.retry.delay.ms"] / 1000):
                raise ConnectException(f"Replication slot \"{name}\" is active: another "
                                       f"connector or client is reading it")
            retries -= 1
        if row is not None:
            plugin, _, database = row
            if plugin != "pgoutput" or database != self.settings["database.dbname"]:
                raise ConnectException(f"Replication slot \"{name}\" exists for plug-in "
                                       f"{plugin} on database {database}, not pgoutput on "
                                       f"{self.settings['database.dbname']}")
        return row is not None

    def _create_slot(self, snapshot: bool) -> tuple[str | None, int]:
        """A new slot (exporting its snapshot when one is taken): (snapshot name, consistent
        point)."""
        name = self.settings["slot.name"]
        export = "EXPORT_SNAPSHOT" if snapshot else "NOEXPORT_SNAPSHOT"
        try:
            self.cur.execute(f"CREATE_REPLICATION_SLOT {_quote(name)} LOGICAL pgoutput {export}")
            _, consistent, snapshot_name, _ = self.cur.fetchone()
        except psycopg2.Error as e:
            raise ConnectException(f"Cannot create replication slot \"{name}\": {one_line(e)}") \
                from None
        return snapshot_name, pgoutput.parse_lsn(consistent)

    # -- the snapshot --------------------------------------------------------------------

    def _snapshot_rows(self, exported: str | None, consistent: int | None):
        """The snapshot's rows, in one repeatable-read transaction: on the slot's exported
        snapshot when the slot was just made (so the stream starts exactly where the snapshot
        ends), else at the current WAL position (the stream may then repeat changes the
        snapshot saw, never miss one). The snapshot is imported here, before the replication
        connection runs anything else; the rows are read as they are polled."""
        conn = _connect(self.settings)
        conn.autocommit = False
        try:
            cur = conn.cursor()
            cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            if exported:
                cur.execute("SET TRANSACTION SNAPSHOT %s", (exported,))
            cur.execute("SELECT txid_current(), pg_current_wal_lsn()")
            xid, current = cur.fetchone()
            tables = [(s, t, table_columns(conn, f"{_quote(s)}.{_quote(t)}"))
                      for s, t in captured_tables(conn, self.accept)]
        except psycopg2.Error as e:
            conn.close()
            raise ConnectException(f"Cannot start the snapshot: {one_line(e)}") from None
        self._snapshot_xid = xid
        self._snapshot_lsn = consistent if consistent is not None else pgoutput.parse_lsn(current)
        self._snapshot_first = True
        return self._snapshot_items(conn, tables)

    def _snapshot_items(self, conn, tables):
        """[table schema, text values, first in its table, last in it, last of all], one
        row held back so the last ones are known when they are yielded."""
        held = None
        try:
            for n, (schema_name, table, columns) in enumerate(tables):
                ts = self._table_schema(schema_name, table, columns)
                select_list = ", ".join(f"{_quote(c.name)}::text" for c in columns) or "NULL"
                cur = conn.cursor(name=f"josefk_snapshot_{n}")
                cur.itersize = self.settings["max.batch.size"]
                cur.execute(f"SELECT {select_list} FROM {_quote(schema_name)}.{_quote(table)}")
                first = True
                for row in cur:
                    if held is not None:
                        yield held
                    held = [ts, list(row), first, False, False]
                    first = False
                cur.close()
                if held is not None and held[0] is ts:
                    held[3] = True
            if held is not None:
                held[4] = True
                yield held
        finally:
            conn.rollback()
            conn.close()

    def _poll_snapshot(self) -> list[SourceRecord] | None:
        records = []
        for item in self._snapshot:
            records.append(self._snapshot_record(*item))
            if len(records) >= self.settings["max.batch.size"]:
                break
        else:
            self._snapshot = None
        return records or None

    def _snapshot_record(self, ts: TableSchema, texts: list, first_in_table: bool,
                         last_in_table: bool, last: bool) -> SourceRecord:
        first, self._snapshot_first = self._snapshot_first, False
        marker = ("last" if last else "first" if first else "last_in_data_collection"
                  if last_in_table else "first_in_data_collection" if first_in_table else "true")
        xid, lsn, now = self._snapshot_xid, self._snapshot_lsn, _now_micros()
        offset = {"last_snapshot_record": last, "lsn": lsn, "txId": xid, "ts_usec": now,
                  "snapshot": True}
        source = self._source(ts, now, marker, xid, lsn, None)
        return self._change(ts, "r", None, ts.parse(texts), source, offset, lsn)[0]

    def _table_schema(self, schema_name: str, table: str, columns) -> TableSchema:
        return TableSchema(self.prefix, schema_name, table, columns,
                           self.settings["decimal.handling.mode"],
                           self.settings["time.precision.mode"],
                           self.settings["interval.handling.mode"])

    # -- records -------------------------------------------------------------------------

    def _source(self, ts: TableSchema, micros: int, snapshot: str, xid: int | None,
                lsn: int | None, sequence: str | None) -> Struct:
        # SOURCE's fields in order (source_schema)
        return Struct.of(SOURCE, [DEBEZIUM_VERSION, "postgresql", self.prefix, micros // 1000,
                                  snapshot, self.settings["database.dbname"], sequence, micros,
                                  micros * 1000, ts.schema_name, ts.table, xid, lsn, None])

    def _change(self, ts: TableSchema, op: str, before: list | None, after: list | None,
                source: Struct, offset: dict, lsn: int) -> list[SourceRecord]:
        now = _now_micros()
        # the envelope's fields in order (TableSchema.envelope)
        envelope = Struct.of(ts.envelope, [
            None if before is None else ts.value_struct(before),
            None if after is None else ts.value_struct(after),
            source, op, now // 1000, now, now * 1000, None])
        key = ts.key_struct(after if after is not None else before)
        records = [SourceRecord(self.partition, offset, ts.topic, key_schema=ts.key, key=key,
                                value_schema=ts.envelope, value=envelope)]
        if op == "d" and key is not None and self.settings["tombstones.on.delete"]:
            records.append(SourceRecord(self.partition, offset, ts.topic, key_schema=ts.key,
                                        key=key))
        for record in records:
            self._track(record, lsn)
        return records

    def _track(self, record: SourceRecord, lsn: int) -> None:
        entry = _Pending(record, lsn)
        with self._acks:
            self._pending.append(entry)
            self._by_record[id(record)] = entry

    # -- the stream ----------------------------------------------------------------------

    def _start_streaming(self) -> None:
        try:
            self.cur.start_replication(
                slot_name=self.settings["slot.name"], decode=False,
                options={"proto_version": "1",
                         "publication_names": self.settings["publication.name"]},
                status_interval=max(1, self.settings["status.update.interval.ms"] // 1000))
        except psycopg2.Error as e:
            raise ConnectException(f"Cannot start replication from slot "
                                   f"\"{self.settings['slot.name']}\": {one_line(e)}") from None
        self._streaming = True

    def _relation(self, rel: pgoutput.Relation) -> None:
        if not self.accept(rel.namespace, rel.name):
            self.tables[rel.oid] = None
            return
        # the columns as the stream has them now; NOT NULL, the primary key and the base
        # types of domains from the catalog (which may already be ahead of the stream)
        catalog = {c.name: c for c in table_columns(self.conn, rel.oid)}
        columns = []
        for col in rel.columns:
            known = catalog.get(col.name)
            type_oid, typmod = col.type_oid, col.type_modifier
            if known is not None and not is_known_type(type_oid):
                type_oid, typmod = known.type_oid, known.typmod
            columns.append(TableColumn(col.name, type_oid, typmod,
                                       known is not None and known.not_null,
                                       known.pk_position if known is not None else None,
                                       known.enum_labels if known is not None else None))
        self.tables[rel.oid] = self._table_schema(rel.namespace, rel.name, columns)

    def _stream_change(self, change: pgoutput.Change, lsn: int) -> list[SourceRecord]:
        ts = self.tables.get(change.relation_oid)
        tx = self._tx
        if ts is None or tx is None:
            return []
        if self.resume is not None and self._stored(tx, lsn):
            return []  # stored before a restart: already written
        offset = {"lsn_proc": lsn, "lsn_commit": self._commit_lsn, "lsn": lsn, "txId": tx.xid,
                  "ts_usec": tx.commit_micros}
        source = self._source(ts, tx.commit_micros, "false", tx.xid, lsn,
                              json.dumps([None if self._commit_lsn is None
                                          else str(self._commit_lsn), str(lsn)],
                                         separators=(",", ":")))
        self._emitted = (self._commit_lsn, tx.xid, lsn)
        new = ts.parse(change.new) if change.new is not None else None
        old = ts.parse(change.old) if change.old is not None else None
        if change.op == "u" and old is not None and ts.key is not None:
            old_key, new_key = ts.key_struct(old), ts.key_struct(new)
            if old_key != new_key:  # a primary key change: Debezium's delete then create
                return (self._change(ts, "d", old, None, source, offset, lsn)
                        + self._change(ts, "c", None, new, source, offset, lsn))
        return self._change(ts, change.op, old if change.op != "c" else None, new, source,
                            offset, lsn)

    def _heartbeat(self) -> list[SourceRecord]:
        interval = self.settings["heartbeat.interval.ms"]
        if not interval or time.monotonic() - self._last_heartbeat < interval / 1000:
            return []
        self._last_heartbeat = time.monotonic()
        if self._last_commit is None:
            return []
        commit_lsn, end_lsn, xid, micros = self._last_commit
        offset = {"lsn_proc": end_lsn, "lsn_commit": commit_lsn, "lsn": end_lsn, "txId": xid,
                  "ts_usec": micros}
        record = SourceRecord(
            self.partition, offset, f"{self.settings['topic.heartbeat.prefix']}.{self.prefix}",
            key_schema=HEARTBEAT_KEY, key=Struct(HEARTBEAT_KEY).put("serverName", self.prefix),
            value_schema=HEARTBEAT_VALUE,
            value=Struct(HEARTBEAT_VALUE).put("ts_ms", time.time_ns() // 1_000_000))
        self._track(record, end_lsn)
        self._emitted = (commit_lsn, xid, end_lsn)
        return [record]

    def _read_stream(self) -> list[SourceRecord]:
        records: list[SourceRecord] = []
        limit = self.settings["max.batch.size"]
        deadline = time.monotonic() + self.settings["poll.interval.ms"] / 1000
        while len(records) < limit and not self._stopping.is_set():
            message = self.cur.read_message()
            if message is None:
                if records:
                    break
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                select.select([self.repl], [], [], min(remaining, 0.1))
                continue
            decoded = pgoutput.decode(message.payload)
            if isinstance(decoded, pgoutput.Begin):
                self._tx = decoded
            elif isinstance(decoded, pgoutput.Commit):
                if self._tx is not None:
                    self._last_commit = (decoded.commit_lsn, decoded.end_lsn, self._tx.xid,
                                         decoded.commit_micros)
                    self._commit_lsn = decoded.commit_lsn
                self._tx = None
            elif isinstance(decoded, pgoutput.Relation):
                self._relation(decoded)
            elif isinstance(decoded, pgoutput.Change):
                records += self._stream_change(decoded, message.data_start)
        return records + self._heartbeat()

    # -- the worker's calls --------------------------------------------------------------

    def poll(self) -> list[SourceRecord] | None:
        with self._lock:
            if self._stopping.is_set():
                return None
            try:
                self._send_feedback()
                if self._snapshot is not None:
                    return self._poll_snapshot()
                if not self._streaming:
                    if self.settings["snapshot.mode"] == "initial_only":
                        self._stopping.wait(self.settings["poll.interval.ms"] / 1000)
                        return None
                    self._start_streaming()
                return self._read_stream() or None
            except (psycopg2.OperationalError, psycopg2.InterfaceError) as e:
                if not self._streaming:
                    raise ConnectException(f"PostgreSQL replication failed: {one_line(e)}") \
                        from None
                cause = one_line(e)
                self._reconnect()
                raise RetriableException(f"The replication connection was lost ({cause}); "
                                         f"reconnected, the stream goes on after the last "
                                         f"record given") from None
            except psycopg2.Error as e:
                raise ConnectException(f"PostgreSQL replication failed: {one_line(e)}") from None

    def _reconnect(self) -> None:
        """New connections after a lost one (ConnectException where the server cannot be
        reached); the stream restarts from the slot, passing over the events given before."""
        try:
            self.repl.close()
        except psycopg2.Error:
            pass  # already gone
        try:
            with self.conn.cursor() as cur:
                cur.execute("SELECT 1")
        except psycopg2.Error:
            self.conn.close()
            self.conn = _connect(self.settings)
        self._wait_walsender_gone()
        self.repl = _connect(self.settings, replication=True)
        self._walsender = self.repl.get_backend_pid()
        self.cur = self.repl.cursor()
        self._streaming, self._tx, self._flushed = False, None, 0
        self.tables.clear()  # the new session sends each relation again
        if self._emitted is not None:
            self.resume = self._emitted

    def commit_record(self, record: SourceRecord, metadata: RecordMetadata | None) -> None:
        with self._acks:
            entry = self._by_record.get(id(record))
            if entry is not None and entry.record is record:
                entry.acked = True

    def commit(self) -> None:
        """The records acknowledged in order so far are safe: the slot may confirm up to
        the last one's LSN (sent to the server by the polling thread)."""
        with self._acks:
            while self._pending and self._pending[0].acked:
                entry = self._pending.popleft()
                del self._by_record[id(entry.record)]
                self._flush_target = max(self._flush_target, entry.lsn)

    def _send_feedback(self) -> None:
        if self._streaming and self._flush_target > self._flushed:
            self.cur.send_feedback(flush_lsn=self._flush_target, reply=True, force=True)
            self._flushed = self._flush_target

    def _wait_walsender_gone(self, timeout: float = 5.0) -> None:
        """The server lets the slot go when our walsender has exited, a moment after the
        connection closes: a task started right after this one finds the slot free."""
        deadline = time.monotonic() + timeout
        with self.conn.cursor() as cur:
            while time.monotonic() < deadline:
                cur.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", (self._walsender,))
                if cur.fetchone() is None:
                    return
                time.sleep(0.01)

    def stop(self) -> None:
        self._stopping.set()
        with self._lock:
            if self._snapshot is not None:
                self._snapshot.close()
            try:
                if self._streaming and self._flush_target > self._flushed:
                    self.cur.send_feedback(flush_lsn=self._flush_target, force=True)
                self.repl.close()
                self._wait_walsender_gone()
                if self.settings["slot.drop.on.stop"]:
                    with self.conn.cursor() as cur:
                        cur.execute("SELECT pg_drop_replication_slot(%s)",
                                    (self.settings["slot.name"],))
            except psycopg2.Error:
                pass  # stopping: the server ends the session either way
            finally:
                self.conn.close()
