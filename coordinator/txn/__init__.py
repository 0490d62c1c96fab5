"""The transaction coordinator on ``__transaction_state`` (KIP-98, KIP-360) and producer ids;
one shard of that topic's runtime."""
