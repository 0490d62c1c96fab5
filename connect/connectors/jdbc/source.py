"""Confluent's JDBC source connector (``io.confluent.connect.jdbc.JdbcSourceConnector``):
tables (or one query) read periodically, whole (``bulk``) or past the last row seen by an
incrementing column, timestamp columns, or both, one record per row with a Connect schema
from the columns. Source partitions and offsets are Confluent's, so a restart (or a
connector moved from a JVM worker) resumes exactly: ``{"protocol": "1", "table": fqn}``
(the older ``{"table": name}`` is read too), ``{"query": "query"}``; ``{"incrementing": n}``,
``{"timestamp": ms, "timestamp_nanos": n}``."""
from __future__ import annotations

import datetime
import heapq
import itertools
import logging
import re
import threading
import time

import sqlalchemy as sa

from josefk.connect.api.config import (ConfigDef, ConfigException, Importance,
                                       LambdaValidator, Range, ValidString)
from josefk.connect.api.config import Type as T
from josefk.connect.api.connector import SourceConnector, SourceTask
from josefk.connect.api.errors import ConnectException
from josefk.connect.api.records import SourceRecord
from josefk.connect.api.schema import SchemaBuilder, Struct
from josefk.connect.connectors.cause import one_line
from josefk.connect.connectors.epoch import EPOCH, epoch_micros
from josefk.connect.connectors.jdbc import common, types

log = logging.getLogger(__name__)

VERSION = "10.8.0"
MODES = ("bulk", "timestamp", "incrementing", "timestamp+incrementing")
TABLES_CONFIG = "tables"
QUERY_PARTITION = {"query": "query"}
OFFSET_FIELDS = ("incrementing", "timestamp", "timestamp_nanos")


# transaction.isolation.mode -> SQLAlchemy's isolation_level
ISOLATION_LEVELS = {"DEFAULT": None, "READ_UNCOMMITTED": "READ UNCOMMITTED",
                    "READ_COMMITTED": "READ COMMITTED", "REPEATABLE_READ": "REPEATABLE READ",
                    "SERIALIZABLE": "SERIALIZABLE", "SQL_SERVER_SNAPSHOT": "SNAPSHOT"}
_INVALID_PREFIX = re.compile(r"[^a-zA-Z0-9._-]")


def _check_prefix(name: str, value) -> None:
    if value is None:
        raise ConfigException(name, value, "Topic prefix must not be null.")
    if len(value.strip()) > 249:
        raise ConfigException(name, value, "Topic prefix length must not exceed max topic "
                                           "name length, 249 chars")
    if _INVALID_PREFIX.search(value.strip()):
        raise ConfigException(name, value, "Topic prefix must not contain any character other "
                                           "than ASCII alphanumerics, '.', '_' and '-'.")


def config_def() -> ConfigDef:
    c = common.define_connection(ConfigDef())
    g = "Database"
    c.define("table.whitelist", T.LIST, "", importance=Importance.MEDIUM, group=g,
             documentation="List of tables to include in copying. If specified, "
                           "table.blacklist may not be set.")
    c.define("table.blacklist", T.LIST, "", importance=Importance.MEDIUM, group=g,
             documentation="List of tables to exclude from copying. If specified, "
                           "table.whitelist may not be set.")
    c.define("schema.pattern", T.STRING, None, importance=Importance.MEDIUM, group=g,
             documentation="Schema whose tables are read (default: the connection's).")
    c.define("table.types", T.LIST, "TABLE", importance=Importance.LOW, group=g,
             documentation="TABLE and/or VIEW: the kinds of tables read.")
    c.define("numeric.precision.mapping", T.BOOLEAN, False, importance=Importance.LOW, group=g,
             documentation="Deprecated: numeric.mapping=precision_only.")
    c.define("numeric.mapping", T.STRING, None, LambdaValidator(
                 lambda n, v: v is None or ValidString(types.NUMERIC_MAPPINGS, False)(n, v),
                 "[" + ", ".join(types.NUMERIC_MAPPINGS) + "]"), Importance.LOW,
             "Map NUMERIC values by precision and optionally scale to integral or decimal "
             "types: none, precision_only, best_fit, best_fit_eager_double.", group=g)
    m = "Mode"
    c.define("mode", T.STRING, "", ValidString(("",) + MODES), Importance.HIGH,
             "The mode for updating a table each time it is polled.", group=m)
    c.define("incrementing.column.name", T.STRING, "", importance=Importance.MEDIUM, group=m,
             documentation="The name of the strictly incrementing column used to detect new "
                           "rows (empty: the table's autoincrement column).")
    c.define("timestamp.column.name", T.LIST, "", importance=Importance.MEDIUM, group=m,
             documentation="Timestamp columns used to detect new or modified rows (the first "
                           "non-null of them).")
    c.define("timestamp.initial", T.LONG, None, importance=Importance.LOW, group=m,
             documentation="Epoch milliseconds of the first timestamp read (-1: now); "
                           "default: all rows.")
    c.define("validate.non.null", T.BOOLEAN, True, importance=Importance.LOW, group=m,
             documentation="Check that the incrementing and timestamp columns are NOT NULL.")
    c.define("query", T.STRING, "", importance=Importance.MEDIUM, group=m,
             documentation="If specified, the query to perform to select new or updated rows.")
    c.define("transaction.isolation.mode", T.STRING, "DEFAULT",
             ValidString(tuple(ISOLATION_LEVELS)), Importance.LOW,
             "Mode to control which transaction isolation level is used when running queries "
             "against the database.", group=m)
    c.define("query.retry.attempts", T.INT, -1, Range.at_least(-1), Importance.LOW,
             "Number of times to retry SQL exceptions encountered when executing queries "
             "(-1: no limit).", group=m)
    c.define("query.suffix", T.STRING, "", importance=Importance.LOW, group=m,
             documentation="Suffix to append at the end of the generated query.")
    k = "Connector"
    c.define("poll.interval.ms", T.INT, 5000, Range.at_least(0), Importance.HIGH,
             "Frequency in ms to poll for new data in each table.", group=k)
    c.define("batch.max.rows", T.INT, 100, Range.at_least(1), Importance.LOW,
             "Maximum number of rows to include in a single batch when polling for new "
             "data.", group=k)
    c.define("table.poll.interval.ms", T.LONG, 60000, Range.at_least(0), Importance.LOW,
             "Frequency in ms to poll for new or removed tables.", group=k)
    c.define("topic.prefix", T.STRING, "", LambdaValidator(_check_prefix), Importance.HIGH,
             "Prefix to prepend to table names to generate the name of the Kafka topic to "
             "publish data to, or in the case of a custom query, the full name of the topic "
             "to publish to.", group=k)
    c.define("timestamp.granularity", T.STRING, "connect_logical",
             ValidString(types.TIMESTAMP_GRANULARITIES, case_sensitive=False), Importance.LOW,
             "Define the granularity of the Timestamp column: connect_logical, nanos_long, "
             "nanos_string, nanos_iso_datetime_string.", group=k)
    c.define("timestamp.delay.interval.ms", T.LONG, 0, Range.at_least(0), Importance.HIGH,
             "How long to wait after a row with a certain timestamp appears before it is "
             "included, so transactions with earlier timestamps can complete.", group=k)
    return c


CONFIG = config_def()


def parse(props: dict) -> dict:
    settings = CONFIG.parse(props)
    if not settings["mode"]:
        raise ConfigException("Query mode must be specified")
    settings["topic.prefix"] = settings["topic.prefix"].strip()
    settings["timestamp.granularity"] = settings["timestamp.granularity"].lower()
    if settings["table.whitelist"] and settings["table.blacklist"]:
        raise ConfigException("table.whitelist", ",".join(settings["table.whitelist"]),
                              "table.whitelist and table.blacklist can't both be set")
    if settings["query"] and (settings["table.whitelist"] or settings["table.blacklist"]):
        raise ConfigException("query", settings["query"],
                              "Do not specify table filtering (whitelist or blacklist) "
                              "together with a query")
    if settings["numeric.mapping"] is None:
        settings["numeric.mapping"] = ("precision_only" if settings["numeric.precision.mapping"]
                                       else "none")
    settings["numeric.mapping"] = settings["numeric.mapping"].lower()
    common.parse_zone(settings)
    return settings


# ---- tables -------------------------------------------------------------------------------

def _schemas(engine: sa.Engine, settings: dict) -> list[str | None]:
    """The schemas tables are read from: ``schema.pattern``, else every user schema (as
    JDBC's getTables with a null pattern); SQLite has none."""
    if engine.dialect.name == "sqlite":
        return [None]
    if settings["schema.pattern"]:
        return [settings["schema.pattern"]]
    return [s for s in sa.inspect(engine).get_schema_names()
            if s != "information_schema" and not s.startswith("pg_")]


def _fqn(schema: str | None, table: str) -> str:
    return f"{schema}.{table}" if schema else table


def list_tables(engine: sa.Engine, settings: dict) -> list[str]:
    """The tables to read (qualified names), white- and blacklists applied; a whitelisted
    table that does not exist is an error."""
    kinds = {t.upper() for t in settings["table.types"]}
    found = {}
    try:
        inspector = sa.inspect(engine)
        for schema in _schemas(engine, settings):
            names = inspector.get_table_names(schema=schema) if "TABLE" in kinds else []
            if "VIEW" in kinds:
                names += inspector.get_view_names(schema=schema)
            found.update((_fqn(schema, n), n) for n in names if not n.startswith("sqlite_"))
    except sa.exc.DBAPIError as e:
        raise ConnectException(f"Cannot list the tables: {one_line(e)}") from None
    wanted = settings["table.whitelist"]
    if wanted:
        missing = [w for w in wanted if w not in found and w not in found.values()]
        if missing:
            raise ConnectException(f"Table(s) {', '.join(missing)} in table.whitelist not "
                                   f"found in the database")
        return sorted(q for q, n in found.items() if q in wanted or n in wanted)
    excluded = set(settings["table.blacklist"])
    return sorted(q for q, n in found.items() if q not in excluded and n not in excluded)


def group_partitions(elements: list, groups: int) -> list[list]:
    """Kafka's ConnectorUtils.groupPartitions: contiguous groups, the first ones one larger."""
    per, extra = divmod(len(elements), groups)
    result, start = [], 0
    for i in range(groups):
        size = per + (1 if i < extra else 0)
        result.append(elements[start:start + size])
        start += size
    return result


class JdbcSourceConnector(SourceConnector):
    def version(self) -> str:
        return VERSION

    def config(self) -> ConfigDef:
        return CONFIG

    def task_class(self):
        return JdbcSourceTask

    def start(self, props: dict[str, str]) -> None:
        self.props = dict(props)
        self.settings = parse(props)
        self.tables: list[str] = []
        self._stopping = threading.Event()
        self._monitor = None
        if self.settings["query"]:
            return
        self.engine = common.connect(self.settings)
        self.tables = list_tables(self.engine, self.settings)
        if self.settings["table.poll.interval.ms"] > 0 and self.context is not None:
            self._monitor = threading.Thread(target=self._watch_tables, daemon=True,
                                             name="jdbc-table-monitor")
            self._monitor.start()

    def _watch_tables(self) -> None:
        """Confluent's TableMonitorThread: tables added or removed -> new task configs."""
        interval = self.settings["table.poll.interval.ms"] / 1000
        while not self._stopping.wait(interval):
            try:
                tables = list_tables(self.engine, self.settings)
            except ConnectException as e:
                self.context.raise_error(e)
                return
            if tables != self.tables:
                self.tables = tables
                self.context.request_task_reconfiguration()

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        if self.settings["query"]:
            return [dict(self.props)]
        if not self.tables:
            return []
        groups = group_partitions(self.tables, min(max_tasks, len(self.tables)))
        return [{**self.props, TABLES_CONFIG: ",".join(group)} for group in groups]

    def alter_offsets(self, connector_config: dict[str, str], offsets: dict) -> bool:
        """KIP-875: the offsets live in Kafka only, so any well-formed ones may be written
        (a table's or the query's partition; an offset of integer fields, or none: reset)."""
        for partition, offset in offsets.items():
            if not ("table" in partition or partition == QUERY_PARTITION):
                raise ConnectException(f"Source partition {partition} names no table and is "
                                       f"not the query's {QUERY_PARTITION}")
            if offset is None:
                continue
            bad = [k for k, v in offset.items()
                   if k not in OFFSET_FIELDS or not isinstance(v, int) or isinstance(v, bool)]
            if bad:
                raise ConnectException(f"Source offset {offset} for {partition}: "
                                       f"{', '.join(bad)} must be among {OFFSET_FIELDS}, "
                                       f"integers")
        return True

    def stop(self) -> None:
        self._stopping.set()
        if self._monitor is not None:
            self._monitor.join(5)
        if not self.settings["query"]:
            self.engine.dispose()


# ---- the task ------------------------------------------------------------------------------

def offset_instant(offset: dict) -> datetime.datetime | None:
    millis = offset.get("timestamp")
    if millis is None:
        return None
    nanos = offset.get("timestamp_nanos")
    micros = (millis // 1000) * 1_000_000 + (nanos // 1000 if nanos is not None
                                             else (millis % 1000) * 1000)
    return EPOCH + datetime.timedelta(microseconds=micros)


def instant_offset(instant: datetime.datetime) -> tuple[int, int]:
    """An instant as Java's Timestamp getTime() and getNanos()."""
    micros = epoch_micros(instant)
    return micros // 1000, (micros % 1_000_000) * 1000


class TableQuerier:
    """One table or the query: its statement for the current offset, its open result, and
    when it is next due (Confluent's TableQuerier)."""

    def __init__(self, task: "JdbcSourceTask", table: str | None, offset: dict | None):
        self.task, self.table = task, table
        s = task.settings
        self.mode = s["mode"]
        self.inc_column = s["incrementing.column.name"]
        self.zone = s["db.timezone"]
        self.topic = s["topic.prefix"] + (table.rsplit(".", 1)[-1] if table else "")
        if table:
            schema, _, name = table.rpartition(".")
            self.partition = {"protocol": "1", "table": table}
            self._reflect(schema or None, name)
        else:
            self.partition = dict(QUERY_PARTITION)
            self.source = sa.text(s["query"]).columns().subquery("q")
            self.columns = None  # from the first result
        offset = offset or {}
        self.incrementing = offset.get("incrementing")
        self.timestamp = offset_instant(offset)
        if self.timestamp is None and s["timestamp.initial"] is not None:
            initial = s["timestamp.initial"]
            self.timestamp = (datetime.datetime.now(datetime.timezone.utc) if initial == -1
                              else EPOCH + datetime.timedelta(milliseconds=initial))
        self.result = None
        self.last_update = 0.0

    def _reflect(self, schema: str | None, name: str) -> None:
        s = self.task.settings
        try:
            self.source = sa.Table(name, sa.MetaData(), schema=schema,
                                   autoload_with=self.task.engine)
        except sa.exc.NoSuchTableError:
            raise ConnectException(f'Table "{self.table}" does not exist in the database') \
                from None
        except sa.exc.DBAPIError as e:
            raise ConnectException(f'Cannot read table "{self.table}": '
                                   f"{one_line(e)}") from None
        self.columns = [(c.name, c.type, c.nullable) for c in self.source.columns]
        self._build_schema(name)
        if self.mode in ("incrementing", "timestamp+incrementing") \
                and not s["incrementing.column.name"]:
            auto = [c.name for c in self.source.columns
                    if c.primary_key and c.autoincrement in (True, "auto")
                    and isinstance(c.type, sa.Integer)]
            if len(auto) != 1:
                raise ConnectException(f'Cannot find the autoincrement column of table '
                                       f'"{self.table}": set incrementing.column.name')
            self.inc_column = auto[0]
        for column in self._criteria_columns():
            c = self.source.columns.get(column)
            if c is None:
                raise ConnectException(f'Column "{column}" not found in table "{self.table}"')
            if s["validate.non.null"] and c.nullable and not c.primary_key:
                raise ConnectException(
                    f"Cannot make incremental queries using column {column} on "
                    f"{self.table} because this column is nullable.")

    def _criteria_columns(self) -> list[str]:
        cols = []
        if "timestamp" in self.mode:
            cols += self.task.settings["timestamp.column.name"]
        if "incrementing" in self.mode:
            cols.append(self.inc_column)
        return cols

    def _build_schema(self, name: str | None) -> None:
        s = self.task.settings
        builder = SchemaBuilder.struct()
        if name:
            builder.name(name)
        self.converters = []
        for column, sql_type, nullable in self.columns:
            field, convert = types.column_schema(sql_type, s["numeric.mapping"], self.zone,
                                                 s["timestamp.granularity"])
            builder.field(column, field.optional() if nullable else field)
            self.converters.append(convert)
        self.schema = builder.build()
        self.fields = self.schema.fields()
        self._positions = {f.name: f.index for f in self.fields}
        self._ts_positions = [self._positions[c] for c in s["timestamp.column.name"]
                              if c in self._positions]
        self._instant = types.timestamp_converter(self.zone)

    # -- the statement -----------------------------------------------------------------------

    def _column(self, name: str, as_timestamp: bool = False):
        if isinstance(self.source, sa.Table):
            return self.source.c[name]
        return sa.column(name, sa.DateTime() if as_timestamp else None)

    def _timestamp_expression(self):
        cols = [self._column(n, True) for n in self.task.settings["timestamp.column.name"]]
        return cols[0] if len(cols) == 1 else sa.func.coalesce(*cols)

    def _bind(self, instant: datetime.datetime, expression):
        """An instant as the column takes it: aware for TIMESTAMPTZ, naive in db.timezone."""
        if getattr(expression.type, "timezone", False):
            return instant
        return instant.astimezone(self.zone).replace(tzinfo=None)

    def _now_on_db(self, conn) -> datetime.datetime:
        if conn.dialect.name == "sqlite":
            text = conn.execute(sa.text("SELECT strftime('%Y-%m-%d %H:%M:%f', 'now')")).scalar()
            return datetime.datetime.fromisoformat(text).replace(tzinfo=datetime.timezone.utc)
        now = conn.execute(sa.select(sa.func.current_timestamp())).scalar()
        if isinstance(now, str):
            now = datetime.datetime.fromisoformat(now)
        return now if now.tzinfo else now.replace(tzinfo=self.zone)

    def statement(self, conn):
        """Confluent's TimestampIncrementingCriteria: ``inc > ?``; ``ts > ? AND ts < ?``;
        ``ts < ? AND ((ts = ? AND inc > ?) OR ts > ?)``; ordered by ts, inc."""
        query = sa.select(sa.text("*")).select_from(self.source)
        order = []
        if "timestamp" in self.mode:
            ts = self._timestamp_expression()
            delay = datetime.timedelta(milliseconds=self.task.settings[
                "timestamp.delay.interval.ms"])
            end = self._bind(self._now_on_db(conn) - delay, ts)
            begin = self._bind(self.timestamp or EPOCH, ts)
            order.append(ts)
        if self.mode == "incrementing":
            inc = self._column(self.inc_column)
            query = query.where(inc > (-1 if self.incrementing is None else self.incrementing))
            order.append(inc)
        elif self.mode == "timestamp":
            query = query.where(ts > begin, ts < end)
        elif self.mode == "timestamp+incrementing":
            inc = self._column(self.inc_column)
            last = -1 if self.incrementing is None else self.incrementing
            query = query.where(ts < end, sa.or_(sa.and_(ts == begin, inc > last), ts > begin))
            order.append(inc)
        if order:
            query = query.order_by(*(o.asc() for o in order))
        suffix = self.task.settings["query.suffix"]
        compiled = query if not suffix else sa.text(
            str(query.compile(conn, compile_kwargs={"literal_binds": True})) + " " + suffix)
        return compiled

    # -- reading -----------------------------------------------------------------------------

    def querying(self) -> bool:
        return self.result is not None

    def _start(self, conn) -> None:
        self.result = conn.execution_options(stream_results=True).execute(self.statement(conn))
        names = list(self.result.keys())
        if self.columns is not None and names == [c[0] for c in self.columns]:
            return
        # first query, or the columns changed since: the schema follows them, as Confluent's
        # SchemaMapping follows the result set's metadata
        if isinstance(self.source, sa.Table):
            self._reflect(self.source.schema, self.source.name)
        else:
            description = self.result.cursor.description or []
            first = None
            described = [types.described_type(d) for d in description]
            if any(t is None for t in described):
                first = self.result.fetchmany(1)
                self._pending = first
            timestamps = self.task.settings["timestamp.column.name"]
            self.columns = [(d[0], t or (sa.DateTime() if d[0] in timestamps else
                                         types.value_type(first[0][i]) if first else
                                         sa.String()), True)
                            for i, (d, t) in enumerate(zip(description, described))]
            self._build_schema(None)

    def read(self, conn, max_rows: int) -> tuple[list[SourceRecord], bool]:
        """Up to ``max_rows`` records; and whether the result has more."""
        if self.result is None:
            self._pending = []
            self._start(conn)
        rows = self._pending + self.result.fetchmany(max_rows - len(self._pending))
        self._pending = []
        records = [self._record(row) for row in rows]
        return records, len(rows) == max_rows

    def _record(self, row) -> SourceRecord:
        struct = Struct(self.schema)
        for field, convert, value in zip(self.fields, self.converters, row):
            if value is not None and convert is not None:
                value = convert(value)
            struct.put(field, value)
        offset = None
        if self.mode != "bulk":
            offset = {}
            if "incrementing" in self.mode:
                self.incrementing = int(row[self._positions[self.inc_column]])
                offset["incrementing"] = self.incrementing
            if "timestamp" in self.mode:
                found = next((row[p] for p in self._ts_positions if row[p] is not None), None)
                if found is not None:
                    self.timestamp = self._instant(found)
                offset["timestamp"], offset["timestamp_nanos"] = instant_offset(self.timestamp)
        return SourceRecord(self.partition, offset, self.topic, value_schema=self.schema,
                            value=struct)

    def reset(self, now: float) -> None:
        if self.result is not None:
            try:
                self.result.close()
            except sa.exc.DBAPIError:
                pass  # a failed query's cursor: the transaction's end discards it
        self.result = None
        self.last_update = now


class JdbcSourceTask(SourceTask):
    def version(self) -> str:
        return VERSION

    def start(self, props: dict[str, str]) -> None:
        self.settings = parse(props)
        if "timestamp" in self.settings["mode"] and not self.settings["timestamp.column.name"]:
            raise ConnectException("Timestamp column name must be specified for mode "
                                   + self.settings["mode"])
        tables = [t for t in props.get(TABLES_CONFIG, "").split(",") if t]
        if not tables and not self.settings["query"]:
            raise ConnectException("Invalid configuration: each JdbcSourceTask must have at "
                                   "least one table assigned to it")
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._failures = 0
        self.engine = common.connect(self.settings)
        self.conn = self.engine.connect()
        level = ISOLATION_LEVELS[self.settings["transaction.isolation.mode"]]
        if level is not None:
            self.conn = self.conn.execution_options(isolation_level=level)
        offsets = self._offsets(tables)
        self.queriers = ([TableQuerier(self, t, offsets.get(t)) for t in tables] if tables
                         else [TableQuerier(self, None, offsets.get(None))])
        self._order = itertools.count()
        self._queue = [(q.last_update, next(self._order), q) for q in self.queriers]
        heapq.heapify(self._queue)

    def _offsets(self, tables: list[str]) -> dict:
        """Each table's stored offset: the V1 partition's, else the V0 one's (a table name
        without its schema, as Confluent's older versions wrote)."""
        if self.context is None:
            return {}
        reader = self.context.offset_storage_reader()
        if not tables:
            return {None: reader.offset(dict(QUERY_PARTITION))}
        v1 = reader.offsets([{"protocol": "1", "table": t} for t in tables])
        v0 = reader.offsets([{"table": t.rsplit(".", 1)[-1]} for t in tables])
        return {t: a if a is not None else b for t, a, b in zip(tables, v1, v0)}

    def poll(self) -> list[SourceRecord] | None:
        """The head querier's next batch once it is due (waiting at most a second for it)."""
        _, _, querier = self._queue[0]
        if not querier.querying():
            wait = querier.last_update + self.settings["poll.interval.ms"] / 1000 \
                - time.monotonic()
            if wait > 0:
                self._stopping.wait(min(wait, 1.0))
                if wait > 1.0 or self._stopping.is_set():
                    return None
        with self._lock:
            if self._stopping.is_set():
                return None
            heapq.heappop(self._queue)
            failed, records, more = True, [], False
            try:
                records, more = querier.read(self.conn, self.settings["batch.max.rows"])
                failed, self._failures = False, 0
            except sa.exc.DBAPIError as e:
                self._failed(querier, e)
            finally:
                if not more:
                    querier.reset(time.monotonic())
                    self._end_transaction(failed)
                heapq.heappush(self._queue, (querier.last_update, next(self._order), querier))
        return records or None

    def _failed(self, querier: TableQuerier, error: Exception) -> None:
        """Confluent's query.retry.attempts: the query is tried again at its next poll,
        until the attempts (-1: no limit) are spent."""
        self._failures += 1
        attempts = self.settings["query.retry.attempts"]
        if 0 <= attempts < self._failures:
            raise ConnectException(f"Failed to run query for table {querier.topic} "
                                   f"({self._failures} attempts): {one_line(error)}") from None
        log.warning("Failed to run query for table %s (will retry): %s", querier.topic,
                    one_line(error))

    def _end_transaction(self, failed: bool) -> None:
        """Commit after a query read through; after a failure roll back, and a connection
        that broke is opened again at the next query."""
        if not failed:
            try:
                self.conn.commit()
                return
            except sa.exc.DBAPIError:
                pass
        try:
            self.conn.rollback()
        except sa.exc.DBAPIError:
            self.conn.invalidate()
            self.conn.rollback()

    def stop(self) -> None:
        self._stopping.set()
        with self._lock:
            self.conn.close()
            self.engine.dispose()
