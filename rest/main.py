"""``josefk rest [kafka-rest.properties]``: the REST Proxy process, configured with Confluent's
property names (``bootstrap.servers``, ``schema.registry.url``, ``client.*`` for the Kafka
clients' security, ``producer.*`` / ``consumer.*`` / ``admin.*`` for one client's settings)."""
from __future__ import annotations

import asyncio
import logging
import sys

from josefk.broker.config import ConfigError

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
    r = sub.add_parser("rest", help="run a Confluent-compatible REST Proxy")
    r.add_argument("config", nargs="?", help="kafka-rest.properties file")
    r.add_argument("--override", action="append", type=kv, default=[], metavar="KEY=VALUE",
                   help="set any REST Proxy property (repeatable)")
    r.add_argument("--log-level", default="INFO")
    r.set_defaults(func=run)


def run(args) -> int:
    from josefk.httpd.config import ServiceConfig
    from josefk.httpd.server import run as run_loop

    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        config = ServiceConfig.load(args.config, dict(args.override), DEFAULTS)
        if not config.get("bootstrap.servers"):
            raise ConfigError("bootstrap.servers is required")
        config.listeners()
    except (ConfigError, OSError) as e:
        print(f"josefk rest: bad configuration: {e}", file=sys.stderr)
        return 2
    return run_loop(lambda: serve(config))


def registry_settings(config) -> dict | None:
    """confluent-kafka's SchemaRegistryClient settings from ``schema.registry.*``."""
    url = config.get("schema.registry.url")
    if not url:
        return None
    conf = {"url": url}
    sr = config.prefixed("schema.registry.")
    if sr.get("basic.auth.user.info"):
        conf["basic.auth.user.info"] = sr["basic.auth.user.info"]
    if sr.get("ssl.truststore.location"):
        conf["ssl.ca.location"] = sr["ssl.truststore.location"]
    if sr.get("ssl.keystore.location"):
        conf["ssl.certificate.location"] = conf["ssl.key.location"] = sr["ssl.keystore.location"]
    return conf


async def serve(config) -> int:
    from aiohttp import web

    from josefk.httpd.config import kafka_security, librdkafka_settings
    from josefk.httpd.server import middlewares, serve as serve_http
    from josefk.registry.main import bootstrap_servers
    from josefk.rest.consumers import Instances
    from josefk.rest.formats import SchemaFormats
    from josefk.rest.kafka import Kafka
    from josefk.rest.v2 import CONTENT_TYPE, V2
    from josefk.rest.v3 import V3

    try:
        client = {"bootstrap.servers": bootstrap_servers(config.get("bootstrap.servers")),
                  **librdkafka_settings(kafka_security(config, "client."))}
        per_client = {p: {k: v for k, v in config.prefixed(p).items()
                          if p + k not in DEFAULTS} for p in _CLIENT_PREFIXES}
        kafka = Kafka(client, per_client["producer."], per_client["admin."],
                      config.int("kafka.timeout.ms"))
        app = web.Application(
            middlewares=middlewares(config, lambda r: "application/json" if r.path.startswith(
                "/v3") else CONTENT_TYPE, BODY_TYPES, "KAFKAREST_OPTS"),
            client_max_size=config.int("request.max.bytes"))
    except (ConfigError, OSError, ValueError) as e:
        print(f"josefk rest: bad configuration: {e}", file=sys.stderr)
        return 2
    schemas = SchemaFormats(registry_settings(config))
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
        return await serve_http(app, config, "rest", on_started=started)
    finally:
        if expiry:
            expiry.cancel()
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, instances.close_all)
        await loop.run_in_executor(None, kafka.close)
