"""The idempotent producer with each client (compat_tests/clients.py) on each target: every
record acknowledged once, at the next offset of its partition, and read back in produce order."""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.timeout(120)

PARTITIONS = 3
N = 3000


def test_idempotent_producer_exactly_once_in_order(target, new_topic, client):
    topic = new_topic(partitions=PARTITIONS)
    records = [(i % PARTITIONS, f"k{i}".encode(), f"{i}".encode()) for i in range(N)]
    acked = client.produce(target.bootstrap, topic, records, idempotent=True)
    for part in range(PARTITIONS):
        assert [off for pt, off in acked if pt == part] == list(range(N // PARTITIONS))

    got = client.consume(target.bootstrap, topic, PARTITIONS, N)
    for part in range(PARTITIONS):
        want = [(part, j, f"k{i}".encode(), f"{i}".encode())
                for j, i in enumerate(range(part, N, PARTITIONS))]
        assert sorted(r for r in got if r[0] == part) == want, f"partition {part} differs"
