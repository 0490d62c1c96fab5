"""Tiered storage (KIP-405): a partition's rolled segments copied to an object store, read back
from it below the local log start, and deleted there by the topic's total retention.

``store`` (the `ObjectStore` protocol, a local directory and S3-compatible engines),
``metadata`` (Kafka's ``__remote_log_metadata`` records and their serde, a partition's remote
segments), ``manager`` (the `RemoteLogManager`: copies, remote reads with their cache,
retention). It knows storage's files and the wire's records, never the broker: the broker hands
it the partitions it leads and its metadata topic's client.
"""
