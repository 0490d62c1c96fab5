"""DescribeConfigs for topics, brokers, client metrics subscriptions (KIP-714), groups and
cluster links (josefk's resource type, `broker.links`).
Passwords and keys are described as sensitive, without their value, as Kafka describes its
PASSWORD configs."""
from __future__ import annotations

from typing import TYPE_CHECKING

import json
import re

from josefk.broker.security import acl, authorizer, tls_reload
from josefk.broker.security.authorizer import allowed
from josefk.broker.configs import (BROKER_TO_TOPIC, ConfigEntry, ConfigSource,
                                   broker_config_entries,
                                   client_metrics_config_entries, config_type,
                                   default_broker_config_entries, group_config_entries,
                                   topic_config_entries)
from josefk.broker.dynamic import DYNAMIC_BROKER_CONFIGS
from josefk.broker.links import CLUSTER_LINK, LINK_DEFAULTS, PARTITIONS_KEY
from josefk.wire import errors
from josefk.wire.apis import DESCRIBE_CONFIGS, LIST_CONFIG_RESOURCES

if TYPE_CHECKING:
    from josefk.broker.handlers.services import Services
    from josefk.wire.apis import DescribeConfigsRequest, ListConfigResourcesRequest

R = DESCRIBE_CONFIGS.Response
TOPIC, BROKER, CLIENT_METRICS, GROUP = 2, 4, 16, 32
_SENSITIVE = re.compile(r"(^|\.)(ssl\.key\.password|ssl\.keystore\.password|"
                        r"ssl\.truststore\.password|ssl\.keystore\.key|sasl\.jaas\.config|"
                        r"sasl\.password|"  # librdkafka's, in remote.log.metadata.*.
                        r"password\.encoder\.secret|password\.encoder\.old\.secret|"
                        r"remote\.log\.storage\.josefk\.s3\.secret\.key)$")


def _shown(name, value):
    return None if _SENSITIVE.search(name) else value


async def handle_describe_configs(broker: Services, ctx, req: DescribeConfigsRequest):
    results = []
    for res in req.resources:
        out = R.DescribeConfigsResult(resource_type=res.resource_type,
                                      resource_name=res.resource_name, error_message=None)
        results.append(out)
        if not _may_describe(broker, ctx, res):
            out.error_code = {TOPIC: errors.TOPIC_AUTHORIZATION_FAILED,
                              GROUP: errors.GROUP_AUTHORIZATION_FAILED}.get(
                res.resource_type, errors.CLUSTER_AUTHORIZATION_FAILED)
            out.error_message = "Authorization failed."
            continue
        if res.resource_type == TOPIC:
            meta = broker.metadata.topics.get(res.resource_name)
            if meta is None:
                out.error_code = errors.UNKNOWN_TOPIC_OR_PARTITION
                out.error_message = f"Topic {res.resource_name} does not exist"
                continue
            # The store's answer, as Kafka reads ZooKeeper's: a topic just created elsewhere
            # may not have its configs in this broker's cache yet.
            entries = topic_config_entries(
                broker, await broker.metadata.topic_configs(res.resource_name))
        elif res.resource_type == BROKER:
            if res.resource_name not in ("", str(broker.config.node_id)):
                out.error_code = errors.INVALID_REQUEST
                out.error_message = f"Unexpected broker id, expected {broker.config.node_id}"
                continue
            entries = (broker_config_entries(broker) if res.resource_name
                       else default_broker_config_entries(broker))
        elif res.resource_type == CLIENT_METRICS:
            entries = client_metrics_config_entries(broker, res.resource_name)
        elif res.resource_type == GROUP:
            entries = group_config_entries(broker, res.resource_name)
        elif res.resource_type == CLUSTER_LINK:
            link = broker.dynamic.links.get(res.resource_name)
            if link is None:
                out.error_code = errors.RESOURCE_NOT_FOUND
                out.error_message = f"Cluster link {res.resource_name} does not exist"
                continue
            entries = [ConfigEntry(name, link.get(name, default), ConfigSource.UNKNOWN
                                   if name in link else ConfigSource.DEFAULT_CONFIG, [])
                       for name, default in sorted(LINK_DEFAULTS.items())]
            if res.configuration_keys and PARTITIONS_KEY in res.configuration_keys:
                entries.append(ConfigEntry(PARTITIONS_KEY, json.dumps(
                    broker.links.partition_status(res.resource_name)), ConfigSource.UNKNOWN,
                    []))
        else:
            out.error_code = errors.INVALID_REQUEST
            out.error_message = f"Unsupported resource type {res.resource_type}"
            continue
        keys = res.configuration_keys
        if keys is not None:
            entries = [e for e in entries if e.name in keys]
        out.configs = [R.DescribeConfigsResourceResult(
            name=e.name, value=_shown(e.name, e.value),
            read_only=res.resource_type == BROKER and e.name not in DYNAMIC_BROKER_CONFIGS
            and not tls_reload.reloadable(e.name),
            is_default=e.source == ConfigSource.DEFAULT_CONFIG, config_source=e.source,
            is_sensitive=bool(_SENSITIVE.search(e.name)),
            synonyms=[R.DescribeConfigsSynonym(name=n, value=_shown(n, val), source=s)
                      for n, val, s in e.synonyms] if req.include_synonyms else [],
            config_type=config_type(BROKER_TO_TOPIC.get(e.name, e.name)), documentation=None) for e in entries]
    return R(results=results)


def _may_describe(broker: Services, ctx, res) -> bool:
    """DescribeConfigs on the topic, or on the cluster for broker configs."""
    if res.resource_type == TOPIC:
        return allowed(broker, ctx, authorizer.TOPIC, res.resource_name, acl.DESCRIBE_CONFIGS)
    if res.resource_type == GROUP:
        return allowed(broker, ctx, authorizer.GROUP, res.resource_name, acl.DESCRIBE_CONFIGS)
    return allowed(broker, ctx, authorizer.CLUSTER, authorizer.CLUSTER_NAME,
                   acl.DESCRIBE_CONFIGS)


def handle_list_config_resources(broker: Services, ctx, req: ListConfigResourcesRequest):
    """The config resources that exist: client metrics subscriptions (v0, which was
    ListClientMetricsResources), and from v1 topics and brokers too, as asked."""
    R = LIST_CONFIG_RESOURCES.Response
    if not allowed(broker, ctx, authorizer.CLUSTER, authorizer.CLUSTER_NAME,
                   acl.DESCRIBE_CONFIGS):
        return R(error_code=errors.CLUSTER_AUTHORIZATION_FAILED, config_resources=[])
    wanted = set(req.resource_types or ()) if ctx.version >= 1 else {CLIENT_METRICS}
    if wanted - {TOPIC, BROKER, CLIENT_METRICS, CLUSTER_LINK}:
        return R(error_code=errors.UNSUPPORTED_VERSION, config_resources=[])
    listing = {TOPIC: lambda: sorted(broker.metadata.topics),
               BROKER: lambda: [str(b) for b in sorted(broker.metadata.brokers)],
               CLIENT_METRICS: lambda: sorted(broker.dynamic.client_metrics)}
    if CLUSTER_LINK in wanted:  # josefk's type: listed when asked for by name
        listing[CLUSTER_LINK] = lambda: sorted(broker.dynamic.links)
    return R(config_resources=[R.ConfigResource(resource_name=name, resource_type=rtype)
                               for rtype, names in listing.items()
                               if not wanted or rtype in wanted for name in names()])
