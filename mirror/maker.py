"""connect-mirror-maker's configuration file, as Kafka's MirrorMakerConfig reads it:
``clusters`` names the aliases; ``<alias>.*`` are a cluster's client settings
(``<alias>.bootstrap.servers``...); ``<a>-><b>.enabled`` turns a flow on (off by default) and
``<a>-><b>.*`` override any connector setting for that flow; every other setting applies to
all flows. Each ordered pair of clusters gets a Connect worker on its target (group
``<source>-mm2``, internal topics ``mm2-{configs,offsets,status}.<source>.internal``,
ByteArrayConverter for keys, values and headers); an enabled flow runs the source, checkpoint
and heartbeat connectors, a disabled one only the heartbeat connector (heartbeats tell
reachability)."""
from __future__ import annotations

from typing import NamedTuple

from josefk.connect.api.config import ConfigException

BYTES = "org.apache.kafka.connect.converters.ByteArrayConverter"
CONNECTORS = ("MirrorSourceConnector", "MirrorCheckpointConnector", "MirrorHeartbeatConnector")
_CLIENT_ROLES = ("consumer.", "producer.", "admin.")
_WORKER_ONLY = ("group.id", "config.storage.topic", "offset.storage.topic",
                "status.storage.topic", "key.converter", "value.converter", "header.converter")


def _cluster_settings(role: str, props: dict[str, str]) -> dict[str, str]:
    """A cluster's settings for the connectors, as Kafka's MirrorMakerConfig passes them:
    ``consumer.*``, ``producer.*``, ``admin.*`` as ``<role>.consumer.*``..., the others as
    ``<role>.cluster.*``."""
    return {f"{role}.{k}" if k.startswith(_CLIENT_ROLES) else f"{role}.cluster.{k}": v
            for k, v in props.items()}


class Flow(NamedTuple):
    source: str
    target: str
    enabled: bool
    worker: dict[str, str]
    connectors: list[dict[str, str]]


def read_flows(props: dict[str, str], only_targets: list[str] | None = None) -> list[Flow]:
    """Every ordered pair of ``clusters`` (with a target in ``only_targets`` when given):
    its worker's settings and its connectors' configs."""
    aliases = [a.strip() for a in props.get("clusters", "").split(",") if a.strip()]
    if not aliases:
        raise ConfigException("clusters", props.get("clusters"),
                              "name the clusters' aliases, e.g. clusters = primary, backup")
    for alias in aliases:
        if not props.get(f"{alias}.bootstrap.servers"):
            raise ConfigException(f"{alias}.bootstrap.servers", None,
                                  f"cluster {alias} has no bootstrap servers")
    unknown = set(only_targets or ()) - set(aliases)
    if unknown:
        raise ConfigException("--clusters", ",".join(sorted(unknown)),
                              f"not in clusters ({', '.join(aliases)})")
    cluster_prefixes = tuple(f"{a}." for a in aliases)
    flow_prefixes = tuple(f"{a}->" for a in aliases)
    common = {k: v for k, v in props.items() if k != "clusters"
              and not k.startswith(cluster_prefixes) and not k.startswith(flow_prefixes)}

    def cluster(alias):
        prefix = f"{alias}."
        return {k[len(prefix):]: v for k, v in props.items() if k.startswith(prefix)}

    flows = []
    for source in aliases:
        for target in aliases:
            if source == target or (only_targets and target not in only_targets):
                continue
            prefix = f"{source}->{target}."
            overrides = {k[len(prefix):]: v for k, v in props.items() if k.startswith(prefix)}
            enabled = overrides.pop("enabled", "false").strip().lower() == "true"
            base = {**{k: v for k, v in common.items() if k not in _WORKER_ONLY},
                    **_cluster_settings("source", cluster(source)),
                    **_cluster_settings("target", cluster(target)),
                    **overrides, "source.cluster.alias": source, "target.cluster.alias": target}
            names = CONNECTORS if enabled else CONNECTORS[2:]
            connectors = [{**base, "name": name,
                           "connector.class": f"org.apache.kafka.connect.mirror.{name}"}
                          for name in names]
            worker = {**common, **cluster(target),
                      "group.id": f"{source}-mm2",
                      "config.storage.topic": f"mm2-configs.{source}.internal",
                      "offset.storage.topic": f"mm2-offsets.{source}.internal",
                      "status.storage.topic": f"mm2-status.{source}.internal",
                      "key.converter": BYTES, "value.converter": BYTES, "header.converter": BYTES}
            flows.append(Flow(source, target, enabled, worker, connectors))
    return flows
