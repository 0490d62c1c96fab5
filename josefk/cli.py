"""The `josefk` command: a dispatcher over the subcommands of the broker (`josefk broker`), the
operator tools (`josefk topics ...`, like kafka-topics.sh and its siblings) and the HTTP services
(`josefk registry`, `josefk rest`). Only the package of the command being run is imported, so a
tool never loads the broker."""
from __future__ import annotations

import argparse
import importlib
import os
import sys

# The services' subcommand -> the module that declares it; every other subcommand is a tool's.
SERVICES = {"broker": "josefk.broker.main", "registry": "josefk.registry.main",
            "rest": "josefk.rest.main"}
TOOLS = "josefk.tools.commands"


def _kv(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep:
        raise argparse.ArgumentTypeError(f"expected key=value, got {text!r}")
    return key.strip(), value.strip()


def _parser(modules) -> tuple[argparse.ArgumentParser, dict]:
    p = argparse.ArgumentParser(prog="josefk", description="A Kafka-compatible broker")
    sub = p.add_subparsers(dest="command", required=True)
    for name in modules:
        importlib.import_module(name).add_commands(sub, _kv)
    return p, sub.choices


def build_parser(argv=()) -> argparse.ArgumentParser:
    """The parser of the subcommand ``argv`` names (of every subcommand for help or a typo)."""
    command = next((a for a in argv if not a.startswith("-")), None)
    if command in SERVICES:
        return _parser([SERVICES[command]])[0]
    parser, commands = _parser([TOOLS])
    if command in commands:
        return parser
    return _parser([SERVICES["broker"], TOOLS, SERVICES["registry"], SERVICES["rest"]])[0]


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser(argv).parse_args(argv)
    try:
        return args.func(args)
    except BrokenPipeError:
        # The reader went away (`josefk dump-log ... | head`): stop quietly, as Unix tools do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
