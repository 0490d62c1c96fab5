#!/usr/bin/env bash
# Install everything the tests need (pip packages; Debian's kcat, chromium and chromium-driver, and
# ZooKeeper with a Java runtime for cluster mode) and run the whole suite.
set -euo pipefail
cd "$(dirname "$0")/.."
missing=()
command -v kcat >/dev/null 2>&1 || missing+=(kcat)
# The web console's tests drive Debian's headless Chromium through its chromedriver.
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v chromedriver >/dev/null 2>&1 || missing+=(chromium-driver)
command -v java >/dev/null 2>&1 || [ -x "${JAVA_HOME:-/nonexistent}/bin/java" ] || missing+=(default-jre-headless)
# zk/local_server.py runs ZooKeeper from Debian's jars, or from an upstream tarball at $ZOOKEEPER_HOME.
[ -f /usr/share/java/zookeeper.jar ] || [ -n "${ZOOKEEPER_HOME:-}" ] || missing+=(zookeeper)
if [ ${#missing[@]} -gt 0 ]; then
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
scripts/setup.sh test
exec .venv/bin/python -m pytest -q "$@"
