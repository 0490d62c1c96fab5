"""Cluster links and mirror topics (issue 30; Confluent Cluster Linking's names).

A cluster link names a source cluster (``bootstrap.servers`` and the settings below). Links
are config entities of this cluster (`dynamic.DynamicConfigs.links`: ZooKeeper's
``/config/cluster-links/<name>``, announced to every broker; a single broker keeps them with
its dynamic configs), written with AlterConfigs on resource type ``CLUSTER_LINK``.

A mirror topic is a topic with the config ``josefk.mirror.link`` (its link) and
``josefk.mirror.state`` ``ACTIVE`` (``STOPPED`` once promoted or failed over). While active,
its partitions refuse producers (`Partition.mirror`), and each one led here is fetched from
the source partition's leader by the link's fetchers (`replication.mirror`) into the log at
the source's offsets. The leader of a mirror topic's partition 0 also follows the source
topic: partitions added there are added here, and its topic configs are copied on
``topic.config.sync.ms``.
"""
from __future__ import annotations

import asyncio
import json
import logging
import re
import time
from typing import Protocol

from josefk.broker.channel import BrokerChannel, ChannelError
from josefk.broker.config import TOPIC_CONFIG_NAMES, bootstrap_addresses
from josefk.broker.configs import MIRROR_ACTIVE as ACTIVE
from josefk.broker.configs import MIRROR_CONFIGS
from josefk.broker.configs import MIRROR_LINK as LINK
from josefk.broker.configs import MIRROR_RESUME as RESUME
from josefk.broker.configs import MIRROR_SOURCE_ID as SOURCE_ID
from josefk.broker.configs import MIRROR_STATE as STATE
from josefk.broker.control.metadata import MetadataError
from josefk.broker.security.listeners import SASL_PROTOCOLS, TLS_PROTOCOLS, client_ssl_context
from josefk.broker.security.sasl import client_credentials
from josefk.broker.replication.mirror import MirrorFetcherManager
from josefk.wire import errors
from josefk.wire.apis import DESCRIBE_CONFIGS, FIND_COORDINATOR, LIST_GROUPS, METADATA, OFFSET_FETCH
from josefk.wire.types import ZERO_UUID, uuid_to_base64

log = logging.getLogger("josefk.links")

CLUSTER_LINK = 100  # josefk's config resource type of links (Kafka has no links)
# what DescribeConfigs of a link answers when asked for it by name: the mirror partitions this
# broker leads on the link, their state and lag (JSON; `LinkManager.partition_status`)
PARTITIONS_KEY = "josefk.mirror.partitions"
# how the link reaches the source: Kafka's client settings (and librdkafka's ssl.ca.location)
SECURITY_CONFIGS = ("sasl.mechanism", "sasl.jaas.config", "ssl.truststore.location",
                    "ssl.truststore.password", "ssl.truststore.type",
                    "ssl.truststore.certificates", "ssl.ca.location", "ssl.keystore.location",
                    "ssl.keystore.password", "ssl.keystore.type", "ssl.key.password",
                    "ssl.endpoint.identification.algorithm")
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
# link settings and their defaults (Cluster Linking's names; ``groups`` and
# ``groups.exclude`` as MirrorMaker 2's)
LINK_DEFAULTS = {"bootstrap.servers": "", "security.protocol": "PLAINTEXT",
                 "metadata.max.age.ms": "300000", "topic.config.sync.ms": "5000",
                 "consumer.offset.sync.enable": "false", "consumer.offset.sync.ms": "30000",
                 "consumer.offset.group.filters": "", "groups": "",
                 "groups.exclude": "console-consumer-.*,connect-.*,__.*",
                 **dict.fromkeys(SECURITY_CONFIGS, ""),
                 "ssl.endpoint.identification.algorithm": "https"}
METADATA_VERSION, DESCRIBE_CONFIGS_VERSION = 12, 4
LIST_GROUPS_VERSION, FIND_COORDINATOR_VERSION, OFFSET_FETCH_VERSION = 4, 3, 7
TOPIC_RESOURCE, TOPIC_CONFIG_SOURCE = 2, 1
RETRY_S = 1.0


def validate_link(name: str, configs: dict) -> None:
    """Raise MetadataError for a link config this broker cannot run (none: a deletion)."""
    if not name:
        raise MetadataError(errors.INVALID_REQUEST, "Cluster link name must not be empty")
    if not configs:
        return
    for key, value in configs.items():
        if key not in LINK_DEFAULTS:
            raise MetadataError(errors.INVALID_CONFIG, f"Unknown cluster link config: {key}")
        if key.endswith(".ms") and not (value or "").isdigit():
            raise MetadataError(errors.INVALID_CONFIG,
                                f"Invalid value {value} for configuration {key}")
    if not configs.get("bootstrap.servers"):
        raise MetadataError(errors.INVALID_CONFIG,
                            f"Cluster link {name} needs bootstrap.servers (the source cluster)")
    try:
        bootstrap_addresses(configs["bootstrap.servers"])
    except ValueError as e:
        raise MetadataError(errors.INVALID_CONFIG, str(e)) from None
    try:
        LinkSecurity({**LINK_DEFAULTS, **configs})
    except ValueError as e:
        raise MetadataError(errors.INVALID_CONFIG, f"Cluster link {name}: {e}") from None
    if configs.get("consumer.offset.sync.enable", "false").lower() not in ("true", "false"):
        raise MetadataError(errors.INVALID_CONFIG, "Invalid value "
                            f"{configs['consumer.offset.sync.enable']} for configuration "
                            "consumer.offset.sync.enable: Expected value to be either true or "
                            "false")
    try:
        GroupFilter({**LINK_DEFAULTS, **configs})
    except ValueError as e:
        raise MetadataError(errors.INVALID_CONFIG, str(e)) from None


class LinkSecurity:
    """How a link's channels reach the source (what `channel.BrokerChannel` takes as
    ``security``): a TLS context for SSL and SASL_SSL, the SASL mechanism and credentials for
    SASL_PLAINTEXT and SASL_SSL. ValueError for settings it cannot use."""

    def __init__(self, configs: dict):
        protocol = (configs.get("security.protocol") or "PLAINTEXT").upper()
        if protocol not in ("PLAINTEXT", *TLS_PROTOCOLS, *SASL_PROTOCOLS):
            raise ValueError(f"Invalid value {protocol} for configuration security.protocol")
        get = lambda k: configs.get(k) or None  # noqa: E731 - unset settings are ""
        self.ssl_context = None
        if protocol in TLS_PROTOCOLS:
            try:
                self.ssl_context = client_ssl_context(get)
            except Exception as e:  # noqa: BLE001 - ssl, OSError, ConfigError: all one answer
                raise ValueError(f"cannot load the TLS settings: {e}") from None
        self.mechanism = self.username = self.password = None
        if protocol in SASL_PROTOCOLS:
            self.mechanism = (configs.get("sasl.mechanism") or "GSSAPI").upper()
            if self.mechanism not in SASL_MECHANISMS:
                raise ValueError(f"sasl.mechanism {self.mechanism} is not supported (only "
                                 f"{', '.join(SASL_MECHANISMS)})")
            credentials = client_credentials({k: v for k, v in configs.items() if v})
            if credentials is None:
                raise ValueError("SASL needs sasl.jaas.config with username and password")
            self.username, self.password = credentials


class GroupFilter:
    """Which source groups a link copies the offsets of: Cluster Linking's
    ``consumer.offset.group.filters`` (JSON ``{"groupFilters": [{"name", "patternType":
    LITERAL|PREFIXED, "filterType": INCLUDE|EXCLUDE}]}``, ``*`` every group: a group some
    INCLUDE names and no EXCLUDE), else MirrorMaker 2's ``groups`` and ``groups.exclude``
    (comma-separated regular expressions); neither: none. ValueError for a malformed one."""

    def __init__(self, configs: dict):
        self.include, self.exclude = [], []
        raw = configs.get("consumer.offset.group.filters", "")
        if raw:
            try:
                filters = json.loads(raw)["groupFilters"]
                for f in filters:
                    kind = f.get("patternType", "LITERAL").upper()
                    if kind not in ("LITERAL", "PREFIXED"):
                        raise ValueError(f"patternType {kind}")
                    rule = (f["name"], kind)
                    which = f.get("filterType", "INCLUDE").upper()
                    if which not in ("INCLUDE", "EXCLUDE"):
                        raise ValueError(f"filterType {which}")
                    (self.include if which == "INCLUDE" else self.exclude).append(rule)
            except (ValueError, KeyError, TypeError, AttributeError) as e:
                raise ValueError(f"Invalid consumer.offset.group.filters {raw}: {e}") from None
        elif configs.get("groups"):
            for key, rules in (("groups", self.include), ("groups.exclude", self.exclude)):
                for pattern in configs.get(key, "").split(","):
                    if pattern.strip():
                        try:
                            rules.append((re.compile(pattern.strip()), "REGEX"))
                        except re.error as e:
                            raise ValueError(f"Invalid {key} pattern {pattern}: {e}") from None

    @staticmethod
    def _matches(group: str, rule) -> bool:
        name, kind = rule
        if kind == "REGEX":
            return name.fullmatch(group) is not None
        if kind == "PREFIXED":
            return group.startswith(name)
        return name in ("*", group)

    def __call__(self, group: str) -> bool:
        return (any(self._matches(group, r) for r in self.include)
                and not any(self._matches(group, r) for r in self.exclude))


class GroupOffsets(Protocol):
    """The group coordinator's offsets (`coordinator.group.GroupCoordinator`)."""

    def fetch_offsets(self, group_id, partitions=None): ...

    async def commit_offsets(self, group_id, generation_id, member_id, group_instance_id,
                             retention_time_ms, offsets) -> dict: ...


def mirror_link(configs: dict) -> str | None:
    """The link an active mirror topic's configs name, or None."""
    link = configs.get(LINK)
    return link if link and configs.get(STATE, ACTIVE) == ACTIVE else None


class LinkManager:
    """This broker's cluster links and the mirror partitions it leads."""

    def __init__(self, config, metadata, replicas, links: dict[str, dict],
                 groups: GroupOffsets):
        self.config = config
        self.metadata = metadata
        self.replicas = replicas
        self.groups = groups
        self.configs = links  # link name -> its configs (DynamicConfigs keeps it)
        self.links: dict[str, Link] = {}
        self._closing: set[asyncio.Future] = set()  # links stopping
        replicas.role_listeners.append(lambda part, _leader: self._place(part))

    def start(self) -> None:
        for name in list(self.configs):
            self.link_changed(name)

    async def stop(self) -> None:
        """Stop every link and wait until each has."""
        for link in self.links.values():
            self._closing.add(link.close())
        self.links.clear()
        await asyncio.gather(*self._closing, return_exceptions=True)

    def link_changed(self, name: str) -> None:
        """Link ``name`` was created, changed or deleted: its mirrors start over."""
        old = self.links.pop(name, None)
        if old is not None:
            closing = old.close()
            self._closing.add(closing)
            closing.add_done_callback(self._closing.discard)
        configs = self.configs.get(name)
        if configs:
            try:
                security = LinkSecurity({**LINK_DEFAULTS, **configs})
            except ValueError as e:  # e.g. a truststore that is on another broker only
                log.error("cluster link %s cannot run on this broker: %s", name, e)
            else:
                self.links[name] = Link(name, {**LINK_DEFAULTS, **configs}, self, security)
        self.topic_changed(None)

    def topic_changed(self, topic: str | None) -> None:
        """``topic``'s configs (None: any topic's) changed: its partitions follow them."""
        for part in list(self.replicas.partitions.values()):
            if topic is None or part.topic == topic:
                self._place(part)

    def _place(self, part) -> None:
        meta = self.metadata.topics.get(part.topic)
        hosted = self.replicas.partitions.get((part.topic, part.index)) is part
        name = mirror_link(meta.configs) if meta is not None and hosted else None
        stopped = hosted and part.mirror is not None and name is None
        part.mirror = name
        if stopped and part.is_leader:
            aborted = part.abort_open_transactions()
            if aborted:
                log.info("%s-%d stopped mirroring: the source's open transactions of producers "
                         "%s aborted", part.topic, part.index, aborted)
        mine = self.links.get(name) if part.is_leader else None
        for link in self.links.values():
            if link is not mine:
                link.unfollow(part)
        if mine is not None:
            mine.follow(part)
            mine.maybe_resume(part, meta.configs.get(RESUME))

    def status(self):
        """`PartitionStatus` of each mirror partition led here."""
        for name, link in list(self.links.items()):
            for key in list(link.wanted):
                yield link.status(key)

    def partition_status(self, name: str) -> list[dict]:
        """What DescribeConfigs answers for `PARTITIONS_KEY`: link ``name``'s partitions led
        here, as dicts."""
        return [s.as_dict() for s in self.status() if s.link == name]


class PartitionStatus:
    """A mirror partition's state: ``lag_records``, the records it is behind the source's high
    watermark (None until the source answered); ``lag_bytes``, those in bytes, estimated from
    the bytes per offset of the batches last mirrored (0 once caught up); ``lag_ms``, how long
    since it was last caught up with the source's high watermark (0 while caught up and the
    source answers; since it began mirroring here if never), so it grows while the link is cut
    or the partition stopped; ``latency_ms``, how old its last appended batch was when
    appended; ``failure``, why it stopped (None while it mirrors); ``skipped``, offsets of the
    source never mirrored because an operator resumed it past them (since it is led here)."""

    __slots__ = ("link", "topic", "partition", "lag_records", "lag_bytes", "lag_ms",
                 "latency_ms", "failure", "skipped", "resumes")

    def __init__(self, link, topic, partition, lag_records, lag_bytes, lag_ms, latency_ms,
                 failure, skipped, resumes):
        self.link, self.topic, self.partition = link, topic, partition
        self.lag_records, self.lag_bytes, self.lag_ms = lag_records, lag_bytes, lag_ms
        self.latency_ms, self.failure = latency_ms, failure
        self.skipped, self.resumes = skipped, resumes

    def as_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__slots__}


class Link:
    """One cluster link on this broker: the source's metadata, a channel per source broker,
    the fetchers, and the partitions whose source leader is still to be found."""

    def __init__(self, name: str, configs: dict, manager: LinkManager,
                 security: LinkSecurity):
        self.name = name
        self.manager = manager
        self.security = security if security.ssl_context or security.mechanism else None
        self.bootstrap = bootstrap_addresses(configs["bootstrap.servers"])
        self.max_age_s = int(configs["metadata.max.age.ms"]) / 1000
        self.sync_s = int(configs["topic.config.sync.ms"]) / 1000
        self.channels: dict[int, BrokerChannel] = {}
        self.fetchers = MirrorFetcherManager(self, self.channels.__getitem__,
                                             manager.config)
        self.wanted: dict[tuple[str, int], object] = {}  # mirrored partitions led here
        self.failed: dict[tuple[str, int], str] = {}  # stopped ones, and why
        # the operator's resume command (topic config RESUME) in force when each stopped: an
        # other one resumes it
        self.stopped_under: dict[tuple[str, int], str | None] = {}
        self.skipped: dict[tuple[str, int], int] = {}  # offsets resumed past, per partition
        self.resumes: dict[tuple[str, int], int] = {}
        self.synced_at: dict[str, float] = {}
        self.wakeup = asyncio.Event()
        self.task = asyncio.ensure_future(self._run())
        self.offsets_task = None
        if configs["consumer.offset.sync.enable"].lower() == "true":
            self.group_filter = GroupFilter(configs)
            self.offsets_task = asyncio.ensure_future(
                self._sync_offsets(int(configs["consumer.offset.sync.ms"]) / 1000))

    def close(self) -> asyncio.Future:
        """Cancel the link's tasks; the returned future closes its channels once they ended
        (a request failing as its channel closes must not pass for the cancellation)."""
        tasks = [t for t in (self.task, self.offsets_task) if t is not None] + [
            f.task for f in self.fetchers.fetchers.values()]
        self.task.cancel()
        if self.offsets_task is not None:
            self.offsets_task.cancel()
        self.fetchers.close()
        return asyncio.ensure_future(self._close_channels(tasks))

    async def _close_channels(self, tasks) -> None:
        await asyncio.gather(*tasks, return_exceptions=True)
        for ch in self.channels.values():
            ch.close()

    def follow(self, part) -> None:
        key = (part.topic, part.index)
        if self.wanted.get(key) is not part:
            self.fetchers.remove(part)
            self.wanted[key] = part
            self.failed.pop(key, None)
            self.fetchers.caught_up_at[key] = time.monotonic()
            self.wakeup.set()

    def unfollow(self, part) -> None:
        key = (part.topic, part.index)
        if self.wanted.get(key) is part:
            del self.wanted[key]
            self.failed.pop(key, None)
            self.fetchers.forget(key)
            self.fetchers.remove(part)

    # -- told by the fetchers -----------------------------------------------------------------
    def leader_lost(self, key) -> None:
        part = self.wanted.get(key)
        if part is not None:
            self.fetchers.remove(part)
            self.wakeup.set()

    def source_unreachable(self, source_id: int) -> None:
        fetcher = self.fetchers.fetchers.get(source_id)
        if fetcher is not None:
            for key in list(fetcher.partitions):
                self.leader_lost(key)

    def stop_partition(self, key, reason: str) -> None:
        part = self.wanted.get(key)
        if part is None:
            return
        self.fetchers.remove(part)
        self.fetchers.resuming.discard(key)
        self.failed[key] = reason
        meta = self.manager.metadata.topics.get(key[0])
        self.stopped_under[key] = meta.configs.get(RESUME) if meta is not None else None
        log.error("cluster link %s: mirror partition %s-%d stopped: %s; it goes on only when "
                  "an operator acts (josefk mirror resume-partition continues from the "
                  "source's log start; failover keeps what it has)", self.name, *key, reason)

    def maybe_resume(self, part, command: str | None) -> None:
        """The operator's resume command ``command`` (``<nonce>:<partitions or *>``, topic
        config RESUME) names this stopped partition and is not the one in force when it
        stopped: it goes on from the source's log start (`MirrorFetcher`)."""
        key = (part.topic, part.index)
        if key not in self.failed or not command or command == self.stopped_under.get(key):
            return
        _nonce, _, which = command.partition(":")
        if which != "*" and str(part.index) not in which.split(","):
            return
        log.warning("cluster link %s: mirror partition %s-%d (stopped: %s) resumes on the "
                    "operator's command, from the source's log start", self.name, *key,
                    self.failed.pop(key))
        self.stopped_under.pop(key, None)
        self.fetchers.resuming.add(key)
        self.wakeup.set()

    def resumed(self, key, dropped: tuple[int, int], start: int) -> None:
        """Told by the fetcher: ``key`` restarted at the source's log start ``start``, its
        records ``dropped`` (start, end) gone."""
        low, end = dropped
        skipped = max(0, start - end)
        self.skipped[key] = self.skipped.get(key, 0) + skipped
        self.resumes[key] = self.resumes.get(key, 0) + 1
        log.warning("cluster link %s: mirror partition %s-%d resumed at the source's log start "
                    "%d: %d offsets of the source skipped (%s), the mirror's records %s "
                    "dropped", self.name, *key, start, skipped,
                    f"{end}..{start - 1}" if skipped else "none",
                    f"{low}..{end - 1}" if end > low else "(none)")

    def status(self, key) -> PartitionStatus:
        part, f = self.wanted[key], self.fetchers
        end = f.source_end.get(key)
        lag = None if end is None else max(0, end - part.log.log_end_offset)
        lag_bytes = lag_ms = None
        if lag is not None:
            now = time.monotonic()
            lag_bytes = round(lag * f.bytes_per_offset.get(key, 0.0))
            fresh = now - f.answered_at.get(key, now) <= f.stale_s and key not in self.failed
            lag_ms = 0 if lag == 0 and fresh else int(
                (now - f.caught_up_at.get(key, now)) * 1000)
        return PartitionStatus(self.name, key[0], key[1], lag, lag_bytes, lag_ms,
                               f.latency_ms.get(key), self.failed.get(key),
                               self.skipped.get(key, 0), self.resumes.get(key, 0))

    # -- the source's metadata ----------------------------------------------------------------
    async def _run(self) -> None:
        while True:
            following = any(index == 0 for _, index in self.wanted)
            try:
                await asyncio.wait_for(self.wakeup.wait(),
                                       min(self.sync_s, self.max_age_s) if following
                                       else self.max_age_s)
            except asyncio.TimeoutError:
                pass
            self.wakeup.clear()
            try:
                await self._refresh()
            except asyncio.CancelledError:
                raise
            except (ChannelError, MetadataError, OSError) as e:
                log.warning("cluster link %s: cannot read the source cluster: %s", self.name, e)
                await asyncio.sleep(RETRY_S)
                self.wakeup.set()
            except Exception:  # noqa: BLE001 - the link must outlive a bad answer
                log.exception("cluster link %s: refreshing the source's metadata failed",
                              self.name)
                await asyncio.sleep(RETRY_S)
                self.wakeup.set()

    async def _ask(self, api, version, req):
        """``req`` to any source broker that answers (the known ones, then the bootstrap
        list)."""
        last = None
        for ch in list(self.channels.values()):
            try:
                return await ch.request(api, version, req, timeout=30)
            except ChannelError as e:
                last = e
        for host, port in self.bootstrap:
            ch = BrokerChannel(-1, host, port, f"josefk-link-{self.name}", self.security)
            try:
                return await ch.request(api, version, req, timeout=30)
            except ChannelError as e:
                last = e
            finally:
                ch.close()
        raise ChannelError(f"no source broker answers ({last})")

    async def _refresh(self) -> None:
        topics = sorted({t for t, _ in self.wanted})
        if not topics:
            return
        Q = METADATA.Request
        resp = await self._ask(METADATA, METADATA_VERSION, Q(
            topics=[Q.MetadataRequestTopic(topic_id=None, name=t) for t in topics],
            allow_auto_topic_creation=False, include_topic_authorized_operations=False))
        self._learn(resp.brokers)
        counts, missing = {}, False
        for t in resp.topics:
            if t.error_code:
                log.warning("cluster link %s: source topic %s: error %d", self.name, t.name,
                            t.error_code)
                missing = True
                continue
            counts[t.name] = len(t.partitions)
            if self._recreated(t):
                continue
            for p in t.partitions:
                key = (t.name, p.partition_index)
                part = self.wanted.get(key)
                if part is None or key in self.failed:
                    continue
                if p.leader_id < 0 or p.leader_id not in self.channels:
                    missing = True
                elif self.fetchers.source_of.get(key) != p.leader_id:
                    self.fetchers.add(part, p.leader_id)
        await self._follow_topics(counts)
        if missing:
            await asyncio.sleep(RETRY_S)
            self.wakeup.set()

    def _learn(self, brokers) -> None:
        """The source's brokers, from a Metadata answer: a channel each."""
        for b in brokers:
            ch = self.channels.get(b.node_id)
            if ch is None:
                self.channels[b.node_id] = BrokerChannel(b.node_id, b.host, b.port,
                                                         f"josefk-link-{self.name}",
                                                         self.security)
            else:
                ch.retarget(b.host, b.port)

    def _recreated(self, t) -> bool:
        """Whether source topic ``t`` is not the one the mirror was made of (deleted and
        created again): its partitions stop, reported."""
        meta = self.manager.metadata.topics.get(t.name)
        expected = meta.configs.get(SOURCE_ID) if meta is not None else None
        if not expected or t.topic_id == ZERO_UUID or uuid_to_base64(t.topic_id) == expected:
            return False
        for key in [k for k in self.wanted if k[0] == t.name and k not in self.failed]:
            self.stop_partition(key, f"the source topic was recreated (topic id "
                                     f"{uuid_to_base64(t.topic_id)}, the mirror's {expected})")
        return True

    async def _follow_topics(self, counts: dict[str, int]) -> None:
        """Partitions added and topic configs changed at the source, for the topics whose
        partition 0 is led here (one broker of the cluster does it)."""
        now = time.monotonic()
        metadata = self.manager.metadata
        for topic, count in counts.items():
            if (topic, 0) not in self.wanted:
                continue
            meta = metadata.topics.get(topic)
            if meta is not None and count > len(meta.partitions):
                log.info("cluster link %s: source topic %s has %d partitions: adding %d",
                         self.name, topic, count, count - len(meta.partitions))
                await metadata.create_partitions(topic, count)
            if now - self.synced_at.get(topic, 0.0) >= self.sync_s:
                self.synced_at[topic] = now
                await self._sync_configs(topic)

    async def _sync_configs(self, topic: str) -> None:
        Q = DESCRIBE_CONFIGS.Request
        resp = await self._ask(DESCRIBE_CONFIGS, DESCRIBE_CONFIGS_VERSION, Q(
            resources=[Q.DescribeConfigsResource(resource_type=TOPIC_RESOURCE,
                                                 resource_name=topic,
                                                 configuration_keys=None)],
            include_synonyms=False, include_documentation=False))
        r = resp.results[0]
        if r.error_code:
            log.warning("cluster link %s: cannot describe source topic %s: error %d %s",
                        self.name, topic, r.error_code, r.error_message)
            return
        source = {c.name: c.value for c in r.configs
                  if c.config_source == TOPIC_CONFIG_SOURCE and c.name in TOPIC_CONFIG_NAMES}
        metadata = self.manager.metadata
        current = await metadata.topic_configs(topic)
        if mirror_link(current) != self.name:
            return  # promoted meanwhile
        mine = {k: v for k, v in current.items() if k not in MIRROR_CONFIGS}
        if mine != source:
            log.info("cluster link %s: topic %s takes the source's configs %s", self.name,
                     topic, source)
            await metadata.alter_topic_configs(
                topic, {**source, **{k: current[k] for k in MIRROR_CONFIGS if k in current}})

    # -- consumer group offsets ---------------------------------------------------------------
    async def _sync_offsets(self, every_s: float) -> None:
        while True:
            await asyncio.sleep(every_s)
            try:
                await self._sync_offsets_once()
            except asyncio.CancelledError:
                raise
            except (ChannelError, OSError) as e:
                log.warning("cluster link %s: cannot read the source's group offsets: %s",
                            self.name, e)
            except Exception:  # noqa: BLE001 - the link must outlive a bad answer
                log.exception("cluster link %s: copying group offsets failed", self.name)

    async def _sync_offsets_once(self) -> None:
        """The committed offsets of the source's groups the filter names, on this link's
        mirror topics, copied verbatim to those groups here: for the groups this broker
        coordinates, and only while they have no members here (the coordinator refuses a
        commit from outside a group with members)."""
        mirrors = {name for name, t in self.manager.metadata.topics.items()
                   if mirror_link(t.configs) == self.name}
        if not mirrors:
            return
        Q = METADATA.Request
        resp = await self._ask(METADATA, METADATA_VERSION, Q(
            topics=[], allow_auto_topic_creation=False, include_topic_authorized_operations=False))
        self._learn(resp.brokers)
        names = set()
        for b in resp.brokers:
            listed = await self.channels[b.node_id].request(
                LIST_GROUPS, LIST_GROUPS_VERSION, LIST_GROUPS.Request(states_filter=[]),
                timeout=30)
            names.update(g.group_id for g in listed.groups if self.group_filter(g.group_id))
        groups = self.manager.groups
        for group in sorted(names):
            err, current = groups.fetch_offsets(group)
            if err:
                continue  # coordinated by another broker here (or loading: next time)
            source = await self._source_offsets(group, mirrors)
            changed = {tp: (offset, -1, metadata) for tp, (offset, metadata) in source.items()
                       if tp not in current or current[tp].offset != offset}
            if not changed:
                continue
            result = await groups.commit_offsets(group, -1, "", None, -1, changed)
            refused = {code for code in result.values() if code}
            if refused:
                log.info("cluster link %s: group %s keeps its offsets here (errors %s: it has "
                         "members here)", self.name, group, sorted(refused))

    async def _source_offsets(self, group: str, mirrors: set[str]) -> dict:
        """{(topic, partition): (offset, metadata)} the source's group committed on
        ``mirrors``."""
        found = await self._ask(FIND_COORDINATOR, FIND_COORDINATOR_VERSION,
                                FIND_COORDINATOR.Request(key=group, key_type=0))
        if found.error_code or found.node_id not in self.channels:
            return {}
        Q = OFFSET_FETCH.Request
        resp = await self.channels[found.node_id].request(
            OFFSET_FETCH, OFFSET_FETCH_VERSION, Q(group_id=group, topics=None,
                                                  require_stable=False), timeout=30)
        if resp.error_code:
            return {}
        return {(t.name, p.partition_index): (p.committed_offset, p.metadata)
                for t in resp.topics if t.name in mirrors for p in t.partitions
                if not p.error_code and p.committed_offset >= 0}
