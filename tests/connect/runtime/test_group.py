"""A worker's membership in its Connect group: the metadata and assignments as Kafka writes
them, and two workers forming a group on a real josefk broker, the leader assigning with the
incremental cooperative assignor, a member following its coordinator after a dropped
connection."""
import threading
import time
import uuid

import pytest

from josefk.connect.runtime.assignor import Assignment, AssignorState, Load, incremental
from josefk.connect.runtime.group import (WorkerGroupMember, WorkerState, decode_assignment,
                                          decode_metadata, encode_assignment, encode_metadata)
from josefk.connect.runtime.seams import ConnectorTaskId
from josefk.connect.runtime.worker_config import WorkerConfig
from josefk.tools.client import Client
from josefk.wire.apis import LEAVE_GROUP

T = ConnectorTaskId


def test_assignment_round_trip_groups_by_connector_with_the_connector_as_minus_one():
    a = Assignment(["c1"], [T("c1", 0), T("c2", 1)], ["c3"], [T("c3", 0)], 250, 0, "m-1",
                   "http://w0:8083/", 9)
    data = encode_assignment(a, 1)
    assert decode_assignment(data) == a
    assert data[:2] == b"\x00\x01"
    v0 = decode_assignment(encode_assignment(a, 0))
    assert (v0.connectors, v0.tasks, v0.revoked_tasks, v0.delay) == (
        ["c1"], [T("c1", 0), T("c2", 1)], [], 0)


def test_metadata_embeds_the_previous_assignment_from_version_1():
    state = WorkerState("http://w1:8083/", 12, Assignment(["c"], [T("c", 0)], leader="m"))
    assert decode_metadata(encode_metadata(state, 2)) == WorkerState(
        "http://w1:8083/", 12, Assignment(["c"], [T("c", 0)], leader="m"))
    assert decode_metadata(encode_metadata(state, 0)) == WorkerState("http://w1:8083/", 12,
                                                                     None)
    fresh = WorkerState("http://w1:8083/", -1, None)
    assert encode_metadata(fresh, 1).endswith(b"\xff\xff\xff\xff")


class Leader:
    """The herder's part of a round: the incremental assignor over a fixed configuration."""

    def __init__(self, config: Load):
        self.config, self.state, self.generation = config, AssignorState(), 0

    def __call__(self, protocol, leader, states):
        assert protocol == "sessioned"
        members = {m: Load(list(s.allocation.connectors), list(s.allocation.tasks))
                   if s.allocation else Load() for m, s in states.items()}
        out, self.state = incremental(self.state, self.config, members,
                                      int(time.time() * 1000), 0, self.generation,
                                      self.generation + 1)
        self.generation += 1
        return out


def worker(bootstrap, group, port):
    config = WorkerConfig({"bootstrap.servers": bootstrap, "group.id": group,
                           "config.storage.topic": "c", "offset.storage.topic": "o",
                           "status.storage.topic": "s", "session.timeout.ms": "6000",
                           "heartbeat.interval.ms": "500", "rebalance.timeout.ms": "10000"},
                          distributed=True)
    config.advertise([f"http://127.0.0.1:{port}"])
    return config


@pytest.fixture
def group():
    return f"connect-cluster-{uuid.uuid4().hex[:8]}"


def join_all(members):
    results, threads = {}, []
    for m in members:
        t = threading.Thread(target=lambda m=m: results.__setitem__(m, m.join()))
        t.start()
        threads.append(t)
    for t in threads:
        t.join(30)
    return [results[m] for m in members]


def settle(members, done, seconds=30.0):
    """Each member joins whenever it must, on a thread of its own (as the herder's loop
    does), until ``done()``; False if that takes longer than ``seconds``."""
    stop = threading.Event()

    def run(m):
        while not stop.is_set():
            if m.needs_join():
                m.join()
            else:
                m.wait_rejoin(0.1)

    threads = [threading.Thread(target=run, args=(m,), daemon=True) for m in members]
    for t in threads:
        t.start()
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline:
            if done() and not any(m.needs_join() for m in members):
                return True
            time.sleep(0.1)
        return False
    finally:
        stop.set()
        for t in threads:
            t.join(15)


def test_two_workers_share_a_connector_s_tasks(josefk_broker, group):
    config = Load(["c"], [T("c", i) for i in range(4)])
    leader = Leader(config)
    a = WorkerGroupMember(worker(josefk_broker.bootstrap_servers, group, 8001), leader)
    b = None
    try:
        (first,) = join_all([a])
        assert first.connectors == ["c"] and len(first.tasks) == 4
        assert first.leader == a.member_id
        b = WorkerGroupMember(worker(josefk_broker.bootstrap_servers, group, 8002), leader)
        assert settle([a, b], lambda: len(a.running.tasks) == len(b.running.tasks) == 2)
        assert sorted(a.running.tasks + b.running.tasks) == config.tasks
        assert a.running.leader == b.running.leader
        assert a.protocol == "sessioned" and a.version == 2
    finally:
        a.close()
        if b is not None:
            b.close()


def test_a_member_finds_its_coordinator_again_after_a_dropped_connection(josefk_broker, group):
    leader = Leader(Load(["c"], [T("c", 0)]))
    a = WorkerGroupMember(worker(josefk_broker.bootstrap_servers, group, 8003), leader)
    try:
        join_all([a])
        a.conn.sock.close()
        a.rejoin.set()
        again = a.join()
        assert again.error == 0 and a.running.tasks == [T("c", 0)]
    finally:
        a.close()


def test_a_member_that_leaves_joins_again_as_a_new_one_giving_up_its_work(josefk_broker, group):
    leader = Leader(Load(["c"], [T("c", 0)]))
    a = WorkerGroupMember(worker(josefk_broker.bootstrap_servers, group, 8004), leader)
    try:
        join_all([a])
        first_id = a.member_id
        a.leave("out of sync")
        assert a.member_id == "" and a.needs_join()
        again = a.join()
        assert a.member_id != first_id
        assert again.revoked_tasks == [T("c", 0)]  # what it ran counts as given up
        # The leader held the task for its lost member (no delay configured): the next
        # round, which the revocation asks for, assigns it anew.
        assert settle([a], lambda: a.running.tasks == [T("c", 0)])
    finally:
        a.close()


def test_a_member_removed_from_the_group_notices_it_and_joins_again(josefk_broker, group):
    """Expelled by the coordinator (here: removed through LeaveGroup by an admin), the member
    learns it from its next heartbeat, well within the session timeout, and its next join
    is a new member's, giving up what it ran."""
    leader = Leader(Load(["c"], [T("c", 0)]))
    a = WorkerGroupMember(worker(josefk_broker.bootstrap_servers, group, 8005), leader)
    admin = None
    try:
        join_all([a])
        first_id = a.member_id
        host, port = a.cc.brokers[a.cc.coordinator_id(group)]
        admin = Client(f"{host}:{port}", "admin")
        R = LEAVE_GROUP.Request
        admin.request(LEAVE_GROUP, group_id=group, member_id=first_id,
                      members=[R.MemberIdentity(member_id=first_id, reason="removed")])
        a.wait_rejoin(a.session_timeout_ms / 1000)
        assert a.needs_join() and a.member_id == ""
        again = a.join()
        assert a.member_id != first_id and again.revoked_tasks == [T("c", 0)]
    finally:
        if admin is not None:
            admin.close()
        a.close()


def test_a_member_due_to_rejoin_but_busy_keeps_its_place_in_the_group(josefk_broker, group):
    """A rejoin is due but its thread is busy past the session timeout: the heartbeats go on
    (as Kafka's), so the member is not expelled and joins under its own id."""
    leader = Leader(Load(["c"], [T("c", 0), T("c", 1)]))
    a = WorkerGroupMember(worker(josefk_broker.bootstrap_servers, group, 8006), leader)
    b = WorkerGroupMember(worker(josefk_broker.bootstrap_servers, group, 8007), leader)
    try:
        assert settle([a, b], lambda: len(a.running.tasks) == len(b.running.tasks) == 1)
        ids = (a.member_id, b.member_id)
        b.rejoin.set()
        time.sleep(b.session_timeout_ms / 1000 + 1.5)
        assert settle([a, b], lambda: True)
        assert (a.member_id, b.member_id) == ids
        assert len(a.running.tasks) == len(b.running.tasks) == 1
    finally:
        a.close()
        b.close()
