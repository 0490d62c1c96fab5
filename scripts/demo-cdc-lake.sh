#!/usr/bin/env bash
# Issue 29's demo: PostgreSQL -> CDC -> josefk -> Parquet in SeaweedFS -> Spark (testkit/cdc_lake.py).
# Installs what is missing (PostgreSQL, a JVM, the connect/tiered/spark extras), then runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/debian-deps.sh pg_ctlcluster=postgresql java=openjdk-17-jre-headless
scripts/setup.sh connect,tiered,spark
exec .venv/bin/python -m testkit.cdc_lake "$@"
