"""This broker's membership of a ZooKeeper cluster: registration, the controller role, channels
to other brokers, ISR change requests and controlled shutdown.

A broker whose ZooKeeper session expires stops acting as controller at once (it can no longer
prove it is one), registers again with a new session and stands for election again.
"""
from __future__ import annotations

import asyncio
import logging

from broker.channel import BrokerChannel, ChannelError
from broker.controller import Controller
from wire import errors
from wire.apis import ALTER_PARTITION, CONTROLLED_SHUTDOWN

log = logging.getLogger("josefk.cluster")

ALTER_PARTITION_VERSION = 1
ALTER_PARTITION_TIMEOUT_S = 3
CONTROLLED_SHUTDOWN_VERSION = 3


class ClusterMember:
    def __init__(self, broker):
        self.broker = broker
        self.metadata = broker.metadata
        self.node_id = broker.config.node_id
        self.controller = Controller(broker)
        self.controller_epoch = 0  # the newest controller epoch seen in its requests
        self.leader_endpoints: dict[int, tuple[str, int]] = {}  # from LeaderAndIsr live_leaders
        self._channels: dict[tuple[str, int], BrokerChannel] = {}
        self.isr_changes = IsrChangeSender(self)
        self._lost = False
        broker.zk.on_session(self._on_session)

    async def start(self) -> None:
        await self.metadata.register()
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
                self.broker.inter_broker)
        else:
            ch.retarget(host, port)
        return ch

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
            asyncio.ensure_future(self.controller.resign())
        elif state == "connected" and self._lost:
            self._lost = False
            log.info("new ZooKeeper session: registering again")
            asyncio.ensure_future(self._reregister())

    async def _reregister(self):
        try:
            await self.metadata.register()
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
                    return True
                log.info("controlled shutdown: error %d, %d partitions remaining",
                         resp.error_code, len(resp.remaining_partitions))
            await asyncio.sleep(backoff_s)
        return False

    async def stop(self) -> None:
        self.isr_changes.close()
        await self.controller.stop()
        for ch in self._channels.values():
            ch.close()
        await self.broker.zk.stop()


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
        for key, (part, _isr) in batch.items():
            if key not in answered:
                part.isr_rejected()  # proposed again at the next fetch or ISR check
        if resp is None:
            await asyncio.sleep(0.5)
        if self.pending:
            self._task = asyncio.ensure_future(self._send())

    def close(self):
        if self._task is not None:
            self._task.cancel()
