"""Cluster metadata behind one interface, `MetadataStore`: topics, partitions, brokers,
controller, and the changes clients ask for.

`LocalMetadataStore` is the embedded single-broker store (persisted as JSON in the first log
dir); `broker.control.zk_metadata.ZkMetadataStore` is the store of a broker in a ZooKeeper
cluster. Handlers and the rest of the broker read ``store.topics``, ``store.brokers`` etc. and
call the interface's methods; they never know which store it is.
"""
from __future__ import annotations

import json
import os
import re
import uuid
from pathlib import Path
from typing import Callable, Protocol

from josefk.broker.control.placement import (PlacementError, assign_additional_partitions,
                                             assign_replicas, validate_manual_assignment)
from josefk.wire import errors

LEGAL_TOPIC = re.compile(r"^[a-zA-Z0-9._-]+$")
MAX_TOPIC_LENGTH = 249
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})


class MetadataError(Exception):
    """A metadata change refused with a Kafka error code."""

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


def existing_topic(topics: dict, name: str) -> "TopicMeta":
    """The topic named ``name``; UNKNOWN_TOPIC_OR_PARTITION, in Kafka's words, if none."""
    t = topics.get(name)
    if t is None:
        raise MetadataError(errors.UNKNOWN_TOPIC_OR_PARTITION,
                            "This server does not host this topic-partition.")
    return t


def topic_name_error(name) -> str | None:
    """Why ``name`` is not a legal topic name (Kafka's rules), or None if it is."""
    if not name:
        return "Topic name is illegal, it can't be empty"
    if name in (".", ".."):
        return "Topic name cannot be \".\" or \"..\""
    if len(name) > MAX_TOPIC_LENGTH:
        return f"Topic name is illegal, it can't be longer than {MAX_TOPIC_LENGTH} characters"
    if not LEGAL_TOPIC.match(name):
        return (f"Topic name \"{name}\" is illegal, it contains a character other than "
                "ASCII alphanumerics, '.', '_' and '-'")
    return None


class PartitionMeta:
    __slots__ = ("index", "leader", "leader_epoch", "replicas", "isr", "offline")

    def __init__(self, index, leader, leader_epoch=0, replicas=None, isr=None, offline=()):
        self.index = index
        self.leader = leader
        self.leader_epoch = leader_epoch
        self.replicas = list(replicas if replicas is not None else [leader])
        self.isr = list(isr if isr is not None else self.replicas)
        self.offline = list(offline)  # replicas on brokers that are not alive

    def to_json(self):
        return {"leader": self.leader, "leader_epoch": self.leader_epoch,
                "replicas": self.replicas, "isr": self.isr}

    @classmethod
    def from_json(cls, index, d):
        return cls(index, d["leader"], d["leader_epoch"], d["replicas"], d["isr"])


class TopicMeta:
    __slots__ = ("name", "topic_id", "partitions", "configs")

    def __init__(self, name, topic_id, partitions, configs):
        self.name = name
        self.topic_id = topic_id
        self.partitions = partitions  # list[PartitionMeta], index == position
        self.configs = configs  # explicit topic-level overrides

    @property
    def internal(self) -> bool:
        return self.name in INTERNAL_TOPICS

    def to_json(self):
        return {"id": str(self.topic_id), "configs": self.configs,
                "partitions": [p.to_json() for p in self.partitions]}

    @classmethod
    def from_json(cls, name, d):
        parts = [PartitionMeta.from_json(i, p) for i, p in enumerate(d["partitions"])]
        return cls(name, uuid.UUID(d["id"]), parts, d.get("configs", {}))


class BrokerInfo:
    """A broker: ``host``/``port`` of its inter-broker listener, ``endpoints`` {listener name:
    (host, port)} of every advertised listener."""
    __slots__ = ("node_id", "host", "port", "rack", "endpoints")

    def __init__(self, node_id, host, port, rack=None, endpoints=None):
        self.node_id, self.host, self.port, self.rack = node_id, host, port, rack
        self.endpoints = endpoints if endpoints is not None else {"PLAINTEXT": (host, port)}

    def on(self, listener: str) -> "BrokerInfo | None":
        """This broker as clients of ``listener`` reach it (None: it has no such listener)."""
        ep = self.endpoints.get(listener)
        return None if ep is None else BrokerInfo(self.node_id, *ep, self.rack, self.endpoints)


class MetadataStore(Protocol):
    """What a broker knows of its cluster, and the metadata changes it makes for clients.

    ``listeners`` are called ``fn(event, topic)`` after every change of a topic, with event
    ``created``, ``changed`` (leaders, ISR, replicas), ``grown``, ``configured`` or ``deleted``.
    Refused changes raise `MetadataError` with the Kafka error code to answer. A change may
    complete at once (the single broker) or once the controller has acted on it (a cluster):
    ``timeout_ms`` bounds that wait, as the request's timeout does in Kafka.
    """

    local: BrokerInfo  # this broker
    brokers: dict[int, BrokerInfo]  # the live brokers by id
    controller_id: int
    cluster_id: str | None
    topics: dict[str, TopicMeta]
    topics_by_id: dict[uuid.UUID, TopicMeta]
    listeners: list[Callable[[str, TopicMeta], None]]

    def request_topic(self, name, num_partitions, replication_factor,
                      configs) -> TopicMeta | None:
        """Auto-creation: the topic, asking for its creation if it does not exist; None while
        that is under way (the caller answers LEADER_NOT_AVAILABLE and the client retries)."""

    async def create_topic(self, name, num_partitions, replication_factor, configs,
                           validate_only=False, assignments=None,
                           timeout_ms=30000, topic_id=None) -> TopicMeta:
        """CreateTopics: checked, placed (``assignments``: [(partition, replicas)] given by the
        client) and created, or only checked with ``validate_only``. ``topic_id``: the id of
        the topic a bucket holds (topic recovery, read replicas), else a new one."""

    async def delete_topic(self, name, timeout_ms=30000) -> TopicMeta:
        """DeleteTopics: the topic as it was."""

    async def create_partitions(self, name, count, validate_only=False, assignments=None,
                                timeout_ms=30000) -> TopicMeta:
        """CreatePartitions: grow the topic to ``count`` partitions."""

    async def alter_topic_configs(self, name, configs: dict) -> None:
        """Replace the topic's config overrides (persisted; listeners hear ``configured``)."""

    async def topic_configs(self, name) -> dict:
        """The topic's config overrides ({} for none, or an unknown topic)."""

    async def topics_exist(self, names) -> dict[str, bool]:
        """Whether each topic exists in the cluster now, asked of the source of truth (the
        cache may not have heard of a topic yet)."""


def partition_exists(store: MetadataStore, topic: str | None, index: int) -> bool:
    """Whether ``topic`` has partition ``index`` in the cluster (hosted here or not)."""
    t = store.topics.get(topic) if topic is not None else None
    return t is not None and 0 <= index < len(t.partitions)


def plan_topic(name, num_partitions, replication_factor, assignments, brokers: dict,
               existing) -> dict[int, list[int]]:
    """Check a new topic as Kafka's CreateTopics does and place its replicas over ``brokers``
    ({id: rack}); ``assignments`` ([(partition, replicas)]) is a manual placement or None.
    Raises MetadataError."""
    problem = topic_name_error(name)
    if problem:
        raise MetadataError(errors.INVALID_TOPIC_EXCEPTION, problem)
    if name in existing:
        raise MetadataError(errors.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
    if assignments:
        if num_partitions != -1 or replication_factor != -1:
            raise MetadataError(errors.INVALID_REQUEST, "Both numPartitions or replicationFactor "
                                "and replicasAssignments were set. Both cannot be used at the "
                                "same time.")
        problem = validate_manual_assignment(assignments, brokers)
        if problem:
            raise MetadataError(errors.INVALID_REPLICA_ASSIGNMENT, problem)
        return {p: list(r) for p, r in assignments}
    if num_partitions <= 0:
        raise MetadataError(errors.INVALID_PARTITIONS,
                            "Number of partitions must be larger than 0.")
    if replication_factor <= 0:
        raise MetadataError(errors.INVALID_REPLICATION_FACTOR,
                            "Replication factor must be larger than 0.")
    try:
        return assign_replicas(brokers, num_partitions, replication_factor)
    except PlacementError as e:
        raise MetadataError(e.code, e.message) from None


def plan_partitions(t: "TopicMeta", count, assignments, brokers: dict) -> dict[int, list[int]]:
    """Placement of the partitions CreatePartitions adds to ``t`` (up to ``count``)."""
    have = len(t.partitions)
    if count <= have:
        raise MetadataError(errors.INVALID_PARTITIONS,
                            f"Topic currently has {have} partitions, which is higher than the "
                            f"requested {count}.")
    if assignments:
        if len(assignments) != count - have:
            raise MetadataError(errors.INVALID_REPLICA_ASSIGNMENT,
                                f"Increasing the number of partitions by {count - have} but "
                                f"{len(assignments)} assignments provided.")
        manual = {have + i: list(r) for i, r in enumerate(assignments)}
        problem = validate_manual_assignment(manual, brokers, first_partition=have,
                                             replication_factor=len(t.partitions[0].replicas))
        if problem:
            raise MetadataError(errors.INVALID_REPLICA_ASSIGNMENT, problem)
        return manual
    try:
        return assign_additional_partitions(
            brokers, {p.index: p.replicas for p in t.partitions}, count)
    except PlacementError as e:
        raise MetadataError(e.code, e.message) from None


class LocalMetadataStore:
    """Single-broker metadata kept in ``<log dir>/josefk-metadata.json`` (a `MetadataStore`):
    every change is complete when it returns, so ``timeout_ms`` is never waited on."""

    FILE = "josefk-metadata.json"

    def __init__(self, log_dir: str, broker: BrokerInfo, cluster_id: str):
        self.path = Path(log_dir) / self.FILE
        self.local = broker
        self.brokers = {broker.node_id: broker}
        self.controller_id = broker.node_id
        self.cluster_id = cluster_id
        self.topics: dict[str, TopicMeta] = {}
        self.topics_by_id: dict[uuid.UUID, TopicMeta] = {}
        self.listeners = []  # callables(event, topic), see MetadataStore
        # Not in MetadataStore: async callables(topic, new partition indexes) that make the
        # partitions' storage before a create is persisted (slow work off the event loop; raise
        # MetadataError to refuse). Only the single broker hosts a topic the moment it exists; in
        # a cluster each replica makes its logs when the controller's LeaderAndIsr reaches it.
        self.preparers = []
        if self.path.exists():
            data = json.loads(self.path.read_text())
            for name, d in data.get("topics", {}).items():
                self._index(TopicMeta.from_json(name, d))

    def _index(self, t: TopicMeta):
        self.topics[t.name] = t
        self.topics_by_id[t.topic_id] = t

    def _save(self):
        tmp = self.path.with_suffix(".tmp")
        # no indent: json's C encoder only runs without one (20,000 partitions: 0.1 s, not 1 s)
        tmp.write_text(json.dumps({"topics": {n: t.to_json() for n, t in self.topics.items()}}))
        os.replace(tmp, self.path)

    def _notify(self, event, topic):
        for fn in self.listeners:
            fn(event, topic)

    def _racks(self):
        return {b.node_id: b.rack for b in self.brokers.values()}

    def request_topic(self, name, num_partitions, replication_factor, configs) -> TopicMeta:
        """Auto-creation: the topic, created now if needed. Raises MetadataError."""
        t = self.topics.get(name)
        return t if t is not None else self._add(
            self._plan(name, num_partitions, replication_factor, configs, None))

    async def create_topic(self, name, num_partitions, replication_factor, configs,
                           validate_only=False, assignments=None,
                           timeout_ms=30000, topic_id=None) -> TopicMeta:
        t = self._plan(name, num_partitions, replication_factor, configs, assignments)
        if topic_id is not None:
            t.topic_id = topic_id
        if validate_only:
            return t
        await self._prepare(t, range(len(t.partitions)))
        if name in self.topics:  # created by another request while the storage was made
            raise MetadataError(errors.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
        return self._add(t)

    async def _prepare(self, t, indexes) -> None:
        for fn in self.preparers:
            await fn(t, indexes)

    def _plan(self, name, num_partitions, replication_factor, configs,
              assignments) -> TopicMeta:
        plan = plan_topic(name, num_partitions, replication_factor, assignments, self._racks(),
                          self.topics)
        return TopicMeta(name, uuid.uuid4(),
                         [PartitionMeta(p, plan[p][0], 0, plan[p]) for p in sorted(plan)],
                         dict(configs))

    def _add(self, t) -> TopicMeta:
        self._index(t)
        self._save()
        self._notify("created", t)
        return t

    async def delete_topic(self, name, timeout_ms=30000) -> TopicMeta:
        t = existing_topic(self.topics, name)
        del self.topics[name]
        self.topics_by_id.pop(t.topic_id, None)
        self._save()
        self._notify("deleted", t)
        return t

    async def create_partitions(self, name, count, validate_only=False, assignments=None,
                                timeout_ms=30000) -> TopicMeta:
        t = existing_topic(self.topics, name)
        plan = plan_partitions(t, count, assignments, self._racks())
        if not validate_only:
            have = len(t.partitions)
            await self._prepare(t, sorted(plan))
            if len(t.partitions) != have or self.topics.get(name) is not t:
                raise MetadataError(errors.INVALID_PARTITIONS,
                                    f"Topic {name} changed while its partitions were created.")
            t.partitions.extend(PartitionMeta(p, plan[p][0], 0, plan[p]) for p in sorted(plan))
            self._save()
            self._notify("grown", t)
        return t

    async def alter_topic_configs(self, name, configs: dict) -> None:
        t = self.topics[name]
        t.configs = dict(configs)
        self._save()
        self._notify("configured", t)

    async def topic_configs(self, name) -> dict:
        t = self.topics.get(name)
        return t.configs if t is not None else {}

    async def topics_exist(self, names) -> dict[str, bool]:
        return {n: n in self.topics for n in names}
