"""MirrorMaker 2 on josefk's Connect, in Apache Kafka's names and formats
(``org.apache.kafka.connect.mirror``): replication policies (``policy``), the offset-sync,
checkpoint and heartbeat records (``records``), the offset-sync writer's decisions and the
translation of group offsets (``offset_syncs``), the settings and clients the connectors share
(``config``), and the three connectors: ``source`` (MirrorSourceConnector), ``checkpoint``
(MirrorCheckpointConnector) and ``heartbeat`` (MirrorHeartbeatConnector). It imports
josefk.connect and nothing of the broker."""
