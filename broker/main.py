"""`josefk broker`: a broker's start-up and clean stop (SIGTERM or Ctrl-C), and, for
development, the Schema Registry and REST Proxy started beside it as processes of their own."""
from __future__ import annotations

import asyncio
import gc
import logging
import signal
import subprocess
import sys
import threading

from josefk.broker.config import (DEFAULTS, EXIT_CONFIG, EXIT_RUNTIME, BrokerConfig,
                                  ConfigError, fail, os_error_text)

GC_YOUNG_THRESHOLD = 10_000


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
    except ConfigError as e:
        return fail("broker", str(e), EXIT_CONFIG)
    except OSError as e:  # the properties file
        return fail("broker", os_error_text(e), EXIT_CONFIG)
    from josefk.broker.limits import raise_open_file_limit

    logging.getLogger("josefk").info("open-file limit: %d", raise_open_file_limit())
    try:
        import uvloop
    except ImportError:
        uvloop = None
    runner = asyncio.Runner(loop_factory=uvloop.new_event_loop if uvloop else None)
    with runner:
        return runner.run(_serve(config, lambda: _start_http_services(args, config)))


def _start_http_services(args, config) -> list[subprocess.Popen]:
    """``--with-registry`` / ``--with-rest``: the HTTP services beside this broker (their
    output goes to this terminal, their "started" line read on the way), stopped with it."""
    from josefk.broker.security.listeners import listeners

    if not (args.with_registry or args.with_rest):
        return []
    ep = listeners(config)[0]
    bootstrap = f"{ep.host if ep.host not in (None, '', '0.0.0.0') else '127.0.0.1'}:{ep.port}"
    commands = []
    if args.with_registry:
        commands.append([sys.executable, "-m", "josefk", "registry", "--override",
                         f"listeners=http://127.0.0.1:{args.with_registry}",
                         "--override", f"kafkastore.bootstrap.servers={bootstrap}",
                         "--override", "kafkastore.topic.replication.factor=1"])
    if args.with_rest:
        cmd = [sys.executable, "-m", "josefk", "rest", "--override",
               f"listeners=http://127.0.0.1:{args.with_rest}", "--override",
               f"bootstrap.servers={bootstrap}"]
        if args.with_registry:
            cmd += ["--override", f"schema.registry.url=http://127.0.0.1:{args.with_registry}"]
        commands.append(cmd)
    return [subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True) for cmd in commands]


async def _services_started(procs: list[subprocess.Popen]) -> int:
    """Until every HTTP service printed its "started" line (0), or one exited first (its exit
    code; it said why on this terminal)."""
    loop = asyncio.get_running_loop()
    for proc in procs:
        while True:
            line = await loop.run_in_executor(None, proc.stdout.readline)
            if not line:
                return proc.wait() or EXIT_RUNTIME
            print(line, end="", flush=True)
            if " started on " in line:
                break
    for proc in procs:  # the rest of their output, as it comes
        threading.Thread(target=_copy, args=(proc.stdout,), daemon=True).start()
    return 0


def _copy(stream) -> None:
    for line in stream:
        print(line, end="", flush=True)


def _stop_all(procs: list[subprocess.Popen]) -> None:
    for proc in procs:
        if proc.poll() is None:
            proc.terminate()
    for proc in procs:
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


async def _serve(config, start_services) -> int:
    from josefk.broker.app import Broker
    from josefk.broker.control.zk_metadata import BrokerIdInUse
    from josefk.storage.errors import InvalidConfig
    from kazoo.handlers.threading import KazooTimeoutError

    try:
        broker = Broker(config)
        await broker.start()
    except (ConfigError, InvalidConfig) as e:
        return fail("broker", str(e), EXIT_CONFIG)
    except BrokerIdInUse as e:
        return fail("broker", str(e), EXIT_RUNTIME)
    except KazooTimeoutError:  # Kafka's ZooKeeperClientTimeoutException
        return fail("broker", f"cannot start: Timed out waiting for connection to ZooKeeper "
                              f"{config.get('zookeeper.connect')} within "
                              f"{config.int('zookeeper.connection.timeout.ms')} ms", EXIT_RUNTIME)
    except OSError as e:  # a port in use, a log dir not writable
        return fail("broker", f"cannot start: {os_error_text(e)}", EXIT_RUNTIME)
    # A service beside it that cannot start stops it: no half-started system.
    services = start_services()
    try:
        code = await _services_started(services)
        if code:
            _stop_all(services)
            await broker.stop()
            return code
    except BaseException:
        _stop_all(services)
        raise
    # What start-up built (modules, metadata, partitions, logs) lives as long as the broker:
    # frozen, the collector never rescans it; a full collection then walks only what came
    # after (before: 50-450 ms full collections stalled every request, replication's fetches
    # included, on the loaded 2-core machine). The young generation is collected every
    # 10,000 allocations instead of 700: a request's objects mostly die before.
    gc.freeze()
    gc.set_threshold(GC_YOUNG_THRESHOLD, 10, 10)
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
    _stop_all(services)
    await broker.stop()
    print("josefk broker stopped", file=sys.stderr, flush=True)
    return 0
