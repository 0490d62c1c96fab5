"""The primary, elected as Confluent's registry elects it: every instance joins the group
``schema.registry.group.id`` with protocol type ``sr`` (sub-protocol ``v0``) and its identity
as metadata (``{"version":1,"host","port","scheme","master_eligibility"}``); the group's
leader names, among the eligible members, the one with the smallest URL, and sends every
member the same assignment ``{"version":1,"error":0,"master":<member id>,
"master_identity":{...}}``. Membership is kept by the same classic group protocol client as
the console consumer's (JoinGroup/SyncGroup/Heartbeat on a thread); librdkafka has no custom
group protocols."""
from __future__ import annotations

import json
import logging
import threading

from josefk.tools.client import KafkaError
from josefk.tools.group_member import GroupMember
from josefk.tools.tool_client import ClusterClient
from josefk.wire.apis import SYNC_GROUP

log = logging.getLogger("josefk.registry.election")
DUPLICATE_URLS = 1


def identity_url(identity: dict) -> str:
    return f"{identity['scheme']}://{identity['host']}:{identity['port']}"


class RegistryMember(GroupMember):
    protocol_type, protocol_name = "sr", "v0"

    def __init__(self, cc, group: str, identity: dict, session_timeout_ms: int,
                 heartbeat_interval_ms: int, rebalance_timeout_ms: int):
        self.identity = identity
        super().__init__(cc, group, [], session_timeout_ms=session_timeout_ms,
                         rebalance_timeout_ms=rebalance_timeout_ms,
                         heartbeat_interval_ms=heartbeat_interval_ms)

    def _metadata(self) -> bytes:
        return json.dumps(self.identity).encode()

    def _decode(self, assignment: bytes) -> dict:
        return json.loads(assignment) if assignment else {}

    def _assign(self, members) -> list:
        identities = {}
        for m in members:
            try:
                identities[m.member_id] = json.loads(m.metadata)
            except ValueError:
                continue
        eligible = [(identity_url(i), mid) for mid, i in identities.items()
                    if i.get("master_eligibility", i.get("leader_eligibility", True))]
        leader = min(eligible)[1] if eligible else None
        urls = {identity_url(i) for i in identities.values()}
        assignment = {"version": 1,
                      "error": DUPLICATE_URLS if len(urls) != len(identities) else 0}
        if leader is not None:
            assignment["master"] = leader
            assignment["master_identity"] = identities[leader]
        data = json.dumps(assignment).encode()
        R = SYNC_GROUP.Request
        return [R.SyncGroupRequestAssignment(member_id=m, assignment=data) for m in identities]


class Election:
    """Keeps this instance in the group on a thread; ``on_primary(identity | None)`` is called
    (from that thread) after every rebalance with the primary it named."""

    def __init__(self, bootstrap: str, props: dict, group: str, identity: dict, on_primary,
                 session_timeout_ms: int, heartbeat_interval_ms: int, rebalance_timeout_ms: int):
        self.args = (bootstrap, props, group, identity)
        self.timeouts = (session_timeout_ms, heartbeat_interval_ms, rebalance_timeout_ms)
        self.on_primary = on_primary
        self.stopping = threading.Event()
        self.member: RegistryMember | None = None
        self.thread = threading.Thread(target=self._run, daemon=True, name="election")

    def start(self):
        self.thread.start()

    def _run(self):
        bootstrap, props, group, identity = self.args
        while not self.stopping.is_set():
            try:
                if self.member is None:
                    cc = ClusterClient(bootstrap, "schema-registry", props=props)
                    cc.refresh([])  # the brokers, to reach the group's coordinator
                    self.member = RegistryMember(cc, group, identity, *self.timeouts)
                if self.member.needs_join():
                    self.on_primary(None)
                    assignment = self.member.join()
                    if assignment.get("error"):
                        log.error("the schema registry group has members with the same URL: "
                                  "set host.name or listeners so that each is reachable")
                    self.on_primary(assignment.get("master_identity"))
                self.member.wait_rejoin(0.5)
            except Exception as e:  # noqa: BLE001 - the election thread never gives up
                log.warning("schema registry group %s: %r; joining again", group, e)
                self.on_primary(None)
                self._drop()
                self.stopping.wait(1.0)

    def _drop(self):
        member, self.member = self.member, None
        if member is not None:
            try:
                member.close()
            except (KafkaError, OSError):
                pass
            member.cc.close()

    def stop(self):
        self.stopping.set()
        if self.thread.ident is not None:  # started
            self.thread.join(timeout=5)
        self._drop()
