"""AlterConfigs (whole override sets) and IncrementalAlterConfigs (SET, DELETE, APPEND,
SUBTRACT) for topics, brokers, client metrics subscriptions (KIP-714), groups and cluster links
(josefk's resource type, `broker.links`: no configs left deletes the link). Both build the
resource's new override set and go through one check-and-apply path; validate_only stops after
the checks. As in Kafka, a topic's configs need AlterConfigs on the topic, a group's on the
group, the others on the cluster."""
from __future__ import annotations

from typing import TYPE_CHECKING

from josefk.broker import group_configs
from josefk.broker.client_metrics import InvalidSubscription, Subscription
from josefk.broker.security import acl, authorizer, tls_reload
from josefk.broker.security.authorizer import allowed
from josefk.broker.configs import BROKER_TO_TOPIC, ConfigType, config_type, validate_topic_configs
from josefk.broker.dynamic import validate_broker_configs
from josefk.broker.links import CLUSTER_LINK, mirror_link, validate_link
from josefk.broker.control.metadata import MetadataError
from josefk.broker.replication import remote
from josefk.wire import errors
from josefk.wire.apis import ALTER_CONFIGS, INCREMENTAL_ALTER_CONFIGS

if TYPE_CHECKING:
    from josefk.broker.handlers.services import Services
    from josefk.wire.apis import AlterConfigsRequest, IncrementalAlterConfigsRequest

TOPIC, BROKER, CLIENT_METRICS, GROUP = 2, 4, 16, 32
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


def _overrides(broker: Services, rtype, name) -> dict:
    """The resource's current overrides. Raises MetadataError for an unknown resource."""
    if rtype == TOPIC:
        t = broker.metadata.topics.get(name)
        if t is None:
            raise MetadataError(errors.UNKNOWN_TOPIC_OR_PARTITION,
                                f"Topic {name} does not exist")
        return dict(t.configs)
    if rtype == BROKER:
        if name == "":
            return dict(broker.dynamic.cluster_default)
        if name == str(broker.config.node_id):
            return dict(broker.dynamic.per_broker)
        raise MetadataError(errors.INVALID_REQUEST,
                            f"Unexpected broker id, expected {broker.config.node_id} or empty "
                            f"string, but received {name}")
    if rtype == CLIENT_METRICS:
        return dict(broker.dynamic.client_metrics.get(name, {}))
    if rtype == GROUP:
        if not name:
            raise MetadataError(errors.INVALID_REQUEST, "Group id must not be empty")
        return dict(broker.dynamic.groups.get(name, {}))
    if rtype == CLUSTER_LINK:
        return dict(broker.dynamic.links.get(name, {}))
    raise MetadataError(errors.INVALID_REQUEST, f"Unsupported resource type {rtype}")


def _may_alter(broker: Services, ctx, res) -> int:
    if res.resource_type == TOPIC:
        return (errors.NONE if allowed(broker, ctx, authorizer.TOPIC, res.resource_name,
                                       acl.ALTER_CONFIGS)
                else errors.TOPIC_AUTHORIZATION_FAILED)
    if res.resource_type == GROUP:
        return (errors.NONE if allowed(broker, ctx, authorizer.GROUP, res.resource_name,
                                       acl.ALTER_CONFIGS)
                else errors.GROUP_AUTHORIZATION_FAILED)
    return (errors.NONE if allowed(broker, ctx, authorizer.CLUSTER, authorizer.CLUSTER_NAME,
                                   acl.ALTER_CONFIGS)
            else errors.CLUSTER_AUTHORIZATION_FAILED)


async def _change(broker: Services, ctx, res, new_overrides, validate_only) -> tuple[int,
                  str | None]:
    denied = _may_alter(broker, ctx, res)
    if denied:
        return denied, "Authorization failed."
    try:
        current = _overrides(broker, res.resource_type, res.resource_name)
        names = [c.name for c in res.configs]
        if len(set(names)) != len(names):
            raise MetadataError(errors.INVALID_REQUEST, "Error due to duplicate config keys")
        new = new_overrides(current)
        if res.resource_type == TOPIC:
            remote.check_creation_only(current, new)
            validate_topic_configs(new, broker.config.topic_defaults(), tiered_storage=(
                broker.config.bool("remote.log.storage.system.enable")))
            if not validate_only:
                await broker.dynamic.alter_topic(res.resource_name, new)
        elif res.resource_type == CLIENT_METRICS:
            if new:
                Subscription(res.resource_name, new)  # validates
            if not validate_only:
                await broker.dynamic.alter_client_metrics(res.resource_name, new)
        elif res.resource_type == GROUP:
            group_configs.validate(broker.config, new)
            if not validate_only:
                await broker.dynamic.alter_group(res.resource_name, new)
        elif res.resource_type == CLUSTER_LINK:
            _check_link(broker, res.resource_name, new)
            broker.dynamic.stored_link(new)  # its passwords can be kept
            if not validate_only:
                await broker.dynamic.alter_link(res.resource_name, new)
        else:
            validate_broker_configs(new, broker.config.topic_defaults(),
                                    broker.config.int("log.cleaner.threads"))
            try:
                tls_reload.check(broker, res.resource_name, new)
            except tls_reload.Refused as e:
                raise MetadataError(errors.INVALID_REQUEST, str(e)) from None
            if not validate_only:
                await broker.dynamic.alter_broker(res.resource_name, new)
    except MetadataError as e:
        return e.code, e.message
    except InvalidSubscription as e:
        return e.code, str(e)
    return errors.NONE, None


def _check_link(broker: Services, name: str, new: dict) -> None:
    validate_link(name, new)
    if not new:
        mirrors = sorted(t.name for t in broker.metadata.topics.values()
                         if mirror_link(t.configs) == name)
        if mirrors:
            raise MetadataError(errors.INVALID_REQUEST,
                                f"Cluster link {name} still mirrors {', '.join(mirrors)}: "
                                "promote or fail them over first")


def _response(api, results):
    R = api.Response
    return R(responses=[R.AlterConfigsResourceResponse(
        error_code=code, error_message=message, resource_type=res.resource_type,
        resource_name=res.resource_name) for res, (code, message) in results])


async def handle_alter_configs(broker: Services, ctx, req: AlterConfigsRequest):
    results = []
    for res in req.resources:
        wanted = {c.name: c.value for c in res.configs}
        results.append((res, await _change(broker, ctx, res, lambda _current: wanted,
                                           req.validate_only)))
    return _response(ALTER_CONFIGS, results)


def _incremental(broker: Services, res):
    """The function turning the current overrides into the new ones for ``res``'s ops."""
    def apply(current: dict) -> dict:
        new = dict(current)
        for c in res.configs:
            op = c.config_operation
            if op == SET:
                new[c.name] = c.value
            elif op == DELETE:
                new.pop(c.name, None)
            elif op in (APPEND, SUBTRACT):
                new[c.name] = _list_op(broker, res, c, new)
            else:
                raise MetadataError(errors.INVALID_REQUEST,
                                    f"Unknown config operation {op} for {c.name}")
        return new
    return apply


def _list_op(broker: Services, res, c, new) -> str:
    topic_name = c.name if res.resource_type == TOPIC else BROKER_TO_TOPIC.get(c.name, c.name)
    if config_type(topic_name) != ConfigType.LIST:
        verb = "append" if c.config_operation == APPEND else "subtract"
        raise MetadataError(errors.INVALID_CONFIG,
                            f"Config value {verb} is not allowed for config key: {c.name}")
    if c.name in new:
        base = new[c.name]
    elif res.resource_type == TOPIC:
        base = broker.config.topic_defaults().get(c.name, "")
    elif res.resource_type in (CLIENT_METRICS, GROUP, CLUSTER_LINK):
        base = ""
    else:
        base = broker.config.props.get(c.name, "")
    items = [v.strip() for v in (base or "").split(",") if v.strip()]
    given = [v.strip() for v in (c.value or "").split(",") if v.strip()]
    if c.config_operation == APPEND:
        items += [v for v in given if v not in items]
    else:
        items = [v for v in items if v not in given]
    return ",".join(items)


async def handle_incremental_alter_configs(broker: Services, ctx,
                                           req: IncrementalAlterConfigsRequest):
    results = []
    for res in req.resources:
        results.append((res, await _change(broker, ctx, res, _incremental(broker, res),
                                           req.validate_only)))
    return _response(INCREMENTAL_ALTER_CONFIGS, results)
