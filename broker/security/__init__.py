"""Security: listeners and their protocol map, TLS contexts and run-time keystore reloads, SASL
exchanges (PLAIN, SCRAM) and credential stores, the ACL authorizer and its stores, and client
quotas, each with a local (JSON in the first log dir) and a ZooKeeper store.

Also the client side of TLS and SASL for the operator tools and the HTTP services (they import
this room and ``broker.config``, nothing else of the broker). Must not import handlers, the
server, the process wiring, replication or cluster control."""
