"""aiohttp serving for both services: Confluent's error bodies (``{"error_code": 40401,
"message": "..."}``), checks of the request's content type and size, HTTP basic
authentication, TLS listeners, and the process's run loop (until SIGTERM or Ctrl-C)."""
from __future__ import annotations

import asyncio
import base64
import hashlib
import logging
import os
import re
import signal
import socket
import ssl
import sys
from pathlib import Path

import orjson
from aiohttp import web

from josefk.broker.config import (EXIT_CONFIG, EXIT_RUNTIME, ConfigError, fail, os_error_text,
                                  parse_properties)
from josefk.broker.security.listeners import load_keystore, load_truststore
from josefk.httpd.config import Listener, ServiceConfig

log = logging.getLogger("josefk.http")

DEFAULT_MAX_REQUEST_BYTES = 64 << 20


class HttpError(Exception):
    """An answer with Confluent's error body: HTTP ``status`` and Confluent's ``code``."""

    def __init__(self, status: int, code: int, message: str, headers: dict | None = None):
        super().__init__(message)
        self.status, self.code, self.message, self.headers = status, code, message, headers


def json_response(body, status: int = 200, content_type: str = "application/json",
                  headers=None) -> web.Response:
    return web.Response(body=orjson.dumps(body), status=status, content_type=content_type,
                        headers=headers)


def parse_json(data: bytes):
    """A request body as JSON (None when empty); 400, Confluent's code for unparseable JSON,
    if it is not JSON."""
    if not data:
        return None
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as e:
        raise HttpError(400, 400, f"Unexpected character or malformed JSON: {e}") from None


async def read_json(request: web.Request):
    return parse_json(await request.read())


def error_middleware(content_type, body_types: tuple[str, ...]):
    """Every error as Confluent's JSON body in ``content_type`` (or ``content_type(request)``);
    request bodies of another content type than ``body_types`` get 415, as Confluent's
    services answer."""
    pick = content_type if callable(content_type) else (lambda _request: content_type)

    @web.middleware
    async def errors(request: web.Request, handler):
        content_type = pick(request)
        try:
            if request.method in ("POST", "PUT", "PATCH") and request.body_exists:
                ctype = request.headers.get("Content-Type", "").split(";")[0].strip().lower()
                if ctype and ctype not in body_types:
                    raise HttpError(415, 415, "HTTP 415 Unsupported Media Type")
            return await handler(request)
        except HttpError as e:
            return json_response({"error_code": e.code, "message": e.message}, e.status,
                                 content_type, headers=e.headers)
        except web.HTTPException as e:
            if e.status < 400:
                raise
            return json_response({"error_code": e.status, "message": f"HTTP {e.status} {e.reason}"},
                                 e.status, content_type, headers=_kept_headers(e))
        except Exception:  # noqa: BLE001 - one request's failure never stops the service
            log.exception("%s %s failed", request.method, request.path)
            return json_response({"error_code": 500, "message": "Internal Server Error"}, 500,
                                 content_type)

    return errors


def _kept_headers(e: web.HTTPException) -> dict:
    return {k: v for k, v in e.headers.items() if k in ("Allow", "WWW-Authenticate")}


# -- HTTP basic authentication, as Confluent configures it -----------------------------------
# authentication.method=BASIC, authentication.realm=<JAAS section>, authentication.roles=<roles>;
# the JAAS file (java.security.auth.login.config) names a Jetty PropertyFileLoginModule whose
# file has lines "user: password[,role...]" (password plain, MD5:<hex> or OBF:<jetty>).
_JAAS_SECTION = r"(?ms)^\s*{realm}\s*\{{(.*?)\}};"


def _deobfuscate(text: str) -> str:
    """Jetty's OBF: password encoding."""
    out = bytearray()
    i = 0
    while i < len(text):
        if text[i] == "U":
            i += 1
            out += int(text[i:i + 5], 36).to_bytes(2, "big")[1:]
            i += 5
            continue
        n = int(text[i:i + 4], 36)
        out.append(((n // 256) + (n % 256) - 254) // 2)
        i += 4
    return out.decode()


class BasicAuth:
    """Jetty's BASIC authentication with a JAAS PropertyFileLoginModule, as Confluent's
    services (rest-utils) configure it. ``authentication.roles``: the roles allowed (``*``, the
    default, or ``**``: any authenticated user); a user with none of them gets 403, as Jetty's
    role constraint answers."""

    def __init__(self, config: ServiceConfig, opts_env: str):
        self.realm = config.get("authentication.realm", "")
        self.roles = set(config.list("authentication.roles") or ["*"])
        self.any_role = bool(self.roles & {"*", "**"})
        self.skip = set(config.list("authentication.skip.paths"))
        jaas = config.get("java.security.auth.login.config") or _system_property(
            opts_env, "java.security.auth.login.config")
        if not jaas:
            raise ConfigError("authentication.method=BASIC needs a JAAS file: "
                              f"-Djava.security.auth.login.config=... in {opts_env}")
        section = re.search(_JAAS_SECTION.format(realm=re.escape(self.realm)),
                            Path(jaas).read_text())
        if not section:
            raise ConfigError(f"JAAS file {jaas} has no section {self.realm!r} "
                              "(authentication.realm)")
        module = section.group(1).split()[0] if section.group(1).split() else ""
        if not module.endswith(".PropertyFileLoginModule"):
            raise ConfigError(f"JAAS section {self.realm!r} uses {module or 'no module'}; "
                              "only Jetty's PropertyFileLoginModule is supported")
        m = re.search(r'\bfile\s*=\s*"([^"]+)"', section.group(1))
        if not m:
            raise ConfigError(f"JAAS section {self.realm!r} names no file=\"...\"")
        self.users = self._load_users(Path(m.group(1)))

    @staticmethod
    def _load_users(path: Path) -> dict:
        """Jetty's password file: Java properties ``user: password[,role...]``."""
        users = {}
        for user, value in parse_properties(path.read_text()).items():
            password, *roles = [p.strip() for p in value.split(",")]
            users[user] = (password, set(roles))
        return users

    def verdict(self, header: str | None) -> int | None:
        """None when the request may go on; 401 without valid credentials; 403 for a user
        none of whose roles is allowed."""
        scheme, _, token = (header or "").partition(" ")
        if scheme.lower() != "basic":
            return 401
        try:
            user, _, password = base64.b64decode(token.strip(), validate=True).decode() \
                .partition(":")
        except (ValueError, UnicodeDecodeError):
            return 401
        stored = self.users.get(user)
        if stored is None or not _password_matches(stored[0], password):
            return 401
        return None if self.any_role or self.roles & stored[1] else 403

    def middleware(self):
        challenge = {"WWW-Authenticate": f'Basic realm="{self.realm}"'}

        @web.middleware
        async def authenticate(request: web.Request, handler):
            verdict = None if request.path in self.skip else self.verdict(
                request.headers.get("Authorization"))
            if verdict == 401:
                raise HttpError(401, 401, "Unauthorized", headers=challenge)
            if verdict == 403:
                raise HttpError(403, 403, "Forbidden")
            return await handler(request)

        return authenticate


def _password_matches(stored: str, given: str) -> bool:
    if stored.startswith("MD5:"):
        return hashlib.md5(given.encode()).hexdigest() == stored[4:].lower()
    if stored.startswith("OBF:"):
        return _deobfuscate(stored[4:]) == given
    return stored.removeprefix("PLAIN:") == given


def _system_property(env: str, name: str) -> str | None:
    m = re.search(rf"-D{re.escape(name)}=(\S+)", os.environ.get(env, ""))
    return m.group(1) if m else None


def middlewares(config: ServiceConfig, content_type, body_types, opts_env: str) -> list:
    """Errors first (so that they wrap everything after), then authentication."""
    out = [error_middleware(content_type, tuple(body_types))]
    method = (config.get("authentication.method") or "NONE").upper()
    if method == "BASIC":
        out.append(BasicAuth(config, opts_env).middleware())
    elif method != "NONE":
        raise ConfigError(f"authentication.method {method} is not supported (NONE or BASIC)")
    return out


# -- TLS and the run loop -----------------------------------------------------------------------
_CLIENT_AUTH = {"NONE": ssl.CERT_NONE, "REQUESTED": ssl.CERT_OPTIONAL,
                "REQUIRED": ssl.CERT_REQUIRED}


def server_ssl_context(config: ServiceConfig) -> ssl.SSLContext:
    """An https listener's context from ``ssl.keystore.*``, ``ssl.truststore.*`` and
    ``ssl.client.authentication`` (NONE, REQUESTED, REQUIRED; or the older
    ``ssl.client.auth=true``)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        load_keystore(ctx, config.get)
        load_truststore(ctx, config.get)
    except (OSError, ssl.SSLError) as e:
        raise ConfigError(f"cannot load TLS keys or certificates: {e}") from None
    auth = (config.get("ssl.client.authentication")
            or ("REQUIRED" if config.bool("ssl.client.auth") else "NONE")).upper()
    if auth not in _CLIENT_AUTH:
        raise ConfigError(f"ssl.client.authentication must be NONE, REQUESTED or REQUIRED")
    ctx.verify_mode = _CLIENT_AUTH[auth]
    return ctx


class ServiceError(Exception):
    """A service that cannot run (a port in use, its Kafka cluster out of reach): its one line."""


def bind_listeners(config: ServiceConfig) -> list[tuple[Listener, socket.socket]]:
    """A listening socket per listener, before anything else is started: a port in use stops
    the service at once, saying which."""
    bound = []
    for listener in config.listeners():
        try:
            bound.append((listener, socket.create_server((listener.host, listener.port),
                                                         backlog=1024)))
        except OSError as e:
            for _listener, sock in bound:
                sock.close()
            raise ServiceError(f"cannot listen on {listener.url}: {os.strerror(e.errno)}") \
                from None
    return bound


async def serve(app: web.Application, config: ServiceConfig, name: str, bound: list,
                on_started=None, prepare=None) -> int:
    """Serve ``app`` on the ``bound`` listeners (`bind_listeners`) until SIGTERM or SIGINT:
    ``prepare`` runs first (connections wait in the backlog meanwhile), then requests are
    served and ``on_started`` runs."""
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    try:
        if prepare:
            await prepare()
        await runner.setup()
        for listener, sock in bound:
            ctx = server_ssl_context(config) if listener.scheme == "https" else None
            await web.SockSite(runner, sock, ssl_context=ctx).start()
        if on_started:
            await on_started()
        print(f"josefk {name} started on {', '.join(l.url for l, _sock in bound)}",
              flush=True)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
    finally:
        await runner.cleanup()
    print(f"josefk {name} stopped", flush=True)
    return 0


def run_service(args, name: str, defaults: dict, required: str, serve_config) -> int:
    """A service process: its properties (``required`` must be set), its ports, then
    ``serve_config(config, bound)`` on uvloop where available (as the broker runs) until SIGTERM or
    Ctrl-C. A bad configuration (EXIT_CONFIG) or a failure to run (EXIT_RUNTIME) is one line."""
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        config = ServiceConfig.load(args.config, dict(args.override), defaults)
        if not config.get(required):
            raise ConfigError(f"Missing required configuration \"{required}\" which has no "
                              "default value.")
        if any(listener.scheme == "https" for listener in config.listeners()):
            server_ssl_context(config)  # the keys and certificates load, before anything else
    except ConfigError as e:
        return fail(name, str(e), EXIT_CONFIG)
    except OSError as e:  # the properties file
        return fail(name, os_error_text(e), EXIT_CONFIG)
    try:
        import uvloop
    except ImportError:
        uvloop = None
    bound = []
    try:
        bound = bind_listeners(config)
        with asyncio.Runner(loop_factory=uvloop.new_event_loop if uvloop else None) as runner:
            return runner.run(serve_config(config, bound))
    except ConfigError as e:
        return fail(name, str(e), EXIT_CONFIG)
    except ServiceError as e:
        return fail(name, str(e), EXIT_RUNTIME)
    finally:
        for _listener, sock in bound:
            sock.close()
