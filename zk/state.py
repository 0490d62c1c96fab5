"""Reads and writes of the cluster's znodes, in Kafka's layout (`zk.znodes`).

Every function takes a started ``KazooClient`` first and blocks: the broker runs them on worker
threads through ``ZkClient.run``. Nothing here decides anything; the controller and the broker's
metadata store do.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field, replace

from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from josefk.zk import znodes as zn
from josefk.zk.znodes import (BROKER_IDS, CLUSTER_ID, CONTROLLER, CONTROLLER_EPOCH, DELETE_TOPICS,
                              LOG_DIR_EVENT_NOTIFICATION, TOPICS, PartitionState, topic_path)

__all__ = ["BROKER_IDS", "CONTROLLER", "DELETE_TOPICS", "LOG_DIR_EVENT_NOTIFICATION", "TOPICS",
           "topic_path", "LiveBroker", "Topic", "PartitionState"]


@dataclass(frozen=True)
class LiveBroker:
    node_id: int
    host: str
    port: int
    rack: str | None
    epoch: int  # the czxid of its registration: Kafka's broker epoch
    endpoints: tuple = ()  # every advertised listener (zk.znodes.Endpoint)


@dataclass
class Topic:
    topic_id: uuid.UUID
    partitions: dict[int, list[int]]
    configs: dict = field(default_factory=dict)


def leader_isr(leader, leader_epoch, isr, controller_epoch, zk_version=-1) -> PartitionState:
    return PartitionState(leader=leader, leader_epoch=leader_epoch, isr=list(isr),
                          controller_epoch=controller_epoch, zk_version=zk_version)


def decode_controller(data) -> int | None:
    info = zn.decode_controller(data) if data else None
    return info.broker_id if info else None


# -- controller election ------------------------------------------------------------------------
def try_create_controller(k, node_id: int) -> bool:
    try:
        k.create(CONTROLLER, zn.encode_controller(node_id), ephemeral=True)
        return True
    except NodeExistsError:
        return False


def resign_controller(k, node_id: int) -> None:
    """Delete ``/controller`` if ``node_id`` holds it, so that another broker is elected."""
    try:
        data, stat = k.get(CONTROLLER)
        if decode_controller(data) == node_id:
            k.delete(CONTROLLER, version=stat.version)
    except (NoNodeError, BadVersionError):
        pass


def increment_controller_epoch(k) -> tuple[int, int]:
    """Bump ``/controller_epoch`` (created at 1); returns (epoch, znode version)."""
    while True:
        try:
            data, stat = k.get(CONTROLLER_EPOCH)
        except NoNodeError:
            try:
                k.create(CONTROLLER_EPOCH, zn.encode_controller_epoch(1))
                return 1, 0
            except NodeExistsError:
                continue
        epoch = zn.decode_controller_epoch(data) + 1
        try:
            stat = k.set(CONTROLLER_EPOCH, zn.encode_controller_epoch(epoch), version=stat.version)
            return epoch, stat.version
        except BadVersionError:
            continue


# -- brokers ----------------------------------------------------------------------------------------
def register_broker(k, node_id: int, data: bytes) -> int | None:
    """Create the ephemeral ``/brokers/ids/<id>``; returns the broker epoch, or None if another
    session holds that id."""
    k.ensure_path(BROKER_IDS)
    path = zn.broker_path(node_id)
    try:
        k.create(path, data, ephemeral=True)
    except NodeExistsError:
        try:
            _, stat = k.get(path)
        except NoNodeError:
            return register_broker(k, node_id, data)
        if stat.ephemeralOwner != k.client_id[0]:
            return None
    return k.get(path)[1].czxid


def session_owns_registration(k, node_id: int) -> bool:
    """Whether this client's session holds ``/brokers/ids/<id>`` (a round trip that proves the
    session alive)."""
    stat = k.exists(zn.broker_path(node_id))
    return stat is not None and stat.ephemeralOwner == k.client_id[0]


def read_brokers(k, listener: str = "PLAINTEXT") -> dict[int, LiveBroker]:
    """The live brokers, each reached at its ``listener`` (the inter-broker listener)."""
    out = {}
    for child in k.get_children(BROKER_IDS):
        try:
            data, stat = k.get(f"{BROKER_IDS}/{child}")
        except NoNodeError:
            continue
        reg = zn.decode_broker_registration(int(child), data)
        ep = reg.endpoint(listener) or reg.endpoints[0]
        out[reg.broker_id] = LiveBroker(reg.broker_id, ep.host or "127.0.0.1", ep.port, reg.rack,
                                        stat.czxid, reg.endpoints)
    return out


def ensure_cluster_id(k, proposed: str) -> str:
    try:
        k.create(CLUSTER_ID, zn.encode_cluster_id(proposed), makepath=True)
        return proposed
    except NodeExistsError:
        return zn.decode_cluster_id(k.get(CLUSTER_ID)[0])


def ensure_persistent_paths(k) -> None:
    for p in zn.PERSISTENT_PATHS:
        k.ensure_path(p)


# -- topics -------------------------------------------------------------------------------------------
def read_topic_config(k, topic: str) -> dict:
    try:
        return zn.decode_config(k.get(zn.topic_config_path(topic))[0])
    except NoNodeError:
        return {}


def read_topics(k, names=None) -> dict[str, Topic]:
    out = {}
    for t in (k.get_children(TOPICS) if names is None else names):
        try:
            data, _ = k.get(topic_path(t))
        except NoNodeError:
            continue
        a = zn.decode_topic_assignment(data, t)
        out[t] = Topic(a.topic_id or uuid.uuid5(uuid.NAMESPACE_OID, t), dict(a.partitions),
                       read_topic_config(k, t))
    return out


def read_partition_states(k, topics: dict) -> dict[tuple[str, int], PartitionState]:
    return read_states_of(k, [(t, p) for t, info in topics.items() for p in info.partitions])


def read_states_of(k, tps) -> dict[tuple[str, int], PartitionState]:
    """The states of partitions ``tps`` that have one (the reads pipelined: one round trip's
    wait for thousands of partitions, not one each)."""
    pending = [(tp, k.get_async(zn.partition_state_path(*tp))) for tp in tps]
    out = {}
    for tp, res in pending:
        try:
            data, stat = res.get()
        except NoNodeError:
            continue
        out[tp] = zn.decode_partition_state(data, stat.version)
    return out


STATES_PER_MULTI = 200  # partition state writes per ZooKeeper multi (~30 KB, far below 1 MB)


def write_partition_states(k, epoch_zk_version: int, changes: dict) -> dict:
    """Write ``{tp: (new_state, current_state_or_None)}``, each fenced by the controller epoch
    znode's version and (for updates) the state znode's version. Returns ``{tp: written state
    with its new version}`` for the writes that succeeded.

    The writes go ``STATES_PER_MULTI`` to a multi, every multi sent before the first answer is
    awaited (ZooKeeper applies one session's requests in order, so a partition's parent znode
    is made before its state). A refused write rolls back its whole multi: that multi's
    partitions are then written one per multi, so only the refused ones fail."""
    for t in {t for (t, _p), (_new, cur) in changes.items() if cur is None}:
        k.ensure_path(zn.topic_partitions_path(t))
    parents = [k.create_async(zn.partition_path(t, p))
               for (t, p), (_new, cur) in changes.items() if cur is None]
    items = list(changes.items())
    written, refused = _write_states(k, epoch_zk_version, items, STATES_PER_MULTI)
    for res in parents:
        try:
            res.get()
        except Exception:  # noqa: BLE001 - NodeExists, or its state's write says what happened
            pass
    if refused:
        more, refused = _write_states(k, epoch_zk_version, refused, 1)
        written.update(more)
    # Refused on a version (or unanswered): as Kafka's checkLeaderAndIsrZkData, the write
    # counts if ZooKeeper holds what it meant, an earlier attempt whose answer was lost
    try:
        now = read_states_of(k, [tp for tp, _change in refused])
    except Exception:  # noqa: BLE001 - still unreachable
        now = {}
    for tp, (new, _cur) in refused:
        held = now.get(tp)
        if held is not None and replace(held, zk_version=-1) == replace(new, zk_version=-1):
            written[tp] = held
    return written


def _write_states(k, epoch_zk_version: int, items: list, per_multi: int) -> tuple[dict, list]:
    """``items`` ([(tp, (new, cur))]) written ``per_multi`` to a multi, all sent at once:
    (``{tp: written state}``, the items of the multis that failed)."""
    pending = []
    for i in range(0, len(items), per_multi):
        chunk = items[i:i + per_multi]
        tx = k.transaction()
        tx.check(CONTROLLER_EPOCH, epoch_zk_version)
        for (t, p), (new, cur) in chunk:
            data = zn.encode_partition_state_obj(new)
            if cur is None:
                tx.create(zn.partition_state_path(t, p), data)
            else:
                tx.set_data(zn.partition_state_path(t, p), data, version=cur.zk_version)
        pending.append((chunk, tx.commit_async()))
    written, refused = {}, []
    for chunk, res in pending:
        try:
            done = all(not isinstance(r, Exception) for r in res.get())
        except Exception:  # noqa: BLE001 - the connection dropped: written or not, unknown
            done = False
        if not done:
            refused.extend(chunk)
            continue
        for tp, (new, cur) in chunk:
            written[tp] = replace(new, zk_version=0 if cur is None else cur.zk_version + 1)
    return written, refused


def topics_exist(k, names) -> dict[str, bool]:
    return {n: k.exists(topic_path(n)) is not None for n in names}


def create_topic(k, name: str, topic_id: uuid.UUID, assignment: dict, configs: dict) -> None:
    """Kafka's AdminZkClient order: the config znode, then the assignment (which the
    controller watches). Raises NodeExistsError if the topic exists."""
    if k.exists(topic_path(name)):
        raise NodeExistsError()
    k.ensure_path(zn.config_entity_type_path(zn.CONFIG_TOPICS))
    try:
        k.create(zn.topic_config_path(name), zn.encode_config(configs))
    except NodeExistsError:
        k.set(zn.topic_config_path(name), zn.encode_config(configs))
    k.create(topic_path(name), zn.encode_topic_assignment(assignment, topic_id),
             makepath=True)


def add_partitions(k, name: str, topic_id: uuid.UUID, assignment: dict) -> None:
    """Replace a topic's assignment with one holding more partitions."""
    k.set(topic_path(name), zn.encode_topic_assignment(assignment, topic_id))


def mark_topic_for_deletion(k, name: str) -> None:
    try:
        k.create(zn.delete_topic_path(name), makepath=True)
    except NodeExistsError:
        pass


def notify_log_dir_failure(k, node_id: int) -> None:
    """Tell the controller that a log dir of ``node_id`` failed (Kafka's notification)."""
    k.create(zn.log_dir_event_path(), zn.encode_log_dir_event(node_id), sequence=True)


def take_log_dir_events(k, children) -> list[int]:
    """The brokers named by the ``/log_dir_event_notification`` children, which are deleted."""
    brokers = []
    for child in children:
        path = zn.log_dir_event_path(child)
        try:
            brokers.append(zn.decode_log_dir_event(k.get(path)[0]))
            k.delete(path)
        except NoNodeError:
            continue
        except zn.ZNodeError:
            k.delete(path)  # not Kafka's layout: nothing to act on
    return brokers


def delete_topic_znodes(k, name: str) -> None:
    for path in (topic_path(name), zn.topic_config_path(name), zn.delete_topic_path(name)):
        try:
            k.delete(path, recursive=True)
        except NoNodeError:
            pass
