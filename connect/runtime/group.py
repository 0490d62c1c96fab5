"""A distributed worker's membership in ``group.id`` with protocol type ``connect`` (Kafka
Connect's WorkerGroupMember and WorkerCoordinator): JoinGroup offering the sub-protocols
``connect.protocol`` allows (``sessioned`` v2, ``compatible`` v1, ``default`` v0, preferred
first), with this worker's URL, config offset and previous assignment; SyncGroup carrying the
leader's assignments; heartbeats on a thread; the coordinator followed when it moves (the
tools' GroupMember). The leader's part, computing the assignments, is the herder's
(``assign``)."""
from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Callable

from josefk.connect.runtime.assignor import Assignment
from josefk.connect.runtime.seams import ConnectorTaskId
from josefk.tools.group_member import GroupMember
from josefk.connect.runtime.fencing import cluster_client
from josefk.wire.apis import SYNC_GROUP
from josefk.wire.apis.connect_protocol import (ASSIGNMENT, CONNECTOR_TASK, SUB_PROTOCOLS,
                                               WORKER_METADATA)

PROTOCOL_VERSIONS = {name: version for name, version in SUB_PROTOCOLS.values()}
_PREFERENCE = ["sessioned", "compatible", "eager"]


@dataclass
class WorkerState:
    """A member's JoinGroup metadata (Kafka's ExtendedWorkerState)."""
    url: str
    config_offset: int
    allocation: Assignment | None


def encode_assignment(a: Assignment, version: int) -> bytes:
    CA = ASSIGNMENT.Struct.ConnectorAssignment

    def entries(connectors, tasks):
        by: dict[str, list[int]] = {}
        for c in connectors:
            by.setdefault(c, []).append(CONNECTOR_TASK)
        for t in tasks:
            by.setdefault(t.connector, []).append(t.task)
        return [CA(connector=c, tasks=ts) for c, ts in by.items()]

    fields = dict(error=a.error, leader=a.leader, leader_url=a.leader_url,
                  config_offset=a.config_offset,
                  assignment=entries(a.connectors, a.tasks))
    if version >= 1:
        fields.update(revoked=entries(a.revoked_connectors, a.revoked_tasks),
                      scheduled_delay=a.delay)
    return ASSIGNMENT.to_bytes(version, **fields)


def decode_assignment(data: bytes) -> Assignment:
    s = ASSIGNMENT.from_bytes(data)

    def split(entries):
        connectors, tasks = [], []
        for e in entries or ():
            for t in e.tasks:
                if t == CONNECTOR_TASK:
                    connectors.append(e.connector)
                else:
                    tasks.append(ConnectorTaskId(e.connector, t))
        return connectors, tasks

    connectors, tasks = split(s.assignment)
    revoked_c, revoked_t = split(s.revoked)
    return Assignment(connectors, tasks, revoked_c, revoked_t, s.scheduled_delay, s.error,
                      s.leader, s.leader_url, s.config_offset)


def encode_metadata(state: WorkerState, version: int) -> bytes:
    if version == 0:
        return WORKER_METADATA.to_bytes(0, url=state.url, config_offset=state.config_offset)
    allocation = None
    a = state.allocation
    if a is not None and (a.connectors or a.tasks or a.leader):
        allocation = encode_assignment(a, 1)  # Kafka embeds it with the v1 header
    return WORKER_METADATA.to_bytes(version, url=state.url, config_offset=state.config_offset,
                                    allocation=allocation)


def decode_metadata(data: bytes) -> WorkerState:
    s = WORKER_METADATA.from_bytes(data)
    allocation = getattr(s, "allocation", None)
    return WorkerState(s.url, s.config_offset,
                       decode_assignment(allocation) if allocation else None)


def _union(a: list, b: list) -> list:
    return a + [x for x in b if x not in a]


# The leader's part: (sub-protocol, leader's member id, {member id: WorkerState}) ->
# {member id: Assignment}.
Assign = Callable[[str, str, dict[str, WorkerState]], dict[str, Assignment]]


class WorkerGroupMember(GroupMember):
    protocol_type = "connect"

    def __init__(self, config, assign: Assign):
        self.worker_config = config
        self.protocol_name = SUB_PROTOCOLS[config["connect.protocol"]][0]
        self.assign = assign
        self.state = WorkerState(config.rest_url, -1, None)
        self._given_up: Assignment | None = None  # what a lost membership gave up
        self._rejoin_at: float | None = None  # when the leader's scheduled delay is over
        cc = cluster_client(config, config.get("client.id") or f"connect-{config['group.id']}")
        super().__init__(cc, config["group.id"], [],
                         session_timeout_ms=config["session.timeout.ms"],
                         rebalance_timeout_ms=config["rebalance.timeout.ms"],
                         heartbeat_interval_ms=config["heartbeat.interval.ms"])

    @property
    def version(self) -> int:
        """The Connect protocol version of the current generation's sub-protocol."""
        return PROTOCOL_VERSIONS.get(self.protocol, 0)

    def _protocols(self) -> list[tuple[str, bytes]]:
        offered = _PREFERENCE[_PREFERENCE.index(self.worker_config["connect.protocol"]):]
        return [(name, encode_metadata(self.state, version))
                for name, version in (SUB_PROTOCOLS[p] for p in offered)]

    def _reset(self):
        """The member is out of the group (its id unknown, or it left): as Kafka's, it gives
        up what it ran; it joins with no allocation, and the next assignment revokes it all."""
        super()._reset()
        if self.state.allocation is not None:
            self._given_up = self.state.allocation
            self.state.allocation = None

    def _decode(self, assignment: bytes) -> Assignment:
        """This round's assignment, its ``revoked`` also holding what a lost membership gave
        up; ``running`` becomes everything the worker runs after it (what the next join
        reports as its allocation)."""
        new = decode_assignment(assignment)
        before = self.state.allocation or Assignment()
        gone = [self._given_up or Assignment()]
        if self.version == 0:  # eager: everything is given up before each round
            gone.append(before)
            before = Assignment()
        self._given_up = None
        for g in gone:
            new.revoked_connectors = _union(g.connectors, new.revoked_connectors)
            new.revoked_tasks = _union(g.tasks, new.revoked_tasks)
        running = Assignment(
            [c for c in before.connectors if c not in new.revoked_connectors] + new.connectors,
            [t for t in before.tasks if t not in new.revoked_tasks] + new.tasks,
            error=new.error, leader=new.leader, leader_url=new.leader_url,
            config_offset=new.config_offset)
        self.state.allocation = running
        if self.version and (new.revoked_connectors or new.revoked_tasks):
            self.rejoin.set()  # what it gave up is assigned in the next round
        self._rejoin_at = time.monotonic() + new.delay / 1000 if new.delay else None
        return new

    def needs_join(self) -> bool:
        """A rebalance is due: asked by the coordinator or by this worker, or the delay the
        leader scheduled (lost connectors and tasks held for their worker) is over."""
        at = self._rejoin_at
        return super().needs_join() or (at is not None and time.monotonic() >= at)

    def wait_rejoin(self, seconds: float) -> None:
        at = self._rejoin_at
        if at is not None:
            seconds = max(0.0, min(seconds, at - time.monotonic()))
        super().wait_rejoin(seconds)

    @property
    def running(self) -> Assignment:
        return self.state.allocation or Assignment()

    def _assign(self, members) -> list:
        states = {m.member_id: decode_metadata(m.metadata) for m in members}
        assignments = self.assign(self.protocol, self.member_id, states)
        url = states[self.member_id].url
        R = SYNC_GROUP.Request
        return [R.SyncGroupRequestAssignment(member_id=m, assignment=encode_assignment(
                    replace(a, leader=self.member_id, leader_url=url), self.version))
                for m, a in assignments.items()]

    def close(self):
        try:
            super().close()
        finally:
            self.cc.close()
