"""Confluent's REST Proxy API v3 (``application/json``): clusters, brokers, topics, partitions,
topic configs, consumer groups with their consumers and lag, ACLs, and producing records
(``POST .../topics/{t}/records``, one JSON object or a stream of them)."""
from __future__ import annotations

import base64
import binascii
import json
from datetime import datetime, timezone

from aiohttp import web
from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import (AclBinding, AclBindingFilter, AclOperation, AclPermissionType,
                                   AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic,
                                   OffsetSpec, ResourcePatternType, ResourceType)

from josefk.httpd.server import HttpError, json_response, parse_json
from josefk.rest import formats as f
from josefk.rest.kafka import Kafka

TOPIC = ConfigResource.Type.TOPIC


def _ok(body, status: int = 200) -> web.Response:
    return json_response(body, status, "application/json")


def _not_found(message: str) -> HttpError:
    return HttpError(404, 404, message)


def _bad(message: str) -> HttpError:
    return HttpError(400, 400, message)


def _unknown_topic() -> HttpError:
    return HttpError(404, 40403, "This server does not host this topic-partition.")


def _enum_name(value) -> str:
    return value.name if hasattr(value, "name") else str(value)


class V3:
    def __init__(self, kafka: Kafka, schemas: f.SchemaFormats):
        self.kafka, self.schemas = kafka, schemas

    # -- shapes ------------------------------------------------------------------------------
    @staticmethod
    def _base(request, cluster_id: str) -> str:
        return f"{request.scheme}://{request.host}/v3/clusters/{cluster_id}"

    @staticmethod
    def _resource(kind: str, url: str, crn: str, **fields) -> dict:
        return {"kind": kind, "metadata": {"self": url, "resource_name": crn}, **fields}

    @staticmethod
    def _list(kind: str, url: str, data: list) -> dict:
        return {"kind": kind, "metadata": {"self": url, "next": None}, "data": data}

    async def _cluster(self, request):
        info = await self.kafka.cluster()
        wanted = request.match_info.get("cluster")
        if wanted is not None and wanted != info.cluster_id:
            raise _not_found(f"Cluster {wanted} cannot be found.")
        return info

    def _cluster_json(self, request, info) -> dict:
        base = self._base(request, info.cluster_id)
        return self._resource(
            "KafkaCluster", base, f"crn:///kafka={info.cluster_id}",
            cluster_id=info.cluster_id,
            controller={"related": f"{base}/brokers/{info.controller.id}"} if info.controller
            else None,
            acls={"related": f"{base}/acls"}, brokers={"related": f"{base}/brokers"},
            broker_configs={"related": f"{base}/broker-configs"},
            consumer_groups={"related": f"{base}/consumer-groups"},
            topics={"related": f"{base}/topics"},
            partition_reassignments={"related": f"{base}/topics/-/partitions/-/reassignment"})

    # -- clusters and brokers ----------------------------------------------------------------
    async def list_clusters(self, request):
        info = await self._cluster(request)
        return _ok(self._list("KafkaClusterList", f"{request.scheme}://{request.host}/v3/clusters",
                              [self._cluster_json(request, info)]))

    async def get_cluster(self, request):
        return _ok(self._cluster_json(request, await self._cluster(request)))

    def _broker_json(self, request, cid, node) -> dict:
        base = self._base(request, cid)
        url = f"{base}/brokers/{node.id}"
        return self._resource("KafkaBroker", url, f"crn:///kafka={cid}/broker={node.id}",
                              cluster_id=cid, broker_id=node.id, host=node.host, port=node.port,
                              rack=node.rack, configs={"related": f"{url}/configs"},
                              partition_replicas={"related": f"{url}/partition-replicas"})

    async def list_brokers(self, request):
        info = await self._cluster(request)
        return _ok(self._list("KafkaBrokerList", f"{self._base(request, info.cluster_id)}/brokers",
                              [self._broker_json(request, info.cluster_id, n)
                               for n in sorted(info.nodes, key=lambda n: n.id)]))

    async def get_broker(self, request):
        info = await self._cluster(request)
        for n in info.nodes:
            if str(n.id) == request.match_info["broker"]:
                return _ok(self._broker_json(request, info.cluster_id, n))
        raise _not_found(f"Broker {request.match_info['broker']} cannot be found.")

    # -- topics and partitions --------------------------------------------------------------
    def _topic_json(self, request, cid, t) -> dict:
        url = f"{self._base(request, cid)}/topics/{t.topic}"
        parts = list(t.partitions.values())
        return self._resource(
            "KafkaTopic", url, f"crn:///kafka={cid}/topic={t.topic}", cluster_id=cid,
            topic_name=t.topic, is_internal=t.topic.startswith("__"),
            replication_factor=len(parts[0].replicas) if parts else 0,
            partitions_count=len(parts), partitions={"related": f"{url}/partitions"},
            configs={"related": f"{url}/configs"},
            partition_reassignments={"related": f"{url}/partitions/-/reassignment"},
            authorized_operations=[])

    async def _topic(self, request, refresh: bool = True):
        """The cluster id and the topic the request names; 40403 when there is no such topic
        (v2's 40401 is v3's UnknownTopicOrPartition)."""
        info = await self._cluster(request)
        try:
            t = await self.kafka.topic(request.match_info["topic"], refresh=refresh)
        except HttpError as e:
            if e.code == 40401:
                raise _unknown_topic() from None
            raise
        return info.cluster_id, t

    async def list_topics(self, request):
        info = await self._cluster(request)
        md = await self.kafka.metadata()
        return _ok(self._list("KafkaTopicList", f"{self._base(request, info.cluster_id)}/topics",
                              [self._topic_json(request, info.cluster_id, md.topics[n])
                               for n in sorted(md.topics)]))

    async def get_topic(self, request):
        cid, t = await self._topic(request)
        return _ok(self._topic_json(request, cid, t))

    async def create_topic(self, request):
        info = await self._cluster(request)
        body = parse_json(await request.read())
        if not isinstance(body, dict) or not isinstance(body.get("topic_name"), str):
            raise _bad("topic_name is required")
        name = body["topic_name"]
        configs = {c["name"]: c["value"] for c in body.get("configs") or []
                   if isinstance(c, dict) and "name" in c}
        new = NewTopic(name, int(body.get("partitions_count", -1)),
                       int(body.get("replication_factor", -1)), config=configs)
        result = (await self.kafka.wait(self.kafka.admin.create_topics([new])))[name]
        if isinstance(result, Exception):
            raise self.kafka.error(result)
        t = await self.kafka.topic(name, refresh=True)
        return _ok(self._topic_json(request, info.cluster_id, t), 201)

    async def delete_topic(self, request):
        _cid, t = await self._topic(request)
        result = (await self.kafka.wait(self.kafka.admin.delete_topics([t.topic])))[t.topic]
        if isinstance(result, Exception):
            raise self.kafka.error(result)
        self.kafka.topics.pop(t.topic, None)
        return web.Response(status=204)

    def _partition_json(self, request, cid, topic, p) -> dict:
        url = f"{self._base(request, cid)}/topics/{topic}/partitions/{p.id}"
        return self._resource(
            "KafkaPartition", url, f"crn:///kafka={cid}/topic={topic}/partition={p.id}",
            cluster_id=cid, topic_name=topic, partition_id=p.id,
            leader={"related": f"{url}/replicas/{p.leader}"},
            replicas={"related": f"{url}/replicas"},
            reassignment={"related": f"{url}/reassignment"})

    async def list_partitions(self, request):
        cid, t = await self._topic(request)
        url = f"{self._base(request, cid)}/topics/{t.topic}/partitions"
        return _ok(self._list("KafkaPartitionList", url,
                              [self._partition_json(request, cid, t.topic, p)
                               for _, p in sorted(t.partitions.items())]))

    async def get_partition(self, request):
        cid, t = await self._topic(request)
        try:
            p = t.partitions[int(request.match_info["partition"])]
        except (KeyError, ValueError):
            raise _unknown_topic() from None
        return _ok(self._partition_json(request, cid, t.topic, p))

    # -- topic configs ----------------------------------------------------------------------
    def _config_json(self, request, cid, topic, c) -> dict:
        url = f"{self._base(request, cid)}/topics/{topic}/configs/{c.name}"
        return self._resource(
            "KafkaTopicConfig", url, f"crn:///kafka={cid}/topic={topic}/config={c.name}",
            cluster_id=cid, topic_name=topic, name=c.name, value=c.value,
            is_default=c.is_default, is_read_only=c.is_read_only, is_sensitive=c.is_sensitive,
            source=_enum_name(c.source), synonyms=[
                {"name": s.name, "value": s.value, "source": _enum_name(s.source)}
                for s in c.synonyms.values()])

    async def _configs(self, request):
        cid, t = await self._topic(request)
        res = ConfigResource(TOPIC, t.topic)
        result = (await self.kafka.wait(self.kafka.admin.describe_configs([res])))[res]
        if isinstance(result, Exception):
            raise self.kafka.error(result)
        return cid, t.topic, result

    async def list_configs(self, request):
        cid, topic, configs = await self._configs(request)
        url = f"{self._base(request, cid)}/topics/{topic}/configs"
        return _ok(self._list("KafkaTopicConfigList", url,
                              [self._config_json(request, cid, topic, c)
                               for _, c in sorted(configs.items())]))

    async def get_config(self, request):
        cid, topic, configs = await self._configs(request)
        c = configs.get(request.match_info["name"])
        if c is None:
            raise _not_found(f"Config {request.match_info['name']} cannot be found for topic "
                             f"{topic}.")
        return _ok(self._config_json(request, cid, topic, c))

    async def _alter(self, request, changes: list) -> web.Response:
        _cid, t = await self._topic(request)
        res = ConfigResource(TOPIC, t.topic, incremental_configs=[
            ConfigEntry(name, value, incremental_operation=op) for name, value, op in changes])
        result = (await self.kafka.wait(self.kafka.admin.incremental_alter_configs([res])))[res]
        if isinstance(result, Exception):
            raise self.kafka.error(result)
        return web.Response(status=204)

    async def update_config(self, request):
        body = parse_json(await request.read())
        if not isinstance(body, dict) or "value" not in body:
            raise _bad("value is required")
        return await self._alter(request, [(request.match_info["name"], str(body["value"]),
                                            AlterConfigOpType.SET)])

    async def reset_config(self, request):
        return await self._alter(request, [(request.match_info["name"], None,
                                            AlterConfigOpType.DELETE)])

    async def alter_configs(self, request):
        body = parse_json(await request.read())
        data = body.get("data") if isinstance(body, dict) else None
        if not isinstance(data, list):
            raise _bad("data must be a list of {name, value, operation}")
        ops = {"SET": AlterConfigOpType.SET, "DELETE": AlterConfigOpType.DELETE}
        try:
            changes = [(d["name"], None if str(d.get("operation", "SET")).upper() == "DELETE"
                        else str(d["value"]), ops[str(d.get("operation", "SET")).upper()])
                       for d in data]
        except (KeyError, TypeError):
            raise _bad("every entry needs name, and value unless the operation is DELETE") \
                from None
        return await self._alter(request, changes)

    # -- consumer groups ----------------------------------------------------------------------
    async def list_groups(self, request):
        info = await self._cluster(request)
        result = await self.kafka.call(lambda: self.kafka.admin.list_consumer_groups(
            request_timeout=self.kafka.timeout).result(self.kafka.timeout))
        ids = sorted(g.group_id for g in result.valid)
        groups = [await self._describe_group(request, info.cluster_id, g) for g in ids]
        return _ok(self._list("KafkaConsumerGroupList",
                              f"{self._base(request, info.cluster_id)}/consumer-groups", groups))

    async def _group(self, request, cid, group):
        result = (await self.kafka.wait(self.kafka.admin.describe_consumer_groups(
            [group], request_timeout=self.kafka.timeout)))[group]
        if isinstance(result, Exception) or _enum_name(result.state) == "DEAD":
            raise _not_found(f"Consumer group {group} cannot be found.")
        return result

    async def _describe_group(self, request, cid, group) -> dict:
        g = await self._group(request, cid, group)
        url = f"{self._base(request, cid)}/consumer-groups/{group}"
        return self._resource(
            "KafkaConsumerGroup", url, f"crn:///kafka={cid}/consumer-group={group}",
            cluster_id=cid, consumer_group_id=group, is_simple=g.is_simple_consumer_group,
            partition_assignor=g.partition_assignor, state=_enum_name(g.state),
            coordinator={"related": f"{self._base(request, cid)}/brokers/{g.coordinator.id}"},
            consumers={"related": f"{url}/consumers"},
            lag_summary={"related": f"{url}/lag-summary"})

    async def get_group(self, request):
        info = await self._cluster(request)
        return _ok(await self._describe_group(request, info.cluster_id,
                                              request.match_info["group"]))

    async def list_consumers(self, request):
        info = await self._cluster(request)
        cid, group = info.cluster_id, request.match_info["group"]
        g = await self._group(request, cid, group)
        url = f"{self._base(request, cid)}/consumer-groups/{group}/consumers"
        return _ok(self._list("KafkaConsumerList", url, [self._resource(
            "KafkaConsumer", f"{url}/{m.member_id}",
            f"crn:///kafka={cid}/consumer-group={group}/consumer={m.member_id}",
            cluster_id=cid, consumer_group_id=group, consumer_id=m.member_id,
            instance_id=m.group_instance_id, client_id=m.client_id,
            assignments={"related": f"{url}/{m.member_id}/assignments"}) for m in g.members]))

    async def _lags(self, request):
        info = await self._cluster(request)
        cid, group = info.cluster_id, request.match_info["group"]
        g = await self._group(request, cid, group)
        owners = {(tp.topic, tp.partition): m for m in g.members
                  for tp in (m.assignment.topic_partitions if m.assignment else [])}
        committed = (await self.kafka.wait(self.kafka.admin.list_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(group)])))[group]
        if isinstance(committed, Exception):
            raise self.kafka.error(committed)
        parts = [tp for tp in committed.topic_partitions if tp.offset >= 0]
        ends = {}
        if parts:
            specs = {TopicPartition(tp.topic, tp.partition): OffsetSpec.latest() for tp in parts}
            for tp, res in (await self.kafka.wait(self.kafka.admin.list_offsets(specs))).items():
                ends[(tp.topic, tp.partition)] = None if isinstance(res, Exception) else res.offset
        lags = []
        for tp in sorted(parts, key=lambda p: (p.topic, p.partition)):
            end = ends.get((tp.topic, tp.partition))
            member = owners.get((tp.topic, tp.partition))
            lags.append({"topic": tp.topic, "partition": tp.partition, "current": tp.offset,
                         "end": end, "lag": max(0, end - tp.offset) if end is not None else 0,
                         "member": member})
        return cid, group, lags

    async def list_lags(self, request):
        cid, group, lags = await self._lags(request)
        url = f"{self._base(request, cid)}/consumer-groups/{group}/lags"
        return _ok(self._list("KafkaConsumerLagList", url, [self._resource(
            "KafkaConsumerLag", f"{url}/{x['topic']}/partitions/{x['partition']}",
            f"crn:///kafka={cid}/consumer-group={group}/lag={x['topic']}/partition="
            f"{x['partition']}", cluster_id=cid, consumer_group_id=group,
            topic_name=x["topic"], partition_id=x["partition"], current_offset=x["current"],
            log_end_offset=x["end"], lag=x["lag"],
            consumer_id=x["member"].member_id if x["member"] else "",
            instance_id=x["member"].group_instance_id if x["member"] else None,
            client_id=x["member"].client_id if x["member"] else "") for x in lags]))

    async def lag_summary(self, request):
        cid, group, lags = await self._lags(request)
        base = self._base(request, cid)
        top = max(lags, key=lambda x: x["lag"], default=None)
        member = top["member"] if top else None
        return _ok(self._resource(
            "KafkaConsumerGroupLagSummary", f"{base}/consumer-groups/{group}/lag-summary",
            f"crn:///kafka={cid}/consumer-group={group}/lag-summary", cluster_id=cid,
            consumer_group_id=group,
            max_lag_consumer_id=member.member_id if member else "",
            max_lag_instance_id=member.group_instance_id if member else None,
            max_lag_client_id=member.client_id if member else "",
            max_lag_topic_name=top["topic"] if top else "",
            max_lag_partition_id=top["partition"] if top else 0,
            max_lag=top["lag"] if top else 0, total_lag=sum(x["lag"] for x in lags),
            max_lag_consumer={"related": f"{base}/consumer-groups/{group}/consumers/"
                                        f"{member.member_id}"} if member else None,
            max_lag_partition={"related": f"{base}/topics/{top['topic']}/partitions/"
                                          f"{top['partition']}"} if top else None))

    # -- ACLs ---------------------------------------------------------------------------------
    def _acl_fields(self, source, filtering: bool):
        """An ACL (or a filter) from query parameters or a body, in Confluent's names."""
        def pick(name, enum, default):
            raw = str(source.get(name) or default).upper()
            try:
                return enum[raw]
            except KeyError:
                raise _bad(f"{name} {raw!r} is not one of {', '.join(e.name for e in enum)}") \
                    from None

        any_ = "ANY" if filtering else None
        fields = (pick("resource_type", ResourceType, any_ or "TOPIC"),
                  source.get("resource_name") or None,
                  pick("pattern_type", ResourcePatternType, any_ or "LITERAL"),
                  source.get("principal") or None, source.get("host") or (None if filtering
                                                                          else "*"),
                  pick("operation", AclOperation, any_ or "ALL"),
                  pick("permission", AclPermissionType, any_ or "ALLOW"))
        if not filtering and (fields[1] is None or fields[3] is None):
            raise _bad("resource_name and principal are required")
        return fields

    def _acl_json(self, request, cid, b) -> dict:
        return {"kind": "KafkaAcl", "metadata": {"self": f"{self._base(request, cid)}/acls"},
                "cluster_id": cid, "resource_type": b.restype.name, "resource_name": b.name,
                "pattern_type": b.resource_pattern_type.name, "principal": b.principal,
                "host": b.host, "operation": b.operation.name,
                "permission": b.permission_type.name}

    async def list_acls(self, request):
        info = await self._cluster(request)
        flt = AclBindingFilter(*self._acl_fields(request.query, True))
        result = await self.kafka.call(lambda: self.kafka.admin.describe_acls(
            flt, request_timeout=self.kafka.timeout).result(self.kafka.timeout))
        return _ok(self._list("KafkaAclList", f"{self._base(request, info.cluster_id)}/acls",
                              [self._acl_json(request, info.cluster_id, b) for b in result]))

    async def create_acl(self, request):
        await self._cluster(request)
        body = parse_json(await request.read())
        if not isinstance(body, dict):
            raise _bad("an ACL is a JSON object")
        binding = AclBinding(*self._acl_fields(body, False))
        result = (await self.kafka.wait(self.kafka.admin.create_acls([binding])))[binding]
        if isinstance(result, Exception):
            raise self.kafka.error(result)
        return web.Response(status=201)

    async def delete_acls(self, request):
        info = await self._cluster(request)
        flt = AclBindingFilter(*self._acl_fields(request.query, True))
        result = (await self.kafka.wait(self.kafka.admin.delete_acls([flt])))[flt]
        if isinstance(result, Exception):
            raise self.kafka.error(result)
        return _ok({"data": [self._acl_json(request, info.cluster_id, b) for b in result]})

    # -- records ---------------------------------------------------------------------------
    async def produce_records(self, request):
        cluster_id, t = await self._topic(request, refresh=False)
        topic = t.topic
        raw = await request.read()
        try:
            requests = list(_json_stream(raw.decode()))
        except (ValueError, UnicodeDecodeError) as e:
            raise _bad(f"Unexpected character or malformed JSON: {e}") from None
        if not requests:
            raise _bad("no record in the request")
        prepared, answers = [], [None] * len(requests)
        for i, r in enumerate(requests):
            try:
                prepared.append((i, await self._record(topic, t, r)))
            except HttpError as e:
                answers[i] = {"error_code": e.status, "message": e.message}
        results = await self.kafka.produce(topic, [rec for _, (rec, _k, _v) in prepared])
        for (i, (_rec, key_info, value_info)), (err, part, offset, ts) in zip(prepared, results):
            if err is not None:
                answers[i] = {"error_code": 500, "message": str(getattr(err, "str", lambda: err)())}
                continue
            answers[i] = {"error_code": 200, "cluster_id": cluster_id, "topic_name": topic,
                          "partition_id": part, "offset": offset,
                          "timestamp": datetime.fromtimestamp(ts / 1000, timezone.utc)
                          .isoformat(timespec="milliseconds").replace("+00:00", "Z"),
                          "key": key_info, "value": value_info}
        if len(answers) == 1:
            status = answers[0]["error_code"]
            return _ok(answers[0], status if status != 200 else 200)
        body = b"".join(json.dumps(a).encode() + b"\n" for a in answers)
        return web.Response(body=body, content_type="application/json")

    async def _record(self, topic, t, r):
        if not isinstance(r, dict):
            raise _bad("a record is a JSON object")
        partition = r.get("partition_id")
        if partition is not None and partition not in t.partitions:
            raise _unknown_topic()
        headers = []
        for h in r.get("headers") or []:
            try:
                headers.append((h["name"], base64.b64decode(h["value"]) if h.get("value")
                                is not None else None))
            except (KeyError, TypeError, binascii.Error):
                raise _bad("a header needs a name and a base64 value") from None
        timestamp = None
        if r.get("timestamp"):
            try:
                timestamp = int(datetime.fromisoformat(str(r["timestamp"]).replace(
                    "Z", "+00:00")).timestamp() * 1000)
            except ValueError:
                raise _bad(f"timestamp {r['timestamp']!r} is not ISO 8601") from None
        key, key_info = await self._data(topic, True, r.get("key"))
        value, value_info = await self._data(topic, False, r.get("value"))
        return (partition, key, value, headers or None, timestamp), key_info, value_info

    async def _data(self, topic, is_key, d):
        if d is None:
            return None, None
        if not isinstance(d, dict):
            raise _bad("key and value are objects with type and data")
        kind = str(d.get("type") or "").upper()
        data = d.get("data")
        if kind in ("", "JSON") and not any(k in d for k in ("schema", "schema_id",
                                                             "schema_version", "subject")):
            out = f.encode_json(data)
            kind = "JSON"
        elif kind == "BINARY":
            out = f.encode_binary(data)
        elif kind == "STRING":
            out = None if data is None else str(data).encode()
        else:
            kind, out = await self.kafka.call(self._schema_data, topic, is_key, kind, d)
        return out, {"type": kind, "size": len(out) if out is not None else 0}

    def _schema_data(self, topic, is_key, kind, d):
        """(Worker thread.) Data of a schema format: the schema by id, by subject and version
        (latest when not given), or as text registered under the topic's subject."""
        subject = d.get("subject") or f"{topic}-{'key' if is_key else 'value'}"
        schema_id = d.get("schema_id")
        if schema_id is None and d.get("schema") is None:
            try:
                version = d.get("schema_version")
                registered = (self.schemas.client.get_version(subject, version) if version
                              else self.schemas.client.get_latest_version(subject))
            except Exception as e:  # noqa: BLE001 - the registry's "not found" and the like
                raise _bad(f"no schema for subject {subject}: {e}") from None
            schema_id = registered.schema_id
            kind = kind or {"AVRO": "AVRO", "JSON": "JSONSCHEMA", "PROTOBUF": "PROTOBUF"}[
                registered.schema.schema_type or "AVRO"]
        fmt = {"AVRO": f.AVRO, "JSONSCHEMA": f.JSONSCHEMA, "PROTOBUF": f.PROTOBUF}.get(kind)
        if fmt is None:
            raise _bad(f"type {kind!r} is not BINARY, JSON, STRING, AVRO, JSONSCHEMA or "
                       "PROTOBUF")
        schema_id = self.schemas.schema_id(fmt, topic, is_key, d.get("schema"), schema_id)
        return kind, self.schemas.encode(fmt, schema_id, d.get("data"))

    def routes(self) -> list:
        g, po, pu, d = web.get, web.post, web.put, web.delete
        c = "/v3/clusters/{cluster}"
        t = c + "/topics/{topic}"
        grp = c + "/consumer-groups/{group}"
        return [
            g("/v3/clusters", self.list_clusters), g(c, self.get_cluster),
            g(c + "/brokers", self.list_brokers), g(c + "/brokers/{broker}", self.get_broker),
            g(c + "/topics", self.list_topics), po(c + "/topics", self.create_topic),
            g(t, self.get_topic), d(t, self.delete_topic),
            g(t + "/partitions", self.list_partitions),
            g(t + "/partitions/{partition}", self.get_partition),
            g(t + "/configs", self.list_configs), po(t + "/configs:alter", self.alter_configs),
            g(t + "/configs/{name}", self.get_config), pu(t + "/configs/{name}", self.update_config),
            d(t + "/configs/{name}", self.reset_config),
            po(t + "/records", self.produce_records),
            g(c + "/consumer-groups", self.list_groups), g(grp, self.get_group),
            g(grp + "/consumers", self.list_consumers), g(grp + "/lags", self.list_lags),
            g(grp + "/lag-summary", self.lag_summary),
            g(c + "/acls", self.list_acls), po(c + "/acls", self.create_acl),
            d(c + "/acls", self.delete_acls),
        ]


def _json_stream(text: str):
    """The JSON values of a body holding one or several (a streamed produce request)."""
    decoder = json.JSONDecoder()
    pos = 0
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text):
            return
        value, pos = decoder.raw_decode(text, pos)
        yield value
