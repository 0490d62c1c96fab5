"""A member of a classic consumer group for the data tools (what the Java consumer's
``subscribe`` does): JoinGroup with protocol type ``consumer`` and the ``range`` assignor, the
leader's range assignment sent in SyncGroup, heartbeats on a thread, a rejoin when the
coordinator asks for one, commits under the member's generation and LeaveGroup on close.

Other group protocols (the schema registry's ``sr`` election, Connect's workers) subclass it and
replace the protocol: ``protocol_type``, ``protocol_name``, ``_metadata`` (or ``_protocols``
for several, in preference order), ``_assign`` and ``_decode``. A member follows its coordinator
when it moves (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, a dropped connection)."""
from __future__ import annotations

import logging
import threading
import time

from josefk.tools.client import Client, KafkaError
from josefk.tools.groups_cli import commit_offsets, committed_offsets, decode_assignment
from josefk.wire import errors
from josefk.wire.apis import HEARTBEAT, JOIN_GROUP, LEAVE_GROUP, SYNC_GROUP
from josefk.wire.apis.consumer_protocol import ASSIGNMENT, SUBSCRIPTION

log = logging.getLogger("josefk.tools.group_member")

PROTOCOL_TYPE, ASSIGNOR = "consumer", "range"
SUBSCRIPTION_VERSION = ASSIGNMENT_VERSION = 0
# Errors that end the member's generation: it has to join again.
REJOIN = {errors.REBALANCE_IN_PROGRESS, errors.ILLEGAL_GENERATION, errors.UNKNOWN_MEMBER_ID}
# Errors of a coordinator still loading the group: retry the join after a pause.
RETRY = {errors.COORDINATOR_LOAD_IN_PROGRESS}
# The coordinator moved or went away: find it again, connect to it and join there.
MOVED = {errors.NOT_COORDINATOR, errors.COORDINATOR_NOT_AVAILABLE}
MAX_JOIN_ATTEMPTS = 100


def range_assign(subscriptions: dict, partitions: dict) -> dict:
    """Kafka's RangeAssignor. ``subscriptions``: {member id: topics}; ``partitions``: {topic:
    sorted partitions}. Per topic, its subscribers in member id order each get a contiguous range,
    the first ``count % members`` of them one partition more. Returns {member: {topic: [p]}}."""
    out: dict = {m: {} for m in subscriptions}
    for topic, parts in sorted(partitions.items()):
        members = sorted(m for m, topics in subscriptions.items() if topic in topics)
        if not members:
            continue
        each, extra = divmod(len(parts), len(members))
        start = 0
        for i, m in enumerate(members):
            n = each + (i < extra)
            if n:
                out[m][topic] = parts[start:start + n]
            start += n
    return out


class GroupMember:
    """One member of ``group`` subscribed to ``topics``, on its own connection to the group's
    coordinator (shared by the heartbeat thread under a lock). ``join()`` when ``needs_join()``
    says so; it returns the member's partitions."""

    protocol_type, protocol_name = PROTOCOL_TYPE, ASSIGNOR

    def __init__(self, cc, group: str, topics: list[str], session_timeout_ms: int = 45000,
                 rebalance_timeout_ms: int = 300000, heartbeat_interval_ms: int = 3000):
        self.cc, self.group, self.topics = cc, group, sorted(topics)
        self.session_timeout_ms = session_timeout_ms
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.member_id, self.generation = "", -1
        self.assignment: list[tuple[str, int]] = []
        self.protocol = self.protocol_name  # the one the coordinator chose
        self.conn: Client | None = None
        self._find_coordinator()
        self.lock = threading.Lock()
        self.rejoin = threading.Event()
        self.rejoin.set()
        self.closed = threading.Event()
        self.heartbeats = threading.Thread(target=self._heartbeat_loop,
                                           args=(heartbeat_interval_ms / 1000,), daemon=True)
        self.heartbeats.start()

    def needs_join(self) -> bool:
        return self.rejoin.is_set()

    def wait_rejoin(self, seconds: float) -> None:
        self.rejoin.wait(seconds)

    def _reset(self):
        self.member_id, self.generation = "", -1

    def _find_coordinator(self):
        """Connect to the group's coordinator (again: it may have moved)."""
        if self.conn is not None:
            self.conn.close()
            self.conn = None
        host, port = self.cc.brokers[self.cc.coordinator_id(self.group)]
        # A JoinGroup waits for the whole rebalance: the socket must wait as long.
        self.conn = Client(f"{host}:{port}", self.cc.client_id,
                           timeout=self.rebalance_timeout_ms / 1000 + 10, props=self.cc.props)

    def _protocols(self) -> list[tuple[str, bytes]]:
        """The (name, metadata) of each protocol the member offers, the preferred first."""
        return [(self.protocol_name, self._metadata())]

    def _metadata(self) -> bytes:
        return SUBSCRIPTION.to_bytes(SUBSCRIPTION_VERSION, topics=self.topics)

    def _decode(self, assignment: bytes):
        return sorted(decode_assignment(assignment))

    def join(self):
        """JoinGroup then SyncGroup until a generation is complete; the new assignment."""
        R = JOIN_GROUP.Request
        protocols = [R.JoinGroupRequestProtocol(name=n, metadata=m) for n, m in self._protocols()]
        with self.lock:
            for _ in range(MAX_JOIN_ATTEMPTS):
                self.rejoin.clear()
                try:
                    assignment = self._join_once(protocols)
                except (OSError, KafkaError) as e:
                    if isinstance(e, KafkaError) and e.code not in MOVED:
                        raise
                    time.sleep(0.1)
                    try:
                        self._find_coordinator()
                    except (OSError, KafkaError):  # not elected yet: the next attempt looks
                        pass
                    continue
                if assignment is not None:
                    return assignment
        raise KafkaError(errors.REBALANCE_IN_PROGRESS,
                         f"group {self.group}: no stable generation after "
                         f"{MAX_JOIN_ATTEMPTS} joins")

    def _join_once(self, protocols):
        """One JoinGroup and its SyncGroup: the assignment, or None to join again."""
        if self.conn is None:
            self._find_coordinator()
        resp = self.conn.request(
            JOIN_GROUP, group_id=self.group, session_timeout_ms=self.session_timeout_ms,
            rebalance_timeout_ms=self.rebalance_timeout_ms, member_id=self.member_id,
            protocol_type=self.protocol_type, protocols=protocols)
        code = resp.error_code
        if code == errors.MEMBER_ID_REQUIRED:  # KIP-394: join again with this id
            self.member_id = resp.member_id
            return None
        if code in MOVED:
            raise KafkaError(code, f"JoinGroup {self.group}: {errors.name(code)}")
        if code in REJOIN or code in RETRY:
            if code == errors.UNKNOWN_MEMBER_ID:
                self._reset()
            time.sleep(0.1)
            return None
        if code:
            raise KafkaError(code, f"JoinGroup {self.group}: {errors.name(code)}")
        self.member_id, self.generation = resp.member_id, resp.generation_id
        self.protocol = resp.protocol_name
        assignments = self._assign(resp.members) if resp.leader == self.member_id else []
        sync = self.conn.request(
            SYNC_GROUP, group_id=self.group, generation_id=self.generation,
            member_id=self.member_id, protocol_type=self.protocol_type,
            protocol_name=resp.protocol_name, assignments=assignments)
        if sync.error_code in MOVED:
            raise KafkaError(sync.error_code, f"SyncGroup {self.group}: "
                                              f"{errors.name(sync.error_code)}")
        if sync.error_code in REJOIN:
            if sync.error_code == errors.UNKNOWN_MEMBER_ID:
                self._reset()
            return None
        if sync.error_code:
            raise KafkaError(sync.error_code,
                             f"SyncGroup {self.group}: {errors.name(sync.error_code)}")
        self.assignment = self._decode(sync.assignment)
        return self.assignment

    def _assign(self, members) -> list:
        """The leader's part (SyncGroup's assignments): a range assignment of every member's
        subscribed topics."""
        subscriptions = {m.member_id: set(SUBSCRIPTION.from_bytes(m.metadata).topics)
                         for m in members}
        partitions = {}
        for topic in set().union(*subscriptions.values()):
            try:
                self.cc.refresh([topic])
            except KafkaError:  # a topic that does not exist (yet) gets nobody
                continue
            partitions[topic] = self.cc.partitions(topic)
        TP = ASSIGNMENT.Struct.TopicPartition
        R = SYNC_GROUP.Request
        return [R.SyncGroupRequestAssignment(member_id=m, assignment=ASSIGNMENT.to_bytes(
                    ASSIGNMENT_VERSION, assigned_partitions=[
                        TP(topic=t, partitions=ps) for t, ps in topics.items()]))
                for m, topics in range_assign(subscriptions, partitions).items()]

    def committed(self) -> dict:
        """{(topic, partition): offset} the group has committed for this member's partitions."""
        with self.lock:
            offsets = committed_offsets(self.conn, self.group)
        mine = set(self.assignment)
        return {tp: off for tp, off in offsets.items() if tp in mine}

    def commit(self, offsets: dict) -> bool:
        """Commit {(topic, partition): offset} under this member's generation. False (and a
        rejoin due) when the generation is over, as the Java consumer's failed auto-commit."""
        if not offsets:
            return True
        with self.lock:
            try:
                commit_offsets(self.conn, self.group, offsets, self.generation, self.member_id)
            except KafkaError as e:
                if e.code not in REJOIN:
                    raise
                self.rejoin.set()
                return False
        return True

    def _heartbeat_loop(self, interval: float):
        while not self.closed.wait(interval):
            # Skipped while a join or commit holds the connection: a member in a rebalance
            # needs no heartbeat, and a commit is over long before the session is.
            if not self.lock.acquire(blocking=False):
                continue
            try:
                self._heartbeat()
            finally:
                self.lock.release()

    def _heartbeat(self):
        """One heartbeat, under the lock. As Kafka's, they go on while a rejoin is due but not
        yet sent (the coordinator keeps a member that heartbeats through a rebalance it has
        not joined yet); whatever breaks one ends in a rejoin, never in a dead thread and a
        member expelled without noticing."""
        if self.closed.is_set() or not self.member_id or self.generation < 0:
            return
        try:
            if self.conn is None:  # lost with its coordinator: the next join finds it
                raise ConnectionError("no coordinator")
            code = self.conn.request(HEARTBEAT, group_id=self.group,
                                     generation_id=self.generation,
                                     member_id=self.member_id).error_code
        except (KafkaError, OSError):
            code = errors.COORDINATOR_NOT_AVAILABLE  # the next join reports what broke
        except Exception as e:  # noqa: BLE001 - see above
            log.error("group %s: heartbeat failed: %r", self.group, e)
            code = errors.UNKNOWN_SERVER_ERROR
        if code == errors.UNKNOWN_MEMBER_ID:
            self._reset()
        if code:
            self.rejoin.set()  # under the lock: a join in progress cannot miss it

    def leave(self, reason: str) -> None:
        """LeaveGroup (the others get this member's partitions at once, not after the session
        timeout); the member joins again as a new one."""
        with self.lock:
            if self.member_id and self.conn is not None:
                R = LEAVE_GROUP.Request
                self.conn.request(LEAVE_GROUP, group_id=self.group, member_id=self.member_id,
                                  members=[R.MemberIdentity(member_id=self.member_id,
                                                            reason=reason)])
            self._reset()
            self.rejoin.set()

    def close(self):
        """Leave the group and close the connection."""
        self.closed.set()
        try:
            self.leave("the consumer is being closed")
        finally:
            with self.lock:
                if self.conn is not None:
                    self.conn.close()
        self.heartbeats.join(timeout=1)
