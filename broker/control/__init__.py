"""Cluster control: the metadata interface (``metadata.MetadataStore``) and its two stores (the
local single-broker one and the ZooKeeper one), the controller, leader elections, replica
placement, this broker's membership of a ZooKeeper cluster and its producer-id blocks.

Decisions (placement, elections) are plain functions over cluster state; ZooKeeper I/O goes
through ``josefk.zk``. Must not import handlers, the server, the process wiring or replication:
the controller talks to brokers, itself included, only through inter-broker requests."""
