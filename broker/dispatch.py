"""The API dispatch table: api key -> handler(broker, ctx, request)."""
from __future__ import annotations

from broker.handlers import (api_versions, cluster, configs, fetch, groups, list_offsets,
                             metadata, offsets, produce, producer, replication, telemetry, topics)
from wire import apis

HANDLERS = {
    apis.API_VERSIONS.key: api_versions.handle_api_versions,
    apis.METADATA.key: metadata.handle_metadata,
    apis.PRODUCE.key: produce.handle_produce,
    apis.FETCH.key: fetch.handle_fetch,
    apis.LIST_OFFSETS.key: list_offsets.handle_list_offsets,
    apis.CREATE_TOPICS.key: topics.handle_create_topics,
    apis.DELETE_TOPICS.key: topics.handle_delete_topics,
    apis.CREATE_PARTITIONS.key: topics.handle_create_partitions,
    apis.INIT_PRODUCER_ID.key: producer.handle_init_producer_id,
    apis.DESCRIBE_CONFIGS.key: configs.handle_describe_configs,
    apis.DESCRIBE_CLUSTER.key: cluster.handle_describe_cluster,
    apis.DESCRIBE_TOPIC_PARTITIONS.key: cluster.handle_describe_topic_partitions,
    apis.GET_TELEMETRY_SUBSCRIPTIONS.key: telemetry.handle_get_telemetry_subscriptions,
    apis.PUSH_TELEMETRY.key: telemetry.handle_push_telemetry,
    apis.FIND_COORDINATOR.key: groups.handle_find_coordinator,
    apis.JOIN_GROUP.key: groups.handle_join_group,
    apis.SYNC_GROUP.key: groups.handle_sync_group,
    apis.HEARTBEAT.key: groups.handle_heartbeat,
    apis.LEAVE_GROUP.key: groups.handle_leave_group,
    apis.DESCRIBE_GROUPS.key: groups.handle_describe_groups,
    apis.LIST_GROUPS.key: groups.handle_list_groups,
    apis.DELETE_GROUPS.key: groups.handle_delete_groups,
    apis.OFFSET_COMMIT.key: offsets.handle_offset_commit,
    apis.OFFSET_FETCH.key: offsets.handle_offset_fetch,
    apis.OFFSET_DELETE.key: offsets.handle_offset_delete,
    apis.LEADER_AND_ISR.key: replication.handle_leader_and_isr,
    apis.STOP_REPLICA.key: replication.handle_stop_replica,
    apis.UPDATE_METADATA.key: replication.handle_update_metadata,
    apis.CONTROLLED_SHUTDOWN.key: replication.handle_controlled_shutdown,
    apis.OFFSET_FOR_LEADER_EPOCH.key: replication.handle_offset_for_leader_epoch,
    apis.ELECT_LEADERS.key: replication.handle_elect_leaders,
    apis.ALTER_PARTITION.key: replication.handle_alter_partition,
}
