"""The controller: a role one broker takes by creating ZooKeeper's ``/controller`` znode.

It watches the live brokers, the topics and the topic deletions in ZooKeeper, decides leaders and
ISRs with the rules of `broker.election`, writes every decision to the partition state znodes
first (fenced by the ``/controller_epoch`` znode's version) and then tells the brokers with
LeaderAndIsr, UpdateMetadata and StopReplica. Brokers ask it to change ISRs (AlterPartition), to
move leadership away before they stop (ControlledShutdown) and to elect leaders (ElectLeaders).
A newly elected controller rebuilds everything it needs from ZooKeeper alone.

All events run one at a time under one lock, on the event loop; ZooKeeper round trips go through
`zk.state` on worker threads.
"""
from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from josefk.broker.control import election
from josefk.broker.channel import BrokerChannel, ChannelError
from josefk.wire import errors
from josefk.wire.apis import LEADER_AND_ISR, STOP_REPLICA, UPDATE_METADATA
from josefk.zk import state as zs
from josefk.zk.client import ZkClosed

if TYPE_CHECKING:
    from josefk.broker.config import BrokerConfig
    from josefk.broker.control.zk_metadata import ZkMetadataStore
    from josefk.broker.security.sasl import InterBrokerSecurity
    from josefk.zk.client import ZkClient

log = logging.getLogger("josefk.controller")

LEADER_AND_ISR_VERSION = 5
UPDATE_METADATA_VERSION = 7
STOP_REPLICA_VERSION = 3
LEADER_DURING_DELETE = -2
SECURITY_PROTOCOL_IDS = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}


class BrokerSender:
    """The controller's ordered request queue to one broker, retried until delivered."""

    def __init__(self, controller_id: int, info, backoff_s: float, security=None):
        self.info = info
        self.channel = BrokerChannel(info.node_id, info.host, info.port,
                                     f"controller-{controller_id}", security)
        self.queue: asyncio.Queue = asyncio.Queue()
        self.backoff_s = backoff_s
        self.task = asyncio.ensure_future(self._run())

    def send(self, api, version, req, on_response=None) -> None:
        """Queue ``req``; ``on_response(resp)`` is called with the broker's answer."""
        self.queue.put_nowait((api, version, req, on_response))

    async def _run(self):
        while True:
            api, version, req, on_response = await self.queue.get()
            while True:
                try:
                    resp = await self.channel.request(api, version, req, timeout=30)
                    if getattr(resp, "error_code", 0):
                        log.warning("%s to broker %d answered error %d", api.name,
                                    self.info.node_id, resp.error_code)
                    elif on_response is not None:
                        on_response(resp)
                    break
                except ChannelError as e:
                    log.debug("%s to broker %d failed (%s); retrying", api.name,
                              self.info.node_id, e)
                    await asyncio.sleep(self.backoff_s)

    def close(self):
        self.task.cancel()
        self.channel.close()


class Controller:
    def __init__(self, config: BrokerConfig, zk: ZkClient, metadata: ZkMetadataStore,
                 inter_broker: InterBrokerSecurity):
        self.zk = zk
        self.metadata = metadata  # this broker's store: its controller id follows the election
        self.inter_broker = inter_broker
        self.node_id = config.node_id
        self.config = config
        self.active = False
        self.stopped = False
        self.epoch = 0
        self.epoch_zk_version = -1
        self.live: dict[int, zs.LiveBroker] = {}
        self.topics: dict[str, zs.Topic] = {}
        self.states: dict[tuple[str, int], zs.PartitionState] = {}
        self.deleting: set[str] = set()
        self.shutting_down: set[int] = set()
        # replicas a live broker cannot serve (their log dir failed), learnt from its answers
        # to LeaderAndIsr, until it registers again
        self.offline_replicas: dict[int, set[tuple[str, int]]] = {}
        self.senders: dict[int, BrokerSender] = {}
        self._lock = asyncio.Lock()
        self._watched_topics: set[str] = set()
        self._watching = False
        self._rebalance_task = None
        self._tasks: set[asyncio.Task] = set()  # what runs on this controller's behalf
        self.backoff_s = 0.2  # between retries of a request to a broker that is away

    # -- election ---------------------------------------------------------------------------------
    async def start(self) -> None:
        await self.zk.watch_data(zs.CONTROLLER, self._on_controller_znode)

    def _on_controller_znode(self, data):
        holder = zs.decode_controller(data)
        if holder is None:
            self._spawn(self._try_elect())
            return
        self.metadata.controller_id = holder
        if holder != self.node_id and self.active:
            asyncio.ensure_future(self.resign())

    async def _try_elect(self):
        if self.stopped:
            return
        try:
            if await self.zk.run(zs.try_create_controller, self.node_id):
                await self._become_controller()
        except ZkClosed:
            return  # this broker is stopping
        except Exception:  # noqa: BLE001 - no controller may be left half taken over
            log.exception("controller election or takeover failed; resigning")
            await self.resign()
            if not self.stopped:
                try:
                    await self.zk.run(zs.resign_controller, self.node_id)
                except Exception:  # noqa: BLE001 - the session is gone: so is /controller
                    log.warning("could not delete /controller after a failed takeover")

    async def resign(self) -> None:
        async with self._lock:
            if not self.active:
                return
            log.info("broker %d is no longer the controller", self.node_id)
            self.active = False
            if self._rebalance_task is not None:
                self._rebalance_task.cancel()
                self._rebalance_task = None
            for s in self.senders.values():
                s.close()
            self.senders.clear()

    async def _become_controller(self):
        async with self._lock:
            if self.stopped:
                return
            self.epoch, self.epoch_zk_version = await self.zk.run(zs.increment_controller_epoch)
            log.info("broker %d is the controller (epoch %d)", self.node_id, self.epoch)
            self.active = True
            self.metadata.controller_id = self.node_id
            self.live = await self.zk.run(zs.read_brokers, self.inter_broker.listener)
            self.topics = await self.zk.run(zs.read_topics)
            self.states = await self.zk.run(zs.read_partition_states, self.topics)
            self.deleting = set()
            self.shutting_down = set()
            self.offline_replicas = {}
            for info in self.live.values():
                self._sender(info)
            # Every broker learns the whole cluster before any LeaderAndIsr from this controller
            # (as Kafka's controller failover does): a broker that leads __transaction_state
            # completes transactions at once, and must know their partitions' topics.
            self._send_update_metadata(list(self.live), self._all_partitions())
            await self._init_new_partitions(list(self.topics))
            # A broker that died while no controller was watching (the old controller itself,
            # or any broker during the handover) is treated as if its death had been seen.
            await self._elect_offline(set(self.live))
            await self._remove_dead_replicas()
            self._send_update_metadata(list(self.live), self._all_partitions())
            by_broker = {}
            for tp, a in self._assignments().items():
                for r in a:
                    by_broker.setdefault(r, []).append(tp)
            for b, tps in by_broker.items():
                if b in self.live:
                    self._send_leader_and_isr(b, tps, full=True)
        if not self._watching:
            self._watching = True
            await self.zk.watch_children(zs.BROKER_IDS, self._event(self._on_brokers))
            await self.zk.watch_children(zs.TOPICS, self._event(self._on_topics))
            await self.zk.watch_children(zs.DELETE_TOPICS, self._event(self._on_delete_topics))
            await self.zk.watch_children(zs.LOG_DIR_EVENT_NOTIFICATION,
                                         self._event(self._on_log_dir_events))
        for t in list(self.topics):
            await self._watch_topic(t)
        interval = self.config.int("leader.imbalance.check.interval.seconds")
        if self.config.bool("auto.leader.rebalance.enable") and interval > 0:
            self._rebalance_task = self._spawn(self._auto_rebalance(interval))

    def _event(self, fn, *bound):
        """A callback that runs ``fn(*bound, *args)`` as a serialized controller event."""
        def fire(*args):
            self._spawn(self._run_event(fn, *bound, *args))
        return fire

    def _spawn(self, coro) -> asyncio.Task:
        """Run ``coro`` as a task of this controller's, cancelled when it stops."""
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _run_event(self, fn, *args):
        async with self._lock:
            if not self.active:
                return
            try:
                await fn(*args)
            except ZkClosed:
                pass  # this broker is stopping
            except Exception:  # noqa: BLE001 - one failed event must not kill the controller
                log.exception("controller event %s failed", fn.__name__)

    # -- helpers ------------------------------------------------------------------------------------
    def _sender(self, info) -> BrokerSender:
        s = self.senders.get(info.node_id)
        if s is not None and (s.info.host, s.info.port, s.info.epoch) != (info.host, info.port,
                                                                          info.epoch):
            s.close()
            s = None
        if s is None:
            s = self.senders[info.node_id] = BrokerSender(self.node_id, info, self.backoff_s,
                                                          self.inter_broker)
        return s

    def _assignments(self) -> dict[tuple[str, int], list[int]]:
        return {(t, p): a for t, ta in self.topics.items() if t not in self.deleting
                for p, a in ta.partitions.items()}

    def _all_partitions(self):
        return [tp for tp in self._assignments() if tp in self.states]

    def _serving(self, tp, brokers) -> set[int]:
        """Those of ``brokers`` that can serve ``tp`` (its log dir on them is not offline)."""
        return {b for b in brokers if tp not in self.offline_replicas.get(b, ())}

    def _unclean(self, topic: str) -> bool:
        ta = self.topics.get(topic)
        value = (ta.configs.get("unclean.leader.election.enable") if ta else None) or \
            self.config.get("unclean.leader.election.enable", "false")
        return str(value).lower() == "true"

    async def _commit(self, changes: dict) -> list:
        """Write new partition states (fenced by our epoch); returns the ones written."""
        if not changes:
            return []
        written = await self.zk.run(zs.write_partition_states, self.epoch_zk_version,
                                    {tp: (st, self.states.get(tp)) for tp, st in changes.items()})
        for tp, st in written.items():
            self.states[tp] = st
        failed = [tp for tp in changes if tp not in written]
        if failed:
            log.warning("%d partition state writes failed (stale versions or controller moved)",
                        len(failed))
            await self._reload_states(failed)
        return list(written)

    async def _reload_states(self, tps) -> None:
        """After failed writes: this controller's view of those partitions may be behind
        ZooKeeper's (another writer, or a write applied whose answer was lost); read them."""
        try:
            self.states.update(await self.zk.run(zs.read_states_of, tps))
        except ZkClosed:
            raise
        except Exception as e:  # noqa: BLE001 - ZooKeeper unreachable: the next write retries
            log.warning("cannot read back %d partition states: %s", len(tps), e)

    def _new_state(self, tp, leader, isr, bump=True) -> zs.PartitionState:
        old = self.states.get(tp)
        epoch = (old.leader_epoch + 1 if bump else old.leader_epoch) if old else 0
        return zs.leader_isr(leader, epoch, list(isr), self.epoch, -1)

    async def _publish(self, tps) -> None:
        """Tell every replica its role and every broker the new metadata."""
        if not tps:
            return
        by_broker: dict[int, list] = {}
        assignments = self._assignments()
        for tp in tps:
            for r in assignments.get(tp, ()):
                by_broker.setdefault(r, []).append(tp)
        for b, bt in by_broker.items():
            self._send_leader_and_isr(b, bt)
        self._send_update_metadata(list(self.live), tps)

    # -- requests to brokers ----------------------------------------------------------------------
    def _states_by_topic(self, tps, make) -> dict[str, list]:
        """``make(topic, partition, state, replicas)`` for each of ``tps`` with a state, by
        topic."""
        by_topic: dict[str, list] = {}
        assignments = self._assignments()
        for t, p in tps:
            st = self.states.get((t, p))
            if st is not None:
                by_topic.setdefault(t, []).append(make(t, p, st, assignments.get((t, p), [])))
        return by_topic

    def _send_leader_and_isr(self, broker_id, tps, full=False, is_new=False):
        info = self.live.get(broker_id)
        if info is None:
            return
        Q = LEADER_AND_ISR.Request
        by_topic = self._states_by_topic(tps, lambda t, p, st, replicas: (
            Q.LeaderAndIsrTopicState.LeaderAndIsrPartitionState(
                partition_index=p, controller_epoch=st.controller_epoch, leader=st.leader,
                leader_epoch=st.leader_epoch, isr=st.isr, partition_epoch=st.zk_version,
                replicas=replicas, adding_replicas=[], removing_replicas=[], is_new=is_new)))
        leaders = {self.states[tp].leader for tp in tps if tp in self.states}
        on_response = self._event(self._on_leader_and_isr_response, broker_id, info.epoch)
        req = Q(controller_id=self.node_id, controller_epoch=self.epoch,
                broker_epoch=info.epoch, type=1 if full else 0,
                topic_states=[Q.LeaderAndIsrTopicState(topic_name=t,
                                                       topic_id=self.topics[t].topic_id,
                                                       partition_states=ps)
                              for t, ps in by_topic.items()],
                live_leaders=[Q.LeaderAndIsrLiveLeader(broker_id=b, host_name=self.live[b].host,
                                                       port=self.live[b].port)
                              for b in sorted(leaders) if b in self.live])
        self._sender(info).send(LEADER_AND_ISR, LEADER_AND_ISR_VERSION, req, on_response)

    def _send_update_metadata(self, broker_ids, tps, deleted=()):
        Q = UPDATE_METADATA.Request
        by_topic = self._states_by_topic(tps, lambda t, p, st, replicas: (
            Q.UpdateMetadataTopicState.UpdateMetadataPartitionState(
                partition_index=p, controller_epoch=st.controller_epoch,
                leader=st.leader, leader_epoch=st.leader_epoch, isr=st.isr,
                zk_version=st.zk_version, replicas=replicas,
                offline_replicas=[r for r in replicas
                                  if r not in self._serving((t, p), self.live)])))
        for t in deleted:
            for ps in by_topic.get(t, ()):
                ps.leader = LEADER_DURING_DELETE
        brokers = [Q.UpdateMetadataBroker(
            id=b.node_id, endpoints=[Q.UpdateMetadataBroker.UpdateMetadataEndpoint(
                port=e.port, host=e.host or "127.0.0.1", listener=e.listener,
                security_protocol=SECURITY_PROTOCOL_IDS[e.security_protocol])
                for e in b.endpoints],
            rack=b.rack) for b in self.live.values()]
        topic_states = [Q.UpdateMetadataTopicState(topic_name=t, topic_id=self.topics[t].topic_id,
                                                   partition_states=ps)
                        for t, ps in by_topic.items()]
        for b in broker_ids:
            info = self.live.get(b)
            if info is None:
                continue
            req = Q(controller_id=self.node_id, controller_epoch=self.epoch,
                    broker_epoch=info.epoch, topic_states=topic_states, live_brokers=brokers)
            self._sender(info).send(UPDATE_METADATA, UPDATE_METADATA_VERSION, req)

    def _send_stop_replica(self, broker_id, tps, delete: bool):
        info = self.live.get(broker_id)
        if info is None:
            return
        Q = STOP_REPLICA.Request
        by_topic: dict[str, list] = {}
        for t, p in tps:
            st = self.states.get((t, p))
            by_topic.setdefault(t, []).append(Q.StopReplicaTopicState.StopReplicaPartitionState(
                partition_index=p, leader_epoch=st.leader_epoch if st else -1,
                delete_partition=delete))
        req = Q(controller_id=self.node_id, controller_epoch=self.epoch, broker_epoch=info.epoch,
                topic_states=[Q.StopReplicaTopicState(topic_name=t, partition_states=ps)
                              for t, ps in by_topic.items()])
        self._sender(info).send(STOP_REPLICA, STOP_REPLICA_VERSION, req)

    # -- partitions -----------------------------------------------------------------------------------
    async def _init_new_partitions(self, topics) -> list:
        """Give every partition of ``topics`` without a state znode its first leader and ISR."""
        changes = {}
        for t in topics:
            ta = self.topics.get(t)
            if ta is None or t in self.deleting:
                continue
            for p, a in ta.partitions.items():
                if (t, p) in self.states:
                    continue
                chosen = election.new_partition_leader(a, self.live)
                if chosen is not None:
                    changes[(t, p)] = zs.leader_isr(chosen[0], 0, chosen[1], self.epoch, -1)
        written = await self._commit(changes)
        if written:
            by_broker: dict[int, list] = {}
            assignments = self._assignments()
            for tp in written:
                for r in assignments[tp]:
                    by_broker.setdefault(r, []).append(tp)
            for b, bt in by_broker.items():
                self._send_leader_and_isr(b, bt, is_new=True)
            self._send_update_metadata(list(self.live), written)
        return written

    async def _elect_offline(self, live) -> list:
        """Elect leaders for partitions whose leader is not alive (or that have none)."""
        changes = {}
        candidates = set(live) - self.shutting_down
        for tp, a in self._assignments().items():
            st = self.states.get(tp)
            if st is None:
                continue
            alive = self._serving(tp, candidates)
            if st.leader in alive:
                continue
            chosen = election.offline_leader(a, st.isr, alive, self._unclean(tp[0]))
            if chosen is None:
                if st.leader != election.NO_LEADER:
                    # Offline: no leader; the ISR keeps its last member so it can come back.
                    changes[tp] = self._new_state(tp, election.NO_LEADER, st.isr)
                continue
            if chosen[0] != st.leader or chosen[1] != st.isr:
                changes[tp] = self._new_state(tp, *chosen)
        written = await self._commit(changes)
        await self._publish(written)
        return written

    async def _remove_dead_replicas(self) -> list:
        """Replicas on brokers that are not alive, or whose log dir failed, leave the ISR of the
        partitions they follow (Kafka's OfflineReplica transition), so acks=all writes wait for
        live replicas only."""
        changes = {}
        assignments = self._assignments()
        for tp, st in self.states.items():
            if tp not in assignments or st.leader == election.NO_LEADER:
                continue
            serving = self._serving(tp, self.live)
            isr = [r for r in st.isr if r in serving]
            if isr != st.isr and isr:
                changes[tp] = self._new_state(tp, st.leader, isr)
        written = await self._commit(changes)
        await self._publish(written)
        return written

    # -- events -----------------------------------------------------------------------------------------
    async def _on_brokers(self, _children):
        fresh = await self.zk.run(zs.read_brokers, self.inter_broker.listener)
        gone = {b for b in self.live if b not in fresh or fresh[b].epoch != self.live[b].epoch}
        new = {b for b in fresh if b not in self.live or b in gone}
        if not gone and not new:
            return
        log.info("controller: brokers gone %s, new %s", sorted(gone), sorted(new))
        self.live = {b: i for b, i in fresh.items() if b not in gone}
        self.shutting_down -= gone
        for b in gone:
            self.offline_replicas.pop(b, None)  # it comes back with its log dirs reloaded
        for b in gone:
            s = self.senders.pop(b, None)
            if s is not None:
                s.close()
        if gone:
            changed = await self._elect_offline(set(self.live))
            changed += await self._remove_dead_replicas()
            if not changed:  # after a controlled shutdown, say: the live brokers changed anyway
                self._send_update_metadata(list(self.live), [])
        self.live = fresh
        for b in new:
            self._sender(fresh[b])
        if new:
            self._send_update_metadata(list(self.live), self._all_partitions())
            for b in new:
                mine = [tp for tp, a in self._assignments().items() if b in a]
                self._send_leader_and_isr(b, mine, full=True)
            await self._init_new_partitions(list(self.topics))
            await self._elect_offline(set(self.live))

    async def _on_log_dir_events(self, children):
        """A broker's log dir failed: it is asked (LeaderAndIsr for every replica it has) which
        replicas it can no longer serve, as Kafka's controller asks; it answers
        KAFKA_STORAGE_ERROR for those (`_on_leader_and_isr_response`)."""
        if not children:
            return
        for b in await self.zk.run(zs.take_log_dir_events, children):
            if b in self.live:
                log.info("controller: a log dir of broker %d failed", b)
                self._send_leader_and_isr(b, [tp for tp, a in self._assignments().items()
                                              if b in a])

    async def _on_leader_and_isr_response(self, broker_id, broker_epoch, resp):
        """Replicas answered KAFKA_STORAGE_ERROR are offline: their leadership moves to other
        in-sync replicas and they leave the ISR."""
        info = self.live.get(broker_id)
        if info is None or info.epoch != broker_epoch:
            return
        names = {t.topic_id: name for name, t in self.topics.items()}
        failed = {(names[t.topic_id], p.partition_index) for t in resp.topics
                  if t.topic_id in names for p in t.partition_errors
                  if p.error_code == errors.KAFKA_STORAGE_ERROR}
        offline = self.offline_replicas.setdefault(broker_id, set())
        if failed <= offline:
            return
        log.warning("controller: %d replicas on broker %d are offline (log dir failure)",
                    len(failed - offline), broker_id)
        offline |= failed
        await self._elect_offline(set(self.live))
        await self._remove_dead_replicas()

    async def _on_topics(self, children):
        new = [t for t in children if t not in self.topics]
        if not new:
            return
        read = await self.zk.run(zs.read_topics, new)
        self.topics.update(read)
        for t in read:
            await self._watch_topic(t)
        await self._init_new_partitions(list(read))

    async def _watch_topic(self, topic):
        if topic in self._watched_topics:
            return
        self._watched_topics.add(topic)

        def changed(data):
            if data is None:
                self._watched_topics.discard(topic)
                return False
            self._spawn(self._run_event(self._on_topic_changed, topic))
            return True
        await self.zk.watch_data(zs.topic_path(topic), changed)

    async def _on_topic_changed(self, topic):
        read = await self.zk.run(zs.read_topics, [topic])
        if topic not in read or topic in self.deleting:
            return
        old = self.topics.get(topic)
        self.topics[topic] = read[topic]
        if old is None or set(read[topic].partitions) != set(old.partitions):
            await self._init_new_partitions([topic])

    async def _on_delete_topics(self, children):
        for t in children:
            if t in self.deleting:
                continue
            ta = self.topics.get(t)
            if ta is None:
                await self.zk.run(zs.delete_topic_znodes, t)
                continue
            log.info("controller: deleting topic %s", t)
            tps = [(t, p) for p in ta.partitions]
            self._send_update_metadata(list(self.live), [tp for tp in tps if tp in self.states],
                                       deleted={t})
            self.deleting.add(t)
            by_broker: dict[int, list] = {}
            for (tt, p) in tps:
                for r in ta.partitions[p]:
                    by_broker.setdefault(r, []).append((tt, p))
            for b, bt in by_broker.items():
                self._send_stop_replica(b, bt, delete=True)
            await self.zk.run(zs.delete_topic_znodes, t)
            del self.topics[t]
            for tp in tps:
                self.states.pop(tp, None)
            self.deleting.discard(t)

    # -- broker requests ------------------------------------------------------------------------------
    async def alter_partition(self, broker_id, broker_epoch, items):
        """``items``: [(topic, partition, leader_epoch, partition_epoch, new_isr)]. Returns
        [(topic, partition, error, LeaderIsr or None)]."""
        async with self._lock:
            if not self.active:
                return None
            info = self.live.get(broker_id)
            if info is None or (broker_epoch >= 0 and broker_epoch != info.epoch):
                return errors.STALE_BROKER_EPOCH
            out, changes, stale, already = [], {}, [], []
            for t, p, leader_epoch, partition_epoch, new_isr in items:
                st = self.states.get((t, p))
                if st is None or t in self.deleting:
                    out.append((t, p, errors.UNKNOWN_TOPIC_OR_PARTITION, None))
                elif st.leader != broker_id:
                    out.append((t, p, errors.NOT_LEADER_OR_FOLLOWER, st))
                elif leader_epoch != st.leader_epoch:
                    out.append((t, p, errors.FENCED_LEADER_EPOCH, st))
                    stale.append((t, p))
                elif sorted(new_isr) == sorted(st.isr):
                    # already so (Kafka's equalsAllowStalePartitionEpoch): the answer to an
                    # earlier request with this ISR was lost, or the ISR was set to it since
                    out.append((t, p, errors.NONE, st))
                    already.append((t, p))
                elif partition_epoch != st.zk_version:
                    out.append((t, p, errors.INVALID_UPDATE_VERSION, st))
                    stale.append((t, p))
                elif any(r not in self._serving((t, p), self.live)
                         for r in new_isr if r != broker_id):
                    out.append((t, p, errors.INELIGIBLE_REPLICA, st))
                else:
                    changes[(t, p)] = zs.leader_isr(st.leader, st.leader_epoch, list(new_isr),
                                                   self.epoch, st.zk_version)
                    out.append((t, p, None, None))
            written = set(await self._commit(changes))
            result = []
            for t, p, err, st in out:
                if err is None:
                    err = errors.NONE if (t, p) in written else errors.INVALID_UPDATE_VERSION
                    st = self.states.get((t, p))
                    if err:
                        stale.append((t, p))
                result.append((t, p, err, st))
            if written or already:
                # a change whose answer was lost may have reached ZooKeeper without its
                # UpdateMetadata: every broker's cache gets the state again
                self._send_update_metadata(list(self.live), [*written, *already])
            if stale:
                # the leader's view is behind ZooKeeper's: give it the current state
                self._send_leader_and_isr(broker_id, stale)
            return result

    async def controlled_shutdown(self, broker_id, broker_epoch):
        """Move leadership off ``broker_id``; returns (error, partitions it still leads)."""
        async with self._lock:
            if not self.active:
                return errors.NOT_CONTROLLER, []
            info = self.live.get(broker_id)
            if info is None:
                return errors.BROKER_NOT_AVAILABLE, []
            if broker_epoch >= 0 and broker_epoch != info.epoch:
                return errors.STALE_BROKER_EPOCH, []
            self.shutting_down.add(broker_id)
            changes, follower_of = {}, []
            live = set(self.live) - self.shutting_down
            for tp, a in self._assignments().items():
                st = self.states.get(tp)
                if st is None or broker_id not in a:
                    continue
                if st.leader == broker_id:
                    chosen = election.controlled_shutdown_leader(a, st.isr, live,
                                                                 self.shutting_down)
                    if chosen is not None:
                        changes[tp] = self._new_state(tp, *chosen)
                elif broker_id in st.isr:
                    follower_of.append(tp)
                    isr = election.without_replica(st.isr, broker_id)
                    if isr != st.isr:
                        changes[tp] = self._new_state(tp, st.leader, isr)
            written = await self._commit(changes)
            await self._publish(written)
            if follower_of:
                self._send_stop_replica(broker_id, follower_of, delete=False)
            assignments = self._assignments()
            remaining = [tp for tp, st in self.states.items()
                         if st.leader == broker_id and len(assignments.get(tp, ())) > 1]
            return errors.NONE, remaining

    async def elect_leaders(self, election_type: int, partitions):
        """ElectLeaders: 0 preferred, 1 unclean. ``partitions`` None means all. Returns
        {(topic, partition): (error, message)}."""
        async with self._lock:
            if not self.active:
                return None
            assignments = self._assignments()
            wanted = list(assignments) if partitions is None else partitions
            live = set(self.live) - self.shutting_down
            results, changes = {}, {}
            for tp in wanted:
                a, st = assignments.get(tp), self.states.get(tp)
                if a is None or st is None:
                    results[tp] = (errors.UNKNOWN_TOPIC_OR_PARTITION,
                                   "The partition does not exist.")
                    continue
                if election_type == 0:
                    if st.leader == a[0]:
                        results[tp] = (errors.ELECTION_NOT_NEEDED, "Leader election not needed")
                        continue
                    chosen = election.preferred_leader(a, st.isr, live)
                    if chosen is None:
                        results[tp] = (errors.PREFERRED_LEADER_NOT_AVAILABLE,
                                       f"Failed to elect leader for partition {tp[0]}-{tp[1]} "
                                       "under strategy PreferredReplicaPartitionLeaderElection")
                        continue
                else:
                    if st.leader in live:
                        results[tp] = (errors.ELECTION_NOT_NEEDED, "Leader election not needed")
                        continue
                    chosen = election.offline_leader(a, st.isr, live, unclean=True)
                    if chosen is None:
                        results[tp] = (errors.ELIGIBLE_LEADERS_NOT_AVAILABLE,
                                       "No live replica can become the leader")
                        continue
                changes[tp] = self._new_state(tp, *chosen)
                results[tp] = (errors.NONE, None)
            written = set(await self._commit(changes))
            for tp in changes:
                if tp not in written:
                    results[tp] = (errors.UNKNOWN_SERVER_ERROR, "partition state write failed")
            await self._publish(list(written))
            return results

    async def _auto_rebalance(self, interval_s):
        threshold = self.config.int("leader.imbalance.per.broker.percentage") / 100
        while True:
            await asyncio.sleep(interval_s)
            async with self._lock:
                if not self.active:
                    return
                assignments = self._assignments()
                leaders = {tp: st.leader for tp, st in self.states.items()}
                todo = [tp for b in self.live
                        if election.leader_imbalance(assignments, leaders, b) > threshold
                        for tp, a in assignments.items() if a and a[0] == b and leaders.get(tp) != b]
            if todo:
                log.info("auto leader rebalance: preferred election for %d partitions", len(todo))
                await self.elect_leaders(0, todo)

    async def stop(self) -> None:
        self.stopped = True
        # What is under way may wait for a ZooKeeper that is gone for good (its calls queue until
        # a reconnect): the broker is stopping, so it ends here rather than hold the lock.
        for task in list(self._tasks):
            task.cancel()
        await self.resign()
