"""`josefk broker`: a broker's start-up and clean stop (SIGTERM or Ctrl-C), and, for
development, the Schema Registry and REST Proxy started beside it as processes of their own."""
from __future__ import annotations

import asyncio
import logging
import signal
import subprocess
import sys

from josefk.broker.config import DEFAULTS, BrokerConfig, ConfigError


def add_commands(sub, kv):
    b = sub.add_parser("broker", help="run a broker")
    b.add_argument("config", nargs="?", help="server.properties file")
    b.add_argument("--config", dest="config_opt", metavar="FILE", help="server.properties file")
    b.add_argument("--override", action="append", type=kv, default=[], metavar="KEY=VALUE",
                   help="set any Kafka broker property (repeatable)")
    # Each flag sets the Kafka property named in its help, over a config file's value.
    b.add_argument("--listeners", metavar="PROTOCOL://HOST:PORT[,...]",
                   help=f"listeners (default: {DEFAULTS['listeners']})")
    b.add_argument("--advertised-listeners", metavar="PROTOCOL://HOST:PORT[,...]",
                   help="advertised.listeners: what clients are told to connect to "
                        "(default: the listeners)")
    b.add_argument("--log-dirs", metavar="DIR[,DIR]",
                   help="log.dirs: where the broker keeps its data "
                        f"(default: {DEFAULTS['log.dirs']})")
    b.add_argument("--node-id", type=int,
                   help=f"node.id, the broker's id (default: {DEFAULTS['node.id']})")
    b.add_argument("--zookeeper-connect", metavar="HOST:PORT[,...][/CHROOT]",
                   help="zookeeper.connect: run as a broker of a ZooKeeper cluster "
                        "(default: a single broker, no ZooKeeper)")
    b.add_argument("--log-level", default="INFO",
                   help="DEBUG, INFO, WARNING or ERROR (logged to stderr)")
    b.add_argument("--with-registry", type=int, metavar="PORT",
                   help="also run josefk registry on this port, for development")
    b.add_argument("--with-rest", type=int, metavar="PORT",
                   help="also run josefk rest on this port, for development")
    b.set_defaults(func=run)


def run(args) -> int:
    overrides = dict(args.override)
    for flag, name in (("listeners", "listeners"), ("advertised_listeners", "advertised.listeners"),
                       ("log_dirs", "log.dirs"), ("node_id", "node.id"),
                       ("zookeeper_connect", "zookeeper.connect")):
        value = getattr(args, flag)
        if value is not None:
            overrides[name] = str(value)
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        config = BrokerConfig.load(args.config_opt or args.config, overrides)
    except (ConfigError, OSError) as e:
        print(f"josefk: bad configuration: {e}", file=sys.stderr)
        return 2
    from josefk.broker.limits import raise_open_file_limit

    logging.getLogger("josefk").info("open-file limit: %d", raise_open_file_limit())
    try:
        import uvloop
    except ImportError:
        uvloop = None
    runner = asyncio.Runner(loop_factory=uvloop.new_event_loop if uvloop else None)
    helpers = _start_http_services(args, config)
    try:
        with runner:
            return runner.run(_serve(config))
    finally:
        for proc in helpers:
            proc.terminate()
            proc.wait(15)


def _start_http_services(args, config) -> list:
    """``--with-registry`` / ``--with-rest``: the HTTP services beside this broker (their
    output goes to this terminal), stopped with it."""
    from josefk.broker.security.listeners import listeners

    if not (args.with_registry or args.with_rest):
        return []
    ep = listeners(config)[0]
    bootstrap = f"{ep.host if ep.host not in (None, '', '0.0.0.0') else '127.0.0.1'}:{ep.port}"
    procs = []
    if args.with_registry:
        procs.append(subprocess.Popen([sys.executable, "-m", "josefk", "registry", "--override",
                                       f"listeners=http://127.0.0.1:{args.with_registry}",
                                       "--override", f"kafkastore.bootstrap.servers={bootstrap}",
                                       "--override", "kafkastore.topic.replication.factor=1"]))
    if args.with_rest:
        cmd = [sys.executable, "-m", "josefk", "rest", "--override",
               f"listeners=http://127.0.0.1:{args.with_rest}", "--override",
               f"bootstrap.servers={bootstrap}"]
        if args.with_registry:
            cmd += ["--override", f"schema.registry.url=http://127.0.0.1:{args.with_registry}"]
        procs.append(subprocess.Popen(cmd))
    return procs


async def _serve(config) -> int:
    from josefk.broker.app import Broker
    from josefk.broker.control.zk_metadata import BrokerIdInUse
    from josefk.storage.errors import InvalidConfig

    try:
        broker = Broker(config)
        await broker.start()
    except (BrokerIdInUse, ConfigError, InvalidConfig) as e:
        print(f"josefk: {e}", file=sys.stderr, flush=True)
        return 1
    except OSError as e:  # a port in use, a log dir not writable
        print(f"josefk: cannot start: {e}", file=sys.stderr, flush=True)
        return 1
    print("josefk broker started", file=sys.stderr, flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    # Stopping: a second SIGTERM or Ctrl-C is not a reason to die half way (nor, once the loop
    # is closed, while the interpreter winds down with the default action)
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.remove_signal_handler(sig)
        signal.signal(sig, signal.SIG_IGN)
    await broker.stop()
    print("josefk broker stopped", file=sys.stderr, flush=True)
    return 0
