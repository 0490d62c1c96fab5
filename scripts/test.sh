#!/usr/bin/env bash
# Install everything the tests need (pip packages, Debian kcat) and run the whole suite.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v kcat >/dev/null 2>&1; then
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq kcat >/dev/null
fi
scripts/setup.sh test
exec .venv/bin/python -m pytest -q "$@"
