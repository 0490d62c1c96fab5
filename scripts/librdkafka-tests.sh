#!/usr/bin/env bash
# Run librdkafka's own test suite (its tests/test-runner) against josefk. By hand only: it needs
# a librdkafka tree built outside this repository (Debian: libssl-dev zlib1g-dev libzstd-dev
# liblz4-dev, and rapidjson-dev for the tests that parse JSON), e.g.
#
#   git clone -b v2.15.0 https://github.com/confluentinc/librdkafka /work/rdkafka-build
#   (cd /work/rdkafka-build && ./configure && make -j2 libs && make -C tests build)
#   scripts/librdkafka-tests.sh [--cluster] [--tests "0011 0092"] /work/rdkafka-build
#
# Starts a fresh broker (or, with --cluster, ZooKeeper and 3 brokers) set up as librdkafka's CI
# sets up Apache Kafka with trivup: num.partitions=4, auto-created topics, the ACL authorizer
# with allow.everyone.if.no.acl.found, replication factor 3 for new and internal topics on the
# cluster, share-group locks of 1 s allowed (group.share.min.record.lock.duration.ms), Kafka's
# defaults otherwise (3 s initial rebalance delay, min.insync.replicas=1). Then
# runs each selected test in a test-runner of its own, runs each failed test a second time,
# prints a pass/fail table and stops everything it started. Per-test logs and reports stay in
# the work directory (--workdir, default /tmp/josefk-librdkafka).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

# The core selection: every test that runs against a real broker of Kafka 3.9 (the last
# ZooKeeper-era version) with PLAINTEXT and nothing else around it. Left out: local and
# mock-cluster tests, known issues, sockem tests, the "noautocreate" scenario, share groups
# (below: --share), SSL/SASL/OIDC/ACL tests (0097 0115 0119 0126 0135 0142), mock-only tests without
# the local flag (0139 0150), a Java transactional producer (0098) and broker racks (0101).
# 0103 creates its topics with replication factor 3, so it runs on the cluster only.
CORE="0001_multiobj 0002_unkpart 0003_msgmaxsize 0005_order 0007_autotopic 0008_reqacks
0011_produce_batch 0012_produce_consume 0013_null_msgs 0014_reconsume_191 0015_offsets_seek
0016_client_swname 0017_compression 0018_cgrp_term 0019_list_groups 0020_destroy_hang
0021_rkt_destroy 0022_consume_batch 0026_consume_pause 0029_assign_offset 0030_offset_commit
0031_get_offsets 0033_regex_subscribe 0034_offset_reset 0035_api_version 0036_partial_fetch
0038_performance 0039_event_dr 0040_io_event 0041_fetch_max_bytes 0042_many_topics
0044_partition_cnt 0045_subscribe_update 0045_resubscribe_with_regex 0045_subscribe_many_updates
0048_partitioner 0050_subscribe_adds 0051_assign_adds 0052_msg_timestamps 0053_stats
0054_offset_time 0055_producer_latency 0056_balanced_group_mt 0057_invalid_topic 0059_bsearch
0060_op_prio 0061_consumer_lag 0063_clusterid 0064_interceptors 0065_yield 0067_empty_topic
0069_consumer_add_parts 0070_null_empty 0073_headers 0077_compaction 0081_admin
0082_fetch_max_bytes 0083_cb_event 0084_destroy_flags 0085_headers 0086_purge_remote
0089_max_poll_interval 0090_idempotence 0091_max_poll_interval_timeout 0092_mixed_msgver
0093_holb_consumer 0099_commit_metadata 0102_static_group_rebalance 0103_transactions
0109_auto_create_topics 0110_batch_size 0112_assign_unknown_part 0113_cooperative_rebalance
0114_sticky_partitioning 0118_commit_rebalance 0122_buffer_cleaning_after_rebalance
0123_connections_max_idle 0125_immediate_flush 0127_fetch_queue_backoff 0129_fetch_aborted_msgs
0130_store_offsets 0132_strategy_ordering 0137_barrier_batch_consume 0140_commit_metadata"

# Share groups (KIP-932, Kafka 4.2): the share-consumer tests that run against a real broker,
# selected with --share (or by number with --tests), run as against Kafka 4.2.0.
SHARE="0170_share_consumer_subscription 0171_share_consumer_consume
0172_share_consumer_acknowledge 0173_share_consumer_commit_async 0174_share_consumer_concurrency
0175_share_consumer_groups 0176_share_consumer_commit_sync 0177_share_consumer_transactions
0178_share_consumer_close 0179_share_consumer_destroy 0180_share_consumer_config
0181_share_consumer_topic_delete 0184_share_consumer_topic_recreate
0185_share_consumer_max_poll_interval"

usage() {
    echo "usage: $0 [--cluster] [--share] [--tests \"NNNN|NNNN_name ...\"] [--port N] [--workdir DIR]" \
         "[--per-test-timeout SECONDS] LIBRDKAFKA_DIR" >&2
    exit 2
}
cluster=0 tests=all port=29192 work=/tmp/josefk-librdkafka per_test_timeout=1200 rdk=
while [ $# -gt 0 ]; do
    case "$1" in
        --cluster) cluster=1 ;;
        --share) tests=$SHARE ;;
        --tests) tests=$2; shift ;;
        --port) port=$2; shift ;;
        --workdir) work=$2; shift ;;
        --per-test-timeout) per_test_timeout=$2; shift ;;
        -*) usage ;;
        *) rdk=$(cd "$1" && pwd) ;;
    esac
    shift
done
[ -n "$rdk" ] && [ -x "$rdk/tests/test-runner" ] || {
    echo "$0: no built test runner in ${rdk:-?}/tests (run make -C tests build there)" >&2; usage; }
[ -x .venv/bin/python ] || scripts/setup.sh
[ $cluster = 1 ] || CORE=${CORE/0103_transactions/}
[ "$tests" != all ] || tests=$CORE
tests=$(for t in $tests; do
    names=$(for c in $CORE $SHARE; do case $c in "$t"*) echo "$c" ;; esac; done)
    echo "${names:-$t}"
done)
if [ $cluster = 1 ]; then brokers=3; mode=cluster; else brokers=1; mode=broker; fi
work=$work/$mode
bootstrap=$(seq -s, -f "127.0.0.1:%g" "$port" $((port + brokers - 1)))

rm -rf "$work" && mkdir -p "$work/logs" "$work/reports" "$work/kafka/bin"
server=
stop() {
    if [ -n "$server" ] && kill -0 "$server" 2>/dev/null; then
        kill -TERM "$server"
        for _ in $(seq 120); do kill -0 "$server" 2>/dev/null || break; sleep 0.5; done
        kill -0 "$server" 2>/dev/null && kill -KILL "$server"
    fi
    server=
}
trap stop EXIT
trap 'exit 130' INT TERM

kafka_ci=(--override num.partitions=4 --override auto.create.topics.enable=true
    --override authorizer.class.name=kafka.security.authorizer.AclAuthorizer
    --override allow.everyone.if.no.acl.found=true
    --override group.share.min.record.lock.duration.ms=1000)
if [ $cluster = 1 ]; then
    .venv/bin/python -m josefk cluster --brokers 3 --dir "$work/cluster" --port "$port" \
        --zookeeper-port $((port + 100)) "${kafka_ci[@]}" --override min.insync.replicas=1 \
        >"$work/server.log" 2>&1 &
else
    .venv/bin/python -m josefk broker --listeners "PLAINTEXT://127.0.0.1:$port" \
        --log-dirs "$work/data" "${kafka_ci[@]}" --override default.replication.factor=1 \
        --override offsets.topic.replication.factor=1 \
        --override transaction.state.log.replication.factor=1 \
        --override transaction.state.log.min.isr=1 \
        --override share.coordinator.state.topic.replication.factor=1 \
        --override share.coordinator.state.topic.min.isr=1 >"$work/server.log" 2>&1 &
fi
server=$!
up=0
.venv/bin/python - "$bootstrap" "$brokers" <<'EOF' && up=1
import sys, time
from confluent_kafka.admin import AdminClient
admin = AdminClient({"bootstrap.servers": sys.argv[1], "log_level": 0})
deadline = time.monotonic() + 90
while time.monotonic() < deadline:
    try:
        md = admin.list_topics(timeout=2)
        if len(md.brokers) == int(sys.argv[2]) and md.controller_id >= 0:
            sys.exit(0)
    except Exception:
        pass
    time.sleep(0.5)
sys.exit(1)
EOF
[ $up = 1 ] || { echo "josefk did not start: see $work/server.log" >&2; exit 1; }

# Tests that shell out to Kafka's kafka-topics.sh and kafka-acls.sh get josefk's own tools.
bin=$work/kafka/bin
{ echo '#!/bin/sh'; echo "exec '$repo/.venv/bin/josefk' acls \"\$@\""; } >"$bin/kafka-acls.sh"
{ echo '#!/bin/sh'; echo "josefk='$repo/.venv/bin/josefk'"; cat <<'EOF'; } >"$bin/kafka-topics.sh"
actions='--create --delete --list --describe'
for a; do case " $actions " in *" $a "*) action=${a#--} ;; esac; done
for a; do shift; case " $actions " in *" $a "*) ;; *) set -- "$@" "$a" ;; esac; done
exec "$josefk" topics "$action" "$@"
EOF
chmod +x "$work"/kafka/bin/*.sh
printf 'bootstrap.servers=%s\nbroker.address.family=v4\ntest.timeout.multiplier=2\n' \
    "$bootstrap" >"$work/test.conf"

# One test-runner process per test number: a test that times out kills its whole runner.
run_one() {  # number attempt
    local version=3.9.0
    case " $(echo $SHARE) " in *" $1"_*) version=4.2.0 ;; esac
    ( cd "$rdk/tests" && RDKAFKA_TEST_CONF="$work/test.conf" TEST_KAFKA_VERSION=$version \
        KAFKA_PATH="$work/kafka" BROKERS="$bootstrap" TESTS="$1" \
        TEST_REPORT="$work/reports/$1.$2.json" LD_LIBRARY_PATH=../src:../src-cpp \
        timeout -s KILL "$per_test_timeout" ./test-runner -L -K -E -p1 \
        >"$work/logs/$1.$2.log" 2>&1 ) 2>/dev/null || true
}
state() {  # test-name attempt: its state in that attempt's report (FAILED if the runner died)
    local s
    s=$(grep -o "\"$1\": {\"name\": \"$1\", \"state\": \"[A-Z]*\"" \
        "$work/reports/${1:0:4}.$2.json" 2>/dev/null | cut -d'"' -f10)
    echo "${s:-FAILED}"
}
v=$(awk '/define RD_KAFKA_VERSION /{print $3}' "$rdk/src/rdkafka.h")
echo "librdkafka $((v >> 24 & 255)).$((v >> 16 & 255)).$((v >> 8 & 255)) against josefk $mode" \
     "at $bootstrap; logs in $work"
for n in $(for t in $tests; do echo "${t:0:4}"; done | uniq); do
    run_one "$n" 1
    for t in $tests; do
        [ "${t:0:4}" = "$n" ] || continue
        echo "$t $(state "$t" 1)"
        [ "$(state "$t" 1)" != FAILED ] || [ -e "$work/logs/$n.2.log" ] || run_one "$n" 2
    done
done
stop

printf '\n%-42s %-8s %-8s\n' test "run 1" "run 2"
for t in $tests; do
    first=$(state "$t" 1) second=
    [ "$first" != FAILED ] || second=$(state "$t" 2)
    printf '%-42s %-8s %-8s\n' "$t" "$first" "$second"
    case $first/$second in
        PASSED/) echo passed ;; SKIPPED/) echo skipped ;;
        FAILED/PASSED) echo flaky ;; *) echo failed ;;
    esac >>"$work/verdicts"
done
echo; sort "$work/verdicts" | uniq -c | awk '{printf "%s %s  ", $2, $1} END {print ""}'
! grep -q failed "$work/verdicts"
