"""Configs changed at run time (AlterConfigs, IncrementalAlterConfigs), applied without a
restart.

Broker configs come in Kafka's layers, highest first: this broker's dynamic overrides
(DYNAMIC_BROKER_CONFIG), the cluster-wide dynamic default (DYNAMIC_DEFAULT_BROKER_CONFIG), the
static server.properties/flags (STATIC_BROKER_CONFIG) and Kafka's defaults (DEFAULT_CONFIG).
A single broker keeps its dynamic layers in ``josefk-dynamic-configs.json`` in its first log
dir; in a cluster they are ZooKeeper's ``/config/brokers/<id>`` and ``/config/brokers/<default>``
and topic overrides ``/config/topics/<t>``, each write announced under ``/config/changes``,
which every broker watches. Changing a layer rewrites ``BrokerConfig.props`` and gives every
live partition its new LogConfig. Client metrics subscriptions (KIP-714, ``client-metrics``
resources) are kept the same way (``/config/client-metrics/<name>``) and handed to the broker's
`ClientMetricsManager`; so are group configs (``/config/groups/<group>``, `broker.group_configs`)
and cluster links (``/config/cluster-links/<name>``, handed to `broker.links`), their passwords
(the source's credentials) encrypted with ``password.encoder.secret`` where they are kept.
"""
from __future__ import annotations

import asyncio
import json
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING

from josefk.broker.security import tls_reload
from josefk.broker.client_metrics import InvalidSubscription
from josefk.broker.config import DEFAULTS, TOPIC_DEFAULTS, ConfigError
from josefk.broker.configs import (BROKER_TO_TOPIC, LINK_PASSWORD_CONFIGS,
                                   validate_topic_configs)
from josefk.broker.control.metadata import MetadataError
from josefk.broker.replication.replica import ReplicaManager, topic_log_config
from josefk.broker.security.password_encoder import PasswordEncoder
from josefk.storage.config import LogConfig
from josefk.wire import errors
from josefk.zk import configs as zc
from josefk.zk import znodes as zn

if TYPE_CHECKING:
    from josefk.broker.client_metrics import ClientMetricsManager
    from josefk.broker.config import BrokerConfig
    from josefk.broker.control.metadata import MetadataStore
    from josefk.broker.group_configs import GroupConfigs
    from josefk.broker.security.listeners import ListenerSecurity
    from josefk.storage.cleaner import LogCleaner
    from josefk.storage.manager import LogManager
    from josefk.zk.client import ZkClient

log = logging.getLogger("josefk.dynamic")

# Kafka's Kerberos login settings, dynamic as its listener configs are, and how each parses.
# josefk has no GSSAPI login, so a change is kept and described, with no effect, as on a Kafka
# broker without a GSSAPI listener.
_KERBEROS_LOGIN = {"sasl.kerberos.kinit.cmd": str, "sasl.kerberos.min.time.before.relogin": int,
                   "sasl.kerberos.principal.to.local.rules": str,
                   "sasl.kerberos.ticket.renew.jitter": float,
                   "sasl.kerberos.ticket.renew.window.factor": float}

# Broker configs that take effect at run time (a subset of Kafka's dynamic broker configs:
# the ones josefk reads after start-up, and the Kerberos login settings).
DYNAMIC_BROKER_CONFIGS = frozenset(TOPIC_DEFAULTS.values()) | set(_KERBEROS_LOGIN) | {
    "log.retention.ms", "log.retention.minutes", "log.retention.hours", "log.roll.ms",
    "log.roll.hours", "log.cleaner.threads",
}


def validate_broker_configs(configs: dict, topic_defaults: dict, cleaner_threads: int) -> None:
    """Raise MetadataError(INVALID_CONFIG) naming the key for a config that cannot change at run
    time or a malformed value. Log defaults are checked by their topic config's rules (against
    the current ``topic_defaults`` for the others); ``log.cleaner.threads`` moves within half
    and double the ``cleaner_threads`` running, as Kafka allows."""
    for name, value in configs.items():
        if tls_reload.reloadable(name):  # checked by loading them (tls_reload.check)
            continue
        if name not in DYNAMIC_BROKER_CONFIGS:
            raise MetadataError(errors.INVALID_CONFIG,
                                f"Cannot update these configs dynamically: {name}")
        topic_name = BROKER_TO_TOPIC.get(name)
        try:
            if topic_name is not None:
                validate_topic_configs({topic_name: value}, topic_defaults)
            elif value is None:
                raise MetadataError(errors.INVALID_CONFIG, name)
            elif name in _KERBEROS_LOGIN:
                _KERBEROS_LOGIN[name](value)
            elif not value.strip().lstrip("-").isdigit():
                raise MetadataError(errors.INVALID_CONFIG, name)
        except (MetadataError, ValueError):
            raise MetadataError(errors.INVALID_CONFIG,
                                f"Invalid value {value} for configuration {name}") from None
        if name == "log.cleaner.threads":
            _check_cleaner_threads(int(value), cleaner_threads)


def _check_cleaner_threads(threads: int, current: int) -> None:
    problem = ("should be at least 1" if threads < 1 else
               f"cannot be reduced to less than half the current value {current}"
               if threads < current // 2 else
               f"cannot be increased to more than double the current value {current}"
               if threads > current * 2 else None)
    if problem:
        raise MetadataError(errors.INVALID_CONFIG,
                            f"Invalid value {threads} for configuration log.cleaner.threads: "
                            f"Log cleaner threads {problem}")


class DynamicConfigs:
    """The dynamic layers of one broker and where they are kept."""

    FILE = "josefk-dynamic-configs.json"

    def __init__(self, config: BrokerConfig, metadata: MetadataStore, zk: ZkClient | None,
                 replicas: ReplicaManager, logs: LogManager, cleaner: LogCleaner,
                 listeners: list[ListenerSecurity], client_metrics: ClientMetricsManager,
                 group_configs: GroupConfigs):
        self.config = config
        self.metadata = metadata
        self._zk = zk  # None on a single broker: its layers are kept in its first log dir
        self.replicas = replicas
        self.logs = logs
        self.cleaner = cleaner
        self.listeners = listeners
        self.client_metrics_manager = client_metrics
        self.per_broker: dict[str, str] = {}
        self.cluster_default: dict[str, str] = {}
        self.client_metrics: dict[str, dict[str, str]] = {}  # subscription name -> configs
        # group id -> group config overrides: GroupConfigs' own dict, kept up to date here
        self.groups: dict[str, dict[str, str]] = group_configs.groups
        self.links: dict[str, dict[str, str]] = {}  # cluster link name -> its configs
        self.passwords = PasswordEncoder.from_config(config)  # None: no password.encoder.secret
        # told a link's name when it changes, and a topic's (None: any) when its configs do
        self.link_listeners = []
        self.topic_listeners = []
        self._path = Path(config.log_dirs[0]) / self.FILE
        self._seen = None  # the last /config/changes sequence handled
        self._lock = asyncio.Lock()
        # a topic's configs arrive after the topic itself (and change): its partitions follow
        metadata.listeners.append(
            lambda event, t: self._reconfigure(t.name) if event == "configured" else None)
        if zk is None and self._path.exists():
            data = json.loads(self._path.read_text())
            self.per_broker, self.cluster_default = data["broker"], data["default"]
            self._apply_broker_layers()
            self._apply_client_metrics(data.get(zn.CONFIG_CLIENT_METRICS, {}))
            self._set_groups(data.get(zn.CONFIG_GROUPS, {}))
            self.links.update(self._loaded_links(data.get(zn.CONFIG_CLUSTER_LINKS, {})))

    async def start(self) -> None:
        """Cluster mode: load this broker's layers and follow every later change."""
        if self._zk is None:
            return
        me = str(self.config.node_id)
        self.per_broker = await self._zk.run(zc.read_entity, zn.CONFIG_BROKERS, me)
        self.cluster_default = await self._zk.run(zc.read_entity, zn.CONFIG_BROKERS,
                                                  zc.DEFAULT_BROKER)
        self._apply_broker_layers()
        self._apply_client_metrics(await self._zk.run(zc.read_entities,
                                                      zn.CONFIG_CLIENT_METRICS))
        self._set_groups(await self._zk.run(zc.read_entities, zn.CONFIG_GROUPS))
        self.links.update(self._loaded_links(
            await self._zk.run(zc.read_entities, zn.CONFIG_CLUSTER_LINKS)))
        await self._zk.watch_children(zn.CONFIG_CHANGES, self._on_changes)

    # -- changes ----------------------------------------------------------------------------------
    async def alter_broker(self, resource_name: str, configs: dict) -> None:
        """Replace the overrides of broker ``resource_name`` ("" = the cluster default)."""
        default = resource_name == ""
        if self._zk is not None:
            entity = zc.DEFAULT_BROKER if default else resource_name
            await self._zk.run(zc.write_entity, zn.CONFIG_BROKERS, entity, configs)
        if default:
            self.cluster_default = dict(configs)
        else:
            self.per_broker = dict(configs)
        self._save()
        self._apply_broker_layers()

    async def alter_client_metrics(self, name: str, configs: dict) -> None:
        """Replace subscription ``name`` (no configs: delete it); validated by the caller."""
        if self._zk is not None:
            await self._zk.run(zc.write_entity, zn.CONFIG_CLIENT_METRICS, name, configs)
        self._apply_client_metrics({name: configs})
        self._save()

    async def alter_group(self, group_id: str, configs: dict) -> None:
        """Replace ``group_id``'s group config overrides (none: remove them); validated by the
        caller."""
        if self._zk is not None:
            await self._zk.run(zc.write_entity, zn.CONFIG_GROUPS, group_id, configs)
        self._set_group(group_id, configs)
        self._save()

    async def alter_link(self, name: str, configs: dict) -> None:
        """Replace cluster link ``name``'s configs (none: delete it); validated by the
        caller."""
        stored = self.stored_link(configs)
        if self._zk is not None:
            await self._zk.run(zc.write_entity, zn.CONFIG_CLUSTER_LINKS, name, stored)
        self._set_link(name, configs)
        self._save()

    def stored_link(self, configs: dict) -> dict:
        """A link's configs as they are kept: its passwords encrypted. INVALID_CONFIG where it
        has passwords and this broker no password.encoder.secret, as Confluent's links."""
        secret = [k for k in LINK_PASSWORD_CONFIGS if configs.get(k)]
        if not secret:
            return configs
        if self.passwords is None:
            raise MetadataError(errors.INVALID_CONFIG, (
                f"Password encoder secret not configured: the destination cluster's brokers "
                f"need password.encoder.secret to keep the link's {', '.join(secret)}"))
        return {k: self.passwords.encode(v) if k in secret else v for k, v in configs.items()}

    def _loaded_link(self, name: str, configs: dict) -> dict | None:
        """A kept link's configs with their passwords decrypted (None: they cannot be)."""
        secret = [k for k in LINK_PASSWORD_CONFIGS if configs.get(k)]
        if not secret:
            return configs
        try:
            if self.passwords is None:
                raise ConfigError("password.encoder.secret is not set on this broker")
            return {k: self.passwords.decode(v) if k in secret else v
                    for k, v in configs.items()}
        except ConfigError as e:
            log.error("cluster link %s is left out: its %s cannot be decrypted: %s", name,
                      ", ".join(secret), e)
            return None

    def _loaded_links(self, links: dict) -> dict:
        loaded = {name: self._loaded_link(name, configs) for name, configs in links.items()
                  if configs}
        return {name: configs for name, configs in loaded.items() if configs is not None}

    def _set_link(self, name: str, configs: dict) -> None:
        if self.links.get(name, {}) == configs:
            return  # this broker's own write, announced back
        if configs:
            self.links[name] = dict(configs)
        else:
            self.links.pop(name, None)
        for fn in self.link_listeners:
            fn(name)

    def _set_groups(self, groups: dict) -> None:
        self.groups.clear()
        self.groups.update(groups)

    def _set_group(self, group_id: str, configs: dict) -> None:
        if configs:
            self.groups[group_id] = dict(configs)
        else:
            self.groups.pop(group_id, None)

    def _save(self) -> None:
        """A single broker's layers, in its first log dir."""
        if self._zk is not None:
            return
        tmp = self._path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"broker": self.per_broker, "default": self.cluster_default,
                                   zn.CONFIG_CLIENT_METRICS: self.client_metrics,
                                   zn.CONFIG_GROUPS: self.groups,
                                   zn.CONFIG_CLUSTER_LINKS: {
                                       name: self.stored_link(configs)
                                       for name, configs in self.links.items()}}, indent=1))
        os.replace(tmp, self._path)

    async def alter_topic(self, name: str, configs: dict) -> None:
        await self.metadata.alter_topic_configs(name, configs)  # "configured" follows
        if self._zk is not None:  # announced back later: this broker's partitions follow now
            self._reconfigure(name)

    # -- applying ---------------------------------------------------------------------------------
    def _apply_broker_layers(self) -> None:
        cfg = self.config
        cfg.props = {**DEFAULTS, **cfg.explicit, **self.cluster_default, **self.per_broker}
        self.logs.default_config = LogConfig.from_props({}, cfg.topic_defaults())
        self.cleaner.resize(cfg.int("log.cleaner.threads"))
        self._reconfigure(None)
        tls_reload.apply(cfg, self.listeners)

    def _apply_client_metrics(self, subscriptions: dict) -> None:
        for name, configs in subscriptions.items():
            try:
                self.client_metrics_manager.update(name, configs)
            except InvalidSubscription as e:  # written by another tool: keep the others
                log.error("client metrics subscription %s is invalid: %s", name, e)
                continue
            if configs:
                self.client_metrics[name] = dict(configs)
            else:
                self.client_metrics.pop(name, None)

    def _reconfigure(self, topic: str | None) -> None:
        """Give the live partitions of ``topic`` (None: all) their current LogConfig."""
        for part in list(self.replicas.partitions.values()):
            if topic is None or part.topic == topic:
                meta = self.metadata.topics.get(part.topic)
                ReplicaManager.reconfigure(
                    part, topic_log_config(self.config, meta.configs if meta else {}))
        for fn in self.topic_listeners:
            fn(topic)

    def _on_changes(self, children) -> None:
        asyncio.ensure_future(self._process(children))

    async def _process(self, children) -> None:
        async with self._lock:
            seqs = sorted((zn.config_change_sequence(c), c) for c in children)
            if self._seen is None:  # the first call: what is there was loaded at start-up
                self._seen = seqs[-1][0] if seqs else -1
                return
            for seq, child in seqs:
                if seq <= self._seen:
                    continue
                self._seen = seq
                try:
                    await self._reload(await self._zk.run(zc.read_change, child))
                except Exception:  # noqa: BLE001 - one bad notification must not stop the rest
                    log.exception("cannot apply config change %s", child)

    async def _reload(self, change) -> None:
        if change is None:
            return
        entity_type, name = change
        if entity_type == zn.CONFIG_TOPICS:
            t = self.metadata.topics.get(name)
            if t is not None:
                t.configs = await self._zk.run(zc.read_entity, entity_type, name)
                self._reconfigure(name)
        elif entity_type == zn.CONFIG_CLUSTER_LINKS:
            configs = await self._zk.run(zc.read_entity, entity_type, name)
            configs = configs and self._loaded_link(name, configs)
            if configs is not None:
                self._set_link(name, configs)
        elif entity_type == zn.CONFIG_GROUPS:
            self._set_group(name, await self._zk.run(zc.read_entity, entity_type, name))
        elif entity_type == zn.CONFIG_CLIENT_METRICS:
            self._apply_client_metrics(
                {name: await self._zk.run(zc.read_entity, entity_type, name)})
        elif entity_type == zn.CONFIG_BROKERS:
            configs = await self._zk.run(zc.read_entity, entity_type, name)
            if name == zc.DEFAULT_BROKER:
                self.cluster_default = configs
            elif name == str(self.config.node_id):
                self.per_broker = configs
            else:
                return
            self._apply_broker_layers()
