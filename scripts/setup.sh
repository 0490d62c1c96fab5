#!/usr/bin/env bash
# Create .venv and install josefk into it (idempotent). Pass extras, e.g. "test" or "test,bench".
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-}"
# wire/_recscan.c (produce-side record validation) is compiled at install: it needs a C compiler.
if ! command -v cc >/dev/null 2>&1; then
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq gcc >/dev/null
fi
if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
if [ -n "$extras" ]; then
    .venv/bin/pip install -q -e ".[$extras]"
else
    .venv/bin/pip install -q -e .
fi
