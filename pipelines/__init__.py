"""Spark (PySpark) jobs that read and write josefk topics with format("kafka"), and a Python
Kafka data source for Spark 4 (``kafka_source``) built on confluent-kafka. Clients of any Kafka
cluster: they must not import the broker or its internals."""
