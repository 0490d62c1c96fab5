"""The operator tools' subcommands of the `josefk` command (josefk/cli.py), with the options
every client tool shares."""
from __future__ import annotations

import argparse

from josefk.broker.config import ConfigError, bootstrap_addresses
from josefk.tools import (acls_cli, admin_cli, cluster_cli, console_cli, dump_log_cli, groups_cli,
                          ops_cli, quotas_cli, transactions_cli, users_cli, web_console)
from josefk.tools.client import KafkaError

DEFAULT_BOOTSTRAP = "127.0.0.1:9092"
# What a tool's failure may be that the user fixes, reported as one line (josefk/cli.py): a
# broker out of reach or a file missing, an error code in an answer, bad client properties.
REPORTED = (OSError, KafkaError, ConfigError)


def _bootstrap(text: str) -> str:
    try:
        bootstrap_addresses(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text


def common(p):
    """The options of a tool that talks to a cluster."""
    p.add_argument("--bootstrap-server", default=DEFAULT_BOOTSTRAP, type=_bootstrap,
                   metavar="HOST:PORT[,HOST:PORT]", help="the brokers to connect to")
    p.add_argument("--command-config", metavar="FILE",
                   help="client properties: security.protocol, ssl.*, "
                   "sasl.mechanism, sasl.jaas.config")
    return p


def add_commands(sub, kv):
    """Every tool's subcommands (``kv`` parses KEY=VALUE options; the tools parse their own)."""
    admin_cli.add_commands(sub, common)
    groups_cli.add_commands(sub, common)
    transactions_cli.add_commands(sub, common)
    ops_cli.add_commands(sub, common)
    dump_log_cli.add_commands(sub)
    console_cli.add_commands(sub, common)
    web_console.add_commands(sub, common)
    users_cli.add_commands(sub, common)
    acls_cli.add_commands(sub, common)
    quotas_cli.add_commands(sub, common)
    cluster_cli.add_commands(sub)
