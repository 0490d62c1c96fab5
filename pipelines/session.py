"""The SparkSession the pipelines, tests and benchmarks run in."""
from __future__ import annotations

import os
import sys


def local_session(app: str, master: str = "local[2]"):
    """A local SparkSession whose Python workers run this interpreter (so they import the same
    packages, the Kafka source among them), with few shuffle partitions and no web UI."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master(master).appName(app)
             .config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "2")
             .config("spark.sql.session.timeZone", "UTC")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark
