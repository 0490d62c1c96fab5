#!/usr/bin/env bash
# Install everything the tests need (pip packages; Debian's kcat, and a JVM for the Spark tests)
# and run the whole suite.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/debian-deps.sh kcat=kcat java=openjdk-17-jre-headless
scripts/setup.sh test,spark
exec .venv/bin/python -m pytest -q "$@"
