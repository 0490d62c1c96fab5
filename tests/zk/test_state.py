"""Partition state writes against a real ZooKeeper: what the controller believes it wrote is
what ZooKeeper holds, also when the answer to a write was lost."""
from __future__ import annotations

import pytest

from testkit.zookeeper import zookeeper  # noqa: F401 - the session's one ZooKeeper
from josefk.zk import state as zs
from josefk.zk import znodes as zn
from josefk.zk.znodes import CONTROLLER_EPOCH


@pytest.fixture
def kz(zookeeper):
    from kazoo.client import KazooClient
    from testkit.zookeeper import new_chroot

    k = KazooClient(hosts=new_chroot(zookeeper, "states"), timeout=10.0)
    k.start(timeout=15)
    k.create(CONTROLLER_EPOCH, b"1", makepath=True)
    yield k
    k.stop()
    k.close()


def test_a_write_whose_answer_was_lost_is_recognised_when_made_again(kz):
    """A conditional write that ZooKeeper applied but whose answer the controller lost (the
    connection dropped: ZooKeeper killed) leaves the controller with the old version; made
    again, it fails on the version. As Kafka's checkLeaderAndIsrZkData, the state then read
    back equals the one meant: it counts as written, with the znode's version, and the
    controller's view meets ZooKeeper's again (before, it never did: every later write of the
    partition failed and the leader's ISR drifted from ZooKeeper's)."""
    epoch_version = kz.exists(CONTROLLER_EPOCH).version
    tp = ("t", 0)
    first = zs.leader_isr(2, 5, [2, 3], 1)
    (created,) = zs.write_partition_states(kz, epoch_version, {tp: (first, None)}).values()
    shrunk = zs.leader_isr(2, 5, [2], 1)
    kz.set(zn.partition_state_path(*tp), zn.encode_partition_state_obj(shrunk),
           version=created.zk_version)  # applied; the answer lost
    written = zs.write_partition_states(kz, epoch_version, {tp: (shrunk, created)})
    assert written == {tp: zs.leader_isr(2, 5, [2], 1, created.zk_version + 1)}
    other = zs.leader_isr(2, 5, [2, 3], 1)  # not what ZooKeeper holds: a real conflict
    assert zs.write_partition_states(kz, epoch_version, {tp: (other, created)}) == {}
    assert zs.read_states_of(kz, [tp, ("t", 1)]) == written
