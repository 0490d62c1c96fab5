"""The records of the coordinators' compacted internal topics, declared as data like the APIs in
``wire.apis`` and compiled by the same machinery (``wire.schema.CoordinatorRecord``).

Each module mirrors Kafka's JSON schemas for one topic: a ``CoordinatorRecord`` per record type
(its key and value layouts) and a ``CoordinatorTopic`` that finds the record type of a key.
Adding a record type (KIP-848's ConsumerGroup*, KIP-932's ShareGroup* and the
``__share_group_state`` records) is a declaration here, then code that uses it.
"""
