"""The worker: herders (standalone, distributed), connectors and tasks on threads, the internal
topics, group membership, error handling and metrics. A Kafka client of any cluster."""
