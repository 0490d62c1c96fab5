#!/usr/bin/env bash
# Install the Debian packages whose commands are missing (idempotent).
# Usage: scripts/debian-deps.sh COMMAND=PACKAGE ...   e.g. kcat=kcat java=openjdk-17-jre-headless
set -euo pipefail
missing=()
for pair in "$@"; do
    command -v "${pair%%=*}" >/dev/null 2>&1 || missing+=("${pair#*=}")
done
if [ ${#missing[@]} -gt 0 ]; then
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
