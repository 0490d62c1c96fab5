"""The operator tools: every ``josefk`` subcommand but the broker and the HTTP services
(``topics``, ``groups``, ``configs``, ``console-producer``, ``dump-log``, ``cluster``, the web
console...), and the small blocking Kafka client they share.

Tools are Kafka clients: they reach a broker over the network, never through its objects. They
import ``josefk.wire`` (the protocol), ``josefk.storage`` (dump-log reads segment files with
storage's readers), ``josefk.broker.security`` (the client side of TLS and SASL) and
``josefk.broker.config`` (properties files); ``josefk cluster`` also starts a local ZooKeeper
(``josefk.zk.local_server``). They must not import the broker's server, handlers, replication
or cluster control."""
