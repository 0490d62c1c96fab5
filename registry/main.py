"""``josefk registry [schema-registry.properties]``: the Schema Registry process, configured with
Confluent's property names."""
from __future__ import annotations

from josefk.broker.config import ConfigError, os_error_text

DEFAULTS = {
    "listeners": "http://0.0.0.0:8081",
    "kafkastore.topic": "_schemas",
    "kafkastore.topic.replication.factor": "3",
    "kafkastore.timeout.ms": "500",
    "kafkastore.init.timeout.ms": "60000",
    "schema.registry.group.id": "schema-registry",
    "leader.eligibility": "true",
    "kafkagroup.session.timeout.ms": "10000",
    "kafkagroup.heartbeat.interval.ms": "3000",
    "kafkagroup.rebalance.timeout.ms": "30000",
    "inter.instance.protocol": "http",
    "authentication.realm": "SchemaRegistry-Props",
    "request.max.bytes": str(16 << 20),
}


def add_commands(sub, kv):
    from josefk.httpd.config import add_service_command

    add_service_command(sub, kv, "registry", "run a Confluent-compatible Schema Registry",
                        "schema-registry.properties", run)


def run(args) -> int:
    from josefk.httpd.server import run_service

    return run_service(args, "registry", DEFAULTS, "kafkastore.bootstrap.servers", serve)


def bootstrap_servers(value: str) -> str:
    """Kafka's bootstrap list without Confluent's optional ``PROTOCOL://`` prefixes."""
    return ",".join(s.strip().rpartition("://")[2] for s in value.split(",") if s.strip())


async def serve(config, bound: list) -> int:
    import asyncio

    import aiohttp
    from aiohttp import web

    from josefk.httpd.config import (client_logging, kafka_error_text, kafka_security,
                                     librdkafka_settings)
    from josefk.httpd.server import ServiceError, middlewares, serve as serve_http
    from josefk.registry.app import BODY_TYPES, CONTENT_TYPE, Registry
    from josefk.registry.election import Election
    from josefk.registry.kafkastore import KafkaStore
    from josefk.registry.state import State

    loop = asyncio.get_running_loop()
    security = kafka_security(config, "kafkastore.")
    bootstrap = bootstrap_servers(config.get("kafkastore.bootstrap.servers"))
    try:
        kafka = {"bootstrap.servers": bootstrap, **librdkafka_settings(security),
                 **client_logging("josefk.registry.kafka")}
        app = web.Application(middlewares=middlewares(config, CONTENT_TYPE, BODY_TYPES,
                                                      "SCHEMA_REGISTRY_OPTS"),
                              client_max_size=config.int("request.max.bytes"))
    except OSError as e:  # a keystore or JAAS file
        raise ConfigError(os_error_text(e)) from None
    state = State()
    store = KafkaStore(kafka, config.get("kafkastore.topic"),
                       config.int("kafkastore.topic.replication.factor"),
                       config.int("kafkastore.timeout.ms"),
                       config.int("kafkastore.init.timeout.ms"), state)
    scheme = config.get("inter.instance.protocol").lower()
    listener = next((l for l in config.listeners() if l.scheme == scheme),
                    config.listeners()[0])
    identity = {"version": 1, "host": config.advertised_host(listener), "port": listener.port,
                "scheme": listener.scheme,
                "master_eligibility": config.bool(
                    "leader.eligibility", config.bool("master.eligibility", True))}
    forward_ssl = None
    if listener.scheme == "https":
        from josefk.broker.security.listeners import client_ssl_context

        forward_ssl = client_ssl_context(config.get)
    registry = Registry(store, state, identity, forward_ssl)
    app.add_routes(registry.routes())
    election = Election(bootstrap, security, config.get("schema.registry.group.id"), identity,
                        lambda primary: loop.call_soon_threadsafe(registry.set_primary, primary),
                        config.int("kafkagroup.session.timeout.ms"),
                        config.int("kafkagroup.heartbeat.interval.ms"),
                        config.int("kafkagroup.rebalance.timeout.ms"))

    async def read_store():
        try:
            await store.start()
        except Exception as e:  # noqa: BLE001 - any failure to reach the cluster
            raise ServiceError(f"cannot use {config.get('kafkastore.topic')} on {bootstrap}: "
                               f"{kafka_error_text(e)}") from None
        registry.session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30))

    try:
        return await serve_http(app, config, "registry", bound, on_started=_start(election),
                                prepare=read_store)
    finally:
        await loop.run_in_executor(None, election.stop)
        if registry.session is not None:
            await registry.session.close()
        store.stop()


def _start(election):
    async def started():
        election.start()

    return started
