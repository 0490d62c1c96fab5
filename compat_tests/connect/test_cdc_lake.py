"""Issue 29's demo end to end (testkit/cdc_lake.py's ``run``, which scripts/demo-cdc-lake.sh
runs too): PostgreSQL changes through the CDC connector in a ``josefk connect --standalone``
worker, the S3 sink's Parquet files in a real SeaweedFS, read back by a real local Spark."""
from __future__ import annotations

import pytest

from testkit.cdc_lake import run
from testkit.seaweedfs import seaweedfs

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def test_postgres_changes_land_in_the_lake_once_each_and_spark_reads_them(
        broker, postgres, pg_database, spark, tmp_path):
    with seaweedfs(tmp_path / "s3") as s3:
        rows = run(postgres, pg_database, s3, broker.bootstrap, spark, tmp_path)
    events = [(op, id_, name, tier) for op, id_, name, tier, _ in rows]
    snapshot, streamed = events[:2], events[2:]
    assert snapshot == [("r", 1, "ann", "basic"), ("r", 2, "bob", "silver")]
    assert streamed == [("c", 3, "cyd", "gold"), ("u", 1, "ann", "gold"),
                        ("c", 4, "dee", "basic"), ("d", 2, "bob", "silver"),
                        ("u", 3, "cyd2", "gold")]
    lsns = [lsn for *_, lsn in rows[2:]]
    assert lsns == sorted(lsns) and len(set(lsns)) == len(lsns)
