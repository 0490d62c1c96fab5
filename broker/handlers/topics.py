"""CreateTopics, DeleteTopics, CreatePartitions."""
from __future__ import annotations

import collections
from typing import TYPE_CHECKING

from josefk.broker.security import acl
from josefk.broker.security.authorizer import CLUSTER, CLUSTER_NAME, TOPIC, allowed
from josefk.broker.configs import topic_config_entries, validate_topic_configs
from josefk.broker.guards import check_not_internal, check_partition_budget
from josefk.broker.control.metadata import MetadataError
from josefk.broker.replication import remote
from josefk.wire import errors
from josefk.wire.apis import CREATE_PARTITIONS, CREATE_TOPICS, DELETE_TOPICS

if TYPE_CHECKING:
    from josefk.broker.handlers.services import Services
    from josefk.wire.apis import CreatePartitionsRequest, CreateTopicsRequest, DeleteTopicsRequest


async def handle_create_topics(broker: Services, ctx, req: CreateTopicsRequest):
    R = CREATE_TOPICS.Response
    cfg = broker.config
    out = []
    named = collections.Counter(t.name for t in req.topics)
    for t in req.topics:
        res = R.CreatableTopicResult(name=t.name, num_partitions=-1, replication_factor=-1,
                                     configs=None)
        out.append(res)
        if named[t.name] > 1:  # as Kafka: every copy refused, none created
            res.error_code = errors.INVALID_REQUEST
            res.error_message = "Found multiple entries for this topic."
            continue
        if not (allowed(broker, ctx, CLUSTER, CLUSTER_NAME, acl.CREATE)
                or allowed(broker, ctx, TOPIC, t.name, acl.CREATE)):
            res.error_code = errors.TOPIC_AUTHORIZATION_FAILED
            res.error_message = "Authorization failed."
            continue
        try:
            configs = {c.name: c.value for c in t.configs}
            validate_topic_configs(configs, cfg.topic_defaults(), tiered_storage=cfg.bool(
                "remote.log.storage.system.enable"))
            assignments = [(a.partition_index, a.broker_ids) for a in t.assignments]
            topic_id, n, configs = await remote.bucket_topic(
                broker.replicas, cfg.bool("remote.log.storage.system.enable"),
                broker.metadata.topics_by_id, t.name, configs, t.num_partitions,
                req.timeout_ms)
            rf = t.replication_factor
            if not assignments:
                n = n if n != -1 else cfg.int("num.partitions")
                rf = rf if rf != -1 else cfg.int("default.replication.factor")
            if t.name not in broker.metadata.topics:
                check_partition_budget(broker, len(assignments) if assignments else n)
            meta = await broker.metadata.create_topic(
                t.name, n, rf, configs, validate_only=req.validate_only,
                assignments=assignments or None, timeout_ms=req.timeout_ms, topic_id=topic_id)
        except MetadataError as e:
            res.error_code, res.error_message = e.code, e.message
            continue
        res.topic_id = meta.topic_id
        res.num_partitions = len(meta.partitions)
        res.replication_factor = len(meta.partitions[0].replicas)
        res.configs = [R.CreatableTopicConfigs(name=e.name, value=e.value, read_only=False,
                                               config_source=e.source, is_sensitive=False)
                       for e in topic_config_entries(broker, meta.configs)]
    return R(topics=out)


async def handle_delete_topics(broker: Services, ctx, req: DeleteTopicsRequest):
    R = DELETE_TOPICS.Response
    md = broker.metadata
    if ctx.version >= 6:
        wanted = [(t.name, t.topic_id) for t in req.topics]
    else:
        wanted = [(name, None) for name in req.topic_names]
    out = []
    for name, topic_id in wanted:
        res = R.DeletableTopicResult(name=name, topic_id=topic_id)
        out.append(res)
        if name is None:
            meta = md.topics_by_id.get(topic_id)
            if meta is None:
                res.error_code = errors.UNKNOWN_TOPIC_ID
                res.error_message = "Topic id does not exist."
                continue
            res.name = name = meta.name
        if not allowed(broker, ctx, TOPIC, name, acl.DELETE):
            res.error_code = errors.TOPIC_AUTHORIZATION_FAILED
            res.error_message = "Authorization failed."
            continue
        meta = md.topics.get(name)
        if meta is None:
            res.error_code = errors.UNKNOWN_TOPIC_OR_PARTITION
            res.error_message = "This server does not host this topic-partition."
            continue
        res.topic_id = meta.topic_id
        try:
            check_not_internal(name, "delete")
        except MetadataError as e:
            res.error_code, res.error_message = e.code, e.message
            continue
        if not broker.config.bool("delete.topic.enable"):
            res.error_code = errors.TOPIC_DELETION_DISABLED
            res.error_message = "Topic deletion is disabled."
            continue
        try:
            await md.delete_topic(name, timeout_ms=req.timeout_ms)
        except MetadataError as e:
            res.error_code, res.error_message = e.code, e.message
    return R(responses=out)


async def handle_create_partitions(broker: Services, ctx, req: CreatePartitionsRequest):
    R = CREATE_PARTITIONS.Response
    out = []
    for t in req.topics:
        res = R.CreatePartitionsTopicResult(name=t.name, error_message=None)
        out.append(res)
        if not allowed(broker, ctx, TOPIC, t.name, acl.ALTER):
            res.error_code = errors.TOPIC_AUTHORIZATION_FAILED
            res.error_message = "Authorization failed."
            continue
        try:
            check_not_internal(t.name, "add partitions to")
            meta = broker.metadata.topics.get(t.name)
            if meta is not None:
                check_partition_budget(broker, t.count - len(meta.partitions))
            assignments = [a.broker_ids for a in t.assignments] if t.assignments else None
            await broker.metadata.create_partitions(t.name, t.count,
                                                    validate_only=req.validate_only,
                                                    assignments=assignments,
                                                    timeout_ms=req.timeout_ms)
        except MetadataError as e:
            res.error_code, res.error_message = e.code, e.message
    return R(results=out)
