#!/usr/bin/env bash
# Install everything the tests need (pip packages; Debian's kcat, and a JVM for the Spark tests)
# and run the whole suite.
set -euo pipefail
cd "$(dirname "$0")/.."
missing=()
command -v kcat >/dev/null 2>&1 || missing+=(kcat)
command -v java >/dev/null 2>&1 || missing+=(openjdk-17-jre-headless)
if [ ${#missing[@]} -gt 0 ]; then
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
scripts/setup.sh test,spark
exec .venv/bin/python -m pytest -q "$@"
