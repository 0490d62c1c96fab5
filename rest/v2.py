"""Confluent's REST Proxy API v2 (``application/vnd.kafka.v2+json``): topics and partitions,
produce in the embedded formats, brokers, and consumer instances."""
from __future__ import annotations

import functools
import re

import orjson
from aiohttp import web
from confluent_kafka import (OFFSET_BEGINNING, OFFSET_END, OFFSET_INVALID, KafkaError,
                             KafkaException, TopicPartition)

from josefk.httpd.server import HttpError, json_response, parse_json
from josefk.rest import formats as f
from josefk.rest.consumers import Instances
from josefk.rest.kafka import Kafka, kafka_error, partition_not_found
from josefk.rest.produce import error_fields

CONTENT_TYPE = "application/vnd.kafka.v2+json"
_FORMAT = re.compile(r"application/vnd\.kafka\.(binary|json|avro|jsonschema|protobuf)\.v2\+json")
ACCEPTED = ("application/vnd.kafka.v2+json", "application/vnd.kafka+json", "application/json")
RESET = {"earliest": "earliest", "smallest": "earliest", "latest": "latest",
         "largest": "latest", "none": "error"}


def _ok(body, status: int = 200) -> web.Response:
    return json_response(body, status, CONTENT_TYPE)


def _no_content() -> web.Response:
    return web.Response(status=204)


def _unprocessable(message: str) -> HttpError:
    return HttpError(422, 422, message)


def _body_format(request) -> str:
    ctype = request.headers.get("Content-Type", "").split(";")[0].strip().lower()
    m = _FORMAT.fullmatch(ctype)
    if not m:
        raise HttpError(415, 415, "HTTP 415 Unsupported Media Type")
    return m.group(1)


def _partitions_of(body, key="partitions") -> list[TopicPartition]:
    items = body.get(key) if isinstance(body, dict) else None
    if not isinstance(items, list):
        raise _unprocessable(f"'{key}' must be a list")
    try:
        return [TopicPartition(str(p["topic"]), int(p["partition"]),
                               int(p.get("offset", OFFSET_INVALID)),
                               **({} if p.get("metadata") is None else
                                  {"metadata": str(p["metadata"])}))
                for p in items]
    except (KeyError, TypeError, ValueError):
        raise _unprocessable(f"every entry of '{key}' needs topic and partition") from None


class V2:
    def __init__(self, kafka: Kafka, schemas: f.SchemaFormats, instances: Instances,
                 request_timeout_ms: int, max_bytes: int):
        self.kafka, self.schemas, self.instances = kafka, schemas, instances
        self.request_timeout_ms, self.max_bytes = request_timeout_ms, max_bytes

    # -- topics, partitions, brokers ---------------------------------------------------------
    async def list_topics(self, request):
        md = await self.kafka.metadata()
        return _ok(sorted(t for t in md.topics if not t.startswith("__")))

    async def get_topic(self, request):
        name = request.match_info["topic"]
        t = await self.kafka.topic(name, refresh=True)
        from confluent_kafka.admin import ConfigResource

        res = ConfigResource(ConfigResource.Type.TOPIC, name)
        configs = (await self.kafka.wait(self.kafka.admin.describe_configs([res])))[res]
        return _ok({"name": name,
                    "configs": {} if isinstance(configs, Exception) else
                    {k: c.value for k, c in configs.items()},
                    "partitions": [_partition(p) for _, p in sorted(t.partitions.items())]})

    async def list_partitions(self, request):
        t = await self.kafka.topic(request.match_info["topic"], refresh=True)
        return _ok([_partition(p) for _, p in sorted(t.partitions.items())])

    async def _partition_meta(self, request):
        t = await self.kafka.topic(request.match_info["topic"], refresh=True)
        try:
            return t.partitions[int(request.match_info["partition"])]
        except (KeyError, ValueError):
            raise partition_not_found() from None

    async def get_partition(self, request):
        return _ok(_partition(await self._partition_meta(request)))

    async def partition_offsets(self, request):
        p = await self._partition_meta(request)
        tp = TopicPartition(request.match_info["topic"], p.id)
        low, high = await self.kafka.call(self._watermarks, tp)
        return _ok({"beginning_offset": low, "end_offset": high})

    def _watermarks(self, tp):
        from confluent_kafka import Consumer

        c = Consumer({**self.kafka.client, "group.id": "josefk-rest-offsets"})
        try:
            return c.get_watermark_offsets(tp, timeout=self.kafka.timeout)
        finally:
            c.close()

    async def brokers(self, request):
        md = await self.kafka.metadata()
        return _ok({"brokers": sorted(md.brokers)})

    # -- produce ---------------------------------------------------------------------------
    async def produce_topic(self, request):
        return await self._produce(request, None)

    async def produce_partition(self, request):
        return await self._produce(request, request.match_info["partition"])

    async def _produce(self, request, partition_text):
        fmt = _body_format(request)
        topic = request.match_info["topic"]
        body = parse_json(await request.read())
        records = body.get("records") if isinstance(body, dict) else None
        if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
            raise _unprocessable("'records' must be a list of objects")
        t = await self.kafka.topic(topic)
        fixed = None
        if partition_text is not None:
            try:
                fixed = int(partition_text)
            except ValueError:
                raise partition_not_found() from None
            if fixed not in t.partitions:
                raise partition_not_found()
        for r in records:
            p = r.get("partition")
            if p is not None and (not isinstance(p, int) or p not in t.partitions):
                raise partition_not_found()
        key_id = value_id = None
        if fmt in f.SCHEMA_FORMATS:
            encoded, key_id, value_id = await self.kafka.call(
                self._encode_with_schemas, fmt, topic, body, records)
        else:
            encode = f.encode_binary if fmt == f.BINARY else f.encode_json
            encoded = [(encode(r.get("key")), encode(r.get("value"))) for r in records]
        results = await self.kafka.produce(topic, [
            (fixed if fixed is not None else r.get("partition"), k, v, None, None)
            for r, (k, v) in zip(records, encoded)])
        offsets = []
        for err, part, offset, _ts in results:
            if err is None:
                offsets.append({"partition": part, "offset": offset, "error_code": None,
                                "error": None})
            else:
                code, message = error_fields(err)
                offsets.append({"partition": None, "offset": None, "error_code": code,
                                "error": message})
        return _ok({"key_schema_id": key_id, "value_schema_id": value_id, "offsets": offsets})

    def _encode_with_schemas(self, fmt, topic, body, records):
        """(On a worker thread: the registry may be asked.) The records' bytes and the ids."""
        ids = {}
        for side, code in (("key", 42201), ("value", 42202)):
            if not any(r.get(side) is not None for r in records):
                continue
            schema, schema_id = body.get(f"{side}_schema"), body.get(f"{side}_schema_id")
            if schema is None and schema_id is None:
                raise HttpError(422, code, f"Request includes {side}s and uses a format that "
                                           f"requires schemas, but does not include the "
                                           f"{side}_schema or {side}_schema_id fields")
            if schema_id is not None and not isinstance(schema_id, int):
                raise _unprocessable(f"{side}_schema_id must be an integer")
            if schema is not None and not isinstance(schema, str):
                raise f.schema_error(f"{side}_schema must be a string")
            ids[side] = self.schemas.schema_id(fmt, topic, side == "key", schema, schema_id)
        encoded = [(self.schemas.encode(fmt, ids["key"], r["key"]) if r.get("key") is not None
                    else None,
                    self.schemas.encode(fmt, ids["value"], r["value"]) if r.get("value")
                    is not None else None) for r in records]
        return encoded, ids.get("key"), ids.get("value")

    # -- consumer instances ----------------------------------------------------------------------
    async def create_consumer(self, request):
        group = request.match_info["group"]
        body = parse_json(await request.read()) or {}
        if not isinstance(body, dict):
            raise _unprocessable("the consumer's configuration must be an object")
        fmt = str(body.get("format", f.BINARY)).lower()
        if fmt not in f.FORMATS:
            raise HttpError(422, 42204, f"Invalid consumer configuration: format {fmt!r} is "
                                        f"not one of {', '.join(f.FORMATS)}")
        settings = {}
        reset = body.get("auto.offset.reset")
        if reset is not None:
            if str(reset).lower() not in RESET:
                raise HttpError(422, 42204, f"Invalid consumer configuration: "
                                            f"auto.offset.reset {reset!r}")
            settings["auto.offset.reset"] = RESET[str(reset).lower()]
        if body.get("auto.commit.enable") is not None:
            settings["enable.auto.commit"] = str(body["auto.commit.enable"]).lower() == "true"
        for name in ("fetch.min.bytes", "fetch.max.wait.ms", "session.timeout.ms"):
            if body.get(name) is not None:
                settings[name] = body[name]
        inst = self.instances.create(group, body.get("name"), fmt, settings)
        inst.request_timeout_ms = int(body.get("consumer.request.timeout.ms",
                                               self.request_timeout_ms))
        base = f"{request.scheme}://{request.host}/consumers/{group}/instances/{inst.name}"
        return _ok({"instance_id": inst.name, "base_uri": base})

    def _instance(self, request):
        return self.instances.get(request.match_info["group"], request.match_info["instance"])

    async def delete_consumer(self, request):
        await self.instances.delete(request.match_info["group"], request.match_info["instance"])
        return _no_content()

    async def subscribe(self, request):
        inst = self._instance(request)
        body = parse_json(await request.read())
        if not isinstance(body, dict):
            raise _unprocessable("expected topics or topic_pattern")
        if inst.assigned_manually:
            raise HttpError(409, 40903, "Illegal state: Subscription to topics, partitions and "
                                        "pattern are mutually exclusive")
        if body.get("topic_pattern"):
            topics, inst.pattern = ["^" + str(body["topic_pattern"]).lstrip("^")], True
        elif isinstance(body.get("topics"), list) and body["topics"]:
            topics, inst.pattern = [str(t) for t in body["topics"]], False
        else:
            raise _unprocessable("A list (of Topics type) or a topic_pattern is required")
        await inst.run(inst.consumer.subscribe, topics)
        inst.subscription = topics
        return _no_content()

    async def get_subscription(self, request):
        inst = self._instance(request)
        return _ok({"topics": [] if inst.pattern else inst.subscription})

    async def unsubscribe(self, request):
        inst = self._instance(request)
        await inst.run(inst.consumer.unsubscribe)
        inst.subscription = []
        return _no_content()

    async def assign(self, request):
        inst = self._instance(request)
        partitions = _partitions_of(parse_json(await request.read()))
        if inst.subscription:
            raise HttpError(409, 40903, "Illegal state: Subscription to topics, partitions and "
                                        "pattern are mutually exclusive")
        await inst.run(inst.consumer.assign, partitions)
        inst.assigned_manually = bool(partitions)
        return _no_content()

    async def get_assignments(self, request):
        inst = self._instance(request)
        parts = await inst.run(inst.consumer.assignment)
        return _ok({"partitions": [{"topic": p.topic, "partition": p.partition} for p in parts]})

    async def seek(self, request):
        inst = self._instance(request)
        await inst.run(self._seek, inst, _partitions_of(parse_json(await request.read()),
                                                        "offsets"))
        return _no_content()

    async def seek_beginning(self, request):
        return await self._seek_to(request, OFFSET_BEGINNING)

    async def seek_end(self, request):
        return await self._seek_to(request, OFFSET_END)

    async def _seek_to(self, request, offset):
        inst = self._instance(request)
        parts = _partitions_of(parse_json(await request.read()))
        for p in parts:
            p.offset = offset
        await inst.run(self._seek, inst, parts)
        return _no_content()

    @staticmethod
    def _seek(inst, positions):
        """Seek each partition; a manually assigned partition whose fetcher has not started yet
        is re-assigned at the offset instead."""
        assigned = {(p.topic, p.partition) for p in inst.consumer.assignment()}
        missing = [p for p in positions if (p.topic, p.partition) not in assigned]
        if missing:
            raise HttpError(409, 40903, f"Illegal state: No current assignment for partition "
                                        f"{missing[0].topic}-{missing[0].partition}")
        retry = []
        for p in positions:
            try:
                inst.consumer.seek(p)
            except Exception:  # noqa: BLE001 - librdkafka: the partition is not fetching yet
                retry.append(p)
        if retry and inst.assigned_manually:
            wanted = {(p.topic, p.partition): p.offset for p in retry}
            inst.consumer.assign([TopicPartition(p.topic, p.partition,
                                                 wanted.get((p.topic, p.partition), p.offset))
                                  for p in inst.consumer.assignment()])
        elif retry:
            inst.consumer.seek(retry[0])  # raises the client's own error

    async def commit(self, request):
        """Confluent's answer is an empty list; ``?async`` commits without waiting."""
        inst = self._instance(request)
        body = parse_json(await request.read())
        wait = "async" not in request.query
        offsets = None
        if isinstance(body, dict) and body.get("offsets"):
            offsets = _partitions_of(body, "offsets")
            for p in offsets:  # Confluent's proxy commits "consumed up to offset": offset + 1
                p.offset += 1
        await inst.run(self._commit, inst, offsets, wait)
        return _ok([])

    @staticmethod
    def _commit(inst, offsets, wait: bool):
        try:
            if offsets is None:  # the records answered so far
                inst.consumer.commit(asynchronous=not wait)
            else:
                inst.consumer.commit(offsets=offsets, asynchronous=not wait)
        except KafkaException as e:
            if e.args[0].code() != KafkaError._NO_OFFSET:  # nothing consumed: nothing to commit
                raise

    async def committed(self, request):
        inst = self._instance(request)
        parts = _partitions_of(parse_json(await request.read()))
        got = await inst.run(lambda: inst.consumer.committed(parts, timeout=self.kafka.timeout))
        return _ok({"offsets": [{"topic": p.topic, "partition": p.partition,
                                 "offset": p.offset, "metadata": p.metadata or ""}
                                for p in got]})

    async def records(self, request):
        inst = self._instance(request)
        accept = request.headers.get("Accept", "*/*").split(",")[0].split(";")[0].strip()
        m = _FORMAT.fullmatch(accept.lower())
        if m and m.group(1) != inst.format or not m and accept not in ("*/*", *ACCEPTED):
            raise HttpError(406, 40601, "The requested embedded data format does not match "
                                        "the deserializer for this consumer instance")
        try:
            timeout = int(request.query.get("timeout", inst.request_timeout_ms)) / 1000
            max_bytes = int(request.query.get("max_bytes", self.max_bytes))
        except ValueError:
            raise _unprocessable("timeout and max_bytes are integers") from None
        out = await inst.run(self._fetch, inst, timeout, max_bytes)
        return web.Response(body=out, content_type=f"application/vnd.kafka.{inst.format}.v2+json")

    def _fetch(self, inst, timeout: float, max_bytes: int) -> bytes:
        """Records within ``timeout``: as soon as any are there, all that are (up to
        ``max_bytes`` of keys and values), as the response's JSON. Nothing is skipped: the
        partitions of records not returned are sought back to the first of them, and only the
        returned ones count as consumed (stored for the next commit). A record that cannot be
        read in the instance's format ends the answer before it; when it is the first, the
        answer is Confluent's 50002, again at every request until the consumer seeks past it."""
        first = inst.consumer.poll(timeout)
        msgs = [first] if first is not None else []
        if msgs:
            msgs += inst.consumer.consume(num_messages=499, timeout=0)
        decode = {f.BINARY: f.decode_binary, f.JSON: f.decode_json}.get(inst.format) or \
            functools.partial(self.schemas.decode, inst.format)
        out, size, failure, consumed = [], 0, None, {}
        for i, m in enumerate(msgs):
            err = m.error()
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    continue
                failure = kafka_error(err)
                break
            key, value = m.key(), m.value()
            size += len(key or b"") + len(value or b"")
            if out and size >= max_bytes:  # Confluent's bound (it answers at least one here)
                break
            topic, partition, offset = m.topic(), m.partition(), m.offset()
            try:
                out.append({"topic": topic, "key": decode(key), "value": decode(value),
                            "partition": partition, "offset": offset})
            except Exception as e:  # noqa: BLE001 - any decoder's complaint about the bytes
                failure = HttpError(500, 50002, f"Error deserializing the record at "
                                                f"{topic}-{partition} offset {offset} as "
                                                f"{inst.format}: {e}")
                break
            consumed[topic, partition] = offset + 1
        else:
            i = len(msgs)
        unread: dict = {}
        for m in msgs[i:]:
            if m.error() is None:
                unread.setdefault((m.topic(), m.partition()), m.offset())
        for (topic, partition), offset in unread.items():
            inst.consumer.seek(TopicPartition(topic, partition, offset))
        if consumed:
            inst.consumer.store_offsets(offsets=[TopicPartition(t, p, o)
                                                 for (t, p), o in consumed.items()])
        if failure is not None and not out:
            raise failure
        return orjson.dumps(out)

    def routes(self) -> list:
        g, po, d = web.get, web.post, web.delete
        c = "/consumers/{group}/instances/{instance}"
        return [
            g("/topics", self.list_topics), g("/topics/{topic}", self.get_topic),
            po("/topics/{topic}", self.produce_topic),
            g("/topics/{topic}/partitions", self.list_partitions),
            g("/topics/{topic}/partitions/{partition}", self.get_partition),
            po("/topics/{topic}/partitions/{partition}", self.produce_partition),
            g("/topics/{topic}/partitions/{partition}/offsets", self.partition_offsets),
            g("/brokers", self.brokers),
            po("/consumers/{group}", self.create_consumer), d(c, self.delete_consumer),
            po(c + "/subscription", self.subscribe), g(c + "/subscription", self.get_subscription),
            d(c + "/subscription", self.unsubscribe),
            po(c + "/assignments", self.assign), g(c + "/assignments", self.get_assignments),
            po(c + "/positions", self.seek), po(c + "/positions/beginning", self.seek_beginning),
            po(c + "/positions/end", self.seek_end),
            po(c + "/offsets", self.commit), g(c + "/offsets", self.committed),
            g(c + "/records", self.records),
        ]


def _partition(p) -> dict:
    return {"partition": p.id, "leader": p.leader,
            "replicas": [{"broker": r, "leader": r == p.leader, "in_sync": r in p.isrs}
                         for r in p.replicas]}
