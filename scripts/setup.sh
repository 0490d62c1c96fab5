#!/usr/bin/env bash
# Create .venv and install josefk into it (idempotent). Pass extras, e.g. "test" or "test,bench".
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-}"
# wire/_recscan.c (produce-side record validation) is compiled at install: it needs a C compiler.
scripts/debian-deps.sh cc=gcc
if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
if [ -n "$extras" ]; then
    .venv/bin/pip install -q -e ".[$extras]"
else
    .venv/bin/pip install -q -e .
fi
