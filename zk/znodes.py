"""Kafka's ZooKeeper layout: znode paths and the JSON in them, exactly as Kafka 3.x (ZooKeeper
mode) writes and reads it, so operators (and Kafka's own tools) recognise a josefk cluster.

Pure functions: no kazoo, no I/O. Encoders return ``bytes`` (compact JSON, UTF-8); decoders take
``bytes`` (or ``str``) and return small frozen objects or plain dicts, accept what older Kafka
versions wrote, and tolerate the optional keys Kafka tolerates. Malformed data raises
``ZNodeError``.

    /cluster/id                          {"version":"1","id":"<base64 uuid>"}
    /controller                          {"version":2,"brokerid":1,"timestamp":"<ms>",
                                          "kraftControllerEpoch":-1}                      (ephemeral)
    /controller_epoch                    3                                  (plain integer text)
    /brokers/ids/<id>                    broker registration, version 5                  (ephemeral)
    /brokers/topics/<t>                  {"version":3,"partitions":{"0":[1,2,3]},"adding_replicas":{},
                                          "removing_replicas":{},"topic_id":"<base64 uuid>"}
    /brokers/topics/<t>/partitions/<p>/state
                                         {"version":1,"leader":1,"leader_epoch":0,"controller_epoch":1,
                                          "isr":[1,2,3]}
    /config/<type>/<name>                {"version":1,"config":{"retention.ms":"1000"}}
    /config/changes/config_change_<seq>  {"version":2,"entity_path":"topics/<t>"}   (sequential)
    /admin/delete_topics/<t>             (no data)
    /latest_producer_id_block            {"version":1,"broker":1,"block_start":"0","block_end":"999"}
"""
from __future__ import annotations

import json
import time
import uuid as _uuid
from dataclasses import dataclass, field
from typing import Iterable, Mapping

from josefk.wire.types import uuid_from_base64, uuid_to_base64


class ZNodeError(ValueError):
    """A znode's data is not in the layout Kafka writes."""


# ---------------------------------------------------------------------------------------------
# Paths
# ---------------------------------------------------------------------------------------------
ADMIN = "/admin"
BROKERS = "/brokers"
BROKER_IDS = "/brokers/ids"
BROKER_SEQID = "/brokers/seqid"
TOPICS = "/brokers/topics"
CLUSTER = "/cluster"
CLUSTER_ID = "/cluster/id"
CONFIG = "/config"
CONFIG_CHANGES = "/config/changes"
CONFIG_CHANGE_PREFIX = "config_change_"
CONSUMERS = "/consumers"  # the old consumers' root; Kafka still creates it
CONTROLLER = "/controller"
CONTROLLER_EPOCH = "/controller_epoch"
DELETE_TOPICS = "/admin/delete_topics"
REASSIGN_PARTITIONS = "/admin/reassign_partitions"
PREFERRED_REPLICA_ELECTION = "/admin/preferred_replica_election"
ISR_CHANGE_NOTIFICATION = "/isr_change_notification"
LOG_DIR_EVENT_NOTIFICATION = "/log_dir_event_notification"
LATEST_PRODUCER_ID_BLOCK = "/latest_producer_id_block"
FEATURE = "/feature"

# Config entity types (Kafka's ConfigType): the children of /config.
CONFIG_TOPICS = "topics"
CONFIG_CLIENTS = "clients"
CONFIG_USERS = "users"
CONFIG_BROKERS = "brokers"
CONFIG_IPS = "ips"
# KIP-714 subscriptions: Kafka keeps them in KRaft only; made on first use, not at start-up
CONFIG_CLIENT_METRICS = "client-metrics"
# Group configs (KIP-848, KIP-932): Kafka keeps them in KRaft only; made on first use
CONFIG_GROUPS = "groups"
# Cluster links (Confluent Cluster Linking's, issue 30): made on first use
CONFIG_CLUSTER_LINKS = "cluster-links"
CONFIG_TYPES = (CONFIG_TOPICS, CONFIG_CLIENTS, CONFIG_USERS, CONFIG_BROKERS, CONFIG_IPS)

# Persistent paths a Kafka broker makes sure exist at start-up, in the order it creates them.
PERSISTENT_PATHS = (
    CONSUMERS, BROKER_IDS, TOPICS, CONFIG_CHANGES, DELETE_TOPICS, BROKER_SEQID,
    ISR_CHANGE_NOTIFICATION, LATEST_PRODUCER_ID_BLOCK, LOG_DIR_EVENT_NOTIFICATION,
) + tuple(f"{CONFIG}/{t}" for t in CONFIG_TYPES)


def _name(value, what: str) -> str:
    """One path component: no '/', not empty, not '.' or '..' (ZooKeeper refuses those)."""
    text = str(value)
    if not text or "/" in text or text in (".", "..") or "\x00" in text:
        raise ValueError(f"invalid {what} for a znode path: {value!r}")
    return text


def _int_name(value, what: str) -> str:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{what} must be an int, not {value!r}")
    return str(value)


def broker_path(broker_id: int) -> str:
    """``/brokers/ids/<id>``: a broker's (ephemeral) registration."""
    return f"{BROKER_IDS}/{_int_name(broker_id, 'broker id')}"


def topic_path(topic: str) -> str:
    """``/brokers/topics/<topic>``: the topic's replica assignment and id."""
    return f"{TOPICS}/{_name(topic, 'topic')}"


def topic_partitions_path(topic: str) -> str:
    """``/brokers/topics/<topic>/partitions``."""
    return f"{topic_path(topic)}/partitions"


def partition_path(topic: str, partition: int) -> str:
    """``/brokers/topics/<topic>/partitions/<p>``."""
    return f"{topic_partitions_path(topic)}/{_int_name(partition, 'partition')}"


def partition_state_path(topic: str, partition: int) -> str:
    """``/brokers/topics/<topic>/partitions/<p>/state``: leader, leader epoch, ISR."""
    return f"{partition_path(topic, partition)}/state"


def delete_topic_path(topic: str) -> str:
    """``/admin/delete_topics/<topic>``: marks a topic for deletion (no data)."""
    return f"{DELETE_TOPICS}/{_name(topic, 'topic')}"


def config_entity_type_path(entity_type: str) -> str:
    """``/config/<type>`` (``topics``, ``clients``, ``users``, ``brokers``, ``ips``)."""
    return f"{CONFIG}/{_name(entity_type, 'config entity type')}"


def config_entity_path(entity_type: str, entity_name: str) -> str:
    """``/config/<type>/<name>``: the dynamic config overrides of one entity. ``entity_name`` is
    used as given (Kafka sanitizes user and client names before they get here); the broker
    default entity is named ``<default>``."""
    return f"{config_entity_type_path(entity_type)}/{_name(entity_name, 'config entity name')}"


def topic_config_path(topic: str) -> str:
    """``/config/topics/<topic>``."""
    return config_entity_path(CONFIG_TOPICS, topic)


def config_change_path(sequence: str = "") -> str:
    """``/config/changes/config_change_<seq>``; without ``sequence`` it is the prefix to create a
    persistent *sequential* node with (ZooKeeper appends a 10-digit number)."""
    return f"{CONFIG_CHANGES}/{CONFIG_CHANGE_PREFIX}{sequence}"


def config_change_sequence(node_name: str) -> int:
    """The sequence number of a ``config_change_0000000012`` child name (or full path)."""
    name = node_name.rsplit("/", 1)[-1]
    if not name.startswith(CONFIG_CHANGE_PREFIX):
        raise ValueError(f"not a config change notification node: {node_name!r}")
    return int(name[len(CONFIG_CHANGE_PREFIX):])


# ---------------------------------------------------------------------------------------------
# JSON helpers: compact like Jackson, strict types like Kafka's JSON decoders
# ---------------------------------------------------------------------------------------------
def _dumps(obj) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _loads(data, what: str):
    """Parsed JSON, or None for no data (a null or empty znode)."""
    if data is None:
        return None
    if isinstance(data, (bytes, bytearray, memoryview)):
        try:
            data = bytes(data).decode("utf-8")
        except UnicodeDecodeError as e:
            raise ZNodeError(f"{what}: not UTF-8: {bytes(data)[:200]!r}") from e
    if not data.strip():
        return None
    try:
        return json.loads(data)
    except ValueError as e:
        raise ZNodeError(f"{what}: not JSON: {data[:200]!r}") from e


def _object(data, what: str, required: bool = True) -> dict | None:
    js = _loads(data, what)
    if js is None:
        if required:
            raise ZNodeError(f"{what}: no data")
        return None
    if not isinstance(js, dict):
        raise ZNodeError(f"{what}: expected a JSON object, got {js!r}")
    return js


def _get_int(js: dict, key: str, what: str, default=None):
    if key not in js or js[key] is None:
        if default is not None:
            return default
        raise ZNodeError(f"{what}: missing {key!r} in {js!r}")
    v = js[key]
    if isinstance(v, bool) or not isinstance(v, int):
        raise ZNodeError(f"{what}: {key!r} must be an integer, got {v!r}")
    return v


def _get_str(js: dict, key: str, what: str) -> str:
    v = js.get(key)
    if not isinstance(v, str):
        raise ZNodeError(f"{what}: {key!r} must be a string, got {v!r}")
    return v


def _int_list(v, what: str) -> list[int]:
    if not isinstance(v, list) or any(isinstance(x, bool) or not isinstance(x, int) for x in v):
        raise ZNodeError(f"{what}: expected a list of integers, got {v!r}")
    return list(v)


def _ms_string(timestamp_ms: int | None) -> str:
    return str(int(time.time() * 1000) if timestamp_ms is None else int(timestamp_ms))


def _parse_ms(v) -> int | None:
    """Kafka writes timestamps as strings of milliseconds; tolerate numbers and junk (-> None)."""
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, str):
        try:
            return int(v)
        except ValueError:
            return None
    return None


def _uuid_text(topic_id) -> str:
    if isinstance(topic_id, _uuid.UUID):
        return uuid_to_base64(topic_id)
    if isinstance(topic_id, str):
        uuid_from_base64(topic_id)  # validate
        return topic_id
    raise TypeError(f"topic id must be a uuid.UUID or Kafka's base64 text, not {topic_id!r}")


# ---------------------------------------------------------------------------------------------
# /brokers/ids/<id>
# ---------------------------------------------------------------------------------------------
SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
BROKER_REGISTRATION_VERSION = 5


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One advertised listener: ``PLAINTEXT://127.0.0.1:9092``. ``host`` None means any/unset."""
    listener: str
    host: str | None
    port: int
    security_protocol: str = "PLAINTEXT"

    @property
    def connection_string(self) -> str:
        """``LISTENER://host:port`` as Kafka writes it (IPv6 hosts in brackets, no host -> ``://:port``)."""
        if self.host is None:
            hostport = f":{self.port}"
        elif ":" in self.host:
            hostport = f"[{self.host}]:{self.port}"
        else:
            hostport = f"{self.host}:{self.port}"
        return f"{self.listener}://{hostport}"

    @classmethod
    def parse(cls, text: str, protocol_map: Mapping[str, str] | None = None) -> "Endpoint":
        """Parse ``LISTENER://host:port``; the listener's security protocol comes from
        ``protocol_map`` (listener name -> protocol), by default the listener name itself, which
        must then be one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL."""
        if not isinstance(text, str) or "://" not in text:
            raise ZNodeError(f"unable to parse {text!r} to a broker endpoint")
        listener, _, hostport = text.partition("://")
        listener = listener.strip().upper()
        host, sep, port_text = hostport.rpartition(":")
        if not sep or not listener:
            raise ZNodeError(f"unable to parse {text!r} to a broker endpoint")
        if host.startswith("[") and host.endswith("]"):
            host = host[1:-1]
        try:
            port = int(port_text)
        except ValueError:
            raise ZNodeError(f"unable to parse {text!r} to a broker endpoint: bad port") from None
        if protocol_map is None:
            protocol = listener if listener in SECURITY_PROTOCOLS else None
        else:
            protocol = {k.upper(): v for k, v in protocol_map.items()}.get(listener)
        if protocol is None:
            raise ZNodeError(f"no security protocol defined for listener {listener} (in {text!r})")
        return cls(listener, host or None, port, protocol)


@dataclass(frozen=True, slots=True)
class BrokerRegistration:
    """What ``/brokers/ids/<id>`` says about a live broker."""
    broker_id: int
    endpoints: tuple[Endpoint, ...]
    rack: str | None = None
    jmx_port: int = -1
    timestamp_ms: int | None = None
    version: int = BROKER_REGISTRATION_VERSION
    features: dict = field(default_factory=dict)

    def endpoint(self, listener: str = "PLAINTEXT") -> Endpoint | None:
        """The endpoint of ``listener`` (by name), or None."""
        listener = listener.upper()
        return next((e for e in self.endpoints if e.listener == listener), None)


def encode_broker_registration(endpoints: Iterable[Endpoint | str], rack: str | None = None, *,
                               jmx_port: int = -1, timestamp_ms: int | None = None,
                               features: Mapping | None = None) -> bytes:
    """Version-5 registration JSON for ``/brokers/ids/<id>``.

    The top-level ``host``/``port`` are those of the first PLAINTEXT endpoint (for old clients),
    else ``null``/``-1``; ``rack`` only when set; ``timestamp`` is now (or ``timestamp_ms``) as a
    string of milliseconds; ``features`` is ``{}`` unless given (feature -> {"min_version": ..,
    "max_version": ..})."""
    eps = [e if isinstance(e, Endpoint) else Endpoint.parse(e) for e in endpoints]
    if not eps:
        raise ValueError("a broker registration needs at least one endpoint")
    plain = next((e for e in eps if e.security_protocol == "PLAINTEXT"), None)
    js = {
        "features": {k: dict(v) for k, v in (features or {}).items()},
        "listener_security_protocol_map": {e.listener: e.security_protocol for e in eps},
        "endpoints": [e.connection_string for e in eps],
        "jmx_port": int(jmx_port),
        "port": plain.port if plain else -1,
        "host": plain.host if plain else None,
        "version": BROKER_REGISTRATION_VERSION,
        "timestamp": _ms_string(timestamp_ms),
    }
    if rack is not None:
        js["rack"] = rack
    return _dumps(js)


def decode_broker_registration(broker_id: int, data) -> BrokerRegistration:
    """Read ``/brokers/ids/<id>`` (versions 1-5). Version 1 has only ``host``/``port`` (a
    PLAINTEXT endpoint); later ones list ``endpoints``, with ``listener_security_protocol_map``
    from version 4 (without it each listener name must be a security protocol)."""
    what = f"/brokers/ids/{broker_id}"
    js = _object(data, what)
    version = _get_int(js, "version", what)
    jmx_port = _get_int(js, "jmx_port", what, default=-1)
    if version < 1:
        raise ZNodeError(f"{what}: unsupported version of broker registration: {js!r}")
    if version == 1:
        endpoints = (Endpoint("PLAINTEXT", _get_str(js, "host", what), _get_int(js, "port", what)),)
    else:
        protocol_map = js.get("listener_security_protocol_map")
        if protocol_map is not None and not isinstance(protocol_map, dict):
            raise ZNodeError(f"{what}: listener_security_protocol_map must be an object: {js!r}")
        raw = js.get("endpoints")
        if not isinstance(raw, list) or not all(isinstance(e, str) for e in raw):
            raise ZNodeError(f"{what}: endpoints must be a list of strings: {js!r}")
        endpoints = tuple(Endpoint.parse(e, protocol_map) for e in raw)
    rack = js.get("rack")
    if rack is not None and not isinstance(rack, str):
        raise ZNodeError(f"{what}: rack must be a string: {js!r}")
    features = js.get("features")
    return BrokerRegistration(
        broker_id=broker_id, endpoints=endpoints, rack=rack, jmx_port=jmx_port,
        timestamp_ms=_parse_ms(js.get("timestamp")), version=version,
        features=dict(features) if isinstance(features, dict) else {})


# ---------------------------------------------------------------------------------------------
# /brokers/topics/<topic>
# ---------------------------------------------------------------------------------------------
TOPIC_ASSIGNMENT_VERSION = 3


@dataclass(frozen=True, slots=True)
class TopicAssignment:
    """``/brokers/topics/<topic>``: replicas per partition (first = preferred leader), replicas
    being added/removed by a reassignment, and the topic id (None when an old Kafka wrote it)."""
    partitions: dict[int, list[int]]
    topic_id: _uuid.UUID | None = None
    adding_replicas: dict[int, list[int]] = field(default_factory=dict)
    removing_replicas: dict[int, list[int]] = field(default_factory=dict)
    version: int = TOPIC_ASSIGNMENT_VERSION


def encode_topic_assignment(partitions: Mapping[int, Iterable[int]], topic_id=None,
                            adding_replicas: Mapping[int, Iterable[int]] | None = None,
                            removing_replicas: Mapping[int, Iterable[int]] | None = None) -> bytes:
    """Version-3 JSON for ``/brokers/topics/<topic>``; ``topic_id`` a ``uuid.UUID`` or Kafka's
    base64 text (omitted when None). Only non-empty adding/removing lists are written."""

    def as_json(m):
        lists = {int(p): [int(b) for b in reps] for p, reps in (m or {}).items()}
        return {str(p): reps for p, reps in sorted(lists.items()) if reps}

    js = {
        "partitions": {str(int(p)): [int(b) for b in reps] for p, reps in sorted(partitions.items())},
        "adding_replicas": as_json(adding_replicas),
        "removing_replicas": as_json(removing_replicas),
        "version": TOPIC_ASSIGNMENT_VERSION,
    }
    if topic_id is not None:
        js["topic_id"] = _uuid_text(topic_id)
    return _dumps(js)


def decode_topic_assignment(data, topic: str = "?") -> TopicAssignment:
    """Read ``/brokers/topics/<topic>`` (versions 1-3). No data gives an empty assignment, as in
    Kafka; missing ``adding_replicas``/``removing_replicas``/``topic_id`` are empty/None."""
    what = f"/brokers/topics/{topic}"
    js = _object(data, what, required=False)
    if js is None:
        return TopicAssignment(partitions={}, version=0)

    def int_keyed(key: str) -> dict[int, list[int]]:
        m = js.get(key)
        if m is None:
            return {}
        if not isinstance(m, dict):
            raise ZNodeError(f"{what}: {key!r} must be an object: {js!r}")
        try:
            return {int(p): _int_list(reps, f"{what} {key}[{p}]") for p, reps in m.items()}
        except ValueError as e:
            raise ZNodeError(f"{what}: bad partition number in {key!r}: {e}") from None

    topic_id = js.get("topic_id")
    if topic_id is not None:
        try:
            topic_id = uuid_from_base64(topic_id)
        except ValueError as e:
            raise ZNodeError(f"{what}: {e}") from None
    return TopicAssignment(
        partitions=dict(sorted(int_keyed("partitions").items())),
        topic_id=topic_id,
        adding_replicas=int_keyed("adding_replicas"),
        removing_replicas=int_keyed("removing_replicas"),
        version=_get_int(js, "version", what, default=1),
    )


# ---------------------------------------------------------------------------------------------
# /brokers/topics/<topic>/partitions/<p>/state
# ---------------------------------------------------------------------------------------------
LEADER_RECOVERED = 0
LEADER_RECOVERING = 1  # after an unclean election (KIP-704); written only in that state
NO_LEADER = -1


@dataclass(frozen=True, slots=True)
class PartitionState:
    """Leader, leader epoch and ISR of one partition, with the epoch of the controller that wrote
    it. ``zk_version`` is the znode's data version (Kafka's partition epoch), when known: use it
    for conditional writes."""
    leader: int
    leader_epoch: int
    isr: list[int]
    controller_epoch: int
    leader_recovery_state: int = LEADER_RECOVERED
    zk_version: int = -1


def encode_partition_state(leader: int, leader_epoch: int, isr: Iterable[int], controller_epoch: int,
                           leader_recovery_state: int = LEADER_RECOVERED) -> bytes:
    """Version-1 JSON for ``.../partitions/<p>/state``."""
    js = {
        "controller_epoch": int(controller_epoch),
        "leader": int(leader),
        "version": 1,
        "leader_epoch": int(leader_epoch),
        "isr": [int(b) for b in isr],
    }
    if leader_recovery_state != LEADER_RECOVERED:
        js["leader_recovery_state"] = int(leader_recovery_state)
    return _dumps(js)


def encode_partition_state_obj(state: PartitionState) -> bytes:
    return encode_partition_state(state.leader, state.leader_epoch, state.isr, state.controller_epoch,
                                  state.leader_recovery_state)


def decode_partition_state(data, zk_version: int = -1) -> PartitionState | None:
    """Read a partition state znode; None when it has no data (as Kafka's decoder gives None)."""
    what = "partition state"
    js = _object(data, what, required=False)
    if js is None:
        return None
    recovery = _get_int(js, "leader_recovery_state", what, default=LEADER_RECOVERED)
    if recovery not in (LEADER_RECOVERED, LEADER_RECOVERING):
        raise ZNodeError(f"{what}: unknown leader_recovery_state {recovery}")
    return PartitionState(
        leader=_get_int(js, "leader", what),
        leader_epoch=_get_int(js, "leader_epoch", what),
        isr=_int_list(js.get("isr"), f"{what} isr"),
        controller_epoch=_get_int(js, "controller_epoch", what),
        leader_recovery_state=recovery,
        zk_version=zk_version,
    )


# ---------------------------------------------------------------------------------------------
# /controller, /controller_epoch, /cluster/id
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ControllerInfo:
    """``/controller``: which broker is the active controller (an ephemeral node).
    ``kraft_controller_epoch`` is -1 for a ZooKeeper-mode controller (or a version-1 node)."""
    broker_id: int
    timestamp_ms: int | None = None
    kraft_controller_epoch: int = -1
    version: int = 2


def encode_controller(broker_id: int, timestamp_ms: int | None = None,
                      kraft_controller_epoch: int = -1) -> bytes:
    """Version-2 JSON for ``/controller`` (``timestamp`` a string of ms)."""
    return _dumps({"version": 2, "brokerid": int(broker_id), "timestamp": _ms_string(timestamp_ms),
                   "kraftControllerEpoch": int(kraft_controller_epoch)})


def decode_controller(data) -> ControllerInfo | None:
    """Read ``/controller`` (versions 1-2); None when it has no data."""
    js = _object(data, CONTROLLER, required=False)
    if js is None:
        return None
    return ControllerInfo(
        broker_id=_get_int(js, "brokerid", CONTROLLER),
        timestamp_ms=_parse_ms(js.get("timestamp")),
        kraft_controller_epoch=_get_int(js, "kraftControllerEpoch", CONTROLLER, default=-1),
        version=_get_int(js, "version", CONTROLLER, default=1),
    )


def encode_controller_epoch(epoch: int) -> bytes:
    """``/controller_epoch`` holds the epoch as plain decimal text, not JSON."""
    return str(int(epoch)).encode("ascii")


def decode_controller_epoch(data) -> int:
    text = bytes(data).decode("ascii", "replace") if not isinstance(data, str) else data
    try:
        return int(text.strip())
    except ValueError:
        raise ZNodeError(f"{CONTROLLER_EPOCH}: not an integer: {text[:100]!r}") from None


def encode_cluster_id(cluster_id: str) -> bytes:
    """``/cluster/id``: note the version is the *string* "1"."""
    return _dumps({"version": "1", "id": str(cluster_id)})


def decode_cluster_id(data) -> str:
    js = _object(data, CLUSTER_ID)
    return _get_str(js, "id", CLUSTER_ID)


# ---------------------------------------------------------------------------------------------
# /config/<type>/<name> and /config/changes/config_change_<seq>
# ---------------------------------------------------------------------------------------------
def _config_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def encode_config(config: Mapping[str, object]) -> bytes:
    """``{"version":1,"config":{...}}`` with every value a string (Kafka stores Properties);
    Python booleans become ``true``/``false``. ``None`` values are dropped."""
    return _dumps({"version": 1, "config": {str(k): _config_value(v)
                                             for k, v in config.items() if v is not None}})


def decode_config(data) -> dict[str, str]:
    """The ``config`` object of a config entity znode; ``{}`` for no data or no ``config``."""
    js = _loads(data, "config entity")
    if not isinstance(js, dict):
        return {}
    config = js.get("config")
    if not isinstance(config, dict):
        return {}
    out = {}
    for k, v in config.items():
        if not isinstance(v, str):
            raise ZNodeError(f"config entity: value of {k!r} must be a string, got {v!r}")
        out[k] = v
    return out


def encode_config_change(entity_type: str, entity_name: str) -> bytes:
    """A version-2 change notification: ``{"version":2,"entity_path":"topics/<t>"}``. Create it
    as a persistent sequential node at ``config_change_path()`` after writing the entity."""
    return _dumps({"version": 2, "entity_path": f"{_name(entity_type, 'config entity type')}/{entity_name}"})


def decode_config_change(data) -> tuple[str, str]:
    """``(entity_type, entity_name)`` of a change notification, version 1
    (``entity_type``/``entity_name``) or 2 (``entity_path`` = type/name, where the name may itself
    contain '/', e.g. ``users/<u>/clients/<c>``)."""
    what = "config change notification"
    js = _object(data, what)
    version = _get_int(js, "version", what)
    if version == 1:
        return _get_str(js, "entity_type", what), _get_str(js, "entity_name", what)
    if version == 2:
        path = _get_str(js, "entity_path", what)
        entity_type, sep, name = path.partition("/")
        if not sep or not entity_type or not name:
            raise ZNodeError(f"{what}: invalid entity_path {path!r}")
        return entity_type, name
    raise ZNodeError(f"{what}: unsupported version {version}: {js!r}")


# ---------------------------------------------------------------------------------------------
# /latest_producer_id_block
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ProducerIdBlock:
    """The last block of producer ids handed out: ``first``..``last`` inclusive, to ``broker_id``."""
    broker_id: int
    first: int
    last: int

    @property
    def size(self) -> int:
        return self.last - self.first + 1


def encode_producer_id_block(broker_id: int, first: int, last: int) -> bytes:
    """``{"version":1,"broker":1,"block_start":"0","block_end":"999"}`` (bounds as strings)."""
    return _dumps({"version": 1, "broker": int(broker_id), "block_start": str(int(first)),
                   "block_end": str(int(last))})


def decode_producer_id_block(data) -> ProducerIdBlock | None:
    """None when the node has no data yet (no block handed out)."""
    what = LATEST_PRODUCER_ID_BLOCK
    js = _object(data, what, required=False)
    if js is None:
        return None
    try:
        first = int(_get_str(js, "block_start", what))
        last = int(_get_str(js, "block_end", what))
    except ValueError:
        raise ZNodeError(f"{what}: block bounds are not integers: {js!r}") from None
    return ProducerIdBlock(_get_int(js, "broker", what), first, last)


# ---------------------------------------------------------------------------------------------
# /log_dir_event_notification/log_dir_event_<seq>: a broker's log dir failed
# ---------------------------------------------------------------------------------------------
LOG_DIR_EVENT_PREFIX = "log_dir_event_"
LOG_DIR_FAILURE = 1


def log_dir_event_path(child: str = "") -> str:
    """A child of ``/log_dir_event_notification``; without ``child`` the prefix to create a
    persistent sequential node with."""
    return f"{LOG_DIR_EVENT_NOTIFICATION}/{child or LOG_DIR_EVENT_PREFIX}"


def encode_log_dir_event(broker_id: int) -> bytes:
    """``{"version":1,"broker":1,"event":1}`` (event 1: a log dir failed)."""
    return _dumps({"version": 1, "broker": int(broker_id), "event": LOG_DIR_FAILURE})


def decode_log_dir_event(data) -> int:
    """The broker whose log dir failed."""
    js = _object(data, LOG_DIR_EVENT_NOTIFICATION)
    return _get_int(js, "broker", LOG_DIR_EVENT_NOTIFICATION)
