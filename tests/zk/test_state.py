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


def test_many_states_written_in_multis_a_refused_one_fails_alone(kz):
    """States go many to a multi; a stale version in one multi rolls it back, and then only that
    partition's write fails: the others of its multi are written one by one."""
    epoch_version = kz.exists(CONTROLLER_EPOCH).version
    n = zs.STATES_PER_MULTI * 2 + 7
    first = {("big", p): (zs.leader_isr(p % 3, 0, [p % 3, 9], 1), None) for p in range(n)}
    created = zs.write_partition_states(kz, epoch_version, first)
    assert set(created) == set(first)
    assert zs.read_states_of(kz, list(first)) == created
    stale = ("big", 5)
    kz.set(zn.partition_state_path(*stale), zn.encode_partition_state_obj(
        zs.leader_isr(1, 3, [1], 1)), version=created[stale].zk_version)  # another writer
    shrink = {tp: (zs.leader_isr(st.leader, 0, [st.leader], 1), st) for tp, st in created.items()}
    written = zs.write_partition_states(kz, epoch_version, shrink)
    assert set(written) == set(shrink) - {stale}
    assert all(w.zk_version == created[tp].zk_version + 1 for tp, w in written.items())
    assert zs.read_states_of(kz, list(written)) == written
    # a moved controller epoch fences every write
    kz.set(CONTROLLER_EPOCH, b"2")
    again = {tp: (zs.leader_isr(st.leader, 1, [st.leader], 1), st) for tp, st in written.items()}
    assert zs.write_partition_states(kz, epoch_version, again) == {}
