"""Spark (PySpark) jobs that read and write josefk topics with format("kafka")."""
