"""The API dispatch table: api key -> handler(broker, ctx, request), and the APIs and features a
broker config turns off."""
from __future__ import annotations

from typing import Callable, NamedTuple

from josefk.broker.security import acl
from josefk.broker.security.authorizer import requires_cluster, requires_group
from josefk.broker.handlers import (acls, alter_configs, api_versions, cluster, configs,
                                    consumer_groups, fetch, groups, list_offsets, log_admin,
                                    metadata, offsets, produce, producer, quotas, replication,
                                    sasl, scram, share, telemetry, topics, txn)
from josefk.broker.security.quotas import fetch_quota, produce_quota
from josefk.wire import apis

def for_brokers(handler):
    """Inter-broker APIs need ClusterAction on the cluster."""
    return requires_cluster(acl.CLUSTER_ACTION, handler)


HANDLERS = {
    apis.API_VERSIONS.key: api_versions.handle_api_versions,
    apis.METADATA.key: metadata.handle_metadata,
    apis.PRODUCE.key: produce_quota(produce.handle_produce),
    apis.FETCH.key: fetch_quota(fetch.handle_fetch),
    apis.LIST_OFFSETS.key: list_offsets.handle_list_offsets,
    apis.CREATE_TOPICS.key: topics.handle_create_topics,
    apis.DELETE_TOPICS.key: topics.handle_delete_topics,
    apis.CREATE_PARTITIONS.key: topics.handle_create_partitions,
    apis.INIT_PRODUCER_ID.key: producer.handle_init_producer_id,
    apis.DESCRIBE_CONFIGS.key: configs.handle_describe_configs,
    apis.LIST_CONFIG_RESOURCES.key: configs.handle_list_config_resources,
    apis.DESCRIBE_CLUSTER.key: requires_cluster(acl.DESCRIBE, cluster.handle_describe_cluster),
    apis.DESCRIBE_TOPIC_PARTITIONS.key: cluster.handle_describe_topic_partitions,
    apis.GET_TELEMETRY_SUBSCRIPTIONS.key: telemetry.handle_get_telemetry_subscriptions,
    apis.PUSH_TELEMETRY.key: telemetry.handle_push_telemetry,
    apis.FIND_COORDINATOR.key: groups.handle_find_coordinator,
    apis.JOIN_GROUP.key: requires_group(acl.READ, groups.handle_join_group),
    apis.SYNC_GROUP.key: requires_group(acl.READ, groups.handle_sync_group),
    apis.HEARTBEAT.key: requires_group(acl.READ, groups.handle_heartbeat),
    apis.LEAVE_GROUP.key: requires_group(acl.READ, groups.handle_leave_group),
    apis.DESCRIBE_GROUPS.key: groups.handle_describe_groups,
    apis.LIST_GROUPS.key: groups.handle_list_groups,
    apis.DELETE_GROUPS.key: groups.handle_delete_groups,
    apis.CONSUMER_GROUP_HEARTBEAT.key: requires_group(
        acl.READ, consumer_groups.handle_consumer_group_heartbeat),
    apis.CONSUMER_GROUP_DESCRIBE.key: consumer_groups.handle_consumer_group_describe,
    apis.OFFSET_COMMIT.key: offsets.handle_offset_commit,
    apis.OFFSET_FETCH.key: offsets.handle_offset_fetch,
    apis.OFFSET_DELETE.key: offsets.handle_offset_delete,
    apis.LEADER_AND_ISR.key: for_brokers(replication.handle_leader_and_isr),
    apis.STOP_REPLICA.key: for_brokers(replication.handle_stop_replica),
    apis.UPDATE_METADATA.key: for_brokers(replication.handle_update_metadata),
    apis.CONTROLLED_SHUTDOWN.key: for_brokers(replication.handle_controlled_shutdown),
    apis.OFFSET_FOR_LEADER_EPOCH.key: replication.handle_offset_for_leader_epoch,
    apis.ELECT_LEADERS.key: requires_cluster(acl.ALTER, replication.handle_elect_leaders),
    apis.ALTER_PARTITION.key: for_brokers(replication.handle_alter_partition),
    apis.SASL_HANDSHAKE.key: sasl.handle_sasl_handshake,
    apis.SASL_AUTHENTICATE.key: sasl.handle_sasl_authenticate,
    apis.DESCRIBE_USER_SCRAM_CREDENTIALS.key: requires_cluster(
        acl.DESCRIBE, scram.handle_describe_user_scram_credentials),
    apis.ALTER_USER_SCRAM_CREDENTIALS.key: scram.handle_alter_user_scram_credentials,
    apis.CREATE_ACLS.key: acls.handle_create_acls,
    apis.DESCRIBE_ACLS.key: acls.handle_describe_acls,
    apis.DELETE_ACLS.key: acls.handle_delete_acls,
    apis.DESCRIBE_CLIENT_QUOTAS.key: quotas.handle_describe_client_quotas,
    apis.ALTER_CLIENT_QUOTAS.key: quotas.handle_alter_client_quotas,
    apis.ALTER_CONFIGS.key: alter_configs.handle_alter_configs,
    apis.INCREMENTAL_ALTER_CONFIGS.key: alter_configs.handle_incremental_alter_configs,
    apis.DELETE_RECORDS.key: log_admin.handle_delete_records,
    apis.DESCRIBE_LOG_DIRS.key: log_admin.handle_describe_log_dirs,
    apis.ADD_PARTITIONS_TO_TXN.key: txn.handle_add_partitions_to_txn,
    apis.ADD_OFFSETS_TO_TXN.key: txn.handle_add_offsets_to_txn,
    apis.END_TXN.key: txn.handle_end_txn,
    apis.WRITE_TXN_MARKERS.key: for_brokers(txn.handle_write_txn_markers),
    apis.TXN_OFFSET_COMMIT.key: txn.handle_txn_offset_commit,
    apis.DESCRIBE_PRODUCERS.key: txn.handle_describe_producers,
    apis.DESCRIBE_TRANSACTIONS.key: txn.handle_describe_transactions,
    apis.LIST_TRANSACTIONS.key: txn.handle_list_transactions,
    # share groups (KIP-932)
    apis.SHARE_GROUP_HEARTBEAT.key: requires_group(acl.READ, share.handle_share_group_heartbeat),
    apis.SHARE_GROUP_DESCRIBE.key: share.handle_share_group_describe,
    apis.SHARE_FETCH.key: requires_group(acl.READ, share.handle_share_fetch),
    apis.SHARE_ACKNOWLEDGE.key: requires_group(acl.READ, share.handle_share_acknowledge),
    apis.INITIALIZE_SHARE_GROUP_STATE.key: for_brokers(share.handle_initialize_share_group_state),
    apis.READ_SHARE_GROUP_STATE.key: for_brokers(share.handle_read_share_group_state),
    apis.WRITE_SHARE_GROUP_STATE.key: for_brokers(share.handle_write_share_group_state),
    apis.DELETE_SHARE_GROUP_STATE.key: for_brokers(share.handle_delete_share_group_state),
    apis.READ_SHARE_GROUP_STATE_SUMMARY.key: for_brokers(
        share.handle_read_share_group_state_summary),
    apis.DESCRIBE_SHARE_GROUP_OFFSETS.key: share.handle_describe_share_group_offsets,
    apis.ALTER_SHARE_GROUP_OFFSETS.key: share.handle_alter_share_group_offsets,
    apis.DELETE_SHARE_GROUP_OFFSETS.key: share.handle_delete_share_group_offsets,
}

class Switch(NamedTuple):
    """APIs a broker config turns off: ApiVersions does not advertise them and requests for them
    are answered as for any API the broker does not serve. ``feature``: the feature (KIP-584)
    ApiVersions reports for them, supported at levels 0-1 and finalized at level 1 while on."""
    on: Callable
    api_keys: tuple
    feature: str | None = None


SWITCHES = (
    # KIP-714: served only with a receiver of what clients push, the Prometheus endpoint, as
    # Kafka advertises them only with a ClientTelemetry metrics reporter (else every librdkafka
    # client logs its new telemetry instance id)
    Switch(lambda config: (bool(config.get("josefk.metrics.port")) and
                           config.bool("josefk.client.telemetry.enable")),
           (apis.GET_TELEMETRY_SUBSCRIPTIONS.key, apis.PUSH_TELEMETRY.key)),
    # KIP-848: Kafka 4's group.version level 1 is the consumer group protocol
    Switch(lambda config: "consumer" in config.list("group.coordinator.rebalance.protocols"),
           (apis.CONSUMER_GROUP_HEARTBEAT.key, apis.CONSUMER_GROUP_DESCRIBE.key),
           "group.version"),
    # KIP-932: Kafka 4.2's share.version level 1 is share groups
    Switch(lambda config: (config.bool("group.share.enable") and
                           "share" in config.list("group.coordinator.rebalance.protocols")),
           tuple(api.key for api in apis.SHARE_APIS), "share.version"),
)


def served(config) -> dict:
    """The handlers of the APIs this broker serves with ``config``."""
    off = {key for s in SWITCHES if not s.on(config) for key in s.api_keys}
    return {key: h for key, h in HANDLERS.items() if key not in off}


def features(config) -> tuple[list, list]:
    """ApiVersions' features with ``config``: ([(name, min, max level)] this broker supports,
    [(name, level)] finalized, levels above 0 only, as Kafka reports them)."""
    named = [s for s in SWITCHES if s.feature]
    return ([(s.feature, 0, 1) for s in named],
            [(s.feature, 1) for s in named if s.on(config)])
