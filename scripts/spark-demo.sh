#!/usr/bin/env bash
# Install PySpark (the spark extra) and a JVM when missing, then run the clickstream pipeline
# end to end against a broker of its own. Extra arguments go to `python -m josefk.pipelines.demo`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/debian-deps.sh java=openjdk-17-jre-headless
scripts/setup.sh spark
exec .venv/bin/python -m josefk.pipelines.demo "$@"
