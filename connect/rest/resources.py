"""Kafka Connect's REST resources (``ConnectorsResource``, ``ConnectorPluginsResource``,
``RootResource``, ``LoggingResource``; KIP-495, KIP-558, KIP-745, KIP-769, KIP-875, KIP-1017):
each route asks the herder and answers with Connect's status code and JSON shape. Failures are
``HerderError``s (their status and message make Connect's error body); a ``NotLeader`` goes
on to the server's forwarding middleware."""
from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from urllib.parse import quote

import orjson
from aiohttp import web

from josefk.connect.runtime.herder import (SIGNATURE_ALGORITHM_HEADER, SIGNATURE_HEADER,
                                           BadRequest, Herder, HerderError, NotFound,
                                           RequestSignature)
from josefk.connect.runtime.loggers import LEVELS

log = logging.getLogger("josefk.connect.rest")

UNKNOWN_COMMIT = "unknown"  # what Kafka's AppInfoParser says of a build without its commit id
HEALTHY = "Worker has completed startup and is ready to handle requests."
UNHEALTHY = ("Worker was unable to handle this request and may be unable to handle other "
             "requests")
STARTING = "Worker is still starting up."
# KIP-980's initial states, as the TargetState each becomes
INITIAL_STATES = {"RUNNING": "STARTED", "PAUSED": "PAUSED", "STOPPED": "STOPPED"}
INITIAL_STATE_CLASS = "org.apache.kafka.connect.runtime.rest.entities.CreateConnectorRequest" \
    ".InitialState"
NO_OFFSETS = "Partitions / offsets need to be provided for an alter offsets request"


@dataclass
class Settings:
    request_timeout_s: float
    topic_tracking: bool
    topic_tracking_reset: bool


HERDER = web.AppKey("herder", Herder)
SETTINGS = web.AppKey("settings", Settings)
routes = web.RouteTableDef()


def ok(body, status: int = 200, headers=None) -> web.Response:
    return web.Response(body=orjson.dumps(body), status=status, headers=headers,
                        content_type="application/json")


async def ask(request: web.Request, call):
    """The herder's answer to ``call`` (a coroutine) within Connect's request timeout (500
    ``Request timed out`` after it; the herder's work goes on)."""
    task = asyncio.ensure_future(call)
    try:
        return await asyncio.wait_for(asyncio.shield(task),
                                      request.app[SETTINGS].request_timeout_s)
    except TimeoutError:
        # its outcome, when it comes, has no one to answer: taken so that it is not reported
        task.add_done_callback(lambda t: t.cancelled() or t.exception())
        raise HerderError("Request timed out", 500) from None


async def json_body(request: web.Request):
    raw = await request.read()
    if not raw.strip():
        return None
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as e:
        raise BadRequest(f"Malformed JSON request body: {e}") from None


def string_map(value, what: str, allow_null: bool = False) -> dict:
    """A JSON object read as Java's ``Map<String, String>``: numbers and booleans become their
    text, as Jackson coerces them; null only where ``allow_null`` (a patch's removals)."""
    if not isinstance(value, dict):
        raise BadRequest(f"{what} must be a JSON object of strings")
    out = {}
    for key, v in value.items():
        if isinstance(v, bool):
            v = "true" if v else "false"
        elif isinstance(v, (int, float)):
            v = str(v)
        elif v is None and allow_null:
            pass
        elif not isinstance(v, str):
            raise BadRequest(f"{what}: the value of {key!r} must be a string"
                             + (" or null" if allow_null else ""))
        out[key] = v
    return out


def _flag(request: web.Request, name: str, default: bool) -> bool:
    value = request.query.get(name)
    return default if value is None else value.lower() == "true"


def _name(request: web.Request) -> str:
    return request.match_info["name"]


def _check_name(name: str, config: dict) -> None:
    """The config's ``name`` must be the connector's (set from it when absent)."""
    included = config.get("name")
    if included is None:
        config["name"] = name
    elif included != name:
        raise BadRequest(f"Connector name configuration ({included}) doesn't match connector "
                         f"name in the URL ({name})")


def _created(request: web.Request, name: str, info: dict, created: bool) -> web.Response:
    if not created:
        return ok(info)
    location = f"{request.url.origin()}/connectors/{quote(name, safe='')}"
    return ok(info, 201, {"Location": location})


def _herder(request: web.Request) -> Herder:
    return request.app[HERDER]


# -- the worker ------------------------------------------------------------------------------------
@routes.get("/")
async def server_info(request):
    try:
        release = version("josefk")
    except PackageNotFoundError:
        release = UNKNOWN_COMMIT
    return ok({"version": release, "commit": UNKNOWN_COMMIT,
               "kafka_cluster_id": _herder(request).kafka_cluster_id()})


@routes.get("/health")
async def health(request):
    """KIP-1017: starting (503) until the herder has completed start-up; then healthy when it
    answers a request within the request timeout."""
    if not _herder(request).ready():
        return ok({"status": "starting", "message": STARTING}, 503)
    try:
        await ask(request, _herder(request).connectors())
    except HerderError as e:
        log.warning("Health check failed: %s", e.message)
        return ok({"status": "unhealthy", "message": UNHEALTHY}, 500)
    return ok({"status": "healthy", "message": HEALTHY})


# -- connectors ------------------------------------------------------------------------------------
@routes.get("/connectors")
@routes.get("/connectors/")
async def list_connectors(request):
    herder = _herder(request)
    names = await ask(request, herder.connectors())
    expansions = request.query.getall("expand", [])
    if not expansions:
        return ok(names)
    asks = {"status": herder.connector_status, "info": herder.connector_info}
    out = {}
    for name in names:
        try:
            out[name] = {e: await ask(request, asks[e](name)) for e in expansions if e in asks}
        except NotFound:  # deleted while we looked
            continue
    return ok(out)


@routes.post("/connectors")
@routes.post("/connectors/")
async def create_connector(request):
    body = await json_body(request)
    if not isinstance(body, dict):
        raise BadRequest("Request body must be a JSON object with \"name\" and \"config\"")
    name = body.get("name")
    if name is not None and not isinstance(name, str):
        raise BadRequest("Connector name must be a string")
    name = (name or "").strip()
    if body.get("config") is None:
        raise BadRequest("Connector config is missing (\"config\": {...})")
    config = string_map(body["config"], "Connector config")
    _check_name(name, config)
    _created_now, info = await ask(request, _herder(request).put_connector_config(
        name, config, False, _initial_state(body.get("initial_state"))))
    return _created(request, name, info, True)


def _initial_state(value) -> str | None:
    """KIP-980's ``initial_state`` (any case, as Connect's InitialState.forValue) as a target
    state; an unknown one is refused with the message Java's Enum.valueOf gives."""
    if value is None:
        return None
    if not isinstance(value, str) or value.upper() not in INITIAL_STATES:
        raise BadRequest(f"No enum constant {INITIAL_STATE_CLASS}.{str(value).upper()}")
    return INITIAL_STATES[value.upper()]


def _signature(request: web.Request, body: bytes) -> RequestSignature | None:
    """The KIP-507 signature of an internal request (None: its headers carry none)."""
    algorithm = request.headers.get(SIGNATURE_ALGORITHM_HEADER)
    signature = request.headers.get(SIGNATURE_HEADER)
    if algorithm is None or signature is None:
        return None
    return RequestSignature(body, algorithm, signature)


@routes.get("/connectors/{name}")
async def connector_info(request):
    return ok(await ask(request, _herder(request).connector_info(_name(request))))


@routes.delete("/connectors/{name}")
async def delete_connector(request):
    await ask(request, _herder(request).delete_connector(_name(request)))
    return web.Response(status=204)


@routes.get("/connectors/{name}/config")
async def connector_config(request):
    return ok(await ask(request, _herder(request).connector_config(_name(request))))


@routes.put("/connectors/{name}/config")
async def put_connector_config(request):
    name = _name(request)
    config = string_map(await json_body(request), "Connector config")
    _check_name(name, config)
    created, info = await ask(request, _herder(request).put_connector_config(name, config, True))
    return _created(request, name, info, created)


@routes.patch("/connectors/{name}/config")
async def patch_connector_config(request):
    name = _name(request)
    patch = string_map(await json_body(request), "Connector config patch", allow_null=True)
    if patch.get("name") is not None and patch["name"] != name:
        raise BadRequest(f"Connector name configuration ({patch['name']}) doesn't match "
                         f"connector name in the URL ({name})")
    return ok(await ask(request, _herder(request).patch_connector_config(name, patch)))


@routes.get("/connectors/{name}/status")
async def connector_status(request):
    return ok(await ask(request, _herder(request).connector_status(_name(request))))


@routes.get("/connectors/{name}/tasks")
async def task_configs(request):
    return ok(await ask(request, _herder(request).task_configs(_name(request))))


@routes.post("/connectors/{name}/tasks")
async def put_task_configs(request):
    """Internal (KIP-507): a follower's connector's task configs, for the leader to write."""
    raw = await request.read()
    configs = await json_body(request)
    if not isinstance(configs, list):
        raise BadRequest("Task configs must be a JSON array of objects")
    configs = [string_map(c, "Task config") for c in configs]
    await ask(request, _herder(request).put_task_configs(_name(request), configs,
                                                         _signature(request, raw)))
    return web.Response(status=204)


@routes.put("/connectors/{name}/fence")
async def fence_zombies(request):
    """Internal (KIP-618): the leader fences the connector's previous task generation."""
    raw = await request.read()
    await ask(request, _herder(request).fence_zombies(_name(request), _signature(request, raw)))
    return web.Response(status=204)


@routes.get(r"/connectors/{name}/tasks/{task:-?\d+}/status")
async def task_status(request):
    return ok(await ask(request, _herder(request).task_status(
        _name(request), int(request.match_info["task"]))))


@routes.post(r"/connectors/{name}/tasks/{task:-?\d+}/restart")
async def restart_task(request):
    await ask(request, _herder(request).restart_task(_name(request),
                                                     int(request.match_info["task"])))
    return web.Response(status=204)


@routes.get("/connectors/{name}/topics")
async def connector_topics(request):
    if not request.app[SETTINGS].topic_tracking:
        raise HerderError("Topic tracking is disabled.", 403)
    name = _name(request)
    return ok({name: {"topics": await ask(request, _herder(request).connector_topics(name))}})


@routes.put("/connectors/{name}/topics/reset")
async def reset_connector_topics(request):
    settings = request.app[SETTINGS]
    if not settings.topic_tracking:
        raise HerderError("Topic tracking is disabled.", 403)
    if not settings.topic_tracking_reset:
        raise HerderError("Topic tracking reset is disabled.", 403)
    await ask(request, _herder(request).reset_connector_topics(_name(request)))
    return web.Response(status=202)


@routes.post("/connectors/{name}/restart")
async def restart_connector(request):
    """KIP-745: 204 when only the connector restarts, else 202 with what restarts."""
    status = await ask(request, _herder(request).restart_connector(
        _name(request), _flag(request, "includeTasks", False),
        _flag(request, "onlyFailed", False)))
    return web.Response(status=204) if status is None else ok(status, 202)


@routes.put("/connectors/{name}/pause")
async def pause_connector(request):
    await ask(request, _herder(request).pause_connector(_name(request)))
    return web.Response(status=202)


@routes.put("/connectors/{name}/resume")
async def resume_connector(request):
    await ask(request, _herder(request).resume_connector(_name(request)))
    return web.Response(status=202)


@routes.put("/connectors/{name}/stop")
async def stop_connector(request):
    await ask(request, _herder(request).stop_connector(_name(request)))
    return web.Response(status=204)


@routes.get("/connectors/{name}/offsets")
async def connector_offsets(request):
    return ok(await ask(request, _herder(request).connector_offsets(_name(request))))


@routes.patch("/connectors/{name}/offsets")
async def alter_connector_offsets(request):
    body = await json_body(request)
    offsets = body.get("offsets") if isinstance(body, dict) else None
    if not offsets or not isinstance(offsets, list):
        raise BadRequest(NO_OFFSETS)
    if not all(isinstance(o, dict) and isinstance(o.get("partition"), dict) for o in offsets):
        raise BadRequest("Each offset must be a JSON object with a \"partition\" object and an "
                         "\"offset\" object (or null)")
    message = await ask(request, _herder(request).alter_connector_offsets(_name(request),
                                                                          offsets))
    return ok({"message": message})


@routes.delete("/connectors/{name}/offsets")
async def reset_connector_offsets(request):
    message = await ask(request, _herder(request).reset_connector_offsets(_name(request)))
    return ok({"message": message})


# -- connector plug-ins ----------------------------------------------------------------------------
@routes.get("/connector-plugins")
@routes.get("/connector-plugins/")
async def connector_plugins(request):
    return ok(await ask(request, _herder(request).connector_plugins(
        _flag(request, "connectorsOnly", True))))


@routes.get("/connector-plugins/{plugin}/config")
async def plugin_config(request):
    return ok(await ask(request, _herder(request).plugin_config(request.match_info["plugin"])))


def _java_map(config: dict) -> str:
    return "{" + ", ".join(f"{k}={v}" for k, v in config.items()) + "}"


def _plugin_base(name: str) -> str:
    """A plug-in's name without the ``Connector`` suffix, as Connect compares them."""
    return name.removesuffix("Connector")


@routes.put("/connector-plugins/{plugin}/config/validate")
async def validate_config(request):
    plugin = request.match_info["plugin"]
    config = string_map(await json_body(request), "Connector config")
    included = config.get("connector.class")
    if included is None:
        raise BadRequest(f"Connector config {_java_map(config)} contains no connector type")
    if not _plugin_base(included).endswith(_plugin_base(plugin)):
        raise BadRequest(f"Included connector type {included} does not match request type "
                         f"{plugin}")
    return ok(await ask(request, _herder(request).validate_connector_config(config)))


# -- log levels (KIP-495) --------------------------------------------------------------------------
@routes.get("/admin/loggers")
@routes.get("/admin/loggers/")
async def all_loggers(request):
    return ok(_herder(request).loggers.all_levels())


@routes.get("/admin/loggers/{logger}")
async def logger_level(request):
    name = request.match_info["logger"]
    level = _herder(request).loggers.level(name)
    if level is None:
        raise NotFound(f"Logger {name} not found.")
    return ok(level)


@routes.put("/admin/loggers/{logger}")
async def set_logger_level(request):
    """Worker scope (by default): the loggers set on this worker. ``scope=cluster`` (KIP-976):
    every worker of the cluster, through the config topic, answered 204."""
    body = await json_body(request)
    level = body.get("level") if isinstance(body, dict) else None
    if level is None:
        raise BadRequest("Desired 'level' parameter was not specified in request.")
    if not isinstance(level, str) or level.upper() not in LEVELS:
        raise NotFound(f"invalid log level '{level}'.")
    namespace = request.match_info["logger"]
    scope = request.query.get("scope", "worker").lower()
    if scope == "cluster":
        await ask(request, _herder(request).set_cluster_logger_level(namespace, level.upper()))
        return web.Response(status=204)
    if scope != "worker":
        log.warning("Received invalid scope '%s' in request to adjust logging level; will "
                    "default to worker", scope)
    return ok(_herder(request).loggers.set_level(namespace, level.upper()))
