#!/usr/bin/env bash
# Install the Debian packages whose commands (or files, for an absolute path) are missing
# (idempotent).
# Usage: scripts/debian-deps.sh COMMAND_OR_PATH=PACKAGE ...
#   e.g. kcat=kcat java=openjdk-17-jre-headless /usr/share/java/zookeeper.jar=zookeeper
set -euo pipefail
missing=()
for pair in "$@"; do
    what="${pair%%=*}"
    if [[ "$what" == /* ]]; then
        [ -e "$what" ] || missing+=("${pair#*=}")
    else
        command -v "$what" >/dev/null 2>&1 || missing+=("${pair#*=}")
    fi
done
if [ ${#missing[@]} -gt 0 ]; then
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
