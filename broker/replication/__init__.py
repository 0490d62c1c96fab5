"""Replication: the partitions this broker hosts as leader or follower (appends with acks and
idempotence, reads, the high watermark, the ISR, delayed produce and fetch), the replica
fetchers that copy leaders' logs, and per-partition producer state.

Uses ``storage`` for the logs and ``wire`` for batches; must not import handlers, the server,
the process wiring, the security room or ZooKeeper. What it needs from cluster control
(metadata errors, the local store's partition preparation) it takes from
``broker.control.metadata`` alone."""
