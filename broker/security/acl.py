"""ACL operation codes and the operations each resource type supports, as authorized-operation
bitfields (KIP-430). What a principal may do is decided by ``broker.authorizer``."""
from __future__ import annotations

NOT_REQUESTED = -2147483648  # INT32_MIN: the client did not ask

# AclOperation codes
READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE = 3, 4, 5, 6, 7, 8
CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE = 9, 10, 11, 12
CREATE_TOKENS, DESCRIBE_TOKENS = 13, 14


def bits(*ops) -> int:
    return sum(1 << op for op in ops)


TOPIC = bits(READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS)
GROUP = bits(READ, DELETE, DESCRIBE)
CLUSTER = bits(CREATE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS,
                IDEMPOTENT_WRITE, CREATE_TOKENS, DESCRIBE_TOKENS)

