"""Spark's ``format("kafka")`` for machines without the JVM connector.

``kafka_format(spark)`` is the one call a job makes: it returns ``"kafka"`` when Spark's own
connector (``spark-sql-kafka-0-10``) is on the classpath, and otherwise registers this Python
data source and returns its name, ``"pykafka"``. Spark 4 refuses to register a Python source
under the name ``kafka`` (``DATA_SOURCE_ALREADY_EXISTS``: the name is reserved for the JVM
connector), so this is the closest working form.
"""
from __future__ import annotations

from josefk.pipelines.kafka_source.source import NAME, KafkaDataSource

JVM_PROVIDER = "org.apache.spark.sql.kafka010.KafkaSourceProvider"


def has_jvm_connector(spark) -> bool:
    jvm = spark.sparkContext._jvm
    try:
        jvm.java.lang.Thread.currentThread().getContextClassLoader().loadClass(JVM_PROVIDER)
        return True
    except Exception:  # py4j wraps the ClassNotFoundException
        return False


def kafka_format(spark) -> str:
    """The format name that reads and writes Kafka topics in this session."""
    if has_jvm_connector(spark):
        return "kafka"
    spark.dataSource.register(KafkaDataSource)
    return NAME


__all__ = ["KafkaDataSource", "NAME", "kafka_format", "has_jvm_connector"]
