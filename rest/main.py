"""``josefk rest [kafka-rest.properties]``: the REST Proxy process, configured with Confluent's
property names (``bootstrap.servers``, ``schema.registry.url``, ``client.*`` for the Kafka
clients' security, ``producer.*`` / ``consumer.*`` / ``admin.*`` for one client's settings)."""
from __future__ import annotations

import asyncio

from josefk.broker.config import ConfigError, os_error_text

DEFAULTS = {
    "listeners": "http://0.0.0.0:8082",
    "consumer.request.timeout.ms": "1000",
    "consumer.request.max.bytes": str(64 << 20),
    "consumer.instance.timeout.ms": "300000",
    "kafka.timeout.ms": "30000",
    "authentication.realm": "KafkaRest",
    "request.max.bytes": str(64 << 20),
}
BODY_TYPES = tuple(f"application/vnd.kafka.{f}.v2+json" for f in (
    "binary", "json", "avro", "jsonschema", "protobuf")) + (
    "application/vnd.kafka.v2+json", "application/vnd.kafka+json", "application/json",
    "application/octet-stream")
# librdkafka settings a REST user may pass per client (Confluent passes any Java client config).
_CLIENT_PREFIXES = ("producer.", "consumer.", "admin.")


def add_commands(sub, kv):
    from josefk.httpd.config import add_service_command

    add_service_command(sub, kv, "rest", "run a Confluent-compatible REST Proxy",
                        "kafka-rest.properties", run)


def run(args) -> int:
    from josefk.httpd.server import run_service

    return run_service(args, "rest", DEFAULTS, "bootstrap.servers", serve)


async def serve(config, bound: list) -> int:
    from aiohttp import web

    from josefk.httpd.config import client_logging, kafka_security, librdkafka_settings
    from josefk.httpd.server import middlewares, serve as serve_http
    from josefk.registry.client import registry_client_settings
    from josefk.registry.main import bootstrap_servers
    from josefk.rest.consumers import Instances
    from josefk.rest.formats import SchemaFormats
    from josefk.rest.kafka import Kafka
    from josefk.rest.v2 import CONTENT_TYPE, V2
    from josefk.rest.v3 import V3

    try:
        client = {"bootstrap.servers": bootstrap_servers(config.get("bootstrap.servers")),
                  **librdkafka_settings(kafka_security(config, "client.")),
                  **client_logging("josefk.rest.kafka")}
        per_client = {p: {k: v for k, v in config.prefixed(p).items()
                          if p + k not in DEFAULTS} for p in _CLIENT_PREFIXES}
        kafka = Kafka(client, per_client["producer."], per_client["admin."],
                      config.int("kafka.timeout.ms"))
        app = web.Application(
            middlewares=middlewares(config, lambda r: "application/json" if r.path.startswith(
                "/v3") else CONTENT_TYPE, BODY_TYPES, "KAFKAREST_OPTS"),
            client_max_size=config.int("request.max.bytes"))
    except (OSError, ValueError) as e:  # a keystore or JAAS file, a client setting
        raise ConfigError(os_error_text(e) if isinstance(e, OSError) else str(e)) from None
    schemas = SchemaFormats(registry_client_settings(config.props))
    instances = Instances(client, per_client["consumer."],
                          config.int("consumer.instance.timeout.ms"))
    app.add_routes(V2(kafka, schemas, instances, config.int("consumer.request.timeout.ms"),
                      config.int("consumer.request.max.bytes")).routes())
    app.add_routes(V3(kafka, schemas).routes())
    app.router.add_get("/", lambda r: web.json_response({}))
    expiry = None

    async def started():
        nonlocal expiry
        expiry = asyncio.ensure_future(instances.expire())

    try:
        return await serve_http(app, config, "rest", bound, on_started=started)
    finally:
        if expiry:
            expiry.cancel()
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, instances.close_all)
        await loop.run_in_executor(None, kafka.close)
