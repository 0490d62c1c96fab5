"""What the two test packages share, so neither imports the other: the request fuzzer, the
recorded client requests, the session's ZooKeeper, the import-contract check. ``tests/`` (unit
and integration tests of our own code) and ``compat_tests/`` (stock clients against real broker
processes) import this package and ``josefk``, never each other; this package imports neither
of them. Like ``bench/``, it is not installed with josefk."""
from pathlib import Path

# Request frames recorded from the Apache Kafka Java client and Spark's connector (README.md there).
JAVA_VECTORS = Path(__file__).resolve().parent / "vectors" / "java"
