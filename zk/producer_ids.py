"""Claiming a block of producer ids in ``/latest_producer_id_block``, as Kafka's ZooKeeper-mode
brokers do: read the last block handed out, write the next one with the version read, and start
over if another broker got there first. Blocks (like `zk.state`): run it through ``ZkClient.run``.
"""
from __future__ import annotations

from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from josefk.zk import znodes as zn


def claim_block(k, broker_id: int, size: int) -> tuple[int, int]:
    """Claim the next ``size`` ids for ``broker_id``: (first id, end exclusive)."""
    path = zn.LATEST_PRODUCER_ID_BLOCK
    while True:
        try:
            data, stat = k.get(path)
        except NoNodeError:
            try:
                k.create(path, zn.encode_producer_id_block(broker_id, 0, size - 1),
                         makepath=True)
                return 0, size
            except NodeExistsError:
                continue
        last = zn.decode_producer_id_block(data)
        first = 0 if last is None else last.last + 1
        try:
            k.set(path, zn.encode_producer_id_block(broker_id, first, first + size - 1),
                  version=stat.version)
            return first, first + size
        except BadVersionError:
            continue
