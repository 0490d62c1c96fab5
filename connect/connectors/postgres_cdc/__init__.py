"""PostgreSQL change data capture shaped as Debezium's connector: pgoutput logical
replication, an initial snapshot, Debezium's change events, settings and offsets."""
from josefk.connect.connectors.postgres_cdc.connector import PostgresConnector, PostgresConnectorTask

__all__ = ["PostgresConnector", "PostgresConnectorTask"]
