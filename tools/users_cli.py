"""``josefk users``: SCRAM credentials, as ``kafka-configs.sh --entity-type users`` manages them:

    josefk users --alter --bootstrap-server B --user alice \
        --add-config 'SCRAM-SHA-256=[iterations=8192,password=alice-secret]'
    josefk users --alter --bootstrap-server B --user alice --delete-config SCRAM-SHA-512
    josefk users --describe --bootstrap-server B [--user alice]

(or ``josefk users alter ...``, ``josefk users describe ...``).

The password is salted and hashed here; only the salted password goes to the broker."""
from __future__ import annotations

import os
import re
import sys

from josefk.tools.actions import add_actions
from josefk.tools.client import Client, KafkaError
from josefk.broker.security.sasl import (MIN_ITERATIONS, SCRAM_CODES, SCRAM_MECHANISMS,
                                         salted_password)
from josefk.wire import errors
from josefk.wire.apis import ALTER_USER_SCRAM_CREDENTIALS, DESCRIBE_USER_SCRAM_CREDENTIALS


def add_commands(sub, common):
    u = common(sub.add_parser("users", help="add, change, delete and describe SCRAM "
                                            "credentials (like kafka-configs.sh --entity-type "
                                            "users)"))
    add_actions(u, {"alter": (users_alter, "add or delete credentials"),
                    "describe": (users_describe, "the users' credentials (mechanism and "
                                                 "iterations)")},
                requires={"alter": ["user"]})
    u.add_argument("--user", action="append",
                   help="the user (repeatable; --describe without it: every user)")
    u.add_argument("--add-config", default="",
                   metavar="'SCRAM-SHA-256=[iterations=N,password=P],SCRAM-SHA-512=[...]'",
                   help="--alter: credentials to add or replace (iterations default: "
                        f"{MIN_ITERATIONS})")
    u.add_argument("--delete-config", default="", metavar="SCRAM-SHA-256,SCRAM-SHA-512",
                   help="--alter: the mechanisms whose credentials to delete")


def parse_add_config(text: str) -> list[tuple[str, int, str]]:
    """``SCRAM-SHA-256=[iterations=8192,password=pw]`` entries -> [(mechanism, iterations, pw)]."""
    out = []
    for m in re.finditer(r"\s*([A-Z0-9-]+)=\[([^\]]*)\]\s*,?", text):
        mechanism, body = m.group(1), m.group(2)
        if mechanism not in SCRAM_CODES:
            raise ValueError(f"unknown SCRAM mechanism {mechanism}")
        opts = dict(kv.split("=", 1) for kv in body.split(",") if "=" in kv)
        if "password" not in opts:
            raise ValueError(f"{mechanism} needs password=...")
        out.append((mechanism, int(opts.get("iterations", MIN_ITERATIONS)), opts["password"]))
    if text.strip() and not out:
        raise ValueError(f"cannot parse --add-config {text!r}")
    return out


def users_alter(args) -> int:
    R = ALTER_USER_SCRAM_CREDENTIALS.Request
    try:
        adds = parse_add_config(args.add_config)
    except ValueError as e:
        print(f"Error: {e}", file=sys.stderr)
        return 1
    deletes = [m.strip() for m in args.delete_config.split(",") if m.strip()]
    if not adds and not deletes:
        print("Error: give --add-config and/or --delete-config", file=sys.stderr)
        return 1
    upsertions, deletions = [], []
    for user in args.user:
        for mechanism, iterations, password in adds:
            salt = os.urandom(32)
            upsertions.append(R.ScramCredentialUpsertion(
                name=user, mechanism=SCRAM_CODES[mechanism], iterations=iterations, salt=salt,
                salted_password=salted_password(mechanism, password, salt, iterations)))
        deletions += [R.ScramCredentialDeletion(name=user, mechanism=SCRAM_CODES.get(m, 0))
                      for m in deletes]
    with Client.from_args(args) as c:
        resp = c.request(ALTER_USER_SCRAM_CREDENTIALS, deletions=deletions, upsertions=upsertions)
    failed = 0
    for r in resp.results:
        if _failed(r, "altering"):
            failed = 1
        else:
            print(f"Completed updating config for user {r.user}.")
    return failed


def _failed(r, doing: str) -> bool:
    if r.error_code:
        print(f"Error {doing} user {r.user}: {errors.name(r.error_code)}: {r.error_message}",
              file=sys.stderr)
    return bool(r.error_code)


def users_describe(args, missing_ok: bool = False) -> int:
    """The users' credentials; ``missing_ok``: nothing for a user who has none (as
    kafka-configs.sh --describe --entity-type users shows a user's quotas and credentials)."""
    Q = DESCRIBE_USER_SCRAM_CREDENTIALS.Request
    users = [Q.UserName(name=u) for u in args.user] if args.user else None
    with Client.from_args(args) as c:
        resp = c.request(DESCRIBE_USER_SCRAM_CREDENTIALS, users=users)
    if resp.error_code:
        raise KafkaError(resp.error_code, resp.error_message)
    failed = 0
    for r in resp.results:
        if missing_ok and r.error_code == errors.RESOURCE_NOT_FOUND:
            continue
        if _failed(r, "describing"):
            failed = 1
            continue
        infos = ",".join(f"{SCRAM_MECHANISMS[i.mechanism]}=iterations={i.iterations}"
                         for i in r.credential_infos)
        print(f"SCRAM credential configs for user-principal '{r.user}' are {infos}")
    return failed
