"""This broker's membership of a ZooKeeper cluster: registration, the controller role, channels
to other brokers, ISR change requests and controlled shutdown.

A broker whose ZooKeeper session expires stops acting as controller at once (it can no longer
prove it is one), registers again with a new session and stands for election again.

While ZooKeeper is merely out of reach the session lives on (the server expires it, not the
client), and the broker serves on as Kafka's does: no other broker can be given its partitions
before the session expires. `SessionGuard` tells when that may have happened unseen: once the
session expired, or the process stood still long enough for it to expire (e.g. paused by
SIGSTOP), the broker acts on none of its leaderships (no produce, no group, transaction or
share state) until the session is confirmed, or, for a new session, until the controller has
told it its roles again; once cut off from ZooKeeper for a third of the session timeout, it
stops acting as the leader of each partition whose in-sync followers went silent (they follow
another leader, or cannot reach this one).
"""
from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING

from josefk.broker.channel import BrokerChannel, ChannelError
from josefk.broker.control.controller import Controller
from josefk.broker.control.zk_metadata import ZkMetadataStore
from josefk.wire import errors
from josefk.wire.apis import ALTER_PARTITION, CONTROLLED_SHUTDOWN
from josefk.zk import state as zs

if TYPE_CHECKING:
    from josefk.broker.config import BrokerConfig
    from josefk.broker.security.sasl import InterBrokerSecurity
    from josefk.zk.client import ZkClient

log = logging.getLogger("josefk.cluster")

ALTER_PARTITION_VERSION = 1
ALTER_PARTITION_TIMEOUT_S = 3
CONTROLLED_SHUTDOWN_VERSION = 3
# After a controlled shutdown: how long to wait for the new leaders' metadata, then to keep
# answering producers NOT_LEADER_OR_FOLLOWER with the new leader
HANDOVER_WAIT_MS = 2000
HANDOVER_GRACE_S = 0.3


class SessionGuard:
    """Whether this broker's ZooKeeper session is known to be alive, so that what it believes it
    leads is still true. Distrusted (`trusted` False) once the session expired (kazoo's "lost")
    or the event loop stood still for a third of the session timeout (long enough for the
    session to expire unseen), trusted again when the same session reconnects or a round trip
    confirms it, or, after a new session, when the first LeaderAndIsr for the new registration
    arrives. A lost connection alone (kazoo's "suspended") leaves the session alive and trusted;
    `cut_off` once it has lasted a third of the session timeout: kazoo notices a silent server
    within two thirds of it, so the session may then be near its expiry."""

    CHECK_INTERVAL_S = 0.25

    def __init__(self, zk, node_id: int):
        self.zk = zk
        self.node_id = node_id
        self.stall_limit_s = zk.session_timeout_s / 3
        self.doubt: str | None = None  # why the session is distrusted, None when trusted
        self.disconnected_since: float | None = None  # time.monotonic() the connection was lost
        self.awaiting_epoch: int | None = None  # a new session's broker epoch, until its roles
        self._roles_epoch = -1  # the broker epoch of the last LeaderAndIsr
        self._changes = 0  # bumped at every new doubt, so a stale confirmation lifts nothing
        self._last_tick = time.monotonic()
        self._task = None

    def trusted(self) -> bool:
        """Also False while the loop is only now resuming from a stall it has not yet seen."""
        return self.doubt is None and time.monotonic() - self._last_tick < self.stall_limit_s

    def cut_off(self) -> bool:
        return self.disconnected_since is not None and \
            time.monotonic() - self.disconnected_since > self.stall_limit_s

    def in_doubt(self) -> bool:
        return not self.trusted() or self.cut_off()

    def start(self) -> None:
        self._task = asyncio.ensure_future(self._watch_stalls())

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()

    def distrust(self, why: str) -> None:
        if self.doubt is None:
            log.warning("acting on no leadership (partitions, groups, transactions) until "
                        "ZooKeeper confirms this broker's session: %s", why)
        self.doubt = why
        self._changes += 1

    def _trust(self) -> None:
        if self.doubt is not None:
            log.info("ZooKeeper session confirmed: acting on this broker's leaderships again")
        self.doubt = None
        self.awaiting_epoch = None

    def disconnected(self) -> None:
        if self.disconnected_since is None:
            self.disconnected_since = time.monotonic()

    def session_resumed(self) -> None:
        """The same session reconnected: nothing was decided without this broker."""
        self.disconnected_since = None
        if self.awaiting_epoch is None:
            self._trust()

    def new_session(self, broker_epoch: int) -> None:
        self.disconnected_since = None
        self.awaiting_epoch = broker_epoch
        if self._roles_epoch == broker_epoch:  # the controller was quicker than the register
            self._trust()

    def roles_received(self, broker_epoch: int) -> None:
        """A LeaderAndIsr from the controller for this registration: roles are current."""
        self._roles_epoch = broker_epoch
        if self.awaiting_epoch is not None and broker_epoch == self.awaiting_epoch:
            self._trust()

    async def _watch_stalls(self) -> None:
        while True:
            await asyncio.sleep(self.CHECK_INTERVAL_S)
            now = time.monotonic()
            stood_still = now - self._last_tick
            self._last_tick = now
            if stood_still >= self.stall_limit_s:
                self.distrust(f"the process stood still for {stood_still:.1f} s")
                asyncio.ensure_future(self._confirm(self._changes))

    async def _confirm(self, changes: int) -> None:
        try:
            alive = await self.zk.run(zs.session_owns_registration, self.node_id)
        except Exception:  # noqa: BLE001 - lost or unreachable: the session events say which
            return
        if alive and changes == self._changes and self.awaiting_epoch is None:
            self._trust()


class ClusterMember:
    def __init__(self, config: BrokerConfig, zk: ZkClient, metadata: ZkMetadataStore,
                 inter_broker: InterBrokerSecurity):
        """``inter_broker``: the security of the inter-broker listener (`InterBrokerSecurity`),
        for the channels to other brokers."""
        self.zk = zk
        self.metadata = metadata
        self.inter_broker = inter_broker
        self.node_id = config.node_id
        self.session = SessionGuard(zk, self.node_id)
        self.controller = Controller(config, zk, metadata, inter_broker)
        self.controller_epoch = 0  # the newest controller epoch seen in its requests
        self.leader_endpoints: dict[int, tuple[str, int]] = {}  # from LeaderAndIsr live_leaders
        self._channels: dict[tuple[str, int], BrokerChannel] = {}
        self.isr_changes = IsrChangeSender(self)
        self._lost = False
        zk.on_session(self._on_session)

    async def start(self) -> None:
        await self.metadata.register()
        self.session.start()
        await self.controller.start()

    def channel(self, purpose: str, node_id: int) -> BrokerChannel:
        """A channel to ``node_id`` kept for one purpose, so a long-polling fetch never holds up
        a controller request on the same connection."""
        b = self.metadata.brokers.get(node_id)
        host, port = (b.host, b.port) if b else self.leader_endpoints.get(node_id, (None, None))
        if host is None:
            raise ChannelError(f"no endpoint known for broker {node_id}")
        ch = self._channels.get((purpose, node_id))
        if ch is None:
            ch = self._channels[(purpose, node_id)] = BrokerChannel(
                node_id, host, port, f"broker-{self.node_id}-{purpose}",
                self.inter_broker)
        else:
            ch.retarget(host, port)
        return ch

    def log_dir_failed(self, _log_dir) -> None:
        """Tell the controller, through ZooKeeper as Kafka does, so it moves the leadership of
        the replicas this broker can no longer serve."""
        async def notify():
            try:
                await self.zk.run(zs.notify_log_dir_failure, self.node_id)
            except Exception:  # noqa: BLE001 - without ZooKeeper nobody can act on it anyway
                log.exception("cannot tell the controller that a log dir failed")
        asyncio.ensure_future(notify())

    def controller_channel(self) -> BrokerChannel:
        cid = self.metadata.controller_id
        if cid < 0:
            raise ChannelError("no controller known")
        return self.channel("controller", cid)

    def check_controller_epoch(self, epoch: int) -> int:
        """Requests from a controller older than the newest one seen are refused."""
        if epoch < self.controller_epoch:
            return errors.STALE_CONTROLLER_EPOCH
        self.controller_epoch = epoch
        return errors.NONE

    def _on_session(self, state: str) -> None:
        if state == "lost":
            log.warning("ZooKeeper session expired: resigning any controller role")
            self._lost = True
            self.session.distrust("the ZooKeeper session expired")
            asyncio.ensure_future(self.controller.resign())
        elif state == "suspended":
            self.session.disconnected()
        elif state == "connected" and self._lost:
            self._lost = False
            log.info("new ZooKeeper session: registering again")
            asyncio.ensure_future(self._reregister())
        elif state == "connected":
            self.session.session_resumed()

    async def _reregister(self):
        try:
            self.session.new_session(await self.metadata.register())
            await self.controller.start()
        except Exception:  # noqa: BLE001
            log.exception("re-registration after session expiry failed")

    async def controlled_shutdown(self, retries: int, backoff_s: float) -> bool:
        """Ask the controller to move leadership away (Kafka's ControlledShutdown), retrying
        while partitions remain. Returns True once none remain."""
        Q = CONTROLLED_SHUTDOWN.Request
        for attempt in range(retries):
            try:
                resp = await self.controller_channel().request(
                    CONTROLLED_SHUTDOWN, CONTROLLED_SHUTDOWN_VERSION,
                    Q(broker_id=self.node_id, broker_epoch=self.metadata.broker_epoch),
                    timeout=30)
            except ChannelError as e:
                log.warning("controlled shutdown attempt %d failed: %s", attempt + 1, e)
            else:
                if resp.error_code == errors.NONE and not resp.remaining_partitions:
                    log.info("controlled shutdown succeeded")
                    await self._let_producers_move()
                    return True
                log.info("controlled shutdown: error %d, %d partitions remaining",
                         resp.error_code, len(resp.remaining_partitions))
            await asyncio.sleep(backoff_s)
        return False

    async def _let_producers_move(self) -> None:
        """As in Kafka, leadership moves before the old leader stops serving: stay up until
        this broker's metadata names the new leaders, and a moment more, so that producers get
        NOT_LEADER_OR_FOLLOWER with the new leader (KIP-951) and go there at once, rather than
        find their connection closed and look for the leader themselves."""
        me = self.node_id
        md = self.metadata
        await md.wait_for(lambda: not any(p.leader == me and len(p.replicas) > 1
                                          for t in md.topics.values() for p in t.partitions),
                          HANDOVER_WAIT_MS)
        await asyncio.sleep(HANDOVER_GRACE_S)

    async def stop(self) -> None:
        self.session.stop()
        self.isr_changes.close()
        await self.controller.stop()
        for ch in self._channels.values():
            ch.close()
        await self.zk.stop()


class IsrChangeSender:
    """Leader side of AlterPartition: collects ISR proposals and sends them to the controller,
    one request for all that arrived together."""

    def __init__(self, cluster: ClusterMember):
        self.cluster = cluster
        self.pending: dict[tuple[str, int], tuple] = {}
        self._task = None

    def propose(self, part, new_isr) -> None:
        self.pending[(part.topic, part.index)] = (part, new_isr)
        if self._task is None or self._task.done():
            self._task = asyncio.ensure_future(self._send())

    async def _send(self):
        await asyncio.sleep(0)  # let proposals from the same pass join this request
        batch, self.pending = self.pending, {}
        Q = ALTER_PARTITION.Request
        by_topic: dict[str, list] = {}
        for (topic, index), (part, isr) in batch.items():
            by_topic.setdefault(topic, []).append(Q.TopicData.PartitionData(
                partition_index=index, leader_epoch=part.leader_epoch, new_isr=isr,
                leader_recovery_state=0, partition_epoch=part.partition_epoch))
        req = Q(broker_id=self.cluster.node_id, broker_epoch=self.cluster.metadata.broker_epoch,
                topics=[Q.TopicData(topic_name=t, partitions=ps) for t, ps in by_topic.items()])
        try:
            # A short timeout: a controller that stopped answering is replaced within the
            # ZooKeeper session timeout, and the proposal then goes to the new one.
            resp = await self.cluster.controller_channel().request(
                ALTER_PARTITION, ALTER_PARTITION_VERSION, req, timeout=ALTER_PARTITION_TIMEOUT_S)
        except ChannelError as e:
            log.warning("AlterPartition failed: %s", e)
            resp = None
        answered = set()
        if resp is not None and not resp.error_code:
            for t in resp.topics:
                for p in t.partitions:
                    entry = batch.get((t.topic_name, p.partition_index))
                    if entry is None:
                        continue
                    answered.add((t.topic_name, p.partition_index))
                    part = entry[0]
                    if p.error_code == errors.NONE:
                        part.isr_committed(p.isr, p.leader_epoch, p.partition_epoch)
                    else:
                        log.info("AlterPartition for %s-%d refused: error %d", t.topic_name,
                                 p.partition_index, p.error_code)
                        part.isr_rejected()
        elif resp is not None:
            log.warning("AlterPartition answered error %d", resp.error_code)
        retry = False
        for key, (part, isr) in batch.items():
            if key not in answered and part.pending_isr == isr and key not in self.pending:
                # Unanswered: the controller may have written it. Ask again for the same ISR
                # (as Kafka's AlterPartitionManager does): a controller that has it answers
                # with its state, one whose state moved on sends this broker LeaderAndIsr.
                self.pending[key] = (part, isr)
                retry = True
        if resp is None or retry:
            await asyncio.sleep(0.5)
        if self.pending:
            self._task = asyncio.ensure_future(self._send())

    def close(self):
        if self._task is not None:
            self._task.cancel()
