"""What the three mirror connectors share, as Kafka's MirrorConnectorConfig: the clusters'
aliases, the replication policy, the clients' settings (``source.cluster.*`` /
``target.cluster.*``, overridden by ``source.consumer.*``, ``target.producer.*``,
``source.admin.*``... in Java's names, turned into confluent-kafka's), topic and group
filters, and the internal topics' creation."""
from __future__ import annotations

import re

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from josefk.connect.api.config import ConfigDef, ConfigException, Importance, NonEmptyString
from josefk.connect.api.errors import ConnectException
from josefk.connect.api.config import Type as T
from josefk.connect.runtime.worker_config import to_librdkafka
from josefk.mirror.policy import DefaultReplicationPolicy, replication_policy

ADMIN_TIMEOUT = 30.0
_ROLES = ("consumer.", "producer.", "admin.")

TOPICS_EXCLUDE_DEFAULT = r".*[\-\.]internal, .*\.replica, __.*"
GROUPS_EXCLUDE_DEFAULT = r"console-consumer-.*, connect-.*, __.*"


def common_config() -> ConfigDef:
    return (ConfigDef()
            .define("source.cluster.alias", T.STRING, validator=NonEmptyString(),
                    importance=Importance.HIGH, documentation="Alias of source cluster")
            .define("target.cluster.alias", T.STRING, "target", NonEmptyString(),
                    importance=Importance.HIGH, documentation="Alias of target cluster")
            .define("replication.policy.class", T.STRING,
                    "org.apache.kafka.connect.mirror.DefaultReplicationPolicy",
                    importance=Importance.LOW,
                    documentation="Class which defines the remote topic naming convention.")
            .define("replication.policy.separator", T.STRING, ".", NonEmptyString(),
                    importance=Importance.LOW,
                    documentation="Separator used in remote topic naming convention.")
            .define("replication.policy.internal.topic.separator.enabled", T.BOOLEAN, True,
                    importance=Importance.LOW,
                    documentation="Whether the separator also names the internal topics")
            .define("heartbeats.topic.name", T.STRING, "heartbeats", importance=Importance.LOW,
                    documentation="The heartbeats topic's name"))


def topic_filter_config(d: ConfigDef) -> ConfigDef:
    return (d.define("topics", T.LIST, ".*", importance=Importance.HIGH,
                     documentation="Topics to replicate. Supports comma-separated topic names "
                                   "and regexes.")
            .define("topics.exclude", T.LIST, TOPICS_EXCLUDE_DEFAULT, importance=Importance.HIGH,
                    documentation="List of topics and/or regexes that should not be "
                                  "replicated."))


class MirrorConfig:
    """Parsed settings of one mirror connector or task, with its clients' settings."""

    def __init__(self, definition: ConfigDef, props: dict[str, str]):
        self.props = dict(props)
        self.values = definition.parse(props)
        self.source = self.values["source.cluster.alias"]
        self.target = self.values["target.cluster.alias"]
        policy_props = {k: str(v) for k, v in self.values.items()
                        if k.startswith("replication.policy.") or k == "heartbeats.topic.name"}
        policy_props["source.cluster.alias"] = self.source
        policy_props["replication.policy.internal.topic.separator.enabled"] = str(
            self.values["replication.policy.internal.topic.separator.enabled"]).lower()
        try:
            self.policy: DefaultReplicationPolicy = replication_policy(
                self.values["replication.policy.class"], policy_props)
        except ValueError as e:
            raise ConfigException(str(e)) from None

    def __getitem__(self, name):
        return self.values[name]

    def client(self, cluster: str, role: str) -> dict:
        """confluent-kafka settings of a ``role`` (consumer, producer, admin) client of
        ``cluster`` (source or target)."""
        prefix = f"{cluster}.cluster."
        java = {k[len(prefix):]: v for k, v in self.props.items()
                if k.startswith(prefix) and k[len(prefix):] != "alias"
                and not k[len(prefix):].startswith(_ROLES)}
        for more in (f"{role}.", f"{cluster}.{role}."):
            java.update({k[len(more):]: v for k, v in self.props.items() if k.startswith(more)})
        if "bootstrap.servers" not in java:
            raise ConfigException(f"{prefix}bootstrap.servers", None,
                                  f"Missing required configuration \"{prefix}bootstrap.servers"
                                  f"\" which has no default value.")
        return to_librdkafka(java)

    def admin(self, cluster: str) -> AdminClient:
        return AdminClient(self.client(cluster, "admin"))


class Filter:
    """Kafka's include/exclude regex lists (settings ``<setting>`` and ``<setting>.exclude``),
    each matching whole names (Java's matches)."""

    def __init__(self, include: list[str], exclude: list[str], setting: str):
        def compile_all(patterns, name):
            try:
                return [re.compile(p.strip()) for p in patterns if p.strip()]
            except re.error as e:
                raise ConfigException(name, ",".join(patterns), f"not a regex: {e}") from None
        self.include = compile_all(include, setting)
        self.exclude = compile_all(exclude, f"{setting}.exclude")

    def __call__(self, name: str) -> bool:
        return (any(p.fullmatch(name) for p in self.include)
                and not any(p.fullmatch(name) for p in self.exclude))


def validate_offsets(offsets: dict, partition_keys: dict[str, type], only_zero: bool) -> None:
    """KIP-875 offsets for a mirror connector, as Kafka's MirrorUtils checks them: partitions
    with these keys; offsets ``{"offset": n}`` (n >= 0, or only 0 where the offset is unused);
    null offsets (resets) always."""
    for partition, offset in offsets.items():
        if offset is None:
            continue
        if not isinstance(partition, dict):
            raise ConnectException("Source partitions may not be null")
        for key, kind in partition_keys.items():
            if not isinstance(partition.get(key), kind) or isinstance(partition.get(key), bool):
                raise ConnectException(f"Source partition {partition} must have a "
                                       f"{kind.__name__} {key!r}")
        value = offset.get("offset") if isinstance(offset, dict) else None
        if not isinstance(value, int) or isinstance(value, bool) or value < 0 or \
                (only_zero and value != 0):
            wanted = "0" if only_zero else "a non-negative integer"
            raise ConnectException(f"Source offset {offset} for {partition} must be "
                                   f"{{\"offset\": {wanted}}}")


def split(items: list[str], max_tasks: int) -> list[str]:
    """``items`` dealt round-robin to at most ``max_tasks`` tasks, each as a comma list (as
    Kafka's ConnectorUtils.groupPartitions); no task without items."""
    count = min(max_tasks, len(items))
    return [",".join(items[task::count]) for task in range(count)]


def create_compacted_topic(admin: AdminClient, topic: str, replication_factor: int,
                           partitions: int = 1) -> None:
    """Create one of MirrorMaker's internal topics unless it is there."""
    futures = admin.create_topics([NewTopic(topic, partitions, replication_factor,
                                            config={"cleanup.policy": "compact"})])
    try:
        futures[topic].result(ADMIN_TIMEOUT)
    except KafkaException as e:
        if e.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
            raise
