"""The share coordinator on ``__share_group_state`` (KIP-932): the persisted state of every
share-partition; one shard of that topic's runtime."""
