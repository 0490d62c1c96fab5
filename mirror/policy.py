"""Replication policies, as Kafka's mirror-client: how a topic replicated from cluster
``alias`` is named on the target, how a remote topic's source cluster and upstream name are
read back, and the names of MirrorMaker's internal topics."""
from __future__ import annotations

SEPARATOR_CONFIG = "replication.policy.separator"
INTERNAL_TOPIC_SEPARATOR_ENABLED_CONFIG = "replication.policy.internal.topic.separator.enabled"
HEARTBEATS_TOPIC_NAME_CONFIG = "heartbeats.topic.name"
SOURCE_CLUSTER_ALIAS_CONFIG = "source.cluster.alias"
DEFAULT_HEARTBEATS_TOPIC = "heartbeats"


class DefaultReplicationPolicy:
    """``<alias><separator><topic>`` (``replication.policy.separator``, default ``.``)."""

    def __init__(self, props: dict | None = None):
        props = props or {}
        self.separator = props.get(SEPARATOR_CONFIG, ".")
        if not self.separator:
            raise ValueError(f"{SEPARATOR_CONFIG} must not be empty")
        internal_enabled = str(props.get(INTERNAL_TOPIC_SEPARATOR_ENABLED_CONFIG,
                                         "true")).lower() == "true"
        self.internal_separator = self.separator if internal_enabled else "."
        self.heartbeats_topic_name = props.get(HEARTBEATS_TOPIC_NAME_CONFIG,
                                               DEFAULT_HEARTBEATS_TOPIC)

    def format_remote_topic(self, source_cluster_alias: str, topic: str) -> str:
        return source_cluster_alias + self.separator + topic

    def topic_source(self, topic: str) -> str | None:
        """The source cluster's alias of a remote topic; None for a local topic."""
        head, sep, rest = topic.partition(self.separator)
        # as Java's split: trailing empty parts do not count
        return head if sep and rest.replace(self.separator, "") else None

    def upstream_topic(self, topic: str) -> str | None:
        source = self.topic_source(topic)
        return None if source is None else topic[len(source) + len(self.separator):]

    def original_topic(self, topic: str) -> str:
        """The topic's name on the cluster it was first written to, through any number of
        hops."""
        upstream = self.upstream_topic(topic)
        if upstream is None or upstream == topic:
            return topic
        return self.original_topic(upstream)

    def _internal_suffix(self) -> str:
        return self.internal_separator + "internal"

    def offset_syncs_topic(self, cluster_alias: str) -> str:
        return ("mm2-offset-syncs" + self.internal_separator + cluster_alias
                + self._internal_suffix())

    def checkpoints_topic(self, cluster_alias: str) -> str:
        return cluster_alias + self.internal_separator + "checkpoints" + self._internal_suffix()

    def heartbeats_topic(self) -> str:
        return self.heartbeats_topic_name

    def is_checkpoints_topic(self, topic: str) -> bool:
        return topic.endswith(self.internal_separator + "checkpoints" + self._internal_suffix())

    def is_heartbeats_topic(self, topic: str) -> bool:
        return self.original_topic(topic) == self.heartbeats_topic()

    def is_mm2_internal_topic(self, topic: str) -> bool:
        return topic.endswith(self._internal_suffix())

    def is_internal_topic(self, topic: str) -> bool:
        """MirrorMaker's, Kafka's own (``__``, ``.``) and Connect's (``-internal``,
        ``.internal``) topics."""
        return (self.is_mm2_internal_topic(topic) or topic.startswith(("__", "."))
                or topic.endswith(("-internal", ".internal")))


class IdentityReplicationPolicy(DefaultReplicationPolicy):
    """Topics keep their names (no cycle detection is possible); only heartbeats topics are
    renamed, so that they can still be traced. ``source.cluster.alias`` names the source of
    every other topic."""

    def __init__(self, props: dict | None = None):
        super().__init__(props)
        self.source_cluster_alias = (props or {}).get(SOURCE_CLUSTER_ALIAS_CONFIG)

    def _looks_like_heartbeat(self, topic: str) -> bool:
        return topic.endswith(self.heartbeats_topic())

    def format_remote_topic(self, source_cluster_alias: str, topic: str) -> str:
        if self._looks_like_heartbeat(topic):
            return super().format_remote_topic(source_cluster_alias, topic)
        return topic

    def topic_source(self, topic: str) -> str | None:
        if self._looks_like_heartbeat(topic):
            return super().topic_source(topic)
        return self.source_cluster_alias

    def upstream_topic(self, topic: str) -> str | None:
        if self._looks_like_heartbeat(topic):
            return super().upstream_topic(topic)
        return topic


POLICIES = {
    "org.apache.kafka.connect.mirror.DefaultReplicationPolicy": DefaultReplicationPolicy,
    "org.apache.kafka.connect.mirror.IdentityReplicationPolicy": IdentityReplicationPolicy,
    "DefaultReplicationPolicy": DefaultReplicationPolicy,
    "IdentityReplicationPolicy": IdentityReplicationPolicy,
}


def replication_policy(class_name: str, props: dict) -> DefaultReplicationPolicy:
    """The policy ``replication.policy.class`` names, configured with ``props``."""
    try:
        return POLICIES[class_name](props)
    except KeyError:
        raise ValueError(f"replication.policy.class: unknown policy {class_name!r} "
                         f"(known: {', '.join(sorted(POLICIES))})") from None
