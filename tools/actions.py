"""A tool's actions, named as Kafka's tools name them (``josefk topics --list``, as
kafka-topics.sh) or as josefk's words (``josefk topics list``): one parser per command, in
which both spellings choose the same action."""
from __future__ import annotations

import argparse


def _missing(value) -> bool:
    return value is None or value is False or value == []


def add_actions(parser, actions: dict, requires: dict | None = None) -> None:
    """Give ``parser`` the actions ``actions`` ({name: (function, help)}) as a word and as
    ``--name``; exactly one must be chosen. ``requires``: {name: [the options that action needs,
    by dest; a tuple of dests: one of them]}, checked as kafka-topics.sh checks them."""
    names = list(actions)
    flags = ", ".join(f"--{n}" for n in names)

    class Choose(argparse.Action):
        def __call__(self, p, ns, values, option_string=None):
            name = option_string[2:] if option_string else values
            if name is None:  # the word left out
                return
            if ns.action not in (None, name):
                p.error(f"Command must include exactly one action: {flags}")
            ns.action = name

    parser.add_argument("action", nargs="?", choices=names, action=Choose, metavar="ACTION",
                        help=f"{', '.join(names)}: the same as {flags}")
    for name, (_func, help_) in actions.items():
        parser.add_argument(f"--{name}", dest="action", nargs=0, action=Choose, help=help_)

    def run(args):
        if args.action is None:
            parser.error(f"Command must include exactly one action: {flags}")
        for need in (requires or {}).get(args.action, ()):
            dests = need if isinstance(need, tuple) else (need,)
            if all(_missing(getattr(args, d)) for d in dests):
                options = "|".join(d.replace("_", "-") for d in dests)
                parser.error(f'Missing required argument "[{options}]"')
        return actions[args.action][0](args)

    parser.set_defaults(func=run)
