"""``josefk mirror mm2.properties [--clusters ALIAS ...]``: MirrorMaker 2's dedicated mode, as
``connect-mirror-maker.sh``: a Connect worker (distributed herder, with its REST API on a
free port of 127.0.0.1 unless ``listeners`` says otherwise) for each pair of clusters the
file names (``maker.read_flows``), each running its flow's connectors, until SIGTERM or
Ctrl-C."""
from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
import time
from pathlib import Path

from josefk.broker.config import (EXIT_CONFIG, EXIT_RUNTIME, ConfigError, fail, os_error_text,
                                  parse_properties)

log = logging.getLogger("josefk.mirror")
SUBMIT_TIMEOUT = 60.0


def add_commands(sub, kv):
    from josefk.mirror.links import COMMANDS

    p = sub.add_parser("mirror", help="run MirrorMaker 2 from a connect-mirror-maker "
                                      "properties file, or manage cluster links and mirror "
                                      f"topics ({', '.join(COMMANDS)})")
    p.add_argument("config", help="mm2.properties (clusters, <alias>.bootstrap.servers, "
                                  "<a>-><b>.enabled, ...), or a link command (each with "
                                  f"--help): {', '.join(COMMANDS)}")
    _mm2_options(p)
    p.add_argument("more", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    p.set_defaults(func=run)


def _mm2_options(p) -> None:
    p.add_argument("--clusters", nargs="+", metavar="ALIAS",
                   help="drive only the flows into these target clusters")
    p.add_argument("--log-level", default="INFO", help="DEBUG, INFO, WARNING or ERROR")


def run(args) -> int:
    from josefk.mirror import links

    if args.config in links.COMMANDS:
        return links.main([args.config, *args.more])
    if args.more:  # the dedicated mode's options after the file
        options = argparse.ArgumentParser(prog="josefk mirror CONFIG")
        _mm2_options(options)
        options.parse_args(args.more, namespace=args)
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from josefk.connect.api.config import ConfigException
    from josefk.connect.runtime.worker_config import WorkerConfig
    from josefk.httpd.server import ServiceError
    from josefk.mirror.maker import read_flows

    try:
        flows = read_flows(parse_properties(Path(args.config).read_text()), args.clusters)
        workers = [WorkerConfig({"listeners": "http://127.0.0.1:0", **flow.worker},
                                distributed=True) for flow in flows]
    except (ConfigError, ConfigException) as e:
        return fail("mirror", str(e), EXIT_CONFIG)
    except OSError as e:
        return fail("mirror", os_error_text(e), EXIT_CONFIG)
    try:
        return asyncio.run(serve(flows, workers))
    except (ConfigError, ConfigException) as e:
        return fail("mirror", str(e), EXIT_CONFIG)
    except ServiceError as e:
        return fail("mirror", str(e), EXIT_RUNTIME)


async def submit(herder, connector: dict[str, str]) -> None:
    """Create or update a connector once this worker knows its group's leader (the leader
    takes it; a follower forwards nothing here: another mirror node's leader will)."""
    from josefk.connect.runtime.herder import NotLeader, Rebalancing

    deadline = time.monotonic() + SUBMIT_TIMEOUT
    while True:
        try:
            await herder.put_connector_config(connector["name"], connector, True)
            return
        except NotLeader:
            return
        except Rebalancing:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.2)


async def serve(flows, workers, stop: asyncio.Event | None = None, started=None) -> int:
    """Each flow's herder, REST API and connectors until SIGTERM or SIGINT (or ``stop``);
    ``started(herders)`` is called once every connector is submitted."""
    from josefk.connect.rest.server import RestServer
    from josefk.connect.runtime.distributed import DistributedHerder
    from josefk.connect.runtime.plugins import Plugins

    plugins = Plugins()
    running = []
    if stop is None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
    try:
        for flow, config in zip(flows, workers):
            herder = DistributedHerder(config, None, plugins)
            rest = RestServer.from_worker_props(config.props, herder,
                                                metrics=herder.metrics.render)
            urls = await rest.start()
            config.advertise(urls)
            running.append((herder, rest))
            await herder.start()
            for connector in flow.connectors:
                await submit(herder, connector)
            state = "enabled" if flow.enabled else "heartbeats only"
            print(f"josefk mirror {flow.source}->{flow.target} ({state}) on {', '.join(urls)}",
                  flush=True)
        if started is not None:
            started([h for h, _ in running])
        await stop.wait()
    finally:
        for herder, rest in reversed(running):
            await herder.stop()
            await rest.stop()
    print("josefk mirror stopped", flush=True)
    return 0
