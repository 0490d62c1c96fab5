"""What Apache Kafka serves, for the tests that compare josefk with it."""

# Apache Kafka 3.9's validVersions for every API josefk implements (name: (key, lo, hi)), written
# down from the 3.9 message schemas (clients/src/main/resources/common/message/*.json at 3.9).
# Kafka 4.0 dropped the oldest of them (KIP-896); josefk keeps serving them, as 3.9 does. KIP-848's
# APIs and versions are Kafka 4.x's: ConsumerGroupHeartbeat/Describe 0-1, OffsetCommit/Fetch v10.
KAFKA_3_9_RANGES = {
    "ApiVersions": (18, 0, 4), "Metadata": (3, 0, 12), "Produce": (0, 0, 11), "Fetch": (1, 0, 17),
    "ListOffsets": (2, 0, 9), "CreateTopics": (19, 0, 7), "DeleteTopics": (20, 0, 6),
    "CreatePartitions": (37, 0, 3), "InitProducerId": (22, 0, 5), "DescribeConfigs": (32, 0, 4),
    "DescribeCluster": (60, 0, 1), "DescribeTopicPartitions": (75, 0, 0),
    "GetTelemetrySubscriptions": (71, 0, 0), "PushTelemetry": (72, 0, 0),
    # 3.9 served v0 as ListClientMetricsResources; 4.1 renamed it and added v1 (KIP-1142)
    "ListConfigResources": (74, 0, 1),
    "FindCoordinator": (10, 0, 6), "JoinGroup": (11, 0, 9), "SyncGroup": (14, 0, 5),
    "Heartbeat": (12, 0, 4), "LeaveGroup": (13, 0, 5), "OffsetCommit": (8, 0, 10),
    "OffsetFetch": (9, 0, 10), "ConsumerGroupHeartbeat": (68, 0, 1),
    "ConsumerGroupDescribe": (69, 0, 1), "DescribeGroups": (15, 0, 5), "ListGroups": (16, 0, 5),
    "DeleteGroups": (42, 0, 2), "OffsetDelete": (47, 0, 0),
    "LeaderAndIsr": (4, 0, 7), "StopReplica": (5, 0, 4), "UpdateMetadata": (6, 0, 8),
    "ControlledShutdown": (7, 0, 3), "OffsetForLeaderEpoch": (23, 0, 4), "ElectLeaders": (43, 0, 2),
    "AlterPartition": (56, 0, 3), "AddPartitionsToTxn": (24, 0, 5), "AddOffsetsToTxn": (25, 0, 4),
    "EndTxn": (26, 0, 4), "WriteTxnMarkers": (27, 0, 1), "TxnOffsetCommit": (28, 0, 4),
    "DescribeProducers": (61, 0, 0), "DescribeTransactions": (65, 0, 0),
    "ListTransactions": (66, 0, 1),
    "AlterConfigs": (33, 0, 2), "IncrementalAlterConfigs": (44, 0, 1),
    "DeleteRecords": (21, 0, 2), "DescribeLogDirs": (35, 0, 4),
    "SaslHandshake": (17, 0, 1),
    "SaslAuthenticate": (36, 0, 2),
    "DescribeUserScramCredentials": (50, 0, 0),
    "AlterUserScramCredentials": (51, 0, 0),
    "DescribeAcls": (29, 0, 3),
    "CreateAcls": (30, 0, 3),
    "DeleteAcls": (31, 0, 3),
    "DescribeClientQuotas": (48, 0, 1),
    "AlterClientQuotas": (49, 0, 1),
}

# Share groups (KIP-932) as Apache Kafka 4.2 serves them: the versions josefk serves beside 3.9's
# (name: (key, lo, hi)).
KAFKA_4_2_SHARE_RANGES = {
    "ShareGroupHeartbeat": (76, 1, 1), "ShareGroupDescribe": (77, 1, 1),
    "ShareFetch": (78, 1, 2), "ShareAcknowledge": (79, 1, 2),
    "InitializeShareGroupState": (83, 0, 0), "ReadShareGroupState": (84, 0, 0),
    "WriteShareGroupState": (85, 0, 1), "DeleteShareGroupState": (86, 0, 0),
    "ReadShareGroupStateSummary": (87, 0, 1), "DescribeShareGroupOffsets": (90, 0, 1),
    "AlterShareGroupOffsets": (91, 0, 0), "DeleteShareGroupOffsets": (92, 0, 0),
}
