"""``josefk connect [worker.properties] [--override KEY=VALUE ...]``: a Kafka Connect worker in distributed mode, configured
as ``connect-distributed.sh`` is; ``josefk connect --standalone worker.properties
connector.properties|connector.json ...`` one in standalone mode, as ``connect-standalone.sh``
(connector configs as properties files, or JSON either flat or ``{"name", "config"}``). It
prints where its REST API listens, runs until SIGTERM or Ctrl-C, and stops its connectors and
tasks on the way out."""
from __future__ import annotations

import asyncio
import gc
import json
import logging
import signal
import sys
from pathlib import Path

from josefk.broker.config import (EXIT_CONFIG, EXIT_RUNTIME, ConfigError, fail, os_error_text,
                                  parse_properties)

log = logging.getLogger("josefk.connect")
GC_YOUNG_THRESHOLD = 10_000


def add_commands(sub, kv):
    p = sub.add_parser("connect", help="run a Kafka Connect worker (distributed, or --standalone "
                                       "with connector configs)")
    p.add_argument("config", nargs="?", help="the worker's properties "
                   "(connect-distributed.properties, or connect-standalone.properties with "
                   "--standalone)")
    p.add_argument("connectors", nargs="*", metavar="connector-config",
                   help="standalone: connector configs (.properties or .json)")
    p.add_argument("--standalone", action="store_true",
                   help="one worker, connector configs from files, offsets in a local file")
    p.add_argument("--override", action="append", type=kv, default=[], metavar="KEY=VALUE",
                   help="set any worker property (repeatable)")
    p.add_argument("--log-level", default="INFO", help="DEBUG, INFO, WARNING or ERROR")
    p.set_defaults(func=run)


def connector_config(path: str) -> dict[str, str]:
    """A connector's settings from a properties file or a JSON one (flat, or Connect's
    ``{"name": ..., "config": {...}}``)."""
    text = Path(path).read_text()
    if not path.endswith(".json"):
        return parse_properties(text)
    try:
        body = json.loads(text)
    except ValueError as e:
        raise ConfigError(f"{path}: not JSON: {e}") from None
    if not isinstance(body, dict):
        raise ConfigError(f"{path}: a connector config must be a JSON object")
    if isinstance(body.get("config"), dict):
        body = {**body["config"], **({"name": body["name"]} if "name" in body else {})}
    return {k: v if isinstance(v, str) else json.dumps(v) for k, v in body.items()}


def run(args) -> int:
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from josefk.connect.api.config import ConfigException
    from josefk.connect.runtime.worker_config import WorkerConfig
    from josefk.httpd.server import ServiceError

    try:
        props = parse_properties(Path(args.config).read_text()) if args.config else {}
        props.update(dict(args.override))
        if args.connectors and not args.standalone:
            raise ConfigError("connector configs are given to a standalone worker "
                              "(--standalone); a distributed one takes them over REST")
        connectors = [connector_config(p) for p in args.connectors]
        config = WorkerConfig(props, distributed=not args.standalone)
    except (ConfigError, ConfigException) as e:
        return fail("connect", str(e), EXIT_CONFIG)
    except OSError as e:
        return fail("connect", os_error_text(e), EXIT_CONFIG)
    # Records live until Kafka acknowledges them; with CPython's default young generation
    # (a collection every 700 allocations) the collector rescanned them so often that it took
    # two thirds of building a SourceRecord (bench/README.md, bench.connect).
    gc.set_threshold(GC_YOUNG_THRESHOLD, 10, 10)
    gc.freeze()  # what start-up loaded (modules, plugins) is never rescanned
    try:
        import uvloop
    except ImportError:
        uvloop = None
    try:
        with asyncio.Runner(loop_factory=uvloop.new_event_loop if uvloop else None) as runner:
            return runner.run(serve(config, props, connectors))
    except (ConfigError, ConfigException) as e:
        return fail("connect", str(e), EXIT_CONFIG)
    except ServiceError as e:
        return fail("connect", str(e), EXIT_RUNTIME)


async def serve(config, props: dict, connectors: list[dict]) -> int:
    """The worker's herder and REST API until SIGTERM or SIGINT."""
    from josefk.connect.rest.server import RestServer
    from josefk.connect.runtime.plugins import Plugins

    plugins = Plugins()
    if config.distributed:
        from josefk.connect.runtime.distributed import DistributedHerder
        herder = DistributedHerder(config, None, plugins)
    else:
        from josefk.connect.runtime.standalone import StandaloneHerder
        herder = StandaloneHerder(config, None, plugins)
    rest = RestServer.from_worker_props(props, herder, metrics=herder.metrics.render)
    urls = await rest.start()
    config.advertise(urls)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        if config.distributed:
            await herder.start()
        else:
            await herder.start(connectors)
        mode = "distributed" if config.distributed else "standalone"
        admin = f"; /admin on {', '.join(rest.admin_urls)}" if rest.admin_urls else ""
        print(f"josefk connect started on {', '.join(urls)} ({mode}, worker "
              f"{config.worker_id}{admin})", flush=True)
        await stop.wait()
    finally:
        await herder.stop()
        await rest.stop()
    print("josefk connect stopped", flush=True)
    return 0
