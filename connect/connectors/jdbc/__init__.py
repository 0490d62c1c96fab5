"""Confluent's JDBC connectors on SQLAlchemy: ``JdbcSourceConnector`` (tables or a query into
topics) and ``JdbcSinkConnector`` (topics into tables), with Confluent's setting names."""
from josefk.connect.connectors.jdbc.sink import JdbcSinkConnector, JdbcSinkTask
from josefk.connect.connectors.jdbc.source import JdbcSourceConnector, JdbcSourceTask

__all__ = ["JdbcSinkConnector", "JdbcSinkTask", "JdbcSourceConnector", "JdbcSourceTask"]
