"""The `josefk` command: a dispatcher over the subcommands of the broker (`josefk broker`), the
operator tools (`josefk topics ...`, like kafka-topics.sh and its siblings) and the HTTP services
(`josefk registry`, `josefk rest`). Only the package of the command being run is imported, so a
tool never loads the broker."""
from __future__ import annotations

import argparse
import importlib
import os
import sys
from functools import cache
from importlib.metadata import PackageNotFoundError, version

# The services' subcommand -> the module that declares it; every other subcommand is a tool's.
SERVICES = {"broker": "josefk.broker.main", "registry": "josefk.registry.main",
            "rest": "josefk.rest.main", "connect": "josefk.connect.main",
            "mirror": "josefk.mirror.main"}
TOOLS = "josefk.tools.commands"


class ReaderGone(Exception):
    """stdout's reader went away (``josefk dump-log ... | head``)."""


class _Stdout:
    """sys.stdout, with a closed pipe raised as `ReaderGone`: not an OSError, which a tool
    would take for a broker's failure."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text):
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            raise ReaderGone from None

    def flush(self):
        try:
            self._stream.flush()
        except BrokenPipeError:
            raise ReaderGone from None

    def __getattr__(self, name):
        return getattr(self._stream, name)


def _kv(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep:
        raise argparse.ArgumentTypeError(f"expected key=value, got {text!r}")
    return key.strip(), value.strip()


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """--help with each option's default after its help, where there is one to show."""

    def _get_help_string(self, action):
        d, text = action.default, action.help or ""
        if d is None or d is False or d in ("", []) or "(default" in text:
            return text
        return super()._get_help_string(action)


@cache
def _version() -> str:
    try:
        return version("josefk")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "(not installed)"


class _Parser(argparse.ArgumentParser):
    """Every parser of the `josefk` command (subcommands' parsers are made of the same class):
    defaults in --help, and --version as Kafka's tools take it."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, formatter_class=_HelpFormatter, **kwargs)
        self.add_argument("--version", action="version", version=f"josefk {_version()}",
                          help="print josefk's version and exit")


def _parser(modules) -> tuple[argparse.ArgumentParser, dict, tuple]:
    """The parser of the subcommands ``modules`` declare, and the exceptions they report as one
    line (a module's ``REPORTED``: failures the user fixes, not bugs)."""
    p = _Parser(prog="josefk", description="A Kafka-compatible broker")
    sub = p.add_subparsers(dest="command", required=True)
    reported = ()
    for name in modules:
        module = importlib.import_module(name)
        module.add_commands(sub, _kv)
        reported += getattr(module, "REPORTED", ())
    return p, sub.choices, reported


def build_parser(argv=()) -> tuple[argparse.ArgumentParser, tuple]:
    """The parser of the subcommand ``argv`` names (of every subcommand for help or a typo),
    and the exceptions that subcommand reports as one line."""
    command = next((a for a in argv if not a.startswith("-")), None)
    if command in SERVICES:
        parser, _commands, reported = _parser([SERVICES[command]])
        return parser, reported
    parser, commands, reported = _parser([TOOLS])
    if command in commands:
        return parser, reported
    parser, _commands, reported = _parser([SERVICES["broker"], TOOLS, SERVICES["registry"],
                                           SERVICES["rest"], SERVICES["connect"],
                                           SERVICES["mirror"]])
    return parser, reported


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser, reported = build_parser(argv)
    args = parser.parse_args(argv)
    stdout, sys.stdout = sys.stdout, _Stdout(sys.stdout)
    try:
        code = args.func(args)
        sys.stdout.flush()
        return code
    except ReaderGone:  # stop quietly, as Unix tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), stdout.fileno())
        return 1
    except KeyboardInterrupt:
        return 130
    except reported as e:
        print(f"Error: {e}", file=sys.stderr)
        return 1
    finally:
        sys.stdout = stdout


if __name__ == "__main__":
    sys.exit(main())
