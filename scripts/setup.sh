#!/usr/bin/env bash
# Create .venv and install josefk into it (idempotent). Pass extras, e.g. "test" or "test,bench".
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-}"
# wire/_recscan.c (the native record walk) is compiled at install when a C compiler is there;
# without one josefk walks records in plain Python, slower: the project installs gcc for speed.
scripts/debian-deps.sh cc=gcc
if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
if [ -n "$extras" ]; then
    .venv/bin/pip install -q -e ".[$extras]"
else
    .venv/bin/pip install -q -e .
fi
