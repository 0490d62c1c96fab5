"""What the JDBC source and sink share: the connection settings with Confluent's names, the
JDBC URLs teams' configs hold turned into SQLAlchemy URLs, connecting with Confluent's
``connection.attempts`` / ``connection.backoff.ms``, and database errors as one line."""
from __future__ import annotations

import time
import urllib.parse
import zoneinfo

import sqlalchemy as sa
from sqlalchemy.engine import URL, make_url

from josefk.connect.api.config import ConfigDef, ConfigException, Importance, Range
from josefk.connect.api.config import Type as T
from josefk.connect.api.errors import ConnectException
from josefk.connect.connectors.cause import one_line

CONNECTION_GROUP = "Database"

# JDBC subprotocol -> SQLAlchemy dialect+driver
_JDBC_DIALECTS = {"postgresql": "postgresql+psycopg", "sqlite": "sqlite", "mysql": "mysql",
                  "mariadb": "mariadb", "sqlserver": "mssql", "oracle": "oracle"}
# JDBC URL parameters that libpq knows by the same name
_PG_PARAMS = {"sslmode", "sslrootcert", "sslcert", "sslkey", "application_name",
              "connect_timeout", "options"}


def define_connection(config: ConfigDef) -> ConfigDef:
    return (config
            .define("connection.url", T.STRING, importance=Importance.HIGH, group=CONNECTION_GROUP,
                    documentation="JDBC connection URL (jdbc:postgresql://host:port/db, "
                                  "jdbc:sqlite:/path/file.db) or a SQLAlchemy URL.")
            .define("connection.user", T.STRING, None, importance=Importance.HIGH,
                    group=CONNECTION_GROUP, documentation="JDBC connection user.")
            .define("connection.password", T.PASSWORD, None, importance=Importance.HIGH,
                    group=CONNECTION_GROUP, documentation="JDBC connection password.")
            .define("connection.attempts", T.INT, 3, Range.at_least(1), Importance.LOW,
                    "Maximum number of attempts to retrieve a valid JDBC connection.",
                    group=CONNECTION_GROUP)
            .define("connection.backoff.ms", T.LONG, 10000, Range.at_least(0), Importance.LOW,
                    "Backoff time in milliseconds between connection attempts.",
                    group=CONNECTION_GROUP)
            .define("dialect.name", T.STRING, "", importance=Importance.LOW,
                    group=CONNECTION_GROUP,
                    documentation="The SQLAlchemy dialect to use; empty: the URL's.")
            .define("db.timezone", T.STRING, "UTC", importance=Importance.MEDIUM,
                    documentation="Name of the time zone used for timestamps without one."))


def parse_zone(settings: dict) -> None:
    """``db.timezone`` as a time zone (in place)."""
    try:
        settings["db.timezone"] = zoneinfo.ZoneInfo(settings["db.timezone"])
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise ConfigException("db.timezone", settings["db.timezone"],
                              "Invalid time zone identifier") from None


def sqlalchemy_url(url: str, user: str | None, password: str | None,
                   dialect: str = "") -> URL:
    """``connection.url`` as a SQLAlchemy URL: ``jdbc:postgresql://h:p/db?user=..``,
    ``jdbc:sqlite:/abs/path`` (``jdbc:sqlite::memory:``), other ``jdbc:X://..`` forms, or a
    SQLAlchemy URL as it is (``postgresql://`` with psycopg). User and password from the
    settings win over the URL's."""
    text = url.strip()
    if text.startswith("jdbc:sqlite:"):
        path = text[len("jdbc:sqlite:"):]
        result = URL.create("sqlite", database=None if path in ("", ":memory:") else path)
    elif text.startswith("jdbc:"):
        parsed = urllib.parse.urlsplit(text[len("jdbc:"):])
        params = dict(urllib.parse.parse_qsl(parsed.query))
        params.update(p.split("=", 1) for p in parsed.path.split(";")[1:] if "=" in p)
        drivername = _JDBC_DIALECTS.get(parsed.scheme, parsed.scheme)
        query = {k: v for k, v in params.items()
                 if k in _PG_PARAMS} if parsed.scheme == "postgresql" else {}
        result = URL.create(drivername, username=params.get("user"),
                            password=params.get("password"), host=parsed.hostname,
                            port=parsed.port, database=parsed.path.split(";")[0].lstrip("/")
                            or None, query=query)
    else:
        try:
            result = make_url(text)
        except sa.exc.ArgumentError:
            raise ConnectException(f"Not a JDBC or SQLAlchemy URL: {url}") from None
        if result.drivername == "postgresql":
            result = result.set(drivername="postgresql+psycopg")
    if dialect:
        result = result.set(drivername=dialect)
    if user:
        result = result.set(username=user)
    if password:
        result = result.set(password=password)
    return result


def connect(settings: dict) -> sa.Engine:
    """An engine whose first connection succeeded, after up to ``connection.attempts`` tries
    ``connection.backoff.ms`` apart; ConnectException with the cause otherwise."""
    password = settings.get("connection.password")
    url = sqlalchemy_url(settings["connection.url"], settings.get("connection.user"),
                         password.value if password is not None else None,
                         settings.get("dialect.name") or "")
    try:
        # pre-ping: a pooled connection the server dropped is replaced, as Confluent's
        # CachedConnectionProvider checks isValid before each use
        engine = sa.create_engine(url, pool_pre_ping=True)
    except (sa.exc.ArgumentError, sa.exc.NoSuchModuleError, ImportError) as e:
        raise ConnectException(f"Cannot use connection.url {url.render_as_string()}: "
                               f"{one_line(e)}") from None
    attempts, attempt = settings["connection.attempts"], 1
    while True:
        try:
            engine.connect().close()
            return engine
        except sa.exc.DBAPIError as e:
            if attempt >= attempts:
                engine.dispose()
                raise ConnectException(f"Could not connect to {url.render_as_string()} after "
                                       f"{attempts} attempt(s): {one_line(e)}") from None
        time.sleep(settings["connection.backoff.ms"] / 1000)
        attempt += 1
