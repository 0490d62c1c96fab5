#!/usr/bin/env bash
# Install everything the tests need (pip packages, SeaweedFS's weed among them for tiered
# storage's and the object-storage sink's object store; Debian's kcat, a JVM for the Spark tests,
# ZooKeeper for cluster mode, chromium and its driver for the web console, iptables for the fault
# harness's network partitions) and run the whole suite. --quick runs the quick tier instead
# (testkit/quick.py: the unit tests and one scenario per area).
set -euo pipefail
cd "$(dirname "$0")/.."
quick=()
if [ "${1:-}" = "--quick" ]; then
    quick=(-p testkit.quick)
    shift
fi
deps=(kcat=kcat java=openjdk-17-jre-headless chromium=chromium chromedriver=chromium-driver
      iptables=iptables pg_ctlcluster=postgresql)
# zk/local_server.py runs ZooKeeper from Debian's jars, or from an upstream tarball at $ZOOKEEPER_HOME.
[ -n "${ZOOKEEPER_HOME:-}" ] || deps+=(/usr/share/java/zookeeper.jar=zookeeper)
scripts/debian-deps.sh "${deps[@]}"
scripts/setup.sh test,spark,http,connect,tiered,objectstore
exec .venv/bin/python -m pytest -q "${quick[@]}" "$@"
