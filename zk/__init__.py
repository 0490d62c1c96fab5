"""ZooKeeper: the client shaped for an asyncio broker, Kafka's znode layout and JSON
(``/brokers/ids``, ``/controller``, ``/brokers/topics/<t>``, ``/config/...``, ``/kafka-acl``...),
the reads and writes of that state, and a local ZooKeeper server for development and tests.

Speaks znodes and plain data (dicts, dataclasses of its own): it must not import the broker,
the coordinators or storage (``josefk.wire``'s uuid helpers are all it uses). The broker's
stores that keep metadata, ACLs and credentials in ZooKeeper live in ``broker/control`` and
``broker/security`` and call down into this package."""
