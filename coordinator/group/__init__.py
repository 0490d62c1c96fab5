"""The group coordinator on ``__consumer_offsets``: classic groups, KIP-848 consumer groups,
share groups' membership (KIP-932) and committed offsets; one shard of that topic's runtime.
See group_coordinator.py for its parts."""
