"""The metadata store of a broker in a ZooKeeper cluster.

Reads come from a cache the controller keeps current with UpdateMetadata (brokers' endpoints,
partitions' leaders, ISRs and replicas), never from ZooKeeper on a client's request. Admin
changes are written to ZooKeeper the way Kafka's AdminZkClient writes them (topic config and
assignment znodes, ``/admin/delete_topics``); the controller picks them up from its watches and
the cache follows once it has decided.
"""
from __future__ import annotations

import asyncio
import logging
import time
import uuid

from kazoo.exceptions import NodeExistsError

from josefk.broker.control.metadata import (BrokerInfo, MetadataError, PartitionMeta, TopicMeta,
                                            existing_topic, plan_partitions, plan_topic)
from josefk.broker.security.listeners import advertised_listeners, inter_broker_listener
from josefk.wire import errors
from josefk.zk import configs as zc
from josefk.zk import state as zs
from josefk.zk import znodes as zn

log = logging.getLogger("josefk.zk.metadata")

LEADER_DURING_DELETE = -2


class BrokerIdInUse(RuntimeError):
    pass


class ZkMetadataStore:
    """The `MetadataStore` of a broker in a ZooKeeper cluster; beyond the interface, what the
    cluster membership (`broker.control.cluster`) and the controller's requests use: start-up,
    registration and the cache's update from UpdateMetadata."""

    def __init__(self, zk, local: BrokerInfo, config):
        self.zk = zk
        self.local = local
        self.config = config
        self.brokers: dict[int, BrokerInfo] = {local.node_id: local}
        self.controller_id = -1
        self.controller_epoch = 0
        self.cluster_id = None
        self.broker_epoch = -1
        self.topics: dict[str, TopicMeta] = {}
        self.topics_by_id: dict[uuid.UUID, TopicMeta] = {}
        self.listeners = []  # callables(event, topic), as the local store's
        self._creating: set[str] = set()
        self._changed = asyncio.Event()

    # -- start-up -----------------------------------------------------------------------------------
    async def start(self, proposed_cluster_id: str) -> str:
        await self.zk.start()
        await self.zk.run(zs.ensure_persistent_paths)
        self.cluster_id = await self.zk.run(zs.ensure_cluster_id, proposed_cluster_id)
        return self.cluster_id

    async def register(self) -> int:
        """Register this broker (ephemeral ``/brokers/ids/<id>``). A registration left by a
        previous, dead process of this broker disappears when its session expires: wait for that
        up to the session timeout, then refuse to start."""
        me = self.local
        data = zn.encode_broker_registration(advertised_listeners(self.config), me.rack)
        deadline = time.monotonic() + self.zk.session_timeout_s + 2
        while True:
            epoch = await self.zk.run(zs.register_broker, me.node_id, data)
            if epoch is not None:
                self.broker_epoch = epoch
                log.info("registered broker %d at %s:%d (broker epoch %d)", me.node_id, me.host,
                         me.port, epoch)
                return epoch
            if time.monotonic() > deadline:
                raise BrokerIdInUse(
                    f"broker.id {me.node_id} is already registered in ZooKeeper by another live "
                    f"broker ({zn.broker_path(me.node_id)}); give this broker another broker.id")
            await asyncio.sleep(0.5)

    # -- the cache, fed by UpdateMetadata --------------------------------------------------------------
    def apply_update_metadata(self, req) -> None:
        live = {}
        inter = inter_broker_listener(self.config)
        for b in req.live_brokers:
            ep = next((e for e in b.endpoints if e.listener == inter), None) or \
                (b.endpoints[0] if b.endpoints else None)
            if ep is not None:
                live[b.id] = BrokerInfo(b.id, ep.host, ep.port, b.rack,
                                        {e.listener: (e.host, e.port) for e in b.endpoints})
        if live:
            self.brokers = live
        self.controller_id = req.controller_id
        for ts in req.topic_states:
            name = ts.topic_name
            t = self.topics.get(name)
            deleting = any(ps.leader == LEADER_DURING_DELETE for ps in ts.partition_states)
            if deleting:
                if t is not None:
                    self._forget(t)
                continue
            created = t is None
            if created:
                t = TopicMeta(name, ts.topic_id, [], {})
                self.topics[name] = t
                self.topics_by_id[t.topic_id] = t
                asyncio.ensure_future(self._load_configs(t))
            parts = {p.index: p for p in t.partitions}
            for ps in ts.partition_states:
                parts[ps.partition_index] = PartitionMeta(
                    ps.partition_index, ps.leader, ps.leader_epoch, ps.replicas, ps.isr,
                    ps.offline_replicas)
            t.partitions = [parts[i] for i in sorted(parts)]
            for fn in self.listeners:
                fn("created" if created else "changed", t)
        self._changed.set()
        self._changed = asyncio.Event()

    def _forget(self, t):
        self.topics.pop(t.name, None)
        self.topics_by_id.pop(t.topic_id, None)
        for fn in self.listeners:
            fn("deleted", t)
        self._changed.set()

    async def _load_configs(self, t):
        """A new topic's configs, read after the topic arrived: its partitions, made with the
        defaults meanwhile if they were, take them ("configured")."""
        try:
            t.configs = await self.zk.run(zs.read_topic_config, t.name)
        except Exception:  # noqa: BLE001 - keep the defaults; the next change reloads
            log.exception("cannot read the configs of topic %s", t.name)
            return
        if t.configs:
            for fn in self.listeners:
                fn("configured", t)

    async def topic_configs(self, name) -> dict:
        t = self.topics.get(name)
        if t is not None and t.configs:
            return t.configs
        return await self.zk.run(zs.read_topic_config, name)

    async def topics_exist(self, names) -> dict[str, bool]:
        return await self.zk.run(zs.topics_exist, list(names))

    async def wait_for(self, ready, timeout_ms: int) -> bool:
        """Wait until ``ready()`` holds (checked at every metadata change) or the timeout."""
        deadline = time.monotonic() + timeout_ms / 1000
        while not ready():
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            try:
                await asyncio.wait_for(self._changed.wait(), left)
            except asyncio.TimeoutError:
                return ready()
        return True

    async def _live_racks(self) -> dict[int, str | None]:
        """The registered brokers and their racks, read from ZooKeeper for each placement: the
        cache lags behind a controller change (a new controller is named before its first
        UpdateMetadata has dropped the brokers that died meanwhile), and a replica placed on a
        broker the controller knows to be dead would have no leader until it returns."""
        live = await self.zk.run(zs.read_brokers, inter_broker_listener(self.config))
        return {b.node_id: b.rack for b in live.values()}

    # -- admin changes ----------------------------------------------------------------------------------
    async def create_topic(self, name, num_partitions, replication_factor, configs,
                           validate_only=False, assignments=None, timeout_ms=30000,
                           topic_id=None) -> TopicMeta:
        plan = plan_topic(name, num_partitions, replication_factor, assignments,
                          await self._live_racks(), self.topics)
        t = TopicMeta(name, topic_id or uuid.uuid4(),
                      [PartitionMeta(p, -1, 0, plan[p], []) for p in sorted(plan)], dict(configs))
        if validate_only:
            return t
        try:
            await self.zk.run(zs.create_topic, name, t.topic_id, plan, dict(configs))
        except NodeExistsError:
            raise MetadataError(errors.TOPIC_ALREADY_EXISTS,
                                f"Topic '{name}' already exists.") from None

        def ready():
            cur = self.topics.get(name)
            return cur is not None and len(cur.partitions) == len(plan) and all(
                p.leader >= 0 for p in cur.partitions)
        if timeout_ms > 0 and not await self.wait_for(ready, timeout_ms):
            raise MetadataError(errors.REQUEST_TIMED_OUT,
                                f"Topic {name} was created but its partitions have no leader "
                                f"after {timeout_ms} ms.")
        return self.topics.get(name, t)

    def request_topic(self, name, num_partitions, replication_factor,
                      configs) -> TopicMeta | None:
        """Auto-creation: the topic if it exists, else None after asking for it (the caller
        answers LEADER_NOT_AVAILABLE and the client retries, as with Kafka)."""
        t = self.topics.get(name)
        if t is not None or name in self._creating:
            return t
        self._creating.add(name)

        async def create():
            try:
                await self.create_topic(name, num_partitions, replication_factor, configs,
                                        timeout_ms=0)
            except MetadataError as e:
                if e.code != errors.TOPIC_ALREADY_EXISTS:
                    log.warning("auto-creating topic %s failed: %s", name, e.message)
            except Exception:  # noqa: BLE001
                log.exception("auto-creating topic %s failed", name)
            finally:
                self._creating.discard(name)
        asyncio.ensure_future(create())
        return None

    async def delete_topic(self, name, timeout_ms=30000) -> TopicMeta:
        t = existing_topic(self.topics, name)
        await self.zk.run(zs.mark_topic_for_deletion, name)
        if timeout_ms > 0 and not await self.wait_for(lambda: self.topics.get(name) is not t,
                                                      timeout_ms):
            raise MetadataError(errors.REQUEST_TIMED_OUT,
                                f"Topic {name} is marked for deletion but not deleted after "
                                f"{timeout_ms} ms.")
        return t

    async def create_partitions(self, name, count, validate_only=False, assignments=None,
                                timeout_ms=30000) -> TopicMeta:
        t = existing_topic(self.topics, name)
        plan = plan_partitions(t, count, assignments, await self._live_racks())
        if validate_only:
            return t
        full = {p.index: p.replicas for p in t.partitions}
        full.update(plan)
        await self.zk.run(zs.add_partitions, name, t.topic_id, full)
        if timeout_ms > 0 and not await self.wait_for(
                lambda: len(self.topics.get(name, t).partitions) >= count, timeout_ms):
            raise MetadataError(errors.REQUEST_TIMED_OUT,
                                f"Partitions of {name} were added but are not ready after "
                                f"{timeout_ms} ms.")
        return t

    async def alter_topic_configs(self, name, configs: dict) -> None:
        """Written to the topic's config znode with a change notification, which every broker
        (this one included) follows (`broker.dynamic`); this broker's cache takes it at once."""
        await self.zk.run(zc.write_entity, zn.CONFIG_TOPICS, name, configs)
        t = self.topics.get(name)
        if t is not None:
            t.configs = dict(configs)
            for fn in self.listeners:
                fn("configured", t)
