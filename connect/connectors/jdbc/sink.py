"""Confluent's JDBC sink connector (``io.confluent.connect.jdbc.JdbcSinkConnector``): records
of struct values written to tables (``table.name.format``), inserted, upserted (INSERT .. ON
CONFLICT, so a redelivered batch changes nothing) or updated by the primary key ``pk.mode``
says (none / kafka coordinates / the record's key / fields of its value); tombstones delete
(``delete.enabled``); tables created (``auto.create``) and given the new optional fields
(``auto.evolve``). Each ``put`` is one transaction; a database error is retried
``max.retries`` times ``retry.backoff.ms`` apart (RetriableException), as Confluent's."""
from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from josefk.connect.api.config import (ConfigDef, ConfigException, Importance, Range,
                                       ValidString)
from josefk.connect.api.config import Type as T
from josefk.connect.api.connector import SinkConnector, SinkTask
from josefk.connect.api.errors import ConnectException, RetriableException
from josefk.connect.api.records import SinkRecord
from josefk.connect.api.schema import Schema, Struct, Type
from josefk.connect.connectors.cause import one_line
from josefk.connect.connectors.jdbc import common, types

VERSION = "10.8.0"
KAFKA_PK_FIELDS = ["__connect_topic", "__connect_partition", "__connect_offset"]
KAFKA_PK_SCHEMAS = [Schema.STRING_SCHEMA, Schema.INT32_SCHEMA, Schema.INT64_SCHEMA]


def config_def() -> ConfigDef:
    c = common.define_connection(ConfigDef())
    w = "Writes"
    c.define("insert.mode", T.STRING, "insert",
             ValidString.in_ignore_case("insert", "upsert", "update"), Importance.HIGH,
             "The insertion mode to use: insert, upsert (insert or update by the primary "
             "key, idempotent) or update.", group=w)
    c.define("batch.size", T.INT, 3000, Range.at_least(0), Importance.MEDIUM,
             "Specifies how many records to attempt to batch together for insertion into "
             "the destination table, when possible.", group=w)
    c.define("delete.enabled", T.BOOLEAN, False, importance=Importance.MEDIUM, group=w,
             documentation="Whether to treat null record values as deletes. Requires pk.mode "
                           "to be record_key.")
    d = "Data Mapping"
    c.define("table.name.format", T.STRING, "${topic}", importance=Importance.MEDIUM, group=d,
             documentation="A format string for the destination table name, which may "
                           "contain '${topic}' as a placeholder for the originating topic.")
    c.define("pk.mode", T.STRING, "none",
             ValidString.in_ignore_case("none", "kafka", "record_key", "record_value"),
             Importance.HIGH, "The primary key mode.", group=d)
    c.define("pk.fields", T.LIST, "", importance=Importance.MEDIUM, group=d,
             documentation="List of comma-separated primary key field names; its meaning "
                           "depends on pk.mode.")
    c.define("fields.whitelist", T.LIST, "", importance=Importance.MEDIUM, group=d,
             documentation="List of comma-separated record value field names; empty: all.")
    s = "DDL Support"
    c.define("auto.create", T.BOOLEAN, False, importance=Importance.MEDIUM, group=s,
             documentation="Whether to automatically create the destination table based on "
                           "record schema if it is found to be missing.")
    c.define("auto.evolve", T.BOOLEAN, False, importance=Importance.MEDIUM, group=s,
             documentation="Whether to automatically add columns in the table schema when "
                           "found to be missing relative to the record schema.")
    r = "Retries"
    c.define("max.retries", T.INT, 10, Range.at_least(0), Importance.MEDIUM,
             "The maximum number of times to retry on errors before failing the task.",
             group=r)
    c.define("retry.backoff.ms", T.INT, 3000, Range.at_least(0), Importance.MEDIUM,
             "The time in milliseconds to wait following an error before a retry attempt "
             "is made.", group=r)
    return c


CONFIG = config_def()


def parse(props: dict) -> dict:
    settings = CONFIG.parse(props)
    settings["insert.mode"] = settings["insert.mode"].lower()
    settings["pk.mode"] = settings["pk.mode"].lower()
    if settings["delete.enabled"] and settings["pk.mode"] != "record_key":
        raise ConfigException("pk.mode", settings["pk.mode"],
                              "Primary key mode must be 'record_key' when delete support is "
                              "enabled")
    if settings["pk.mode"] == "kafka" and settings["pk.fields"] \
            and len(settings["pk.fields"]) != 3:
        raise ConfigException("pk.fields", ",".join(settings["pk.fields"]),
                              "PK mode for table is KAFKA so there should either be no "
                              "field names defined for defaults to be applicable, or "
                              "exactly 3")
    common.parse_zone(settings)
    if settings["insert.mode"] in ("upsert", "update") and settings["pk.mode"] == "none":
        raise ConfigException("pk.mode", "none",
                              f"insert.mode {settings['insert.mode']} needs a primary key")
    return settings


class JdbcSinkConnector(SinkConnector):
    def version(self) -> str:
        return VERSION

    def config(self) -> ConfigDef:
        return CONFIG

    def task_class(self):
        return JdbcSinkTask

    def start(self, props: dict[str, str]) -> None:
        parse(props)
        self.props = dict(props)

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self.props) for _ in range(max_tasks)]

    def alter_offsets(self, connector_config, offsets) -> bool:
        """KIP-875: the sink keeps no offsets of its own (the consumer group's are all)."""
        return True

    def stop(self) -> None:
        pass


def _at(record: SinkRecord) -> str:
    timestamp = "null" if record.timestamp is None else record.timestamp
    return (f"(topic='{record.topic}',partition={record.kafka_partition},"
            f"offset={record.kafka_offset},timestamp={timestamp})")


_JAVA_TYPES = {Struct: "Struct", str: "String", int: "Long", float: "Double", bool: "Boolean",
               bytes: "byte[]", dict: "HashMap", list: "ArrayList"}


def _value_type(value) -> str:
    return "null" if value is None else _JAVA_TYPES.get(type(value), type(value).__name__)


def _schema_type(schema: Schema | None) -> str:
    return "null" if schema is None else schema.type.name.capitalize()


class RecordValidator:
    """Confluent's RecordValidator: the record keys and values the settings need, checked
    before anything is written, with Confluent's messages."""

    def __init__(self, settings: dict, connector_name: str):
        self.mode, self.deletes = settings["pk.mode"], settings["delete.enabled"]
        self.needs_key = self.mode == "record_key" or self.deletes
        self.needs_value = self.mode in ("record_value", "none") or not self.deletes
        self.head = (f"The JDBC sink connector '{connector_name}' is configured with "
                     f"'delete.enabled={str(self.deletes).lower()}' and 'pk.mode={self.mode}' "
                     f"and therefore requires")

    def _fail(self, need: str, record: SinkRecord, what: str, value, schema):
        raise ConnectException(f"{self.head} {need}, but found record at {_at(record)} with a "
                               f"{_value_type(value)} {what} and {_schema_type(schema)} "
                               f"{what} schema.")

    def __call__(self, record: SinkRecord) -> None:
        if self.needs_key:
            key, schema = record.key, record.key_schema
            if key is None:
                self._fail("non-null record keys", record, "key", key, schema)
            if schema is None:
                self._fail("non-null record keys with schemas", record, "key", key, schema)
            if schema.type is not Type.STRUCT and not schema.type.is_primitive:
                self._fail("non-null record keys that are either structs or a single "
                           "primitive value", record, "key", key, schema)
        if self.needs_value or record.value is not None:
            value, schema = record.value, record.value_schema
            if value is None or schema is None:
                self._fail("non-null record values that are structs", record, "value", value,
                           schema)
            if schema.type is not Type.STRUCT or not isinstance(value, Struct):
                self._fail("record values to be structs", record, "value", value, schema)


class Plan:
    """How records of one topic, key schema and value schema are written: the table, the key
    and value columns (Confluent's FieldsMetadata) and the statements."""

    def __init__(self, task: "JdbcSinkTask", record: SinkRecord, table_name: str):
        s = task.settings
        self.table_name = table_name
        mode = s["pk.mode"]
        self.key_fields: list[tuple[str, Schema]] = []
        value_schema = record.value_schema
        value_fields = list(value_schema.fields()) if value_schema is not None else []
        pk_fields = s["pk.fields"]
        if mode == "kafka":
            self.key_fields = list(zip(pk_fields or KAFKA_PK_FIELDS, KAFKA_PK_SCHEMAS))
        elif mode == "record_key":  # a struct or a primitive: the RecordValidator saw to it
            key_schema = record.key_schema
            if key_schema.type is Type.STRUCT:
                names = pk_fields or [f.name for f in key_schema.fields()]
                for name in names:
                    field = key_schema.field(name)
                    if field is None:
                        raise ConnectException(f"PK mode for table '{table_name}' is "
                                               f"RECORD_KEY with configured PK fields {names}, "
                                               f"but record key schema does not contain "
                                               f"field: {name}")
                    self.key_fields.append((name, field.schema))
            else:
                if len(pk_fields) != 1:
                    raise ConnectException(f"Need exactly one PK column defined since the key "
                                           f"schema for records is a primitive type, defined "
                                           f"columns are: {pk_fields}")
                self.key_fields = [(pk_fields[0], key_schema)]
        elif mode == "record_value":
            names = pk_fields or [f.name for f in value_fields]
            for name in names:
                field = value_schema.field(name) if value_schema is not None else None
                if field is None:
                    raise ConnectException(f"PK mode for table '{table_name}' is RECORD_VALUE "
                                           f"with configured PK fields {names}, but record "
                                           f"value schema does not contain field: {name}")
                self.key_fields.append((name, field.schema))
        key_names = {n for n, _ in self.key_fields}
        allowed = set(s["fields.whitelist"])
        self.value_fields = [(f.name, f.schema) for f in value_fields
                             if f.name not in key_names and (not allowed or f.name in allowed)]
        self.key_source = mode
        self.zone = s["db.timezone"]
        self.table = task.table_for(self)

    def columns(self) -> list[tuple[str, Schema]]:
        return self.key_fields + self.value_fields

    def row(self, record: SinkRecord) -> dict:
        row = {}
        if self.key_source == "kafka":
            row.update(zip((n for n, _ in self.key_fields),
                           (record.topic, record.kafka_partition, record.kafka_offset)))
        elif self.key_source == "record_key":
            if isinstance(record.key, Struct):
                for name, schema in self.key_fields:
                    row[name] = types.sql_value(schema, record.key.get(name), self.zone)
            else:
                name, schema = self.key_fields[0]
                row[name] = types.sql_value(schema, record.key, self.zone)
        value = record.value
        if value is not None:
            for name, schema in self.key_fields if self.key_source == "record_value" else ():
                row[name] = types.sql_value(schema, value.get(name), self.zone)
            for name, schema in self.value_fields:
                row[name] = types.sql_value(schema, value.get(name), self.zone)
        return row

    def key(self, row: dict) -> tuple:
        return tuple(row[n] for n, _ in self.key_fields)


class JdbcSinkTask(SinkTask):
    def version(self) -> str:
        return VERSION

    def start(self, props: dict[str, str]) -> None:
        self.settings = parse(props)
        self.remaining_retries = self.settings["max.retries"]
        self.engine = common.connect(self.settings)
        self.dialect = self.engine.dialect.name
        self.validate = RecordValidator(self.settings, props.get("name", ""))
        self._plans: dict[tuple, Plan] = {}
        self._tables: dict[str, sa.Table] = {}

    # -- tables ------------------------------------------------------------------------------

    def _split(self, table_name: str) -> tuple[str | None, str]:
        schema, _, name = table_name.rpartition(".")
        return schema or None, name

    def _reflect(self, table_name: str) -> sa.Table | None:
        schema, name = self._split(table_name)
        try:
            return sa.Table(name, sa.MetaData(), schema=schema, autoload_with=self.engine)
        except sa.exc.NoSuchTableError:
            return None

    def _column(self, name: str, schema: Schema, primary: bool) -> sa.Column:
        default = None
        if schema.default is not None and not primary:
            literal = sa.literal(types.sql_value(schema, schema.default,
                                                self.settings["db.timezone"]),
                                 types.sql_type(schema, self.dialect))
            default = sa.text(str(literal.compile(self.engine,
                                                  compile_kwargs={"literal_binds": True})))
        return sa.Column(name, types.sql_type(schema, self.dialect), primary_key=primary,
                         nullable=not primary and schema.optional, server_default=default)

    def table_for(self, plan: Plan) -> sa.Table:
        """The plan's table, created or evolved as auto.create / auto.evolve allow."""
        table = self._tables.get(plan.table_name)
        if table is None:
            table = self._reflect(plan.table_name)
        if table is None:
            if not self.settings["auto.create"]:
                raise ConnectException(f'Table "{plan.table_name}" is missing and '
                                       f"auto-creation is disabled")
            schema, name = self._split(plan.table_name)
            key_names = {n for n, _ in plan.key_fields}
            table = sa.Table(name, sa.MetaData(), *(
                self._column(n, s, n in key_names) for n, s in plan.columns()), schema=schema)
            table.create(self.engine, checkfirst=True)
        missing = [(n, s) for n, s in plan.columns() if n not in table.c]
        if missing:
            if not self.settings["auto.evolve"]:
                raise ConnectException(f'Table "{plan.table_name}" is missing fields '
                                       f"({', '.join(n for n, _ in missing)}) and "
                                       f"auto-evolution is disabled")
            self._evolve(plan.table_name, missing)
            table = self._reflect(plan.table_name)
        self._tables[plan.table_name] = table
        return table

    def _evolve(self, table_name: str, missing: list[tuple[str, Schema]]) -> None:
        quote = self.engine.dialect.identifier_preparer
        with self.engine.begin() as conn:
            for name, schema in missing:
                if not schema.optional and schema.default is None:
                    raise ConnectException(f'Cannot ALTER TABLE "{table_name}" to add missing '
                                           f"field {name}, as the field is not optional and "
                                           f"does not have a default value")
                column = self._column(name, schema, False)
                ddl = sa.schema.CreateColumn(column).compile(self.engine)
                target = ".".join(quote.quote(p) for p in table_name.split("."))
                conn.execute(sa.text(f"ALTER TABLE {target} ADD {ddl}"))

    # -- writing -----------------------------------------------------------------------------

    def _plan(self, record: SinkRecord) -> Plan:
        table_name = self.settings["table.name.format"].replace("${topic}", record.topic)
        cache_key = (table_name, record.key_schema, record.value_schema)
        plan = self._plans.get(cache_key)
        if plan is None:
            plan = self._plans[cache_key] = Plan(self, record, table_name)
        return plan

    def _statement(self, plan: Plan, delete: bool):
        table = plan.table
        keys = [table.c[n] for n, _ in plan.key_fields]
        if delete:
            return table.delete().where(*(k == sa.bindparam("k_" + k.name) for k in keys))
        mode = self.settings["insert.mode"]
        if mode == "update":
            return (table.update()
                    .where(*(k == sa.bindparam("k_" + k.name) for k in keys))
                    .values({n: sa.bindparam("v_" + n) for n, _ in plan.value_fields}))
        if mode == "upsert":
            insert = {"postgresql": postgresql.insert, "sqlite": sqlite.insert}.get(self.dialect)
            if insert is None:
                raise ConnectException(f"insert.mode upsert is not supported on {self.dialect}")
            stmt = insert(table)
            updates = {n: stmt.excluded[n] for n, _ in plan.value_fields}
            if updates:
                return stmt.on_conflict_do_update(index_elements=keys, set_=updates)
            return stmt.on_conflict_do_nothing(index_elements=keys)
        return table.insert()

    def _batches(self, records: list[SinkRecord]):
        """Runs of records of one plan and one kind (write or delete), in order, at most
        batch.size long; later writes of a key replace earlier ones in an upsert run."""
        limit = self.settings["batch.size"] or len(records)
        current, rows = None, []
        for record in records:
            self.validate(record)
            delete = record.value is None
            plan = self._plan(record) if not delete else self._delete_plan(record)
            kind = (plan, delete)
            if kind != current or len(rows) >= limit:
                if rows:
                    yield current, rows
                current, rows = kind, []
            rows.append(plan.row(record))
        if rows:
            yield current, rows

    def _delete_plan(self, record: SinkRecord) -> Plan:
        """A tombstone's plan: its topic's and key schema's, whatever value schema wrote."""
        table_name = self.settings["table.name.format"].replace("${topic}", record.topic)
        for (name, key_schema, _), plan in self._plans.items():
            if name == table_name and key_schema == record.key_schema:
                return plan
        return self._plan(record)

    def _write(self, conn, plan: Plan, delete: bool, rows: list[dict]) -> None:
        mode = self.settings["insert.mode"]
        if delete or mode == "update":
            params = []
            for row in rows:
                bound = {("k_" + n): row[n] for n, _ in plan.key_fields}
                if not delete:
                    bound.update(("v_" + n, row.get(n)) for n, _ in plan.value_fields)
                params.append(bound)
            conn.execute(self._statement(plan, delete), params)
            return
        if mode == "upsert":
            rows = list({plan.key(row): row for row in rows}.values())
        conn.execute(self._statement(plan, False), rows)

    def put(self, records: list[SinkRecord]) -> None:
        if not records:
            return
        try:
            batches = list(self._batches(records))  # tables created or evolved first
            with self.engine.begin() as conn:
                for (plan, delete), rows in batches:
                    self._write(conn, plan, delete, rows)
        except sa.exc.DBAPIError as e:
            cause = one_line(e)
            if self.remaining_retries > 0:
                self.remaining_retries -= 1
                # as Confluent's new writer: connections and what is known of the tables anew
                self.engine.dispose()
                self._plans.clear()
                self._tables.clear()
                if self.context is not None:
                    self.context.timeout(self.settings["retry.backoff.ms"])
                raise RetriableException(f"Write to the database failed (retries left "
                                         f"{self.remaining_retries}): {cause}") from None
            raise ConnectException(f"Write to the database failed after "
                                   f"{self.settings['max.retries']} retries: {cause}") from None
        self.remaining_retries = self.settings["max.retries"]

    def flush(self, current_offsets) -> None:
        """Each put commits its own transaction: nothing is pending."""

    def stop(self) -> None:
        self.engine.dispose()
