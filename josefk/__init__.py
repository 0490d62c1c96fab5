"""josefk: a Kafka-compatible message broker.

Installed, every part lives under this package: ``josefk.wire`` (the protocol as data),
``josefk.storage`` (segment logs), ``josefk.coordinator`` (groups, offsets, producer ids,
transactions), ``josefk.zk`` (ZooKeeper's znodes), ``josefk.broker`` (the broker process),
``josefk.tools`` (the operator tools) and the services beside it. In the repository each is a
top-level folder (see docs/ARCHITECTURE.md).

This folder holds only the namespace root and the ``josefk`` command (``cli``, a dispatcher that
imports the package of the subcommand it runs); it owns no behaviour of its own, and nothing
below imports it.
"""
