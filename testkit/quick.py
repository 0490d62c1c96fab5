"""The quick tier (``scripts/test.sh --quick``, or ``pytest -p testkit.quick``): the unit tests
and one representative scenario per area of the real-client tests, a few minutes where the whole
suite takes half an hour. Loaded as a pytest plugin, it marks them ``quick`` and deselects the
rest; a scenario named here that is not collected fails the run (renamed, or gone)."""
from __future__ import annotations

import pytest

# Unit tests left out: the packaging test builds and installs wheels on three CPythons, the
# plugin's example run starts pytest with clusters.
SLOW_UNIT_TESTS = ("tests/test_packaging.py::",
                   "tests/testing/test_plugin.py::test_the_examples_and_the_fixtures_promises")

# One scenario per area, on the shared single broker unless the area is the cluster's.
SCENARIOS = (
    "compat_tests/produce_consume/test_confluent.py::test_consumer_from_earliest[single]",
    "compat_tests/produce_consume/test_kafka_python.py::test_keys_across_partitions[single]",
    "compat_tests/produce_consume/test_kcat.py::test_produce_lines_and_consume[single]",
    "compat_tests/protocol/test_protocol.py::test_pipelined_requests_answered_in_order",
    "compat_tests/protocol/test_produce_validation.py::test_garbage_compressed_payloads_are_corrupt[single]",
    "compat_tests/groups/test_confluent.py::"
    "test_three_consumers_split_six_partitions_and_consume_once[single]",
    "compat_tests/transactions/test_confluent.py::test_commit_and_abort_read_committed_and_uncommitted[single]",
    "compat_tests/share_groups/test_confluent.py::test_three_share_consumers_split_one_partition[single]",
    "compat_tests/storage/test_restart.py::test_kill_9_keeps_acknowledged_data",
    "compat_tests/storage/test_retention.py::test_compaction_keeps_latest_value_per_key",
    "compat_tests/storage/test_tiered.py::test_one_broker_reads_every_record_from_the_bucket",
    "compat_tests/security/test_clients.py::test_confluent_produce_consume_group_admin[SASL_SSL-SCRAM-SHA-256]",
    "compat_tests/tools/test_topics_cli.py::test_topics_create_list_describe_delete[kafka-flag]",
    "compat_tests/clusters/test_cluster.py::test_confluent_produce_consume_replicated_through_any_broker[1]",
    "compat_tests/tools/test_cluster_cli.py::test_kill_command_and_restart_after",
    "compat_tests/tools/test_cluster_cli.py::test_a_port_in_use_fails_the_cluster_at_once_with_the_brokers_own_line",
    "compat_tests/services/test_spark.py::test_batch_write_then_read_with_explicit_offsets",
    "compat_tests/services/test_schema_registry.py::test_avro_roundtrip",
    "compat_tests/services/test_rest_proxy.py::test_produce_and_consume_every_format",
    "compat_tests/tools/test_web_console.py::test_console_without_a_registry",
    "compat_tests/connect/test_quickstart.py::test_the_quickstart_runs_unchanged",
    "compat_tests/connect/test_workers.py::test_validate_answers_with_connects_body",
)


def is_quick(nodeid: str) -> bool:
    if nodeid.startswith("tests/"):
        return not nodeid.startswith(SLOW_UNIT_TESTS)
    return nodeid in SCENARIOS


def pytest_configure(config):
    config.addinivalue_line("markers", "quick: the quick tier (testkit/quick.py)")


def pytest_collection_modifyitems(config, items):
    quick = [item for item in items if is_quick(item.nodeid)]
    for item in quick:
        item.add_marker(pytest.mark.quick)
    missing = [s for s in SCENARIOS if s.split("::")[0] in {i.nodeid.split("::")[0]
                                                             for i in items}
               and s not in {i.nodeid for i in quick}]
    if missing:
        raise pytest.UsageError(f"testkit/quick.py names scenarios that are not collected: "
                                f"{', '.join(missing)}")
    config.hook.pytest_deselected(items=[i for i in items if i not in quick])
    items[:] = quick
