"""Producer id blocks: from a file on a single broker, claimed in a real ZooKeeper's
/latest_producer_id_block by the brokers of a cluster (never the same id twice)."""
import asyncio
import threading

import pytest

from josefk.coordinator.txn.producer_ids import (BLOCK_SIZE, FileBlocks, ProducerIdManager,
                                             ProducerIdsUnavailable)
from testkit.zookeeper import zookeeper  # noqa: F401 - the session's one ZooKeeper
from josefk.zk import znodes as zn


def test_file_blocks_survive_a_restart(tmp_path):
    m = ProducerIdManager(FileBlocks(tmp_path / "block"))
    assert [m.new_id() for _ in range(3)] == [0, 1, 2]
    m2 = ProducerIdManager(FileBlocks(tmp_path / "block"))  # restarted: a fresh block
    assert m2.new_id() == BLOCK_SIZE
    assert m2.init() == (BLOCK_SIZE + 1, 0)
    assert m2.init(BLOCK_SIZE + 1, 0) == (BLOCK_SIZE + 1, 1)  # KIP-360 bump


def test_ids_wait_for_a_block():
    class NoBlockYet:
        def reserve(self):
            raise ProducerIdsUnavailable()

    m = ProducerIdManager(NoBlockYet())
    with pytest.raises(ProducerIdsUnavailable):
        m.new_id()


def _kazoo(zk):
    from kazoo.client import KazooClient

    k = KazooClient(hosts=zk.connect_string, timeout=10.0)
    k.start(timeout=15)
    return k


@pytest.mark.slow
def test_concurrent_brokers_claim_disjoint_blocks(zookeeper):
    from josefk.zk.producer_ids import claim_block

    clients = [_kazoo(zookeeper) for _ in range(3)]
    claimed = {i: [] for i in range(3)}
    try:
        def claim(i):
            for _ in range(20):
                claimed[i].append(claim_block(clients[i], i + 1, 100))

        threads = [threading.Thread(target=claim, args=(i,)) for i in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        blocks = sorted(b for bs in claimed.values() for b in bs)
        assert blocks == [(n * 100, n * 100 + 100) for n in range(60)]  # no overlap, no gap
        last = zn.decode_producer_id_block(clients[0].get(zn.LATEST_PRODUCER_ID_BLOCK)[0])
        assert (last.first, last.last) == (5900, 5999) and last.broker_id in (1, 2, 3)
    finally:
        for k in clients:
            k.stop()
            k.close()


@pytest.mark.slow
def test_zk_blocks_claim_ahead_and_answer_unavailable_meanwhile(zookeeper):
    from josefk.broker.control.producer_id_blocks import ZkBlocks
    from josefk.zk.client import ZkClient

    async def main():
        zk = ZkClient(zookeeper.connect_string + "/zkblocks", 10000)
        await zk.start()
        try:
            blocks = ZkBlocks(zk, 7)
            m = ProducerIdManager(blocks)
            with pytest.raises(ProducerIdsUnavailable):  # nothing claimed yet: claiming now
                m.new_id()
            for _ in range(100):
                if blocks.ready is not None:
                    break
                await asyncio.sleep(0.05)
            first = m.new_id()
            for _ in range(100):  # the next block is claimed ahead of need
                if blocks.ready is not None:
                    break
                await asyncio.sleep(0.05)
            assert blocks.ready == (first + BLOCK_SIZE, first + 2 * BLOCK_SIZE)
            m.next_id = m.block_end  # use the block up
            assert m.new_id() == first + BLOCK_SIZE
        finally:
            await zk.stop()

    asyncio.run(main())
