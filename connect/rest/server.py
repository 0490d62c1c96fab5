"""The REST server of a Connect worker: its listeners (``listeners``, ``listeners.https.ssl.*``
falling back to the worker's ``ssl.*``), basic authentication (``rest.extension.classes`` naming
Connect's ``BasicAuthSecurityRestExtension``, with its JAAS ``KafkaConnect`` section), Connect's
error bodies (``{"error_code": <HTTP status>, "message": ...}``), the herder's answers given
within the request timeout, and requests the herder refuses with ``NotLeader`` forwarded to the
group's leader as Connect's ``HerderRequestHandler`` forwards them."""
from __future__ import annotations

import asyncio
import logging
import os
import socket
import ssl
from typing import Callable
from urllib.parse import urlsplit

import aiohttp
import orjson
from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST

from josefk.broker.config import ConfigError
from josefk.broker.security.listeners import client_ssl_context, load_keystore, load_truststore
from josefk.connect.rest.resources import HERDER, SETTINGS, Settings, routes
from josefk.connect.runtime.herder import (SIGNATURE_ALGORITHM_HEADER, SIGNATURE_HEADER, Herder,
                                           HerderError, NotLeader)
from josefk.httpd.config import ServiceConfig
from josefk.httpd.server import BasicAuth, ServiceError

log = logging.getLogger("josefk.connect.rest")

DEFAULT_LISTENERS = ["http://:8083"]
REQUEST_TIMEOUT_S = 90.0  # Connect's REST request timeout
BASIC_AUTH_EXTENSION = \
    "org.apache.kafka.connect.rest.basic.auth.extension.BasicAuthSecurityRestExtension"
JAAS_SECTION = "KafkaConnect"
_CLIENT_AUTH = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL,
                "required": ssl.CERT_REQUIRED}
_TLS_VERSIONS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}
NO_LEADER = ("Cannot complete request momentarily due to no known leader URL, likely because a "
             "rebalance was underway.")
TOO_MANY_HOPS = ("Cannot complete request because of a conflicting operation (e.g. worker "
                 "rebalance)")
UNAUTHORIZED = "User cannot access the resource."


def error_response(status: int, message: str) -> web.Response:
    return web.json_response({"error_code": status, "message": message}, status=status,
                             dumps=lambda v: orjson.dumps(v).decode())


# -- settings from the worker's properties -----------------------------------------------------
def parse_listener(url: str) -> tuple[str, str, int]:
    """(scheme, host, port) of a ``listeners`` value; an empty host binds every interface."""
    parts = urlsplit(url.strip())
    try:
        port = parts.port
    except ValueError:
        port = None
    if parts.scheme not in ("http", "https") or port is None:
        raise ConfigError(f"Invalid value {url} for configuration listeners: expected "
                          "http://host:port or https://host:port")
    return parts.scheme, parts.hostname or "", port


def _urls(value) -> list[str]:
    return [u.strip() for u in str(value or "").split(",") if u.strip()]


def ssl_settings_of(props: dict, prefix: str = "listeners.https.") -> dict:
    """The https listeners' ``ssl.*`` settings, as Connect takes them: every ``prefix``ed
    setting if there is one, else the worker's own ``ssl.*``."""
    prefixed = {k.removeprefix(prefix): v for k, v in props.items() if k.startswith(prefix)}
    chosen = prefixed or props
    return {k: str(v) for k, v in chosen.items() if k.startswith("ssl.")}


def _https_context(listeners, settings: dict) -> ssl.SSLContext | None:
    if any(scheme == "https" for scheme, _host, _port in listeners):
        return server_ssl_context(settings)
    return None


def basic_auth_of(props: dict) -> BasicAuth | None:
    """Connect's basic authentication when ``rest.extension.classes`` names its extension: the
    JAAS file's ``KafkaConnect`` section (``java.security.auth.login.config``, or
    ``-Djava.security.auth.login.config=`` in KAFKA_OPTS) names Connect's
    PropertyFileLoginModule and its ``user: password`` file."""
    extensions = [c.strip() for c in str(props.get("rest.extension.classes", "")).split(",")
                  if c.strip()]
    unknown = [c for c in extensions if c != BASIC_AUTH_EXTENSION]
    if unknown:
        raise ConfigError(f"rest.extension.classes: {', '.join(unknown)} not available (only "
                          f"{BASIC_AUTH_EXTENSION})")
    if not extensions:
        return None
    jaas = {"authentication.realm": JAAS_SECTION}
    if props.get("java.security.auth.login.config"):
        jaas["java.security.auth.login.config"] = props["java.security.auth.login.config"]
    try:
        return BasicAuth(ServiceConfig(jaas, {}), "KAFKA_OPTS")
    except OSError as e:
        raise ConfigError(f"cannot read the JAAS configuration: {e.strerror}: "
                          f"{e.filename}") from None


def server_ssl_context(settings: dict) -> ssl.SSLContext:
    """An https listener's context from Kafka's ``ssl.*`` names (keystore, truststore,
    ``ssl.client.auth`` none/requested/required, ``ssl.enabled.protocols``)."""
    get = settings.get
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        load_keystore(ctx, get)
        load_truststore(ctx, get)
    except (OSError, ssl.SSLError) as e:
        raise ConfigError(f"https listener: cannot load TLS keys or certificates: {e}") from None
    auth = (get("ssl.client.auth") or "none").lower()
    if auth not in _CLIENT_AUTH:
        raise ConfigError(f"ssl.client.auth must be none, requested or required, not {auth}")
    ctx.verify_mode = _CLIENT_AUTH[auth]
    versions = [v.strip() for v in (get("ssl.enabled.protocols") or "TLSv1.2,TLSv1.3").split(",")
                if v.strip()]
    if not versions or any(v not in _TLS_VERSIONS for v in versions):
        raise ConfigError(f"ssl.enabled.protocols: {','.join(versions)} (TLSv1.2, TLSv1.3)")
    ctx.minimum_version = min(_TLS_VERSIONS[v] for v in versions)
    ctx.maximum_version = max(_TLS_VERSIONS[v] for v in versions)
    return ctx


def forwarding_ssl_context(settings: dict) -> ssl.SSLContext:
    """What a worker trusts when it forwards to a leader's https listener: the listeners'
    truststore (and keystore, for a client certificate), else the system's certificates."""
    if not any(k.startswith(("ssl.truststore.", "ssl.ca.")) for k in settings):
        return ssl.create_default_context()
    try:
        return client_ssl_context(settings.get)
    except (OSError, ssl.SSLError) as e:
        raise ConfigError(f"cannot load the REST client's truststore: {e}") from None


def _bool(props: dict, name: str, default: bool) -> bool:
    value = str(props.get(name, default)).strip().lower()
    if value not in ("true", "false"):
        raise ConfigError(f"Invalid value {props.get(name)} for configuration {name}: Expected "
                          "value to be either true or false")
    return value == "true"


# -- the middlewares: errors, authentication, forwarding ------------------------------------------
@web.middleware
async def connect_errors(request: web.Request, handler):
    """Every failure in Connect's error body; a JSON resource refuses other media types (415),
    as Jersey's ``@Consumes(APPLICATION_JSON)`` does."""
    try:
        if request.method in ("POST", "PUT", "PATCH") and request.body_exists:
            ctype = request.headers.get("Content-Type", "").split(";")[0].strip().lower()
            if ctype and ctype != "application/json":
                return error_response(415, "HTTP 415 Unsupported Media Type")
        return await handler(request)
    except HerderError as e:
        return error_response(e.status, e.message)
    except web.HTTPException as e:
        if e.status < 400:
            raise
        response = error_response(e.status, f"HTTP {e.status} {e.reason}")
        if "Allow" in e.headers:
            response.headers["Allow"] = e.headers["Allow"]
        return response
    except Exception as e:  # noqa: BLE001 - one request's failure never stops the worker
        log.exception("Uncaught exception in REST call to %s", request.path)
        return error_response(500, str(e) or type(e).__name__)


CORS_METHODS = "GET,POST,HEAD"  # Jetty's CrossOriginFilter's defaults, which Connect keeps
CORS_HEADERS = "X-Requested-With,Content-Type,Accept,Origin"


def cross_origin(origins: str, methods: str) -> web.middleware:
    """Jetty's CrossOriginFilter as Connect sets it up (``access.control.allow.origin``: ``*``
    or a comma-separated list of origins; ``access.control.allow.methods``): a request from an
    allowed origin is answered with ``Access-Control-Allow-Origin`` (its origin) and
    credentials allowed; a preflight for an allowed method also with the methods and headers
    allowed."""
    allowed = {o.strip() for o in origins.split(",") if o.strip()}
    allowed_methods = [m.strip().upper() for m in (methods or CORS_METHODS).split(",")
                       if m.strip()]

    @web.middleware
    async def cors(request: web.Request, handler):
        origin = request.headers.get("Origin")
        if origin is None or ("*" not in allowed and origin not in allowed):
            return await handler(request)
        headers = {"Access-Control-Allow-Origin": origin,
                   "Access-Control-Allow-Credentials": "true"}
        wanted = request.headers.get("Access-Control-Request-Method")
        if request.method == "OPTIONS" and wanted is not None:
            if wanted.upper() in allowed_methods:
                headers.update({"Access-Control-Allow-Methods": ",".join(allowed_methods),
                                "Access-Control-Allow-Headers": CORS_HEADERS,
                                "Access-Control-Max-Age": "1800"})
                return web.Response(status=200, headers=headers)
            return web.Response(status=200)
        response = await handler(request)
        response.headers.update(headers)
        return response

    return cors


def authentication(auth) -> web.middleware:
    """Connect's JaasBasicAuthFilter: a request without valid credentials gets 401 and its
    plain-text message."""
    @web.middleware
    async def authenticate(request: web.Request, handler):
        if auth.verdict(request.headers.get("Authorization")) is not None:
            return web.Response(status=401, text=UNAUTHORIZED)
        return await handler(request)

    return authenticate


def forwarding(client_ssl: ssl.SSLContext | None, timeout_s: float) -> web.middleware:
    """A request the herder refused with ``NotLeader`` goes to the leader's URL with
    ``?forward=`` (true from the worker the user asked, so the leader may forward once more;
    false from there on), the request's query, body and ``Authorization``; the leader's answer
    is this request's answer. Two hops without a leader answering is a conflict (409)."""
    timeout = aiohttp.ClientTimeout(total=timeout_s)

    @web.middleware
    async def forward(request: web.Request, handler):
        try:
            return await handler(request)
        except NotLeader as e:
            hop = request.query.get("forward")
            if hop is not None and hop.lower() != "true":
                log.error("Request '%s %s' failed because it couldn't find the target Connect "
                          "worker within two hops (between workers).", request.method,
                          request.path)
                return error_response(409, TOO_MANY_HOPS)
            if e.leader_url is None:
                return error_response(409, NO_LEADER)
            query = [("forward", "true" if hop is None else "false")]
            query += [(k, v) for k, v in request.query.items() if k != "forward"]
            url = e.leader_url.rstrip("/") + request.raw_path.split("?")[0]
            headers = {"Content-Type": "application/json", "Accept": "application/json"}
            for name in ("Authorization", SIGNATURE_HEADER, SIGNATURE_ALGORITHM_HEADER):
                if name in request.headers:
                    headers[name] = request.headers[name]
            body = await request.read()
            log.debug("Forwarding request %s %s %s", request.method, url, body)
            try:
                async with aiohttp.ClientSession(timeout=timeout) as session:
                    async with session.request(
                            request.method, url, params=query, data=body or None,
                            headers=headers,
                            ssl=client_ssl if url.startswith("https:") else None) as answer:
                        raw = await answer.read()
                        response = web.Response(
                            status=answer.status, body=raw or None,
                            content_type=answer.content_type if raw else None)
                        if "Location" in answer.headers:  # the connector, on this worker
                            response.headers["Location"] = str(request.url.origin()) + \
                                urlsplit(answer.headers["Location"]).path
                        return response
            except (aiohttp.ClientError, asyncio.TimeoutError, OSError) as err:
                return error_response(500, "IO Error trying to forward REST request: "
                                           f"{err or type(err).__name__}")

    return forward


class RestServer:
    """Kafka Connect's REST API over ``herder`` on ``listeners`` (``http://host:port``,
    ``https://host:port``; port 0 binds a free port)."""

    def __init__(self, listeners: list[str], herder: Herder, *, ssl_settings: dict | None = None,
                 auth=None, forward_timeout_s: float = REQUEST_TIMEOUT_S,
                 request_timeout_s: float = REQUEST_TIMEOUT_S, topic_tracking: bool = True,
                 topic_tracking_reset: bool = True, metrics: Callable[[], bytes] | None = None,
                 admin_listeners: list[str] | None = None, admin_ssl_settings: dict | None = None,
                 cors: tuple[str, str] | None = None):
        """``admin_listeners``: None serves ``/admin`` on ``listeners``, an empty list not at
        all, others there only (``admin_ssl_settings`` for their https); ``cors``: Connect's
        (``access.control.allow.origin``, ``access.control.allow.methods``)."""
        self.listeners = [parse_listener(url) for url in listeners or DEFAULT_LISTENERS]
        self.admin_listeners = [parse_listener(url) for url in admin_listeners or ()]
        self.herder = herder
        self.ssl_settings = dict(ssl_settings or {})
        self.server_ssl = _https_context(self.listeners, self.ssl_settings)
        self.admin_ssl = _https_context(self.admin_listeners, dict(
            admin_ssl_settings or self.ssl_settings))
        self.client_ssl = forwarding_ssl_context(self.ssl_settings)
        settings = Settings(request_timeout_s, topic_tracking, topic_tracking_reset)
        admin = [r for r in routes if r.path.startswith("/admin")]

        def app(table, *more) -> web.Application:
            made = web.Application(middlewares=[
                *more, *([authentication(auth)] if auth else []), connect_errors,
                forwarding(self.client_ssl, forward_timeout_s)])
            made[HERDER], made[SETTINGS] = herder, settings
            made.add_routes(table)
            return made

        self.app = app(routes if admin_listeners is None else
                       [r for r in routes if r not in admin],
                       *([cross_origin(*cors)] if cors and cors[0] else []))
        self.admin_app = app(admin) if self.admin_listeners else None
        if metrics is not None:  # Prometheus's text format, beside Connect's own paths
            async def scrape(_request):
                return web.Response(body=metrics(), headers={"Content-Type": CONTENT_TYPE_LATEST})
            self.app.router.add_get("/metrics", scrape)
        self.runners: list[web.AppRunner] = []
        self.admin_urls: list[str] = []

    @classmethod
    def from_worker_props(cls, props: dict, herder: Herder,
                          metrics: Callable[[], bytes] | None = None) -> "RestServer":
        """The REST server a worker's properties (Kafka Connect's names) describe:
        ``listeners`` (else the deprecated ``rest.host.name`` / ``rest.port``),
        ``listeners.https.ssl.*`` / ``ssl.*``, ``rest.extension.classes``,
        ``topic.tracking.enable``, ``topic.tracking.allow.reset``; ``metrics`` renders the
        worker's Prometheus metrics at ``/metrics``."""
        listeners = _urls(props.get("listeners"))
        if not listeners and props.get("rest.port"):  # Connect 3's deprecated settings
            listeners = [f"http://{props.get('rest.host.name') or ''}:{props['rest.port']}"]
        return cls(listeners or DEFAULT_LISTENERS, herder, ssl_settings=ssl_settings_of(props),
                   auth=basic_auth_of(props),
                   topic_tracking=_bool(props, "topic.tracking.enable", True),
                   topic_tracking_reset=_bool(props, "topic.tracking.allow.reset", True),
                   metrics=metrics,
                   admin_listeners=(None if props.get("admin.listeners") is None
                                    else _urls(props["admin.listeners"])),
                   admin_ssl_settings=ssl_settings_of(props, "admin.listeners.https."),
                   cors=(str(props.get("access.control.allow.origin") or ""),
                         str(props.get("access.control.allow.methods") or "")))

    async def start(self) -> list[str]:
        """Listen on every listener (a port in use is a ServiceError saying which); the bound
        URLs of ``listeners`` (those of the admin listeners in ``admin_urls``)."""
        try:
            urls = await self._serve(self.app, self.listeners, self.server_ssl)
            if self.admin_app is not None:
                self.admin_urls = await self._serve(self.admin_app, self.admin_listeners,
                                                    self.admin_ssl)
            return urls
        except BaseException:
            await self.stop()
            raise

    async def _serve(self, app: web.Application, listeners, ssl_context) -> list[str]:
        sockets = []
        try:
            for scheme, host, port in listeners:
                try:
                    sockets.append(socket.create_server((host, port), backlog=1024))
                except OSError as e:
                    raise ServiceError(f"cannot listen on {scheme}://{host}:{port}: "
                                       f"{os.strerror(e.errno)}") from None
        except BaseException:
            for sock in sockets:
                sock.close()
            raise
        runner = web.AppRunner(app, access_log=None, handle_signals=False)
        self.runners.append(runner)
        await runner.setup()
        urls = []
        for (scheme, _host, _port), sock in zip(listeners, sockets):
            await web.SockSite(runner, sock, ssl_context=ssl_context
                               if scheme == "https" else None).start()
            address, bound = sock.getsockname()[:2]
            urls.append(f"{scheme}://{address}:{bound}")
        return urls

    async def stop(self) -> None:
        while self.runners:
            await self.runners.pop().cleanup()
